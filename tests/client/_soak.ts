// The client soak (not a test file itself; tests/client/soak_test.ts runs it in a subprocess with
// --expose-gc): mixed Query, Action and Session invocations with random cancels, stops and
// aborts through the in-process transport. Prints one JSON line of facts.
import {
  InProcessToolClientTransport,
  ToolCallError,
  ToolClientError,
  ToolEndpointClient,
} from "../../mod.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT } from "./_fixtures.ts";
import { SeededRandom } from "../_gen.ts";

declare const gc: (() => void) | undefined;

function heap(): number {
  for (let i = 0; i < 3; i++) gc?.();
  return Deno.memoryUsage().heapUsed;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface SoakFacts {
  calls: number;
  settledOnce: number;
  settledTwice: number;
  unsettled: number;
  outcomes: Record<string, number>;
  unexpected: string[];
  pendingExchanges: number;
  openInvocations: number;
  baselineHeap: number;
  finalHeap: number;
  gc: boolean;
}

export async function soak(calls: number, seed: number, concurrency: number): Promise<SoakFacts> {
  const rng = new SeededRandom(seed);
  const random = () => rng.next();
  const arm = armEndpoint({ maxRetainedExecutions: 256 });
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
    maxPendingExchanges: 4 * concurrency,
    maxOpenInvocations: 2 * concurrency,
    pollIntervalMs: 5,
  });
  // Allocated up front: the bookkeeping itself must not grow the heap during the run.
  const settled = new Uint8Array(Math.min(2000, calls) + calls);
  const outcomes: Record<string, number> = {};
  const unexpected: string[] = [];
  const count = (name: string) => (outcomes[name] = (outcomes[name] ?? 0) + 1);

  async function one(): Promise<string> {
    const pick = random();
    const steps = Math.floor(random() * 4);
    const control = random();
    if (pick < 0.4) {
      const result = await client.query("echo", { n: steps });
      return `query:${result.status}`;
    }
    const operation = pick < 0.75 ? "move" : "watch";
    const controller = new AbortController();
    const handle = await client.invoke(operation, { steps, stepMs: 1 }, {
      signal: controller.signal,
    });
    if (control < 0.2) {
      await sleep(Math.floor(random() * 3));
      operation === "move" ? await handle.cancel("soak") : await handle.stop("soak");
    } else if (control < 0.3) {
      setTimeout(() => controller.abort(new Error("soak abort")), Math.floor(random() * 3));
    }
    let events = 0;
    try {
      for await (const _ of handle.events) events++;
      const result = await handle.result();
      return `${operation}:${result.status}`;
    } catch (error) {
      if (error instanceof Error && error.message === "soak abort") return `${operation}:aborted`;
      throw error;
    } finally {
      await handle[Symbol.asyncDispose]();
    }
  }

  async function run(from: number, to: number): Promise<void> {
    let next = from;
    const worker = async () => {
      while (next < to) {
        const id = next++;
        await one().then(
          (outcome) => {
            settled[id]++;
            count(outcome);
          },
          (error) => {
            settled[id]++;
            const name = error instanceof ToolCallError || error instanceof ToolClientError
              ? error.code
              : String(error);
            count(`error:${name}`);
            if (unexpected.length < 10) unexpected.push(String(error));
          },
        );
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
  }

  // Warm up (the handler's bounded ledger fills, code is compiled), then measure.
  const warmup = Math.min(2000, calls);
  await run(0, warmup);
  await sleep(20);
  const baselineHeap = heap();
  await run(warmup, warmup + calls);
  // Let the last background controls settle.
  while (client.stats.pendingExchanges > 0) await sleep(5);
  await sleep(20);
  const finalHeap = heap();
  const facts: SoakFacts = {
    calls,
    settledOnce: settled.subarray(warmup).filter((n) => n === 1).length,
    settledTwice: settled.filter((n) => n > 1).length,
    unsettled: settled.filter((n) => n === 0).length,
    outcomes,
    unexpected,
    pendingExchanges: client.stats.pendingExchanges,
    openInvocations: client.stats.openInvocations,
    baselineHeap,
    finalHeap,
    gc: typeof gc === "function",
  };
  await client.close();
  await arm.handler.close({ graceMs: 1000 });
  return facts;
}

if (import.meta.main) {
  const calls = Number(Deno.args[0] ?? 10_000);
  const seed = Number(Deno.args[1] ?? 0x5eed);
  console.log(JSON.stringify(await soak(calls, seed, 64)));
}

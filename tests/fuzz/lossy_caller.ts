// The lossy caller: a ToolEndpointClient over hops that drop, duplicate, delay and so reorder
// messages both ways, against the real handler (the shared arm endpoint of the client suites),
// with random cancels, stops, aborts (before and during the call) and disposes.
//
// Invariants:
// - every handle ends released: once every call settled, `openInvocations` and
//   `pendingExchanges` are back to 0 (before close), and after close too;
// - no control or status request reaches the provider for an execution it never admitted
//   (observed where requests enter the handler); a call aborted before it started sends nothing;
// - every outcome the client reports is the provider's: a result equals the provider's
//   authoritative result, `not_admitted` only after the provider answered `not_found` for the key,
//   and every failure is one of the documented ones (timeout of outcome `unknown`, the abort
//   reason, the handle released by dispose, a control or result exchange that timed out).
import fc from "fast-check";
import {
  InProcessToolClientTransport,
  ToolCallError,
  ToolClientError,
  type ToolClientTransport,
  ToolEndpointClient,
  type ToolInvocation,
  type ToolResult,
} from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT } from "../client/_fixtures.ts";
import { type AnyTarget, describeError, type FuzzTarget, invariant } from "./_common.ts";

/** What happens to one call. */
export type CallFate = "none" | "cancel" | "abort" | "abortEarly" | "dispose";

/** One call of a scenario. */
export interface LossyCall {
  readonly operation: "echo" | "move" | "watch";
  readonly steps: number;
  readonly stepMs: number;
  readonly fate: CallFate;
  /** Milliseconds after the call starts before its fate (0: at once). */
  readonly fateAfterMs: number;
  /** Whether the events are read. */
  readonly readEvents: boolean;
}

/** The faults of one hop, in percent per message. */
export interface HopFaults {
  readonly drop: number;
  readonly duplicate: number;
  readonly delay: number;
}

/** A scenario: the calls (run at once), the faults of both hops and their random seed. */
export interface LossyScenario {
  readonly calls: readonly LossyCall[];
  readonly requests: HopFaults;
  readonly responses: HopFaults;
  readonly seed: number;
}

const hopArb: fc.Arbitrary<HopFaults> = fc.record({
  drop: fc.integer({ min: 0, max: 30 }),
  duplicate: fc.integer({ min: 0, max: 30 }),
  delay: fc.integer({ min: 0, max: 50 }),
});

const callArb: fc.Arbitrary<LossyCall> = fc.record({
  operation: fc.constantFrom("echo", "move", "watch" as const),
  steps: fc.integer({ min: 0, max: 4 }),
  stepMs: fc.integer({ min: 0, max: 3 }),
  fate: fc.constantFrom("none", "cancel", "abort", "abortEarly", "dispose" as const),
  fateAfterMs: fc.integer({ min: 0, max: 8 }),
  readEvents: fc.boolean(),
});

/** Up to 6 concurrent calls over two faulty hops. */
export function lossyScenarioArb(): fc.Arbitrary<LossyScenario> {
  return fc.record({
    calls: fc.array(callArb, { minLength: 1, maxLength: 6 }),
    requests: hopArb,
    responses: hopArb,
    seed: fc.integer(),
  });
}

/** A small seeded generator (mulberry32), so a scenario replays its fault decisions. */
function random(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What the provider side saw, per execution key id. */
interface ProviderLog {
  /** Control or status requests that reached the handler for a key it had not admitted. */
  readonly unadmittedControl: string[];
  /** Keys the handler answered a result request `not_found` for. */
  readonly notFound: Set<string>;
  /** Invocation ids of every request the client handed to the transport. */
  readonly sentInvocations: Set<string>;
}

/** Wraps the in-process transport with two faulty hops and the provider-side log. */
class LossyHops implements ToolClientTransport {
  readonly #inner: InProcessToolClientTransport;
  readonly #next: () => number;
  readonly #requests: HopFaults;
  readonly #responses: HopFaults;
  readonly #admitted: (keyId: string) => boolean;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly log: ProviderLog = {
    unadmittedControl: [],
    notFound: new Set(),
    sentInvocations: new Set(),
  };
  #closed = false;

  constructor(
    inner: InProcessToolClientTransport,
    scenario: LossyScenario,
    admitted: (keyId: string) => boolean,
  ) {
    this.#inner = inner;
    this.#next = random(scenario.seed);
    this.#requests = scenario.requests;
    this.#responses = scenario.responses;
    this.#admitted = admitted;
  }

  /** Calls `deliver` for each copy that survives the hop, some later (which reorders). */
  #hop(faults: HopFaults, deliver: () => void): void {
    if (this.#next() * 100 < faults.drop) return;
    const copies = this.#next() * 100 < faults.duplicate ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      if (this.#next() * 100 < faults.delay) {
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          if (!this.#closed) deliver();
        }, Math.floor(this.#next() * 5));
        this.#timers.add(timer);
      } else {
        deliver();
      }
    }
  }

  connect(deliver: (message: ToolEnvelope) => void): void {
    this.#inner.connect((message) => {
      if (
        message.messageType === "tool.result.response" && message.payload.status === "not_found"
      ) {
        this.log.notFound.add(keyIdOf(message));
      }
      this.#hop(this.#responses, () => deliver(message));
    });
  }

  resolveInstance(): string {
    return this.#inner.resolveInstance();
  }

  send(request: ToolEnvelope): void {
    if (this.#closed) throw new Error("closed");
    this.log.sentInvocations.add(request.invocationId!);
    this.#hop(this.#requests, () => {
      const type = request.messageType;
      if (
        (type === "tool.control.request" || type === "tool.status.request") &&
        !this.#admitted(keyIdOf(request))
      ) {
        this.log.unadmittedControl.push(`${type} for ${request.invocationId}`);
      }
      // A request the handler refuses (none here) would only be lost on this hop.
      this.#inner.send(request).catch(() => undefined);
    });
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#inner.close();
  }
}

function keyIdOf(envelope: ToolEnvelope): string {
  const { invocationId, attemptId } = envelope;
  return `${invocationId!.length}:${invocationId}${attemptId}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The documented failures of a call whose answer a hop may have lost. */
function isLostAnswer(error: unknown, exchange: string, outcomes: readonly unknown[]): boolean {
  return error instanceof ToolClientError && error.code === "FORGE_CLIENT_TIMEOUT" &&
    error.exchange === exchange && outcomes.includes(error.outcome);
}

const TERMINAL_OF: Readonly<Record<string, string>> = {
  executor_completed: "succeeded",
  executor_failed: "failed",
  cancelled: "cancelled",
  stopped: "stopped",
};

/** Runs one scenario and checks the invariants. */
export async function runLossyCaller(
  scenario: LossyScenario,
  counters: Record<string, number> = {},
): Promise<void> {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const arm = armEndpoint();
  const execution = (keyId: string) =>
    arm.move.executions.get(keyId) ?? arm.watch.executions.get(keyId);
  const hops = new LossyHops(
    new InProcessToolClientTransport(arm.handler),
    scenario,
    (keyId) => execution(keyId) !== undefined,
  );
  const backgroundErrors: unknown[] = [];
  const client = new ToolEndpointClient({
    transport: hops,
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
    timeoutMs: 15,
    maxAttempts: 3,
    pollIntervalMs: 2,
    maxPollIntervalMs: 8,
    reorderWindowMs: 5,
    logger: (record) => void backgroundErrors.push(record.error),
  });
  const failures: string[] = [];
  const fail = (n: number, what: string) => failures.push(`call ${n}: ${what}`);

  async function run(call: LossyCall, n: number): Promise<void> {
    const invocationId = `inv-${n}`;
    const controller = new AbortController();
    const reason = new Error(`abort ${n}`);
    if (call.fate === "abortEarly") controller.abort(reason);
    else if (call.fate === "abort") setTimeout(() => controller.abort(reason), call.fateAfterMs);
    const options = { invocationId, attemptId: "a", signal: controller.signal };
    if (call.operation === "echo") {
      try {
        const result = await client.query("echo", { n }, options);
        if (JSON.stringify(result.outputs) !== JSON.stringify({ echo: { n } })) {
          fail(n, `query result ${JSON.stringify(result.outputs)}`);
        }
        count("query results");
      } catch (error) {
        if (error === reason) count("query aborts");
        else if (isLostAnswer(error, "invoke", ["unknown"])) count("query unknown");
        else fail(n, `query rejected: ${describeError(error)}`);
      }
      return;
    }
    let handle: ToolInvocation;
    try {
      handle = await client.invoke(call.operation, {
        steps: call.steps,
        stepMs: call.stepMs,
      }, options);
    } catch (error) {
      const keyId = `${invocationId.length}:${invocationId}a`;
      if (error === reason) count("invoke aborts");
      else if (isLostAnswer(error, "invoke", ["unknown"])) count("invoke unknown");
      else if (isLostAnswer(error, "invoke", ["not_admitted"])) {
        if (!hops.log.notFound.has(keyId)) {
          fail(n, "not_admitted without the provider answering not_found");
        }
        count("invoke not admitted");
      } else fail(n, `invoke rejected: ${describeError(error)}`);
      return;
    }
    if (execution(handle.key.id) === undefined) fail(n, "a handle for an execution never admitted");
    const reading = call.readEvents
      ? (async () => {
        const seen: { sequence: number; type: string }[] = [];
        try {
          for await (const { sequence, event } of handle.events) {
            seen.push({ sequence, type: event.type });
          }
        } catch {
          // The wait ended (abort, release, timeout): what was read stays checked.
        }
        return seen;
      })()
      : Promise.resolve([]);
    if (call.fateAfterMs > 0) await sleep(call.fateAfterMs);
    if (call.fate === "cancel") {
      try {
        await (call.operation === "move" ? handle.cancel() : handle.stop());
      } catch (error) {
        if (!isLostAnswer(error, "control", [undefined])) {
          fail(n, `control rejected: ${describeError(error)}`);
        }
      }
    } else if (call.fate === "dispose") {
      await handle[Symbol.asyncDispose]();
    }
    let result: ToolResult | undefined;
    try {
      result = await handle.result();
    } catch (error) {
      if (error === reason) count("result aborts");
      else if (error instanceof ToolClientError && error.code === "FORGE_CLIENT_CLOSED") {
        if (call.fate !== "dispose") fail(n, `released without dispose: ${describeError(error)}`);
        count("result released");
      } else if (isLostAnswer(error, "result", [undefined])) count("result unknown");
      else if (error instanceof ToolCallError) fail(n, `result: ${describeError(error)}`);
      else fail(n, `result rejected: ${describeError(error)}`);
    }
    const seen = await reading;
    for (let i = 1; i < seen.length; i++) {
      if (seen[i].sequence <= seen[i - 1].sequence) fail(n, "events out of order");
    }
    const provider = execution(handle.key.id);
    if (result !== undefined) {
      count("results");
      const authoritative = provider?.result;
      if (
        authoritative === undefined || authoritative.status !== result.status ||
        JSON.stringify(authoritative.outputs) !== JSON.stringify(result.outputs)
      ) {
        fail(n, `result ${result.status}, provider's ${authoritative?.status}`);
      }
    }
    const last = seen.at(-1);
    if (last !== undefined && last.type in TERMINAL_OF) {
      const status = provider?.result?.status;
      if (TERMINAL_OF[last.type] !== status) {
        fail(n, `terminal event ${last.type}, result ${status}`);
      }
    }
  }

  try {
    await Promise.all(scenario.calls.map((call, n) => run(call, n)));
    // Settled invocations keep their stream open one reorder window for events in transit.
    await sleep(20);
    const stats = client.stats;
    invariant(
      stats.openInvocations === 0,
      () => `${stats.openInvocations} invocation(s) still open after every call settled`,
    );
  } finally {
    await client.close();
    // Every execution ends by itself (a few short steps): wait for the providers.
    for (let i = 0; i < 200; i++) {
      const running = [...arm.move.executions.values(), ...arm.watch.executions.values()]
        .some((e) => e.result === undefined);
      if (!running) break;
      await sleep(2);
    }
    await arm.handler.close({ graceMs: 50 });
  }
  invariant(client.stats.openInvocations === 0, "invocations open after close");
  invariant(client.stats.pendingExchanges === 0, "exchanges pending after close");
  invariant(failures.length === 0, () => failures.join("; "));
  invariant(
    hops.log.unadmittedControl.length === 0,
    () => `requests for executions never admitted: ${hops.log.unadmittedControl.join(", ")}`,
  );
  scenario.calls.forEach((call, n) => {
    if (call.fate === "abortEarly") {
      invariant(
        !hops.log.sentInvocations.has(`inv-${n}`),
        `call ${n} aborted early sent something`,
      );
    }
  });
  for (const error of backgroundErrors) {
    // A background cancel/stop may only fail because its answers were lost.
    invariant(
      isLostAnswer(error, "control", [undefined]) || isLostAnswer(error, "result", [undefined]),
      () => `background failure: ${describeError(error)}`,
    );
  }
  count("scenarios passed");
}

/** The lossy caller target. */
export const lossyCallerTarget: FuzzTarget<LossyScenario> = {
  name: "lossy_caller",
  arbitrary: lossyScenarioArb,
  check: runLossyCaller,
  async: true,
  batchSize: 25,
  timeBoundMs: 5000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [lossyCallerTarget];

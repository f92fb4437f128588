/**
 * The execution ledger: Action invoke + status + result round trips through `dispatch` for
 * distinct keys (churning the ledger past its bound), duplicate-invoke replay, and Query invokes,
 * each beside a baseline measured in the same run (the same round trip against a bare `Map`), and
 * the provider definitions' Action round trip beside a hand-written SPI provider doing the same.
 * A Session round (invoke + stop + status + result) is timed beside the same bare `Map` round.
 * Before the benches it prints the heap after 10,000 and after 1,000,000 distinct keys (after
 * 10,000 and 100,000 in quick mode: `FORGE_BENCH_QUICK=1`, set by `bench/summary.ts --quick`).
 */
import {
  type ActionToolEndpoint,
  defineAction,
  defineEndpoint,
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../mod.ts";
import {
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../wire.ts";
import { steadyBench } from "./_steady.ts";

const done = new ToolResult({ status: "succeeded", outputs: { ok: true } });
const completed = new ToolExecutionStatus({ phase: "completed" });
const available = new ToolResultResponse({ status: "available", result: done });

function handler(): ToolEndpointHandler {
  return new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "motion.arm",
      operations: [
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          cancellable: true,
          statusSupported: true,
          maxConcurrency: 64,
        }),
        new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
        new ToolOperationDescriptor({
          name: "watch",
          semantics: "session",
          statusSupported: true,
          maxConcurrency: 64,
        }),
      ],
    }),
    {
      endpointInstanceId: "instance-1",
      operations: {
        move: {
          start: () => new ToolAccepted(),
          cancel: () => new ToolControlResponse({ command: "cancel", status: "accepted" }),
          status: () => completed,
          result: () => available,
        },
        detect: { query: () => done },
        watch: {
          start: () => new ToolAccepted(),
          stop: () => new ToolControlResponse({ command: "stop", status: "accepted" }),
          status: () => completed,
          result: () => available,
        },
      },
    },
  );
}

function requests(operation: string, invocationId: string): ToolEnvelope[] {
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: "forge.tool.move",
    implementationId: "arm",
    endpointId: "motion.arm",
    operation,
  });
  const ids = { requestId: `r-${invocationId}`, endpointInstanceId: "instance-1" };
  return [
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: { target: "home" } }), context, ids),
    makeStatusRequestEnvelope(context, ids),
    makeResultRequestEnvelope(context, ids),
  ];
}

// A pool of prebuilt requests so the benches measure the handler, not the factories.
const POOL = 4096;
const pool = Array.from({ length: POOL }, (_, i) => requests("move", `invocation-${i}`));

/** A Session round's requests: invoke, stop, status, result. */
function sessionRequests(invocationId: string): ToolEnvelope[] {
  const [invoke, status, result] = requests("watch", invocationId);
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: "forge.tool.move",
    implementationId: "arm",
    endpointId: "motion.arm",
    operation: "watch",
  });
  const stop = makeControlRequestEnvelope("stop", context, {
    requestId: `s-${invocationId}`,
    endpointInstanceId: "instance-1",
  });
  return [invoke, stop, status, result];
}
const sessionPool = Array.from({ length: POOL }, (_, i) => sessionRequests(`session-${i}`));

/** Quick mode (`FORGE_BENCH_QUICK=1`): a shorter heap walk, for development runs. */
const QUICK = Deno.env.get("FORGE_BENCH_QUICK") === "1";

async function roundTrip(target: ToolEndpointHandler, batch: ToolEnvelope[]): Promise<void> {
  await target.dispatch(batch[0]);
  await target.dispatch(batch[1]);
  await target.dispatch(batch[2]);
}

function heapMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return Deno.memoryUsage().heapUsed / 1048576;
}

{
  const target = handler();
  let heap10k = 0;
  const keys = QUICK ? 100_000 : 1_000_000;
  for (let i = 0; i < keys; i++) {
    // Distinct keys: a fresh request per key beyond the pool.
    const batch = i < POOL ? pool[i] : requests("move", `key-${i}`);
    await roundTrip(target, batch);
    if (i === 9_999) heap10k = heapMiB();
  }
  const heap1m = heapMiB();
  console.log(
    `ledger heap: ${heap10k.toFixed(1)} MiB after 10,000 keys, ${heap1m.toFixed(1)} MiB after ` +
      `${keys.toLocaleString("en-US")} keys (ratio ${(heap1m / heap10k).toFixed(2)}; retained ` +
      `${target.state.retainedExecutions})`,
  );
}

const churn = handler();
let next = 0;
steadyBench({
  name: "bare Map round trip (baseline)",
  group: "action round trip",
  baseline: true,
  fn: (() => {
    const map = new Map<string, { status: ToolExecutionStatus; result: ToolResult }>();
    let n = 0;
    return async () => {
      const key = `invocation-${n++ % POOL}`;
      map.set(key, { status: completed, result: done });
      await Promise.resolve(map.get(key)?.status);
      await Promise.resolve(map.get(key)?.result);
      if (map.size > 1024) map.delete(map.keys().next().value!);
    };
  })(),
});
steadyBench({
  name: "dispatch invoke + status + result (distinct keys, ledger churn)",
  group: "action round trip",
  // Each round awaited before the next: started back to back, 64 invokes were admitted
  // (max_concurrency) and every later one was rejected at once, and the figure timed those
  // rejections' synchronous prefix.
  fn: async () => {
    await roundTrip(churn, pool[next++ % POOL]);
  },
});

const sessionChurn = handler();
let sessionNext = 0;
steadyBench({
  name: "bare Map round trip (baseline)",
  group: "session round trip",
  baseline: true,
  fn: (() => {
    const map = new Map<string, { status: ToolExecutionStatus; result: ToolResult }>();
    let n = 0;
    return async () => {
      const key = `session-${n++ % POOL}`;
      map.set(key, { status: completed, result: done });
      await Promise.resolve(map.get(key)?.status);
      await Promise.resolve(map.get(key)?.result);
      if (map.size > 1024) map.delete(map.keys().next().value!);
    };
  })(),
});
steadyBench({
  name: "dispatch invoke + stop + status + result (distinct keys, ledger churn)",
  group: "session round trip",
  fn: async () => {
    const batch = sessionPool[sessionNext++ % POOL];
    await sessionChurn.dispatch(batch[0]);
    await sessionChurn.dispatch(batch[1]);
    await sessionChurn.dispatch(batch[2]);
    await sessionChurn.dispatch(batch[3]);
  },
});

const replayTarget = handler();
await replayTarget.dispatch(pool[0][0]);
steadyBench({
  name: "bare Map lookup (baseline)",
  group: "duplicate replay",
  perCall: 256,
  baseline: true,
  fn: (() => {
    const map = new Map([["invocation-0", new ToolAccepted()]]);
    return async () => {
      await Promise.resolve(map.get("invocation-0"));
    };
  })(),
});
steadyBench({
  name: "dispatch duplicate invoke (replayed outcome)",
  group: "duplicate replay",
  perCall: 256,
  fn: async () => {
    await replayTarget.dispatch(pool[0][0]);
  },
});

const queryTarget = handler();
const query = requests("detect", "query-1")[0];
steadyBench({
  name: "bare call (baseline)",
  group: "query invoke",
  perCall: 256,
  baseline: true,
  fn: async () => {
    await Promise.resolve(done);
  },
});
steadyBench({
  name: "dispatch Query invoke",
  group: "query invoke",
  perCall: 256,
  fn: async () => {
    await queryTarget.dispatch(query);
  },
});

// ---------------------------------------------------------------------------------------------
// Provider definitions: the helper-based Action round trip (invoke + status + result, the
// function returning at once, its terminal event published through a sink) against the same
// round trip over a hand-written SPI provider that does the same work: a bounded table, the
// result recorded, then the executor_completed event emitted.

/** The hand-written SPI provider: what `defineAction(() => ({ ok: true }))` does, by hand. */
function handWrittenMove(): ActionToolEndpoint {
  const table = new Map<string, { status: ToolExecutionStatus; result?: ToolResultResponse }>();
  const running = new ToolExecutionStatus({ phase: "running" });
  const accepted = new ToolAccepted();
  const pending = new ToolResultResponse({ status: "pending" });
  const notFound = new ToolResultResponse({ status: "not_found" });
  const completedEvent = new ToolEvent({ type: "executor_completed" });
  return {
    start(_request, context, events) {
      const id = context.executionKey.id;
      const entry: { status: ToolExecutionStatus; result?: ToolResultResponse } = {
        status: running,
      };
      table.set(id, entry);
      if (table.size > 1024) table.delete(table.keys().next().value!);
      void Promise.resolve().then(async () => {
        const result = new ToolResult({ status: "succeeded", outputs: { ok: true } });
        entry.result = new ToolResultResponse({ status: "available", result });
        entry.status = new ToolExecutionStatus({ phase: "completed" });
        await events.emit(completedEvent).catch(() => {});
      });
      return accepted;
    },
    cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
    status: (key) => table.get(key.id)?.status ?? running,
    result: (key) => {
      const entry = table.get(key.id);
      return entry === undefined ? notFound : entry.result ?? pending;
    },
  };
}

function moveDescriptor(): ToolEndpointDescriptor {
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "motion.arm",
    operations: [
      new ToolOperationDescriptor({
        name: "move",
        semantics: "action",
        cancellable: true,
        statusSupported: true,
        maxConcurrency: 64,
      }),
    ],
  });
}

const sink = { eventSink: () => {} };
const handTarget = new ToolEndpointHandler(moveDescriptor(), {
  endpointInstanceId: "instance-1",
  operations: { move: handWrittenMove() },
});
const helperTarget = defineEndpoint({
  endpointId: "motion.arm",
  operations: { move: defineAction({ maxConcurrency: 64 }, () => ({ ok: true })) },
}).createHandler({ endpointInstanceId: "instance-1" });

// Status and result may find the work still running (running / pending) or finished; the
// background work of one iteration completes during the next ones, so its cost is counted.
async function settledRoundTrip(target: ToolEndpointHandler, batch: ToolEnvelope[]) {
  await target.dispatch(batch[0], sink);
  await target.dispatch(batch[1], sink);
  await target.dispatch(batch[2], sink);
}

let handNext = 0;
let helperNext = 0;
// Warm both paths up alternately (JIT, full ledgers and tables), so neither case pays for the
// warmup of code they share; deno bench measures the first case of a group first otherwise.
for (let i = 0; i < 8192; i++) {
  await settledRoundTrip(handTarget, pool[handNext++ % POOL]);
  await settledRoundTrip(helperTarget, pool[helperNext++ % POOL]);
}
steadyBench({
  name: "hand-written SPI provider: invoke + status + result (baseline)",
  group: "provider definitions",
  baseline: true,
  fn: async () => {
    await settledRoundTrip(handTarget, pool[handNext++ % POOL]);
  },
});
steadyBench({
  name: "defineAction provider: invoke + status + result",
  group: "provider definitions",
  fn: async () => {
    await settledRoundTrip(helperTarget, pool[helperNext++ % POOL]);
  },
});

// Every bench here must exercise what it names: an invoke the handler rejected (a case that is
// not awaited fills max_concurrency) would time a rejection instead. Reported, not thrown: the
// summary then shows the figures beside this line.
globalThis.addEventListener("unload", () => {
  const targets = { churn, sessionChurn, queryTarget, handTarget, helperTarget };
  for (const [name, target] of Object.entries(targets)) {
    for (const [operation, metrics] of Object.entries(target.metrics.operations)) {
      if (metrics.rejected > 0) {
        console.error(
          `ledger bench INVALID: ${name} rejected ${metrics.rejected} ${operation} invokes`,
        );
      }
    }
  }
});

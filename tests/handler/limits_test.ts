// Handler behaviour under load and at the edges of time: deadlines beyond setTimeout's range,
// the cost of linking a call while thousands of others are pending (listeners on shared
// signals), Query admission against max_concurrency, the bound on events waiting to be
// published, and the handler on Node.js. Stays whole (over 400 lines): one suite of the
// handler's bounds.
import { assert, assertEquals, assertInstanceOf, assertStrictEquals } from "@std/assert";
import { deadline, delay } from "@std/async";
import {
  ToolAccepted,
  type ToolCallOptions,
  ToolEndpointDescriptor,
  ToolEndpointError,
  ToolEndpointHandler,
  ToolError,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import { TOOL_ENDPOINT_PROTOCOL, type ToolEnvelope } from "../../wire.ts";
import {
  acceptedOutcome,
  checkProtocolError,
  completedResult,
  eventOf,
  gate,
  type HandlerExtras,
  INSTANCE,
  invokeFor,
  rejectedError,
  type Target,
  until,
  withoutUnhandledRejections,
} from "./_fakes.ts";

/** A test that also fails when any promise rejection went unhandled. */
function test(name: string, fn: () => Promise<void>): void {
  Deno.test(name, () => withoutUnhandledRejections(fn));
}

/** The longest delay setTimeout honours; a longer one fires after 1 ms. */
const MAX_DELAY = 2 ** 31 - 1;
const DAY = 86_400_000;

const Q: Target = { endpointId: "load.cell", operation: "detect", arguments: {} };
const A: Target = { endpointId: "load.cell", operation: "move", arguments: {} };

const OK = new ToolResult({ status: "succeeded", outputs: { ok: true } });

/** A provider whose behaviour each test sets; it records the signals it was handed. */
class Provider {
  readonly signals: AbortSignal[] = [];
  readonly emitters: ToolEventEmitter[] = [];
  queries = 0;
  starts = 0;
  onQuery: (options: ToolCallOptions) => unknown = () => OK;
  onStart: (events: ToolEventEmitter, options: ToolCallOptions) => unknown = () =>
    new ToolAccepted();

  query(_request: unknown, _context: unknown, options: ToolCallOptions) {
    this.queries++;
    this.signals.push(options.signal);
    return this.onQuery(options);
  }
  start(_request: unknown, _context: unknown, events: ToolEventEmitter, options: ToolCallOptions) {
    this.starts++;
    this.signals.push(options.signal);
    this.emitters.push(events);
    return this.onStart(events, options);
  }
  cancel() {
    throw new Error("not used");
  }
  status() {
    return new ToolExecutionStatus({ phase: "running" });
  }
  result() {
    return new ToolResultResponse({ status: "pending" });
  }
}

interface CellOptions extends HandlerExtras {
  readonly queryConcurrency?: number;
  readonly actionConcurrency?: number;
}

function cell(provider: Provider, options: CellOptions = {}): ToolEndpointHandler {
  // Hung and failing provider calls are this suite's input: their records are not printed.
  const { queryConcurrency = 1, actionConcurrency = 1, logger = () => {}, ...extras } = options;
  return new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "load.cell",
      operations: [
        new ToolOperationDescriptor({
          name: "detect",
          semantics: "query",
          maxConcurrency: queryConcurrency,
        }),
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          cancellable: true,
          statusSupported: true,
          maxConcurrency: actionConcurrency,
        }),
      ],
    }),
    {
      endpointInstanceId: INSTANCE,
      logger,
      ...extras,
      operations: { detect: provider as never, move: provider as never },
    },
  );
}

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve()));
}

// ---------------------------------------------------------------------------------------------
// Deadlines beyond setTimeout's range

for (
  const [label, deadlineOf] of [
    ["30 days ahead", () => Date.now() + 30 * DAY],
    ["at the Wire maximum 2^53 - 1", () => Number.MAX_SAFE_INTEGER],
  ] as const
) {
  test(`a deadline ${label} does not abort an accepted action`, async () => {
    const provider = new Provider();
    const handler = cell(provider, { enforceDeadlines: true });
    acceptedOutcome((await handler.dispatch(invokeFor(A, { deadlineMs: deadlineOf() })))[0]);
    // A clamped timer fires after 1 ms, before this later one.
    await delay(20);
    const signal = provider.signals[0];
    assert(!signal.aborted, `the signal aborted: ${String(signal.reason)}`);
    await handler.close({ graceMs: 10 });
    assertStrictEquals((signal.reason as DOMException).name, "AbortError");
  });

  test(`a query with a deadline ${label} completes`, async () => {
    const provider = new Provider();
    const open = gate();
    provider.onQuery = ({ signal }) =>
      Promise.race([
        open.promise.then(() => OK),
        aborted(signal).then(() => Promise.reject(signal.reason)),
      ]);
    const handler = cell(provider, { enforceDeadlines: true });
    const answer = handler.dispatch(invokeFor(Q, { deadlineMs: deadlineOf() }));
    await delay(20);
    open.open();
    assertEquals(completedResult((await answer)[0]), OK);
    assert(!provider.signals[0].aborted);
  });
}

/** Replaces setTimeout/clearTimeout by a recorder for the duration of `fn`. */
async function withRecordedTimers(
  fn: (timers: Map<number, { fire: () => void; delay: number }>) => Promise<void>,
): Promise<void> {
  const timers = new Map<number, { fire: () => void; delay: number }>();
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  let next = 1_000_000;
  globalThis.setTimeout = ((fire: () => void, delay = 0) => {
    const id = next++;
    timers.set(id, { fire, delay });
    return id;
  }) as unknown as typeof setTimeout;
  globalThis.clearTimeout = ((id: number) => timers.delete(id)) as unknown as typeof clearTimeout;
  try {
    await fn(timers);
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
}

/** Fires the only pending timer and returns the delay it was armed with. */
function fireOnly(timers: Map<number, { fire: () => void; delay: number }>): number {
  assertStrictEquals(timers.size, 1, `${timers.size} timers pending`);
  const [[id, { fire, delay }]] = [...timers];
  timers.delete(id);
  fire();
  return delay;
}

test("a far deadline waits in steps setTimeout honours and fires once reached", async () => {
  const provider = new Provider();
  let clock = 1_000_000;
  const deadlineMs = clock + 2 * MAX_DELAY + 5;
  await withRecordedTimers(async (timers) => {
    const handler = cell(provider, { enforceDeadlines: true, now: () => clock });
    acceptedOutcome((await handler.dispatch(invokeFor(A, { deadlineMs })))[0]);
    const signal = provider.signals[0];
    // Each step re-reads the clock; none is longer than setTimeout honours.
    clock += MAX_DELAY;
    assertStrictEquals(fireOnly(timers), MAX_DELAY);
    assert(!signal.aborted);
    clock += MAX_DELAY;
    assertStrictEquals(fireOnly(timers), MAX_DELAY);
    assert(!signal.aborted);
    clock += 5;
    assertStrictEquals(fireOnly(timers), 5);
    assert(signal.aborted);
    assertInstanceOf(signal.reason, DOMException);
    assertStrictEquals(signal.reason.name, "TimeoutError");
    assertStrictEquals(timers.size, 0);
  });
});

test("a far deadline's step timer is cleared when the execution ends", async () => {
  const provider = new Provider();
  await withRecordedTimers(async (timers) => {
    const handler = cell(provider, { enforceDeadlines: true, now: () => 0 });
    const deadlineMs = 40 * DAY;
    completedResult((await handler.dispatch(invokeFor(Q, { deadlineMs })))[0]);
    assertStrictEquals(timers.size, 0);
    acceptedOutcome((await handler.dispatch(invokeFor(A, { deadlineMs })))[0]);
    assertStrictEquals(timers.size, 1);
    // Clock not advanced: the step re-arms instead of firing.
    fireOnly(timers);
    assertStrictEquals(timers.size, 1);
    await handler.close({ graceMs: 0 });
    assertStrictEquals(timers.size, 0);
    assertStrictEquals((provider.signals[1].reason as DOMException).name, "AbortError");
  });
});

// ---------------------------------------------------------------------------------------------
// Linking a call costs O(1) however many calls are pending

/** Counts, per event target, the abort listeners added and not removed while `fn` runs. */
async function countAbortListeners(fn: () => Promise<void>): Promise<Map<EventTarget, number>> {
  const listeners = new Map<EventTarget, number>();
  const add = EventTarget.prototype.addEventListener;
  const remove = EventTarget.prototype.removeEventListener;
  EventTarget.prototype.addEventListener = function (this: EventTarget, type, ...rest) {
    if (type === "abort") listeners.set(this, (listeners.get(this) ?? 0) + 1);
    return add.call(this, type, ...rest);
  };
  EventTarget.prototype.removeEventListener = function (this: EventTarget, type, ...rest) {
    if (type === "abort") listeners.set(this, (listeners.get(this) ?? 0) - 1);
    return remove.call(this, type, ...rest);
  };
  try {
    await fn();
  } finally {
    EventTarget.prototype.addEventListener = add;
    EventTarget.prototype.removeEventListener = remove;
  }
  return listeners;
}

test("pending calls add no listener to the handler's or the caller's shared signals", async () => {
  const PENDING = 300;
  const provider = new Provider();
  const queriesHang = gate();
  const startsHang = gate();
  let healthy = false;
  provider.onQuery = () => healthy ? OK : queriesHang.promise.then(() => OK);
  provider.onStart = () => startsHang.promise.then(() => new ToolAccepted());
  const handler = cell(provider, {
    enforceDeadlines: true,
    queryConcurrency: PENDING + 1,
    actionConcurrency: PENDING,
  });
  const caller = new AbortController();
  const answers: Promise<readonly ToolEnvelope[]>[] = [];
  const deadlineMs = Date.now() + DAY;
  const listeners = await countAbortListeners(async () => {
    for (let i = 0; i < PENDING; i++) {
      answers.push(handler.dispatch(invokeFor(Q, { invocationId: `q-${i}`, deadlineMs })));
      answers.push(
        handler.dispatch(invokeFor(A, { invocationId: `a-${i}`, deadlineMs }), {
          signal: caller.signal,
        }),
      );
      // Duplicates waiting on the first start, with the same caller signal.
      answers.push(
        handler.dispatch(invokeFor(A, { invocationId: "a-0", deadlineMs }), {
          signal: caller.signal,
        }),
      );
    }
    await until(() => provider.queries === PENDING && provider.starts === PENDING);
    healthy = true;
    assertEquals(completedResult((await handler.dispatch(invokeFor(Q, { deadlineMs })))[0]), OK);
  });
  // One listener per shared signal at most (the handler's lifetime, abandon and the caller's).
  const most = Math.max(0, ...listeners.values());
  assert(most <= 1, `a signal holds ${most} abort listeners with ${PENDING * 3} calls pending`);
  assertStrictEquals(listeners.get(caller.signal) ?? 0, 1);
  // Everything is still answered: the caller abandons, close() ends the queries.
  caller.abort(new Error("caller gave up"));
  await handler.close({ graceMs: 0 });
  const outcomes = await Promise.allSettled(answers);
  const counts = { abandoned: 0, unknown: 0 };
  for (const outcome of outcomes) {
    if (outcome.status === "rejected") {
      assertStrictEquals((outcome.reason as Error).message, "caller gave up");
      counts.abandoned++;
    } else {
      assertStrictEquals(completedResult(outcome.value[0]).status, "unknown");
      counts.unknown++;
    }
  }
  assertEquals(counts, { abandoned: 2 * PENDING, unknown: PENDING });
  queriesHang.open();
  startsHang.open();
});

// ---------------------------------------------------------------------------------------------
// Query admission against max_concurrency

const QUERY_AT_CAPACITY = new ToolError({
  code: "FORGE_ENDPOINT_CAPACITY",
  message: "operation 'detect' is at max_concurrency",
  retryable: true,
});

test("a query beyond max_concurrency is rejected as retryable capacity", async () => {
  const provider = new Provider();
  const open = gate();
  provider.onQuery = () => open.promise.then(() => OK);
  const handler = cell(provider, { queryConcurrency: 2 });
  const first = handler.dispatch(invokeFor(Q, { invocationId: "first" }));
  const second = handler.dispatch(invokeFor(Q, { invocationId: "second" }));
  const [third] = await handler.dispatch(invokeFor(Q, { invocationId: "third" }));
  assertEquals(rejectedError(third), QUERY_AT_CAPACITY);
  assertStrictEquals(provider.queries, 2);
  assertStrictEquals(handler.state.activeQueries.detect, 2);
  open.open();
  assertEquals(completedResult((await first)[0]), OK);
  assertEquals(completedResult((await second)[0]), OK);
  assertStrictEquals(handler.state.activeQueries.detect, 0);
  // The slots are free again.
  assertEquals(completedResult((await handler.dispatch(invokeFor(Q)))[0]), OK);
});

test("a query releases its slot however its provider call ends", async () => {
  const provider = new Provider();
  let clock = 1_000_000;
  const handler = cell(provider, { queryConcurrency: 1, enforceDeadlines: true, now: () => clock });
  const busy = new ToolError({ code: "BUSY", message: "busy", retryable: true });
  provider.onQuery = () => {
    throw new ToolEndpointError(busy);
  };
  assertEquals(rejectedError((await handler.dispatch(invokeFor(Q)))[0]), busy);
  provider.onQuery = () => Promise.reject(new Error("query exploded"));
  const error = await handler.dispatch(invokeFor(Q)).then(() => undefined, (error) => error);
  assertStrictEquals((error as Error).message, "query exploded");
  provider.onQuery = ({ signal }) =>
    aborted(signal).then(() => {
      clock += 10; // the handler's clock agrees that the deadline passed
      return Promise.reject(signal.reason);
    });
  // The deadline timer does not keep the process alive; this test's own timer does.
  const late = await deadline(handler.dispatch(invokeFor(Q, { deadlineMs: clock + 10 })), 5000);
  assertStrictEquals(completedResult(late[0]).error?.code, "FORGE_ENDPOINT_DEADLINE_EXCEEDED");
  assertStrictEquals(handler.state.activeQueries.detect, 0);
  provider.onQuery = () => OK;
  assertEquals(completedResult((await handler.dispatch(invokeFor(Q)))[0]), OK);
});

// ---------------------------------------------------------------------------------------------
// Events waiting to be published are bounded

test("late events beyond maxPendingEvents are refused without a sequence gap", async () => {
  const provider = new Provider();
  const handler = cell(provider, { maxPendingEvents: 4 });
  const published: ToolEnvelope[] = [];
  const hold = gate();
  const eventSink = async (event: ToolEnvelope) => {
    await hold.promise;
    published.push(event);
  };
  acceptedOutcome((await handler.dispatch(invokeFor(A), { eventSink }))[0]);
  const emitter = provider.emitters[0];
  const progress = (n: number) => new ToolEvent({ type: "progress", data: { n } });
  // A provider that does not await emit(): only four may wait.
  const emits = Array.from({ length: 10 }, (_, n) => emitter.emit(progress(n)));
  const outcomes = Promise.allSettled(emits);
  hold.open();
  const settledEmits = await outcomes;
  for (const outcome of settledEmits.slice(0, 4)) assertStrictEquals(outcome.status, "fulfilled");
  for (const outcome of settledEmits.slice(4)) {
    assertStrictEquals(outcome.status, "rejected");
    checkProtocolError(
      (outcome as PromiseRejectedResult).reason,
      "FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE",
      {
        message:
          "Tool endpoint has 4 events waiting to be published; await emit() before emitting more",
      },
    );
  }
  // Once they are published, emitting works again and the sequence has no gap.
  await emitter.emit(progress(10));
  assertEquals(published.map((event) => event.sequence), [0, 1, 2, 3, 4]);
  assertEquals(published.map((event) => eventOf(event).data.n), [0, 1, 2, 3, 10]);
  await handler.close({ graceMs: 0 });
});

test("maxPendingEvents must be a positive integer", () => {
  for (const [value, shown] of [[0, "0"], [-1, "-1"], [1.5, "1.5"], ["8", '"8"'], [NaN, "NaN"]]) {
    let error: unknown;
    try {
      cell(new Provider(), { maxPendingEvents: value as number });
    } catch (caught) {
      error = caught;
    }
    assertInstanceOf(error, RangeError);
    assertStrictEquals(
      error.message,
      `Cannot create the handler as 'maxPendingEvents' must be a positive integer: current value is ${shown}`,
    );
  }
  return Promise.resolve();
});

// ---------------------------------------------------------------------------------------------
// mod.ts on Node.js

function hasNode(): boolean {
  try {
    return new Deno.Command("node", { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

Deno.test({
  name: "mod.ts enforces a deadline on Node.js",
  ignore: !hasNode(),
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const bundle = `${dir}/mod.mjs`;
      const bundled = await new Deno.Command(Deno.execPath(), {
        args: [
          "bundle",
          "--quiet",
          "--platform=node",
          "-o",
          bundle,
          "tests/fixtures/node/mod_and_wire.ts",
        ],
        cwd: new URL("../..", import.meta.url).pathname,
      }).output();
      assert(bundled.success, new TextDecoder().decode(bundled.stderr));
      const script = `${dir}/main.mjs`;
      await Deno.writeTextFile(script, NODE_SCRIPT);
      const run = await new Deno.Command("node", { args: [script] }).output();
      const stderr = new TextDecoder().decode(run.stderr);
      assert(
        run.success,
        `node failed (${run.code}): ${stderr} ${new TextDecoder().decode(run.stdout)}`,
      );
      assertEquals(new TextDecoder().decode(run.stdout).trim().split("\n"), [
        "succeeded",
        "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
        "exited",
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

const NODE_SCRIPT = `
import * as forge from "./mod.mjs";
const handler = new forge.ToolEndpointHandler(
  new forge.ToolEndpointDescriptor({
    protocolVersion: forge.TOOL_ENDPOINT_PROTOCOL,
    endpointId: "vision.yolo",
    operations: [new forge.ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  }),
  {
    endpointInstanceId: "instance-1",
    enforceDeadlines: true,
    operations: {
      detect: {
        query: (request, _context, { signal }) => request.arguments.wait
          ? new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))
          : new forge.ToolResult({ status: "succeeded", outputs: {} }),
      },
    },
  },
);
// Deadline timers do not keep Node.js alive: this interval does while the queries run.
const keepAlive = setInterval(() => {}, 1000);
for (const [id, wait, aheadMs] of [["far", false, 3600000], ["near", true, 50]]) {
  const context = new forge.ToolContext({
    executionKey: new forge.ToolExecutionKey({ invocationId: id, attemptId: "1" }),
    toolId: "forge.tool.detect",
    implementationId: "yolo",
    endpointId: "vision.yolo",
    operation: "detect",
    deadlineMs: Date.now() + aheadMs,
  });
  const request = forge.makeInvokeRequestEnvelope(
    new forge.ToolRequest({ arguments: { wait } }),
    context,
    { requestId: id, endpointInstanceId: "instance-1" },
  );
  const [response] = await handler.dispatch(request);
  const { outcome, result, error } = response.payload;
  // A slow machine may reach the near deadline before admission: rejected, with the same code.
  console.log(outcome === "completed" ? result.error?.code ?? result.status : error.code);
}
clearInterval(keepAlive);
// The far deadline's timer was cleared; nothing else keeps Node.js alive.
process.on("exit", () => console.log("exited"));
`;

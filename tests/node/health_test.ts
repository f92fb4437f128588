// Health snapshots on a fake monotonic clock (no real sleeps): period, state changes, polling,
// failing callbacks and sends.
import { assertEquals, assertMatch, assertStrictEquals, assertThrows } from "@std/assert";
import {
  ToolAccepted,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResultResponse,
} from "../../mod.ts";
import {
  endpointStatusFromEnvelope,
  makeInvokeRequestEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import { EndpointHealthReporter, EndpointNodeLifecycle, endpointStateOf } from "../../node.ts";
import { context, FakeClock, recordingLogger, silentLogger } from "../_helpers.ts";
import {
  BlockingQuery,
  ENDPOINT,
  handlerWith,
  INSTANCE,
  invoke,
  type Sent,
  settle,
  statusOf,
  times,
} from "./_node_fixtures.ts";

// ---------------------------------------------------------------------------------------------
// Health

Deno.test("health sends a snapshot at start and every period", () => {
  const clock = new FakeClock();
  const handler = handlerWith({ detect: new BlockingQuery() });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 1000,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  clock.advance(3500);
  assertEquals(times(sent, "endpoint.status"), [0, 1000, 2000, 3000]);
  const first = sent[0].envelope;
  assertStrictEquals(first.endpointId, ENDPOINT);
  assertStrictEquals(first.endpointInstanceId, INSTANCE);
  assertStrictEquals(first.requestId, undefined);
  assertEquals(first.payload, { status: { state: "ready", active_invocations: 0, details: {} } });
  reporter.stop();
  clock.advance(5000);
  assertEquals(sent.length, 4);
  assertStrictEquals(clock.pending, 0);
});

Deno.test("health reports busy when every permit of every operation is in use", async () => {
  const clock = new FakeClock();
  const detect = new BlockingQuery();
  const track = new BlockingQuery();
  const handler = handlerWith({ detect, track }, { detect: 1, track: 2 });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 60_000,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  const calls = [invoke(handler, "detect"), invoke(handler, "track")];
  await settle();
  assertStrictEquals(reporter.check(), false); // track still has a free permit
  calls.push(invoke(handler, "track"));
  await settle();
  assertStrictEquals(reporter.check(), true);
  assertStrictEquals(reporter.check(), false); // no change, no snapshot
  detect.release();
  await settle();
  assertStrictEquals(reporter.check(), true);
  track.release();
  await Promise.all(calls);
  assertStrictEquals(reporter.check(), false);
  assertEquals(sent.map((item) => statusOf(item.envelope)), [
    ["ready", 0],
    ["busy", 3],
    ["ready", 2],
  ]);
  reporter.stop();
});

Deno.test("a state-change snapshot restarts the period", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 1000,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  clock.advance(600);
  const call = invoke(handler);
  await settle();
  reporter.check(); // busy at 600
  clock.advance(1500);
  assertEquals(times(sent, "endpoint.status"), [0, 600, 1600]);
  query.release();
  await call;
  reporter.stop();
});

Deno.test("health polls the handler state when pollMs is set", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 10_000,
    pollMs: 100,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  const call = invoke(handler);
  await settle();
  clock.advance(250);
  query.release();
  await call;
  clock.advance(100);
  assertEquals(sent.map((item) => [item.at, ...statusOf(item.envelope)]), [
    [0, "ready", 0],
    [100, "busy", 1],
    [300, "ready", 0],
  ]);
  reporter.stop();
  assertStrictEquals(clock.pending, 0);
});

Deno.test("degraded and unavailable take precedence in that order", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  let degraded = false;
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 60_000,
    degraded: () => degraded,
    details: () => ({ camera: degraded ? "lost" : "ok" }),
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  const call = invoke(handler);
  await settle();
  assertStrictEquals(endpointStateOf(handler), "busy");
  degraded = true;
  reporter.check();
  assertStrictEquals(endpointStateOf(handler, { degraded: true }), "degraded");
  reporter.shuttingDown();
  assertStrictEquals(
    endpointStateOf(handler, { shuttingDown: true, degraded: true }),
    "unavailable",
  );
  assertEquals(sent.map((item) => statusOf(item.envelope)), [
    ["ready", 0],
    ["degraded", 1],
    ["unavailable", 1],
  ]);
  assertEquals(endpointStatusFromEnvelope(sent[1].envelope).details, { camera: "lost" });
  // A closed handler is unavailable by itself.
  const other = handlerWith({ detect: new BlockingQuery() });
  const closing = other.close({ graceMs: 0 });
  assertStrictEquals(endpointStateOf(other), "unavailable");
  await closing;
  query.release();
  await call;
  reporter.stop();
});

Deno.test("a details callback that throws or returns a NaN never escapes the period timer", () => {
  const clock = new FakeClock();
  const handler = handlerWith({ detect: new BlockingQuery() });
  const sent: Sent[] = [];
  const log = recordingLogger();
  let details: () => object = () => ({ temperature: 40 });
  const reporter = new EndpointHealthReporter({
    logger: log.logger,
    handler,
    clock,
    periodMs: 1000,
    details: () => details(),
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  details = () => {
    throw new Error("sensor gone");
  };
  clock.advance(1000); // the period timer: before the fix, the throw left the timer here
  details = () => ({ temperature: NaN });
  clock.advance(1000);
  // A check between periods does not call details(), and sends nothing while it keeps failing.
  assertStrictEquals(reporter.check(), false);
  details = () => ({ temperature: 41 });
  clock.advance(1000);
  assertEquals(sent.map((item) => item.envelope.payload), [
    { status: { state: "ready", active_invocations: 0, details: { temperature: 40 } } },
    { status: { state: "degraded", active_invocations: 0, details: {} } },
    { status: { state: "degraded", active_invocations: 0, details: {} } },
    { status: { state: "ready", active_invocations: 0, details: { temperature: 41 } } },
  ]);
  // One report per run of failures (the NaN came right after the throw: the same run).
  assertEquals(
    log.records.map((record) => [
      record.level,
      record.event,
      record.endpointId,
      record.message,
      (record.error as Error).message,
    ]),
    [[
      "error",
      "health.callback_failed",
      handler.descriptor.endpointId,
      "the details() callback failed; the snapshot reports degraded",
      "sensor gone",
    ]],
  );
  assertStrictEquals(reporter.running, true);
  assertStrictEquals(clock.pending, 1);
  reporter.stop();
});

Deno.test("a failing degraded callback is reported once per run", () => {
  const clock = new FakeClock();
  const handler = handlerWith({ detect: new BlockingQuery() });
  const log = recordingLogger();
  let fail = true;
  const reporter = new EndpointHealthReporter({
    logger: log.logger,
    handler,
    clock,
    periodMs: 1000,
    degraded: () => {
      if (fail) throw new Error("probe down");
      return false;
    },
    send: () => undefined,
  });
  reporter.start();
  clock.advance(3000);
  assertStrictEquals(reporter.lastState, "degraded");
  fail = false;
  assertStrictEquals(reporter.check(), true);
  assertStrictEquals(reporter.lastState, "ready");
  fail = true;
  clock.advance(1000);
  assertEquals(log.records.map((record) => record.message), [
    "the degraded() callback failed; the snapshot reports degraded",
    "the degraded() callback failed; the snapshot reports degraded",
  ]);
  assertEquals(log.events(), ["error health.callback_failed", "error health.callback_failed"]);
  reporter.stop();
  assertThrows(
    () => new EndpointHealthReporter({ handler, send: () => undefined, details: {} as never }),
    TypeError,
    "Cannot create an EndpointHealthReporter as 'details' must be a function: current value is",
  );
});

/** An Action endpoint whose executions stay running (their permits stay taken). */
function actionHandler(maxConcurrency: number, logger = silentLogger): ToolEndpointHandler {
  return new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: ENDPOINT,
      operations: [
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          statusSupported: true,
          maxConcurrency,
        }),
      ],
    }),
    {
      endpointInstanceId: INSTANCE,
      logger,
      operations: {
        move: {
          start: () => new ToolAccepted(),
          cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
          status: () => new ToolExecutionStatus({ phase: "running" }),
          result: () => new ToolResultResponse({ status: "pending" }),
        },
      },
    },
  );
}

function invokeMove(handler: ToolEndpointHandler, n: number): Promise<readonly ToolEnvelope[]> {
  return handler.dispatch(makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    context(ENDPOINT, "move", { invocationId: `move-${n}` }),
    { requestId: `request-move-${n}`, endpointInstanceId: INSTANCE },
  ));
}

Deno.test("watchState: one call per turn of permit changes; a throwing listener is logged", async () => {
  const log = recordingLogger();
  const handler = actionHandler(2, log.logger);
  const seen: number[] = [];
  const unwatch = handler.watchState(() => void seen.push(handler.state.permitsInUse.move));
  const unwatchFailing = handler.watchState(() => {
    throw new Error("listener down");
  });
  // Two admissions in one turn: one call, after both.
  await Promise.all([invokeMove(handler, 1), invokeMove(handler, 2)]);
  assertEquals(seen, [2]);
  assertStrictEquals(log.records.length, 1);
  assertMatch(log.records[0].message, /watchState listener failed/);
  assertStrictEquals((log.records[0].error as Error).message, "listener down");
  unwatch();
  unwatchFailing();
  await invokeMove(handler, 3); // refused at capacity: no permit taken, and nobody is watching
  await settle();
  assertEquals(seen, [2]);
  assertThrows(
    () => handler.watchState(undefined as never),
    TypeError,
    "Cannot watch the handler state as 'listener' must be a function: current value is undefined",
  );
});

Deno.test("a running node reports an Action permit taken with no check call", async () => {
  const handler = actionHandler(1);
  const states: string[] = [];
  const node = new EndpointNodeLifecycle({
    handler,
    unregisterTimeoutMs: 0,
    send: (envelope) => {
      if (envelope.messageType === "endpoint.status") states.push(statusOf(envelope)[0]);
    },
  });
  node.start();
  await invokeMove(handler, 1);
  await settle();
  assertEquals(states, ["ready", "busy"]);
  await node.shutdown();
  assertEquals(states, ["ready", "busy", "unavailable"]);
});

Deno.test("a failing status send is recorded, not thrown", async () => {
  const clock = new FakeClock();
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler: handlerWith({ detect: new BlockingQuery() }),
    clock,
    send: () => Promise.reject(new Error("down")),
  });
  reporter.start();
  await settle();
  assertStrictEquals((reporter.lastError as Error).message, "down");
  assertStrictEquals(reporter.sent, 1);
  reporter.stop();
});

/** The documented rule, read off the handler's `state` snapshot. */
function stateRule(handler: ToolEndpointHandler): string {
  const state = handler.state;
  if (state.closed) return "unavailable";
  const busy = handler.descriptor.operations.every((operation) =>
    (state.permitsInUse[operation.name] ?? state.activeQueries[operation.name] ?? 0) >=
      operation.maxConcurrency
  );
  return busy ? "busy" : "ready";
}

Deno.test("endpointStateOf reads what the state snapshot implies, for Query and Action permits alike", async () => {
  const detect = new BlockingQuery();
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: ENDPOINT,
      operations: [
        new ToolOperationDescriptor({ name: "detect", semantics: "query", maxConcurrency: 1 }),
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          cancellable: true,
          statusSupported: true,
          maxConcurrency: 2,
        }),
      ],
    }),
    {
      endpointInstanceId: INSTANCE,
      logger: silentLogger,
      operations: {
        detect,
        move: {
          start: () => new ToolAccepted(),
          cancel: () => new ToolControlResponse({ command: "cancel", status: "accepted" }),
          status: () => new ToolExecutionStatus({ phase: "running" }),
          result: () => new ToolResultResponse({ status: "pending" }),
        },
      },
    },
  );
  const seen: string[] = [];
  const look = () => {
    const state = endpointStateOf(handler);
    assertStrictEquals(state, stateRule(handler));
    seen.push(state);
  };
  look(); // nothing in use
  const query = invoke(handler, "detect");
  await settle();
  look(); // detect full, move free
  let moves = 0;
  const move = () =>
    handler.dispatch(
      makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        context(ENDPOINT, "move", { invocationId: `move-${++moves}` }),
        { requestId: `move-${moves}`, endpointInstanceId: INSTANCE },
      ),
    );
  await move();
  look(); // move has one of two
  await move();
  look(); // both full
  detect.release();
  await query;
  look(); // detect free again
  const closing = handler.close({ graceMs: 0 });
  look();
  await closing;
  assertEquals(seen, ["ready", "ready", "ready", "busy", "ready", "unavailable"]);
  assertEquals(
    endpointStateOf(handler, { degraded: true }),
    "unavailable",
    "closed comes before degraded",
  );
  const error = assertThrows(
    () => endpointStateOf({ state: handler.state } as unknown as ToolEndpointHandler),
    TypeError,
  );
  assertEquals(
    error.message,
    "Cannot read the endpoint state as 'handler' must be a ToolEndpointHandler: current value is [object Object]",
  );
});

// The handler's observability: every provider failure is one record with the execution key (the
// silent spots of issue 12 each have a test), per-operation counters and latency histograms, and
// the handler's option errors naming the TypeScript option. Stays whole (over 400 lines): one
// suite of what the handler reports.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import {
  ToolAccepted,
  ToolEndpointError,
  ToolEndpointHandler,
  ToolError,
  ToolEvent,
  ToolExecutionStatus,
  type ToolLogger,
  type ToolLogRecord,
  ToolResult,
} from "../../mod.ts";
import { ToolProtocolError } from "../../wire.ts";
import { denoTracer, ToolLatencyHistogram, type ToolTracer } from "../../node.ts";
import {
  ACTION,
  actionHandler,
  controlFor,
  FakeQuery,
  INSTANCE,
  invokeFor,
  invokeOutcome,
  QUERY,
  queryDescriptor,
  queryHandler,
  RecordingAction,
  RecordingSession,
  resultFor,
  SESSION,
  sessionHandler,
  statusFor,
} from "./_fakes.ts";

/** A logger that keeps every record. */
function recorder(): { readonly records: ToolLogRecord[]; readonly logger: ToolLogger } {
  const records: ToolLogRecord[] = [];
  return { records, logger: (record) => void records.push(record) };
}

/** The records' `level event` pairs, in order. */
function events(records: readonly ToolLogRecord[]): string[] {
  return records.map((record) => `${record.level} ${record.event}`);
}

/** The identifier fields of a record, in a fixed order. */
function ids(record: ToolLogRecord): (string | undefined)[] {
  return [
    record.endpointId,
    record.operation,
    record.invocationId,
    record.attemptId,
    record.requestId,
  ];
}

const ACTION_IDS = ["motion.arm", "move", "invocation-1", "attempt-1", "request-1"];

/** The counters of one operation, without the histogram. */
function counters(handler: ToolEndpointHandler, operation: string) {
  const { latency: _latency, ...rest } = handler.metrics.operations[operation];
  return rest;
}

const ZERO = {
  admitted: 0,
  rejected: 0,
  succeeded: 0,
  failed: 0,
  cancelled: 0,
  stopped: 0,
  unknown: 0,
};

const OK = new ToolResult({ status: "succeeded", outputs: { ok: true } });
const COMPLETED = new ToolExecutionStatus({ phase: "completed" });

// ---------------------------------------------------------------------------------------------
// start()

Deno.test("start() throwing a plain Error: provider.start_failed with the cause, the outcome unknown", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const failure = new Error("motor driver gone");
  action.startHook = () => {
    throw failure;
  };
  const handler = actionHandler(action, { logger });
  const outcome = invokeOutcome((await handler.dispatch(invokeFor(ACTION)))[0]);
  assertEquals((outcome as ToolResult).status, "unknown");
  assertEquals(events(records), ["error provider.start_failed"]);
  assertEquals(ids(records[0]), ACTION_IDS);
  assertStrictEquals(records[0].error, failure);
  assertEquals(
    records[0].message,
    "start() failed after dispatch; the execution converged to unknown",
  );
  assertEquals(counters(handler, "move"), { ...ZERO, admitted: 1, unknown: 1 });
  assertEquals(handler.metrics.operations.move.latency.count, 1);
});

Deno.test("start() returning a plain object: provider.start_failed names what it returned", async () => {
  const { records, logger } = recorder();
  const handler = actionHandler({
    start: () => ({ accepted: true }),
    cancel: () => {},
    status: () => {},
    result: () => {},
  }, { logger });
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  assertEquals(events(records), ["error provider.start_failed"]);
  assertInstanceOf(records[0].error, TypeError);
  assertEquals(
    (records[0].error as Error).message,
    "Tool endpoint start() must return a ToolAccepted: current value is an Object",
  );
  assertEquals(counters(handler, "move"), { ...ZERO, admitted: 1, unknown: 1 });
});

Deno.test("start() throwing a ToolEndpointError: a rejection, counted, not a failure to log", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const error = new ToolError({ code: "ARM_BUSY", message: "busy", retryable: true });
  action.startHook = () => {
    throw new ToolEndpointError(error);
  };
  const handler = actionHandler(action, { logger });
  await handler.dispatch(invokeFor(ACTION));
  assertEquals(records, []);
  assertEquals(counters(handler, "move"), { ...ZERO, admitted: 1, rejected: 1 });
  assertEquals(handler.metrics.operations.move.latency.count, 0);
});

// ---------------------------------------------------------------------------------------------
// status(), result(), control

for (
  const [method, request, event] of [
    ["status", statusFor(ACTION), "provider.status_failed"],
    ["result", resultFor(ACTION), "provider.result_failed"],
    ["cancel", controlFor(ACTION, "cancel"), "provider.control_failed"],
  ] as const
) {
  Deno.test(`${method}() throwing a non-ToolEndpointError: ${event} with the request's ids`, async () => {
    const { records, logger } = recorder();
    const action = new RecordingAction();
    const failure = new RangeError(`${method} exploded`);
    (action as unknown as Record<string, unknown>)[method] = () => {
      throw failure;
    };
    const handler = actionHandler(action, { logger });
    const thrown = await assertRejects(() => handler.dispatch(request));
    assertStrictEquals(thrown, failure);
    assertEquals(events(records), [`error ${event}`]);
    assertEquals(ids(records[0]), [
      "motion.arm",
      "move",
      "invocation-1",
      "attempt-1",
      request.requestId,
    ]);
    assertStrictEquals(records[0].error, failure);
  });
}

Deno.test("a provider breaking a lifecycle rule is logged though it is answered as a protocol error", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const handler = actionHandler(action, { logger });
  action.currentStatus = new ToolExecutionStatus({ phase: "stopping" });
  await handler.dispatch(statusFor(ACTION));
  action.currentStatus = new ToolExecutionStatus({ phase: "accepted" });
  const [answer] = await handler.dispatch(statusFor(ACTION, { requestId: "status-2" }));
  assertEquals(answer.messageType, "tool.error");
  assertEquals(events(records), ["error provider.status_failed"]);
  assertEquals(records[0].requestId, "status-2");
  assertEquals((records[0].error as ToolProtocolError).code, "FORGE_ENDPOINT_INVALID_TRANSITION");
});

Deno.test("a control answer that is no ToolControlResponse: provider.control_failed", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  action.controlAnswer = () => "yes";
  const handler = actionHandler(action, { logger });
  await assertRejects(() => handler.dispatch(controlFor(ACTION, "cancel")), TypeError);
  assertEquals(events(records), ["error provider.control_failed"]);
  assertEquals(
    (records[0].error as Error).message,
    'Tool endpoint cancel() must return a ToolControlResponse: current value is "yes"',
  );
});

// ---------------------------------------------------------------------------------------------
// Events

Deno.test("a terminal barrier failure inside emit: event.terminal_failed, and emit() rejects", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const handler = actionHandler(action, { logger });
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  // result() still answers pending: the terminal event has no authoritative result.
  const refused = await assertRejects(
    () => action.emitter!.emit(new ToolEvent({ type: "executor_completed" })),
    ToolProtocolError,
  );
  assertEquals(events(records), ["error event.terminal_failed"]);
  assertEquals(ids(records[0]), ACTION_IDS);
  assertStrictEquals(records[0].error, refused);
  assertEquals(
    records[0].message,
    "the executor_completed event's terminal barrier failed: the event was refused",
  );
});

Deno.test("a terminal barrier cut short by close(): event.terminal_failed as a warning", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const handler = actionHandler(action, { logger });
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  action.result = () => new Promise(() => {});
  const terminal = action.emitter!.emit(new ToolEvent({ type: "executor_completed" }));
  await handler.close({ graceMs: 0 });
  await assertRejects(() => terminal, ToolProtocolError, "closed before the provider answered");
  assertEquals(events(records), [
    "warn execution.unknown",
    "warn handler.calls_abandoned",
    "warn event.terminal_failed",
  ]);
});

Deno.test("a sink that rejects: event.sink_failed with the sink's error", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const handler = actionHandler(action, { logger });
  const failure = new Error("output closed");
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => Promise.reject(failure) });
  await assertRejects(() => action.emitter!.emit(new ToolEvent({ type: "progress" })));
  assertEquals(events(records), ["error event.sink_failed"]);
  assertEquals(ids(records[0]), ACTION_IDS);
  assertStrictEquals(records[0].error, failure);
  assertEquals(records[0].message, "publishing event 0 (progress) failed");
});

Deno.test("events refused after terminal and beyond maxPendingEvents are warnings", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  const handler = actionHandler(action, { logger, maxPendingEvents: 1 });
  let release!: () => void;
  const blocked = new Promise<void>((resolve) => (release = resolve));
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => blocked });
  const first = action.emitter!.emit(new ToolEvent({ type: "progress" }));
  await assertRejects(() => action.emitter!.emit(new ToolEvent({ type: "progress" })));
  release();
  await first;
  action.finish(COMPLETED, OK);
  await action.emitter!.emit(new ToolEvent({ type: "executor_completed" }));
  await assertRejects(() => action.emitter!.emit(new ToolEvent({ type: "progress" })));
  assertEquals(events(records), ["warn event.pending_overflow", "warn event.after_terminal"]);
  assertEquals(ids(records[1]), ACTION_IDS);
  assertEquals(counters(handler, "move"), { ...ZERO, admitted: 1, succeeded: 1 });
});

Deno.test("an early-event overflow: event.early_overflow, then provider.start_failed", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction({
    events: [new ToolEvent({ type: "progress" }), new ToolEvent({ type: "progress" })],
  });
  action.startHook = () => {}; // the overflowing emit's rejection is caught by start below
  const handler = actionHandler(
    {
      start: async (...args: Parameters<RecordingAction["start"]>) => {
        try {
          return await action.start(...args);
        } catch {
          return new ToolAccepted();
        }
      },
      cancel: () => {},
      status: () => {},
      result: () => {},
    },
    { logger, maxEarlyEvents: 1 },
  );
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  assertEquals(events(records), ["warn event.early_overflow", "error provider.start_failed"]);
  assertEquals(counters(handler, "move"), { ...ZERO, admitted: 1, unknown: 1 });
});

// ---------------------------------------------------------------------------------------------
// Aborts and shutdown

Deno.test("a deadline abort: execution.deadline_exceeded with the execution key", async () => {
  const { records, logger } = recorder();
  let now = 1_000;
  const action = new RecordingAction();
  const handler = actionHandler(action, { logger, enforceDeadlines: true, now: () => now });
  await handler.dispatch(invokeFor(ACTION, { deadlineMs: 1_001 }), { eventSink: () => {} });
  now = 1_001;
  const signal = action.signals[0];
  // The deadline timer does not keep the process alive; this interval does, until the abort.
  const alive = setInterval(() => {}, 1_000);
  await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  clearInterval(alive);
  assertEquals(events(records), ["warn execution.deadline_exceeded"]);
  assertEquals(ids(records[0]), ACTION_IDS);
  assertEquals(records[0].message, "deadline_ms 1001 passed: the provider's signal aborted");
  await handler.close({ graceMs: 0 });
});

Deno.test("a dispatch abandoned by its caller: execution.caller_aborted, the outcome unknown", async () => {
  const { records, logger } = recorder();
  const action = new RecordingAction();
  action.startHook = () => new Promise(() => {});
  const handler = actionHandler(action, { logger });
  const caller = new AbortController();
  const dispatched = handler.dispatch(invokeFor(ACTION), { signal: caller.signal });
  caller.abort(new Error("caller went away"));
  await assertRejects(() => dispatched, Error, "caller went away");
  assertEquals(events(records), ["warn execution.caller_aborted"]);
  assertEquals(ids(records[0]), ACTION_IDS);
  assertEquals(counters(handler, "move"), { ...ZERO, admitted: 1, unknown: 1 });
  await handler.close({ graceMs: 0 });
});

Deno.test("close() past its grace: execution.unknown per running execution, handler.calls_abandoned", async () => {
  const { records, logger } = recorder();
  const session = new RecordingSession();
  const handler = sessionHandler(session, { logger, maxConcurrency: 2 });
  await handler.dispatch(invokeFor(SESSION), { eventSink: () => {} });
  session.status = () => new Promise(() => {});
  const pending = handler.dispatch(statusFor(SESSION, { invocationId: "invocation-2" }));
  await handler.close({ graceMs: 0 });
  await pending;
  assertEquals(events(records), ["warn execution.unknown", "warn handler.calls_abandoned"]);
  assertEquals(ids(records[0]), [
    "policy.runner",
    "serve",
    "invocation-1",
    "attempt-1",
    "request-1",
  ]);
  assertEquals(
    records[1].message,
    "close() abandoned 1 provider call still pending after its grace",
  );
  assertEquals(counters(handler, "serve"), { ...ZERO, admitted: 1, unknown: 1 });
});

Deno.test("a watchState listener that throws: handler.watcher_failed", async () => {
  const { records, logger } = recorder();
  const handler = actionHandler(new RecordingAction(), { logger });
  const failure = new Error("health down");
  handler.watchState(() => {
    throw failure;
  });
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  await Promise.resolve();
  assertEquals(events(records), ["error handler.watcher_failed"]);
  assertStrictEquals(records[0].error, failure);
});

// ---------------------------------------------------------------------------------------------
// Query

Deno.test("query() throwing or returning no ToolResult: provider.query_failed, counted failed", async () => {
  const { records, logger } = recorder();
  const failure = new Error("camera gone");
  let mode: "throw" | "invalid" | "ok" | "reject" = "throw";
  const handler = queryHandler({
    query: () => {
      if (mode === "throw") throw failure;
      if (mode === "reject") {
        throw new ToolEndpointError(new ToolError({ code: "BUSY", message: "b", retryable: true }));
      }
      return mode === "invalid" ? 42 : OK;
    },
  }, { logger });
  await assertRejects(() => handler.dispatch(invokeFor(QUERY)));
  mode = "invalid";
  await assertRejects(() => handler.dispatch(invokeFor(QUERY)), TypeError);
  mode = "ok";
  await handler.dispatch(invokeFor(QUERY));
  mode = "reject";
  await handler.dispatch(invokeFor(QUERY));
  assertEquals(events(records), [
    "error provider.query_failed",
    "error provider.query_failed",
  ]);
  assertStrictEquals(records[0].error, failure);
  assertEquals(ids(records[0]), [
    "vision.yolo",
    "detect",
    "invocation-1",
    "attempt-1",
    "request-1",
  ]);
  assertEquals(
    (records[1].error as Error).message,
    "QueryToolEndpoint.query() must return a ToolResult: current value is 42",
  );
  assertEquals(counters(handler, "detect"), {
    ...ZERO,
    admitted: 4,
    rejected: 1,
    succeeded: 1,
    failed: 2,
  });
  assertEquals(handler.metrics.operations.detect.latency.count, 3);
});

// ---------------------------------------------------------------------------------------------
// Metrics

Deno.test("metrics: admitted, rejected at capacity, succeeded, cancelled, stopped, exact counts", async () => {
  const action = new RecordingAction();
  const handler = actionHandler(action, { maxConcurrency: 1, logger: () => {} });
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  // At capacity: rejected; a duplicate replays and is not counted.
  await handler.dispatch(invokeFor(ACTION, { invocationId: "invocation-2" }));
  await handler.dispatch(invokeFor(ACTION, { requestId: "request-again" }));
  action.finish(COMPLETED, OK);
  await handler.dispatch(statusFor(ACTION));
  // A second execution, cancelled.
  await handler.dispatch(invokeFor(ACTION, { invocationId: "invocation-3" }), {
    eventSink: () => {},
  });
  action.finish(
    new ToolExecutionStatus({ phase: "cancelled" }),
    new ToolResult({ status: "cancelled" }),
  );
  await handler.dispatch(resultFor(ACTION, { invocationId: "invocation-3" }));
  assertEquals(counters(handler, "move"), {
    ...ZERO,
    admitted: 2,
    rejected: 1,
    succeeded: 1,
    cancelled: 1,
  });
  const latency = handler.metrics.operations.move.latency;
  assertEquals(latency.count, 2);
  assertEquals(latency.counts.length, 32);
  assert(latency.p50 !== undefined && latency.p99 !== undefined && latency.p50 <= latency.p99);

  const session = new RecordingSession();
  const sessions = sessionHandler(session, { logger: () => {} });
  await sessions.dispatch(invokeFor(SESSION), { eventSink: () => {} });
  session.finish(
    new ToolExecutionStatus({ phase: "stopped" }),
    new ToolResult({ status: "stopped" }),
  );
  await sessions.dispatch(statusFor(SESSION));
  // Reading it again does not count it again.
  await sessions.dispatch(statusFor(SESSION, { requestId: "status-2" }));
  assertEquals(counters(sessions, "serve"), { ...ZERO, admitted: 1, stopped: 1 });
});

Deno.test("metrics: a closed handler's refusals are counted rejected; the snapshot is frozen", async () => {
  const handler = queryHandler(new FakeQuery(), { logger: () => {} });
  await handler.close();
  await handler.dispatch(invokeFor(QUERY));
  const metrics = handler.metrics;
  assertEquals(counters(handler, "detect"), { ...ZERO, rejected: 1 });
  assert(Object.isFrozen(metrics) && Object.isFrozen(metrics.operations.detect));
  assertEquals(metrics.operations.detect.latency.p50, undefined);
});

Deno.test("ToolLatencyHistogram: percentiles are bucket bounds; bad input is a RangeError", () => {
  const counts = new Array(32).fill(0);
  counts[0] = 1;
  counts[3] = 1;
  counts[31] = 2;
  const histogram = new ToolLatencyHistogram(counts);
  assertEquals(histogram.count, 4);
  assertEquals(histogram.percentile(0.25), 0.001);
  assertEquals(histogram.percentile(0.5), 0.008);
  assertEquals(histogram.p99, 2 ** 31 / 1000);
  assertEquals(histogram.upperBoundsMs.length, 32);
  assertThrows(() => histogram.percentile(0), RangeError, "'q' must be in (0, 1]");
  assertThrows(() => new ToolLatencyHistogram([1]), RangeError, "'counts'");
});

// ---------------------------------------------------------------------------------------------
// Option errors

for (
  const [option, value, shown] of [
    ["maxEarlyEvents", 0, "0"],
    ["maxRetainedExecutions", -1, "-1"],
    ["maxPendingEvents", 1.5, "1.5"],
    ["maxEarlyEvents", "8", '"8"'],
  ] as const
) {
  Deno.test(`handler option error names '${option}' and shows ${shown}`, () => {
    assertThrows(
      () =>
        new ToolEndpointHandler(queryDescriptor(), {
          endpointInstanceId: INSTANCE,
          operations: { detect: new FakeQuery() },
          [option]: value,
        }),
      RangeError,
      `Cannot create the handler as '${option}' must be a positive integer: current value is ${shown}`,
    );
  });
}

Deno.test("handler option errors: logger, endpointInstanceId, operations", () => {
  const make = (options: Record<string, unknown>) => () =>
    new ToolEndpointHandler(queryDescriptor(), {
      endpointInstanceId: INSTANCE,
      operations: { detect: new FakeQuery() },
      ...options,
    } as never);
  assertThrows(
    make({ logger: "console" }),
    TypeError,
    `Cannot create the handler as 'logger' must be a function: current value is "console"`,
  );
  assertThrows(
    make({ endpointInstanceId: " " }),
    RangeError,
    `Cannot create the handler as 'endpointInstanceId' must be a non-empty string: current value is " "`,
  );
  assertThrows(
    make({ endpointInstanceId: "\ud800" }),
    RangeError,
    `Cannot create the handler as 'endpointInstanceId' must contain valid Unicode scalar values: current value is "\\ud800"`,
  );
  assertThrows(
    make({ operations: [] }),
    TypeError,
    "Cannot create the handler as 'operations' must be a mapping: current value is ",
  );
});

// ---------------------------------------------------------------------------------------------
// Tracing

/** A tracer keeping every span's name, attributes and end. */
function spanRecorder() {
  const spans: { name: string; attributes: Record<string, unknown>; ended: boolean }[] = [];
  const tracer: ToolTracer = {
    startSpan(name, options) {
      const entry = { name, attributes: { ...options?.attributes }, ended: false };
      spans.push(entry);
      return {
        setAttribute: (key, value) => (entry.attributes[key] = value),
        end: () => void (entry.ended = true),
      };
    },
  };
  return { spans, tracer };
}

Deno.test("tracing: one span per admitted invocation, ended with its outcome when it is established", async () => {
  const { spans, tracer } = spanRecorder();
  const action = new RecordingAction();
  const handler = actionHandler(action, { tracer, maxConcurrency: 2, logger: () => {} });
  await handler.dispatch(invokeFor(ACTION), { eventSink: () => {} });
  assertEquals(spans.map((span) => [span.name, span.ended]), [["forge.tool move", false]]);
  assertEquals(spans[0].attributes, {
    "forge.endpoint_id": "motion.arm",
    "forge.operation": "move",
    "forge.invocation_id": "invocation-1",
    "forge.attempt_id": "attempt-1",
    "forge.request_id": "request-1",
  });
  action.finish(COMPLETED, OK);
  await handler.dispatch(statusFor(ACTION));
  assertEquals([spans[0].ended, spans[0].attributes["forge.outcome"]], [true, "succeeded"]);
  // A rejection by the provider ends its span as rejected; a duplicate starts none.
  action.startHook = () => {
    throw new ToolEndpointError(new ToolError({ code: "NO", message: "no", retryable: false }));
  };
  await handler.dispatch(invokeFor(ACTION, { invocationId: "invocation-2" }));
  await handler.dispatch(invokeFor(ACTION, { invocationId: "invocation-2" }));
  assertEquals(spans.length, 2);
  assertEquals([spans[1].ended, spans[1].attributes["forge.outcome"]], [true, "rejected"]);

  const query = spanRecorder();
  const queries = queryHandler({ query: () => OK }, { tracer: query.tracer });
  await queries.dispatch(invokeFor(QUERY));
  assertEquals(
    query.spans.map((span) => [span.name, span.ended, span.attributes["forge.outcome"]]),
    [["forge.tool detect", true, "succeeded"]],
  );
});

Deno.test("tracing: a throwing tracer never breaks a dispatch; a bad tracer option is refused", async () => {
  const handler = queryHandler({ query: () => OK }, {
    tracer: {
      startSpan: () => {
        throw new Error("otel not initialized");
      },
    },
  });
  const [answer] = await handler.dispatch(invokeFor(QUERY));
  assertEquals(invokeOutcome(answer), OK);
  assertThrows(
    () => queryHandler(new FakeQuery(), { tracer: {} as never }),
    TypeError,
    "Cannot create the handler as 'tracer' must be an object with a startSpan() method",
  );
  assertEquals(denoTracer(), undefined);
});

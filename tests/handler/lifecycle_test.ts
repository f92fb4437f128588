// Handler behaviour beyond the reference suite: load and retention bounds, observation records,
// misbehaving providers (with no unhandled rejection), late events and the event sink, the
// execution AbortSignal, deadlines, close(), the state view, and route trust (Query-only rules:
// query_test.ts). Stays whole (over 400 lines): one suite of the handler's execution lifecycle.
import {
  assert,
  assertEquals,
  assertGreaterOrEqual,
  assertInstanceOf,
  assertLessOrEqual,
  assertRejects,
  assertStrictEquals,
  fail,
} from "@std/assert";
import { deadline, delay } from "@std/async";
import {
  ToolAccepted,
  ToolControlResponse,
  ToolEndpointError,
  type ToolEndpointHandler,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolResult,
  type ToolResultResponse,
} from "../../mod.ts";
import {
  invokeResponseFromPayload,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeResponseEnvelope,
  makeStatusResponseEnvelope,
  makeUnregisterEnvelope,
  ToolEnvelope,
  ToolProtocolError,
  validateResponseCorrelation,
} from "../../wire.ts";
import {
  acceptedOutcome,
  ACTION,
  ACTION_ACCEPTED,
  actionHandler,
  assertRejectsProtocol,
  checkProtocolError,
  completedResult,
  controlFor,
  controlOf,
  ctx,
  errorOf,
  eventOf,
  gate,
  INSTANCE,
  invokeFor,
  RecordingSession,
  rejectedError,
  rejectionOf,
  resultFor,
  resultOf,
  SESSION,
  sessionHandler,
  settled,
  statusFor,
  statusOf,
  type Target,
  UNKNOWN_START_RESULT,
  until,
  withFields,
} from "./_fakes.ts";
import {
  available,
  CA,
  cell,
  COMPLETED,
  CQ,
  CS,
  PENDING,
  RUNNING,
  Scripted,
  succeeded,
  test,
  THROW_KINDS,
} from "./_scripted.ts";

// ---------------------------------------------------------------------------------------------
// Load and retention bounds

test("load: 10,000 concurrent Action invokes never exceed max_concurrency 4", async () => {
  const action = new Scripted();
  let active = 0;
  let maxActive = 0;
  action.onStart = async () => {
    active++;
    maxActive = Math.max(maxActive, active);
    await Promise.resolve();
    return new ToolAccepted({ details: { executor: "arm" } });
  };
  const handler = cell({ action }, { maxConcurrency: 4 });
  const total = 10_000;
  const requests = Array.from(
    { length: total },
    (_, i) => invokeFor(CA, { requestId: `request-${i}`, invocationId: `invocation-${i}` }),
  );
  const answers = new Map<string, number>();
  let maxPermits = 0;
  const responses = await Promise.all(requests.map(async (request) => {
    const messages = await handler.dispatch(request);
    const permits = handler.state.permitsInUse.move;
    maxPermits = Math.max(maxPermits, permits);
    if (permits > 4) fail(`${permits} permits in use`);
    answers.set(request.requestId!, (answers.get(request.requestId!) ?? 0) + messages.length);
    validateResponseCorrelation(request, messages[0]);
    return messages[0];
  }));
  assertStrictEquals(answers.size, total);
  assert([...answers.values()].every((count) => count === 1), "every invoke answered once");
  const accepted: string[] = [];
  let rejected = 0;
  for (const response of responses) {
    const outcome = acceptedOrRejected(response);
    if (outcome instanceof ToolAccepted) {
      accepted.push(response.invocationId!);
    } else {
      assertStrictEquals(outcome.code, "FORGE_ENDPOINT_CAPACITY");
      assertStrictEquals(outcome.message, "operation 'move' is at max_concurrency");
      assertStrictEquals(outcome.retryable, true);
      rejected++;
    }
  }
  assertStrictEquals(accepted.length, 4);
  assertStrictEquals(rejected, 9_996);
  assertStrictEquals(action.calls.start, 4);
  assertStrictEquals(maxActive, 4);
  assertStrictEquals(maxPermits, 4);
  assertStrictEquals(handler.state.saturated, false); // serve has no permit in use
  // Complete the four through terminal status observation: permits return one by one.
  let expected = 4;
  for (const invocationId of accepted) {
    action.done.add(new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }).id);
    active--;
    const status = await handler.handleStatus(statusFor(CA, { invocationId }));
    assertStrictEquals(statusOf(status).phase, "completed");
    expected--;
    assertStrictEquals(handler.state.permitsInUse.move, expected);
  }
  assertStrictEquals(active, 0);
  assertStrictEquals(handler.state.permitsInUse.move, 0);
  assertStrictEquals(handler.state.activeInvocations, 0);
  // The freed capacity admits again.
  const again = await handler.dispatch(invokeFor(CA, { invocationId: "invocation-new" }));
  assertEquals(acceptedOutcome(again[0]), ACTION_ACCEPTED);
});

function acceptedOrRejected(response: ToolEnvelope): ToolAccepted | ToolError {
  const outcome = response.payload.outcome === "accepted"
    ? acceptedOutcome(response)
    : rejectedError(response);
  return outcome;
}

test("retention: 100,000 distinct keys never retain more than 1,024 records", async () => {
  const busy = new ToolError({ code: "BUSY", message: "not admitted", retryable: true });
  let starts = 0;
  const action = {
    start() {
      starts++;
      throw new ToolEndpointError(busy);
    },
    cancel: () => new ToolControlResponse({ command: "cancel", status: "accepted" }),
    status: () => RUNNING,
    result: () => PENDING,
  };
  const handler = actionHandler(action, { maxConcurrency: 100, maxRetainedExecutions: 1024 });
  const total = 100_000;
  const batch = 100;
  let maxRetained = 0;
  let wrong = 0;
  for (let base = 0; base < total; base += batch) {
    await Promise.all(Array.from({ length: batch }, async (_, j) => {
      const i = base + j;
      const [response] = await handler.dispatch(
        invokeFor(ACTION, { requestId: `request-${i}`, invocationId: `invocation-${i}` }),
      );
      if (response.payload.outcome !== "rejected") wrong++;
      maxRetained = Math.max(maxRetained, handler.state.retainedExecutions);
    }));
    if (handler.state.retainedExecutions > 1024) fail("retention exceeded its bound");
  }
  assertStrictEquals(wrong, 0);
  assertLessOrEqual(maxRetained, 1024);
  assertStrictEquals(handler.state.retainedExecutions, 1024);
  assertStrictEquals(starts, total);
  assertStrictEquals(handler.state.permitsInUse.move, 0);
  // The newest rejection is still retained (replayed without start); the oldest was evicted.
  const newest = await handler.dispatch(
    invokeFor(ACTION, { requestId: "again", invocationId: `invocation-${total - 1}` }),
  );
  assertEquals(rejectedError(newest[0]), busy);
  assertStrictEquals(starts, total);
  await handler.dispatch(invokeFor(ACTION, { requestId: "again", invocationId: "invocation-0" }));
  assertStrictEquals(starts, total + 1);
  assertStrictEquals(handler.state.retainedExecutions, 1024);
});

test("retention: a ledger full of active records refuses admission and observation", async () => {
  const action = new Scripted();
  const handler = cell({ action }, { maxConcurrency: 3, maxRetainedExecutions: 2 });
  for (const invocationId of ["a", "b"]) {
    const [response] = await handler.dispatch(invokeFor(CA, { invocationId }));
    acceptedOutcome(response);
  }
  const third = invokeFor(CA, { invocationId: "c", requestId: "request-c" });
  const [refused] = await handler.dispatch(third);
  validateResponseCorrelation(third, refused);
  assertEquals(
    rejectedError(refused),
    new ToolError({
      code: "FORGE_ENDPOINT_CAPACITY",
      message: "execution retention is full of active records",
      retryable: true,
    }),
  );
  assertStrictEquals(action.calls.start, 2);
  assertStrictEquals(handler.state.permitsInUse.move, 2);
  const observe = statusFor(CA, { invocationId: "unknown-key" });
  const [full] = await handler.dispatch(observe);
  validateResponseCorrelation(observe, full);
  assertEquals(
    errorOf(full),
    new ToolError({
      code: "FORGE_ENDPOINT_RETENTION_FULL",
      message: "execution retention is full of active records",
      retryable: false,
    }),
  );
  assertStrictEquals(handler.state.retainedExecutions, 2);
  // Once one execution is terminal its record may go, and admission works again.
  action.done.add(new ToolExecutionKey({ invocationId: "a", attemptId: "attempt-1" }).id);
  statusOf((await handler.dispatch(statusFor(CA, { invocationId: "a" })))[0]);
  const [admitted] = await handler.dispatch(invokeFor(CA, { invocationId: "c" }));
  acceptedOutcome(admitted);
  assertStrictEquals(handler.state.retainedExecutions, 2);
});

// ---------------------------------------------------------------------------------------------
// Observation records and execution conflicts

test("an observed key refuses a later invoke and binds its operation", async () => {
  const action = new Scripted();
  const session = new Scripted();
  const handler = cell({ action, session });
  const observe = statusFor(CA, { invocationId: "observed" });
  assertStrictEquals(statusOf((await handler.dispatch(observe))[0]).phase, "running");
  assertStrictEquals(handler.state.retainedExecutions, 1);
  const invoke = invokeFor(CA, { invocationId: "observed", requestId: "invoke-observed" });
  const [refused] = await handler.dispatch(invoke);
  validateResponseCorrelation(invoke, refused);
  assertEquals(
    rejectedError(refused),
    new ToolError({
      code: "FORGE_ENDPOINT_EXECUTION_ALREADY_OBSERVED",
      message: "execution key has existing provider state but no replayable invoke outcome",
      retryable: false,
    }),
  );
  assertStrictEquals(action.calls.start, 0);
  // The same key on another operation is a conflict, raised rather than answered.
  await assertRejectsProtocol(
    () => handler.dispatch(invokeFor(CS, { invocationId: "observed" })),
    "FORGE_PROTOCOL_EXECUTION_CONFLICT",
    { path: "operation", message: "execution key is already bound to a different operation" },
  );
  assertStrictEquals(session.calls.start, 0);
  // An admitted key too; a status observation on the other operation is answered as tool.error.
  acceptedOutcome((await handler.dispatch(invokeFor(CA, { invocationId: "admitted" })))[0]);
  await assertRejectsProtocol(
    () => handler.dispatch(invokeFor(CS, { invocationId: "admitted" })),
    "FORGE_PROTOCOL_EXECUTION_CONFLICT",
    { path: "operation" },
  );
  const crossStatus = statusFor(CS, { invocationId: "admitted" });
  const [conflict] = await handler.dispatch(crossStatus);
  validateResponseCorrelation(crossStatus, conflict);
  assertEquals(
    errorOf(conflict),
    new ToolError({
      code: "FORGE_PROTOCOL_EXECUTION_CONFLICT",
      message: "execution key is already bound to a different operation",
      retryable: false,
      details: { path: "operation" },
    }),
  );
});

test("a terminal observation of an unknown key is replayed by a later invoke", async () => {
  const action = new Scripted();
  action.done.add(new ToolExecutionKey({ invocationId: "finished", attemptId: "attempt-1" }).id);
  const handler = cell({ action });
  assertStrictEquals(
    statusOf((await handler.dispatch(statusFor(CA, { invocationId: "finished" })))[0]).phase,
    "completed",
  );
  const [replayed] = await handler.dispatch(invokeFor(CA, { invocationId: "finished" }));
  assertEquals(completedResult(replayed), succeeded({ key: "finished" }));
  assertStrictEquals(action.calls.start, 0);
  assertStrictEquals(handler.state.permitsInUse.move, 0);
});

// ---------------------------------------------------------------------------------------------
// Misbehaving providers

for (const [name, family] of [["action", CA], ["session", CS]] as const) {
  for (
    const [kind, script] of [
      ["synchronous throw", () => {
        throw new Error("start exploded");
      }],
      ["asynchronous rejection", () => Promise.reject(new Error("start exploded"))],
      ["non-ToolAccepted value", () => ({})],
      ["non-ToolAccepted promise", () => Promise.resolve({ details: {} })],
      ["undefined", () => undefined],
    ] as const
  ) {
    test(`${name} start with a ${kind} converges to unknown`, async () => {
      const provider = new Scripted();
      provider.onStart = script;
      const handler = cell(name === "action" ? { action: provider } : { session: provider });
      const [first] = await handler.dispatch(invokeFor(family, { requestId: "request-1" }));
      assertEquals(completedResult(first), UNKNOWN_START_RESULT);
      const [duplicate] = await handler.dispatch(invokeFor(family, { requestId: "request-2" }));
      assertEquals(completedResult(duplicate), UNKNOWN_START_RESULT);
      assertStrictEquals(provider.calls.start, 1);
      assertStrictEquals(handler.state.permitsInUse[family.operation], 0);
      // The unknown outcome is terminal: status and result are answered from the ledger.
      const status = statusOf((await handler.dispatch(statusFor(family)))[0]);
      assertStrictEquals(status.phase, "unknown");
      assertEquals(status.error, UNKNOWN_START_RESULT.error);
      assertEquals(
        resultOf((await handler.dispatch(resultFor(family)))[0]).result,
        UNKNOWN_START_RESULT,
      );
      assertStrictEquals(provider.calls.status + provider.calls.result, 0);
    });
  }
}

test("start throwing ToolEndpointError synchronously is a rejection", async () => {
  const action = new Scripted();
  const error = new ToolError({ code: "NOT_NOW", message: "arm is homing", retryable: true });
  action.onStart = () => {
    throw new ToolEndpointError(error);
  };
  const handler = cell({ action });
  assertEquals(rejectedError((await handler.dispatch(invokeFor(CA)))[0]), error);
  assertStrictEquals(handler.state.permitsInUse.move, 0);
  // Sticky while retained.
  assertEquals(
    rejectedError((await handler.dispatch(invokeFor(CA, { requestId: "request-2" })))[0]),
    error,
  );
  assertStrictEquals(action.calls.start, 1);
});

for (const [kind, make] of THROW_KINDS) {
  for (const method of ["status", "result", "control"] as const) {
    test(`${method}() with a ${kind} propagates the error`, async () => {
      const action = new Scripted();
      const error = new Error(`${method} exploded`);
      if (method === "status") action.onStatus = make(error);
      else if (method === "result") action.onResult = make(error);
      else action.onControl = make(error);
      const handler = cell({ action });
      await handler.dispatch(invokeFor(CA));
      const request = method === "status"
        ? statusFor(CA)
        : method === "result"
        ? resultFor(CA)
        : controlFor(CA, "cancel");
      assertStrictEquals(await rejectionOf(handler.dispatch(request)), error);
    });
  }
}

for (const method of ["status", "result", "cancel", "stop"] as const) {
  test(`${method}() throwing ToolEndpointError answers a correlated tool.error`, async () => {
    const provider = new Scripted();
    const error = new ToolError({
      code: "PROVIDER_DOWN",
      message: "controller offline",
      retryable: true,
      details: { method },
    });
    const script = () => {
      throw new ToolEndpointError(error);
    };
    if (method === "status") provider.onStatus = script;
    else if (method === "result") provider.onResult = script;
    else provider.onControl = script;
    const target = method === "stop" ? CS : CA;
    const handler = cell(method === "stop" ? { session: provider } : { action: provider });
    const request = method === "status"
      ? statusFor(target)
      : method === "result"
      ? resultFor(target)
      : controlFor(target, method);
    const [response] = await handler.dispatch(request);
    validateResponseCorrelation(request, response);
    assertEquals(errorOf(response), error);
  });
}

for (
  const [method, message] of [
    ["status", "Tool endpoint status() must return a ToolExecutionStatus"],
    ["result", "Tool endpoint result() must return a ToolResultResponse"],
    ["cancel", "Tool endpoint cancel() must return a ToolControlResponse"],
    ["stop", "Tool endpoint stop() must return a ToolControlResponse"],
    ["terminal-result", "Tool endpoint result() must return a ToolResultResponse"],
    ["available-status", "Tool endpoint status() must return a ToolExecutionStatus"],
  ] as const
) {
  test(`${method}() returning the wrong shape raises a TypeError`, async () => {
    const provider = new Scripted();
    if (method === "status") provider.onStatus = () => ({});
    else if (method === "result") provider.onResult = () => Promise.resolve({});
    else if (method === "cancel" || method === "stop") provider.onControl = () => ({});
    else if (method === "terminal-result") {
      provider.onStatus = () => COMPLETED;
      provider.onResult = () => ({ status: "available" });
    } else {
      provider.onResult = () => available(succeeded());
      provider.onStatus = () => ({ phase: "completed" });
    }
    const target = method === "stop" ? CS : CA;
    const handler = cell(method === "stop" ? { session: provider } : { action: provider });
    const request = method === "status" || method === "terminal-result"
      ? statusFor(target)
      : method === "cancel" || method === "stop"
      ? controlFor(target, method)
      : resultFor(target);
    await assertRejects(() => handler.dispatch(request), TypeError, message);
  });
}

test("a control answer for another command is a correlated CORRELATION_MISMATCH", async () => {
  const action = new Scripted();
  action.onControl = () => new ToolControlResponse({ command: "stop", status: "accepted" });
  const handler = cell({ action });
  const request = controlFor(CA, "cancel");
  const [response] = await handler.dispatch(request);
  validateResponseCorrelation(request, response);
  assertEquals(
    errorOf(response),
    new ToolError({
      code: "FORGE_PROTOCOL_CORRELATION_MISMATCH",
      message: "provider control response command does not match request",
      details: { path: "payload.response.command" },
    }),
  );
});

test("an emit after a terminal event is EVENT_AFTER_TERMINAL", async () => {
  const action = new Scripted();
  const handler = cell({ action });
  const published: ToolEnvelope[] = [];
  await handler.dispatch(invokeFor(CA), { eventSink: (event) => void published.push(event) });
  const emitter = action.emitters[0];
  action.done.add(
    new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }).id,
  );
  await emitter.emit(new ToolEvent({ type: "executor_completed" }));
  assertEquals(published.map((event) => eventOf(event).type), ["executor_completed"]);
  assertStrictEquals(handler.state.permitsInUse.move, 0);
  for (const type of ["progress", "executor_completed", "cancelled"] as const) {
    await assertRejectsProtocol(
      () => emitter.emit(new ToolEvent({ type })),
      "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL",
      { message: "an event was emitted after terminal event progression closed", path: null },
    );
  }
  assertStrictEquals(published.length, 1);
  await assertRejects(
    () => emitter.emit({ type: "progress", data: {} } as unknown as ToolEvent),
    TypeError,
    "event must be a ToolEvent",
  );
});

test("a terminal event before the result is available is raised into the provider", async () => {
  const action = new Scripted();
  const caught: unknown[] = [];
  action.onStart = async (_request, _context, events) => {
    try {
      await events.emit(new ToolEvent({ type: "executor_completed" }));
    } catch (error) {
      caught.push(error);
    }
    await events.emit(new ToolEvent({ type: "progress", data: { fraction: 0.5 } }));
    return new ToolAccepted();
  };
  const handler = cell({ action });
  const published: ToolEnvelope[] = [];
  const messages = await handler.dispatch(invokeFor(CA), {
    eventSink: (event) => void published.push(event),
  });
  assertStrictEquals(caught.length, 1);
  checkProtocolError(caught[0], "FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE", {
    message: "provider emitted a terminal event before its authoritative result",
  });
  assertEquals(acceptedOutcome(messages[0]), new ToolAccepted());
  assertEquals(messages.slice(1).map((event) => [event.sequence, eventOf(event).type]), [
    [0, "progress"],
  ]);
  assertStrictEquals(handler.state.permitsInUse.move, 1);
  // Late, too: the failed terminal event consumes no sequence and leaves the emitter open.
  const emitter = action.emitters[0];
  await assertRejectsProtocol(
    () => emitter.emit(new ToolEvent({ type: "executor_completed" })),
    "FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE",
  );
  await emitter.emit(new ToolEvent({ type: "heartbeat" }));
  assertEquals(published.map((event) => event.sequence), [1]);
});

test("a terminal event that disagrees with the result is raised into the provider", async () => {
  const action = new Scripted();
  action.onResult = () => available(succeeded());
  const handler = cell({ action });
  await handler.dispatch(invokeFor(CA), { eventSink: () => {} });
  const emitter = action.emitters[0];
  await assertRejects(
    () => emitter.emit(new ToolEvent({ type: "executor_failed" })),
    RangeError,
    "a failed execution status must contain an error",
  );
  await assertRejectsProtocol(
    () => emitter.emit(new ToolEvent({ type: "cancelled" })),
    "FORGE_ENDPOINT_TERMINAL_MISMATCH",
    { message: "execution phase 'cancelled' requires result status 'cancelled'" },
  );
  assertStrictEquals(handler.state.permitsInUse.move, 1);
  await emitter.emit(new ToolEvent({ type: "executor_completed" }));
  assertStrictEquals(handler.state.permitsInUse.move, 0);
});

test("a terminal status that later changes is TERMINAL_CHANGED", async () => {
  const action = new Scripted();
  const gates = [gate(), gate()];
  let statusCall = 0;
  let current: { status: ToolExecutionStatus; result: ToolResultResponse } = {
    status: RUNNING,
    result: PENDING,
  };
  action.onStatus = async () => {
    await gates[statusCall++]?.promise;
    return current.status;
  };
  action.onResult = () => current.result;
  const handler = cell({ action });
  await handler.dispatch(invokeFor(CA));
  const first = handler.dispatch(statusFor(CA, { requestId: "status-1" }));
  const secondRequest = statusFor(CA, { requestId: "status-2" });
  const second = handler.dispatch(secondRequest);
  await until(() => statusCall === 2);
  current = { status: COMPLETED, result: available(succeeded({ n: 1 })) };
  gates[0].open();
  assertStrictEquals(statusOf((await first)[0]).phase, "completed");
  const failure = new ToolError({ code: "LATE", message: "changed its mind" });
  current = {
    status: new ToolExecutionStatus({ phase: "failed", error: failure }),
    result: available(new ToolResult({ status: "failed", error: failure })),
  };
  gates[1].open();
  const [changed] = await second;
  validateResponseCorrelation(secondRequest, changed);
  assertEquals(
    errorOf(changed),
    new ToolError({
      code: "FORGE_ENDPOINT_TERMINAL_CHANGED",
      message: "provider returned a different immutable terminal status",
    }),
  );
  // The first terminal status and result stay authoritative, served from the ledger.
  const calls = action.calls.status;
  assertStrictEquals(
    statusOf((await handler.dispatch(statusFor(CA, { requestId: "status-3" })))[0]).phase,
    "completed",
  );
  assertEquals(
    resultOf((await handler.dispatch(resultFor(CA)))[0]).result,
    succeeded({ n: 1 }),
  );
  assertStrictEquals(action.calls.status, calls);
});

test("a terminal result that later changes is TERMINAL_CHANGED", async () => {
  const action = new Scripted();
  const gates = [gate(), gate()];
  let resultCall = 0;
  let current = available(succeeded({ n: 1 }));
  action.onResult = async () => {
    await gates[resultCall++]?.promise;
    return current;
  };
  action.onStatus = () => COMPLETED;
  const handler = cell({ action });
  await handler.dispatch(invokeFor(CA));
  const first = handler.dispatch(resultFor(CA, { requestId: "result-1" }));
  const second = handler.dispatch(resultFor(CA, { requestId: "result-2" }));
  await until(() => resultCall === 2);
  gates[0].open();
  assertEquals(resultOf((await first)[0]).result, succeeded({ n: 1 }));
  current = available(succeeded({ n: 2 }));
  gates[1].open();
  assertEquals(
    errorOf((await second)[0]),
    new ToolError({
      code: "FORGE_ENDPOINT_TERMINAL_CHANGED",
      message: "provider returned a different immutable terminal result",
    }),
  );
});

test("terminal barrier violations of status and result are correlated tool.errors", async () => {
  const cases: [string, () => void, (h: ToolEndpointHandler) => ToolEnvelope, string, string][] =
    [];
  const action = new Scripted();
  cases.push([
    "status terminal before result",
    () => {
      action.onStatus = () => COMPLETED;
      action.onResult = () => PENDING;
    },
    () => statusFor(CA),
    "FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE",
    "provider exposed a terminal phase before its authoritative result",
  ]);
  cases.push([
    "status and result disagree",
    () => {
      action.onStatus = () => COMPLETED;
      action.onResult = () =>
        available(
          new ToolResult({ status: "failed", error: new ToolError({ code: "X", message: "y" }) }),
        );
    },
    () => statusFor(CA),
    "FORGE_ENDPOINT_TERMINAL_MISMATCH",
    "execution phase 'completed' requires result status 'succeeded'",
  ]);
  cases.push([
    "result available while running",
    () => {
      action.onStatus = () => RUNNING;
      action.onResult = () => available(succeeded());
    },
    () => resultFor(CA),
    "FORGE_ENDPOINT_TERMINAL_MISMATCH",
    "execution phase 'running' is not terminal",
  ]);
  const handler = cell({ action });
  await handler.dispatch(invokeFor(CA));
  for (const [name, arrange, build, code, message] of cases) {
    arrange();
    const request = build(handler);
    const [response] = await handler.dispatch(request);
    validateResponseCorrelation(request, response);
    assertEquals(
      errorOf(response),
      new ToolError({ code, message }),
      name,
    );
    assertStrictEquals(handler.state.permitsInUse.move, 1, name);
  }
});

// ---------------------------------------------------------------------------------------------
// Events and the sink

test("late events go to the sink in sequence order after the response", async () => {
  const action = new Scripted();
  action.onStart = async (_request, _context, events) => {
    await events.emit(new ToolEvent({ type: "progress", data: { fraction: 0.1 } }));
    return new ToolAccepted();
  };
  const handler = cell({ action });
  const log: string[] = [];
  const messages = await handler.dispatch(invokeFor(CA), {
    eventSink: (event) => void log.push(`sink ${event.sequence} ${eventOf(event).type}`),
  });
  log.push(`response ${messages.length}`);
  assertStrictEquals(messages[1].sequence, 0);
  const emitter = action.emitters[0];
  await emitter.emit(new ToolEvent({ type: "progress", data: { fraction: 0.5 } }));
  await emitter.emit(new ToolEvent({ type: "heartbeat" }));
  assertEquals(log, ["response 2", "sink 1 progress", "sink 2 heartbeat"]);
});

test("concurrent emits publish in sequence order behind a slow sink", async () => {
  const action = new Scripted();
  const handler = cell({ action });
  const published: number[] = [];
  const release = gate();
  await handler.dispatch(invokeFor(CA), {
    eventSink: async (event) => {
      if (event.sequence === 0) await release.promise;
      published.push(event.sequence!);
    },
  });
  const emitter = action.emitters[0];
  const first = emitter.emit(new ToolEvent({ type: "heartbeat" }));
  const second = emitter.emit(new ToolEvent({ type: "progress", data: { fraction: 0.5 } }));
  const third = emitter.emit(new ToolEvent({ type: "heartbeat" }));
  assert(!(await settled(second)), "the second emit waits behind the first publication");
  assertEquals(published, []);
  release.open();
  await Promise.all([first, second, third]);
  assertEquals(published, [0, 1, 2]);
});

test("an emit after acceptance without a sink rejects with an Error", async () => {
  const action = new Scripted();
  const handler = cell({ action });
  await handler.dispatch(invokeFor(CA));
  const error = await rejectionOf(action.emitters[0].emit(new ToolEvent({ type: "heartbeat" })));
  assertInstanceOf(error, Error);
  assert(!(error instanceof ToolProtocolError));
  assertStrictEquals(
    error.message,
    "Tool endpoint emitted after acceptance without an asynchronous event sink: pass { eventSink } to dispatch()",
  );
});

test("a sink failure is raised into the provider's emit", async () => {
  const action = new Scripted();
  const handler = cell({ action });
  const failure = new Error("transport down");
  await handler.dispatch(invokeFor(CA), {
    eventSink: () => Promise.reject(failure),
  });
  assertStrictEquals(
    await rejectionOf(action.emitters[0].emit(new ToolEvent({ type: "heartbeat" }))),
    failure,
  );
});

test("a provider that swallows the overflow error still converges to unknown", async () => {
  const action = new Scripted();
  const caught: unknown[] = [];
  action.onStart = async (_request, _context, events) => {
    await events.emit(new ToolEvent({ type: "heartbeat" }));
    try {
      await events.emit(new ToolEvent({ type: "heartbeat" }));
    } catch (error) {
      caught.push(error);
    }
    return new ToolAccepted();
  };
  const handler = cell({ action }, { maxEarlyEvents: 1 });
  const first = await handler.dispatch(invokeFor(CA, { requestId: "request-1" }));
  assertStrictEquals(caught.length, 1);
  checkProtocolError(caught[0], "FORGE_ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW", {
    message: "Tool endpoint emitted more than 1 events before acceptance",
  });
  assertStrictEquals(first.length, 1); // buffered events of a failed start are dropped
  assertEquals(completedResult(first[0]), UNKNOWN_START_RESULT);
  const duplicate = await handler.dispatch(invokeFor(CA, { requestId: "request-2" }));
  assertEquals(completedResult(duplicate[0]), UNKNOWN_START_RESULT);
  assertStrictEquals(action.calls.start, 1);
  assertStrictEquals(handler.state.permitsInUse.move, 0);
});

// ---------------------------------------------------------------------------------------------
// The execution AbortSignal

for (const [target, command] of [[CA, "cancel"], [CS, "stop"]] as const) {
  test(`the start signal aborts when a ${command} is accepted, and only then`, async () => {
    const provider = new Scripted();
    const handler = cell(target === CA ? { action: provider } : { session: provider });
    await handler.dispatch(invokeFor(target));
    const signal = provider.signals[0];
    const answers: ToolControlResponse[] = [
      new ToolControlResponse({
        command,
        status: "rejected",
        error: new ToolError({ code: "NO", message: "not now" }),
      }),
      new ToolControlResponse({ command, status: "unsupported" }),
      new ToolControlResponse({ command, status: "terminal" }),
    ];
    for (const answer of answers) {
      provider.onControl = () => answer;
      assertEquals(controlOf((await handler.dispatch(controlFor(target, command)))[0]), answer);
      assert(!signal.aborted, `a ${answer.status} answer must not abort`);
    }
    // The other command is unsupported by semantics, without asking the provider.
    const other = command === "cancel" ? "stop" : "cancel";
    assertStrictEquals(
      controlOf((await handler.dispatch(controlFor(target, other)))[0]).status,
      "unsupported",
    );
    assert(!signal.aborted);
    assertStrictEquals(provider.calls.cancel + provider.calls.stop, 3);
    provider.onControl = undefined;
    assertStrictEquals(
      controlOf((await handler.dispatch(controlFor(target, command)))[0]).status,
      "accepted",
    );
    assert(signal.aborted);
    assertInstanceOf(signal.reason, DOMException);
    assertStrictEquals(signal.reason.name, "AbortError");
    assertStrictEquals(signal.reason.message, `a ${command} control was accepted`);
  });
}

test("handler.close() aborts the signals of accepted and starting executions", async () => {
  const action = new Scripted();
  const session = new Scripted();
  const handler = cell({ action, session });
  await handler.dispatch(invokeFor(CA));
  const accepted = action.signals[0];
  session.onStart = async (_request, _context, _events, options) => {
    await new Promise((resolve) => options.signal.addEventListener("abort", resolve));
    throw options.signal.reason;
  };
  const starting = handler.dispatch(invokeFor(CS, { invocationId: "session-1" }));
  await until(() => session.calls.start === 1);
  let observed: AbortSignal | undefined;
  action.onStatus = (_key, options) => {
    observed = options.signal;
    return RUNNING;
  };
  await handler.dispatch(statusFor(CA));
  assert(!accepted.aborted && !session.signals[0].aborted && !observed!.aborted);
  await handler.close({ graceMs: 1000 });
  for (const signal of [accepted, session.signals[0], observed!]) {
    assert(signal.aborted);
    assertInstanceOf(signal.reason, DOMException);
    assertStrictEquals(signal.reason.name, "AbortError");
  }
  // The start that failed on shutdown converged to unknown.
  assertEquals(completedResult((await starting)[0]), UNKNOWN_START_RESULT);
  assertStrictEquals(handler.state.permitsInUse.serve, 0);
});

// ---------------------------------------------------------------------------------------------
// Deadlines

const NOW = 1_000_000;

for (const [name, target] of [["query", CQ], ["action", CA], ["session", CS]] as const) {
  test(`an expired deadline refuses a ${name} invoke before the provider runs`, async () => {
    const provider = new Scripted();
    const providers = { query: provider, action: provider, session: provider };
    const handler = cell(providers, { enforceDeadlines: true, now: () => NOW });
    for (const deadlineMs of [NOW, NOW - 1, 0]) {
      const request = invokeFor(target, { deadlineMs, invocationId: `late-${deadlineMs}` });
      const [response] = await handler.dispatch(request);
      validateResponseCorrelation(request, response);
      assertEquals(
        rejectedError(response),
        new ToolError({
          code: "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
          message: "deadline_ms has already passed",
          retryable: false,
        }),
      );
    }
    assertEquals(provider.calls.query + provider.calls.start, 0);
    assertStrictEquals(handler.state.retainedExecutions, 0);
    assertStrictEquals(handler.state.activeInvocations, 0);
    // A future deadline runs.
    const [ok] = await handler.dispatch(invokeFor(target, { deadlineMs: NOW + 1 }));
    assertStrictEquals(ok.payload.outcome, name === "query" ? "completed" : "accepted");
    await handler.close({ graceMs: 10 });
  });

  test(`an expired deadline refuses a ${name} invoke with the default options`, async () => {
    const provider = new Scripted();
    const providers = { query: provider, action: provider, session: provider };
    // No enforceDeadlines: deadlines are enforced by default (the reference does not enforce).
    const handler = cell(providers, { now: () => NOW });
    const [response] = await handler.dispatch(invokeFor(target, { deadlineMs: NOW - 1_000 }));
    assertEquals(rejectedError(response).code, "FORGE_ENDPOINT_DEADLINE_EXCEEDED");
    assertStrictEquals(provider.calls.query + provider.calls.start, 0);
    assertStrictEquals(handler.state.activeInvocations, 0);
  });

  test(`an expired deadline is ignored with enforceDeadlines: false [${name}]`, async () => {
    const provider = new Scripted();
    const providers = { query: provider, action: provider, session: provider };
    const handler = cell(providers, { enforceDeadlines: false, now: () => NOW });
    const [response] = await handler.dispatch(invokeFor(target, { deadlineMs: NOW - 1 }));
    assertStrictEquals(response.payload.outcome, name === "query" ? "completed" : "accepted");
    assertStrictEquals(provider.calls.query + provider.calls.start, 1);
    assert(!provider.signals[0].aborted);
  });
}

test("an accepted action's signal aborts at its deadline", async () => {
  const action = new Scripted();
  // The handler's clock stands still, so only the real 30 ms timer can end the execution: a
  // stall of the shared machine before the timer is armed cannot make the deadline pass early.
  const frozen = Date.now();
  const handler = cell({ action }, { enforceDeadlines: true, now: () => frozen });
  await handler.dispatch(invokeFor(CA, { deadlineMs: frozen + 30 }));
  const signal = action.signals[0];
  assert(!signal.aborted);
  await deadline(
    new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true })),
    2000,
  );
  assertInstanceOf(signal.reason, DOMException);
  assertStrictEquals(signal.reason.name, "TimeoutError");
  await handler.close({ graceMs: 10 });
});

// ---------------------------------------------------------------------------------------------
// close()

test("a closed handler refuses new work and still answers from the ledger", async () => {
  const query = new Scripted();
  const action = new Scripted();
  const session = new Scripted();
  const handler = cell({ query, action, session });
  await handler.dispatch(invokeFor(CA, { invocationId: "done" }));
  action.done.add(new ToolExecutionKey({ invocationId: "done", attemptId: "attempt-1" }).id);
  statusOf((await handler.dispatch(statusFor(CA, { invocationId: "done" })))[0]);
  const counts = { ...action.calls };
  await deadline(handler.close(), 1000);
  assertStrictEquals(handler.state.closed, true);
  const unavailable = new ToolError({
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "endpoint handler is closed",
    retryable: true,
  });
  for (const target of [CQ, CA, CS]) {
    const request = invokeFor(target, { invocationId: "fresh" });
    const [response] = await handler.dispatch(request);
    validateResponseCorrelation(request, response);
    assertEquals(rejectedError(response), unavailable);
  }
  assertEquals(query.calls.query + action.calls.start + session.calls.start, 1);
  // A duplicate of the settled execution replays; its status and result come from the ledger.
  const [replay] = await handler.dispatch(
    invokeFor(CA, { invocationId: "done", requestId: "again" }),
  );
  assertEquals(acceptedOutcome(replay), new ToolAccepted());
  assertStrictEquals(
    statusOf((await handler.dispatch(statusFor(CA, { invocationId: "done" })))[0]).phase,
    "completed",
  );
  assertEquals(
    resultOf((await handler.dispatch(resultFor(CA, { invocationId: "done" })))[0]).result,
    succeeded({ key: "done" }),
  );
  assertEquals(action.calls, counts);
  await deadline(handler.close(), 1000); // idempotent
});

test("close() gives up after graceMs on a provider that never settles and answers unknown", async () => {
  const query = new Scripted();
  query.onQuery = () => new Promise(() => {});
  const handler = cell({ query });
  const answer = handler.dispatch(invokeFor(CQ));
  await until(() => query.calls.query === 1);
  const begin = Date.now();
  await deadline(handler.close({ graceMs: 50 }), 2000);
  const elapsed = Date.now() - begin;
  assertGreaterOrEqual(elapsed, 40);
  assertLessOrEqual(elapsed, 1000);
  assert(query.signals[0].aborted);
  // Abandoned after the grace period: the invoke is answered with an unknown outcome.
  const [response] = await deadline(answer, 2000);
  const result = invokeResponseFromPayload(response.payload) as ToolResult;
  assertEquals([result.status, result.error?.code], ["unknown", "FORGE_ENDPOINT_OUTCOME_UNKNOWN"]);
});

// ---------------------------------------------------------------------------------------------
// The state view

test("state reports permits, active work and saturation as executions start and end", async () => {
  const action = new Scripted();
  const release = gate();
  action.onStart = async () => {
    await release.promise;
    return new ToolAccepted();
  };
  const handler = actionHandler(action, { maxConcurrency: 2, maxRetainedExecutions: 8 });
  const initial = handler.state;
  assertEquals(initial, {
    closed: false,
    permitsInUse: { move: 0 },
    maxConcurrency: { move: 2 },
    activeQueries: {},
    activeInvocations: 0,
    retainedExecutions: 0,
    maxRetainedExecutions: 8,
    saturated: false,
  });
  assert(Object.isFrozen(initial) && Object.isFrozen(initial.permitsInUse));
  const first = handler.dispatch(invokeFor(ACTION, { invocationId: "one" }));
  // The permit is held while start() runs.
  assertStrictEquals(handler.state.permitsInUse.move, 1);
  assertStrictEquals(handler.state.activeInvocations, 1);
  assertStrictEquals(handler.state.saturated, false);
  const second = handler.dispatch(invokeFor(ACTION, { invocationId: "two" }));
  assertStrictEquals(handler.state.permitsInUse.move, 2);
  assertStrictEquals(handler.state.saturated, true);
  release.open();
  await Promise.all([first, second]);
  assertStrictEquals(handler.state.saturated, true); // accepted executions keep their permits
  assertStrictEquals(handler.state.retainedExecutions, 2);
  action.done.add(new ToolExecutionKey({ invocationId: "one", attemptId: "attempt-1" }).id);
  await handler.dispatch(statusFor(ACTION, { invocationId: "one" }));
  assertEquals(handler.state.permitsInUse, { move: 1 });
  assertStrictEquals(handler.state.activeInvocations, 1);
  assertStrictEquals(handler.state.saturated, false);
  assertStrictEquals(initial.permitsInUse.move, 0); // snapshots do not change
  await handler.close({ graceMs: 10 });
  assertStrictEquals(handler.state.closed, true);
});

// ---------------------------------------------------------------------------------------------
// Route trust

const REQUEST_KINDS = {
  invoke: (target: Target) => invokeFor(target),
  status: (target: Target) => statusFor(target),
  result: (target: Target) => resultFor(target),
  control: (target: Target) => controlFor(target, "cancel"),
} as const;

for (const [kind, build] of Object.entries(REQUEST_KINDS)) {
  for (const target of [CQ, CA, CS]) {
    test(`untrusted ${kind} requests for ${target.operation} are raised, never answered`, async () => {
      const provider = new Scripted();
      const handler = cell({ query: provider, action: provider, session: provider });
      const cases = [
        [{ endpointId: "robot.other" }, "FORGE_PROTOCOL_ROUTE_MISMATCH", "endpoint_id"],
        [
          { endpointInstanceId: "instance-old" },
          "FORGE_PROTOCOL_ROUTE_MISMATCH",
          "endpoint_instance_id",
        ],
        [
          { endpointInstanceId: undefined },
          "FORGE_PROTOCOL_ROUTE_MISMATCH",
          "endpoint_instance_id",
        ],
        [{ operation: "classify" }, "FORGE_PROTOCOL_UNKNOWN_OPERATION", "operation"],
      ] as const;
      const methods = {
        invoke: (request: ToolEnvelope) => handler.handleInvoke(request),
        status: (request: ToolEnvelope) => handler.handleStatus(request),
        result: (request: ToolEnvelope) => handler.handleResult(request),
        control: (request: ToolEnvelope) => handler.handleControl(request),
      };
      for (const [changes, code, path] of cases) {
        const request = withFields(build(target), changes);
        await assertRejectsProtocol(() => handler.dispatch(request), code, { path });
        await assertRejectsProtocol(
          () => handler.dispatch(request, { eventSink: () => {} }),
          code,
          { path },
        );
        await assertRejectsProtocol(() => methods[kind as keyof typeof methods](request), code, {
          path,
        });
        checkProtocolError(
          (() => {
            try {
              handler.validateRequestRoute(request);
            } catch (error) {
              return error;
            }
            fail("validateRequestRoute must throw");
          })(),
          code,
          { path },
        );
      }
      assertEquals(provider.calls, {
        query: 0,
        start: 0,
        cancel: 0,
        stop: 0,
        status: 0,
        result: 0,
      });
      assertStrictEquals(handler.state.retainedExecutions, 0);
    });
  }
}

test("status, result and control on a Query operation are raised UNSUPPORTED_OPERATION", async () => {
  const query = new Scripted();
  const handler = cell({ query });
  for (const build of [REQUEST_KINDS.status, REQUEST_KINDS.result, REQUEST_KINDS.control]) {
    await assertRejectsProtocol(
      () => handler.dispatch(build(CQ)),
      "FORGE_PROTOCOL_UNSUPPORTED_OPERATION",
      {
        path: "operation",
        message: "Query operations do not support status, result, or control requests",
      },
    );
  }
  assertStrictEquals(query.calls.query, 0);
});

test("an invalid typed payload on a trusted route is a correlated tool.error", async () => {
  const provider = new Scripted();
  const handler = cell({ query: provider, action: provider });
  for (const target of [CQ, CA]) {
    const request = withFields(invokeFor(target), { payload: {} });
    const [response] = await handler.dispatch(request);
    validateResponseCorrelation(request, response);
    const error = errorOf(response);
    assertStrictEquals(error.code, "FORGE_PROTOCOL_INVALID_PAYLOAD");
    assertStrictEquals(error.retryable, false);
    assert(typeof error.details.path === "string");
  }
  const control = withFields(controlFor(CA, "cancel"), { payload: { command: "pause" } });
  assertStrictEquals(
    errorOf((await handler.dispatch(control))[0]).code,
    "FORGE_PROTOCOL_INVALID_PAYLOAD",
  );
  assertEquals(provider.calls.query + provider.calls.start + provider.calls.cancel, 0);
});

test("non-execution messages are refused with a protocol error, non-envelopes are raised", async () => {
  const provider = new Scripted();
  const handler = cell({ query: provider, action: provider, session: provider });
  const invoke = invokeFor(CA);
  const context = ctx("robot.cell", "move");
  const others: ToolEnvelope[] = [
    makeInvokeResponseEnvelope(new ToolAccepted(), invoke),
    makeStatusResponseEnvelope(RUNNING, statusFor(CA)),
    makeErrorResponseEnvelope(new ToolError({ code: "X", message: "y" }), invoke),
    makeEventEnvelope(new ToolEvent({ type: "heartbeat" }), context, {
      endpointInstanceId: INSTANCE,
      sequence: 0,
    }),
    makeUnregisterEnvelope({
      endpointId: "robot.cell",
      endpointInstanceId: INSTANCE,
      requestId: "unregister-1",
    }),
    new ToolEnvelope({
      messageType: "endpoint.status",
      endpointId: "robot.cell",
      endpointInstanceId: INSTANCE,
      payload: { status: { state: "ready", active_invocations: 0, details: {} } },
    }),
  ];
  // A forged response, event or management message where requests are expected is refused
  // with a protocol error (never answered), at every entry point.
  for (const envelope of others) {
    const refusal = {
      path: "message_type",
      message: `request envelope must be an execution request, found '${envelope.messageType}'`,
    };
    await assertRejectsProtocol(
      () => handler.dispatch(envelope),
      "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE",
      refusal,
    );
    for (
      const method of [
        handler.handleStatus,
        handler.handleResult,
        handler.handleControl,
        handler.handleInvoke,
      ]
    ) {
      await assertRejectsProtocol(
        () => method.call(handler, envelope),
        "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE",
        refusal,
      );
    }
    for (const check of [handler.validateRequestRoute, handler.validateInvokeRoute]) {
      await assertRejectsProtocol(
        async () => await check.call(handler, envelope),
        "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE",
        refusal,
      );
    }
  }
  // An execution request of another type is still programmer misuse for the invoke-only checks.
  await assertRejects(
    () => handler.handleInvoke(statusFor(CA)),
    RangeError,
    "request envelope must be tool.invoke.request",
  );
  for (const value of [undefined, {}, invoke.payload]) {
    await assertRejects(
      () => handler.dispatch(value as unknown as ToolEnvelope),
      TypeError,
      "request must be a ToolEnvelope",
    );
  }
  assertEquals(provider.calls, { query: 0, start: 0, cancel: 0, stop: 0, status: 0, result: 0 });
});

// The Session recording provider also runs through the shared start path (beyond V1's Action).
test("session start failure preserves an established terminal result", async () => {
  const session = new RecordingSession({
    events: [new ToolEvent({ type: "stopped" })],
  });
  const stopped = new ToolResult({ status: "stopped", outputs: { uptime_s: 12.5 } });
  session.finish(new ToolExecutionStatus({ phase: "stopped" }), stopped);
  session.startHook = () => {
    throw new Error("start failed after terminal result was established");
  };
  const handler = sessionHandler(session);
  const request = invokeFor(SESSION);
  assertEquals(completedResult((await handler.dispatch(request))[0]), stopped);
  assertEquals(
    completedResult((await handler.dispatch(invokeFor(SESSION, { requestId: "r-2" })))[0]),
    stopped,
  );
  assertStrictEquals(session.startCalls, 1);
  assertStrictEquals(handler.state.permitsInUse.serve, 0);
});

test("finished executions leave no abort listeners behind", async () => {
  // Counts the abort listeners each signal holds while executions are admitted and finished.
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
    const action = new Scripted();
    const handler = cell({ action }, { maxRetainedExecutions: 16 });
    for (let i = 0; i < 200; i++) {
      const invocationId = `invocation-${i}`;
      acceptedOutcome((await handler.dispatch(invokeFor(CA, { invocationId })))[0]);
      action.done.add(new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }).id);
      statusOf((await handler.dispatch(statusFor(CA, { invocationId })))[0]);
    }
    const most = Math.max(0, ...listeners.values());
    assertLessOrEqual(most, 16, `a signal holds ${most} abort listeners`);
  } finally {
    EventTarget.prototype.addEventListener = add;
    EventTarget.prototype.removeEventListener = remove;
  }
});

test("a finished execution's deadline timer is cleared", async () => {
  // Rejected, unknown and terminal executions: their signals never abort at the deadline.
  // A manual clock: the invokes are admitted before the deadline however slow the machine is;
  // the clock then moves past it while the (real) deadline timers run out.
  let now = 1_000_000;
  const action = new Scripted();
  const handler = cell({ action }, { enforceDeadlines: true, now: () => now });
  const deadlineMs = now + 30;
  action.onStart = () => {
    throw new ToolEndpointError(new ToolError({ code: "NO", message: "not admitted" }));
  };
  rejectedError((await handler.dispatch(invokeFor(CA, { deadlineMs, invocationId: "a" })))[0]);
  action.onStart = () => {
    throw new Error("start exploded");
  };
  completedResult((await handler.dispatch(invokeFor(CA, { deadlineMs, invocationId: "b" })))[0]);
  action.onStart = undefined;
  acceptedOutcome((await handler.dispatch(invokeFor(CA, { deadlineMs, invocationId: "c" })))[0]);
  action.done.add(new ToolExecutionKey({ invocationId: "c", attemptId: "attempt-1" }).id);
  statusOf((await handler.dispatch(statusFor(CA, { invocationId: "c" })))[0]);
  now = deadlineMs + 1;
  await delay(60);
  assertEquals(action.signals.map((signal) => signal.aborted), [false, false, false]);
});

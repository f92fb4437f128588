// Port of the reference's tests/test_handler.py (35 tests, every parametrized case), plus the
// Tool 0.1.0 test `test_action_start_failure_preserves_an_established_terminal_result` (V1),
// whose fix the port keeps. Python's NotImplementedError is a TypeError, ValueError a RangeError,
// and asyncio task cancellation is `dispatch(request, { signal })`. Stays whole (over 400 lines):
// the port keeps the reference file's tests together.
import { assert, assertEquals, assertRejects, assertStrictEquals, assertThrows } from "@std/assert";
import { deadline } from "@std/async";
import {
  ToolEndpointDescriptor,
  ToolEndpointError,
  ToolEndpointHandler,
  ToolError,
  ToolEvent,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
  validateResponseCorrelation,
} from "../../wire.ts";
import {
  acceptedOutcome,
  ACTION,
  ACTION_ACCEPTED,
  actionHandler,
  actionRequest,
  assertRejectsProtocol,
  completedResult,
  controlFor,
  controlOf,
  errorOf,
  eventOf,
  FakeAction,
  FakeQuery,
  FakeSession,
  gate,
  INSTANCE,
  InvalidQuery,
  invokeRequest,
  MissingControlMethod,
  QUERY,
  QUERY_BUSY,
  queryDescriptor,
  queryHandler,
  RecordingAction,
  RecordingSession,
  rejectedError,
  RejectingQuery,
  rejectionOf,
  resultFor,
  resultOf,
  SESSION,
  SESSION_ACCEPTED,
  sessionHandler,
  sessionRequest,
  settled,
  statusFor,
  statusOf,
  type Target,
  UNKNOWN_START_RESULT,
  until,
  withFields,
} from "./_fakes.ts";

const SUCCEEDED_HOME = new ToolResult({ status: "succeeded", outputs: { position: "home" } });
const STOPPED_UPTIME = new ToolResult({ status: "stopped", outputs: { uptime_s: 12.5 } });

// ---------------------------------------------------------------------------------------------
// Construction (tests 1–7)

Deno.test("1 handler binds all declared operation semantics", () => {
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "robot.cell",
    operations: [
      new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
      new ToolOperationDescriptor({
        name: "move",
        semantics: "action",
        cancellable: true,
        statusSupported: true,
      }),
      new ToolOperationDescriptor({
        name: "execute",
        semantics: "session",
        stoppable: true,
        statusSupported: true,
      }),
    ],
  });
  const handler = new ToolEndpointHandler(descriptor, {
    endpointInstanceId: INSTANCE,
    operations: { detect: new FakeQuery(), move: new FakeAction(), execute: new FakeSession() },
  });
  assertStrictEquals(handler.descriptor, descriptor);
  assertStrictEquals(handler.endpointInstanceId, "instance-1");
  assertEquals(handler.operationNames, ["detect", "move", "execute"]);
});

for (
  const [name, operations, match] of [
    ["empty", {}, "missing implementations: detect"],
    [
      "extra",
      { detect: new FakeQuery(), other: new FakeQuery() },
      "undeclared implementations: other",
    ],
  ] as const
) {
  Deno.test(`2 handler requires exact descriptor operation mapping [${name}]`, () => {
    assertThrows(
      () =>
        new ToolEndpointHandler(queryDescriptor(), {
          endpointInstanceId: INSTANCE,
          operations: operations as Record<string, FakeQuery>,
        }),
      RangeError,
      match,
    );
  });
}

Deno.test("2 handler reports both missing and undeclared implementations", () => {
  assertThrows(
    () =>
      new ToolEndpointHandler(queryDescriptor(), {
        endpointInstanceId: INSTANCE,
        operations: { b: new FakeQuery(), a: new FakeQuery() },
      }),
    RangeError,
    "operation mapping does not match descriptor: missing implementations: detect; " +
      "undeclared implementations: a, b",
  );
});

for (
  const [semantics, implementation, match] of [
    ["query", {}, "query"],
    ["action", new MissingControlMethod(), "cancel"],
    ["session", new MissingControlMethod(), "stop"],
  ] as const
) {
  Deno.test(`3 handler validates required endpoint methods [${semantics}]`, () => {
    const descriptor = new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "robot.cell",
      operations: [
        new ToolOperationDescriptor({
          name: "execute",
          semantics,
          cancellable: semantics === "action",
          stoppable: semantics === "session",
          statusSupported: semantics !== "query",
        }),
      ],
    });
    const error = assertThrows(
      () =>
        new ToolEndpointHandler(descriptor, {
          endpointInstanceId: INSTANCE,
          operations: { execute: implementation as unknown as FakeQuery },
        }),
      TypeError,
      match,
    );
    assertStrictEquals(
      error.message,
      `operation 'execute' with ${semantics} semantics requires a callable ${match}() method`,
    );
  });
}

Deno.test("4 handler rejects an unsupported descriptor protocol", () => {
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: "forge.tool.endpoint/v2",
    endpointId: "vision.yolo",
    operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  });
  assertThrows(
    () =>
      new ToolEndpointHandler(descriptor, {
        endpointInstanceId: INSTANCE,
        operations: { detect: new FakeQuery() },
      }),
    RangeError,
    "Cannot create the handler as 'descriptor.protocolVersion' must be " +
      "'forge.tool.endpoint/v1alpha1': current value is \"forge.tool.endpoint/v2\"",
  );
});

for (const instance of ["", " \t", "\ud800"]) {
  Deno.test(`5 handler rejects an invalid endpoint_instance_id [${JSON.stringify(instance)}]`, () => {
    assertThrows(
      () =>
        new ToolEndpointHandler(queryDescriptor(), {
          endpointInstanceId: instance,
          operations: { detect: new FakeQuery() },
        }),
      RangeError,
      "Cannot create the handler as 'endpointInstanceId' must ",
    );
  });
}

Deno.test("6 handler requires a string-keyed operation mapping", () => {
  assertThrows(
    () =>
      new ToolEndpointHandler(queryDescriptor(), {
        endpointInstanceId: INSTANCE,
        operations: [] as unknown as Record<string, FakeQuery>,
      }),
    TypeError,
    "Cannot create the handler as 'operations' must be a mapping: current value is ",
  );
  assertThrows(
    () =>
      new ToolEndpointHandler(queryDescriptor(), {
        endpointInstanceId: INSTANCE,
        operations: new Map([[1, new FakeQuery()]]) as unknown as Map<string, FakeQuery>,
      }),
    TypeError,
    "names must be strings",
  );
});

Deno.test("7 handler copies the operation mapping", async () => {
  const original = new FakeQuery(new ToolResult({ status: "succeeded", outputs: { from: "a" } }));
  const replacement = new FakeQuery(
    new ToolResult({ status: "succeeded", outputs: { from: "b" } }),
  );
  const record: Record<string, FakeQuery> = { detect: original };
  const map = new Map<string, FakeQuery>([["detect", original]]);
  const fromRecord = new ToolEndpointHandler(queryDescriptor(), {
    endpointInstanceId: INSTANCE,
    operations: record,
  });
  const fromMap = new ToolEndpointHandler(queryDescriptor(), {
    endpointInstanceId: INSTANCE,
    operations: map,
  });
  record.detect = replacement;
  map.set("detect", replacement);
  for (const handler of [fromRecord, fromMap]) {
    const response = await handler.handleInvoke(invokeRequest());
    assertEquals(completedResult(response), original.result);
  }
  assertStrictEquals(original.calls.length, 2);
  assertStrictEquals(replacement.calls.length, 0);
});

// ---------------------------------------------------------------------------------------------
// Query (tests 8–13, 35)

Deno.test("8 query handler returns a correlated terminal result", async () => {
  const result = new ToolResult({ status: "succeeded", outputs: { objects: [{ class: "cube" }] } });
  const query = new FakeQuery(result);
  const handler = queryHandler(query);
  const request = invokeRequest();
  const response = await handler.handleInvoke(request);
  validateResponseCorrelation(request, response);
  assertEquals(completedResult(response), result);
  assertStrictEquals(query.calls.length, 1);
  const [call] = query.calls;
  assertEquals(call.request.arguments, { class: "cube" });
  assertEquals(
    [call.context.executionKey.invocationId, call.context.executionKey.attemptId],
    ["invocation-1", "attempt-1"],
  );
  assertStrictEquals(call.context.operation, "detect");
});

Deno.test("9 query handler converts structured endpoint rejection", async () => {
  const request = invokeRequest();
  const query = new RejectingQuery();
  const response = await queryHandler(query).handleInvoke(request);
  validateResponseCorrelation(request, response);
  const error = rejectedError(response);
  assertStrictEquals(error.code, "FORGE_ENDPOINT_BUSY");
  assertStrictEquals(error.retryable, true);
  assertEquals(error, QUERY_BUSY);
  assertStrictEquals(query.calls, 1);
});

Deno.test("10 query handler rejects an invalid endpoint result", async () => {
  await assertRejects(
    () => queryHandler(new InvalidQuery()).handleInvoke(invokeRequest()),
    TypeError,
    "must return a ToolResult",
  );
});

for (
  const [name, changes, path] of [
    ["endpoint", { endpointId: "vision.other" }, "endpoint_id"],
    ["instance", { endpointInstanceId: "instance-old" }, "endpoint_instance_id"],
    ["unresolved-instance", { endpointInstanceId: undefined }, "endpoint_instance_id"],
  ] as const
) {
  Deno.test(`11 query handler rejects retargeted requests [${name}]`, async () => {
    const query = new FakeQuery();
    await assertRejectsProtocol(
      () => queryHandler(query).handleInvoke(withFields(invokeRequest(), changes)),
      "FORGE_PROTOCOL_ROUTE_MISMATCH",
      { path, includes: "request targets endpoint" },
    );
    assertStrictEquals(query.calls.length, 0);
  });
}

Deno.test("12 query handler rejects an unknown operation", async () => {
  const query = new FakeQuery();
  await assertRejectsProtocol(
    () => queryHandler(query).handleInvoke(withFields(invokeRequest(), { operation: "classify" })),
    "FORGE_PROTOCOL_UNKNOWN_OPERATION",
    { path: "operation", message: "endpoint does not declare operation 'classify'" },
  );
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("13 legacy handle_invoke remains Query-only", async () => {
  const action = new RecordingAction();
  await assertRejects(
    () => actionHandler(action).handleInvoke(actionRequest()),
    TypeError,
    "Query-only",
  );
  assertStrictEquals(action.startCalls, 0);
});

Deno.test("35 query handler requires an invoke request", async () => {
  const query = new FakeQuery();
  await assertRejects(
    () => queryHandler(query).handleInvoke(statusFor(QUERY)),
    RangeError,
    "tool.invoke.request",
  );
  assertStrictEquals(query.calls.length, 0);
});

// ---------------------------------------------------------------------------------------------
// Action and Session (tests 14–34), written once for both semantics

interface Family {
  readonly name: "action" | "session";
  readonly target: Target;
  readonly accepted: typeof ACTION_ACCEPTED;
  readonly command: "cancel" | "stop";
  readonly terminal: { readonly status: ToolExecutionStatus; readonly result: ToolResult };
  make(): RecordingAction | RecordingSession;
  handler(
    provider: RecordingAction | RecordingSession,
    options?: Parameters<typeof actionHandler>[1],
  ): ToolEndpointHandler;
  request(requestId?: string, invocationId?: string): ToolEnvelope;
}

const FAMILIES: readonly Family[] = [
  {
    name: "action",
    target: ACTION,
    accepted: ACTION_ACCEPTED,
    command: "cancel",
    terminal: { status: new ToolExecutionStatus({ phase: "completed" }), result: SUCCEEDED_HOME },
    make: () => new RecordingAction(),
    handler: actionHandler,
    request: actionRequest,
  },
  {
    name: "session",
    target: SESSION,
    accepted: SESSION_ACCEPTED,
    command: "stop",
    terminal: { status: new ToolExecutionStatus({ phase: "stopped" }), result: STOPPED_UPTIME },
    make: () => new RecordingSession(),
    handler: sessionHandler,
    request: sessionRequest,
  },
];

for (const family of FAMILIES) {
  const n = (action: number, session: number) => family.name === "action" ? action : session;

  Deno.test(
    `${n(14, 24)} ${family.name} dispatch orders accepted before buffered events`,
    async () => {
      const events = [
        new ToolEvent({ type: "progress", data: { fraction: 0.25 } }),
        new ToolEvent({ type: "heartbeat" }),
      ];
      const provider = family.make();
      provider.events = events;
      const request = family.request();
      const messages = await family.handler(provider).dispatch(request);
      assertEquals(messages.map((message) => message.messageType), [
        "tool.invoke.response",
        "tool.event",
        "tool.event",
      ]);
      validateResponseCorrelation(request, messages[0]);
      assertEquals(acceptedOutcome(messages[0]), family.accepted);
      assertEquals(messages.slice(1).map((message) => message.sequence), [0, 1]);
      assertEquals(messages.slice(1).map(eventOf), events);
      for (const event of messages.slice(1)) {
        assertStrictEquals(event.requestId, undefined);
        assertStrictEquals(event.invocationId, "invocation-1");
        assertStrictEquals(event.endpointInstanceId, INSTANCE);
        assertStrictEquals(event.operation, family.target.operation);
      }
    },
  );

  Deno.test(
    `${n(15, 25)} duplicate ${family.name} execution key does not restart provider`,
    async () => {
      const provider = family.make();
      const handler = family.handler(provider);
      const first = await handler.dispatch(family.request("request-1"));
      const duplicateRequest = family.request("request-2");
      const duplicate = await handler.dispatch(duplicateRequest);
      assertStrictEquals(provider.startCalls, 1);
      assertEquals(acceptedOutcome(first[0]), family.accepted);
      assertEquals(acceptedOutcome(duplicate[0]), family.accepted);
      assertStrictEquals(duplicate.length, 1);
      validateResponseCorrelation(duplicateRequest, duplicate[0]);
      assertStrictEquals(duplicate[0].requestId, "request-2");
    },
  );

  Deno.test(
    `${n(16, 26)} concurrent duplicate ${family.name} waits without restarting provider`,
    async () => {
      const provider = family.make();
      const release = gate();
      provider.startHook = () => release.promise;
      const handler = family.handler(provider);
      const first = handler.dispatch(family.request("request-1"));
      await until(() => provider.startCalls === 1);
      const duplicate = handler.dispatch(family.request("request-2"));
      assert(!(await settled(duplicate)), "the duplicate must wait for the first start");
      release.open();
      const [firstMessages, duplicateMessages] = await Promise.all([first, duplicate]);
      assertEquals(invokeOutcomeOf(firstMessages), invokeOutcomeOf(duplicateMessages));
      assertEquals(acceptedOutcome(duplicateMessages[0]), family.accepted);
      assertStrictEquals(duplicateMessages[0].requestId, "request-2");
      assertStrictEquals(provider.startCalls, 1);
    },
  );

  Deno.test(
    `${n(17, 27)} ${family.name} early event buffer overflow becomes unknown without retry`,
    async () => {
      const provider = family.make();
      provider.events = [
        new ToolEvent({ type: "heartbeat" }),
        new ToolEvent({ type: "heartbeat" }),
      ];
      const handler = family.handler(provider, { maxEarlyEvents: 1 });
      const first = await handler.dispatch(family.request("request-1"));
      assertStrictEquals(first.length, 1);
      const result = completedResult(first[0]);
      assertStrictEquals(result.status, "unknown");
      assertStrictEquals(result.error?.code, "FORGE_ENDPOINT_OUTCOME_UNKNOWN");
      assertEquals(result, UNKNOWN_START_RESULT);
      const duplicate = await handler.dispatch(family.request("request-2"));
      assertEquals(completedResult(duplicate[0]), result);
      assertStrictEquals(provider.startCalls, 1);
    },
  );

  Deno.test(
    `${n(18, 28)} ${family.name} terminal event requires and retains matching result`,
    async () => {
      const provider = family.make();
      provider.events = [
        new ToolEvent({ type: family.name === "action" ? "executor_completed" : "stopped" }),
      ];
      provider.finish(family.terminal.status, family.terminal.result);
      const handler = family.handler(provider);
      const messages = await handler.dispatch(family.request());
      assertStrictEquals(messages.length, 2);
      assertStrictEquals(messages[1].messageType, "tool.event");
      assertStrictEquals(messages[1].sequence, 0);
      const resultRequest = resultFor(family.target, { requestId: "result-1" });
      const response = await handler.handleResult(resultRequest);
      validateResponseCorrelation(resultRequest, response);
      assertEquals(
        resultOf(response),
        new ToolResultResponse({ status: "available", result: family.terminal.result }),
      );
      await assertRejectsProtocol(
        () => provider.emitter!.emit(new ToolEvent({ type: "heartbeat" })),
        "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL",
        { includes: "after terminal" },
      );
    },
  );

  Deno.test(
    `${n(19, 29)} ${family.name} status, result and ${family.command} dispatch provider models`,
    async () => {
      const provider = family.make();
      const handler = family.handler(provider);
      await handler.dispatch(family.request());
      const statusRequest = statusFor(family.target);
      const status = await handler.handleStatus(statusRequest);
      validateResponseCorrelation(statusRequest, status);
      assertStrictEquals(statusOf(status).phase, "running");
      const result = await handler.handleResult(resultFor(family.target));
      assertEquals(resultOf(result), new ToolResultResponse({ status: "pending" }));
      const controlRequest = controlFor(family.target, family.command, {
        reason: "operator request",
      });
      const control = await handler.handleControl(controlRequest);
      validateResponseCorrelation(controlRequest, control);
      const answer = controlOf(control);
      assertStrictEquals(answer.command, family.command);
      assertStrictEquals(answer.status, "accepted");
      assertEquals(answer.details, { reason: "operator request" });
      assertStrictEquals(provider.controlCalls, 1);
      assertEquals(provider.reasons, ["operator request"]);
      provider.finish(family.terminal.status, family.terminal.result);
      const terminal = await handler.handleStatus(statusFor(family.target, { requestId: "s-2" }));
      assertStrictEquals(statusOf(terminal).phase, family.terminal.status.phase);
      await assertRejectsProtocol(
        () => provider.emitter!.emit(new ToolEvent({ type: "progress" })),
        "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL",
        { includes: "after terminal" },
      );
    },
  );

  Deno.test(
    `${
      n(20, 30)
    } ${family.name} start abandoned by the caller converges unknown and wakes duplicate`,
    async () => {
      const provider = family.make();
      provider.startHook = () => new Promise(() => {}); // start never returns
      const handler = family.handler(provider);
      const controller = new AbortController();
      const first = handler.dispatch(family.request("request-1"), { signal: controller.signal });
      await until(() => provider.startCalls === 1);
      const duplicate = handler.dispatch(family.request("request-2"));
      const reason = new DOMException("task cancelled", "AbortError");
      controller.abort(reason);
      assertStrictEquals(await rejectionOf(first), reason);
      const messages = await deadline(duplicate, 1000);
      const result = completedResult(messages[0]);
      assertStrictEquals(result.status, "unknown");
      assertEquals(result, UNKNOWN_START_RESULT);
      assertStrictEquals(provider.startCalls, 1);
      assertStrictEquals(handler.state.permitsInUse[family.target.operation], 0);
      assert(provider.signals[0].aborted, "the provider's signal aborts with the caller's");
    },
  );

  Deno.test(
    `${n(21, 31)} ${family.name} max_concurrency rejects then terminal releases once`,
    async () => {
      const provider = family.make();
      const handler = family.handler(provider, { maxConcurrency: 1 });
      const first = await handler.dispatch(family.request("request-1", "first"));
      assertEquals(acceptedOutcome(first[0]), family.accepted);
      const second = await handler.dispatch(family.request("request-2", "second"));
      const error = rejectedError(second[0]);
      assertStrictEquals(error.code, "FORGE_ENDPOINT_CAPACITY");
      assertStrictEquals(
        error.message,
        `operation '${family.target.operation}' is at max_concurrency`,
      );
      assertStrictEquals(error.retryable, true);
      assertStrictEquals(provider.startCalls, 1);
      provider.finish(family.terminal.status, family.terminal.result);
      for (const requestId of ["status-1", "status-2"]) {
        const status = await handler.handleStatus(
          statusFor(family.target, { requestId, invocationId: "first" }),
        );
        assertStrictEquals(statusOf(status).phase, family.terminal.status.phase);
      }
      assertStrictEquals(handler.state.permitsInUse[family.target.operation], 0);
      provider.reset();
      const retry = await handler.dispatch(family.request("retry", "second"));
      assertEquals(acceptedOutcome(retry[0]), family.accepted);
      assertStrictEquals(provider.startCalls, 2);
      assertStrictEquals(handler.state.permitsInUse[family.target.operation], 1);
    },
  );

  Deno.test(
    `${n(22, 32)} ${family.name} execution retention is bounded and evicts completed records`,
    async () => {
      const provider = family.make();
      const busy = new ToolError({ code: "BUSY", message: "not admitted", retryable: true });
      provider.startHook = () => {
        throw new ToolEndpointError(busy);
      };
      const handler = family.handler(provider, { maxRetainedExecutions: 2 });
      for (const index of [0, 1, 2]) {
        const messages = await handler.dispatch(
          family.request(`request-${index}`, `invocation-${index}`),
        );
        assertEquals(rejectedError(messages[0]), busy);
      }
      assertStrictEquals(handler.state.retainedExecutions, 2);
      const retry = await handler.dispatch(family.request("request-retry", "invocation-0"));
      assertEquals(rejectedError(retry[0]), busy);
      assertStrictEquals(provider.startCalls, 4);
    },
  );

  Deno.test(
    `${n(23, 33)} ${family.name} status rejects backward phase transition`,
    async () => {
      const provider = family.make();
      const handler = family.handler(provider);
      await handler.dispatch(family.request());
      assertStrictEquals(
        statusOf(await handler.handleStatus(statusFor(family.target))).phase,
        "running",
      );
      provider.currentStatus = new ToolExecutionStatus({ phase: "accepted" });
      const request = statusFor(family.target, { requestId: "status-2" });
      const response = await handler.handleStatus(request);
      validateResponseCorrelation(request, response);
      assertStrictEquals(response.messageType, "tool.error");
      const error = errorOf(response);
      assertStrictEquals(error.code, "FORGE_ENDPOINT_INVALID_TRANSITION");
      assertStrictEquals(error.message, "provider status changed from 'running' to 'accepted'");
      assertStrictEquals(error.retryable, false);
      assertEquals(error.details, {});
    },
  );
}

function invokeOutcomeOf(messages: readonly ToolEnvelope[]) {
  return acceptedOutcome(messages[0]);
}

Deno.test("34 control commands are semantics-scoped", async () => {
  const action = new RecordingAction();
  const actionEndpoint = actionHandler(action);
  await actionEndpoint.dispatch(actionRequest());
  const stopRequest = controlFor(ACTION, "stop", { requestId: "stop-1" });
  const stopResponse = await actionEndpoint.handleControl(stopRequest);
  validateResponseCorrelation(stopRequest, stopResponse);
  const stop = controlOf(stopResponse);
  assertEquals([stop.command, stop.status], ["stop", "unsupported"]);
  assertStrictEquals(action.cancelCalls, 0);

  const session = new RecordingSession();
  const sessionEndpoint = sessionHandler(session);
  await sessionEndpoint.dispatch(sessionRequest());
  const cancelRequest = controlFor(SESSION, "cancel", { requestId: "cancel-1" });
  const cancelResponse = await sessionEndpoint.handleControl(cancelRequest);
  validateResponseCorrelation(cancelRequest, cancelResponse);
  const cancel = controlOf(cancelResponse);
  assertEquals([cancel.command, cancel.status], ["cancel", "unsupported"]);
  assertStrictEquals(session.stopCalls, 0);
});

// ---------------------------------------------------------------------------------------------
// V1 (Tool 0.1.0): a terminal result established during start() survives a later throw

for (
  const [name, failure] of [
    ["runtime-error", () => new Error("start failed after terminal result was established")],
    [
      "structured-endpoint-error",
      () =>
        new ToolEndpointError(
          new ToolError({
            code: "FORGE_ENDPOINT_REJECTED",
            message: "structured failure after terminal result was established",
          }),
        ),
    ],
  ] as const
) {
  Deno.test(
    `V1 action start failure preserves an established terminal result [${name}]`,
    async () => {
      const action = new RecordingAction({
        events: [new ToolEvent({ type: "executor_completed" })],
      });
      action.finish(new ToolExecutionStatus({ phase: "completed" }), SUCCEEDED_HOME);
      action.startHook = () => {
        throw failure();
      };
      const handler = actionHandler(action);
      const first = await handler.dispatch(actionRequest("request-1"));
      assertEquals(completedResult(first[0]), SUCCEEDED_HOME);
      const duplicate = await handler.dispatch(actionRequest("request-2"));
      assertEquals(completedResult(duplicate[0]), SUCCEEDED_HOME);
      assertStrictEquals(duplicate[0].requestId, "request-2");
      assertStrictEquals(action.startCalls, 1);
      assertStrictEquals(handler.state.permitsInUse.move, 0);
      // The retained result is served from the ledger.
      const result = await handler.handleResult(resultFor(ACTION));
      assertEquals(resultOf(result).result, SUCCEEDED_HOME);
      assertStrictEquals(action.resultCalls, 1);
    },
  );
}

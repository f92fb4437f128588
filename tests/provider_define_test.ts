// The one-function provider definitions (src/provider/define.ts) behind a real handler: outcomes,
// cancel and stop, failures and their log records, unknown and forgotten keys, events.
import { assertEquals, assertInstanceOf, assertStrictEquals } from "@std/assert";
import {
  type ActionToolEndpoint,
  defineAction,
  defineEndpoint,
  defineQuery,
  defineSession,
  type ExecutionCallContext,
  ToolAccepted,
  ToolEndpointError,
  ToolError,
  type ToolLogRecord,
  ToolRequest,
  ToolResult,
} from "../mod.ts";
import type { ToolEnvelope } from "../wire.ts";
import {
  acceptedOutcome,
  ACTION,
  completedResult,
  controlFor,
  controlOf,
  ctx,
  errorOf,
  eventOf,
  gate,
  INSTANCE,
  invokeFor,
  key,
  QUERY,
  queryHandler,
  rejectedError,
  resultFor,
  resultOf,
  SESSION,
  statusFor,
  statusOf,
  until,
} from "./handler/_fakes.ts";
import { encodeEnvelope } from "../src/wire/codec.ts";

/** A logger that keeps every record. */
function recorder(): { logger: (record: ToolLogRecord) => void; records: ToolLogRecord[] } {
  const records: ToolLogRecord[] = [];
  return { logger: (record) => records.push(record), records };
}

/** A handler for one operation of `target`, with a recording logger and an event sink. */
function serve(
  target: { endpointId: string; operation: string },
  definition: Parameters<typeof defineEndpoint>[0]["operations"][string],
  extras: {
    maxRetainedExecutions?: number;
    enforceDeadlines?: boolean;
    now?: () => number;
    /** defineEndpoint's own `enforceDeadlines` (the handler's default). */
    definitionEnforceDeadlines?: boolean;
  } = {},
) {
  const { logger, records } = recorder();
  const endpoint = defineEndpoint({
    endpointId: target.endpointId,
    operations: { [target.operation]: definition },
    logger,
    maxRetainedExecutions: extras.maxRetainedExecutions,
    enforceDeadlines: extras.definitionEnforceDeadlines,
  });
  const events: ToolEnvelope[] = [];
  const handler = endpoint.createHandler({
    endpointInstanceId: INSTANCE,
    enforceDeadlines: extras.enforceDeadlines,
    now: extras.now,
  });
  const dispatch = (request: ToolEnvelope) =>
    handler.dispatch(request, { eventSink: (event) => void events.push(event) });
  return { endpoint, handler, dispatch, events, records };
}

async function one(
  handler: { dispatch: (r: ToolEnvelope) => Promise<readonly ToolEnvelope[]> },
  request: ToolEnvelope,
) {
  const responses = await handler.dispatch(request);
  return responses[0];
}

Deno.test("defineEndpoint derives the descriptor from the definitions, names written once", () => {
  const endpoint = defineEndpoint({
    endpointId: "motion.arm",
    operations: {
      pose: defineQuery(() => ({})),
      move: defineAction({ maxConcurrency: 3 }, () => ({})),
      hold: defineAction({ cancellable: false }, () => ({})),
      follow: defineSession(() => ({})),
    },
  });
  const summary = endpoint.descriptor.operations.map((o) => [
    o.name,
    o.semantics,
    o.cancellable,
    o.stoppable,
    o.statusSupported,
    o.maxConcurrency,
  ]);
  assertEquals(summary, [
    ["pose", "query", false, false, false, 1],
    ["move", "action", true, false, true, 3],
    ["hold", "action", false, false, true, 1],
    ["follow", "session", false, true, true, 1],
  ]);
  assertEquals(Object.keys(endpoint.operations), ["pose", "move", "hold", "follow"]);
  assertEquals(endpoint.descriptor.endpointId, "motion.arm");
});

Deno.test("a Query definition answers succeeded with the function's outputs", async () => {
  const { dispatch } = serve(QUERY, defineQuery((args) => ({ objects: [args.class] })));
  const result = completedResult(await one({ dispatch }, invokeFor(QUERY)));
  assertEquals(result.status, "succeeded");
  assertEquals(result.outputs, { objects: ["cube"] });
});

Deno.test("a Query that throws a ToolEndpointError rejects the invoke, byte for byte as an SPI query() throwing it", async () => {
  // Regression: the define* Query answered `failed` with the error while the same throw from an
  // SPI query() is answered `rejected` (the handler's pre-acceptance rejection).
  const busy = new ToolError({
    code: "VISION_CAMERA_BUSY",
    message: "camera busy",
    retryable: true,
  });
  const { dispatch, records } = serve(
    QUERY,
    defineQuery(() => {
      throw new ToolEndpointError(busy);
    }),
  );
  const defined = await one({ dispatch }, invokeFor(QUERY));
  assertEquals(rejectedError(defined), busy);
  const spi = queryHandler({
    query: () => {
      throw new ToolEndpointError(busy);
    },
  });
  const direct = await one(spi, invokeFor(QUERY));
  assertEquals(encodeEnvelope(defined), encodeEnvelope(direct));
  // A rejection is an answer, not a failure: neither path logs it.
  assertEquals(records, []);
  await spi.close();
});

Deno.test("any other throw fails with FORGE_ENDPOINT_INTERNAL and a safe message; the cause is logged", async () => {
  const cause = new Error("secret path /etc/robot.key unreadable");
  const { dispatch, records } = serve(
    QUERY,
    defineQuery(() => {
      throw cause;
    }),
  );
  const result = completedResult(await one({ dispatch }, invokeFor(QUERY)));
  assertEquals(result.status, "failed");
  assertEquals(result.error?.code, "FORGE_ENDPOINT_INTERNAL");
  assertEquals(result.error?.message, "the provider function failed");
  assertEquals(result.error?.retryable, false);
  assertEquals(records.map((r) => [r.level, r.event, r.invocationId]), [
    ["error", "provider.failed", "invocation-1"],
  ]);
  assertStrictEquals(records[0].error, cause);
});

Deno.test("outputs that are not a JSON object fail with FORGE_ENDPOINT_INTERNAL, logged", async () => {
  const { dispatch, records } = serve(QUERY, defineQuery(() => ({ when: Symbol("now") })));
  const result = completedResult(await one({ dispatch }, invokeFor(QUERY)));
  assertEquals(result.error?.code, "FORGE_ENDPOINT_INTERNAL");
  assertEquals(
    result.error?.message,
    "the provider function returned outputs that are not a JSON object",
  );
  assertEquals(records.map((r) => r.event), ["provider.invalid_outputs"]);
});

Deno.test("an Action is accepted at once, runs in the background, and completes with events", async () => {
  const go = gate();
  const { dispatch, events } = serve(
    ACTION,
    defineAction(async (args, { progress }) => {
      await progress({ fraction: 0.5 });
      await go.promise;
      return { reached: args.target };
    }),
  );
  const responses = await dispatch(invokeFor(ACTION));
  acceptedOutcome(responses[0]);
  assertEquals(statusOf(await one({ dispatch }, statusFor(ACTION))).phase, "running");
  assertEquals(resultOf(await one({ dispatch }, resultFor(ACTION))).status, "pending");
  go.open();
  // The progress event comes behind the invoke response (emitted before acceptance) or through
  // the sink; either way it precedes the terminal event.
  const all = () => [...responses.slice(1), ...events];
  await until(() => all().length === 2);
  assertEquals(all().map((e) => [eventOf(e).type, e.sequence]), [
    ["progress", 0],
    ["executor_completed", 1],
  ]);
  assertEquals(statusOf(await one({ dispatch }, statusFor(ACTION))).phase, "completed");
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals(lookup.status, "available");
  assertEquals(lookup.result?.status, "succeeded");
  assertEquals(lookup.result?.outputs, { reached: "home" });
});

Deno.test("an accepted cancel aborts the signal; the outcome is cancelled with what the function returned", async () => {
  let seen: ExecutionCallContext | undefined;
  const { dispatch, events, handler } = serve(
    ACTION,
    defineAction(async (_args, call) => {
      seen = call;
      await new Promise((resolve) => call.signal.addEventListener("abort", resolve));
      return { travelled: 0.4 };
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  const control = controlOf(
    await one({ dispatch }, controlFor(ACTION, "cancel", { reason: "operator" })),
  );
  assertEquals([control.command, control.status], ["cancel", "accepted"]);
  assertEquals(seen?.signal.aborted, true);
  assertEquals((seen?.signal.reason as DOMException).message, "operator");
  await until(() => events.length === 1);
  assertEquals(eventOf(events[0]).type, "cancelled");
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals(lookup.result, new ToolResult({ status: "cancelled", outputs: { travelled: 0.4 } }));
  assertEquals(statusOf(await one({ dispatch }, statusFor(ACTION))).phase, "cancelled");
  const again = controlOf(await one({ dispatch }, controlFor(ACTION, "cancel")));
  assertEquals(again.status, "terminal");
  assertEquals(handler.state.permitsInUse, { move: 0 });
});

Deno.test("a function that throws the abort after a cancel is cancelled with empty outputs", async () => {
  const { dispatch, events, records } = serve(
    ACTION,
    defineAction(async (_args, { signal }) => {
      await new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  controlOf(await one({ dispatch }, controlFor(ACTION, "cancel")));
  await until(() => events.length === 1);
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals(lookup.result, new ToolResult({ status: "cancelled" }));
  assertEquals(records, []);
});

Deno.test("a non-cancellable Action answers cancel with unsupported and keeps running", async () => {
  const go = gate();
  const { dispatch, events } = serve(
    ACTION,
    defineAction({ cancellable: false }, async () => {
      await go.promise;
      return { done: true };
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  assertEquals(
    controlOf(await one({ dispatch }, controlFor(ACTION, "cancel"))).status,
    "unsupported",
  );
  go.open();
  await until(() => events.length === 1);
  assertEquals(resultOf(await one({ dispatch }, resultFor(ACTION))).result?.status, "succeeded");
});

Deno.test("an accepted stop ends a Session as stopped with what the function returned", async () => {
  const { dispatch, events } = serve(
    SESSION,
    defineSession(async (_args, { signal, emit }) => {
      let beats = 0;
      while (!signal.aborted) {
        await emit("heartbeat", { beats: ++beats });
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      return { beats };
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(SESSION)))[0]);
  await until(() => events.length >= 2);
  assertEquals(controlOf(await one({ dispatch }, controlFor(SESSION, "stop"))).status, "accepted");
  await until(() => events.some((e) => eventOf(e).type === "stopped"));
  const last = events[events.length - 1];
  assertEquals(eventOf(last).type, "stopped");
  const result = resultOf(await one({ dispatch }, resultFor(SESSION))).result!;
  assertEquals(result.status, "stopped");
  // Every heartbeat was published before the terminal event, numbered in order.
  assertEquals(result.outputs.beats, events.length - 1);
  assertEquals(events.map((e) => e.sequence), events.map((_, i) => i));
});

Deno.test("a throw in an Action fails it: executor_failed, the error, the log record with the key", async () => {
  const cause = new TypeError("gripper offline");
  const { dispatch, events, records } = serve(
    ACTION,
    defineAction(() => Promise.reject(cause)),
  );
  await dispatch(invokeFor(ACTION, { invocationId: "invocation-9" }));
  await until(() => records.length === 1);
  const lookup = resultOf(
    await one({ dispatch }, resultFor(ACTION, { invocationId: "invocation-9" })),
  );
  assertEquals(lookup.result?.status, "failed");
  assertEquals(lookup.result?.error?.code, "FORGE_ENDPOINT_INTERNAL");
  const status = statusOf(
    await one({ dispatch }, statusFor(ACTION, { invocationId: "invocation-9" })),
  );
  assertEquals([status.phase, status.error?.code], ["failed", "FORGE_ENDPOINT_INTERNAL"]);
  assertEquals([records[0].event, records[0].invocationId], ["provider.failed", "invocation-9"]);
  assertStrictEquals(records[0].error, cause);
  // The terminal event was either buffered behind the invoke response or published.
  assertEquals(events.every((e) => eventOf(e).type === "executor_failed"), true);
});

Deno.test("keys never seen: status is a tool.error, result not_found, cancel and stop rejected", async () => {
  const action = serve(ACTION, defineAction(() => ({})));
  const status = errorOf(await one(action, statusFor(ACTION, { invocationId: "nobody" })));
  assertEquals([status.code, status.retryable], ["FORGE_ENDPOINT_EXECUTION_NOT_FOUND", false]);
  assertEquals(
    resultOf(await one(action, resultFor(ACTION, { invocationId: "nobody" }))).status,
    "not_found",
  );
  const cancel = controlOf(
    await one(action, controlFor(ACTION, "cancel", { invocationId: "nobody" })),
  );
  assertEquals([cancel.status, cancel.error?.code], [
    "rejected",
    "FORGE_ENDPOINT_EXECUTION_NOT_FOUND",
  ]);
  const session = serve(SESSION, defineSession(() => ({})));
  const stop = controlOf(
    await one(session, controlFor(SESSION, "stop", { invocationId: "nobody" })),
  );
  assertEquals([stop.status, stop.error?.code], ["rejected", "FORGE_ENDPOINT_EXECUTION_NOT_FOUND"]);
  // Nothing was recorded: a later invoke of that key runs normally.
  const responses = await action.dispatch(invokeFor(ACTION, { invocationId: "nobody" }));
  assertEquals(responses[0].messageType, "tool.invoke.response");
});

Deno.test("finished executions beyond maxRetainedExecutions are forgotten, oldest first", async () => {
  const { dispatch, handler } = serve(ACTION, defineAction((args) => ({ n: args.n })), {
    maxRetainedExecutions: 2,
  });
  for (const n of [1, 2, 3]) {
    await dispatch(invokeFor(ACTION, { invocationId: `run-${n}`, arguments: { n } }));
    await until(() => handler.state.permitsInUse.move === 0);
  }
  assertEquals(handler.state.maxRetainedExecutions, 2);
  const forgotten = { invocationId: "run-1" };
  assertEquals(
    errorOf(await one({ dispatch }, statusFor(ACTION, forgotten))).code,
    "FORGE_ENDPOINT_EXECUTION_NOT_FOUND",
  );
  assertEquals(resultOf(await one({ dispatch }, resultFor(ACTION, forgotten))).status, "not_found");
  for (const n of [2, 3]) {
    const lookup = resultOf(
      await one({ dispatch }, resultFor(ACTION, { invocationId: `run-${n}` })),
    );
    assertEquals(lookup.result?.outputs, { n });
  }
});

Deno.test("a deadline abort that makes the function throw fails it with FORGE_ENDPOINT_DEADLINE_EXCEEDED", async () => {
  const { dispatch, records } = serve(
    ACTION,
    defineAction(async (_args, { signal }) => {
      await new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    }),
    { enforceDeadlines: true, now: () => 1_000, maxRetainedExecutions: 4 },
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION, { deadlineMs: 1_010 })))[0]);
  await until(() => records.length === 2);
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION, { deadlineMs: 1_010 })));
  assertEquals(lookup.result?.status, "failed");
  assertEquals(lookup.result?.error?.code, "FORGE_ENDPOINT_DEADLINE_EXCEEDED");
  // The handler's record of the abort, then the provider's of the failure (one shared logger).
  assertEquals(records.map((record) => [record.level, record.event]), [
    ["warn", "execution.deadline_exceeded"],
    ["warn", "provider.failed"],
  ]);
});

/** A function that waits for its signal, then returns what it reached (the README's pattern). */
function returnsOnAbort(outputs: object) {
  return async (_args: unknown, { signal }: { signal: AbortSignal }) => {
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return outputs;
  };
}

Deno.test("an Action that returns after its deadline aborted its signal fails DEADLINE_EXCEEDED, outputs kept", async () => {
  const { dispatch, events, records } = serve(
    ACTION,
    defineAction(returnsOnAbort({ reached: 2 })),
    { enforceDeadlines: true, now: () => 1_000 },
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION, { deadlineMs: 1_010 })))[0]);
  await until(() => events.length === 1);
  assertEquals(eventOf(events[0]).type, "executor_failed");
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals(
    lookup.result,
    new ToolResult({
      status: "failed",
      outputs: { reached: 2 },
      error: new ToolError({
        code: "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
        message: "deadline_ms passed before the provider function finished",
        retryable: false,
      }),
    }),
  );
  assertEquals(statusOf(await one({ dispatch }, statusFor(ACTION))).phase, "failed");
  assertEquals(records.map((record) => [record.level, record.event, record.invocationId]), [
    ["warn", "execution.deadline_exceeded", "invocation-1"],
    ["warn", "provider.failed", "invocation-1"],
  ]);
});

Deno.test("an Action that returns after close() aborted its signal ends unknown, outputs kept, logged", async () => {
  const { endpoint, dispatch, events, handler, records } = serve(
    ACTION,
    defineAction(returnsOnAbort({ reached: 3 })),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  const closing = handler.close({ graceMs: 1000 });
  await endpoint.idle();
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  await closing;
  assertEquals(lookup.result?.status, "unknown");
  assertEquals(lookup.result?.error?.code, "FORGE_ENDPOINT_OUTCOME_UNKNOWN");
  assertEquals(lookup.result?.outputs, { reached: 3 });
  // The unknown outcome's terminal event: executor_failed, its data naming the phase.
  assertEquals(events.map((e) => [eventOf(e).type, eventOf(e).data.phase]), [
    ["executor_failed", "unknown"],
  ]);
  assertEquals(records.map((record) => [record.level, record.event, record.invocationId]), [
    ["warn", "provider.aborted", "invocation-1"],
  ]);
});

Deno.test("a cancel accepted after the deadline aborted the signal keeps the deadline's outcome", async () => {
  const go = gate();
  const { dispatch, events } = serve(
    ACTION,
    defineAction(async (_args, { signal }) => {
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      await go.promise;
      return { reached: 1 };
    }),
    { enforceDeadlines: true, now: () => 1_000 },
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION, { deadlineMs: 1_010 })))[0]);
  await new Promise((resolve) => setTimeout(resolve, 30)); // the deadline timer fires
  const control = controlOf(await one({ dispatch }, controlFor(ACTION, "cancel")));
  assertEquals(control.status, "accepted");
  go.open();
  await until(() => events.length === 1);
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals([lookup.result?.status, lookup.result?.error?.code, lookup.result?.outputs], [
    "failed",
    "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
    { reached: 1 },
  ]);
});

Deno.test("a Query that returns after its deadline or a close aborted its signal is no success", async () => {
  // The deadline: failed, with what it returned.
  const late = serve(QUERY, defineQuery(returnsOnAbort({ objects: [] })), {
    enforceDeadlines: true,
    now: () => 1_000,
  });
  const pending = one(late, invokeFor(QUERY, { deadlineMs: 1_010 }));
  // The deadline timer does not keep the process alive: wait for its record.
  await until(() => late.records.length === 2);
  const failed = completedResult(await pending);
  assertEquals([failed.status, failed.error?.code, failed.outputs], [
    "failed",
    "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
    { objects: [] },
  ]);
  assertEquals(late.records.map((record) => record.event), [
    "execution.deadline_exceeded",
    "provider.failed",
  ]);
  // The close: unknown, with what it returned.
  const closed = serve(QUERY, defineQuery(returnsOnAbort({ objects: ["cube"] })));
  const answer = one(closed, invokeFor(QUERY));
  await closed.handler.close({ graceMs: 1000 });
  const unknown = completedResult(await answer);
  assertEquals([unknown.status, unknown.error?.code, unknown.outputs], [
    "unknown",
    "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    { objects: ["cube"] },
  ]);
  assertEquals(closed.records.map((record) => [record.event, record.invocationId]), [
    ["provider.aborted", "invocation-1"],
  ]);
});

Deno.test("deadlines are enforced by default; defineEndpoint and the handler can opt out", async () => {
  const past = { deadlineMs: Date.now() - 1000 };
  const enforced = serve(QUERY, defineQuery(() => ({ ran: true })));
  assertEquals(
    rejectedError(await one(enforced, invokeFor(QUERY, past))).code,
    "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
  );
  const byDefinition = serve(QUERY, defineQuery(() => ({ ran: true })), {
    definitionEnforceDeadlines: false,
  });
  assertEquals(
    completedResult(await one(byDefinition, invokeFor(QUERY, past))).status,
    "succeeded",
  );
  // The handler's own option wins over the definition's.
  const byHandler = serve(QUERY, defineQuery(() => ({ ran: true })), {
    definitionEnforceDeadlines: false,
    enforceDeadlines: true,
  });
  assertEquals(
    rejectedError(await one(byHandler, invokeFor(QUERY, past))).code,
    "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
  );
});

Deno.test("a close abort that makes the function throw ends it unknown, logged", async () => {
  const { dispatch, handler, records } = serve(
    ACTION,
    defineAction(async (_args, { signal }) => {
      await new Promise((_, reject) =>
        signal.addEventListener("abort", () => reject(signal.reason))
      );
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  await handler.close({ graceMs: 1000 });
  await until(() => records.length >= 1);
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals(lookup.result?.status, "unknown");
  assertEquals(lookup.result?.error?.code, "FORGE_ENDPOINT_OUTCOME_UNKNOWN");
  // The provider's record of the abort, and none from the handler: the function's terminal event
  // ended the execution within close()'s grace (the handler converges only what outlasts it).
  assertEquals(records.map((record) => [record.event, record.invocationId]), [
    ["provider.aborted", "invocation-1"],
  ]);
});

Deno.test("events that cannot be published are logged and reported false, never thrown", async () => {
  const go = gate();
  let published: boolean | undefined;
  const { handler, records } = serve(
    ACTION,
    defineAction(async (_args, { progress }) => {
      await go.promise;
      published = await progress({ fraction: 1 });
      return {};
    }),
  );
  // No eventSink: events after acceptance cannot be published.
  acceptedOutcome((await handler.dispatch(invokeFor(ACTION)))[0]);
  go.open();
  await until(() => records.length === 2);
  assertEquals(published, false);
  assertEquals(records.map((r) => r.event), ["event.refused", "event.terminal_refused"]);
  // The result does not depend on the events.
  const lookup = resultOf(await one(handler, resultFor(ACTION)));
  assertEquals(lookup.result?.status, "succeeded");
});

Deno.test("an event emitted after the function finished is dropped and logged as event.late", async () => {
  let keep: ExecutionCallContext | undefined;
  const { dispatch, events, records } = serve(
    ACTION,
    defineAction((_args, call) => {
      keep = call;
      return {};
    }),
  );
  await dispatch(invokeFor(ACTION));
  await until(() => keep !== undefined);
  await one({ dispatch }, resultFor(ACTION));
  const before = events.length;
  assertEquals(await keep!.progress({ late: true }), false);
  assertEquals(events.length, before);
  assertEquals(records.map((r) => r.event), ["event.late"]);
});

Deno.test("emit refuses terminal or unknown event types with a TypeError naming the option", async () => {
  let error: unknown;
  const { dispatch } = serve(
    ACTION,
    defineAction(async (_args, call) => {
      try {
        await call.emit("executor_completed" as "progress");
      } catch (caught) {
        error = caught;
      }
      return {};
    }),
  );
  await dispatch(invokeFor(ACTION));
  await until(() => error !== undefined);
  assertInstanceOf(error, TypeError);
  assertEquals(
    (error as TypeError).message,
    `Cannot emit an event as 'type' must be "progress" or "heartbeat": current value is "executor_completed"`,
  );
});

Deno.test("definition option errors name the TypeScript option and show the value", () => {
  const cases: [() => unknown, string, typeof TypeError | typeof RangeError][] = [
    [
      () => defineAction({ maxConcurrency: 0 }, () => ({})),
      "Cannot define an action as 'maxConcurrency' must be a positive integer: current value is 0",
      RangeError,
    ],
    [
      () => defineSession({ stoppable: "yes" as unknown as boolean }, () => ({})),
      `Cannot define a session as 'stoppable' must be a boolean: current value is "yes"`,
      TypeError,
    ],
    [
      () => defineQuery({}, undefined as unknown as () => object),
      "Cannot define a query as 'run' must be a function: current value is undefined",
      TypeError,
    ],
    [
      () => defineEndpoint({ endpointId: "e", operations: { x: 3 as never } }),
      "Cannot define an endpoint as 'operations.x' must be a definition from defineQuery, defineAction or defineSession: current value is 3",
      TypeError,
    ],
    [
      () =>
        defineEndpoint({
          endpointId: "e",
          operations: {},
          enforceDeadlines: "no" as unknown as boolean,
        }),
      `Cannot define an endpoint as 'enforceDeadlines' must be a boolean: current value is "no"`,
      TypeError,
    ],
    [
      () => defineEndpoint({ endpointId: "e", operations: {}, maxRetainedExecutions: 1.5 }),
      "Cannot define an endpoint as 'maxRetainedExecutions' must be a positive integer: current value is 1.5",
      RangeError,
    ],
  ];
  for (const [fn, message, ErrorClass] of cases) {
    let error: unknown;
    try {
      fn();
    } catch (caught) {
      error = caught;
    }
    assertInstanceOf(error, ErrorClass);
    assertEquals(error.message, message);
  }
});

Deno.test("implement() gives a provider usable without defineEndpoint, with its own table", async () => {
  const definition = defineAction((args) => ({ echo: args }));
  const provider = definition.implement({ name: "move", logger: () => {} });
  const other = definition.implement({ name: "move", logger: () => {} });
  const options = { signal: new AbortController().signal };
  const emitted: string[] = [];
  const accepted = await provider.start(
    new ToolRequest({ arguments: { a: 1 } }),
    ctx("motion.arm", "move"),
    { emit: (event) => Promise.resolve(void emitted.push(event.type)) },
    options,
  );
  assertInstanceOf(accepted, ToolAccepted);
  await until(() => emitted.length === 1);
  assertEquals(emitted, ["executor_completed"]);
  const lookup = await provider.result(key(), options);
  assertEquals(lookup.result?.outputs, { echo: { a: 1 } });
  assertEquals((await other.result(key(), options)).status, "not_found");
});

Deno.test("a repeated invoke of a key only the handler forgot replays the result without a rerun", async () => {
  let runs = 0;
  const { logger } = recorder();
  const endpoint = defineEndpoint({
    endpointId: ACTION.endpointId,
    logger,
    maxRetainedExecutions: 2,
    operations: {
      move: defineAction(() => ({ run: ++runs })),
      grip: defineAction(() => ({})),
    },
  });
  const handler = endpoint.createHandler({ endpointInstanceId: INSTANCE });
  const sink = { eventSink: () => {} };
  const grip = { endpointId: ACTION.endpointId, operation: "grip", arguments: {} };
  await handler.dispatch(invokeFor(ACTION, { invocationId: "m-1" }), sink);
  await until(() => handler.state.permitsInUse.move === 0);
  for (const id of ["g-1", "g-2"]) {
    await handler.dispatch(invokeFor(grip, { invocationId: id }), sink);
    await until(() => handler.state.permitsInUse.grip === 0);
  }
  // The handler's ledger (bound 2) evicted m-1; the move table still has it.
  const responses = await handler.dispatch(invokeFor(ACTION, { invocationId: "m-1" }), sink);
  assertEquals(
    completedResult(responses[0]),
    new ToolResult({ status: "succeeded", outputs: { run: 1 } }),
  );
  assertEquals(responses.slice(1).map((e) => eventOf(e).type), ["executor_completed"]);
  assertEquals(runs, 1);
});

Deno.test("idle() waits for the background functions that close() only aborts", async () => {
  const { endpoint, dispatch, handler } = serve(
    ACTION,
    defineAction(async (_args, { signal }) => {
      await new Promise((resolve) => signal.addEventListener("abort", resolve));
      await new Promise((resolve) => setTimeout(resolve, 20)); // cleaning up after the abort
      return { parked: true };
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  await handler.close({ graceMs: 50 });
  await endpoint.idle();
  // The provider's table has the function's outcome: close() aborted it, so it is unknown (with
  // what it returned), whatever the function returned.
  const provider = endpoint.operations.move as ActionToolEndpoint;
  const settled = await provider.result(key(), { signal: new AbortController().signal });
  assertEquals(settled.result?.status, "unknown");
  assertEquals(settled.result?.outputs, { parked: true });
});

Deno.test("close() ends at once for a function that returns on its signal: its unknown outcome has its terminal event", async () => {
  const { dispatch, events, handler, records } = serve(
    ACTION,
    defineAction(async (_args, { signal }) => {
      await new Promise((resolve) => signal.addEventListener("abort", resolve));
      return { reached: 3 };
    }),
  );
  acceptedOutcome((await dispatch(invokeFor(ACTION)))[0]);
  // A grace of ten minutes: close() returns only because the function's own terminal event
  // ended the execution, not because the grace ran out and the handler converged it.
  await handler.close({ graceMs: 600_000 });
  assertEquals(events.map((e) => eventOf(e).type), ["executor_failed"]);
  const data = eventOf(events[0]).data as { phase: string; result: { status: string } };
  assertEquals(data.phase, "unknown");
  assertEquals(data.result.status, "unknown");
  assertEquals(records.some((r) => r.event === "execution.unknown"), false);
  const lookup = resultOf(await one({ dispatch }, resultFor(ACTION)));
  assertEquals(lookup.result?.status, "unknown");
  assertEquals(lookup.result?.outputs, { reached: 3 });
});

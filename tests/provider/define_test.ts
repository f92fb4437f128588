// The one-function provider definitions (src/provider/define.ts) behind a real handler: outcomes,
// cancel and stop, failures and their log records, events, option errors, implement(). The abort
// outcomes are in outcome_test.ts, unknown and forgotten keys in executions_test.ts.
import { assertEquals, assertInstanceOf, assertStrictEquals } from "@std/assert";
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  defineSession,
  type ExecutionCallContext,
  ToolAccepted,
  ToolEndpointError,
  ToolError,
  ToolRequest,
  ToolResult,
} from "../../mod.ts";
import {
  acceptedOutcome,
  ACTION,
  completedResult,
  controlFor,
  controlOf,
  ctx,
  eventOf,
  gate,
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
} from "../handler/_fakes.ts";
import { encodeEnvelope } from "../../src/wire/codec.ts";
import { one, serve } from "./_fakes.ts";

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
  // The terminal event is published in its own turns: the late one is counted after it.
  await until(() => events.length === 1);
  assertEquals(eventOf(events[0]).type, "executor_completed");
  assertEquals(await keep!.progress({ late: true }), false);
  assertEquals(events.length, 1);
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

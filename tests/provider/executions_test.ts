// The executions of Action and Session definitions (src/provider/_implement_execution.ts): keys
// never seen or forgotten, the replay of a key only the handler forgot, idle() and close().
import { assertEquals } from "@std/assert";
import {
  type ActionToolEndpoint,
  defineAction,
  defineEndpoint,
  defineSession,
  ToolResult,
} from "../../mod.ts";
import {
  acceptedOutcome,
  ACTION,
  completedResult,
  controlFor,
  controlOf,
  errorOf,
  eventOf,
  INSTANCE,
  invokeFor,
  key,
  resultFor,
  resultOf,
  SESSION,
  statusFor,
  until,
} from "../handler/_fakes.ts";
import { one, recorder, serve } from "./_fakes.ts";

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

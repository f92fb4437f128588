// The outcome rule of the provider definitions (src/provider/_outcome.ts, the table in
// define.ts): the first abort decides (deadline, close, cancel or stop), whatever the function then
// did; deadlines are enforced by default.
import { assertEquals } from "@std/assert";
import { defineAction, defineQuery, ToolError, ToolResult } from "../../mod.ts";
import {
  acceptedOutcome,
  ACTION,
  completedResult,
  controlFor,
  controlOf,
  eventOf,
  gate,
  invokeFor,
  QUERY,
  rejectedError,
  resultFor,
  resultOf,
  statusFor,
  statusOf,
  until,
} from "../handler/_fakes.ts";
import { one, returnsOnAbort, serve } from "./_fakes.ts";

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

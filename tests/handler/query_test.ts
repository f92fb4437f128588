// Query execution in the handler beyond the reference suite: provider failures and wrong shapes,
// deadlines while a query runs, close() with a query in flight, the state view, and the control
// requests a Query operation refuses.
import {
  assertEquals,
  assertGreaterOrEqual,
  assertInstanceOf,
  assertRejects,
  assertStrictEquals,
} from "@std/assert";
import { deadline, delay } from "@std/async";
import { ToolEndpointError, ToolError, type ToolLogRecord, ToolResult } from "../../mod.ts";
import { validateResponseCorrelation } from "../../wire.ts";
import {
  completedResult,
  gate,
  invokeFor,
  QUERY,
  queryHandler,
  rejectionOf,
  until,
} from "./_fakes.ts";
import { cell, CQ, Scripted, succeeded, test, THROW_KINDS } from "./_scripted.ts";

const NOW = 1_000_000;

for (const [kind, make] of THROW_KINDS) {
  test(`query with a ${kind} propagates the error`, async () => {
    const query = new Scripted();
    const error = new Error("query exploded");
    query.onQuery = make(error);
    const handler = cell({ query });
    assertStrictEquals(await rejectionOf(handler.dispatch(invokeFor(CQ))), error);
    assertStrictEquals(handler.state.activeQueries.detect, 0);
  });
}

test("query returning the wrong shape raises a TypeError", async () => {
  const query = new Scripted();
  query.onQuery = () => undefined;
  await assertRejects(
    () => cell({ query }).dispatch(invokeFor(CQ)),
    TypeError,
    "QueryToolEndpoint.query() must return a ToolResult",
  );
});

test("a query whose deadline passes while it runs fails with DEADLINE_EXCEEDED", async () => {
  const query = new Scripted();
  query.onQuery = async (_request, _context, options) => {
    await new Promise((resolve) => options.signal.addEventListener("abort", resolve));
    throw options.signal.reason;
  };
  const handler = cell({ query }, { enforceDeadlines: true, now: Date.now });
  const begin = Date.now();
  const request = invokeFor(CQ, { deadlineMs: begin + 30 });
  const [response] = await deadline(handler.dispatch(request), 2000);
  assertGreaterOrEqual(Date.now() - begin, 25);
  validateResponseCorrelation(request, response);
  assertEquals(
    completedResult(response),
    new ToolResult({
      status: "failed",
      error: new ToolError({
        code: "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
        message: "deadline_ms passed before the query finished",
        retryable: false,
      }),
    }),
  );
  const signal = query.signals[0];
  assertInstanceOf(signal.reason, DOMException);
  assertStrictEquals(signal.reason.name, "TimeoutError");
  assertStrictEquals(handler.state.activeQueries.detect, 0);
});

test("a query that answers succeeded once its deadline passed fails with DEADLINE_EXCEEDED", async () => {
  const records: ToolLogRecord[] = [];
  let clock = NOW;
  const query = new Scripted();
  // A provider that never looks at its signal and blocks past its deadline (the clock moves, the
  // deadline timer has no chance to fire), then answers succeeded.
  query.onQuery = () => {
    clock = NOW + 100;
    return new ToolResult({ status: "succeeded", outputs: { objects: ["cube"] } });
  };
  const handler = cell({ query }, { now: () => clock, logger: (r) => void records.push(r) });
  const request = invokeFor(CQ, { deadlineMs: NOW + 10 });
  const [response] = await handler.dispatch(request);
  validateResponseCorrelation(request, response);
  assertEquals(
    completedResult(response),
    new ToolResult({
      status: "failed",
      outputs: { objects: ["cube"] },
      error: new ToolError({
        code: "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
        message: "deadline_ms passed before the query finished",
        retryable: false,
      }),
    }),
  );
  assertEquals(records.map((r) => [r.level, r.event, r.invocationId, r.requestId]), [
    ["warn", "provider.deadline_exceeded", "invocation-1", "request-1"],
  ]);
  assertEquals([
    handler.metrics.operations.detect.succeeded,
    handler.metrics.operations.detect.failed,
  ], [0, 1]);
  // Before its deadline, the same answer is a success.
  clock = NOW;
  query.onQuery = () => new ToolResult({ status: "succeeded", outputs: {} });
  const [inTime] = await handler.dispatch(invokeFor(CQ, { deadlineMs: NOW + 10 }));
  assertEquals(completedResult(inTime).status, "succeeded");
});

test("close() waits for an in-flight query that settles on abort", async () => {
  const query = new Scripted();
  const log: string[] = [];
  query.onQuery = async (_request, _context, options) => {
    await new Promise((resolve) => options.signal.addEventListener("abort", resolve));
    await delay(30);
    log.push("query settled");
    return new ToolResult({
      status: "failed",
      error: new ToolError({ code: "SHUTDOWN", message: "endpoint closing" }),
    });
  };
  const handler = cell({ query });
  const answer = handler.dispatch(invokeFor(CQ));
  await until(() => query.calls.query === 1);
  assertStrictEquals(handler.state.activeQueries.detect, 1);
  await deadline(handler.close({ graceMs: 5000 }), 2000);
  log.push("closed");
  assertEquals(log, ["query settled", "closed"]);
  assertStrictEquals(completedResult((await answer)[0]).error?.code, "SHUTDOWN");
  assertStrictEquals(handler.state.activeQueries.detect, 0);
});

test("state reports queries in progress", async () => {
  const query = new Scripted();
  const release = gate();
  query.onQuery = async () => {
    await release.promise;
    return succeeded();
  };
  const handler = queryHandler(query);
  assertEquals(handler.state.permitsInUse, {});
  assertStrictEquals(handler.state.saturated, false);
  const running = handler.dispatch(invokeFor(QUERY));
  assertEquals(handler.state.activeQueries, { detect: 1 });
  assertStrictEquals(handler.state.activeInvocations, 1);
  release.open();
  await running;
  assertEquals(handler.state.activeQueries, { detect: 0 });
  assertStrictEquals(handler.state.activeInvocations, 0);
  const rejecting = queryHandler({
    query: () => {
      throw new ToolEndpointError(new ToolError({ code: "BUSY", message: "busy" }));
    },
  });
  await rejecting.dispatch(invokeFor(QUERY));
  assertEquals(rejecting.state.activeQueries, { detect: 0 });
});

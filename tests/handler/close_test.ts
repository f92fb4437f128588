// ToolEndpointHandler.close() and abandonInvoke(): nothing admitted ends silent (issue 11, defects
// 2 and 6); requests still waiting on a provider are answered once the grace ran out.
import { assert, assertEquals, assertInstanceOf, assertRejects } from "@std/assert";
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolEvent,
  ToolExecutionKey,
  type ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  type ToolResultResponse,
} from "../../mod.ts";
import {
  errorFromPayload,
  eventFromPayload,
  invokeResponseFromPayload,
  makeInvokeRequestEnvelope,
  makeStatusRequestEnvelope,
  resultResponseFromPayload,
  statusResponseFromPayload,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import { replaceEnvelope, silentLogger } from "../_helpers.ts";
import { answersInProgress } from "../../src/handler/_state.ts";
import { LongRunning, requests, robotHandler } from "./_fakes.ts";

const OPERATIONS = [["move", "action"], ["serve", "session"]] as const;

/** An event sink that records what it published and when (relative to `marks`). */
function recorder() {
  const log: string[] = [];
  const events: ToolEnvelope[] = [];
  const sink = (event: ToolEnvelope) => {
    events.push(event);
    log.push(`event ${event.invocationId} ${eventFromPayload(event.payload).type}`);
  };
  return { log, events, sink };
}

for (const [operation, semantics] of OPERATIONS) {
  const ended = semantics === "action" ? "cancelled" : "stopped";
  const an = semantics === "action" ? "an action" : "a session";

  Deno.test(`close() waits until ${an}'s terminal event is published`, async () => {
    const move = new LongRunning("action", "end", { endDelayMs: 30 });
    const serve = new LongRunning("session", "end", { endDelayMs: 30 });
    const handler = robotHandler(move, serve);
    const { log, events, sink } = recorder();
    const exchange = requests(operation, "inv-1");
    const [answer] = await handler.dispatch(exchange.invoke(), { eventSink: sink });
    assertInstanceOf(invokeResponseFromPayload(answer.payload), ToolAccepted);

    await handler.close({ graceMs: 10_000 });
    log.push("closed");

    assertEquals(log, [`event inv-1 ${ended}`, "closed"]);
    assertEquals(events[0].sequence, 0);
    const [status] = await handler.dispatch(exchange.status());
    assertEquals(statusResponseFromPayload(status.payload).phase, ended);
    const [result] = await handler.dispatch(exchange.result());
    assertEquals(resultResponseFromPayload(result.payload).result?.status, ended);
    assertEquals(handler.state.permitsInUse[operation], 0);
  });

  Deno.test(`close() converges ${an} still running after the grace to unknown, with one executor_failed event`, async () => {
    const move = new LongRunning("action", "ignore");
    const serve = new LongRunning("session", "ignore");
    const provider = semantics === "action" ? move : serve;
    const handler = robotHandler(move, serve);
    const { log, events, sink } = recorder();
    const exchange = requests(operation, "inv-1");
    await handler.dispatch(exchange.invoke(), { eventSink: sink });
    const execution = [...provider.executions.values()][0];
    await execution.events.emit(new ToolEvent({ type: "progress", data: { step: 1 } }));

    await handler.close({ graceMs: 20 });
    log.push("closed");

    assert(execution.signal.aborted);
    assertEquals(log, ["event inv-1 progress", "event inv-1 executor_failed", "closed"]);
    const terminal = events[1];
    assertEquals([terminal.sequence, terminal.invocationId, terminal.operation], [
      1,
      "inv-1",
      operation,
    ]);
    const data = eventFromPayload(terminal.payload).data as {
      phase: string;
      result: { status: string; error: { code: string } };
    };
    assertEquals(data.phase, "unknown");
    assertEquals(data.result.status, "unknown");
    assertEquals(data.result.error.code, "FORGE_ENDPOINT_OUTCOME_UNKNOWN");

    const [status] = await handler.dispatch(exchange.status());
    const phase = statusResponseFromPayload(status.payload);
    assertEquals([phase.phase, phase.error?.code], ["unknown", "FORGE_ENDPOINT_OUTCOME_UNKNOWN"]);
    const [result] = await handler.dispatch(exchange.result());
    const retained = resultResponseFromPayload(result.payload);
    assertEquals(retained.status, "available");
    assertEquals([retained.result?.status, retained.result?.error?.code], [
      "unknown",
      "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    ]);
    assertEquals(handler.state.permitsInUse[operation], 0);

    // The provider's late events break the terminal state; nothing more is published.
    const late = await assertRejects(
      () => execution.events.emit(new ToolEvent({ type: "heartbeat" })),
      ToolProtocolError,
    );
    assertEquals(late.code, "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL");
    assertEquals(events.length, 2);
  });
}

Deno.test("close(): a terminal event stuck at its barrier when the grace runs out loses to the unknown one", async () => {
  const barrier = Promise.withResolvers<void>();
  const move = new LongRunning("action", "ignore");
  // The authoritative result never arrives while the grace runs.
  move.result = (key) => barrier.promise.then(() => LongRunning.prototype.result.call(move, key));
  const handler = robotHandler(move, new LongRunning("session", "ignore"));
  const { events, sink } = recorder();
  await handler.dispatch(requests("move", "inv-1").invoke(), { eventSink: sink });
  const execution = [...move.executions.values()][0];
  const emitting = execution.events.emit(new ToolEvent({ type: "executor_completed" }));
  await handler.close({ graceMs: 20 });
  barrier.resolve();
  const failure = await emitting.then(() => undefined, (error) => error);
  assertInstanceOf(failure, ToolProtocolError);
  assertEquals(failure.code, "FORGE_ENDPOINT_UNAVAILABLE");
  assertEquals(events.map((event) => eventFromPayload(event.payload).type), ["executor_failed"]);
});

Deno.test("close() on many running executions: each ends with exactly one terminal event", async () => {
  const move = new LongRunning("action", "end", { endDelayMs: 5 });
  const serve = new LongRunning("session", "ignore");
  const handler = robotHandler(move, serve);
  const { events, sink } = recorder();
  for (let i = 0; i < 4; i++) {
    await handler.dispatch(requests("move", `move-${i}`).invoke(), { eventSink: sink });
    await handler.dispatch(requests("serve", `serve-${i}`).invoke(), { eventSink: sink });
  }
  await handler.close({ graceMs: 50 });
  const terminals = new Map<string, string[]>();
  for (const event of events) {
    const list = terminals.get(event.invocationId!) ?? [];
    list.push(eventFromPayload(event.payload).type);
    terminals.set(event.invocationId!, list);
  }
  for (let i = 0; i < 4; i++) {
    assertEquals(terminals.get(`move-${i}`), ["cancelled"]);
    assertEquals(terminals.get(`serve-${i}`), ["executor_failed"]);
  }
  assertEquals(handler.state.activeInvocations, 0);
});

/** A robot handler with one accepted `move` execution ("inv-1"), its invoke and its exchange. */
async function acceptedMove() {
  const move = new LongRunning("action", "ignore");
  const handler = robotHandler(move, new LongRunning("session", "ignore"));
  const { events, sink } = recorder();
  const exchange = requests("move", "inv-1");
  const invoke = exchange.invoke();
  await handler.dispatch(invoke, { eventSink: sink });
  return { move, handler, events, sink, exchange, invoke };
}

Deno.test("abandonInvoke(): the undelivered acceptance's execution is aborted and converges to unknown, silently", async () => {
  const { move, handler, events, sink, exchange, invoke } = await acceptedMove();
  const execution = [...move.executions.values()][0];
  assertEquals(handler.state.permitsInUse.move, 1);

  assertEquals(handler.abandonInvoke(invoke), true);
  assertEquals(handler.abandonInvoke(invoke), false); // once

  assert(execution.signal.aborted);
  assertEquals((execution.signal.reason as DOMException).name, "AbortError");
  assertEquals(handler.state.permitsInUse.move, 0);
  const late = await assertRejects(
    () => execution.events.emit(new ToolEvent({ type: "progress" })),
    ToolProtocolError,
  );
  assertEquals(late.code, "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL");
  assertEquals(events, []);

  // A duplicate invoke (a retry with the same key), status and result all read the unknown.
  const [duplicate] = await handler.dispatch(exchange.invoke("invoke-again"), { eventSink: sink });
  const outcome = invokeResponseFromPayload(duplicate.payload);
  assertInstanceOf(outcome, ToolResult);
  assertEquals([outcome.status, outcome.error?.code], [
    "unknown",
    "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
  ]);
  assertEquals(duplicate.requestId, "invoke-again");
  const [status] = await handler.dispatch(exchange.status());
  assertEquals(statusResponseFromPayload(status.payload).phase, "unknown");
  const [result] = await handler.dispatch(exchange.result());
  assertEquals(resultResponseFromPayload(result.payload).result?.status, "unknown");
  // Nothing is left for close() to wait for or to publish.
  await handler.close({ graceMs: 10_000 });
  assertEquals(events, []);
});

Deno.test("abandonInvoke(): an acceptance whose execution already ended replays its terminal result", async () => {
  const { move, handler, events, sink, exchange, invoke } = await acceptedMove();
  // The provider ends the execution; a status read establishes the terminal state, and the
  // handler lets go of the execution's emitter, whose progression ended with it.
  const key = new ToolExecutionKey({ invocationId: "inv-1", attemptId: "attempt-1" });
  move.results.set(key.id, new ToolResult({ status: "cancelled" }));
  const [status] = await handler.dispatch(exchange.status());
  assertEquals(statusResponseFromPayload(status.payload).phase, "cancelled");
  assertEquals(handler.state.permitsInUse.move, 0);

  // The acceptance was never delivered: its retry gets the terminal result, not the acceptance.
  assertEquals(handler.abandonInvoke(invoke), true);
  assertEquals(handler.abandonInvoke(invoke), false); // once
  const [duplicate] = await handler.dispatch(exchange.invoke("invoke-again"), { eventSink: sink });
  const outcome = invokeResponseFromPayload(duplicate.payload);
  assertInstanceOf(outcome, ToolResult);
  assertEquals(outcome.status, "cancelled");
  await handler.close({ graceMs: 10_000 });
  assertEquals(events, []);
});

Deno.test("close(): an execution that ends during the grace lets go of its emitter, and close() still resolves", async () => {
  const { move, handler, events, exchange } = await acceptedMove();
  const closing = handler.close({ graceMs: 10_000 });
  // During the grace the provider ends the execution and a status read establishes its terminal
  // state: its progression ends, so its record lets go of the emitter close() was waiting on.
  const key = new ToolExecutionKey({ invocationId: "inv-1", attemptId: "attempt-1" });
  move.results.set(key.id, new ToolResult({ status: "cancelled" }));
  const [status] = await handler.dispatch(exchange.status());
  assertEquals(statusResponseFromPayload(status.payload).phase, "cancelled");
  await closing;
  assertEquals([handler.state.permitsInUse.move, events], [0, []]);
});

Deno.test("abandonInvoke() changes nothing for other requests", async () => {
  const move = new LongRunning("action", "ignore");
  const serve = new LongRunning("session", "ignore");
  const handler = robotHandler(move, serve);
  const { sink } = recorder();
  await handler.dispatch(requests("serve", "s-1").invoke(), { eventSink: sink });
  // An unknown key, a status request, the key under another operation.
  assertEquals(handler.abandonInvoke(requests("move", "nobody").invoke()), false);
  assertEquals(handler.abandonInvoke(requests("serve", "s-1").status()), false);
  assertEquals(handler.abandonInvoke(requests("move", "s-1").invoke()), false);
  // A duplicate invoke (another request_id) replays the acceptance the first caller got: its
  // own undelivered answer does not end the execution.
  assertEquals(handler.abandonInvoke(requests("serve", "s-1").invoke("duplicate")), false);
  assertEquals(handler.state.permitsInUse.serve, 1);
  assertEquals([...serve.executions.values()][0].signal.aborted, false);
  await handler.close({ graceMs: 10 });
});

// ---------------------------------------------------------------------------------------------
// Requests waiting on a provider at close()

const never = <T>() => new Promise<T>(() => {});

function setup() {
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "robot",
      operations: [
        new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          cancellable: true,
          statusSupported: true,
        }),
      ],
    }),
    {
      endpointInstanceId: "instance-1",
      logger: silentLogger, // close() abandons calls on purpose: its warnings are expected
      operations: {
        detect: { query: () => never<ToolResult>() },
        move: {
          start: () => never(),
          cancel: () => new ToolControlResponse({ command: "cancel", status: "accepted" }),
          status: () => never<ToolExecutionStatus>(),
          result: () => never<ToolResultResponse>(),
        },
      },
    },
  );
  const request = (operation: string, invocationId: string, requestId: string) => {
    const context = new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
      toolId: "tool",
      implementationId: "impl",
      endpointId: "robot",
      operation,
    });
    return {
      invoke: makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
        requestId,
        endpointInstanceId: "instance-1",
      }),
      status: makeStatusRequestEnvelope(context, { requestId, endpointInstanceId: "instance-1" }),
    };
  };
  return { handler, request };
}

Deno.test("close() answers every request still waiting on a provider once its grace ran out", async () => {
  const { handler, request } = setup();
  const query = handler.dispatch(request("detect", "q-1", "r-1").invoke);
  const start = handler.dispatch(request("move", "m-1", "r-2").invoke);
  const duplicate = handler.dispatch(request("move", "m-1", "r-3").invoke);
  const status = handler.dispatch(request("move", "m-2", "r-4").status);
  // close() waits for the answers themselves, not only for the provider calls they wait on.
  const order: string[] = [];
  for (const [name, answer] of [["query", query], ["start", start], ["status", status]] as const) {
    answer.then(() => order.push(name));
  }
  await handler.close({ graceMs: 20 });
  order.push("closed");
  assertEquals(order.at(-1), "closed");
  assertEquals(order.length, 4);

  const [queryAnswer] = await query;
  const queryResult = invokeResponseFromPayload(queryAnswer.payload);
  assertInstanceOf(queryResult, ToolResult);
  assertEquals([queryResult.status, queryResult.error?.code], [
    "unknown",
    "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
  ]);

  for (const [answer] of [await start, await duplicate]) {
    const result = invokeResponseFromPayload(answer.payload);
    assertInstanceOf(result, ToolResult);
    assertEquals([result.status, result.error?.code], [
      "unknown",
      "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    ]);
  }
  assertEquals((await duplicate)[0].requestId, "r-3");

  const [statusAnswer] = await status;
  assertEquals(statusAnswer.messageType, "tool.error");
  assertEquals(errorFromPayload(statusAnswer.payload).code, "FORGE_ENDPOINT_UNAVAILABLE");
  assertEquals(handler.state.permitsInUse.move, 0);
  assertEquals(handler.state.activeQueries.detect, 0);
});

Deno.test("close() refuses a graceMs that is not a non-negative finite number, showing it", async () => {
  const { handler, request } = setup();
  const start = handler.dispatch(request("move", "m-1", "r-1").invoke);
  for (
    const [graceMs, shown] of [[NaN, "NaN"], [-1, "-1"], [Infinity, "Infinity"], ["10", '"10"']]
  ) {
    const error = await assertRejects(
      () => handler.close({ graceMs: graceMs as number }),
      RangeError,
    );
    assertEquals(
      error.message,
      `Cannot close the handler as 'graceMs' must be a non-negative finite number: current value is ${shown}`,
    );
    // Refused before anything changed: the handler still admits, nothing converged.
    assertEquals(handler.state.closed, false);
    assertEquals(handler.state.permitsInUse.move, 1);
  }
  // 0 is no grace: what is still running converges to unknown at once.
  await handler.close({ graceMs: 0 });
  const result = invokeResponseFromPayload((await start)[0].payload);
  assertInstanceOf(result, ToolResult);
  assertEquals(result.status, "unknown");
  assertEquals(handler.state.closed, true);
});

Deno.test("the answers close() waits for: each dispatch counts until it settles, whichever way", async () => {
  const { handler, request } = setup();
  const hanging = [
    handler.dispatch(request("detect", "q-1", "r-1").invoke),
    handler.dispatch(request("move", "m-1", "r-2").invoke),
    handler.dispatch(request("move", "m-2", "r-3").status),
  ];
  assertEquals(answersInProgress(handler), 3);
  // A refused route rejects; a status request with a payload its type does not allow is answered
  // with a protocol error. Both settle as soon as dispatch returns; neither stays counted.
  const refused = handler.dispatch(
    replaceEnvelope(request("detect", "q-2", "r-4").invoke, { endpointId: "other" }),
  );
  const answering = handler.dispatch(
    replaceEnvelope(request("move", "m-3", "r-5").status, { payload: { extra: true } }),
  );
  assertEquals(answersInProgress(handler), 3);
  await assertRejects(() => refused, ToolProtocolError);
  assertEquals((await answering)[0].messageType, "tool.error");
  assertEquals(answersInProgress(handler), 3);
  await handler.close({ graceMs: 10 });
  await Promise.all(hanging);
  assertEquals(answersInProgress(handler), 0);
});

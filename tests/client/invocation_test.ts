// ToolEndpointClient invocation handles against the real ToolEndpointHandler in process: Action
// and Session events, result, control, abort, dispose, release, and nothing sent for what never
// started or already ended.
import { assertEquals, assertInstanceOf, assertRejects, assertStrictEquals } from "@std/assert";
import {
  InProcessToolClientTransport,
  ToolAccepted,
  ToolCallError,
  ToolClientError,
  type ToolClientTransport,
  ToolEndpointClient,
  type ToolInvocation,
} from "../../mod.ts";
import { ToolEnvelope } from "../../wire.ts";
import { makeInvokeResponseEnvelope } from "../../src/wire/factories.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT, INSTANCE } from "./_fixtures.ts";
import { recordingLogger } from "../_helpers.ts";
import { collect, inProcess, lossy, summary } from "./_callers.ts";

// --- Action and Session --------------------------------------------------------------------------

Deno.test("client: an Action's events arrive in order and result() gives the terminal result", async () => {
  const { client } = inProcess();
  const move = await client.invoke("move", { steps: 3 });
  assertInstanceOf(move.acceptance, ToolAccepted);
  assertEquals(move.acceptance.details, { steps: 3 });
  assertEquals(move.semantics, "action");
  assertEquals(move.endpointInstanceId, INSTANCE);
  const records = await collect(move);
  assertEquals(summary(records), [
    "0:progress",
    "1:progress",
    "2:progress",
    "3:executor_completed",
  ]);
  assertEquals(records.map((r) => r.event.data.step ?? null), [1, 2, 3, null]);
  const result = await move.result();
  assertEquals([result.status, result.outputs], ["succeeded", { steps: 3 }]);
  assertStrictEquals(await move.result(), result);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
});

Deno.test("client: result() alone (no event reader) settles from the terminal event", async () => {
  const { client } = inProcess();
  const move = await client.invoke("move", { steps: 2 });
  assertEquals((await move.result()).status, "succeeded");
  await client.close();
});

Deno.test("client: cancel() an Action, the stream ends with the cancelled event", async () => {
  const { arm, client } = inProcess();
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
  const answer = await move.cancel("operator");
  assertEquals([answer.command, answer.status], ["cancel", "accepted"]);
  const records = await collect(move);
  assertEquals(records.at(-1)?.event.type, "cancelled");
  assertEquals((await move.result()).status, "cancelled");
  assertEquals(arm.move.calls.control, 1);
  await client.close();
});

Deno.test("client: stop() a Session, status() reports its phase", async () => {
  const { client } = inProcess();
  const watch = await client.invoke("watch", { steps: 100_000, stepMs: 5 });
  assertEquals(watch.semantics, "session");
  assertEquals((await watch.status()).phase, "running");
  assertEquals((await watch.stop("done")).status, "accepted");
  assertEquals((await watch.result()).status, "stopped");
  await client.close();
});

Deno.test("client: a rejected Action invoke is a ToolCallError and opens nothing", async () => {
  const { client } = inProcess();
  const error = await assertRejects(() => client.invoke("move", { reject: true }), ToolCallError);
  assertEquals([error.kind, error.code], ["rejected", "FORGE_ENDPOINT_BUSY"]);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
});

Deno.test("client: a tool.error answer is a ToolCallError of kind error", async () => {
  const { arm, client } = inProcess();
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
  arm.move.executions.clear();
  const error = await assertRejects(() => move.status(), ToolCallError);
  assertEquals([error.kind, error.code], ["error", "NOT_FOUND"]);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: abort sends cancel to an Action and ends the waits with the reason", async () => {
  const { arm, client } = inProcess();
  const controller = new AbortController();
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 }, {
    signal: controller.signal,
  });
  const waiting = move.result();
  const reading = collect(move);
  const reason = new Error("operator pressed stop");
  controller.abort(reason);
  assertStrictEquals(await assertRejects(() => waiting), reason);
  assertStrictEquals(await assertRejects(() => reading), reason);
  // The cancel went out in the background; the provider sees it.
  while (arm.move.calls.control === 0) await new Promise((r) => setTimeout(r, 1));
  assertEquals(arm.move.calls.control, 1);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: abort sends stop to a Session", async () => {
  const { arm, client } = inProcess();
  const controller = new AbortController();
  const watch = await client.invoke("watch", { steps: 100_000, stepMs: 5 }, {
    signal: controller.signal,
  });
  controller.abort();
  await assertRejects(() => watch.result());
  while (arm.watch.calls.control === 0) await new Promise((r) => setTimeout(r, 1));
  assertEquals(arm.watch.calls.control, 1);
  while (client.stats.pendingExchanges > 0) await new Promise((r) => setTimeout(r, 1));
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: without a descriptor, abort of a Session learns stop after cancel is unsupported", async () => {
  const arm = armEndpoint();
  const log = recordingLogger();
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: ENDPOINT,
    logger: log.logger,
  });
  const controller = new AbortController();
  const watch = await client.invoke("watch", { steps: 100_000, stepMs: 5 }, {
    signal: controller.signal,
  });
  assertEquals(watch.semantics, undefined);
  controller.abort();
  while (arm.watch.calls.control === 0) await new Promise((r) => setTimeout(r, 1));
  assertEquals(arm.watch.calls.control, 1, "the handler answered cancel unsupported, then stop");
  assertEquals(log.records, []);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: an already aborted signal sends nothing", async () => {
  const { client } = inProcess();
  const controller = new AbortController();
  controller.abort(new Error("early"));
  const error = await assertRejects(() => client.query("echo", {}, { signal: controller.signal }));
  assertEquals((error as Error).message, "early");
  assertEquals(client.stats.sent, 0);
  await client.close();
});

Deno.test("client: disposing a running invocation cancels it; a finished one sends nothing", async () => {
  const { arm, client } = inProcess();
  {
    await using move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
    assertEquals(move.semantics, "action");
  }
  assertEquals(arm.move.calls.control, 1);
  {
    await using done = await client.invoke("move", { steps: 1 });
    await done.result();
  }
  assertEquals(arm.move.calls.control, 1);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: close() ends pending waits with FORGE_CLIENT_CLOSED", async () => {
  const { arm, client } = inProcess();
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
  const waiting = move.result();
  const slow = client.query("echo", { delayMs: 50 });
  await client.close();
  assertEquals((await assertRejects(() => waiting, ToolClientError)).code, "FORGE_CLIENT_CLOSED");
  assertEquals((await assertRejects(() => slow, ToolClientError)).code, "FORGE_CLIENT_CLOSED");
  const after = await assertRejects(() => client.query("echo", {}), ToolClientError);
  assertEquals([after.code, after.outcome], ["FORGE_CLIENT_CLOSED", "not_sent"]);
  await arm.handler.close({ graceMs: 100 });
});

// --- Handles end released -------------------------------------------------------------------------

Deno.test("client: a handle whose last event before the terminal one was lost is released", async () => {
  const { arm, client, transport } = lossy({ maxOpenInvocations: 3, reorderWindowMs: 5 });
  // Each `move` of 2 steps emits 0:progress 1:progress 2:executor_completed; 1 is lost.
  transport.dropResponse = (m) => m.messageType === "tool.event" && m.sequence === 1;
  const handles: ToolInvocation[] = [];
  for (let i = 0; i < 3; i++) handles.push(await client.invoke("move", { steps: 2 }));
  // Nobody reads: the gap is skipped after the reorder window, delivering the terminal event.
  while (handles.some((h) => h.eventGaps === 0)) await new Promise((r) => setTimeout(r, 1));
  for (const handle of handles) assertEquals((await handle.result()).status, "succeeded");
  assertEquals(client.stats.openInvocations, 0);
  const fourth = await client.invoke("move", { steps: 0 });
  assertEquals((await fourth.result()).status, "succeeded");
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

/** A transport that accepts every invoke and lets the test deliver events. */
function acceptingTransport() {
  let deliver: (message: ToolEnvelope) => void = () => {};
  const sent: ToolEnvelope[] = [];
  const transport: ToolClientTransport = {
    connect: (fn) => void (deliver = fn),
    send: (request) => {
      sent.push(request);
      if (request.messageType === "tool.invoke.request") {
        queueMicrotask(() =>
          deliver(makeInvokeResponseEnvelope(new ToolAccepted({ details: {} }), request))
        );
      }
    },
  };
  return { transport, sent, deliver: (message: ToolEnvelope) => deliver(message) };
}

function eventOf(key: { invocationId: string; attemptId: string }, sequence: number, type: string) {
  return new ToolEnvelope({
    messageType: "tool.event",
    invocationId: key.invocationId,
    attemptId: key.attemptId,
    endpointId: ENDPOINT,
    endpointInstanceId: INSTANCE,
    operation: "move",
    sequence,
    payload: { type, data: {} },
  });
}

Deno.test("client: a 200,000-event out-of-order backlog skips its gap without overflowing the stack", async () => {
  const { transport, deliver } = acceptingTransport();
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    endpointInstanceId: INSTANCE,
    descriptor: DESCRIPTOR,
    maxBufferedEvents: 250_000,
    reorderWindowMs: 5,
  });
  const move = await client.invoke("move", {}, { invocationId: "inv-b", attemptId: "att-b" });
  // Sequence 0 never comes: 1..200,000 are held until the gap is skipped.
  for (let sequence = 1; sequence <= 200_000; sequence++) {
    deliver(eventOf(move.key, sequence, "progress"));
  }
  while (move.eventGaps === 0) await new Promise((r) => setTimeout(r, 1));
  deliver(eventOf(move.key, 200_001, "executor_completed"));
  let count = 0;
  let last = -1;
  for await (const record of move.events) {
    assertEquals(record.sequence, last === -1 ? 1 : last + 1);
    last = record.sequence;
    count++;
  }
  assertEquals([count, last, move.eventGaps, move.droppedEvents], [200_001, 200_001, 1, 0]);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
});

// --- Nothing sent for what never started or already ended -----------------------------------------

Deno.test("client: invoke() with an already aborted signal sends nothing, not even a cancel", async () => {
  const { arm, client, transport } = lossy();
  const controller = new AbortController();
  const reason = new Error("early");
  controller.abort(reason);
  assertStrictEquals(
    await assertRejects(() => client.invoke("move", { steps: 1 }, { signal: controller.signal })),
    reason,
  );
  await client.close();
  assertEquals(transport.requests.length, 0);
  assertEquals([arm.move.calls.start, arm.move.calls.control], [0, 0]);
  assertEquals(client.stats.openInvocations, 0);
});

Deno.test("client: an abort during the instance lookup sends nothing", async () => {
  const { client, transport } = lossy();
  const controller = new AbortController();
  transport.resolveInstance = () => {
    controller.abort();
    return Promise.resolve(INSTANCE);
  };
  const error = await assertRejects(() =>
    client.invoke("move", { steps: 1 }, { signal: controller.signal })
  );
  assertEquals((error as Error).name, "AbortError");
  await client.close();
  assertEquals(transport.requests.length, 0);
});

Deno.test("client: disposing a handle after its terminal event sends nothing", async () => {
  const { arm, client } = inProcess();
  {
    await using move = await client.invoke("move", { steps: 1 });
    // No reader and no result(): the terminal event arrives and is all the client knows.
    while (client.stats.events < 2) await new Promise((r) => setTimeout(r, 1));
    assertEquals(move.semantics, "action");
  }
  assertEquals(arm.move.calls.control, 0);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: an abort after the terminal event sends nothing", async () => {
  const { arm, client } = inProcess();
  const controller = new AbortController();
  await client.invoke("move", { steps: 1 }, { signal: controller.signal });
  while (client.stats.events < 2) await new Promise((r) => setTimeout(r, 1));
  controller.abort();
  await client.close();
  assertEquals(arm.move.calls.control, 0);
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: close() while an unanswered invoke's admission is looked up rejects it CLOSED", async () => {
  const { arm, client, transport } = lossy({ timeoutMs: 20, maxAttempts: 50 });
  transport.dropResponse = (m) =>
    m.messageType === "tool.invoke.response" || m.messageType === "tool.result.response";
  const invoking = client.invoke("move", { steps: 1 }, { invocationId: "inv-c", attemptId: "a" });
  while (!transport.requests.some((r) => r.messageType === "tool.result.request")) {
    await new Promise((r) => setTimeout(r, 1));
  }
  await client.close();
  const error = await assertRejects(() => invoking, ToolClientError);
  assertEquals(
    [error.code, error.exchange, error.outcome, error.invocationId],
    ["FORGE_CLIENT_CLOSED", "invoke", "unknown", "inv-c"],
  );
  assertEquals(client.stats.openInvocations, 0);
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: abort while a lost invoke waits sends no cancel for an execution never admitted", async () => {
  const { arm, client, transport } = lossy({ timeoutMs: 60_000 });
  transport.dropRequest = (r) => r.messageType === "tool.invoke.request";
  const controller = new AbortController();
  const invoking = client.invoke("move", { steps: 1 }, { signal: controller.signal });
  while (transport.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  controller.abort();
  await assertRejects(() => invoking);
  await client.close();
  // The client asked whether it was admitted (not_found) and sent nothing to end it.
  assertEquals(transport.requests.map((r) => r.messageType), [
    "tool.invoke.request",
    "tool.result.request",
  ]);
  assertEquals([arm.move.calls.start, arm.move.calls.control], [0, 0]);
});

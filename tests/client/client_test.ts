// ToolEndpointClient against the real ToolEndpointHandler in process: Query calls, options, lost
// answers, timeouts and re-sends, bounds, instance resolution and deadlines.
import { assert, assertEquals, assertRejects, assertStrictEquals, assertThrows } from "@std/assert";
import {
  InProcessToolClientTransport,
  ToolCallError,
  ToolClientError,
  type ToolClientTransport,
  ToolEndpointClient,
  ToolEndpointDescriptor,
  ToolEndpointError,
  ToolEndpointHandler,
  ToolError,
  type ToolInvocation,
  ToolOperationDescriptor,
  ToolResult,
} from "../../mod.ts";
import { TOOL_ENDPOINT_PROTOCOL, type ToolEnvelope } from "../../wire.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT, INSTANCE } from "./_fixtures.ts";
import { recordingLogger } from "../_helpers.ts";
import {
  type ClientOptions,
  collect,
  inProcess,
  lossy,
  LossyTransport,
  summary,
} from "./_callers.ts";

// --- Query ---------------------------------------------------------------------------------------

Deno.test("client: query resolves to the result, with the ids and context options", async () => {
  const { arm, client } = inProcess({ callerId: "planner" });
  const deadlineMs = Date.now() + 60_000;
  const result = await client.query("echo", { value: 7 }, {
    invocationId: "inv-1",
    attemptId: "att-1",
    requestId: "req-1",
    deadlineMs,
    metadata: { trace: "t-1" },
  });
  assertEquals(result.status, "succeeded");
  assertEquals(result.outputs, { echo: { value: 7 } });
  const [context] = arm.echoCalls.contexts;
  assertEquals(
    [context.invocationId, context.attemptId, context.callerId, context.deadlineMs],
    ["inv-1", "att-1", "planner", deadlineMs],
  );
  assertEquals(context.metadata, { trace: "t-1" });
  assertEquals([context.toolId, context.implementationId], [ENDPOINT, ENDPOINT]);
  assertEquals(client.stats.sent, 1);
  assertEquals(client.stats.responses, 1);
  assertEquals(client.stats.pendingExchanges, 0);
  await client.close();
});

Deno.test("client: generated ids are distinct UUIDs", async () => {
  const { arm, client } = inProcess();
  await client.query("echo", {});
  await client.query("echo", {});
  const [a, b] = arm.echoCalls.contexts;
  assert(a.invocationId !== b.invocationId);
  assert(/^[0-9a-f-]{36}$/.test(a.invocationId));
  assert(/^[0-9a-f-]{36}$/.test(a.attemptId));
  await client.close();
});

Deno.test("client: a rejected query surfaces the ToolError (code, retryable, details)", async () => {
  const { client } = inProcess();
  const error = await assertRejects(() => client.query("echo", { reject: true }), ToolCallError);
  assertEquals(error.kind, "rejected");
  assertEquals(error.code, "FORGE_ENDPOINT_BUSY");
  assertEquals(error.retryable, true);
  assertEquals(error.error.details, { queue: 3 });
  assertEquals(client.stats.resent, 0, "retryable never triggers a retry by itself");
  await client.close();
});

Deno.test("client: query and invoke refuse an operation of the wrong semantics before sending", async () => {
  const { client } = inProcess();
  const q = await assertRejects(() => client.query("move", {}), ToolClientError);
  assertEquals([q.code, q.retryable, q.outcome, q.exchange], [
    "FORGE_CLIENT_WRONG_SEMANTICS",
    false,
    "not_sent",
    "invoke",
  ]);
  assertEquals(
    q.message,
    "FORGE_CLIENT_WRONG_SEMANTICS: operation 'move' of 'robot.arm' is an action: use invoke()",
  );
  const i = await assertRejects(() => client.invoke("echo", {}), ToolClientError);
  assertEquals(
    i.message,
    "FORGE_CLIENT_WRONG_SEMANTICS: operation 'echo' of 'robot.arm' is a query: use query()",
  );
  assertEquals(client.stats.sent, 0);
  await client.close();
});

Deno.test("client: a descriptor function is read at each call, and what it throws rejects the call unsent", async () => {
  let current: ToolEndpointDescriptor | undefined = DESCRIPTOR;
  let reads = 0;
  let failure: unknown;
  const { client } = inProcess({
    descriptor: () => {
      reads++;
      if (failure !== undefined) throw failure;
      return current;
    },
  });
  assertEquals((await client.query("echo", { n: 1 })).status, "succeeded");
  const wrong = await assertRejects(() => client.query("move"), ToolClientError);
  assertEquals(wrong.code, "FORGE_CLIENT_WRONG_SEMANTICS");
  // Another descriptor takes effect on the next call.
  current = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: ENDPOINT,
    operations: [new ToolOperationDescriptor({ name: "other", semantics: "query" })],
  });
  const unknown = await assertRejects(() => client.query("echo"), ToolClientError);
  assertEquals(unknown.code, "FORGE_CLIENT_UNKNOWN_OPERATION");
  // `undefined`: no descriptor for that call (the handler answers as it would without one).
  current = undefined;
  assertEquals((await client.query("echo", { n: 2 })).status, "succeeded");
  // A descriptor of another endpoint, or not a descriptor, is the option error, at the call.
  current = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "robot.leg",
    operations: [new ToolOperationDescriptor({ name: "echo", semantics: "query" })],
  });
  await assertRejects(
    () => client.query("echo"),
    RangeError,
    "Cannot query as 'descriptor' must describe endpoint 'robot.arm': current value describes " +
      "'robot.leg'",
  );
  current = "echo" as never;
  await assertRejects(
    () => client.invoke("move"),
    TypeError,
    "Cannot invoke as 'descriptor' must be a ToolEndpointDescriptor or a function: current " +
      'value is "echo"',
  );
  // A thrown ToolEndpointError rejects as a ToolCallError, a plain error as SEND_FAILED.
  failure = new ToolEndpointError(
    new ToolError({ code: "FORGE_ENDPOINT_UNAVAILABLE", message: "gone", retryable: true }),
  );
  const unavailable = await assertRejects(() => client.query("echo"), ToolCallError);
  assertEquals(
    [unavailable.error.code, unavailable.retryable, unavailable.outcome],
    ["FORGE_ENDPOINT_UNAVAILABLE", true, "not_sent"],
  );
  failure = new Error("registry down");
  const broken = await assertRejects(() => client.invoke("move"), ToolClientError);
  assertEquals(
    [broken.code, broken.outcome, broken.message],
    [
      "FORGE_CLIENT_SEND_FAILED",
      "not_sent",
      "FORGE_CLIENT_SEND_FAILED: the descriptor of 'robot.arm' could not be resolved: " +
      "Error: registry down",
    ],
  );
  assertEquals([reads, client.stats.sent], [8, 2]);
  await client.close();
});

Deno.test("client: without a descriptor, a query answered with an acceptance cancels the Action it started", async () => {
  const arm = armEndpoint();
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: ENDPOINT,
  });
  const error = await assertRejects(
    () =>
      client.query("move", { steps: 100_000, stepMs: 5 }, {
        invocationId: "inv-q",
        attemptId: "att-q",
      }),
    ToolClientError,
  );
  assertEquals(
    [error.code, error.exchange, error.invocationId, error.attemptId],
    ["FORGE_CLIENT_UNEXPECTED_RESPONSE", "invoke", "inv-q", "att-q"],
  );
  assertEquals(
    error.message,
    "FORGE_CLIENT_UNEXPECTED_RESPONSE: operation 'move' was accepted as an Action or Session " +
      "(invocation_id=inv-q attempt_id=att-q); the client sent cancel at once, answered " +
      "accepted; use invoke()",
  );
  assertEquals(arm.move.calls.control, 1);
  // The execution ends (its permit is given back) without anybody holding a handle.
  const [execution] = arm.move.executions.values();
  while (execution.result === undefined) await new Promise((r) => setTimeout(r, 1));
  assertEquals(execution.result.status, "cancelled");
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: without a descriptor, a query answered with an acceptance stops the Session it started", async () => {
  const arm = armEndpoint();
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: ENDPOINT,
  });
  const error = await assertRejects(
    () => client.query("watch", { steps: 100_000, stepMs: 5 }),
    ToolClientError,
  );
  assertEquals(error.code, "FORGE_CLIENT_UNEXPECTED_RESPONSE");
  assert(error.message.includes("the client sent stop at once, answered accepted"), error.message);
  assertEquals(arm.watch.calls.control, 1, "cancel was unsupported, then stop");
  const [execution] = arm.watch.executions.values();
  while (execution.result === undefined) await new Promise((r) => setTimeout(r, 1));
  assertEquals(execution.result.status, "stopped");
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

// --- Options -------------------------------------------------------------------------------------

Deno.test("client: option errors name the option and show the value", () => {
  const arm = armEndpoint();
  const transport = new InProcessToolClientTransport(arm.handler);
  const make = (options: ClientOptions) => () =>
    new ToolEndpointClient({ transport, endpointId: ENDPOINT, ...options });
  assertEquals(
    assertThrows(make({ timeoutMs: 0 }), RangeError).message,
    "Cannot create a ToolEndpointClient as 'timeoutMs' must be a positive integer: current value is 0",
  );
  assertEquals(
    assertThrows(make({ maxAttempts: 1.5 }), RangeError).message,
    "Cannot create a ToolEndpointClient as 'maxAttempts' must be a positive integer: current value is 1.5",
  );
  assertEquals(
    assertThrows(make({ maxBufferedEvents: -1 }), RangeError).message,
    "Cannot create a ToolEndpointClient as 'maxBufferedEvents' must be a positive integer: current value is -1",
  );
  assertEquals(
    assertThrows(make({ endpointInstanceId: " " }), TypeError).message,
    "Cannot create a ToolEndpointClient as 'endpointInstanceId' must be a non-empty string: current value is \" \"",
  );
  assertThrows(
    () => new ToolEndpointClient({ transport, endpointId: "other", descriptor: DESCRIPTOR }),
    RangeError,
  );
  assertThrows(
    () => new ToolEndpointClient({ transport: {} as ToolClientTransport, endpointId: ENDPOINT }),
    TypeError,
  );
});

Deno.test("client: a call's timeoutMs is checked like the client's", async () => {
  const { client } = inProcess();
  const error = await assertRejects(() => client.query("echo", {}, { timeoutMs: 0 }), RangeError);
  assertEquals(
    error.message,
    "Cannot query as 'timeoutMs' must be a positive integer: current value is 0",
  );
  await client.close();
});

// --- Lost messages, timeouts, re-sends -------------------------------------------------------------

Deno.test("client: an unanswered Query is sent once and fails with outcome unknown", async () => {
  const { arm, client, transport } = lossy();
  transport.dropResponse = () => true;
  const error = await assertRejects(
    () => client.query("echo", {}, { requestId: "q-1" }),
    ToolClientError,
  );
  assertEquals(
    [error.code, error.exchange, error.outcome, error.attempts],
    ["FORGE_CLIENT_TIMEOUT", "invoke", "unknown", 1],
  );
  assertEquals(transport.requests.length, 1, "an invoke is never re-sent blindly");
  assertEquals(arm.echoCalls.count, 1);
  await client.close();
});

Deno.test("client: resendInvoke re-sends a lost Query with the same ids", async () => {
  const { client, transport } = lossy();
  let lost = 2;
  transport.dropRequest = () => lost-- > 0;
  const result = await client.query("echo", { n: 1 }, { resendInvoke: true });
  assertEquals(result.status, "succeeded");
  assertEquals(transport.requests.length, 3);
  assertEquals(new Set(transport.requests.map((r) => r.requestId)).size, 1);
  assertEquals(new Set(transport.requests.map((r) => r.invocationId)).size, 1);
  assertEquals(client.stats.resent, 2);
  await client.close();
});

Deno.test("client: a lost status answer is re-sent with the same request id, up to maxAttempts", async () => {
  const { arm, client, transport } = lossy({ maxAttempts: 3 });
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
  let lost = 2;
  transport.dropResponse = (m) => m.messageType === "tool.status.response" && lost-- > 0;
  assertEquals((await move.status()).phase, "running");
  const statusRequests = transport.requests.filter((r) => r.messageType === "tool.status.request");
  assertEquals(statusRequests.length, 3);
  assertEquals(new Set(statusRequests.map((r) => r.requestId)).size, 1);
  // Always lost: the exchange fails with a timeout naming it.
  transport.dropResponse = (m) => m.messageType === "tool.status.response";
  const error = await assertRejects(() => move.status(), ToolClientError);
  assertEquals(
    [error.code, error.exchange, error.attempts, error.outcome],
    ["FORGE_CLIENT_TIMEOUT", "status", 3, undefined],
  );
  assertEquals(error.invocationId, move.key.invocationId);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: a lost invoke answer is recovered by asking the result (admitted)", async () => {
  const { arm, client, transport } = lossy();
  transport.dropResponse = (m) => m.messageType === "tool.invoke.response";
  const move = await client.invoke("move", { steps: 2 });
  assertEquals(move.acceptance, undefined);
  assertEquals((await move.result()).status, "succeeded");
  assertEquals(arm.move.calls.start, 1);
  assertEquals(
    transport.requests.filter((r) => r.messageType === "tool.invoke.request").length,
    1,
  );
  await client.close();
});

Deno.test("client: a lost invoke request is reported as not admitted", async () => {
  const { arm, client, transport } = lossy();
  transport.dropRequest = (r) => r.messageType === "tool.invoke.request";
  const error = await assertRejects(() => client.invoke("move", { steps: 2 }), ToolClientError);
  assertEquals(
    [error.code, error.exchange, error.outcome],
    ["FORGE_CLIENT_TIMEOUT", "invoke", "not_admitted"],
  );
  assertEquals(arm.move.calls.start, 0);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
});

Deno.test("client: a lost terminal event is recovered by polling the result", async () => {
  const { client, transport } = lossy({ pollIntervalMs: 5, maxPollIntervalMs: 20 });
  transport.dropResponse = (m) =>
    m.messageType === "tool.event" && m.payload.type === "executor_completed";
  const move = await client.invoke("move", { steps: 2 });
  const records = await collect(move);
  assertEquals(summary(records), ["0:progress", "1:progress"]);
  assertEquals((await move.result()).status, "succeeded");
  await client.close();
});

Deno.test("client: a send failure fails the call at once with FORGE_CLIENT_SEND_FAILED", async () => {
  const arm = armEndpoint();
  const client = new ToolEndpointClient({
    transport: {
      connect: () => {},
      send: () => Promise.reject(new Error("link down")),
    },
    endpointId: ENDPOINT,
    endpointInstanceId: INSTANCE,
  });
  const error = await assertRejects(() => client.query("echo", {}), ToolClientError);
  assertEquals([error.code, error.outcome], ["FORGE_CLIENT_SEND_FAILED", "not_sent"]);
  // The reason is in the message, not only in `cause`.
  assertEquals(
    error.message,
    "FORGE_CLIENT_SEND_FAILED: the invoke request could not be sent: Error: link down",
  );
  assertEquals((error.cause as Error).message, "link down");
  assertEquals(client.stats.pendingExchanges, 0);
  await client.close();
  await arm.handler.close({ graceMs: 10 });
});

Deno.test("client: a request for another instance is refused by the in-process handler", async () => {
  const arm = armEndpoint();
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: ENDPOINT,
    endpointInstanceId: "arm-2",
  });
  const error = await assertRejects(() => client.query("echo", {}), ToolClientError);
  assertEquals([error.code, error.retryable, error.outcome], [
    "FORGE_CLIENT_UNANSWERED",
    false,
    "not_admitted",
  ]);
  assertEquals(
    error.message,
    "FORGE_CLIENT_UNANSWERED: the endpoint handler refused the tool.invoke.request without " +
      "answering: FORGE_PROTOCOL_ROUTE_MISMATCH: request targets endpoint instance 'arm-2', " +
      "expected 'arm-1' (at endpoint_instance_id)",
  );
  await client.close();
});

// --- Bounds --------------------------------------------------------------------------------------

Deno.test("client: maxPendingExchanges refuses the next call without sending", async () => {
  const { client } = inProcess({ maxPendingExchanges: 2 });
  const a = client.query("echo", { delayMs: 20 });
  const b = client.query("echo", { delayMs: 20 });
  const error = await assertRejects(() => client.query("echo", {}), ToolClientError);
  assertEquals([error.code, error.outcome], ["FORGE_CLIENT_OVERLOADED", "not_sent"]);
  await Promise.all([a, b]);
  assertEquals(client.stats.sent, 2);
  await client.close();
});

Deno.test("client: maxOpenInvocations refuses the next invoke without sending", async () => {
  const { arm, client } = inProcess({ maxOpenInvocations: 1 });
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
  const error = await assertRejects(() => client.invoke("move", {}), ToolClientError);
  assertEquals(error.code, "FORGE_CLIENT_OVERLOADED");
  await move.cancel();
  await move.result();
  await client.invoke("move", { steps: 1 }).then((m) => m.result());
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: a reader that never reads keeps at most maxBufferedEvents events", async () => {
  const { client } = inProcess({ maxBufferedEvents: 4 });
  const move = await client.invoke("move", { steps: 20 });
  await move.result();
  const records = await collect(move);
  assertEquals(records.length, 4);
  assertEquals(move.droppedEvents, 17);
  assertEquals(records.map((r) => r.sequence), [17, 18, 19, 20]);
  assertEquals(records.at(-1)?.event.type, "executor_completed");
  await client.close();
});

Deno.test("client: result() asks at once, so an execution over without events settles without waiting a poll interval", async () => {
  const { client, transport } = lossy({ pollIntervalMs: 60_000, timeoutMs: 1000 });
  transport.dropResponse = (m) => m.messageType === "tool.event";
  const move = await client.invoke("move", { steps: 0 });
  const waiting = move.result();
  await new Promise((resolve) => setTimeout(resolve, 0));
  assertEquals(
    transport.requests.filter((r) => r.messageType === "tool.result.request").length,
    1,
    "the first result request goes out without waiting for the poll interval",
  );
  assertEquals((await waiting).status, "succeeded");
  await client.close();
});

Deno.test("client: a short exchange times out on time even while a long one is pending", async () => {
  const { client, transport } = lossy();
  transport.dropResponse = () => true;
  const long = client.query("echo", {}, { timeoutMs: 60_000 });
  const short = await assertRejects(
    () => client.query("echo", {}, { timeoutMs: 20 }),
    ToolClientError,
  );
  assertEquals([short.code, short.exchange], ["FORGE_CLIENT_TIMEOUT", "invoke"]);
  assertEquals(client.stats.pendingExchanges, 1);
  await client.close();
  assertEquals((await assertRejects(() => long, ToolClientError)).code, "FORGE_CLIENT_CLOSED");
});

Deno.test("client: close() right after an abort lets the cancel it sent finish", async () => {
  const arm = armEndpoint();
  const log = recordingLogger();
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
    logger: log.logger,
  });
  const controller = new AbortController();
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 }, {
    signal: controller.signal,
  });
  controller.abort();
  await client.close();
  // Any failure of the background cancel is reported within microtasks: flush them all.
  await new Promise((resolve) => setTimeout(resolve, 0));
  assertEquals(log.records, []);
  assertEquals(arm.move.calls.control, 1);
  await assertRejects(() => move.result());
  await arm.handler.close({ graceMs: 100 });
});

// --- Instance resolution (the gateway contract) ---------------------------------------------------

Deno.test("client: the instance is resolved at invoke time and pinned for the execution", async () => {
  const arm = armEndpoint();
  const inner = new InProcessToolClientTransport(arm.handler);
  const transport = new LossyTransport(inner);
  const asked: string[] = [];
  // An asynchronous resolver, as a gateway's Registry lookup.
  transport.resolveInstance = (endpointId: string) => {
    asked.push(endpointId);
    return Promise.resolve(INSTANCE);
  };
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
  });
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
  assertEquals(asked, [ENDPOINT]);
  assertEquals(move.endpointInstanceId, INSTANCE);
  await move.status();
  await move.cancel();
  await move.result();
  assertEquals(asked, [ENDPOINT], "status, control and result reuse the pinned instance");
  assertEquals(
    new Set(transport.requests.map((request) => request.endpointInstanceId)),
    new Set([INSTANCE]),
  );
  await client.close();
});

Deno.test("client: an unavailable endpoint from resolveInstance rejects the call, nothing sent", async () => {
  const unavailable = new ToolEndpointError(
    new ToolError({ code: "FORGE_ENDPOINT_UNAVAILABLE", message: "no instance of robot.arm" }),
  );
  const sent: ToolEnvelope[] = [];
  const client = new ToolEndpointClient({
    transport: {
      connect: () => {},
      send: (request) => void sent.push(request),
      resolveInstance: () => {
        throw unavailable;
      },
    },
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
  });
  // A bare ToolEndpointError from the resolver joins the client's family, nothing sent.
  for (const call of [() => client.query("echo", {}), () => client.invoke("move", {})]) {
    const error = await assertRejects(call, ToolCallError);
    assertEquals([error.code, error.kind, error.outcome, error.exchange], [
      "FORGE_ENDPOINT_UNAVAILABLE",
      "error",
      "not_sent",
      "invoke",
    ]);
    assertStrictEquals(error.cause, unavailable);
  }
  assertEquals([sent.length, client.stats.openInvocations], [0, 0]);
  await client.close();
});

Deno.test("client: abort while the invoke waits rejects it and still sends cancel", async () => {
  const { arm, client, transport } = lossy({ timeoutMs: 60_000 });
  transport.dropResponse = (m) => m.messageType === "tool.invoke.response";
  const controller = new AbortController();
  const reason = new Error("give up");
  const invoking = client.invoke("move", { steps: 100_000, stepMs: 5 }, {
    signal: controller.signal,
  });
  while (arm.move.calls.start === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  controller.abort(reason);
  assertStrictEquals(await assertRejects(() => invoking), reason);
  await client.close();
  assertEquals(arm.move.calls.control, 1, "the admitted execution was told to cancel");
  assertEquals(client.stats.openInvocations, 0);
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: a bad call option opens nothing and sends nothing", async () => {
  const { client } = inProcess();
  const error = await assertRejects(() => client.invoke("move", {}, { timeoutMs: -5 }), RangeError);
  assertEquals(
    error.message,
    "Cannot invoke as 'timeoutMs' must be a positive integer: current value is -5",
  );
  await assertRejects(
    () => client.invoke("move", {}, null as unknown as Record<string, never>),
    TypeError,
  );
  assertEquals([client.stats.openInvocations, client.stats.sent], [0, 0]);
  await client.close();
});

Deno.test("client: settled invocations waiting for late events give way at maxOpenInvocations", async () => {
  const { client, transport } = lossy({ maxOpenInvocations: 2, reorderWindowMs: 60_000 });
  transport.dropResponse = (m) => m.messageType === "tool.event";
  const handles: ToolInvocation[] = [];
  for (let i = 0; i < 5; i++) {
    const move = await client.invoke("move", { steps: 0 });
    assertEquals((await move.result()).status, "succeeded");
    handles.push(move);
  }
  assertEquals(client.stats.openInvocations, 2);
  // The ones that gave way ended their streams; the last two still wait for late events.
  assertEquals(await collect(handles[0]), []);
  await client.close();
});

Deno.test("client: an unknown outcome is a terminal result, returned once and never retried", async () => {
  const unknown = new ToolResult({
    status: "unknown",
    error: new ToolError({
      code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
      message: "lost",
      retryable: true,
    }),
  });
  let calls = 0;
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: ENDPOINT,
      operations: [new ToolOperationDescriptor({ name: "echo", semantics: "query" })],
    }),
    { endpointInstanceId: INSTANCE, operations: { echo: { query: () => (calls++, unknown) } } },
  );
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(handler),
    endpointId: ENDPOINT,
    maxAttempts: 5,
  });
  const result = await client.query("echo", {}, { resendInvoke: true });
  assertEquals([result.status, result.error?.code], ["unknown", "FORGE_ENDPOINT_OUTCOME_UNKNOWN"]);
  assertEquals([calls, client.stats.sent, client.stats.resent], [1, 1, 0]);
  await client.close();
});

// --- Deadlines -----------------------------------------------------------------------------------

Deno.test("client: a Query stops waiting at its deadline, not after its own attempts", async () => {
  const { client, transport } = lossy({ timeoutMs: 5_000, maxAttempts: 3 });
  transport.dropResponse = () => true;
  const deadlineMs = Date.now() + 20;
  const error = await assertRejects(
    () => client.query("echo", {}, { deadlineMs, resendInvoke: true, requestId: "q-d" }),
    ToolClientError,
  );
  assertEquals(
    [error.code, error.exchange, error.outcome, error.attempts],
    ["FORGE_CLIENT_DEADLINE_EXCEEDED", "invoke", "unknown", 1],
  );
  assertEquals(
    error.message,
    `FORGE_CLIENT_DEADLINE_EXCEEDED: the invoke request (request_id=q-d) got no answer by the ` +
      `call's deadline (deadline_ms=${deadlineMs}) after 1 attempt(s)`,
  );
  assertEquals(client.stats.pendingExchanges, 0);
  await client.close();
});

Deno.test("client: an Action invoke unanswered at its deadline rejects without a lookup", async () => {
  const { arm, client, transport } = lossy({ timeoutMs: 5_000 });
  transport.dropResponse = (m) => m.messageType === "tool.invoke.response";
  const error = await assertRejects(
    () => client.invoke("move", { steps: 1 }, { deadlineMs: Date.now() + 20 }),
    ToolClientError,
  );
  assertEquals(
    [error.code, error.exchange, error.outcome],
    ["FORGE_CLIENT_DEADLINE_EXCEEDED", "invoke", "unknown"],
  );
  assertEquals(transport.requests.map((r) => r.messageType), ["tool.invoke.request"]);
  assertEquals(client.stats.openInvocations, 0);
  await client.close();
  await arm.handler.close({ graceMs: 100 });
});

Deno.test("client: a deadline already past sends nothing", async () => {
  const { client, transport } = lossy();
  const error = await assertRejects(
    () => client.query("echo", {}, { deadlineMs: Date.now() - 1 }),
    ToolClientError,
  );
  assertEquals([error.code, error.outcome], ["FORGE_CLIENT_DEADLINE_EXCEEDED", "not_sent"]);
  assertEquals(transport.requests.length, 0);
  await client.close();
});

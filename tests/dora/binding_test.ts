// DoraToolEndpointBinding: the reference's test_dora.py (24 tests, E4 @270b187) in order, then
// the route-trust, publication-barrier and fallback cases the port adds.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertLessOrEqual,
  assertRejects,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import { delay } from "@std/async";
import { makeData, makeVector, RecordBatch, Struct, Table, Utf8 } from "apache-arrow";
import {
  type QueryToolEndpoint,
  ToolAccepted,
  type ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolError,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionStatus,
  type ToolLogger,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  encodedEnvelopeSize,
  encodeEnvelope,
  invokeResponseFromPayload,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  statusResponseFromPayload,
  ToolEnvelope,
  ToolProtocolError,
  type ToolSemantics,
  validateResponseCorrelation,
} from "../../wire.ts";
import {
  DoraToolEndpointBinding,
  type DoraToolEndpointBindingOptions,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  TOOL_MESSAGE_SCHEMA,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../../dora.ts";
import {
  assertProtocolError,
  CODES,
  context,
  PROTOCOL,
  recordingLogger,
  silentLogger,
} from "../_helpers.ts";
import { echoArguments, FakeQuery } from "../handler/_fakes.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures of the reference test module

/** `_request()`: an invoke of vision.yolo/detect for instance-1 (370 bytes encoded). */
function request(
  args: Record<string, unknown> = { class: "cube" },
  options: { callerId?: string; endpointId?: string } = {},
): ToolEnvelope {
  const ctx = context(options.endpointId ?? "vision.yolo", "detect", {
    callerId: options.callerId,
  });
  return makeInvokeRequestEnvelope(new ToolRequest({ arguments: args }), ctx, {
    requestId: "request-1",
    endpointInstanceId: "instance-1",
  });
}

function descriptor(endpointId: string, name: string, semantics: ToolSemantics) {
  return new ToolEndpointDescriptor({
    protocolVersion: PROTOCOL,
    endpointId,
    operations: [
      new ToolOperationDescriptor({
        name,
        semantics,
        cancellable: semantics === "action",
        stoppable: semantics === "session",
        statusSupported: semantics !== "query",
      }),
    ],
  });
}

const echoQuery = () => new FakeQuery(echoArguments);
const oversizedQuery = () =>
  new FakeQuery(new ToolResult({ status: "succeeded", outputs: { text: "x".repeat(2048) } }));
const raisingQuery: QueryToolEndpoint = {
  query(): ToolResult {
    throw new Error("endpoint bug");
  },
};

/** A handler whose invoke answers a response with an invalid typed payload. */
class InvalidResponseHandler extends ToolEndpointHandler {
  override handleInvoke(invoke: ToolEnvelope): Promise<ToolEnvelope> {
    return Promise.resolve(
      new ToolEnvelope({
        messageType: "tool.invoke.response",
        requestId: invoke.requestId,
        invocationId: invoke.invocationId,
        attemptId: invoke.attemptId,
        endpointId: invoke.endpointId,
        endpointInstanceId: invoke.endpointInstanceId,
        operation: invoke.operation,
        payload: { ["x".repeat(5000)]: true },
      }),
    );
  }
}

function queryHandler(
  query: QueryToolEndpoint = echoQuery(),
  logger: ToolLogger = silentLogger,
): ToolEndpointHandler {
  return new ToolEndpointHandler(descriptor("vision.yolo", "detect", "query"), {
    endpointInstanceId: "instance-1",
    logger,
    operations: { detect: query },
  });
}

/** DoraAction / DoraSession: start stores the emitter and may emit one early progress. */
class StartProvider {
  startCalls = 0;
  emitter: ToolEventEmitter | undefined;
  constructor(readonly earlyData: Record<string, unknown> | undefined = undefined) {}
  async start(
    _request: ToolRequest,
    _context: ToolContext,
    events: ToolEventEmitter,
  ): Promise<ToolAccepted> {
    this.startCalls++;
    this.emitter = events;
    if (this.earlyData !== undefined) {
      await events.emit(new ToolEvent({ type: "progress", data: this.earlyData }));
    }
    return new ToolAccepted();
  }
  cancel(): ToolControlResponse {
    return new ToolControlResponse({ command: "cancel", status: "unsupported" });
  }
  stop(): ToolControlResponse {
    return new ToolControlResponse({ command: "stop", status: "unsupported" });
  }
  status(): ToolExecutionStatus {
    return new ToolExecutionStatus({ phase: "running" });
  }
  result(): ToolResultResponse {
    return new ToolResultResponse({ status: "pending" });
  }
}

const EARLY = { fraction: 0.5 };

function actionSetup(earlyData?: Record<string, unknown>, logger: ToolLogger = silentLogger) {
  const provider = new StartProvider(earlyData);
  const handler = new ToolEndpointHandler(descriptor("motion.arm", "move", "action"), {
    endpointInstanceId: "instance-1",
    logger,
    operations: { move: provider },
  });
  const ctx = context("motion.arm", "move", {
    invocationId: "action-invocation-1",
    toolId: "forge.tool.move",
    implementationId: "arm",
  });
  const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), ctx, {
    requestId: "action-request-1",
    endpointInstanceId: "instance-1",
  });
  return { provider, handler, ctx, invoke };
}

function sessionSetup(earlyData?: Record<string, unknown>) {
  const provider = new StartProvider(earlyData);
  const handler = new ToolEndpointHandler(descriptor("policy.runner", "serve", "session"), {
    endpointInstanceId: "instance-1",
    logger: silentLogger,
    operations: { serve: provider },
  });
  const ctx = context("policy.runner", "serve", {
    invocationId: "session-invocation-1",
    toolId: "forge.tool.policy",
    implementationId: "policy",
  });
  const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), ctx, {
    requestId: "session-request-1",
    endpointInstanceId: "instance-1",
  });
  return { provider, handler, ctx, invoke };
}

/** A sink that decodes and keeps everything published. */
function collectingSink() {
  const published: ToolEnvelope[] = [];
  const sink = (batch: RecordBatch) => {
    published.push(toolMessageToEnvelope(batch));
  };
  return { published, sink };
}

function binding(
  handler: ToolEndpointHandler,
  options: DoraToolEndpointBindingOptions = {},
): DoraToolEndpointBinding {
  return new DoraToolEndpointBinding(handler, { logger: silentLogger, ...options });
}

/** A carrier whose payload_json column is replaced (no validation on the way). */
function withPayloadJson(envelope: ToolEnvelope, payloadJson: string): RecordBatch {
  const batch = toolEnvelopeToMessage(envelope);
  const bytes = new TextEncoder().encode(payloadJson);
  const children = [...batch.data.children];
  children[9] = makeData({
    type: new Utf8(),
    length: 1,
    nullCount: 0,
    valueOffsets: new Int32Array([0, bytes.length]),
    data: bytes,
  });
  return new RecordBatch(
    batch.schema,
    makeData({ type: new Struct(batch.schema.fields), length: 1, nullCount: 0, children }),
  );
}

function decodeError(batch: RecordBatch): ToolError {
  const envelope = toolMessageToEnvelope(batch);
  assertStrictEquals(envelope.messageType, "tool.error");
  const error = envelope.payload.error as Record<string, unknown>;
  return new ToolError({
    code: error.code as string,
    message: error.message as string,
    retryable: error.retryable as boolean,
    details: error.details as object,
  });
}

// ---------------------------------------------------------------------------------------------
// test_dora.py

Deno.test("1 tool message and envelope conversion round trip", () => {
  const event = new ToolEnvelope({
    messageType: "tool.event",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
    operation: "detect",
    sequence: 0,
    payload: { type: "progress", data: { fraction: 0.5 } },
  });
  const unresolved = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context(), {
    requestId: "unresolved-1",
    endpointInstanceId: undefined,
  });
  for (const envelope of [request(), event, unresolved]) {
    const message = toolEnvelopeToMessage(envelope);
    assertEquals(message.schema.fields, TOOL_MESSAGE_SCHEMA.fields);
    assertEquals(toolMessageToEnvelope(message), envelope);
  }
});

Deno.test("2 dora binding rejects IPC bytes for bounded upstream decode", async () => {
  const query = echoQuery();
  const bytes = encodeToolMessageIpc(toolEnvelopeToMessage(request()));
  for (const value of [bytes, bytes.slice().buffer, new DataView(bytes.buffer)]) {
    await assertRejects(
      () => binding(queryHandler(query)).handleInput(value as never),
      TypeError,
      "does not accept IPC bytes",
    );
    await assertRejects(
      () => binding(queryHandler(query)).dispatchInput(value as never),
      TypeError,
      "does not accept IPC bytes",
    );
  }
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("3 dora binding handles one query record batch", async () => {
  const query = echoQuery();
  const response = await binding(queryHandler(query)).handleInput(
    toolEnvelopeToMessage(request()),
  );
  assertEquals(response.schema.fields, TOOL_MESSAGE_SCHEMA.fields);
  const envelope = toolMessageToEnvelope(response);
  validateResponseCorrelation(request(), envelope);
  assertEquals(
    invokeResponseFromPayload(envelope.payload),
    new ToolResult({ status: "succeeded", outputs: { arguments: { class: "cube" } } }),
  );
  assertStrictEquals(query.calls.length, 1);
});

async function acceptedBeforeEarlyEvent(setup: typeof actionSetup) {
  const { handler, invoke } = setup(EARLY);
  const { published, sink } = collectingSink();
  const returned = await binding(handler, { eventSink: sink }).dispatchInput(
    toolEnvelopeToMessage(invoke),
  );
  assertEquals(returned, []);
  assertEquals(published.map((envelope) => envelope.messageType), [
    "tool.invoke.response",
    "tool.event",
  ]);
  assertEquals(invokeResponseFromPayload(published[0].payload), new ToolAccepted());
  validateResponseCorrelation(invoke, published[0]);
  assertEquals(published[1].payload, { type: "progress", data: EARLY });
  assertStrictEquals(published[1].sequence, 0);
}

Deno.test("4 dora dispatch returns accepted before early action event", () => {
  return acceptedBeforeEarlyEvent(actionSetup);
});

Deno.test("5 dora dispatch returns accepted before early session event", () => {
  return acceptedBeforeEarlyEvent(sessionSetup);
});

Deno.test("6 dora async event sink receives late action events", async () => {
  const { provider, handler, invoke } = actionSetup();
  const { published, sink } = collectingSink();
  const returned = await binding(handler, { eventSink: sink }).dispatchInput(
    toolEnvelopeToMessage(invoke),
  );
  assertEquals(returned, []);
  await provider.emitter!.emit(new ToolEvent({ type: "heartbeat" }));
  assertStrictEquals(published.length, 2);
  assertStrictEquals(published[0].messageType, "tool.invoke.response");
  assertStrictEquals(published[1].messageType, "tool.event");
  assertStrictEquals(published[1].sequence, 0);
  assertEquals(published[1].payload, { type: "heartbeat", data: {} });
});

Deno.test("7 dora action publish barrier blocks event until accepted is published", async () => {
  const { provider, handler, invoke } = actionSetup();
  const order: string[] = [];
  const responseSeen = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const sink = async (batch: RecordBatch) => {
    const envelope = toolMessageToEnvelope(batch);
    if (envelope.messageType === "tool.invoke.response") {
      responseSeen.resolve();
      await release.promise;
      order.push("accepted");
    } else {
      order.push(`event-${envelope.sequence}`);
    }
  };
  const dispatching = binding(handler, { eventSink: sink }).dispatchInput(
    toolEnvelopeToMessage(invoke),
  );
  await responseSeen.promise;
  const emitting = provider.emitter!.emit(new ToolEvent({ type: "heartbeat" }));
  await delay(0);
  assertEquals(order, []);
  release.resolve();
  assertEquals(await dispatching, []);
  await emitting;
  assertEquals(order, ["accepted", "event-0"]);
});

Deno.test("8 dora event sink serializes concurrent event sequences", async () => {
  const { provider, handler, invoke } = actionSetup();
  const sequences: number[] = [];
  const firstSeen = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const sink = async (batch: RecordBatch) => {
    const envelope = toolMessageToEnvelope(batch);
    if (envelope.messageType !== "tool.event") return;
    if (envelope.sequence === 0) {
      firstSeen.resolve();
      await release.promise;
    }
    sequences.push(envelope.sequence!);
  };
  assertEquals(
    await binding(handler, { eventSink: sink }).dispatchInput(toolEnvelopeToMessage(invoke)),
    [],
  );
  const first = provider.emitter!.emit(new ToolEvent({ type: "heartbeat" }));
  await firstSeen.promise;
  const second = provider.emitter!.emit(new ToolEvent({ type: "progress", data: EARLY }));
  await delay(0);
  assertEquals(sequences, []);
  release.resolve();
  await Promise.all([first, second]);
  assertEquals(sequences, [0, 1]);
});

Deno.test("9 dora event encoding failure does not publish correlated error", async () => {
  const recorder = recordingLogger();
  const { provider, handler, invoke } = actionSetup(undefined, recorder.logger);
  const { published, sink } = collectingSink();
  await binding(handler, { maxMessageBytes: 1024, eventSink: sink }).dispatchInput(
    toolEnvelopeToMessage(invoke),
  );
  const error = await assertRejects(
    () =>
      provider.emitter!.emit(
        new ToolEvent({ type: "progress", data: { payload: "x".repeat(2000) } }),
      ),
    ToolProtocolError,
    "exceeds limit",
  );
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assertEquals(published.map((envelope) => envelope.messageType), ["tool.invoke.response"]);
  assertEquals(recorder.events(), ["error event.sink_failed"]);
  assertStrictEquals(recorder.records[0].error, error);
});

Deno.test("10 dora early event encoding failure still publishes accepted first", async () => {
  const { handler, invoke } = actionSetup({ payload: "x".repeat(2000) });
  const { published, sink } = collectingSink();
  const error = await assertRejects(
    () =>
      binding(handler, { maxMessageBytes: 1024, eventSink: sink }).dispatchInput(
        toolEnvelopeToMessage(invoke),
      ),
    ToolProtocolError,
    "exceeds limit",
  );
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assertEquals(published.map((envelope) => envelope.messageType), ["tool.invoke.response"]);
  assertEquals(invokeResponseFromPayload(published[0].payload), new ToolAccepted());
});

Deno.test("11 dora legacy handle input rejects action without starting it", async () => {
  const { provider, handler, invoke } = actionSetup();
  await assertRejects(
    () => binding(handler).handleInput(toolEnvelopeToMessage(invoke)),
    TypeError,
    "Query-only",
  );
  assertStrictEquals(provider.startCalls, 0);
});

Deno.test("12 dora binding accepts a single batch table", async () => {
  const response = await binding(queryHandler()).handleInput(
    new Table(toolEnvelopeToMessage(request())),
  );
  validateResponseCorrelation(request(), toolMessageToEnvelope(response));
});

Deno.test("13 dora binding returns a correlated error for invalid typed payload", async () => {
  const query = echoQuery();
  const response = await binding(queryHandler(query)).handleInput(
    withPayloadJson(request(), "{}"),
  );
  const envelope = toolMessageToEnvelope(response);
  validateResponseCorrelation(request(), envelope);
  const error = decodeError(response);
  assertStrictEquals(error.code, CODES.INVALID_PAYLOAD);
  assertStrictEquals(error.retryable, false);
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("14 dora binding returns correlated error for oversized input", async () => {
  const query = echoQuery();
  const large = request({ text: "x".repeat(300) });
  assertStrictEquals(encodedEnvelopeSize(large), 665);
  const response = await binding(queryHandler(query), { maxMessageBytes: 1024 }).handleInput(
    toolEnvelopeToMessage(large),
  );
  validateResponseCorrelation(large, toolMessageToEnvelope(response));
  const error = decodeError(response);
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assertStrictEquals(error.message, "ToolEndpoint message exceeds the configured size limit");
  assertEquals(error.details, { max_message_bytes: 1024, max_request_bytes: 512 });
  assertStrictEquals(query.calls.length, 0);
});

/** The valid invoke's compact payload JSON followed by 2048 spaces. */
function paddedCarrier(): RecordBatch {
  const compact = toolEnvelopeToMessage(request()).getChild("payload_json")!.get(0) as string;
  return withPayloadJson(request(), compact + " ".repeat(2048));
}

Deno.test("15 dora binding rejects raw payload expansion before execution", async () => {
  const query = echoQuery();
  const error = await assertRejects(
    () =>
      binding(queryHandler(query), { maxMessageBytes: 1024, maxCarrierBytes: 10_000 })
        .handleInput(paddedCarrier()),
    ToolProtocolError,
  );
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assert(error.message.startsWith("payload_json size "), error.message);
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("16 dora binding rejects oversized carrier before execution", async () => {
  const query = echoQuery();
  const error = await assertRejects(
    () =>
      binding(queryHandler(query), { maxMessageBytes: 1024, maxCarrierBytes: 1024 })
        .handleInput(paddedCarrier()),
    ToolProtocolError,
  );
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assert(error.message.startsWith("Arrow carrier size "), error.message);
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("17 oversized request for another route remains uncorrelated", async () => {
  const query = echoQuery();
  const other = request({ text: "x".repeat(300) }, { endpointId: "vision.other" });
  const error = await assertRejects(
    () =>
      binding(queryHandler(query), { maxMessageBytes: 1024 }).handleInput(
        toolEnvelopeToMessage(other),
      ),
    ToolProtocolError,
  );
  assertStrictEquals(error.code, "FORGE_PROTOCOL_ROUTE_MISMATCH");
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("18 dora binding returns correlated error for oversized output", async () => {
  const response = await binding(queryHandler(oversizedQuery()), { maxMessageBytes: 1024 })
    .handleInput(toolEnvelopeToMessage(request()));
  validateResponseCorrelation(request(), toolMessageToEnvelope(response));
  const error = decodeError(response);
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assertEquals(error.details, { max_message_bytes: 1024 });
});

Deno.test("19 accepted request reserves headroom for oversized output error", async () => {
  const withCaller = request({ class: "cube" }, { callerId: "c".repeat(100) });
  const size = encodedEnvelopeSize(withCaller);
  assertStrictEquals(size, 485);
  const dora = binding(queryHandler(oversizedQuery()), { maxMessageBytes: 1024 });
  assert(400 < size && size <= dora.maxRequestBytes);
  const response = await dora.handleInput(toolEnvelopeToMessage(withCaller));
  const envelope = toolMessageToEnvelope(response);
  assertStrictEquals(decodeError(response).code, CODES.MESSAGE_TOO_LARGE);
  assertLessOrEqual(encodeEnvelope(envelope).length, 1024);
});

Deno.test("20 invalid response uses bounded protocol error message", async () => {
  const handler = new InvalidResponseHandler(descriptor("vision.yolo", "detect", "query"), {
    endpointInstanceId: "instance-1",
    operations: { detect: echoQuery() },
  });
  const response = await binding(handler, { maxMessageBytes: 1024 }).handleInput(
    toolEnvelopeToMessage(request()),
  );
  const envelope = toolMessageToEnvelope(response);
  validateResponseCorrelation(request(), envelope);
  assertLessOrEqual(encodeEnvelope(envelope).length, 1024);
  const error = decodeError(response);
  assertStrictEquals(error.code, CODES.INVALID_PAYLOAD);
  assertStrictEquals(error.message, "ToolEndpoint response violates the Wire protocol");
  assertEquals(error.details, {});
});

Deno.test("21 dora binding returns correlated error for endpoint exception", async () => {
  const recorder = recordingLogger();
  const log = recordingLogger();
  const response = await binding(queryHandler(raisingQuery, recorder.logger), {
    logger: log.logger,
  }).handleInput(toolEnvelopeToMessage(request()));
  validateResponseCorrelation(request(), toolMessageToEnvelope(response));
  const error = decodeError(response);
  assertStrictEquals(error.code, "FORGE_ENDPOINT_INTERNAL");
  assertStrictEquals(error.message, "endpoint failed to produce a valid response");
  assertStrictEquals(error.retryable, false);
  assertEquals(error.details, {});
  assertEquals(log.events(), ["error binding.dispatch_failed"]);
  assertStrictEquals(log.records[0].requestId, request().requestId);
  assertStrictEquals(log.records[0].invocationId, request().invocationId);
  assertStrictEquals((log.records[0].error as Error).message, "endpoint bug");
  // The handler records the provider's failure too, with the very error.
  assertEquals(recorder.events(), ["error provider.query_failed"]);
  assertStrictEquals(recorder.records[0].error, log.records[0].error);
});

Deno.test("22 conversion and binding validate max message bytes", () => {
  assertProtocolError(
    () => toolEnvelopeToMessage(request(), { maxMessageBytes: 1 }),
    CODES.MESSAGE_TOO_LARGE,
  );
  assertProtocolError(
    () => toolMessageToEnvelope(toolEnvelopeToMessage(request()), { maxMessageBytes: 1 }),
    CODES.MESSAGE_TOO_LARGE,
  );
  for (const bad of [0, -1, true]) {
    assertThrows(
      () => new DoraToolEndpointBinding(queryHandler(), { maxMessageBytes: bad as number }),
      RangeError,
      "Cannot create a DoraToolEndpointBinding as 'maxMessageBytes' must be a positive integer: " +
        `current value is ${bad}`,
    );
  }
  assertThrows(
    () => new DoraToolEndpointBinding(queryHandler(), { maxMessageBytes: 1023 }),
    RangeError,
    "Cannot create a DoraToolEndpointBinding as 'maxMessageBytes' must be at least 1024 for " +
      "correlated error responses: current value is 1023",
  );
  assertThrows(
    () =>
      new DoraToolEndpointBinding(queryHandler(), { maxMessageBytes: 1024, maxCarrierBytes: 1023 }),
    RangeError,
    "Cannot create a DoraToolEndpointBinding as 'maxCarrierBytes' must be at least " +
      "'maxMessageBytes' (1024): current value is 1023",
  );
  const dora = new DoraToolEndpointBinding(queryHandler(), { maxMessageBytes: 1024 });
  assertStrictEquals(dora.maxMessageBytes, 1024);
  assertStrictEquals(dora.maxRequestBytes, 512);
  assert(dora.maxCarrierBytes > dora.maxMessageBytes);
  assertStrictEquals(dora.maxCarrierBytes, 66_560);
});

Deno.test("23 dora binding rejects a non handler", () => {
  assertThrows(
    () => new DoraToolEndpointBinding({} as never),
    TypeError,
    "ToolEndpointHandler",
  );
});

Deno.test("24 conversion rejects the wrong model type", () => {
  assertThrows(
    () => toolMessageToEnvelope({} as never),
    TypeError,
    "RecordBatch, Table, or Struct vector",
  );
  assertThrows(() => toolEnvelopeToMessage({} as never), TypeError, "ToolEnvelope");
});

// ---------------------------------------------------------------------------------------------
// Beyond the reference module

Deno.test("the binding's defaults, getters and option checks", () => {
  const handler = queryHandler();
  const dora = new DoraToolEndpointBinding(handler);
  assertStrictEquals(dora.handler, handler);
  assertStrictEquals(dora.maxMessageBytes, 1_048_576);
  assertStrictEquals(dora.maxRequestBytes, 1_048_576 - 512);
  assertStrictEquals(dora.maxCarrierBytes, 1_048_576 + 65_536);
  assertStrictEquals(
    new DoraToolEndpointBinding(handler, { maxMessageBytes: 2048, maxCarrierBytes: 2048 })
      .maxCarrierBytes,
    2048,
  );
  for (const [bad, shown] of [[0, "0"], [-5, "-5"], [1.5, "1.5"], ["4096", '"4096"']]) {
    assertThrows(
      () => new DoraToolEndpointBinding(handler, { maxCarrierBytes: bad as number }),
      RangeError,
      "Cannot create a DoraToolEndpointBinding as 'maxCarrierBytes' must be a positive integer: " +
        `current value is ${shown}`,
    );
  }
  assertThrows(
    () => new DoraToolEndpointBinding(handler, { eventSink: "sink" as never }),
    TypeError,
    `Cannot create a DoraToolEndpointBinding as 'eventSink' must be a function: current value is "sink"`,
  );
  assertThrows(
    () => new DoraToolEndpointBinding(handler, { logger: 1 as never }),
    TypeError,
    "Cannot create a DoraToolEndpointBinding as 'logger' must be a function: current value is 1",
  );
});

Deno.test("dispatchInput returns Query, status, result and control responses in order", async () => {
  const query = echoQuery();
  const fromQuery = await binding(queryHandler(query)).dispatchInput(
    toolEnvelopeToMessage(request()),
  );
  assertStrictEquals(fromQuery.length, 1);
  validateResponseCorrelation(request(), toolMessageToEnvelope(fromQuery[0]));

  const { handler, ctx } = actionSetup();
  const { published, sink } = collectingSink();
  const status = makeStatusRequestEnvelope(ctx, {
    requestId: "status-1",
    endpointInstanceId: "instance-1",
  });
  const answered = await binding(handler, { eventSink: sink }).dispatchInput(
    makeVector(toolEnvelopeToMessage(status).data),
  );
  assertStrictEquals(answered.length, 1);
  const envelope = toolMessageToEnvelope(answered[0]);
  validateResponseCorrelation(status, envelope);
  assertEquals(
    statusResponseFromPayload(envelope.payload),
    new ToolExecutionStatus({ phase: "running" }),
  );
  // Nothing went through the sink.
  assertEquals(published, []);
});

Deno.test("an Action or Session invoke requires the event sink and starts nothing without it", async () => {
  for (const setup of [actionSetup, sessionSetup]) {
    const { provider, handler, invoke } = setup();
    await assertRejects(
      () => binding(handler).dispatchInput(toolEnvelopeToMessage(invoke)),
      Error,
      "Action or Session dispatch requires an asynchronous event_sink publisher",
    );
    assertStrictEquals(provider.startCalls, 0);
  }
});

Deno.test("input that is not trusted is raised, never answered", async () => {
  const query = echoQuery();
  const dora = binding(queryHandler(query));
  // Another endpoint instance.
  const otherInstance = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context(), {
    requestId: "request-1",
    endpointInstanceId: "instance-2",
  });
  const mismatch = await assertRejects(
    () => dora.dispatchInput(toolEnvelopeToMessage(otherInstance)),
    ToolProtocolError,
  );
  assertStrictEquals(mismatch.code, "FORGE_PROTOCOL_ROUTE_MISMATCH");
  // A carrier rule violation.
  await assertRejects(
    () => dora.dispatchInput(withPayloadJson(request(), "[]")),
    ToolProtocolError,
    "payload_json must be a JSON object",
  );
  // Not an execution request.
  const unregister = new ToolEnvelope({
    messageType: "endpoint.unregister",
    requestId: "unregister-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
  });
  const refused = await assertRejects(
    () => dora.dispatchInput(toolEnvelopeToMessage(unregister)),
    ToolProtocolError,
    "request envelope must be an execution request, found 'endpoint.unregister'",
  );
  assertStrictEquals(refused.code, CODES.UNKNOWN_MESSAGE_TYPE);
  // Not a carrier at all.
  await assertRejects(() => dora.dispatchInput({} as never), TypeError);
  // handleInput is invoke-only.
  const status = makeStatusRequestEnvelope(context(), {
    requestId: "status-1",
    endpointInstanceId: "instance-1",
  });
  await assertRejects(
    () => dora.handleInput(toolEnvelopeToMessage(status)),
    RangeError,
    "request envelope must be tool.invoke.request",
  );
  assertStrictEquals(query.calls.length, 0);
});

/** Runs `fn` and returns the ToolProtocolError it rejected with, as `code path message`. */
async function refusal(fn: () => Promise<unknown>): Promise<string> {
  const error = await assertRejects(fn, ToolProtocolError);
  return `${error.code} ${error.path} ${error.message}`;
}

Deno.test("the route is checked on the headers before payload_json is parsed", async () => {
  // Requests for another route whose payload_json is not even JSON: the refusal names the route,
  // so the payload was never parsed. The three entry points and both IPC decoders agree.
  const query = echoQuery();
  const dora = binding(queryHandler(query));
  const invoke = (instance: string | undefined, operation = "detect") =>
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("vision.yolo", operation),
      { requestId: "request-1", endpointInstanceId: instance },
    );
  const cases: [ToolEnvelope, string][] = [
    [
      invoke("instance-2"),
      "FORGE_PROTOCOL_ROUTE_MISMATCH endpoint_instance_id " +
      "request targets endpoint instance 'instance-2', expected 'instance-1'",
    ],
    [
      invoke(undefined),
      "FORGE_PROTOCOL_ROUTE_MISMATCH endpoint_instance_id " +
      "request targets endpoint instance None, expected 'instance-1'",
    ],
    [
      request({}, { endpointId: "vision.other" }),
      "FORGE_PROTOCOL_ROUTE_MISMATCH endpoint_id " +
      "request targets endpoint 'vision.other', expected 'vision.yolo'",
    ],
    [
      invoke("instance-1", "track"),
      "FORGE_PROTOCOL_UNKNOWN_OPERATION operation endpoint does not declare operation 'track'",
    ],
    [
      makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), request()),
      "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE message_type " +
      "request envelope must be an execution request, found 'tool.invoke.response'",
    ],
  ];
  for (const payloadJson of ["[", '{"a":1,"a":2}', "x".repeat(100_000)]) {
    for (const [envelope, expected] of cases) {
      const batch = withPayloadJson(envelope, payloadJson);
      const ipc = encodeToolMessageIpc(batch);
      assertEquals(await refusal(() => dora.dispatchInput(batch)), expected);
      assertEquals(await refusal(() => dora.handleInput(batch)), expected);
      assertEquals(await refusal(() => dora.dispatchIpc(ipc)), expected);
    }
  }
  // The header columns' own carrier rules still come first.
  const blankRequestId = toolEnvelopeToMessage(invoke("instance-2"));
  const children = [...blankRequestId.data.children];
  children[2] = makeData({
    type: new Utf8(),
    length: 1,
    nullCount: 0,
    valueOffsets: new Int32Array([0, 1]),
    data: new TextEncoder().encode(" "),
  });
  const badHeader = new RecordBatch(
    blankRequestId.schema,
    makeData({ type: new Struct(blankRequestId.schema.fields), length: 1, nullCount: 0, children }),
  );
  assertEquals(
    await refusal(() => dora.dispatchInput(badHeader)),
    "FORGE_PROTOCOL_INVALID_MESSAGE request_id request_id must be non-empty when present",
  );
  // A trusted request's payload is parsed as before.
  assertEquals(
    await refusal(() => dora.dispatchInput(withPayloadJson(request(), "["))),
    "FORGE_PROTOCOL_INVALID_JSON payload_json " +
      "payload_json must be valid strict JSON: Expecting value: line 1 column 2",
  );
  assertStrictEquals(query.calls.length, 0);
});

Deno.test("forged responses, events and endpoint messages on the request input are refused, never answered", async () => {
  const query = echoQuery();
  const published: unknown[] = [];
  const dora = binding(queryHandler(query), {
    eventSink: (batch) => void published.push(batch),
    ipcEventSink: (bytes) => void published.push(bytes),
  });
  const invoke = request();
  const forged: ToolEnvelope[] = [
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), invoke),
    makeStatusResponseEnvelope(
      new ToolExecutionStatus({ phase: "running" }),
      makeStatusRequestEnvelope(context(), {
        requestId: "status-1",
        endpointInstanceId: "instance-1",
      }),
    ),
    makeErrorResponseEnvelope(new ToolError({ code: "X", message: "y" }), invoke),
    makeEventEnvelope(new ToolEvent({ type: "heartbeat" }), context(), {
      endpointInstanceId: "instance-1",
      sequence: 0,
    }),
    new ToolEnvelope({
      messageType: "endpoint.unregister",
      requestId: "unregister-1",
      endpointId: "vision.yolo",
      endpointInstanceId: "instance-1",
    }),
    new ToolEnvelope({
      messageType: "endpoint.status",
      endpointId: "vision.yolo",
      endpointInstanceId: "instance-1",
      payload: { status: { state: "ready", active_invocations: 0, details: {} } },
    }),
  ];
  for (const envelope of forged) {
    const expected = "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE message_type " +
      `request envelope must be an execution request, found '${envelope.messageType}'`;
    const batch = toolEnvelopeToMessage(envelope);
    assertEquals(await refusal(() => dora.dispatchInput(batch)), expected);
    assertEquals(await refusal(() => dora.handleInput(batch)), expected);
    assertEquals(await refusal(() => dora.dispatchIpc(encodeToolEnvelopeIpc(envelope))), expected);
  }
  assertStrictEquals(query.calls.length, 0);
  assertEquals(published, []);
});

Deno.test("a request the handler refuses by throwing gets the internal fallback", async () => {
  const log = recordingLogger();
  // A status request on a Query operation: the handler raises UNSUPPORTED_OPERATION.
  const status = makeStatusRequestEnvelope(context(), {
    requestId: "status-1",
    endpointInstanceId: "instance-1",
  });
  const [response] = await binding(queryHandler(), {
    logger: log.logger,
  }).dispatchInput(toolEnvelopeToMessage(status));
  validateResponseCorrelation(status, toolMessageToEnvelope(response));
  assertStrictEquals(decodeError(response).code, "FORGE_ENDPOINT_INTERNAL");
  assertEquals(log.events(), ["error binding.dispatch_failed"]);
  assertStrictEquals(log.records[0].requestId, "status-1");
  assertInstanceOf(log.records[0].error, ToolProtocolError);
  assertStrictEquals(
    (log.records[0].error as ToolProtocolError).code,
    "FORGE_PROTOCOL_UNSUPPORTED_OPERATION",
  );
});

Deno.test("dispatchInput answers oversized requests with the correlated fallback", async () => {
  const { provider, handler, ctx } = actionSetup();
  const { published, sink } = collectingSink();
  const large = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { text: "x".repeat(600) } }),
    ctx,
    { requestId: "action-request-1", endpointInstanceId: "instance-1" },
  );
  const [response] = await binding(handler, { maxMessageBytes: 1024, eventSink: sink })
    .dispatchInput(toolEnvelopeToMessage(large));
  const error = decodeError(response);
  assertStrictEquals(error.code, CODES.MESSAGE_TOO_LARGE);
  assertEquals(error.details, { max_message_bytes: 1024, max_request_bytes: 512 });
  assertStrictEquals(provider.startCalls, 0);
  assertEquals(published, []);
});

Deno.test("a failed response publication fails later events without a second answer", async () => {
  const recorder = recordingLogger();
  const { provider, handler, invoke } = actionSetup(undefined, recorder.logger);
  const failure = new Error("output closed");
  const attempts: string[] = [];
  const sink = (batch: RecordBatch) => {
    attempts.push(toolMessageToEnvelope(batch).messageType);
    throw failure;
  };
  const error = await assertRejects(
    () => binding(handler, { eventSink: sink }).dispatchInput(toolEnvelopeToMessage(invoke)),
    Error,
  );
  assertStrictEquals(error, failure);
  // The caller never learned of the acceptance: the execution was abandoned (converged to
  // unknown), so a later event breaks its terminal state.
  const late = await assertRejects(
    () => provider.emitter!.emit(new ToolEvent({ type: "heartbeat" })),
    ToolProtocolError,
  );
  assertStrictEquals(late.code, "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL");
  assertEquals(attempts, ["tool.invoke.response"]);
  assertEquals(recorder.events(), ["warn execution.unknown", "warn event.after_terminal"]);
});

Deno.test("a late event emitted while the response is pending fails once publication fails", async () => {
  const recorder = recordingLogger();
  const { provider, handler, invoke } = actionSetup(undefined, recorder.logger);
  const responseSeen = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const failure = new Error("output closed");
  const published: string[] = [];
  const sink = async (batch: RecordBatch) => {
    const envelope = toolMessageToEnvelope(batch);
    if (envelope.messageType === "tool.invoke.response") {
      responseSeen.resolve();
      await release.promise;
      throw failure;
    }
    published.push(envelope.messageType);
  };
  const dispatching = binding(handler, { eventSink: sink }).dispatchInput(
    toolEnvelopeToMessage(invoke),
  );
  await responseSeen.promise;
  const emitting = provider.emitter!.emit(new ToolEvent({ type: "heartbeat" }));
  await delay(0); // the event is now waiting behind the response
  release.resolve();
  assertStrictEquals(await dispatching.catch((error) => error), failure);
  const late = await emitting.catch((error) => error);
  assertInstanceOf(late, Error);
  assertStrictEquals((late as Error).cause, failure);
  assertEquals(published, []);
  assertEquals(recorder.events(), ["warn execution.unknown", "error event.sink_failed"]);
});

Deno.test("early events are published in order before late ones", async () => {
  class ThreeEarlyEvents extends StartProvider {
    override async start(
      _request: ToolRequest,
      _context: ToolContext,
      events: ToolEventEmitter,
    ): Promise<ToolAccepted> {
      this.emitter = events;
      for (let i = 0; i < 3; i++) {
        await events.emit(new ToolEvent({ type: "progress", data: { step: i } }));
      }
      return new ToolAccepted();
    }
  }
  const provider = new ThreeEarlyEvents();
  const handler = new ToolEndpointHandler(descriptor("motion.arm", "move", "action"), {
    endpointInstanceId: "instance-1",
    operations: { move: provider },
  });
  const invoke = actionSetup().invoke;
  const sequences: (number | undefined)[] = [];
  const responseSeen = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const sink = async (batch: RecordBatch) => {
    const envelope = toolMessageToEnvelope(batch);
    if (envelope.messageType === "tool.invoke.response") {
      responseSeen.resolve();
      await release.promise;
      sequences.push(undefined);
    } else {
      sequences.push(envelope.sequence);
    }
  };
  const dispatching = binding(handler, { eventSink: sink }).dispatchInput(
    toolEnvelopeToMessage(invoke),
  );
  await responseSeen.promise;
  const late = provider.emitter!.emit(new ToolEvent({ type: "heartbeat" }));
  await delay(0); // the late event now waits at the barrier
  release.resolve();
  await dispatching;
  await late;
  assertEquals(sequences, [undefined, 0, 1, 2, 3]);
});

Deno.test("dispatchInput accepts a record batch, a table, a Struct vector and Struct data", async () => {
  const batch = toolEnvelopeToMessage(request());
  for (const value of [batch, new Table(batch), makeVector(batch.data), batch.data]) {
    const [response] = await binding(queryHandler()).dispatchInput(value);
    validateResponseCorrelation(request(), toolMessageToEnvelope(response));
  }
});

Deno.test("a late event racing the response publication waits for it, however it is timed", async () => {
  // The handler hands its messages back a timer turn after acceptance, and the provider emits
  // after `hops` microtask turns: across the runs the event arrives at the binding before the
  // response publication starts, while it is under way, and after it.
  class SlowReturningHandler extends ToolEndpointHandler {
    override async dispatch(
      envelope: ToolEnvelope,
      options?: Parameters<ToolEndpointHandler["dispatch"]>[1],
    ): Promise<readonly ToolEnvelope[]> {
      const messages = await super.dispatch(envelope, options);
      await delay(1);
      return messages;
    }
  }
  for (let hops = 0; hops < 12; hops++) {
    class RacingProvider extends StartProvider {
      emitted: Promise<void> | undefined;
      override start(
        _request: ToolRequest,
        _context: ToolContext,
        events: ToolEventEmitter,
      ): Promise<ToolAccepted> {
        let chain = Promise.resolve();
        for (let i = 0; i < hops; i++) chain = chain.then(() => {});
        this.emitted = chain.then(() => events.emit(new ToolEvent({ type: "heartbeat" })));
        return Promise.resolve(new ToolAccepted());
      }
    }
    const provider = new RacingProvider();
    const handler = new SlowReturningHandler(descriptor("motion.arm", "move", "action"), {
      endpointInstanceId: "instance-1",
      operations: { move: provider },
    });
    const { published, sink } = collectingSink();
    await binding(handler, { eventSink: sink }).dispatchInput(
      toolEnvelopeToMessage(actionSetup().invoke),
    );
    await provider.emitted;
    assertEquals(
      published.map((envelope) => envelope.messageType),
      ["tool.invoke.response", "tool.event"],
      `after ${hops} microtask turns`,
    );
  }
});

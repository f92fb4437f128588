// Port of the reference's tests/test_wire_factories.py (9 tests), with exact codes and paths.
// Stays whole (over 400 lines): the port keeps the reference file's tests together.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import {
  ToolAccepted,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolError,
  ToolEvent,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  controlResponseFromPayload,
  decodeEnvelope,
  encodeEnvelope,
  EndpointRegistryResponse,
  endpointRegistryResponseToPayload,
  EndpointStatus,
  makeControlRequestEnvelope,
  makeControlResponseEnvelope,
  makeEndpointRegistryResponseEnvelope,
  makeEndpointStatusEnvelope,
  makeErrorEnvelope,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  makeUnregisterEnvelope,
  ToolEnvelope,
  validateManagementResponseCorrelation,
  validateResponseCorrelation,
} from "../../wire.ts";
import { assertProtocolError, CODES, context, replaceEnvelope } from "../_helpers.ts";

function ctx(attemptId = "attempt-1") {
  return context("vision.yolo", "detect", { attemptId });
}

/** `null` stands for Python's `None` (an unresolved provider instance). */
function invokeRequest(endpointInstanceId: string | null = "instance-1"): ToolEnvelope {
  return makeInvokeRequestEnvelope(new ToolRequest({ arguments: { class: "cube" } }), ctx(), {
    requestId: "request-1",
    endpointInstanceId: endpointInstanceId ?? undefined,
  });
}

function unregisterRequest(): ToolEnvelope {
  return makeUnregisterEnvelope({
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
    requestId: "unregister-1",
  });
}

function registerRequest(): ToolEnvelope {
  return makeRegistrationEnvelope(
    new ToolEndpointDescriptor({
      protocolVersion: "forge.tool.endpoint/v1alpha1",
      endpointId: "vision.yolo",
      operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
    }),
    { endpointInstanceId: "instance-1", requestId: "register-1" },
  );
}

Deno.test("wire factories 1: invoke factory derives all execution identity from the context", () => {
  const request = invokeRequest();
  assertStrictEquals(request.messageType, "tool.invoke.request");
  assertStrictEquals(request.requestId, "request-1");
  assertStrictEquals(request.invocationId, "invocation-1");
  assertStrictEquals(request.attemptId, "attempt-1");
  assertStrictEquals(request.endpointId, "vision.yolo");
  assertStrictEquals(request.endpointInstanceId, "instance-1");
  assertStrictEquals(request.operation, "detect");
  assertStrictEquals(request.sequence, undefined);
  assertEquals(request.payload, {
    arguments: { class: "cube" },
    context: { tool_id: "forge.tool.detect", implementation_id: "yolo", metadata: {} },
  });
  assert(!("invocation_id" in (request.payload.context as object)));
  assertThrows(
    () =>
      makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        { invocationId: "invocation-1" } as never,
        { requestId: "request-1", endpointInstanceId: "instance-1" },
      ),
    TypeError,
    "context must be a ToolContext",
  );
});

Deno.test("wire factories 2: unresolved invoke response and error preserve absent correlation", () => {
  const request = invokeRequest(null);
  assertStrictEquals(request.endpointInstanceId, undefined);
  const response = makeInvokeResponseEnvelope(new ToolAccepted(), request);
  const error = makeErrorResponseEnvelope(
    new ToolError({ code: "GATEWAY_RESOLUTION_FAILED", message: "no provider available" }),
    request,
  );
  for (const answer of [response, error]) {
    assertStrictEquals(answer.endpointInstanceId, undefined);
    validateResponseCorrelation(request, answer);
    // The absent instance survives the codec on both sides.
    validateResponseCorrelation(
      decodeEnvelope(encodeEnvelope(request)),
      decodeEnvelope(encodeEnvelope(answer)),
    );
  }
  assertStrictEquals(error.messageType, "tool.error");
  const retargeted = replaceEnvelope(response, { endpointInstanceId: "instance-1" });
  assertProtocolError(
    () => validateResponseCorrelation(request, retargeted),
    CODES.CORRELATION_MISMATCH,
    { path: "endpoint_instance_id", message: "response does not match request" },
  );
  // And the other way round: a resolved request answered without an instance.
  const resolved = invokeRequest("instance-1");
  assertProtocolError(
    () => validateResponseCorrelation(resolved, response),
    CODES.CORRELATION_MISMATCH,
    { path: "endpoint_instance_id" },
  );
});

Deno.test("wire factories 3: request/response factories preserve correlation", () => {
  const options = (requestId: string) => ({ requestId, endpointInstanceId: "instance-1" });
  const invoke = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { class: "cube" } }),
    ctx(),
    options("invoke-1"),
  );
  const status = makeStatusRequestEnvelope(ctx(), options("status-1"));
  const result = makeResultRequestEnvelope(ctx(), options("result-1"));
  const control = makeControlRequestEnvelope("cancel", ctx(), options("control-1"));
  const pairs: [ToolEnvelope, ToolEnvelope, string][] = [
    [invoke, makeInvokeResponseEnvelope(new ToolAccepted(), invoke), "tool.invoke.response"],
    [
      status,
      makeStatusResponseEnvelope(new ToolExecutionStatus({ phase: "running" }), status),
      "tool.status.response",
    ],
    [
      result,
      makeResultResponseEnvelope(
        new ToolResultResponse({
          status: "available",
          result: new ToolResult({ status: "succeeded" }),
        }),
        result,
      ),
      "tool.result.response",
    ],
    [
      control,
      makeControlResponseEnvelope(
        new ToolControlResponse({ command: "cancel", status: "accepted" }),
        control,
      ),
      "tool.control.response",
    ],
  ];
  for (const [request, response, responseType] of pairs) {
    assertStrictEquals(response.messageType, responseType);
    for (
      const field of [
        "requestId",
        "invocationId",
        "attemptId",
        "endpointId",
        "endpointInstanceId",
        "operation",
      ] as const
    ) {
      assertStrictEquals(response[field], request[field], `${responseType} ${field}`);
    }
    validateResponseCorrelation(request, response);
    // A correlated tool.error answers every execution request.
    validateResponseCorrelation(
      request,
      makeErrorResponseEnvelope(new ToolError({ code: "X", message: "x" }), request),
    );
  }
  assertEquals(status.payload, {});
  assertEquals(result.payload, {});
  assertEquals(control.payload, { command: "cancel" });
  // Another response type does not answer the request.
  assertProtocolError(
    () => validateResponseCorrelation(invoke, pairs[1][1]),
    CODES.CORRELATION_MISMATCH,
    { path: "message_type", message: "response does not match request" },
  );
  assertThrows(
    () => validateResponseCorrelation(pairs[0][1], invoke),
    RangeError,
    "request envelope has no paired response type",
  );
});

Deno.test("wire factories 4: correlation rejects a retargeted attempt and control command", () => {
  const request = makeControlRequestEnvelope("cancel", ctx(), {
    requestId: "control-1",
    endpointInstanceId: "instance-1",
  });
  const response = makeControlResponseEnvelope(
    new ToolControlResponse({ command: "cancel", status: "accepted" }),
    request,
  );
  validateResponseCorrelation(request, response);
  assertProtocolError(
    () =>
      validateResponseCorrelation(request, replaceEnvelope(response, { attemptId: "attempt-2" })),
    CODES.CORRELATION_MISMATCH,
    { path: "attempt_id", message: "response does not match request" },
  );
  const wrongCommand = makeControlResponseEnvelope(
    new ToolControlResponse({ command: "stop", status: "accepted" }),
    request,
  );
  assertStrictEquals(controlResponseFromPayload(wrongCommand.payload).command, "stop");
  assertProtocolError(
    () => validateResponseCorrelation(request, wrongCommand),
    CODES.CORRELATION_MISMATCH,
    { path: "payload.response.command", message: "response does not match request" },
  );
  // Each identity field is compared, in the reference's order.
  const fields = [
    ["requestId", "request_id"],
    ["invocationId", "invocation_id"],
    ["endpointId", "endpoint_id"],
    ["operation", "operation"],
  ] as const;
  for (const [field, path] of fields) {
    assertProtocolError(
      () => validateResponseCorrelation(request, replaceEnvelope(response, { [field]: "other" })),
      CODES.CORRELATION_MISMATCH,
      { path },
    );
  }
  assertProtocolError(
    () =>
      validateResponseCorrelation(
        request,
        replaceEnvelope(response, { requestId: "other", attemptId: "other" }),
      ),
    CODES.CORRELATION_MISMATCH,
    { path: "request_id" },
  );
});

Deno.test("wire factories 5: response factory rejects the wrong request type", () => {
  assertThrows(
    () =>
      makeStatusResponseEnvelope(new ToolExecutionStatus({ phase: "running" }), invokeRequest()),
    RangeError,
    "tool.status.response requires a tool.status.request envelope",
  );
  assertThrows(
    () => makeInvokeResponseEnvelope(new ToolAccepted(), unregisterRequest()),
    RangeError,
    "tool.invoke.response requires a tool.invoke.request envelope",
  );
  // The payload is built first: a bad response object is a TypeError before the request check.
  assertThrows(
    () => makeStatusResponseEnvelope({} as ToolExecutionStatus, unregisterRequest()),
    TypeError,
    "status must be a ToolExecutionStatus",
  );
  assertThrows(
    () => makeInvokeResponseEnvelope(new ToolAccepted(), {} as ToolEnvelope),
    TypeError,
    "request must be a ToolEnvelope",
  );
  assertThrows(
    () =>
      makeErrorResponseEnvelope(
        new ToolError({ code: "X", message: "x" }),
        unregisterRequest(),
      ),
    RangeError,
    "request envelope has no paired error response",
  );
});

Deno.test("wire factories 6: event, error and management factories are complete", () => {
  const event = makeEventEnvelope(
    new ToolEvent({ type: "progress", data: { fraction: 0.5 } }),
    ctx(),
    { endpointInstanceId: "instance-1", sequence: 0 },
  );
  assertStrictEquals(event.messageType, "tool.event");
  assertStrictEquals(event.sequence, 0);
  assertStrictEquals(event.requestId, undefined);
  assertStrictEquals(event.invocationId, "invocation-1");
  assertEquals(event.payload, { type: "progress", data: { fraction: 0.5 } });

  const error = makeErrorEnvelope(
    new ToolError({ code: "TRANSPORT_FAILED", message: "connection lost", retryable: true }),
    ctx(),
    { requestId: "request-1", endpointInstanceId: "instance-1" },
  );
  assertStrictEquals(error.messageType, "tool.error");
  assertStrictEquals(error.requestId, "request-1");
  assertEquals(error.payload, {
    error: { code: "TRANSPORT_FAILED", message: "connection lost", retryable: true, details: {} },
  });

  const unregister = unregisterRequest();
  assertStrictEquals(unregister.messageType, "endpoint.unregister");
  assertStrictEquals(unregister.requestId, "unregister-1");
  assertEquals(unregister.payload, {});

  const status = makeEndpointStatusEnvelope(
    new EndpointStatus({ endpointId: "vision.yolo", state: "ready" }),
    { endpointInstanceId: "instance-1" },
  );
  assertStrictEquals(status.messageType, "endpoint.status");
  assertStrictEquals(status.requestId, undefined);
  assertStrictEquals(status.endpointId, "vision.yolo");
  assertStrictEquals(status.endpointInstanceId, "instance-1");

  const registration = registerRequest();
  assertStrictEquals(registration.messageType, "endpoint.register");
  assertStrictEquals(registration.requestId, "register-1");
  assertStrictEquals(registration.endpointId, "vision.yolo");

  for (const envelope of [event, error, unregister, status, registration]) {
    assertEquals(decodeEnvelope(encodeEnvelope(envelope)).toWireObject(), envelope.toWireObject());
  }
  assertThrows(
    () => makeEndpointStatusEnvelope({} as EndpointStatus, { endpointInstanceId: "instance-1" }),
    TypeError,
    "status must be an EndpointStatus",
  );
  assertThrows(
    () =>
      makeRegistrationEnvelope({} as ToolEndpointDescriptor, {
        endpointInstanceId: "instance-1",
        requestId: "register-1",
      }),
    TypeError,
    "descriptor must be a ToolEndpointDescriptor",
  );
});

Deno.test("wire factories 7: registry response factory copies request identity and correlates the operation", () => {
  const cases: [ToolEnvelope, EndpointRegistryResponse][] = [
    [
      registerRequest(),
      new EndpointRegistryResponse({
        operation: "register",
        status: "accepted",
        registryRevision: 7,
        leaseTtlMs: 30_000,
      }),
    ],
    [
      unregisterRequest(),
      new EndpointRegistryResponse({
        operation: "unregister",
        status: "accepted",
        registryRevision: 9,
      }),
    ],
  ];
  for (const [request, answer] of cases) {
    const response = makeEndpointRegistryResponseEnvelope(answer, request);
    assertStrictEquals(response.messageType, "endpoint.registry.response");
    assertStrictEquals(response.requestId, request.requestId);
    assertStrictEquals(response.endpointId, request.endpointId);
    assertStrictEquals(response.endpointInstanceId, request.endpointInstanceId);
    assertEquals(response.payload, endpointRegistryResponseToPayload(answer));
    validateManagementResponseCorrelation(request, response);
  }
});

Deno.test("wire factories 8: registry response correlation rejects retargeting and the wrong operation", () => {
  const request = unregisterRequest();
  const response = makeEndpointRegistryResponseEnvelope(
    new EndpointRegistryResponse({
      operation: "unregister",
      status: "accepted",
      registryRevision: 8,
    }),
    request,
  );
  assertProtocolError(
    () =>
      validateManagementResponseCorrelation(
        request,
        replaceEnvelope(response, { endpointInstanceId: "instance-2" }),
      ),
    CODES.CORRELATION_MISMATCH,
    { path: "endpoint_instance_id", message: "response does not match request" },
  );
  assertProtocolError(
    () =>
      validateManagementResponseCorrelation(
        request,
        replaceEnvelope(response, {
          payload: {
            operation: "register",
            status: "accepted",
            registry_revision: 8,
            lease_ttl_ms: 30_000,
          },
        }),
      ),
    CODES.CORRELATION_MISMATCH,
    { path: "payload.operation", message: "response does not match request" },
  );
  assertProtocolError(
    () =>
      validateManagementResponseCorrelation(
        request,
        replaceEnvelope(response, { requestId: "unregister-2" }),
      ),
    CODES.CORRELATION_MISMATCH,
    { path: "request_id" },
  );
  assertProtocolError(
    () => validateManagementResponseCorrelation(request, request),
    CODES.CORRELATION_MISMATCH,
    { path: "message_type" },
  );
  assertThrows(
    () =>
      makeEndpointRegistryResponseEnvelope(
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 8,
          leaseTtlMs: 30_000,
        }),
        request,
      ),
    RangeError,
    "endpoint.unregister requires Registry operation 'unregister'",
  );
  assertThrows(
    () =>
      makeEndpointRegistryResponseEnvelope(
        new EndpointRegistryResponse({
          operation: "unregister",
          status: "accepted",
          registryRevision: 8,
        }),
        invokeRequest(),
      ),
    RangeError,
    "request envelope has no paired Registry response",
  );
  assertThrows(
    () => validateManagementResponseCorrelation(invokeRequest(), response),
    RangeError,
    "request envelope has no paired Registry response type",
  );
});

Deno.test("wire factories 9: error response factory uses the request route without a typed context", () => {
  const raw = new ToolEnvelope({
    messageType: "tool.invoke.request",
    requestId: "request-1",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
    operation: "detect",
    payload: {},
  });
  // The raw request is typed-invalid ...
  assertProtocolError(() => encodeEnvelope(raw), CODES.INVALID_PAYLOAD, {
    path: "payload",
    message: "missing fields: arguments, context",
  });
  // ... but still answerable with a correlated tool.error.
  const error = makeErrorResponseEnvelope(
    new ToolError({ code: "FORGE_PROTOCOL_INVALID_PAYLOAD", message: "invalid invoke" }),
    raw,
  );
  validateResponseCorrelation(raw, error);
  assertStrictEquals(error.messageType, "tool.error");
  assertStrictEquals(error.requestId, "request-1");
  assertStrictEquals(error.invocationId, "invocation-1");
  assertStrictEquals(error.endpointInstanceId, "instance-1");
  assertEquals(
    (error.payload.error as Record<string, unknown>).code,
    "FORGE_PROTOCOL_INVALID_PAYLOAD",
  );
});

Deno.test("wire correlation: the first identity that differs is the path, in header order", () => {
  const request = invokeRequest();
  const response = makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), request);
  const order = [
    ["request_id", { requestId: "other-request" }],
    ["invocation_id", { invocationId: "other-invocation" }],
    ["attempt_id", { attemptId: "other-attempt" }],
    ["endpoint_id", { endpointId: "other.endpoint" }],
    ["endpoint_instance_id", { endpointInstanceId: "other-instance" }],
    ["operation", { operation: "other" }],
  ] as const;
  validateResponseCorrelation(request, response);
  // Every identity from the i-th on differs: the i-th is reported.
  for (let i = 0; i < order.length; i++) {
    const changes = Object.assign({}, ...order.slice(i).map(([, change]) => change));
    assertProtocolError(
      () => validateResponseCorrelation(request, replaceEnvelope(response, changes)),
      CODES.CORRELATION_MISMATCH,
      { path: order[i][0], message: "response does not match request" },
    );
  }
});

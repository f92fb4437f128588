// Validate once per hop (issue 14, part 4): the encoders skip the typed validation only for an
// envelope a factory built and validated; every other envelope is validated as before, with the
// same error, whichever encoder writes it.
import { assertEquals } from "@std/assert";
import {
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../../mod.ts";
import {
  encodeEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  ToolEnvelope,
  ToolProtocolError,
  validateMessageEnvelope,
} from "../../wire.ts";
import type { ToolRequestRoute } from "../../node.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../../dora.ts";
import { assertProtocolError, CODES, context, replaceEnvelope } from "../_helpers.ts";

const request = makeInvokeRequestEnvelope(
  new ToolRequest({ arguments: { camera: "wrist" } }),
  context(),
  { requestId: "request-1", endpointInstanceId: "instance-1" },
);
const response = makeInvokeResponseEnvelope(
  new ToolResult({ status: "succeeded", outputs: { detections: 3 } }),
  request,
);

const ENCODERS = [
  ["encodeEnvelope", (envelope: ToolEnvelope) => encodeEnvelope(envelope)],
  ["encodeToolEnvelopeIpc", (envelope: ToolEnvelope) => encodeToolEnvelopeIpc(envelope)],
  ["toolEnvelopeToMessage", (envelope: ToolEnvelope) => toolEnvelopeToMessage(envelope)],
] as const;

Deno.test("validate once: every encoder still validates an envelope built by hand", () => {
  // Generic rules pass (the constructor accepts it), the typed payload does not.
  const bogus = replaceEnvelope(response, { payload: { outcome: "completed" } });
  for (const [name, encode] of ENCODERS) {
    const error = assertProtocolError(() => encode(bogus), CODES.INVALID_PAYLOAD);
    let expected: unknown;
    try {
      validateMessageEnvelope(bogus);
    } catch (caught) {
      expected = caught;
    }
    assertEquals([name, error.message, error.path], [
      name,
      (expected as Error).message,
      (expected as { path: string }).path,
    ]);
  }
});

Deno.test("validate once: a copy of a factory envelope's own properties carries no mark", () => {
  // The mark is a private field of the envelope the factory built: copying the properties of a
  // marked envelope onto an object of the same class does not copy it.
  const bogus = replaceEnvelope(response, { payload: { outcome: "completed" } });
  const forged = Object.create(
    ToolEnvelope.prototype,
    Object.getOwnPropertyDescriptors(bogus),
  ) as ToolEnvelope;
  for (const [, encode] of ENCODERS) {
    assertProtocolError(() => encode(forged), CODES.INVALID_PAYLOAD);
  }
});

Deno.test("validate once: a hand-built copy of a factory envelope encodes to the same bytes", () => {
  const copy = new ToolEnvelope({
    messageType: response.messageType,
    requestId: response.requestId,
    invocationId: response.invocationId,
    attemptId: response.attemptId,
    endpointId: response.endpointId,
    endpointInstanceId: response.endpointInstanceId,
    operation: response.operation,
    payload: response.payload,
  });
  assertEquals(encodeEnvelope(copy), encodeEnvelope(response));
  assertEquals(encodeToolEnvelopeIpc(copy), encodeToolEnvelopeIpc(response));
  assertEquals(
    toolMessageToEnvelope(toolEnvelopeToMessage(copy)).toWireObject(),
    decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(response)).toWireObject(),
  );
});

/** A Query handler that counts its route checks (both are public, so a subclass sees them). */
class CountingHandler extends ToolEndpointHandler {
  readonly checks = { route: 0, headers: 0 };

  constructor(endpointInstanceId = "instance-1") {
    super(
      new ToolEndpointDescriptor({
        protocolVersion: "forge.tool.endpoint/v1alpha1",
        endpointId: "vision.yolo",
        operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
      }),
      {
        endpointInstanceId,
        operations: {
          detect: {
            query: (toolRequest: ToolRequest) =>
              new ToolResult({ status: "succeeded", outputs: toolRequest.arguments }),
          },
        },
      },
    );
  }

  override validateRequestRoute(request: ToolEnvelope): void {
    this.checks.route++;
    super.validateRequestRoute(request);
  }

  override validateRequestRouteHeaders(route: ToolRequestRoute): void {
    this.checks.headers++;
    super.validateRequestRouteHeaders(route);
  }
}

Deno.test("validate once: the binding checks a request's route once, on its headers", async () => {
  const handler = new CountingHandler();
  const binding = new DoraToolEndpointBinding(handler);
  const expected = makeInvokeResponseEnvelope(
    new ToolResult({ status: "succeeded", outputs: { camera: "wrist" } }),
    request,
  ).toWireObject();
  const [ipc] = await binding.dispatchIpc(encodeToolEnvelopeIpc(request));
  assertEquals(decodeToolEnvelopeIpc(ipc).toWireObject(), expected);
  const [batch] = await binding.dispatchInput(toolEnvelopeToMessage(request));
  assertEquals(toolMessageToEnvelope(batch).toWireObject(), expected);
  assertEquals(handler.checks, { route: 0, headers: 2 });
});

Deno.test("validate once: a caller's dispatch always checks the route, whatever it passes", async () => {
  const handler = new CountingHandler("instance-2");
  const dispatch = handler.dispatch as (...args: unknown[]) => Promise<unknown>;
  for (const extra of [undefined, Symbol("route trusted"), true]) {
    let code: string | undefined;
    try {
      await dispatch.call(handler, request, {}, extra);
    } catch (error) {
      if (error instanceof ToolProtocolError) code = `${error.code} ${error.path}`;
    }
    assertEquals(code, "FORGE_PROTOCOL_ROUTE_MISMATCH endpoint_instance_id");
  }
  assertEquals(handler.checks, { route: 3, headers: 3 });
});

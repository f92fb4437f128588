// Validate once per hop (issue 14, part 4): the encoders skip the typed validation only for an
// envelope a factory built and validated; every other envelope is validated as before, with the
// same error, whichever encoder writes it.
import { assertEquals } from "@std/assert";
import {
  encodeEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  ToolEnvelope,
  ToolRequest,
  ToolResult,
  validateMessageEnvelope,
} from "../mod.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../dora.ts";
import { assertProtocolError, CODES, context, replaceEnvelope } from "./_helpers.ts";

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

// Port of the reference's tests/test_wire_descriptor.py (7 tests), with exact codes and paths.
import { assertEquals, assertInstanceOf, assertStrictEquals, assertThrows } from "@std/assert";
import { ToolEndpointDescriptor, ToolOperationDescriptor } from "../../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  endpointDescriptorFromPayload,
  endpointDescriptorToPayload,
  makeRegistrationEnvelope,
  ToolEnvelope,
  validateMessageEnvelope,
  validateRegistrationEnvelope,
} from "../../wire.ts";
import { assertProtocolError, CODES, PROTOCOL, wireText } from "../_helpers.ts";

function descriptor(protocolVersion = PROTOCOL): ToolEndpointDescriptor {
  return new ToolEndpointDescriptor({
    protocolVersion,
    endpointId: "policy.lerobot",
    operations: [
      new ToolOperationDescriptor({
        name: "execute",
        semantics: "session",
        stoppable: true,
        statusSupported: true,
        maxConcurrency: 1,
      }),
    ],
  });
}

const DESCRIPTOR_PAYLOAD = {
  descriptor: {
    protocol_version: "forge.tool.endpoint/v1alpha1",
    endpoint_id: "policy.lerobot",
    operations: [
      {
        name: "execute",
        semantics: "session",
        cancellable: false,
        stoppable: true,
        status_supported: true,
        max_concurrency: 1,
      },
    ],
  },
};

/** A deep, mutable copy of the descriptor payload. */
function payloadCopy(): {
  descriptor: Record<string, unknown> & { operations: Record<string, unknown>[] };
} {
  return structuredClone(DESCRIPTOR_PAYLOAD);
}

const REGISTER_HEADERS = {
  protocol: PROTOCOL,
  message_type: "endpoint.register",
  request_id: "register-1",
  endpoint_id: "policy.lerobot",
  endpoint_instance_id: "endpoint-instance-1",
};

Deno.test("wire descriptor 1: registration payload round trip", () => {
  const payload = endpointDescriptorToPayload(descriptor());
  assertEquals(payload, DESCRIPTOR_PAYLOAD);
  // Operation keys are emitted with all six fields, in the documented order.
  const operation = (payload.descriptor as { operations: Record<string, unknown>[] }).operations[0];
  assertEquals(Object.keys(operation), [
    "name",
    "semantics",
    "cancellable",
    "stoppable",
    "status_supported",
    "max_concurrency",
  ]);
  const decoded = endpointDescriptorFromPayload(payload);
  assertInstanceOf(decoded, ToolEndpointDescriptor);
  assertEquals(decoded, descriptor());
});

Deno.test("wire descriptor 2: complete registration envelope is validated at the codec boundary", () => {
  const envelope = makeRegistrationEnvelope(descriptor(), {
    endpointInstanceId: "endpoint-instance-1",
    requestId: "register-1",
  });
  assertStrictEquals(envelope.messageType, "endpoint.register");
  assertStrictEquals(envelope.requestId, "register-1");
  assertStrictEquals(envelope.endpointId, "policy.lerobot");
  const decoded = decodeEnvelope(encodeEnvelope(envelope));
  assertEquals(decoded.toWireObject(), envelope.toWireObject());
  assertEquals(validateRegistrationEnvelope(decoded), descriptor());
  validateMessageEnvelope(decoded);
});

Deno.test("wire descriptor 3: registration rejects an invalid payload and endpoint identity", () => {
  const error = assertProtocolError(
    () => decodeEnvelope(wireText(REGISTER_HEADERS, '{"tool_spec":{}}')),
    CODES.INVALID_PAYLOAD,
    { path: "payload", message: "unknown fields: tool_spec; missing fields: descriptor" },
  );
  assertStrictEquals(error.message.includes("descriptor"), true);

  const mismatched = new ToolEnvelope({
    messageType: "endpoint.register",
    requestId: "register-1",
    endpointId: "policy.other",
    endpointInstanceId: "endpoint-instance-1",
    payload: endpointDescriptorToPayload(descriptor()),
  });
  assertProtocolError(() => encodeEnvelope(mismatched), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor.endpoint_id",
    message: "descriptor endpoint_id must match envelope endpoint_id",
  });
  assertProtocolError(() => validateRegistrationEnvelope(mismatched), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor.endpoint_id",
  });
  // And at decode.
  assertProtocolError(
    () =>
      decodeEnvelope(
        wireText(
          { ...REGISTER_HEADERS, endpoint_id: "policy.other" },
          JSON.stringify(DESCRIPTOR_PAYLOAD),
        ),
      ),
    CODES.INVALID_PAYLOAD,
    { path: "payload.descriptor.endpoint_id" },
  );
  // Only endpoint.register carries a descriptor.
  const unregister = new ToolEnvelope({
    messageType: "endpoint.unregister",
    requestId: "unregister-1",
    endpointId: "policy.lerobot",
    endpointInstanceId: "endpoint-instance-1",
  });
  assertProtocolError(() => validateRegistrationEnvelope(unregister), CODES.INVALID_MESSAGE, {
    path: "message_type",
    message: "expected endpoint.register",
  });
});

Deno.test("wire descriptor 4: descriptor payload rejects unknown or missing fields", () => {
  const extra = payloadCopy();
  extra.descriptor.unknown = true;
  assertProtocolError(() => endpointDescriptorFromPayload(extra), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor",
    message: "unknown fields: unknown",
  });
  const missing = payloadCopy();
  delete (missing.descriptor as Record<string, unknown>).operations;
  assertProtocolError(() => endpointDescriptorFromPayload(missing), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor",
    message: "missing fields: operations",
  });
  // Every operation field is required on the Wire, even those the model defaults.
  const partial = payloadCopy();
  delete partial.descriptor.operations[0].cancellable;
  assertProtocolError(() => endpointDescriptorFromPayload(partial), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor.operations[0]",
    message: "missing fields: cancellable",
  });
});

Deno.test("wire descriptor 5: descriptor payload rejects a protocol mismatch", () => {
  const error = assertProtocolError(
    () => endpointDescriptorToPayload(descriptor("forge.tool.endpoint/v2")),
    CODES.UNSUPPORTED_VERSION,
    { path: "payload.descriptor.protocol_version" },
  );
  assertStrictEquals(
    error.message,
    "expected 'forge.tool.endpoint/v1alpha1', found 'forge.tool.endpoint/v2'",
  );
  const wire = payloadCopy();
  wire.descriptor.protocol_version = "forge.tool.endpoint/v2";
  assertProtocolError(() => endpointDescriptorFromPayload(wire), CODES.UNSUPPORTED_VERSION, {
    path: "payload.descriptor.protocol_version",
  });
});

Deno.test("wire descriptor 6: descriptor payload rejects non-string object keys", () => {
  assertProtocolError(
    () => endpointDescriptorFromPayload(new Map<unknown, unknown>([[1, "invalid"]])),
    CODES.INVALID_PAYLOAD,
    { path: "payload", message: "object keys must be strings" },
  );
  assertProtocolError(() => endpointDescriptorFromPayload([]), CODES.INVALID_PAYLOAD, {
    path: "payload",
    message: "registration payload must be an object",
  });
  assertThrows(
    () => endpointDescriptorToPayload({} as ToolEndpointDescriptor),
    TypeError,
    "descriptor must be a ToolEndpointDescriptor",
  );
});

Deno.test("wire descriptor 7: descriptor payload reports the operation path", () => {
  const wire = payloadCopy();
  wire.descriptor.operations[0].max_concurrency = 0;
  assertProtocolError(() => endpointDescriptorFromPayload(wire), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor.operations[0]",
    message: "max_concurrency must be in [1, 9007199254740991]",
  });
  const notArray = payloadCopy();
  (notArray.descriptor as Record<string, unknown>).operations = {};
  assertProtocolError(() => endpointDescriptorFromPayload(notArray), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor.operations",
    message: "must be an array",
  });
  const duplicate = payloadCopy();
  duplicate.descriptor.operations.push({ ...duplicate.descriptor.operations[0] });
  assertProtocolError(() => endpointDescriptorFromPayload(duplicate), CODES.INVALID_PAYLOAD, {
    path: "payload.descriptor",
    message: "operation names must be unique within an endpoint",
  });
});

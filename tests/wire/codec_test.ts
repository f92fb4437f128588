// Port of the reference's tests/test_wire.py (17 tests, every parametrized case), with exact
// codes, paths and messages where the reference's behaviour pins them. Stays whole (over 400
// lines): the port keeps the reference file's tests together.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import {
  decodeEnvelope,
  encodeEnvelope,
  invokeRequestFromEnvelope,
  TOOL_MESSAGE_TYPES,
  ToolEnvelope,
  type ToolEnvelopeInit,
  type ToolMessageType,
  ToolProtocolError,
} from "../../wire.ts";
import {
  assertProtocolError,
  bytes,
  CODES,
  MAX,
  PROTOCOL,
  text,
  UNREGISTER_HEADERS,
  unregisterText,
  wireText,
} from "../_helpers.ts";
import { parseStrictJsonBytes } from "../../src/wire/codec.ts";

const MANAGEMENT_TYPES: readonly ToolMessageType[] = [
  "endpoint.register",
  "endpoint.unregister",
  "endpoint.registry.response",
  "endpoint.status",
];

const INVOKE_PAYLOAD = {
  arguments: { class: "方块" },
  context: { tool_id: "forge.tool.detect", implementation_id: "yolo", metadata: {} },
};

type Overrides = Partial<Record<keyof ToolEnvelopeInit, unknown>>;

/** The reference's `_tool_envelope(**overrides)`; an override of `undefined` is Python `None`. */
function toolEnvelope(overrides: Overrides = {}): ToolEnvelope {
  return new ToolEnvelope({
    protocol: PROTOCOL,
    messageType: "tool.invoke.request",
    requestId: "request-1",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "endpoint-instance-1",
    operation: "detect",
    payload: INVOKE_PAYLOAD,
    ...overrides,
  } as ToolEnvelopeInit);
}

function build(init: Overrides): ToolEnvelope {
  return new ToolEnvelope({ protocol: PROTOCOL, ...init } as ToolEnvelopeInit);
}

function assertSameEnvelope(actual: ToolEnvelope, expected: ToolEnvelope): void {
  assertInstanceOf(actual, ToolEnvelope);
  assertEquals(actual.toWireObject(), expected.toWireObject());
  assertEquals(actual, expected);
}

Deno.test("wire 1: message type literal matches runtime registry", () => {
  // Compile-time exhaustiveness: a missing or extra member of ToolMessageType fails `deno check`.
  const members: Record<ToolMessageType, true> = {
    "endpoint.register": true,
    "endpoint.unregister": true,
    "endpoint.registry.response": true,
    "endpoint.status": true,
    "tool.invoke.request": true,
    "tool.invoke.response": true,
    "tool.status.request": true,
    "tool.status.response": true,
    "tool.result.request": true,
    "tool.result.response": true,
    "tool.control.request": true,
    "tool.control.response": true,
    "tool.event": true,
    "tool.error": true,
  };
  assertEquals(new Set(Object.keys(members)), new Set(TOOL_MESSAGE_TYPES));
  assertStrictEquals(TOOL_MESSAGE_TYPES.size, 14);
  assert(!TOOL_MESSAGE_TYPES.has("endpoint.heartbeat" as ToolMessageType));
});

const EXPECTED_INVOKE_TEXT = '{"attempt_id":"attempt-1","endpoint_id":"vision.yolo",' +
  '"endpoint_instance_id":"endpoint-instance-1","invocation_id":"invocation-1",' +
  '"message_type":"tool.invoke.request","operation":"detect",' +
  '"payload":{"arguments":{"class":"方块"},"context":{"implementation_id":"yolo",' +
  '"metadata":{},"tool_id":"forge.tool.detect"}},"protocol":"forge.tool.endpoint/v1alpha1",' +
  '"request_id":"request-1"}';

Deno.test("wire 2: generic invoke envelope round trips as deterministic UTF-8 JSON", () => {
  const envelope = toolEnvelope();
  const encoded = encodeEnvelope(envelope);
  assertInstanceOf(encoded, Uint8Array);
  assertStrictEquals(text(encoded), EXPECTED_INVOKE_TEXT);
  assertStrictEquals(encoded.length, 381);
  // 方块 is written raw: E6 96 B9 E5 9D 97.
  const raw = [0xe6, 0x96, 0xb9, 0xe5, 0x9d, 0x97];
  const at = encoded.findIndex((_, i) => raw.every((b, k) => encoded[i + k] === b));
  assert(at > 0, "raw UTF-8 of 方块 is in the encoding");
  assertSameEnvelope(decodeEnvelope(encoded), envelope);
  assertSameEnvelope(decodeEnvelope(text(encoded)), envelope);
  // Deterministic: encoding again, or encoding the decoded envelope, gives the same bytes.
  assertEquals(encodeEnvelope(envelope), encoded);
  assertEquals(encodeEnvelope(decodeEnvelope(encoded)), encoded);
});

Deno.test("wire 3: tool envelopes may omit instance before provider routing", () => {
  const envelope = toolEnvelope({ endpointInstanceId: undefined });
  const encoded = encodeEnvelope(envelope);
  assert(!text(encoded).includes("endpoint_instance_id"));
  const decoded = decodeEnvelope(encoded);
  assertSameEnvelope(decoded, envelope);
  assertStrictEquals(decoded.endpointInstanceId, undefined);

  const toolTypes = [...TOOL_MESSAGE_TYPES].filter((type) => type.startsWith("tool.")).sort();
  assertStrictEquals(toolTypes.length, 10);
  for (const messageType of toolTypes) {
    const event = messageType === "tool.event";
    const built = toolEnvelope({
      messageType,
      requestId: event ? undefined : "request-1",
      sequence: event ? 0 : undefined,
      endpointInstanceId: undefined,
    });
    assertStrictEquals(built.endpointInstanceId, undefined, messageType);
    assert(!("endpoint_instance_id" in built.toWireObject()), messageType);
  }
});

Deno.test("wire 4: management envelope requires instance but forbids execution fields", () => {
  const envelope = build({
    messageType: "endpoint.unregister",
    requestId: "unregister-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "endpoint-instance-1",
  });
  assertEquals(envelope.payload, {});
  assertSameEnvelope(decodeEnvelope(encodeEnvelope(envelope)), envelope);
  const fields: [keyof ToolEnvelopeInit, string, unknown][] = [
    ["invocationId", "invocation_id", "invocation-1"],
    ["attemptId", "attempt_id", "attempt-1"],
    ["operation", "operation", "detect"],
    ["sequence", "sequence", 0],
  ];
  for (const [field, path, value] of fields) {
    assertProtocolError(
      () =>
        build({
          messageType: "endpoint.unregister",
          requestId: "unregister-1",
          endpointId: "vision.yolo",
          endpointInstanceId: "endpoint-instance-1",
          [field]: value,
        }),
      CODES.INVALID_MESSAGE,
      { path, message: "must be omitted for endpoint management messages" },
    );
  }
});

Deno.test("wire 5: tool.event requires sequence but not request_id", () => {
  const event = build({
    messageType: "tool.event",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "policy.lerobot",
    endpointInstanceId: "endpoint-instance-1",
    operation: "execute",
    sequence: 0,
    payload: { type: "heartbeat", data: {} },
  });
  assertStrictEquals(event.requestId, undefined);
  assertStrictEquals(event.sequence, 0);
  assertProtocolError(
    () => toolEnvelope({ messageType: "tool.event", sequence: 0 }),
    CODES.INVALID_MESSAGE,
    { path: "request_id", message: "must be omitted for tool.event" },
  );
  assertProtocolError(
    () => toolEnvelope({ messageType: "tool.event", requestId: undefined, sequence: undefined }),
    CODES.INVALID_MESSAGE,
    { path: "sequence", message: `must be an integer in [0, ${MAX}]` },
  );
});

const EXCHANGE_TYPES = [...TOOL_MESSAGE_TYPES]
  .filter((type) => type !== "endpoint.status" && type !== "tool.event")
  .sort();

Deno.test("wire 6: exchange messages require request_id (12 cases)", async (t) => {
  assertStrictEquals(EXCHANGE_TYPES.length, 12);
  for (const messageType of EXCHANGE_TYPES) {
    await t.step(messageType, () => {
      const make = MANAGEMENT_TYPES.includes(messageType)
        ? () =>
          build({
            messageType,
            endpointId: "vision.yolo",
            endpointInstanceId: "endpoint-instance-1",
          })
        : () => toolEnvelope({ messageType, requestId: undefined });
      assertProtocolError(make, CODES.INVALID_MESSAGE, {
        path: "request_id",
        message: "must be a non-empty string",
      });
    });
  }
});

Deno.test("wire 7: unsolicited endpoint.status must omit request_id", () => {
  const status = build({
    messageType: "endpoint.status",
    endpointId: "vision.yolo",
    endpointInstanceId: "endpoint-instance-1",
  });
  assertStrictEquals(status.requestId, undefined);
  assertProtocolError(
    () =>
      build({
        messageType: "endpoint.status",
        requestId: "status-1",
        endpointId: "vision.yolo",
        endpointInstanceId: "endpoint-instance-1",
      }),
    CODES.INVALID_MESSAGE,
    { path: "request_id", message: "must be omitted for unsolicited endpoint.status" },
  );
});

const REMOVED_TYPES = [
  "tool.query.request",
  "tool.query.response",
  "tool.action.start",
  "tool.action.accepted",
  "tool.action.cancel",
  "tool.action.status.request",
  "tool.action.status.response",
  "tool.session.start",
  "tool.session.accepted",
  "tool.session.stop",
  "tool.session.status.request",
  "tool.session.status.response",
  "tool.command.ack",
  "endpoint.heartbeat",
];

Deno.test("wire 8: removed semantics-specific message types are rejected (14 cases)", async (t) => {
  for (const messageType of REMOVED_TYPES) {
    await t.step(messageType, () => {
      assertProtocolError(() => toolEnvelope({ messageType }), CODES.UNKNOWN_MESSAGE_TYPE, {
        path: "message_type",
        message: `unsupported message type: '${messageType}'`,
      });
      // The same through the decoder (instance present so the missing-field stage passes).
      const wire = wireText({
        protocol: PROTOCOL,
        message_type: messageType,
        request_id: "request-1",
        endpoint_id: "vision.yolo",
        endpoint_instance_id: "endpoint-instance-1",
      });
      const error = assertProtocolError(() => decodeEnvelope(wire), CODES.UNKNOWN_MESSAGE_TYPE, {
        path: "message_type",
      });
      assert(String(error).includes("UNKNOWN_MESSAGE_TYPE"));
    });
  }
});

Deno.test("wire 9: envelope rejects invalid headers (5 cases)", async (t) => {
  const cases: [string, Overrides, string, string, string][] = [
    [
      "protocol",
      { protocol: "forge.tool.endpoint/v2" },
      "protocol",
      CODES.UNSUPPORTED_VERSION,
      "expected 'forge.tool.endpoint/v1alpha1', found 'forge.tool.endpoint/v2'",
    ],
    [
      "message_type",
      { messageType: "tool.unknown" },
      "message_type",
      CODES.UNKNOWN_MESSAGE_TYPE,
      "unsupported message type: 'tool.unknown'",
    ],
    [
      "request_id",
      { requestId: undefined },
      "request_id",
      CODES.INVALID_MESSAGE,
      "must be a non-empty string",
    ],
    [
      "endpoint_id",
      { endpointId: "\u00a0" },
      "endpoint_id",
      CODES.INVALID_MESSAGE,
      "must be a non-empty string",
    ],
    [
      "sequence",
      { sequence: 0 },
      "sequence",
      CODES.INVALID_MESSAGE,
      "must be omitted for non-event messages",
    ],
  ];
  for (const [name, overrides, path, code, message] of cases) {
    await t.step(name, () => {
      assertProtocolError(() => toolEnvelope(overrides), code, { path, message });
    });
  }
});

Deno.test("wire 10: endpoint messages require endpoint_instance_id", () => {
  for (const messageType of MANAGEMENT_TYPES) {
    assertProtocolError(
      () =>
        build({
          messageType,
          requestId: messageType === "endpoint.status" ? undefined : "request-1",
          endpointId: "vision.yolo",
          endpointInstanceId: undefined,
        }),
      CODES.INVALID_MESSAGE,
      {
        path: "endpoint_instance_id",
        message: "must be present for endpoint management messages",
      },
    );
  }
});

Deno.test("wire 11: event sequence uses an interoperable non-negative integer", () => {
  for (const sequence of [-1, 9007199254740992, true, 0.5, "0", Number.NaN]) {
    assertProtocolError(
      () => toolEnvelope({ messageType: "tool.event", requestId: undefined, sequence }),
      CODES.INVALID_MESSAGE,
      { path: "sequence", message: `must be an integer in [0, ${MAX}]` },
    );
  }
  assertStrictEquals(
    toolEnvelope({ messageType: "tool.event", requestId: undefined, sequence: MAX }).sequence,
    MAX,
  );
});

Deno.test("wire 12: payload is JSON-normalized and rejects non-JSON values", () => {
  const envelope = toolEnvelope({ payload: { arguments: { classes: ["cube"] } } });
  assertEquals(envelope.payload, { arguments: { classes: ["cube"] } });
  assert(Array.isArray((envelope.payload.arguments as Record<string, unknown>).classes));
  // A Map is a mapping too: it becomes a plain object.
  const fromMap = toolEnvelope({
    payload: new Map<string, unknown>([["arguments", new Map([["classes", ["cube"]]])]]),
  });
  assertEquals(fromMap.payload, { arguments: { classes: ["cube"] } });
  assertStrictEquals(Object.getPrototypeOf(fromMap.payload.arguments), Object.prototype);

  class Opaque {}
  assertProtocolError(
    () => toolEnvelope({ payload: { arguments: { value: new Opaque() } } }),
    CODES.INVALID_PAYLOAD,
    { path: "payload.arguments.value", message: "unsupported JSON value: Opaque" },
  );
  assertProtocolError(
    () => toolEnvelope({ payload: { arguments: { value: Number.NaN } } }),
    CODES.INVALID_PAYLOAD,
    { path: "payload.arguments.value", message: "floating-point values must be finite" },
  );
  assertProtocolError(
    () => toolEnvelope({ payload: { arguments: { value: 9007199254740992 } } }),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.arguments.value",
      message: "integer exceeds interoperable range ±9007199254740991",
    },
  );
});

Deno.test("wire 13: encoder revalidates a payload modified after construction", () => {
  // A constructed envelope's payload is deeply frozen: the mutation itself is refused.
  const constructed = toolEnvelope({
    payload: { arguments: { value: 1 }, context: INVOKE_PAYLOAD.context },
  });
  assertThrows(() => {
    (constructed.payload.arguments as Record<string, unknown>).value = 9007199254740992;
  }, TypeError);
  assertStrictEquals((constructed.payload.arguments as Record<string, unknown>).value, 1);
  encodeEnvelope(constructed);

  // A decoded envelope's payload is frozen too.
  const decoded = decodeEnvelope(encodeEnvelope(constructed));
  assertThrows(() => {
    (decoded.payload.arguments as Record<string, unknown>).value = 9007199254740992;
  }, TypeError);
  assertEquals(encodeEnvelope(decoded), encodeEnvelope(constructed));
  // An envelope whose payload was swapped behind the constructor's back: the encoder re-checks.
  const forged = Object.assign(Object.create(ToolEnvelope.prototype), constructed, {
    payload: { arguments: { value: 9007199254740992 }, context: INVOKE_PAYLOAD.context },
  });
  assertProtocolError(() => encodeEnvelope(forged), CODES.INVALID_PAYLOAD, {
    path: "payload.arguments.value",
    includes: "interoperable range",
  });
});

Deno.test("wire 14: decoder rejects unknown, missing, duplicate and explicitly null fields", () => {
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, timestamp_ms: 1 })),
    CODES.INVALID_MESSAGE,
    { message: "unknown envelope fields: timestamp_ms" },
  );
  assertProtocolError(
    () =>
      decodeEnvelope(
        JSON.stringify({ protocol: PROTOCOL, message_type: "endpoint.unregister" }),
      ),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_id, endpoint_instance_id, payload" },
  );
  assertProtocolError(
    () => decodeEnvelope('{"protocol":"one","protocol":"two"}'),
    CODES.DUPLICATE_KEY,
    { message: "duplicate JSON object key: 'protocol'" },
  );
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, invocation_id: null })),
    CODES.INVALID_MESSAGE,
    { message: "optional fields must be omitted rather than null: invocation_id" },
  );
  const invoke = toolEnvelope().toWireObject();
  assertProtocolError(
    () =>
      decodeEnvelope(
        JSON.stringify({ ...invoke, endpoint_instance_id: null }),
      ),
    CODES.INVALID_MESSAGE,
    { message: "optional fields must be omitted rather than null: endpoint_instance_id" },
  );
});

Deno.test("wire 15: decoder rejects invalid UTF-8, non-finite and surrogate JSON", () => {
  assertProtocolError(() => decodeEnvelope(new Uint8Array([0xff])), CODES.INVALID_JSON, {
    message: "message is not valid UTF-8",
  });
  assertProtocolError(
    () => decodeEnvelope(unregisterText('{"value":NaN}')),
    CODES.INVALID_JSON,
    { message: "non-finite JSON number is not allowed: NaN" },
  );
  assertProtocolError(
    () => decodeEnvelope(unregisterText('{"value":"\\ud800"}')),
    CODES.INVALID_PAYLOAD,
    { path: "payload.value", message: "must contain only valid Unicode scalar values" },
  );
});

Deno.test("wire 16: decoder normalizes parser resource errors", () => {
  const deep = "[".repeat(2000) + "]".repeat(2000);
  const error = assertThrows(() => decodeEnvelope(deep), ToolProtocolError);
  assertStrictEquals(error.code, CODES.INVALID_JSON);
  assertProtocolError(
    () => decodeEnvelope(bytes(deep)),
    CODES.INVALID_JSON,
  );
  assertProtocolError(
    () => decodeEnvelope(unregisterText(`{"value":${"9".repeat(5000)}}`)),
    CODES.INVALID_JSON,
    { includes: "integer" },
  );
});

Deno.test("wire 17: codec enforces a configurable message size limit", () => {
  const envelope = toolEnvelope({
    payload: { arguments: { value: "x".repeat(100) }, context: INVOKE_PAYLOAD.context },
  });
  const encoded = encodeEnvelope(envelope);
  assertProtocolError(
    () => encodeEnvelope(envelope, { maxMessageBytes: 32 }),
    CODES.MESSAGE_TOO_LARGE,
    { message: `message size ${encoded.length} exceeds limit 32` },
  );
  assertProtocolError(
    () => decodeEnvelope(encoded, { maxMessageBytes: 32 }),
    CODES.MESSAGE_TOO_LARGE,
    { message: `message size ${encoded.length} exceeds limit 32` },
  );
  // The limit is inclusive.
  assertEquals(encodeEnvelope(envelope, { maxMessageBytes: encoded.length }), encoded);
  assertSameEnvelope(decodeEnvelope(encoded, { maxMessageBytes: encoded.length }), envelope);
});

// ---------------------------------------------------------------------------------------------
// Decoded payloads are frozen (ToolEnvelope's "copied and frozen" holds for decoded envelopes)

/** The paths of the containers in `value` that are not frozen. */
function unfrozen(value: unknown, path = "payload"): string[] {
  if (typeof value !== "object" || value === null) return [];
  const out = Object.isFrozen(value) ? [] : [path];
  for (const [key, item] of Object.entries(value)) out.push(...unfrozen(item, `${path}.${key}`));
  return out;
}

/** A typical invoke request with `extra` spliced into its arguments' JSON text. */
function invokeText(extra: string): string {
  return `{"attempt_id":"a-1","endpoint_id":"vision.yolo","invocation_id":"i-1",` +
    `"message_type":"tool.invoke.request","operation":"detect","payload":{"arguments":` +
    `{"classes":["cube",{"shape":[1,2]}],"roi":{"x":1}${extra}},"context":{"implementation_id":` +
    `"yolo","metadata":{"trace":{"id":"t"}},"tool_id":"forge.tool.detect"}},` +
    `"protocol":"${PROTOCOL}","request_id":"r-1"}`;
}

Deno.test("decoded payloads are deeply frozen on the fast path and on the exact path", () => {
  // Regression: the fast path adopted JSON.parse's objects as they were, mutable.
  for (const [path, extra] of [["fast", ""], ["exact", ',"ratio":1.0']] as const) {
    const data = bytes(invokeText(extra));
    assertEquals(parseStrictJsonBytes(data).normalized, path === "fast", path);
    const envelope = decodeEnvelope(data);
    assertEquals(unfrozen(envelope.payload), [], path);
    assert(Object.isFrozen(envelope.payload), path);
  }
});

Deno.test("a decoded payload cannot be changed under the models built from it", () => {
  // Regression: mutating payload.arguments after decoding changed what the handler built.
  const envelope = decodeEnvelope(bytes(invokeText("")));
  const args = envelope.payload.arguments as Record<string, unknown>;
  // Modules are strict: writing to a frozen object throws.
  assertThrows(() => {
    args.roi = { x: 2 };
  }, TypeError);
  assertThrows(() => {
    (args.classes as unknown[]).push("sphere");
  }, TypeError);
  assertEquals(invokeRequestFromEnvelope(envelope).request.arguments, {
    classes: ["cube", { shape: [1, 2] }],
    roi: { x: 1 },
  });
  // Re-encoding gives the bytes decoded.
  assertEquals(new TextDecoder().decode(encodeEnvelope(envelope)), invokeText(""));
});

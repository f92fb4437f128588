// The Wire's JSON encoder and the interoperable JSON rules on the way out (src/wire/_json_encode.ts,
// src/_internal/json.ts): key order, raw non-ASCII, integers and floats, values outside the JSON
// model at their path, constructed payloads (Maps, null prototypes, nesting, integral numbers
// beyond 2^53), with exact codes, messages and paths.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { decodeEnvelope, encodeEnvelope, ToolEnvelope, type ToolEnvelopeInit } from "../../wire.ts";
import { assertProtocolError, CODES, eventText, MAX, text } from "../_helpers.ts";
import { decodeData, INT_RANGE } from "./_fixtures.ts";

// ---------------------------------------------------------------------------------------------
// Encoding constructed and decoded payloads

/** `envelope` with `payload` put in behind the constructor's back (a cast in plain JavaScript). */
function withPayload(envelope: ToolEnvelope, payload: unknown): ToolEnvelope {
  return Object.assign(Object.create(ToolEnvelope.prototype), envelope, { payload });
}

Deno.test("a decoded envelope with large float tokens re-encodes as the reference does", () => {
  // Python keeps these values floats and writes them back with repr(). Float tokens that could be
  // integral beyond 2^53 take the exact parser, whose payload is canonical (frozen, checked), so
  // the encoder writes them back as floats too.
  const cases: [string, string][] = [
    ["9007199254740993.0", "9007199254740992.0"],
    ["1.5e300", "1.5e+300"],
    ["1e300", "1e+300"],
    ["-1e20", "-1e+20"],
  ];
  for (const [token, written] of cases) {
    const envelope = decodeEnvelope(eventText(`{"v":${token}}`));
    const encoded = text(encodeEnvelope(envelope));
    assert(
      encoded.includes(`"data":{"v":${written}}`),
      `${token} re-encodes as ${written}: ${encoded}`,
    );
  }
});

Deno.test("a constructed payload's integral number beyond 2^53 is an integer out of range", () => {
  // A JavaScript number carries no float/integer distinction: built by hand, 1e300 is integral.
  assertProtocolError(
    () =>
      new ToolEnvelope({
        messageType: "tool.event",
        invocationId: "invocation-1",
        attemptId: "attempt-1",
        endpointId: "vision.yolo",
        operation: "detect",
        sequence: 0,
        payload: { type: "progress", data: { v: 1e300 } },
      }),
    CODES.INVALID_PAYLOAD,
    { path: "payload.data.v", message: "integer exceeds interoperable range ±9007199254740991" },
  );
});

Deno.test("payload nesting is enforced at construction and on encode too", () => {
  // deno-lint-ignore no-explicit-any
  let deep: any = 1;
  for (let i = 0; i < 64; i++) deep = { a: deep };
  const init = (data: unknown): ToolEnvelopeInit => ({
    messageType: "tool.event",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    operation: "detect",
    sequence: 0,
    payload: { type: "progress", data },
  });
  assertProtocolError(() => new ToolEnvelope(init(deep)), CODES.INVALID_PAYLOAD, {
    path: "payload.data" + ".a".repeat(64),
    message: "JSON nesting exceeds 64",
  });
  encodeEnvelope(new ToolEnvelope(init(deep.a)));
  // A cyclic value ends at the depth bound, not in a stack overflow.
  // deno-lint-ignore no-explicit-any
  const cyclic: any = {};
  cyclic.self = cyclic;
  assertProtocolError(() => new ToolEnvelope(init(cyclic)), CODES.INVALID_PAYLOAD, {
    path: "payload.data" + ".self".repeat(64),
    message: "JSON nesting exceeds 64",
  });
  // A decoded payload is frozen; one swapped behind the constructor's back is caught by the
  // encoder.
  const decoded = decodeEnvelope(eventText("{}"));
  assertThrows(() => {
    (decoded.payload as Record<string, unknown>).data = deep;
  }, TypeError);
  const forged = withPayload(decoded, { type: "progress", data: deep });
  assertProtocolError(() => encodeEnvelope(forged), CODES.INVALID_PAYLOAD, {
    path: "payload.data" + ".a".repeat(64),
    message: "JSON nesting exceeds 64",
  });
});

// ---------------------------------------------------------------------------------------------
// Encoder

/** A tool.event envelope whose data is `data` (constructed, so the payload is copied). */
function dataEnvelope(data: unknown): ToolEnvelope {
  return new ToolEnvelope({
    messageType: "tool.event",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
    operation: "detect",
    sequence: 0,
    payload: { type: "progress", data: data as object },
  });
}

/** The encoded text of `data` inside an event envelope. */
function encodeData(data: unknown): string {
  const encoded = text(encodeEnvelope(dataEnvelope(data)));
  const start = encoded.indexOf('"payload":{"data":') + '"payload":{"data":'.length;
  const end = encoded.lastIndexOf(',"type":"progress"}');
  return encoded.slice(start, end);
}

Deno.test("encoder sorts keys by code point at every level", () => {
  assertStrictEquals(
    encodeData({ "\u{1F600}": 2, "\uffff": 1, a: 3, "\ue000": 4 }),
    '{"a":3,"\ue000":4,"\uffff":1,"😀":2}',
  );
  // Integer-like keys (which JavaScript enumerates first, numerically) sort as strings.
  assertStrictEquals(encodeData({ b: 1, 10: 2, 9: 3, "": 4 }), '{"":4,"10":2,"9":3,"b":1}');
  assertStrictEquals(
    encodeData({ z: { b: [{ d: 1, c: 2 }], a: 0 }, ab: 1, a: 2 }),
    '{"a":2,"ab":1,"z":{"a":0,"b":[{"c":2,"d":1}]}}',
  );
  // Decoded payloads are re-sorted too.
  const decoded = decodeEnvelope(eventText('{"😀":1,"\uffff":2,"b":{"y":1,"x":2}}'));
  assert(text(encodeEnvelope(decoded)).includes('"data":{"b":{"x":2,"y":1},"\uffff":2,"😀":1}'));
});

Deno.test("encoder writes non-ASCII raw and escapes only what JSON requires", () => {
  const encoded = encodeEnvelope(dataEnvelope({ s: "方块 é 😀" }));
  assert(text(encoded).includes('"s":"方块 é 😀"'));
  assert(!text(encoded).includes("\\u"));
  assertStrictEquals(
    encodeData({ s: '\n\t\r\b\f\u0000\u0001\u000b\u001f"\\/' }),
    '{"s":"\\n\\t\\r\\b\\f\\u0000\\u0001\\u000b\\u001f\\"\\\\/"}',
  );
  // U+007F, U+2028, U+2029 and U+FEFF are written raw.
  assertStrictEquals(
    encodeData({ s: "\u007f\u2028\u2029\ufeff" }),
    '{"s":"\u007f\u2028\u2029\ufeff"}',
  );
  assertStrictEquals(encodeData({ "\n": "k" }), '{"\\n":"k"}');
});

Deno.test("encoder writes integers as integers and other numbers as Python floats", () => {
  const integers: [number, string][] = [
    [0, "0"],
    [1, "1"],
    [-1, "-1"],
    [MAX, "9007199254740991"],
    [-MAX, "-9007199254740991"],
    [-0, "0"],
    [1e15, "1000000000000000"],
  ];
  for (const [value, written] of integers) {
    assertStrictEquals(encodeData({ v: value }), `{"v":${written}}`, `${value}`);
  }
  const floats: [number, string][] = [
    [0.5, "0.5"],
    [-2.5, "-2.5"],
    [1e-7, "1e-07"],
    [0.0001, "0.0001"],
    [0.00001, "1e-05"],
    [123.456, "123.456"],
    [5e-324, "5e-324"],
    [2.5e-300, "2.5e-300"],
    [-1.5e-10, "-1.5e-10"],
    [1000000000000000.5, "1000000000000000.5"],
    [0.1 + 0.2, "0.30000000000000004"],
    [1 / 3, "0.3333333333333333"],
    [123456789.123, "123456789.123"],
  ];
  for (const [value, written] of floats) {
    assertStrictEquals(encodeData({ v: value }), `{"v":${written}}`, `${value}`);
    // The written form decodes to the same number.
    assertStrictEquals((decodeData(`{"v":${written}}`) as { v: number }).v, value);
  }
  // bigint within range is an integer.
  assertStrictEquals(encodeData({ v: 5n, w: -BigInt(MAX) }), `{"v":5,"w":-${MAX}}`);
  assertEquals(dataEnvelope({ v: 5n }).payload.data, { v: 5 });
});

Deno.test("encoder rejects values outside the interoperable JSON model at their path", () => {
  class Opaque {}
  const cases: [unknown, string, string][] = [
    [Number.NaN, "payload.data.list[1]", "floating-point values must be finite"],
    [Number.POSITIVE_INFINITY, "payload.data.list[1]", "floating-point values must be finite"],
    [Number.NEGATIVE_INFINITY, "payload.data.list[1]", "floating-point values must be finite"],
    [2 ** 53, "payload.data.list[1]", INT_RANGE],
    [-(2 ** 53), "payload.data.list[1]", INT_RANGE],
    [2n ** 53n, "payload.data.list[1]", INT_RANGE],
    [-(2n ** 53n), "payload.data.list[1]", INT_RANGE],
    [undefined, "payload.data.list[1]", "unsupported JSON value: undefined"],
    [() => 1, "payload.data.list[1]", "unsupported JSON value: Function"],
    [new Date(0), "payload.data.list[1]", "unsupported JSON value: Date"],
    [new Opaque(), "payload.data.list[1]", "unsupported JSON value: Opaque"],
    [new Set([1]), "payload.data.list[1]", "unsupported JSON value: Set"],
    [new Uint8Array(1), "payload.data.list[1]", "unsupported JSON value: Uint8Array"],
    ["\ud800", "payload.data.list[1]", "must contain only valid Unicode scalar values"],
    [
      { "\udc00": 1 },
      "payload.data.list[1]",
      "object keys must contain only valid Unicode scalar values",
    ],
    [new Map([[1, 1]]), "payload.data.list[1]", "object keys must be strings"],
  ];
  for (const [value, path, message] of cases) {
    // At construction ...
    assertProtocolError(() => dataEnvelope({ list: [0, value] }), CODES.INVALID_PAYLOAD, {
      path,
      message,
    });
    // ... and on encode of a payload swapped behind the constructor's back (a decoded payload is
    // frozen), where the value is representable in a plain object.
    if (value instanceof Map || typeof value === "bigint") continue;
    const decoded = decodeEnvelope(eventText('{"list":[0,1]}'));
    const forged = withPayload(decoded, { type: "progress", data: { list: [0, value] } });
    assertProtocolError(() => encodeEnvelope(forged), CODES.INVALID_PAYLOAD, { path, message });
  }
  // A property set to undefined in an object is unsupported too (not silently dropped).
  assertProtocolError(() => dataEnvelope({ v: undefined }), CODES.INVALID_PAYLOAD, {
    path: "payload.data.v",
    message: "unsupported JSON value: undefined",
  });
});

Deno.test("constructed payloads accept Maps and null-prototype objects as plain objects", () => {
  const bare = Object.create(null);
  bare.k = 1;
  const envelope = dataEnvelope(new Map<string, unknown>([["b", bare], ["a", [1]]]));
  assertEquals(envelope.payload.data, { a: [1], b: { k: 1 } });
  assertStrictEquals(
    Object.getPrototypeOf((envelope.payload.data as Record<string, object>).b),
    Object.prototype,
  );
  assertStrictEquals(encodeData(new Map([["b", bare], ["a", [1]]])), '{"a":[1],"b":{"k":1}}');
  // The copy is deep and frozen: later changes to the source do not leak in.
  const source = { nested: { v: 1 } };
  const copy = dataEnvelope(source);
  source.nested.v = 2;
  assertEquals(copy.payload.data, { nested: { v: 1 } });
  assert(
    Object.isFrozen(copy.payload) &&
      Object.isFrozen((copy.payload.data as Record<string, object>).nested),
  );
});

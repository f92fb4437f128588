// The strict JSON rules of the Wire decoder and encoder (reference notes d.2, d.3, i.1–i.13),
// exercised through decodeEnvelope / encodeEnvelope with exact codes, messages and paths.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { ToolRequest } from "../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  invokeRequestFromEnvelope,
  makeInvokeRequestEnvelope,
  ToolEnvelope,
  type ToolEnvelopeInit,
  ToolProtocolError,
} from "../wire.ts";
import {
  assertProtocolError,
  bytes,
  CODES,
  concat,
  context,
  EVENT_HEADERS,
  eventText,
  MAX,
  PROTOCOL,
  text,
  UNREGISTER_HEADERS,
  unregisterText,
  wireText,
} from "./_helpers.ts";
import { parseStrictJsonBytes, parseStrictJsonText } from "../src/wire/_json_decode.ts";
import { MAX_PARSE_NESTING } from "../src/wire/_json_exact.ts";

const INT_RANGE = "integer exceeds interoperable range ±9007199254740991";

/** Decodes a tool.event whose data is the raw JSON `dataJson` and returns the decoded data. */
function decodeData(dataJson: string): unknown {
  return decodeEnvelope(eventText(dataJson)).payload.data;
}

/** The length of `value` in code points (Python's `len`). */
function codePoints(value: string): number {
  return [...value].length;
}

// ---------------------------------------------------------------------------------------------
// Size, input kinds, UTF-8

Deno.test("size is checked before UTF-8 and parsing", () => {
  const garbage = new Uint8Array(33).fill(0xff);
  assertProtocolError(
    () => decodeEnvelope(garbage, { maxMessageBytes: 32 }),
    CODES.MESSAGE_TOO_LARGE,
    { message: "message size 33 exceeds limit 32" },
  );
  // At the limit the same bytes pass the size check and fail UTF-8.
  assertProtocolError(
    () => decodeEnvelope(garbage, { maxMessageBytes: 33 }),
    CODES.INVALID_JSON,
    { message: "message is not valid UTF-8" },
  );
  // Oversized deep nesting is refused before parsing.
  assertProtocolError(
    () => decodeEnvelope("[".repeat(100), { maxMessageBytes: 99 }),
    CODES.MESSAGE_TOO_LARGE,
    { message: "message size 100 exceeds limit 99" },
  );
});

Deno.test("size limit is inclusive and counts UTF-8 bytes", () => {
  const wire = eventText('{"text":"方块😀"}');
  const encoded = bytes(wire);
  assert(encoded.length > wire.length);
  for (const input of [encoded, wire]) {
    decodeEnvelope(input, { maxMessageBytes: encoded.length });
    assertProtocolError(
      () => decodeEnvelope(input, { maxMessageBytes: encoded.length - 1 }),
      CODES.MESSAGE_TOO_LARGE,
      { message: `message size ${encoded.length} exceeds limit ${encoded.length - 1}` },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(wire, { maxMessageBytes: wire.length }),
    CODES.MESSAGE_TOO_LARGE,
    { message: `message size ${encoded.length} exceeds limit ${wire.length}` },
  );
});

Deno.test("default limit is 1 MiB, inclusive, for encode and decode", () => {
  const base = eventText('{"s":""}').length;
  const fill = 1048576 - base;
  const atLimit = eventText(`{"s":"${"x".repeat(fill)}"}`);
  assertStrictEquals(atLimit.length, 1048576);
  const decoded = decodeEnvelope(atLimit);
  assertStrictEquals(encodeEnvelope(decoded).length, 1048576);
  const over = eventText(`{"s":"${"x".repeat(fill + 1)}"}`);
  assertProtocolError(() => decodeEnvelope(over), CODES.MESSAGE_TOO_LARGE, {
    message: "message size 1048577 exceeds limit 1048576",
  });
  const overEnvelope = decodeEnvelope(over, { maxMessageBytes: 2 * 1048576 });
  assertProtocolError(() => encodeEnvelope(overEnvelope), CODES.MESSAGE_TOO_LARGE, {
    message: "message size 1048577 exceeds limit 1048576",
  });
});

Deno.test("a bad maxMessageBytes is a RangeError", () => {
  const valid = eventText("{}");
  const envelope = decodeEnvelope(valid);
  for (const bad of [0, -1, 1.5, true, Number.NaN, Number.POSITIVE_INFINITY, "10"]) {
    const options = { maxMessageBytes: bad as number };
    const shown = typeof bad === "string" ? `"${bad}"` : String(bad);
    const rule = "as 'maxMessageBytes' must be a positive integer: current value is " + shown;
    assertThrows(
      () => decodeEnvelope(valid, options),
      RangeError,
      `Cannot decode an envelope ${rule}`,
    );
    assertThrows(
      () => decodeEnvelope(bytes(valid), options),
      RangeError,
      `Cannot decode an envelope ${rule}`,
    );
    assertThrows(
      () => encodeEnvelope(envelope, options),
      RangeError,
      `Cannot encode an envelope ${rule}`,
    );
    // Bytes: the limit is checked before UTF-8.
    assertThrows(
      () => decodeEnvelope(new Uint8Array([0xff]), options),
      RangeError,
      `Cannot decode an envelope ${rule}`,
    );
  }
  // Text: the string is encoded (and its scalar values checked) before the limit.
  assertProtocolError(
    () => decodeEnvelope("\ud800", { maxMessageBytes: 0 }),
    CODES.INVALID_JSON,
    { message: "message contains an invalid Unicode scalar value" },
  );
  assertStrictEquals(
    decodeEnvelope(valid, { maxMessageBytes: undefined }).messageType,
    "tool.event",
  );
  // An absent limit, from plain JavaScript as null too, is the Wire default.
  const absent = { maxMessageBytes: null as unknown as number };
  assertStrictEquals(decodeEnvelope(valid, absent).messageType, "tool.event");
  assertEquals(encodeEnvelope(envelope, absent), bytes(valid));
});

Deno.test("input kinds: bytes, views, buffers and strings; anything else is a TypeError", () => {
  const wire = eventText('{"k":"方块"}');
  const encoded = bytes(wire);
  const expected = decodeEnvelope(encoded).toWireObject();
  const padded = concat([0x20, 0x20], encoded, [0x20]);
  const inputs: (Uint8Array | ArrayBuffer | string)[] = [
    wire,
    encoded,
    encoded.slice().buffer,
    padded.subarray(2, 2 + encoded.length),
    new DataView(padded.buffer, 2, encoded.length) as unknown as Uint8Array,
  ];
  for (const input of inputs) assertEquals(decodeEnvelope(input).toWireObject(), expected);
  for (const bad of [42, null, undefined, {}, [123], new Uint16Array(2).buffer.constructor]) {
    assertThrows(
      () => decodeEnvelope(bad as unknown as string),
      TypeError,
      "data must be UTF-8 bytes or a string",
    );
  }
  assertThrows(
    () => encodeEnvelope({} as ToolEnvelope),
    TypeError,
    "envelope must be a ToolEnvelope",
  );
});

Deno.test("invalid UTF-8 anywhere is INVALID_JSON", () => {
  const [head, tail] = eventText('{"s":"@"}').split("@");
  const invalid = [
    [0xff],
    [0xc0, 0xaf], // overlong '/'
    [0xed, 0xa0, 0x80], // an encoded surrogate (CESU)
    [0xe6, 0x96], // truncated 方
    [0xf5, 0x80, 0x80, 0x80], // beyond U+10FFFF
    [0x80], // lone continuation byte
  ];
  for (const sequence of invalid) {
    assertProtocolError(
      () => decodeEnvelope(concat(bytes(head), sequence, bytes(tail))),
      CODES.INVALID_JSON,
      { message: "message is not valid UTF-8" },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(concat(bytes(eventText("{}")), [0xe6])),
    CODES.INVALID_JSON,
    {
      message: "message is not valid UTF-8",
    },
  );
});

Deno.test("a leading BOM is not stripped: INVALID_JSON", () => {
  const wire = eventText("{}");
  for (const input of [concat([0xef, 0xbb, 0xbf], bytes(wire)), "\ufeff" + wire]) {
    assertProtocolError(() => decodeEnvelope(input), CODES.INVALID_JSON, {
      message: "Unexpected UTF-8 BOM (decode using utf-8-sig)",
      path: "line 1 column 1",
    });
  }
  // U+FEFF inside a string is an ordinary character.
  assertEquals(decodeData('{"s":"\ufeff"}'), { s: "\ufeff" });
});

Deno.test("a string input with a lone surrogate is INVALID_JSON", () => {
  const [head, tail] = eventText('{"s":"@"}').split("@");
  for (const lone of ["\ud800", "\udfff", "\udc00\ud800", "x\ud83d"]) {
    assertProtocolError(() => decodeEnvelope(head + lone + tail), CODES.INVALID_JSON, {
      message: "message contains an invalid Unicode scalar value",
    });
  }
  // In a key, and even when the text is also oversized: encoding comes first.
  assertProtocolError(
    () => decodeEnvelope(eventText('{"\ud800":1}'), { maxMessageBytes: 10 }),
    CODES.INVALID_JSON,
    { message: "message contains an invalid Unicode scalar value" },
  );
  // A real astral character is fine.
  assertEquals(decodeData('{"s":"😀"}'), { s: "😀" });
});

// ---------------------------------------------------------------------------------------------
// Duplicate keys

Deno.test("duplicate keys at depth 1, 3 and inside arrays", () => {
  const dup = { message: "duplicate JSON object key: 'k'" };
  assertProtocolError(() => decodeEnvelope('{"k":1,"k":2}'), CODES.DUPLICATE_KEY, dup);
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, k: 1 }).replace("{", '{"k":0,')),
    CODES.DUPLICATE_KEY,
    dup,
  );
  assertProtocolError(() => decodeEnvelope(eventText('{"k":1,"k":2}')), CODES.DUPLICATE_KEY, dup);
  assertProtocolError(
    () => decodeEnvelope(eventText('{"list":[{"k":1},{"k":1,"j":0,"k":2}]}')),
    CODES.DUPLICATE_KEY,
    dup,
  );
  assertProtocolError(
    () => decodeEnvelope(eventText('[[{"x":[{"k":null,"k":null}]}]]')),
    CODES.DUPLICATE_KEY,
    dup,
  );
  // After a string or number in an array, a comma still belongs to the array; after the array,
  // to the object (the scan takes the comma after a value without its general dispatch).
  assertProtocolError(
    () => decodeEnvelope(eventText('{"k":["x","y",1,2],"j":"z","k":0}')),
    CODES.DUPLICATE_KEY,
    dup,
  );
  assertEquals(decodeData('{"k":["k","k",1],"j":{"k":"k","j":2}}'), {
    k: ["k", "k", 1],
    j: { k: "k", j: 2 },
  });
  // The same key in different objects is not a duplicate.
  assertEquals(decodeData('{"list":[{"k":1},{"k":2}],"k":{"k":3}}'), {
    list: [{ k: 1 }, { k: 2 }],
    k: { k: 3 },
  });
  // A duplicated envelope header.
  const twice = eventText("{}").replace('"endpoint_id":', '"endpoint_id":"x","endpoint_id":');
  assertProtocolError(() => decodeEnvelope(twice), CODES.DUPLICATE_KEY, {
    message: "duplicate JSON object key: 'endpoint_id'",
  });
  // Many keys (beyond any small-object fast case) with one duplicate at the end.
  const many = Array.from({ length: 40 }, (_, i) => `"key${i}":${i}`).join(",");
  assertProtocolError(() => decodeEnvelope(eventText(`{${many},"key7":0}`)), CODES.DUPLICATE_KEY, {
    message: "duplicate JSON object key: 'key7'",
  });
});

Deno.test("keys equal after unescaping are duplicates", () => {
  const cases: [string, string][] = [
    ['{"a":1,"\\u0061":2}', "duplicate JSON object key: 'a'"],
    ['{"\\u00e9":1,"é":2}', "duplicate JSON object key: 'é'"],
    ['{"😀":1,"\\ud83d\\ude00":2}', "duplicate JSON object key: '😀'"],
    ['{"a/b":1,"a\\/b":2}', "duplicate JSON object key: 'a/b'"],
    ['{"__proto__":1,"__proto__":2}', "duplicate JSON object key: '__proto__'"],
    // Python's repr of the key: double quotes when it holds a single quote; escapes.
    [`{"it's":1,"it's":2}`, `duplicate JSON object key: "it's"`],
    ['{"a\\nb":1,"a\\u000ab":2}', "duplicate JSON object key: 'a\\nb'"],
  ];
  for (const [data, message] of cases) {
    assertProtocolError(() => decodeEnvelope(eventText(data)), CODES.DUPLICATE_KEY, { message });
  }
});

// Pairs of 5-letter pieces with equal FNV-1a 32-bit hashes, each pair from the hash state the
// pieces before it leave: the first pair collides from the initial state, and every key made of
// one piece of each of the first k pairs has the same hash as the 2^k - 1 others.
const COLLIDING_PIECES: readonly (readonly [string, string])[] = [
  ["0gprb", "5n3o0"],
  ["52hip", "gj139"],
  ["awyt3", "09dqv"],
  ["ei48k", "6mnpf"],
  ["msu16", "v6qwh"],
  ["jdx1r", "8ybma"],
  ["kspnf", "0n7v1"],
  ["dkqjo", "rsop5"],
  ["7gi8y", "4oc4h"],
  ["6b6yn", "dw1ru"],
  ["3equ1", "4r2tc"],
];

/** The 2^pairs keys of one hash: every choice of one piece from each of the first pairs. */
function collidingKeys(pairs: number): string[] {
  let keys = [""];
  for (const [a, b] of COLLIDING_PIECES.slice(0, pairs)) {
    keys = keys.flatMap((key) => [key + a, key + b]);
  }
  return keys;
}

/** FNV-1a over the UTF-8 bytes of an ASCII key (the hash of the decoder's duplicate scan). */
function fnv1a(key: string): number {
  let hash = 0x811c9dc5 | 0;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash;
}

Deno.test("different keys with the same scan hash are not duplicates and stay on the fast path", () => {
  const [a, b] = collidingKeys(1);
  assertStrictEquals(fnv1a(a), fnv1a(b));
  // A small object (keys compared one by one) and a large one (keys in the hash table), each
  // nested in a large object.
  const filler = Array.from({ length: 40 }, (_, i) => `"f${i}":${i}`).join(",");
  for (
    const doc of [
      `{"${a}":1,"${b}":2}`,
      `{${filler},"${a}":1,"${b}":2}`,
      `{${filler},"inner":{"${a}":1,"x":[{"${b}":0}],"${b}":2},"${a}":3}`,
      `{${filler},"inner":{${filler},"${a}":1,"${b}":2},"${b}":3}`,
      // Sibling large objects with the same keys: a closed object's keys never match again.
      `{"list":[{${filler},"${a}":1},{${filler},"${a}":1,"${b}":2}],${filler}}`,
    ]
  ) {
    const parsed = parseStrictJsonBytes(bytes(doc));
    assertStrictEquals(parsed.normalized, true, doc);
    assertEquals(parsed.value, JSON.parse(doc));
    assertEquals(decodeData(doc), JSON.parse(doc));
  }
  // The same key twice among colliding keys is still a duplicate, in either kind of object.
  for (const doc of [`{"${a}":1,"${b}":2,"${a}":3}`, `{${filler},"${a}":1,"${b}":2,"${b}":3}`]) {
    assertProtocolError(() => decodeEnvelope(eventText(doc)), CODES.DUPLICATE_KEY, {
      message: `duplicate JSON object key: '${doc.endsWith(`"${a}":3}`) ? a : b}'`,
    });
  }
});

Deno.test("many distinct keys stay on the fast path", () => {
  // 32768 keys (the hash table grows many times) and among them 8 keys of one hash.
  const keys = Array.from({ length: 1 << 15 }, (_, i) => `k${i}`);
  keys.splice(1000, 0, ...collidingKeys(3));
  const doc = `{${keys.map((key, i) => `"${key}":${i}`).join(",")}}`;
  const parsed = parseStrictJsonBytes(bytes(doc));
  assertStrictEquals(parsed.normalized, true);
  assertEquals(Object.keys(parsed.value as object), keys);
});

Deno.test("keys crafted to share one hash end the scan early; the exact path decides", () => {
  // 2048 keys of one hash would cost the scan's hash table a quadratic number of probes: it gives
  // up within its linear probe budget and the exact path (linear) decodes the document.
  const keys = collidingKeys(11);
  assertStrictEquals(new Set(keys.map(fnv1a)).size, 1);
  const doc = `{${keys.map((key, i) => `"${key}":${i}`).join(",")}}`;
  const parsed = parseStrictJsonBytes(bytes(doc));
  assertStrictEquals(parsed.normalized, false);
  assertEquals(parsed.value, JSON.parse(doc));
  assertProtocolError(
    () => decodeEnvelope(eventText(`{${doc.slice(1, -1)},"${keys[5]}":0}`)),
    CODES.DUPLICATE_KEY,
    { message: `duplicate JSON object key: '${keys[5]}'` },
  );
});

Deno.test("duplicates are detected when an object closes", () => {
  // An earlier NaN or out-of-range integer in the same (unclosed) object wins.
  assertProtocolError(
    () => decodeEnvelope(eventText('{"k":1,"k":2,"n":NaN}')),
    CODES.INVALID_JSON,
    { message: "non-finite JSON number is not allowed: NaN" },
  );
  assertProtocolError(
    () => decodeEnvelope(eventText('{"k":1,"k":2,"n":9007199254740992}')),
    CODES.INVALID_JSON,
    { message: INT_RANGE },
  );
  // A syntax error in the same object wins too.
  assertProtocolError(() => decodeEnvelope(eventText('{"k":1,"k":2,"n":}')), CODES.INVALID_JSON);
  // A duplicate in an inner object that closed before a later NaN wins.
  assertProtocolError(
    () => decodeEnvelope(eventText('{"a":{"k":1,"k":2},"n":NaN}')),
    CODES.DUPLICATE_KEY,
    { message: "duplicate JSON object key: 'k'" },
  );
  // Innermost first.
  assertProtocolError(
    () => decodeEnvelope(eventText('{"k":1,"k":2,"a":{"j":1,"j":2}}')),
    CODES.DUPLICATE_KEY,
    { message: "duplicate JSON object key: 'j'" },
  );
  // A float overflow is not a parse error: the duplicate wins over 1e999.
  assertProtocolError(
    () => decodeEnvelope(eventText('{"k":1,"k":2,"n":1e999}')),
    CODES.DUPLICATE_KEY,
    { message: "duplicate JSON object key: 'k'" },
  );
});

// ---------------------------------------------------------------------------------------------
// Numbers

Deno.test("NaN, Infinity and -Infinity literals are INVALID_JSON", () => {
  for (const literal of ["NaN", "Infinity", "-Infinity"]) {
    const message = `non-finite JSON number is not allowed: ${literal}`;
    assertProtocolError(() => decodeEnvelope(eventText(`{"v":${literal}}`)), CODES.INVALID_JSON, {
      message,
    });
    assertProtocolError(() => decodeEnvelope(eventText(`[1,${literal}]`)), CODES.INVALID_JSON, {
      message,
    });
    assertProtocolError(() => decodeEnvelope(literal), CODES.INVALID_JSON, { message });
  }
  // Other spellings are plain syntax errors.
  for (const spelling of ["nan", "inf", "+1", ".5", "01", "1.", "-", "1e", "0x10"]) {
    assertProtocolError(() => decodeEnvelope(eventText(`{"v":${spelling}}`)), CODES.INVALID_JSON);
  }
});

Deno.test("integer tokens are range-checked exactly", () => {
  assertStrictEquals((decodeData(`{"v":${MAX}}`) as { v: number }).v, MAX);
  assertStrictEquals((decodeData(`{"v":-${MAX}}`) as { v: number }).v, -MAX);
  for (
    const token of [
      "9007199254740992",
      "-9007199254740992",
      "9007199254740993",
      "18014398509481984",
      "100000000000000000000",
      "-99999999999999999999999999",
    ]
  ) {
    assertProtocolError(() => decodeEnvelope(eventText(`{"v":${token}}`)), CODES.INVALID_JSON, {
      message: INT_RANGE,
    });
    assertProtocolError(() => decodeEnvelope(eventText(`[${token}]`)), CODES.INVALID_JSON, {
      message: INT_RANGE,
    });
  }
  // Also in a header.
  assertProtocolError(
    () => decodeEnvelope(eventText("{}").replace('"sequence":0', '"sequence":9007199254740992')),
    CODES.INVALID_JSON,
    { message: INT_RANGE },
  );
});

Deno.test("huge integer tokens cannot be parsed safely", () => {
  for (const token of ["9".repeat(5000), "-" + "9".repeat(5000), "1" + "0".repeat(4300)]) {
    assertProtocolError(
      () => decodeEnvelope(unregisterText(`{"value":${token}}`)),
      CODES.INVALID_JSON,
      {
        message: "integer cannot be parsed safely",
      },
    );
  }
  // Up to Python's 4300-digit conversion limit the token is parsed, then range-checked.
  assertProtocolError(
    () => decodeEnvelope(unregisterText(`{"value":${"9".repeat(4300)}}`)),
    CODES.INVALID_JSON,
    { message: INT_RANGE },
  );
});

Deno.test("float tokens are not range-checked but must be finite", () => {
  assertStrictEquals(
    (decodeData('{"v":9007199254740993.0}') as { v: number }).v,
    9007199254740992,
  );
  assertStrictEquals((decodeData('{"v":1.5e300}') as { v: number }).v, 1.5e300);
  assertStrictEquals((decodeData('{"v":1e2}') as { v: number }).v, 100);
  assertStrictEquals((decodeData('{"v":1.0}') as { v: number }).v, 1);
  assertStrictEquals((decodeData('{"v":-2.5E-3}') as { v: number }).v, -0.0025);
  for (const token of ["1e999", "-1e999", "1E400", "123456789e400"]) {
    assertProtocolError(
      () => decodeEnvelope(unregisterText(`{"value":${token}}`)),
      CODES.INVALID_PAYLOAD,
      {
        path: "payload.value",
        message: "floating-point values must be finite",
      },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(eventText('{"list":[1,1e999]}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.data.list[1]",
      message: "floating-point values must be finite",
    },
  );
});

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

Deno.test("-0 decodes to 0", () => {
  for (const data of ['{"v":-0}', '{"\\u0076":-0}']) {
    const value = (decodeData(data) as { v: number }).v;
    assert(Object.is(value, 0), `${data} decodes to +0`);
  }
  const encoded = text(encodeEnvelope(decodeEnvelope(eventText('{"v":-0}'))));
  assert(encoded.includes('"data":{"v":0}'));
});

/** A valid tool.invoke.request with empty arguments and deadline_ms 1800000000000, as text. */
function invokeText(): string {
  return text(encodeEnvelope(makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    context("vision.yolo", "detect", { deadlineMs: 1_800_000_000_000 }),
    { requestId: "request-1", endpointInstanceId: "instance-1" },
  )));
}

Deno.test("a float token is not an integer in the Wire's integer fields, even when integral", () => {
  // Python's isinstance(value, int) refuses 1.0, 0e0 and -0.0 from float tokens although they
  // equal integers; each integer field gives the error it gives any other non-integer there.
  const seq = { message: "must be an integer in [0, 9007199254740991]", path: "sequence" };
  // The last two are written with other digits but are integers as binary64 reads them.
  for (
    const token of [
      "1.0",
      "0e0",
      "1E0",
      "-0.0",
      "0.000",
      "3.0e0",
      "1.0000000000000001",
      "0.99999999999999999",
    ]
  ) {
    assertProtocolError(
      () => decodeEnvelope(eventText("{}").replace('"sequence":0', `"sequence":${token}`)),
      CODES.INVALID_MESSAGE,
      seq,
    );
  }
  assertEquals(decodeEnvelope(eventText("{}").replace('"sequence":0', '"sequence":7')).sequence, 7);
  // On a message without a sequence, a float one is still "present".
  assertProtocolError(
    () => decodeEnvelope(unregisterText().replace('"protocol"', '"sequence":1.0,"protocol"')),
    CODES.INVALID_MESSAGE,
    { message: "must be omitted for endpoint management messages", path: "sequence" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeText().replace('"protocol"', '"sequence":0.0,"protocol"')),
    CODES.INVALID_MESSAGE,
    { message: "must be omitted for non-event messages", path: "sequence" },
  );
  // Payload integer fields: deadline_ms, active_invocations, registry_revision, lease_ttl_ms and
  // max_concurrency.
  const invoke = invokeText().replace(
    '"deadline_ms":1800000000000',
    '"deadline_ms":1800000000000.0',
  );
  assert(invoke.includes('"deadline_ms":1800000000000.0'));
  assertProtocolError(() => decodeEnvelope(invoke), CODES.INVALID_PAYLOAD, {
    message:
      "deadline_ms must be a non-negative Unix epoch millisecond not greater than 9007199254740991",
    path: "payload.context",
  });
  const status = (n: string) =>
    `{"endpoint_id":"e","endpoint_instance_id":"x","message_type":"endpoint.status",` +
    `"payload":{"status":{"active_invocations":${n},"details":{},"state":"ready"}},` +
    `"protocol":"${PROTOCOL}"}`;
  assertEquals(decodeEnvelope(status("2")).payload, {
    status: { active_invocations: 2, details: {}, state: "ready" },
  });
  assertProtocolError(() => decodeEnvelope(status("2.0")), CODES.INVALID_PAYLOAD, {
    message: "active_invocations must be in [0, 9007199254740991]",
    path: "payload.status",
  });
  const registry = (revision: string, ttl: string) =>
    `{"endpoint_id":"e","endpoint_instance_id":"x","message_type":"endpoint.registry.response",` +
    `"payload":{"lease_ttl_ms":${ttl},"operation":"register","registry_revision":${revision},` +
    `"status":"accepted"},"protocol":"${PROTOCOL}","request_id":"r"}`;
  assertProtocolError(() => decodeEnvelope(registry("1.0", "1e3")), CODES.INVALID_PAYLOAD, {
    message: "registry_revision must be in [0, 9007199254740991]",
    path: "payload",
  });
  assertProtocolError(() => decodeEnvelope(registry("1", "1e3")), CODES.INVALID_PAYLOAD, {
    message: "lease_ttl_ms must be in [1, 9007199254740991] when provided",
    path: "payload",
  });
  const register = (maxConcurrency: string) =>
    `{"endpoint_id":"e","endpoint_instance_id":"x","message_type":"endpoint.register",` +
    `"payload":{"descriptor":{"endpoint_id":"e","operations":[{"cancellable":false,` +
    `"max_concurrency":${maxConcurrency},"name":"op","semantics":"query","status_supported":false,` +
    `"stoppable":false}],"protocol_version":"${PROTOCOL}"}},"protocol":"${PROTOCOL}",` +
    `"request_id":"r"}`;
  assertEquals(decodeEnvelope(register("4")).messageType, "endpoint.register");
  assertProtocolError(() => decodeEnvelope(register("4.0")), CODES.INVALID_PAYLOAD, {
    message: "max_concurrency must be in [1, 9007199254740991]",
    path: "payload.descriptor.operations[0]",
  });
  // Elsewhere a float token is plain data: the same number (written back as an integer, the
  // documented divergence), and a member named like an integer field is not one.
  const args = decodeEnvelope(
    invokeText().replace(
      '"arguments":{}',
      '"arguments":{"deadline_ms":1.0,"list":[2.0],"sequence":0e0}',
    ),
  );
  assertEquals(args.payload.arguments, { deadline_ms: 1, list: [2], sequence: 0 });
  assertEquals(
    new TextDecoder().decode(encodeEnvelope(args)).match(/"arguments":\{[^}]*\}/)?.[0],
    '"arguments":{"deadline_ms":1,"list":[2],"sequence":0}',
  );
});

// ---------------------------------------------------------------------------------------------
// Unicode scalar values

Deno.test("escaped lone surrogates are rejected where they land", () => {
  for (const escape of ["\\ud800", "\\udc00", "\\udc00\\ud800", "\\ud800\\u0041", "x\\uDBFF"]) {
    assertProtocolError(
      () => decodeEnvelope(unregisterText(`{"value":"${escape}"}`)),
      CODES.INVALID_PAYLOAD,
      { path: "payload.value", message: "must contain only valid Unicode scalar values" },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(unregisterText('{"\\ud800":1}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload",
      message: "object keys must contain only valid Unicode scalar values",
    },
  );
  assertProtocolError(
    () => decodeEnvelope(eventText('{"a":{"\\udfff":1}}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.data.a",
      message: "object keys must contain only valid Unicode scalar values",
    },
  );
  assertProtocolError(
    () => decodeEnvelope(eventText('{"a":["ok","\\ud800"]}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.data.a[1]",
      message: "must contain only valid Unicode scalar values",
    },
  );
  for (const field of ["endpoint_id", "endpoint_instance_id", "request_id"]) {
    assertProtocolError(
      () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, [field]: "x\ud800" })),
      CODES.INVALID_MESSAGE,
      { path: field, message: "must contain only valid Unicode scalar values" },
    );
  }
  for (const field of ["invocation_id", "attempt_id", "operation"]) {
    assertProtocolError(
      () =>
        decodeEnvelope(
          wireText({ ...EVENT_HEADERS, [field]: "\udc00" }, '{"data":{},"type":"progress"}'),
        ),
      CODES.INVALID_MESSAGE,
      { path: field, message: "must contain only valid Unicode scalar values" },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, protocol: "\ud800" })),
    CODES.UNSUPPORTED_VERSION,
    { path: "protocol", message: "expected 'forge.tool.endpoint/v1alpha1', found '\\ud800'" },
  );
});

Deno.test("an escaped surrogate pair is one astral character", () => {
  assertEquals(decodeData('{"s":"\\ud83d\\ude00","t":"\\uD834\\uDD1E"}'), { s: "😀", t: "𝄞" });
  assertEquals(decodeData('{"\\ud83d\\ude00":1}'), { "😀": 1 });
  const envelope = decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, request_id: "r-😀" }));
  assertStrictEquals(envelope.requestId, "r-\u{1F600}");
  // Written back raw.
  assert(
    text(encodeEnvelope(decodeEnvelope(eventText('{"s":"\\ud83d\\ude00"}')))).includes('"s":"😀"'),
  );
});

// ---------------------------------------------------------------------------------------------
// Nesting

/** `levels` nested `{"a": …}` objects around `leaf`; `key` is how the key is spelled. */
function nestedObjects(levels: number, leaf: string, key = '"a"'): string {
  return `{${key}:`.repeat(levels) + leaf + "}".repeat(levels);
}

Deno.test("payload nesting: depth 64 passes, depth 65 is INVALID_PAYLOAD with the full path", () => {
  // The event's data is at depth 1, so a leaf under m nested objects is at depth 1 + m.
  for (const key of ['"a"', '"\\u0061"']) {
    for (const leaf of ["1", "{}", "[]", '"s"']) {
      decodeEnvelope(eventText(nestedObjects(63, leaf, key)));
      assertProtocolError(
        () => decodeEnvelope(eventText(nestedObjects(64, leaf, key))),
        CODES.INVALID_PAYLOAD,
        { path: "payload.data" + ".a".repeat(64), message: "JSON nesting exceeds 64" },
      );
    }
  }
  // Arrays count the same way ("a" is at depth 2, so m arrays put the leaf at depth 2 + m).
  decodeEnvelope(eventText(`{"a":${"[".repeat(62)}1${"]".repeat(62)}}`));
  assertProtocolError(
    () => decodeEnvelope(eventText(`{"a":${"[".repeat(63)}1${"]".repeat(63)}}`)),
    CODES.INVALID_PAYLOAD,
    { path: "payload.data.a" + "[0]".repeat(63), message: "JSON nesting exceeds 64" },
  );
  // Unregister's payload members are at depth 1.
  assertProtocolError(
    () => decodeEnvelope(unregisterText(nestedObjects(65, "1"))),
    CODES.INVALID_PAYLOAD,
    { path: "payload" + ".a".repeat(65), message: "JSON nesting exceeds 64" },
  );
  // Far deeper than 64 but within the parser: still the payload rule, at the first level past 64.
  assertProtocolError(
    () => decodeEnvelope(unregisterText(`{"a":${"[".repeat(500)}${"]".repeat(500)}}`)),
    CODES.INVALID_PAYLOAD,
    { path: "payload.a" + "[0]".repeat(64), message: "JSON nesting exceeds 64" },
  );
});

/** `envelope` with `payload` put in behind the constructor's back (a cast in plain JavaScript). */
function withPayload(envelope: ToolEnvelope, payload: unknown): ToolEnvelope {
  return Object.assign(Object.create(ToolEnvelope.prototype), envelope, { payload });
}

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

Deno.test("parser resource limits end in a ToolProtocolError", () => {
  const brackets = "[".repeat(1048576);
  const objects = '{"a":'.repeat(Math.floor(1048576 / 5));
  for (const input of [brackets, objects, "[".repeat(2000) + "]".repeat(2000)]) {
    const error = assertThrows(() => decodeEnvelope(input), ToolProtocolError);
    assertStrictEquals(error.code, CODES.INVALID_JSON);
    const fromBytes = assertThrows(() => decodeEnvelope(bytes(input)), ToolProtocolError);
    assertStrictEquals(fromBytes.code, CODES.INVALID_JSON);
  }
  const bigger = assertThrows(
    () => decodeEnvelope("[".repeat(4 * 1048576), { maxMessageBytes: 4 * 1048576 }),
    ToolProtocolError,
  );
  assertStrictEquals(bigger.code, CODES.INVALID_JSON);
  // Deep nesting inside a valid envelope's payload.
  const [head, tail] = unregisterText('{"a":@}').split("@");
  const inside = assertThrows(
    () => decodeEnvelope(head + "[".repeat(100000) + "]".repeat(100000) + tail),
    ToolProtocolError,
  );
  assertStrictEquals(inside.code, CODES.INVALID_JSON);
});

Deno.test("the exact parser follows MAX_PARSE_NESTING containers and names the one past it", () => {
  const depth = MAX_PARSE_NESTING;
  const arrays = "[".repeat(depth) + "]".repeat(depth);
  assertEquals(JSON.stringify(parseStrictJsonText(arrays).value), arrays);
  const objects = '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
  assertEquals(JSON.stringify(parseStrictJsonText(objects).value), objects);
  // An empty container counts too: the bound is checked before its contents are read.
  const cases: [string, string][] = [
    ["[".repeat(depth) + "[]" + "]".repeat(depth), "array"],
    ['{"a":'.repeat(depth) + "{}" + "}".repeat(depth), "object"],
    ["[".repeat(depth) + "{}" + "]".repeat(depth), "object"],
    ['{"a":'.repeat(depth) + "[" + "}".repeat(depth), "array"],
  ];
  for (const [input, kind] of cases) {
    assertProtocolError(() => parseStrictJsonText(input), CODES.INVALID_JSON, {
      message:
        `maximum recursion depth exceeded while decoding a JSON ${kind} from a unicode string`,
    });
  }
});

Deno.test("the exact parser and the fast path decode the same values", () => {
  const documents = [
    "{}",
    "[]",
    ' { "a" : [ 1 , -2 , 3.25 , "x\\n\\u00e9" , true , false , null ] } ',
    '{"b":{"c":{}},"a":[[],[{}]],"__proto__":{"d":"e"},"1":0,"z":"😀é"}',
    '{"s":"\\"\\\\\\/\\b\\f\\n\\r\\t","n":-12345.5,"i":9007199254740,"f":0.125}',
  ];
  for (const document of documents) {
    const fast = parseStrictJsonBytes(bytes(document));
    assertStrictEquals(fast.normalized, true, document);
    const exact = parseStrictJsonText(document);
    assertStrictEquals(exact.normalized, false, document);
    assertEquals(exact.value, fast.value, document);
    // Same key order at every level, and "__proto__" an own key in both.
    assertStrictEquals(JSON.stringify(exact.value), JSON.stringify(fast.value), document);
  }
});

// ---------------------------------------------------------------------------------------------
// Syntax, top level, whitespace

Deno.test("trailing data is INVALID_JSON at its line and column", () => {
  const wire = eventText("{}");
  assertProtocolError(() => decodeEnvelope(wire + " x"), CODES.INVALID_JSON, {
    message: "Extra data",
    path: `line 1 column ${wire.length + 2}`,
  });
  assertProtocolError(() => decodeEnvelope(wire + wire), CODES.INVALID_JSON, {
    message: "Extra data",
    path: `line 1 column ${wire.length + 1}`,
  });
  assertProtocolError(() => decodeEnvelope(wire + "\n\n  }"), CODES.INVALID_JSON, {
    message: "Extra data",
    path: "line 3 column 3",
  });
  // Columns count code points, as Python does.
  const astral = eventText('{"s":"😀😀"}');
  assertProtocolError(() => decodeEnvelope(astral + "x"), CODES.INVALID_JSON, {
    message: "Extra data",
    path: `line 1 column ${codePoints(astral) + 1}`,
  });
  assertProtocolError(() => decodeEnvelope(bytes(astral + "x")), CODES.INVALID_JSON, {
    path: `line 1 column ${codePoints(astral) + 1}`,
  });
  // Trailing JSON whitespace is fine.
  decodeEnvelope(wire + " \t\r\n");
});

Deno.test("syntax errors carry the parser message and position", () => {
  const cases: [string, string, string][] = [
    ["", "Expecting value", "line 1 column 1"],
    ["{", "Expecting property name enclosed in double quotes", "line 1 column 2"],
    ['{"a"}', "Expecting ':' delimiter", "line 1 column 5"],
    ['{"a":1 "b":2}', "Expecting ',' delimiter", "line 1 column 8"],
    ['{"a":1,}', "Expecting property name enclosed in double quotes", "line 1 column 8"],
    ['{"a":[1,]}', "Expecting value", "line 1 column 9"],
    ['{"a":"x', "Unterminated string starting at", "line 1 column 6"],
    ['{"a":"\\q"}', "Invalid \\escape", "line 1 column 7"],
    ['{"a":"\t"}', "Invalid control character at", "line 1 column 7"],
    ["{'a':1}", "Expecting property name enclosed in double quotes", "line 1 column 2"],
  ];
  for (const [input, message, path] of cases) {
    assertProtocolError(() => decodeEnvelope(input), CODES.INVALID_JSON, { message, path });
  }
});

Deno.test("a non-object top level is INVALID_MESSAGE", () => {
  for (const input of ["[]", "1", "null", '"s"', "true", "[{}]", " 1.5 "]) {
    assertProtocolError(() => decodeEnvelope(input), CODES.INVALID_MESSAGE, {
      message: "top-level JSON value must be an object",
    });
  }
});

Deno.test("JSON whitespace is only space, tab, LF and CR", () => {
  const wire = eventText('{"list":[1,"two",{"k":null}]}');
  const expected = decodeEnvelope(wire).toWireObject();
  // Space, tab, LF and CR around every token are fine.
  const spaced = wire.replace(/([{}[\],:])/g, " \t$1\r\n ");
  assertEquals(decodeEnvelope(spaced).toWireObject(), expected);
  assertEquals(
    decodeEnvelope(JSON.stringify(JSON.parse(wire), null, "\t")).toWireObject(),
    expected,
  );
  // Anything else between tokens is a syntax error.
  for (const space of ["\u00a0", "\u000b", "\u000c", "\u2028", "\u3000", "\u0085", "\u001f"]) {
    assertProtocolError(() => decodeEnvelope("{" + space + wire.slice(1)), CODES.INVALID_JSON, {
      message: "Expecting property name enclosed in double quotes",
      path: "line 1 column 2",
    });
    assertProtocolError(() => decodeEnvelope(space + wire), CODES.INVALID_JSON, {
      message: "Expecting value",
      path: "line 1 column 1",
    });
    assertProtocolError(() => decodeEnvelope(wire + space), CODES.INVALID_JSON, {
      message: "Extra data",
      path: `line 1 column ${wire.length + 1}`,
    });
    assertProtocolError(
      () => decodeEnvelope(wire.replace('"list":', `"list":${space}`)),
      CODES.INVALID_JSON,
      { message: "Expecting value" },
    );
  }
});

// ---------------------------------------------------------------------------------------------
// Field stages and precedence (notes d.3 steps 3–8 and i.12)

const INVOKE_WIRE: Readonly<Record<string, unknown>> = Object.freeze({
  protocol: PROTOCOL,
  message_type: "tool.invoke.request",
  request_id: "request-1",
  invocation_id: "invocation-1",
  attempt_id: "attempt-1",
  endpoint_id: "vision.yolo",
  endpoint_instance_id: "instance-1",
  operation: "detect",
  payload: {
    arguments: {},
    context: { tool_id: "forge.tool.detect", implementation_id: "yolo", metadata: {} },
  },
});

/** The invoke Wire text with fields changed (`undefined` removes a field). */
function invokeWith(changes: Record<string, unknown>, payloadJson?: string): string {
  const object: Record<string, unknown> = { ...INVOKE_WIRE, ...changes };
  for (const key of Object.keys(object)) if (object[key] === undefined) delete object[key];
  if (payloadJson === undefined) return JSON.stringify(object);
  const { payload: _, ...headers } = object;
  return wireText(headers, payloadJson);
}

Deno.test("the base invoke of the precedence tests is valid", () => {
  assertEquals(decodeEnvelope(invokeWith({})).toWireObject(), INVOKE_WIRE);
  assertEquals(
    decodeEnvelope(invokeWith({}, JSON.stringify(INVOKE_WIRE.payload))).toWireObject(),
    INVOKE_WIRE,
  );
});

interface Rule {
  readonly name: string;
  /** Header changes that break this rule (`undefined` removes a field). */
  readonly changes: Record<string, unknown>;
  /** A raw payload JSON that breaks this rule, when the rule is about the payload. */
  readonly payload?: string;
  readonly code: string;
  readonly expected: { path?: string | null; message?: string };
}

const CONTEXT_JSON = '{"implementation_id":"yolo","metadata":{},"tool_id":"forge.tool.detect"}';
const V2 = "forge.tool.endpoint/v2";

// The rules of i.12, highest precedence first.
const RULES: readonly Rule[] = [
  {
    name: "unknown field",
    changes: { bogus: 1 },
    code: CODES.INVALID_MESSAGE,
    expected: { message: "unknown envelope fields: bogus" },
  },
  {
    name: "missing field",
    changes: { endpoint_id: undefined },
    code: CODES.INVALID_MESSAGE,
    expected: { message: "missing envelope fields: endpoint_id" },
  },
  {
    name: "explicit null",
    changes: { request_id: null },
    code: CODES.INVALID_MESSAGE,
    expected: { message: "optional fields must be omitted rather than null: request_id" },
  },
  {
    name: "protocol",
    changes: { protocol: V2 },
    code: CODES.UNSUPPORTED_VERSION,
    expected: { path: "protocol", message: `expected '${PROTOCOL}', found '${V2}'` },
  },
  {
    name: "message_type",
    changes: { message_type: "tool.bogus" },
    code: CODES.UNKNOWN_MESSAGE_TYPE,
    expected: { path: "message_type", message: "unsupported message type: 'tool.bogus'" },
  },
  {
    name: "payload type",
    changes: { payload: [] },
    code: CODES.INVALID_PAYLOAD,
    expected: { path: "payload", message: "must be a JSON object" },
  },
  {
    name: "endpoint_id",
    changes: { endpoint_id: " " },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "endpoint_id", message: "must be a non-empty string" },
  },
  {
    name: "endpoint_instance_id",
    changes: { endpoint_instance_id: "" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "endpoint_instance_id", message: "must be a non-empty string" },
  },
  {
    name: "invocation_id",
    changes: { invocation_id: "\t" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "invocation_id", message: "must be a non-empty string" },
  },
  {
    name: "attempt_id",
    changes: { attempt_id: 1 },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "attempt_id", message: "must be a non-empty string" },
  },
  {
    name: "operation",
    changes: { operation: "\u3000" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "operation", message: "must be a non-empty string" },
  },
  {
    name: "request_id",
    changes: { request_id: "" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "request_id", message: "must be a non-empty string" },
  },
  {
    name: "sequence",
    changes: { sequence: 0 },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "sequence", message: "must be omitted for non-event messages" },
  },
  {
    name: "payload normalisation",
    changes: {},
    payload: `{"arguments":{"x":1e999},"context":${CONTEXT_JSON}}`,
    code: CODES.INVALID_PAYLOAD,
    expected: { path: "payload.arguments.x", message: "floating-point values must be finite" },
  },
  {
    name: "typed payload",
    changes: {},
    payload: '{"arguments":{}}',
    code: CODES.INVALID_PAYLOAD,
    expected: { path: "payload", message: "missing fields: context" },
  },
];

Deno.test("precedence (i.12): each rule fires alone", async (t) => {
  for (const rule of RULES) {
    await t.step(rule.name, () => {
      assertProtocolError(
        () => decodeEnvelope(invokeWith(rule.changes, rule.payload)),
        rule.code,
        rule.expected,
      );
    });
  }
});

Deno.test("precedence (i.12): one case per adjacent pair of rules", async (t) => {
  for (let i = 0; i + 1 < RULES.length; i++) {
    const winner = RULES[i];
    const loser = RULES[i + 1];
    await t.step(`${winner.name} > ${loser.name}`, () => {
      // Both payload rules at once: a non-finite value in a payload that also lacks context.
      const payload = winner.payload !== undefined && loser.payload !== undefined
        ? '{"arguments":{"x":1e999}}'
        : winner.payload ?? loser.payload;
      const input = invokeWith({ ...loser.changes, ...winner.changes }, payload);
      assertProtocolError(() => decodeEnvelope(input), winner.code, winner.expected);
    });
  }
});

Deno.test("field stages list fields sorted, and events and management order their own checks", () => {
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ zeta: 1, alpha: 2, "é": 3 })),
    CODES.INVALID_MESSAGE,
    { message: "unknown envelope fields: alpha, zeta, é" },
  );
  assertProtocolError(
    () =>
      decodeEnvelope(invokeWith({
        protocol: undefined,
        payload: undefined,
        message_type: undefined,
        endpoint_instance_id: undefined,
      })),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_instance_id, message_type, payload, protocol" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ request_id: null, attempt_id: null, sequence: null })),
    CODES.INVALID_MESSAGE,
    {
      message: "optional fields must be omitted rather than null: attempt_id, request_id, sequence",
    },
  );
  // tool.event: request_id present is refused before the sequence is looked at.
  const event = wireText(
    { ...EVENT_HEADERS, request_id: "r", sequence: -1 },
    '{"data":{},"type":"progress"}',
  );
  assertProtocolError(() => decodeEnvelope(event), CODES.INVALID_MESSAGE, {
    path: "request_id",
    message: "must be omitted for tool.event",
  });
  // endpoint.status: request_id before the forbidden execution fields.
  const status = wireText({
    ...UNREGISTER_HEADERS,
    message_type: "endpoint.status",
    request_id: "s",
    invocation_id: "i",
  });
  assertProtocolError(() => decodeEnvelope(status), CODES.INVALID_MESSAGE, {
    path: "request_id",
    message: "must be omitted for unsolicited endpoint.status",
  });
  // Management: forbidden fields in order invocation_id, attempt_id, operation, sequence.
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, sequence: 0, operation: "o" })),
    CODES.INVALID_MESSAGE,
    { path: "operation", message: "must be omitted for endpoint management messages" },
  );
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, sequence: 0, attempt_id: "a" })),
    CODES.INVALID_MESSAGE,
    { path: "attempt_id" },
  );
});

Deno.test("the instance is required unless message_type is a string starting with 'tool.'", () => {
  assertProtocolError(
    () =>
      decodeEnvelope(invokeWith({ message_type: "tool-invoke", endpoint_instance_id: undefined })),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_instance_id" },
  );
  assertProtocolError(
    () =>
      decodeEnvelope(invokeWith({ message_type: "tool.bogus", endpoint_instance_id: undefined })),
    CODES.UNKNOWN_MESSAGE_TYPE,
    { path: "message_type", message: "unsupported message type: 'tool.bogus'" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ message_type: 5, endpoint_instance_id: undefined })),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_instance_id" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ message_type: 5 })),
    CODES.UNKNOWN_MESSAGE_TYPE,
    { path: "message_type", message: "unsupported message type: 5" },
  );
  // A valid tool.* type may omit it.
  assertStrictEquals(
    decodeEnvelope(invokeWith({ endpoint_instance_id: undefined })).endpointInstanceId,
    undefined,
  );
});

Deno.test("explicit null in a required field fails at that field's check", () => {
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ endpoint_id: null })),
    CODES.INVALID_MESSAGE,
    {
      path: "endpoint_id",
      message: "must be a non-empty string",
    },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ protocol: null })),
    CODES.UNSUPPORTED_VERSION,
    {
      path: "protocol",
      message: `expected '${PROTOCOL}', found None`,
    },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ message_type: null })),
    CODES.UNKNOWN_MESSAGE_TYPE,
    { path: "message_type", message: "unsupported message type: None" },
  );
  assertProtocolError(() => decodeEnvelope(invokeWith({ payload: null })), CODES.INVALID_PAYLOAD, {
    path: "payload",
    message: "must be a JSON object",
  });
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, endpoint_instance_id: null })),
    CODES.INVALID_MESSAGE,
    { message: "optional fields must be omitted rather than null: endpoint_instance_id" },
  );
});

// ---------------------------------------------------------------------------------------------
// "__proto__" is data

Deno.test('"__proto__" in a payload is an own data property, never a prototype', () => {
  const payload =
    '{"arguments":{"__proto__":{"polluted":1}},"context":{"implementation_id":"yolo",' +
    '"metadata":{},"tool_id":"forge.tool.detect"}}';
  // The second spelling forces the decoder's exact path (an escaped key).
  for (const spelled of [payload, payload.replace('"tool_id"', '"\\u0074ool_id"')]) {
    const envelope = decodeEnvelope(invokeWith({}, spelled));
    const args = envelope.payload.arguments as Record<string, unknown>;
    assertStrictEquals(Object.getPrototypeOf(args), Object.prototype);
    assert(Object.hasOwn(args, "__proto__"));
    assertEquals(Object.keys(args), ["__proto__"]);
    assertEquals(args.__proto__, { polluted: 1 });
    // deno-lint-ignore no-explicit-any
    assertStrictEquals(({} as any).polluted, undefined);
    // deno-lint-ignore no-explicit-any
    assertStrictEquals((args as any).polluted, undefined);
    // Through the typed adapter into the model.
    const { request } = invokeRequestFromEnvelope(envelope);
    assertStrictEquals(Object.getPrototypeOf(request.arguments), Object.prototype);
    assert(Object.hasOwn(request.arguments, "__proto__"));
    assertEquals(request.arguments.__proto__, { polluted: 1 });
    // And back out.
    const encoded = text(encodeEnvelope(envelope));
    assert(encoded.includes('"arguments":{"__proto__":{"polluted":1}}'), encoded);
  }
  // A constructed envelope copies it as data, too.
  const constructed = new ToolEnvelope({
    messageType: "tool.invoke.request",
    requestId: "request-1",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    operation: "detect",
    payload: JSON.parse(payload),
  });
  const args = constructed.payload.arguments as Record<string, unknown>;
  assertStrictEquals(Object.getPrototypeOf(args), Object.prototype);
  assert(Object.hasOwn(args, "__proto__"));
  assert(text(encodeEnvelope(constructed)).includes('"__proto__":{"polluted":1}'));
  // deno-lint-ignore no-explicit-any
  assertStrictEquals(({} as any).polluted, undefined);
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

// The strict JSON decoder's entry and fast path (src/wire/_json_decode.ts, _json_scan.ts): size,
// input kinds and UTF-8 before parsing, duplicate keys (the scan's hash check and its probe
// budget), and the fast path against the exact parser, through decodeEnvelope with exact codes,
// messages and paths (reference notes d.2, i.1–i.13). Stays whole (over 400 lines): one suite of
// what the decoder checks before and instead of the exact parser.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { decodeEnvelope, encodeEnvelope, type ToolEnvelope } from "../../wire.ts";
import {
  assertProtocolError,
  bytes,
  CODES,
  concat,
  eventText,
  UNREGISTER_HEADERS,
  wireText,
} from "../_helpers.ts";
import { parseStrictJsonBytes, parseStrictJsonText } from "../../src/wire/_json_decode.ts";
import { decodeData, INT_RANGE } from "./_fixtures.ts";

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
// The fast path against the exact parser

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

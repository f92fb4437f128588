// The fast path's adoption of JSON.parse output (src/_internal/json_parsed.ts): frozen deeply in
// place, and a canonical root exactly when it holds what copyJson would have built, so the
// models, the gateway's forwarded copy and the encoders take a typical decoded payload as it is.
import { assert, assertEquals, assertStrictEquals } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import { context as helperContext } from "../_helpers.ts";
import { decodeEnvelope, encodeEnvelope, makeInvokeRequestEnvelope } from "../../wire.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "../../dora.ts";
import { invokeRequestFromEnvelope } from "../../src/wire/invoke_request.ts";
import fc from "fast-check";
import {
  canonicalHeight,
  canonicalNeedsWriter,
  canonicalText,
  copyJson,
  modelFaults,
} from "../../src/_internal/json.ts";
import { sealParsedJson } from "../../src/_internal/json_parsed.ts";
import { parseStrictJsonBytes } from "../../src/wire/_json_decode.ts";
import { encodeJson } from "../../src/wire/_json_encode.ts";

const context = helperContext();

/** The Wire bytes of an invoke request whose `arguments` text is `args`. */
function requestBytes(args: string): Uint8Array {
  const built = makeInvokeRequestEnvelope(new ToolRequest({ arguments: { x: 1 } }), context, {
    requestId: "request-1",
    endpointInstanceId: undefined,
  });
  const text = new TextDecoder().decode(encodeEnvelope(built)).replace('{"x":1}', args);
  return new TextEncoder().encode(text);
}

Deno.test("sealParsedJson: a sorted parse result becomes the canonical root copyJson would build", () => {
  for (
    const [text, height, writer] of [
      ['{"a":[1,{"b":"c"}],"d":0.5}', 3, false],
      ['{"a":1e-5}', 1, true],
      ["{}", 0, false],
      // Code point order (U+FFFF before U+1F600), which UTF-16 unit order reverses.
      ['{"\uFFFF":2,"\u{1F600}":1}', 1, false],
    ] as const
  ) {
    const value = JSON.parse(text);
    assertEquals(sealParsedJson(value), height, text);
    assertEquals(canonicalHeight(value), height, text);
    assertEquals(canonicalNeedsWriter(value), writer, text);
    assert(Object.isFrozen(value), text);
    for (const member of Object.values(value)) {
      if (typeof member === "object") assert(Object.isFrozen(member), text);
    }
    // A copy takes it as it is, and it equals what the copy builds from scratch.
    assertStrictEquals(copyJson(value, "value", modelFaults), value);
    const fresh = copyJson(JSON.parse(text), "value", modelFaults);
    assertEquals(value, fresh, text);
    assertEquals(canonicalNeedsWriter(fresh as object), writer, text);
  }
});

Deno.test("sealParsedJson: unsorted keys, array-index keys, -0 and deep values stay unmarked, frozen", () => {
  const deep = "[".repeat(65) + "]".repeat(65);
  const utf16Order = '{"\u{1F600}":1,"\uFFFF":2}'; // sorted by UTF-16 unit, not by code point
  for (
    const text of ['{"b":1,"a":2}', '{"0":true}', '{"n":{"x":-0}}', `{"d":${deep}}`, utf16Order]
  ) {
    const value = JSON.parse(text);
    sealParsedJson(value);
    assertStrictEquals(canonicalHeight(value), undefined, text);
    assert(Object.isFrozen(value), text);
  }
});

Deno.test("a typical decoded payload is adopted by the models (JSON and IPC), with the same bytes", () => {
  const bytes = requestBytes('{"classes":["cube"],"roi":{"x":1,"y":2},"threshold":0.5}');
  const fromJson = decodeEnvelope(bytes);
  const fromIpc = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(fromJson));
  for (const envelope of [fromJson, fromIpc]) {
    assertEquals(canonicalHeight(envelope.payload), 3);
    const { request } = invokeRequestFromEnvelope(envelope);
    // Adopted, not copied: the model holds the decoded object itself.
    assertStrictEquals(request.arguments, envelope.payload.arguments);
    assertEquals(encodeEnvelope(envelope), bytes);
  }
  // Tokens the Wire rewrites keep today's bytes: `-0` is written 0, unsorted keys sorted.
  for (
    const [args, written] of [
      ['{"z":-0}', '{"z":0}'],
      ['{"b":1,"a":2}', '{"a":2,"b":1}'],
      ['{"10":1,"9":2}', '{"10":1,"9":2}'],
    ]
  ) {
    const decoded = decodeEnvelope(requestBytes(args));
    assertEquals(
      new TextDecoder().decode(encodeEnvelope(decoded)),
      new TextDecoder().decode(requestBytes(written)),
    );
    const viaIpc = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(decoded));
    assertEquals(encodeEnvelope(viaIpc), requestBytes(written));
  }
});

/** The seal of the strict parse of `text` (a JSON object), with the compact text it proved. */
function sealedParse(text: string): object {
  const parsed = parseStrictJsonBytes(new TextEncoder().encode(text));
  const value = parsed.value as object;
  if (parsed.normalized) sealParsedJson(value, parsed.compactText);
  return value;
}

/** `encodeJson` of a plain, unfrozen copy of `value`: the encoder's own output, computed. */
function encodedFresh(value: object): string {
  return encodeJson(JSON.parse(JSON.stringify(value)));
}

Deno.test("a decoded root keeps its text only when the text is exactly what the encoder writes", () => {
  const tokens = [
    "0.1",
    "0.10",
    "1.5e2",
    "100",
    "-3.25",
    "0.30000000000000004",
    "0.0001",
    "0.00005",
    "1e-7",
    "123456789012345.6",
    "12345678901234.5",
    "0.123456789012345",
    "0.1234567890123456",
    "9007199254740991",
    "-12",
    "true",
    "null",
    '"a\\u0041"',
    '"\\n"',
    '"é"',
    '"\\u00e9"',
    '"\\/"',
    '"\\""',
    '"\u2028"',
    "[]",
    "{}",
    "[1, 2]",
    "[1,2]",
  ];
  let kept = 0;
  for (const token of tokens) {
    for (const text of [`{"a":${token}}`, `{"b":[${token}],"a":1}`, `{"a":{"z":${token}}}`]) {
      const value = sealedParse(text);
      const own = canonicalText(value);
      if (own === undefined) continue;
      kept++;
      assertStrictEquals(own, text, `${text}: the text kept is the text read`);
      assertStrictEquals(encodedFresh(value), text, `${text}: kept, so the encoder writes it`);
      assertStrictEquals(encodeJson(value), text);
    }
  }
  // Sorted, compact, shortest: kept. Whitespace, escapes, trailing zeros, exponents, 16+
  // significant digits, floats below 1e-4 and unsorted keys: not kept.
  for (
    const text of [
      '{"a":0.1}',
      '{"a":[1,2],"b":"é"}',
      '{"a":-3.25,"b":{"c":null,"d":true}}',
      '{"a":12345678901234.5}',
      '{"a":"\u2028"}',
      '{"a":0.0001}',
    ]
  ) assertStrictEquals(canonicalText(sealedParse(text)), text);
  for (
    const text of [
      '{"a": 0.1}',
      '{"a":0.10}',
      '{"a":"\\u0041"}',
      '{"a":"\\n"}',
      '{"a":0.1234567890123456}',
      '{"a":123456789012345.6}',
      '{"a":0.00005}',
      '{"b":1,"a":2}',
      ' {"a":1}',
    ]
  ) assertStrictEquals(canonicalText(sealedParse(text)), undefined, text);
  assert(kept > 10);
});

Deno.test("property: whatever text a root keeps is the encoder's output for it", () => {
  let kept = 0;
  const printable = fc.string({ unit: "binary", maxLength: 6 });
  const leaf = fc.oneof(
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer({ min: -1e6, max: 1e6 }),
    fc.constantFrom(0.35, 1.5, -2.25, 1e-5, 0.0001, 123.456, 1e21, 5e-324),
    fc.boolean(),
    fc.constant(null),
    printable,
  );
  const tree = fc.letrec((tie) => ({
    value: fc.oneof({ depthSize: "small" }, leaf, tie("array"), tie("object")),
    array: fc.array(tie("value"), { maxLength: 3 }),
    object: fc.dictionary(printable, tie("value"), { maxKeys: 4 }),
  }));
  fc.assert(
    fc.property(fc.dictionary(printable, tree.value, { maxKeys: 4 }), fc.nat(3), (root, form) => {
      let text: string;
      try {
        text = [
          () => encodeJson(root),
          () => JSON.stringify(root),
          () => JSON.stringify(root, null, 1),
          () => encodeJson(root).replace(/(\.\d*[1-9])(?=[,}\]])/, "$10"),
        ][form]();
      } catch {
        return; // a value the Wire refuses (a lone surrogate, an integer out of range)
      }
      let value: object;
      try {
        value = sealedParse(text);
      } catch {
        return;
      }
      const own = canonicalText(value);
      if (own === undefined) return;
      kept++;
      assertStrictEquals(own, encodedFresh(value), text);
    }),
    { numRuns: 2000 },
  );
  assert(kept > 200, `only ${kept} of 2,000 roots kept a text`);
});

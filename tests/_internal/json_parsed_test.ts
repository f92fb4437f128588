// The fast path's adoption of JSON.parse output (src/_internal/json_parsed.ts): frozen deeply in
// place, and a canonical root exactly when it holds what copyJson would have built, so the
// models, the gateway's forwarded copy and the encoders take a typical decoded payload as it is.
import { assert, assertEquals, assertStrictEquals } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import { context as helperContext } from "../_helpers.ts";
import { decodeEnvelope, encodeEnvelope, makeInvokeRequestEnvelope } from "../../wire.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "../../dora.ts";
import { invokeRequestFromEnvelope } from "../../src/wire/invoke_request.ts";
import {
  canonicalHeight,
  canonicalNeedsWriter,
  copyJson,
  modelFaults,
} from "../../src/_internal/json.ts";
import { sealParsedJson } from "../../src/_internal/json_parsed.ts";

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

// Property tests of the Wire codec: random valid envelopes of all 14 message types (built with
// the factories and typed adapters) survive encode -> decode -> encode exactly, and mutated
// encodings only ever decode or fail with a ToolProtocolError. Seeded and deterministic.
import { assert, assertEquals, AssertionError, assertStrictEquals } from "@std/assert";
import {
  decodeEnvelope,
  encodedEnvelopeSize,
  encodeEnvelope,
  TOOL_MESSAGE_TYPES,
  type ToolEnvelope,
  ToolProtocolError,
  validateManagementResponseCorrelation,
  validateMessageEnvelope,
  validateResponseCorrelation,
} from "../../wire.ts";
import { CODES } from "../_helpers.ts";
import { type Gen, randomSample, type Sample, SeededRandom } from "../_gen.ts";

const PER_TYPE = 300;
const SEED = 0x5eed_2026;

// ---------------------------------------------------------------------------------------------
// Round trips

const TYPES = [...TOOL_MESSAGE_TYPES].sort();

function describe(value: Uint8Array | string): string {
  const source = typeof value === "string" ? value : new TextDecoder().decode(value);
  return JSON.stringify(source.length > 600 ? source.slice(0, 600) + "…" : source);
}

/** Compares two strings by Unicode code point (Python's string order). */
function byCodePoint(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/**
 * Walks compact JSON text and checks that every object's keys appear in strictly increasing
 * code point order (an independent check of the encoder's sort; the engine's own object order
 * puts array-index-like keys first).
 */
function assertKeysSorted(json: string): void {
  const stack: { keys: string[] | undefined; expectKey: boolean }[] = [];
  let i = 0;
  while (i < json.length) {
    const c = json[i];
    if (c === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === "\\" ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.keys !== undefined && top.expectKey) {
        const key = JSON.parse(json.slice(i, j + 1)) as string;
        const previous = top.keys[top.keys.length - 1];
        if (previous !== undefined && byCodePoint(previous, key) >= 0) {
          throw new AssertionError(
            `keys out of code point order: ${JSON.stringify(previous)} before ${
              JSON.stringify(key)
            } in ${describe(json)}`,
          );
        }
        top.keys.push(key);
        top.expectKey = false;
      }
      i = j + 1;
      continue;
    }
    if (c === "{") stack.push({ keys: [], expectKey: true });
    else if (c === "[") stack.push({ keys: undefined, expectKey: false });
    else if (c === "}" || c === "]") stack.pop();
    else if (c === ",") {
      const top = stack[stack.length - 1];
      if (top.keys !== undefined) top.expectKey = true;
    }
    i++;
  }
}

function checkRoundTrip(item: Sample, useText: boolean): void {
  const { envelope } = item;
  const encoded = encodeEnvelope(envelope);
  assertKeysSorted(new TextDecoder().decode(encoded));
  assertStrictEquals(encodedEnvelopeSize(envelope), encoded.length);
  const input = useText ? new TextDecoder().decode(encoded) : encoded;
  let decoded: ToolEnvelope;
  try {
    decoded = decodeEnvelope(input, { maxMessageBytes: encoded.length });
  } catch (error) {
    throw new AssertionError(`decode failed (${String(error)}) for ${describe(encoded)}`);
  }
  assertEquals(decoded.toWireObject(), envelope.toWireObject(), describe(encoded));
  assertEquals(decoded, envelope);
  const again = encodeEnvelope(decoded);
  assertEquals(again, encoded, `re-encoding differs for ${describe(encoded)}`);
  validateMessageEnvelope(decoded);
  assertEquals(item.typed(decoded), item.expected);
  if (item.request !== undefined) {
    if (item.request.messageType.startsWith("endpoint.")) {
      validateManagementResponseCorrelation(item.request, decoded);
    } else {
      validateResponseCorrelation(item.request, decoded);
    }
  }
  let tooLarge = false;
  try {
    decodeEnvelope(input, { maxMessageBytes: encoded.length - 1 });
  } catch (error) {
    tooLarge = error instanceof ToolProtocolError && error.code === CODES.MESSAGE_TOO_LARGE;
  }
  assert(tooLarge, "one byte under the size is MESSAGE_TOO_LARGE");
}

function roundTrips(indexKeys: boolean, seed: number) {
  return async (t: Deno.TestContext) => {
    for (const [index, messageType] of TYPES.entries()) {
      await t.step(messageType, () => {
        const g: Gen = { rng: new SeededRandom(seed + index), indexKeys };
        for (let i = 0; i < PER_TYPE; i++) {
          const item = randomSample(g, messageType);
          assertStrictEquals(item.envelope.messageType, messageType);
          try {
            checkRoundTrip(item, i % 3 === 0);
          } catch (error) {
            if (error instanceof AssertionError || error instanceof Error) {
              error.message = `[seed ${seed + index}, sample ${i}] ${error.message}`;
            }
            throw error;
          }
        }
      });
    }
  };
}

Deno.test(
  `property: ${PER_TYPE} random envelopes per message type round-trip byte-exactly`,
  roundTrips(false, SEED),
);

Deno.test(
  'property: round trips with array-index-like object keys ("0", "10", …) keep code point order',
  roundTrips(true, SEED + 1000),
);

// ---------------------------------------------------------------------------------------------
// Mutations

const INTERESTING_BYTES = [
  0x22, // "
  0x5c, // \
  0x7b,
  0x7d,
  0x5b,
  0x5d,
  0x2c,
  0x3a,
  0x30,
  0x39,
  0x2d,
  0x2b,
  0x2e,
  0x65,
  0x4e, // N
  0x20,
  0x09,
  0x0a,
  0x00,
  0x1f,
  0x7f,
  0x80,
  0xc3,
  0xe6,
  0xed,
  0xef,
  0xf0,
  0xff,
];

function mutate(rng: SeededRandom, source: Uint8Array): Uint8Array {
  const bytes = Array.from(source);
  const edits = rng.int(1, 3);
  for (let e = 0; e < edits; e++) {
    const at = rng.int(0, Math.max(0, bytes.length - 1));
    const byte = rng.bool() ? rng.pick(INTERESTING_BYTES) : rng.int(0, 255);
    switch (rng.int(0, 6)) {
      case 0: // replace a byte
        bytes[at] = byte;
        break;
      case 1: // flip one bit
        bytes[at] ^= 1 << rng.int(0, 7);
        break;
      case 2: // truncate
        bytes.length = at;
        break;
      case 3: // insert
        bytes.splice(at, 0, byte);
        break;
      case 4: // delete a run
        bytes.splice(at, rng.int(1, 8));
        break;
      case 5: { // duplicate a run (may duplicate keys)
        const length = rng.int(1, 40);
        bytes.splice(at, 0, ...bytes.slice(at, at + length));
        break;
      }
      default: { // swap two bytes
        const other = rng.int(0, Math.max(0, bytes.length - 1));
        [bytes[at], bytes[other]] = [bytes[other], bytes[at]];
      }
    }
  }
  return new Uint8Array(bytes);
}

/** Decodes `input`; returns whether it decoded. Anything but a ToolProtocolError fails. */
function decodeOrProtocolError(input: Uint8Array | string): ToolEnvelope | undefined {
  try {
    return decodeEnvelope(input);
  } catch (error) {
    if (error instanceof ToolProtocolError) return undefined;
    const name = error instanceof Error ? error.constructor.name : typeof error;
    throw new AssertionError(
      `decodeEnvelope threw ${name} (${String(error)}) for ${describe(input)}`,
    );
  }
}

Deno.test("property: mutated encodings decode or fail with a ToolProtocolError", async (t) => {
  for (const [index, messageType] of TYPES.entries()) {
    await t.step(messageType, () => {
      const g: Gen = { rng: new SeededRandom(SEED + 5000 + index), indexKeys: false };
      const rng = new SeededRandom(SEED + 9000 + index);
      let decodedCount = 0;
      let rejectedCount = 0;
      for (let i = 0; i < 60; i++) {
        const encoded = encodeEnvelope(randomSample(g, messageType).envelope);
        for (let m = 0; m < 12; m++) {
          const mutated = mutate(rng, encoded);
          const decoded = decodeOrProtocolError(mutated);
          if (decoded === undefined) {
            rejectedCount++;
            continue;
          }
          decodedCount++;
          // A decoded envelope is valid: re-encoding it is either exact or a ToolProtocolError,
          // and what it re-encodes to decodes to the same Wire object.
          let again: Uint8Array | undefined;
          try {
            again = encodeEnvelope(decoded);
          } catch (error) {
            if (!(error instanceof ToolProtocolError)) throw error;
          }
          if (again !== undefined) {
            assertEquals(decodeEnvelope(again).toWireObject(), decoded.toWireObject());
          }
        }
      }
      assert(rejectedCount > 0, "some mutations are rejected");
      assert(decodedCount + rejectedCount === 720);
    });
  }
});

Deno.test("property: mutated text (with lone surrogates) decodes or fails with a ToolProtocolError", () => {
  const g: Gen = { rng: new SeededRandom(SEED + 7), indexKeys: true };
  const rng = new SeededRandom(SEED + 8);
  const units = [
    "\ud800",
    "\udfff",
    "\ufeff",
    "\u00a0",
    "\u000b",
    '"',
    "\\",
    "{",
    "}",
    "\u0000",
    "😀",
  ];
  for (let i = 0; i < 400; i++) {
    const wire = new TextDecoder().decode(
      encodeEnvelope(randomSample(g, rng.pick(TYPES)).envelope),
    );
    const at = rng.int(0, wire.length);
    const mutated = rng.bool(0.2)
      ? wire.slice(0, at) // may split a surrogate pair
      : wire.slice(0, at) + rng.pick(units) + wire.slice(at + rng.int(0, 2));
    decodeOrProtocolError(mutated);
  }
});

Deno.test("property: random byte strings decode or fail with a ToolProtocolError", () => {
  const rng = new SeededRandom(SEED + 11);
  for (let i = 0; i < 2000; i++) {
    const length = rng.int(0, 64);
    const bytes = new Uint8Array(length);
    for (let k = 0; k < length; k++) {
      bytes[k] = rng.bool(0.7) ? rng.pick(INTERESTING_BYTES) : rng.int(0, 255);
    }
    assertStrictEquals(decodeOrProtocolError(bytes), undefined);
  }
});

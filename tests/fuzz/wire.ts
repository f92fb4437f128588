// Fuzz targets of the Wire: decodeEnvelope and the strict JSON decoder.
//
// decode_envelope: valid envelopes of all 14 types round-trip byte for byte (and the size limit
// holds at exactly their length); mutated encodings, random bytes and text with lone surrogates
// decode or fail with a ToolProtocolError, never anything else, and a decoded envelope re-encodes
// to the same Wire object. No input pollutes Object.prototype.
//
// strict_json: the two paths of parseStrictJsonBytes (structural scan + JSON.parse, and the exact
// parser) are compared with each other on the same document (also embedded in a larger buffer
// and parsed by range), and accepted documents are compared with JSON.parse.
import fc from "fast-check";
import { decodeEnvelope, encodeEnvelope, ToolProtocolError } from "../../wire.ts";
import { parseStrictJsonBytes, parseStrictJsonText } from "../../src/wire/_json_decode.ts";
import {
  type AnyTarget,
  type Budget,
  type FuzzTarget,
  invariant,
  runTarget,
  type TargetReport,
} from "./_common.ts";
import {
  applyMutations,
  applyTreeEdits,
  envelopeArb,
  jsonObjectArb,
  type Mutation,
  mutationArb,
  noiseArb,
  treeEditArb,
} from "../_gen.ts";

const encoder = new TextEncoder();
const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A canonical text of a JSON value: sorted own keys, -0 told apart, strings escaped. */
export function canon(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "number":
      return Object.is(value, -0) ? "-0" : String(value);
    case "string":
      return JSON.stringify(value);
    case "boolean":
      return String(value);
    case "object": {
      if (Array.isArray(value)) return `[${value.map(canon).join(",")}]`;
      const proto = Object.getPrototypeOf(value);
      invariant(
        proto === Object.prototype || proto === null,
        "a decoded JSON object is not a plain object",
      );
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      return `{${keys.map((key) => `${JSON.stringify(key)}:${canon(record[key])}`).join(",")}}`;
    }
    default:
      throw new Error(`not a JSON value: ${typeof value}`);
  }
}

/** Fails when anything reachable from Object.prototype was added by an input. */
export function assertNoPollution(): void {
  const polluted = ["polluted", "a", "0"].filter((key) => key in Object.prototype);
  invariant(polluted.length === 0, () => `Object.prototype polluted: ${polluted.join(", ")}`);
  invariant(Object.getPrototypeOf({}) === Object.prototype, "{} lost its prototype");
}

function only<T>(fn: () => T, where: string): T | ToolProtocolError {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ToolProtocolError) return error;
    const name = error instanceof Error ? error.constructor.name : typeof error;
    throw new Error(`${where} let ${name} escape: ${String(error)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// decode_envelope

/** One input of decode_envelope. */
export type DecodeInput =
  | { readonly mode: "valid"; readonly data: Uint8Array }
  | { readonly mode: "bytes"; readonly data: Uint8Array }
  | { readonly mode: "text"; readonly data: string };

const LONE = ["\ud800", "\udbff", "\udc00", "\udfff"];
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function decodeArb(): fc.Arbitrary<DecodeInput> {
  const valid = envelopeArb.map((envelope) => encodeEnvelope(envelope));
  const mutated = fc
    .tuple(valid, valid, fc.array(mutationArb, { minLength: 1, maxLength: 4 }))
    .map(([source, other, mutations]: [Uint8Array, Uint8Array, Mutation[]]) =>
      applyMutations(source, other, mutations)
    );
  const text = fc
    .tuple(valid, fc.nat(), fc.constantFrom(...LONE), fc.boolean())
    .map(([bytes, at, unit, cut]) => {
      const wire = new TextDecoder().decode(bytes);
      const i = at % (wire.length + 1);
      // Cutting may split a surrogate pair; inserting puts a lone surrogate into the text.
      return cut ? wire.slice(0, i) : wire.slice(0, i) + unit + wire.slice(i);
    });
  const edited = fc
    .tuple(envelopeArb, fc.array(treeEditArb, { minLength: 1, maxLength: 3 }))
    .map(([envelope, edits]) =>
      encoder.encode(JSON.stringify(applyTreeEdits(envelope.toWireObject(), edits)))
    );
  return fc.oneof(
    { weight: 2, arbitrary: valid.map((data) => ({ mode: "valid" as const, data })) },
    { weight: 4, arbitrary: mutated.map((data) => ({ mode: "bytes" as const, data })) },
    { weight: 3, arbitrary: edited.map((data) => ({ mode: "bytes" as const, data })) },
    { weight: 1, arbitrary: noiseArb.map((data) => ({ mode: "bytes" as const, data })) },
    { weight: 1, arbitrary: text.map((data) => ({ mode: "text" as const, data })) },
  );
}

function checkDecode(input: DecodeInput, counters: Record<string, number>): void {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  if (input.mode === "valid") {
    const bytes = input.data;
    const decoded = only(
      () => decodeEnvelope(bytes, { maxMessageBytes: bytes.length }),
      "decodeEnvelope",
    );
    invariant(!(decoded instanceof ToolProtocolError), () => `valid input rejected: ${decoded}`);
    const again = encodeEnvelope(decoded);
    invariant(
      again.length === bytes.length && again.every((b, i) => b === bytes[i]),
      "a valid envelope does not re-encode byte for byte",
    );
    const over = only(
      () => decodeEnvelope(bytes, { maxMessageBytes: bytes.length - 1 }),
      "decodeEnvelope",
    );
    invariant(
      over instanceof ToolProtocolError && over.code === "FORGE_PROTOCOL_MESSAGE_TOO_LARGE",
      "a message one byte over the limit is not MESSAGE_TOO_LARGE",
    );
    count("valid round trips");
    assertNoPollution();
    return;
  }
  const decoded = only(() => decodeEnvelope(input.data), "decodeEnvelope");
  if (decoded instanceof ToolProtocolError) {
    count(`rejected ${decoded.code}`);
    assertNoPollution();
    return;
  }
  invariant(
    input.mode !== "text" || !LONE_SURROGATE.test(input.data),
    "text with a lone surrogate was decoded",
  );
  count("mutants decoded");
  // A decoded envelope is valid: it re-encodes (or reports a ToolProtocolError for a value the
  // Wire cannot write back, such as an integral float beyond 2^53), and what it re-encodes to
  // decodes to the same Wire object.
  const again = only(() => encodeEnvelope(decoded), "encodeEnvelope");
  if (!(again instanceof ToolProtocolError)) {
    const back = only(() => decodeEnvelope(again), "decodeEnvelope");
    invariant(!(back instanceof ToolProtocolError), () => `re-encoding does not decode: ${back}`);
    invariant(
      canon(back.toWireObject()) === canon(decoded.toWireObject()),
      "the re-encoded envelope decodes to a different Wire object",
    );
  }
  assertNoPollution();
}

/** decodeEnvelope under mutated, random and valid inputs. */
export const decodeEnvelopeTarget: FuzzTarget<DecodeInput> = {
  name: "decode_envelope",
  arbitrary: decodeArb,
  check: checkDecode,
  inputBytes: (input) => input.data.length,
  batchSize: 250,
};

// ---------------------------------------------------------------------------------------------
// strict_json

/** One input of strict_json: a document, optionally embedded between junk bytes. */
export interface StrictJsonInput {
  readonly doc: Uint8Array;
  readonly before: Uint8Array;
  readonly after: Uint8Array;
  /** The document was generated valid (and must be accepted). */
  readonly valid: boolean;
}

/** A raw number token: safe, beyond 2^53, -0, integral floats, overflowing and tiny floats. */
const numberTokenArb = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom(
    "9007199254740991",
    "-9007199254740991",
    "9007199254740992",
    "-9007199254740992",
    "12345678901234567890",
    "-0",
    "-0.0",
    "1.0",
    "1e2",
    "1E+2",
    "1e400",
    "-1e400",
    "1e-400",
    "0.5",
    "123456789012345678901234567890.5",
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String).filter((t) => !t.includes("I")),
);

/** A key written raw or with \u escapes (so two spellings can be the same key). */
const keyTokenArb = fc
  .tuple(fc.constantFrom("a", "b", "__proto__", "constructor", "", "é", "😀"), fc.boolean())
  .map(([key, escape]) =>
    escape
      ? `"${
        [...key].map((c) =>
          c.split("").map((u) => "\\u" + u.charCodeAt(0).toString(16).padStart(4, "0")).join("")
        ).join("")
      }"`
      : JSON.stringify(key)
  );

/** JSON text written token by token: duplicate keys, escaped keys and raw number tokens. */
const rawJsonArb: fc.Arbitrary<string> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    numberTokenArb,
    fc.constantFrom("null", "true", "false", '"x"', '"\\ud800"', '"\\ud83d\\ude00"'),
    fc.array(tie("value"), { maxLength: 3 }).map((items) => `[${items.join(",")}]`),
    tie("object"),
  ),
  object: fc
    .array(fc.tuple(keyTokenArb, tie("value")), { maxLength: 4 })
    .map((entries) => `{${entries.map(([key, value]) => `${key}:${value}`).join(",")}}`),
})).object as fc.Arbitrary<string>;

function strictJsonArb(): fc.Arbitrary<StrictJsonInput> {
  const validDoc = fc
    .tuple(jsonObjectArb, fc.constantFrom(undefined, 0, 1, 2, "\t"))
    .map(([value, indent]) => encoder.encode(JSON.stringify(value, null, indent)));
  const mutatedDoc = fc
    .tuple(validDoc, validDoc, fc.array(mutationArb, { minLength: 1, maxLength: 4 }))
    .map(([source, other, mutations]) => applyMutations(source, other, mutations));
  const junk = fc.oneof(fc.constant(new Uint8Array(0)), noiseArb);
  return fc.oneof(
    {
      weight: 2,
      arbitrary: fc.tuple(validDoc, junk, junk).map(([doc, before, after]) => ({
        doc,
        before,
        after,
        valid: true,
      })),
    },
    {
      weight: 6,
      arbitrary: fc.tuple(mutatedDoc, junk, junk).map(([doc, before, after]) => ({
        doc,
        before,
        after,
        valid: false,
      })),
    },
    {
      weight: 3,
      arbitrary: fc.tuple(rawJsonArb, junk, junk).map(([text, before, after]) => ({
        doc: encoder.encode(text),
        before,
        after,
        valid: false,
      })),
    },
    {
      weight: 1,
      arbitrary: noiseArb.map((doc) => ({
        doc,
        before: new Uint8Array(0),
        after: new Uint8Array(0),
        valid: false,
      })),
    },
  );
}

function outcome(result: { value: unknown } | ToolProtocolError): string {
  if (result instanceof ToolProtocolError) {
    return `error ${result.code}: ${result.message} @ ${String(result.path)}`;
  }
  return `value ${canon(result.value)}`;
}

function normalizeZero(value: unknown): unknown {
  if (Object.is(value, -0)) return 0;
  if (Array.isArray(value)) return value.map(normalizeZero);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      Object.defineProperty(out, key, {
        value: normalizeZero(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

const TOKEN =
  /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[{}[\],:]|true|false|null|[ \t\n\r]+/y;
const MAX_SAFE = 9007199254740991n;

/**
 * An independent oracle of the strict decoder's decisions for a document `JSON.parse` accepts:
 * the fault codes it must report (duplicate keys after unescaping, integer tokens beyond
 * ±(2^53 − 1) or of more than 4300 digits, nesting beyond 1000). Surrogates and float overflow
 * are the envelope's business, not the parser's.
 */
function strictFaults(text: string, escapes: { key: boolean } = { key: false }): Set<string> {
  const faults = new Set<string>();
  if (text.charCodeAt(0) === 0xfeff) faults.add("FORGE_PROTOCOL_INVALID_JSON");
  const stack: { keys: Set<string> | undefined; expectKey: boolean }[] = [];
  TOKEN.lastIndex = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
    const token = match[0];
    const top = stack[stack.length - 1];
    const c = token[0];
    if (c === "{" || c === "[") {
      stack.push({ keys: c === "{" ? new Set() : undefined, expectKey: c === "{" });
      if (stack.length > 1000) faults.add("FORGE_PROTOCOL_INVALID_JSON");
    } else if (c === "}" || c === "]") stack.pop();
    else if (c === ",") {
      if (top?.keys !== undefined) top.expectKey = true;
    } else if (c === '"') {
      if (top?.keys !== undefined && top.expectKey) {
        if (token.includes("\\")) escapes.key = true;
        let key: string;
        try {
          key = JSON.parse(token) as string;
        } catch {
          break; // a raw control character: the document is ungrammatical anyway
        }
        if (top.keys.has(key)) faults.add("FORGE_PROTOCOL_DUPLICATE_KEY");
        top.keys.add(key);
        top.expectKey = false;
      }
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      if (!/[.eE]/.test(token)) {
        const digits = token.replace("-", "").length;
        if (digits > 4300) faults.add("FORGE_PROTOCOL_INVALID_JSON");
        else {
          const value = BigInt(token);
          if (value > MAX_SAFE || value < -MAX_SAFE) faults.add("FORGE_PROTOCOL_INVALID_JSON");
        }
      }
    }
  }
  return faults;
}

function checkStrictJson(input: StrictJsonInput, counters: Record<string, number>): void {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const { doc, before, after } = input;
  const whole = only(() => parseStrictJsonBytes(doc), "parseStrictJsonBytes");
  // By range inside a larger buffer: the same answer.
  const buffer = new Uint8Array(before.length + doc.length + after.length);
  buffer.set(before);
  buffer.set(doc, before.length);
  buffer.set(after, before.length + doc.length);
  const ranged = only(
    () => parseStrictJsonBytes(buffer, before.length, before.length + doc.length),
    "parseStrictJsonBytes (range)",
  );
  invariant(
    outcome(whole) === outcome(ranged),
    () => `parsing by range differs: ${outcome(whole)} vs ${outcome(ranged)}`,
  );
  let text: string | undefined;
  try {
    text = fatal.decode(doc);
  } catch {
    invariant(
      whole instanceof ToolProtocolError && whole.code === "FORGE_PROTOCOL_INVALID_JSON",
      "invalid UTF-8 was not rejected as INVALID_JSON",
    );
    count("invalid utf-8");
    return;
  }
  // The exact parser alone must agree with the fast path + fallback.
  const exact = only(() => parseStrictJsonText(text), "parseStrictJsonText");
  invariant(
    outcome(whole) === outcome(exact),
    () => `fast and exact paths disagree: ${outcome(whole)} vs ${outcome(exact)}`,
  );
  if (input.valid) {
    invariant(!(whole instanceof ToolProtocolError), () => `valid JSON rejected: ${whole}`);
  }
  // The independent oracle: JSON.parse for the grammar, strictFaults for the strict rules.
  let grammatical = true;
  try {
    JSON.parse(text);
  } catch {
    grammatical = false;
  }
  // An ungrammatical document is INVALID_JSON, unless an object with a duplicate key closed
  // before the syntax error: the reference reports errors in document order, and a duplicate is
  // reported when its object closes. The tokenizer cannot tell where the syntax breaks, so any
  // duplicate it sees makes DUPLICATE_KEY acceptable there too.
  const escapes = { key: false };
  const faults = strictFaults(text, escapes);
  if (!grammatical) {
    const allowed = new Set(["FORGE_PROTOCOL_INVALID_JSON"]);
    if (faults.has("FORGE_PROTOCOL_DUPLICATE_KEY")) allowed.add("FORGE_PROTOCOL_DUPLICATE_KEY");
    faults.clear();
    for (const code of allowed) faults.add(code);
  }
  if (faults.size === 0) {
    invariant(
      !(whole instanceof ToolProtocolError),
      () => `the strict decoder rejects a document the oracle accepts: ${whole}`,
    );
  } else {
    invariant(
      whole instanceof ToolProtocolError && faults.has(whole.code),
      () =>
        `the oracle expects ${[...faults].join(" or ")}, the strict decoder gave ${outcome(whole)}`,
    );
  }
  if (whole instanceof ToolProtocolError) {
    count(`rejected ${whole.code}`);
    assertNoPollution();
    return;
  }
  count(whole.normalized ? "accepted (fast path)" : "accepted (exact path)");
  // What the strict decoder accepts, JSON.parse accepts with the same value (-0 aside: the
  // strict decoder reads an integer token -0 as 0). Not when a key is escaped: V8 15's JSON.parse
  // can misread an escaped key (after it parsed {"":1,"\\":2}, whose second key is one
  // backslash, it reads {"":1,"\u0061":2} with the key "\" instead of "a"). The strict decoder
  // never hands such documents to JSON.parse; the boundary check "JSON.parse's escaped-key bug
  // cannot reach the decoder" holds it to that.
  if (escapes.key) {
    count("accepted, escaped key (JSON.parse not compared)");
    assertNoPollution();
    return;
  }
  let plain: unknown;
  try {
    plain = JSON.parse(text);
  } catch (error) {
    throw new Error(`strict decoder accepted what JSON.parse rejects: ${String(error)}`);
  }
  invariant(
    canon(normalizeZero(plain)) === canon(normalizeZero(whole.value)),
    "strict decoder and JSON.parse read different values",
  );
  assertNoPollution();
}

/** parseStrictJsonBytes: fast path vs exact path vs JSON.parse. */
export const strictJsonTarget: FuzzTarget<StrictJsonInput> = {
  name: "strict_json",
  arbitrary: strictJsonArb,
  check: checkStrictJson,
  inputBytes: (input) => input.doc.length + input.before.length + input.after.length,
  batchSize: 250,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [decodeEnvelopeTarget, strictJsonTarget];

/** Runs every target of this module under `budget`. */
export async function run(budget: Budget): Promise<TargetReport[]> {
  const reports: TargetReport[] = [];
  for (const target of targets) reports.push(await runTarget(target, budget));
  return reports;
}

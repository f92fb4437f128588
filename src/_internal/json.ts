/**
 * JSON value types, the bounded JSON copy shared by the models and the Wire, code point key
 * order, and structural equality.
 *
 * @module
 */
import { MAX_JSON_DEPTH, MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import { hasLoneSurrogate } from "./text.ts";

/** A JSON scalar. */
export type JsonPrimitive = null | boolean | number | string;
/** A JSON array (read-only: values held by this package are frozen). */
export type JsonArray = readonly JsonValue[];
/** A JSON object (read-only: values held by this package are frozen). */
export interface JsonObject {
  /** A member's JSON value. */
  readonly [key: string]: JsonValue;
}
/** Any JSON value. */
export type JsonValue = JsonPrimitive | JsonArray | JsonObject;

/** The failures the bounded copy can report; each style turns them into its own errors. */
export type JsonFault =
  | "depth"
  | "surrogate"
  | "integer"
  | "finite"
  | "key-type"
  | "key-surrogate"
  | "unsupported";

/** Turns a copy failure into the error to throw. */
export type JsonFaultReporter = (fault: JsonFault, path: string, detail: string) => Error;

/** Model style: `TypeError`/`RangeError` whose message starts with the path. */
export const modelFaults: JsonFaultReporter = (fault, path, detail) => {
  switch (fault) {
    case "depth":
      return new RangeError(`${path} JSON nesting exceeds ${MAX_JSON_DEPTH}`);
    case "surrogate":
      return new RangeError(`${path} must contain valid Unicode scalar values`);
    case "integer":
      return new RangeError(
        `${path} integer exceeds interoperable range ±${MAX_SAFE_JSON_INTEGER}`,
      );
    case "finite":
      return new RangeError(`${path} floating-point values must be finite`);
    case "key-type":
      return new TypeError(`${path} keys must be strings`);
    case "key-surrogate":
      return new RangeError(`${path} keys must contain valid Unicode scalar values`);
    case "unsupported":
      return new TypeError(`${path} contains unsupported JSON value: ${detail}`);
  }
};

/** True for a plain object (`{}` literal, `JSON.parse` output, or a null-prototype object). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** True for a value the copy treats as a mapping: a plain object or a `Map`. */
export function isMapping(value: unknown): boolean {
  return isPlainObject(value) || value instanceof Map;
}

/** Sets `key` on a fresh object as an own data property, even when `key` is `"__proto__"`. */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  } else {
    target[key] = value;
  }
}

function typeName(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "object" || typeof value === "function") {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === "string" && name !== "" ? name : typeof value;
  }
  return typeof value;
}

/** Compares two strings by Unicode code point (JavaScript's default compares UTF-16 units). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    // Units at or above U+D800 are where UTF-16 order and code point order disagree.
    if (x >= 0xd800 && y >= 0xd800) {
      const xs = x <= 0xdfff;
      const ys = y <= 0xdfff;
      if (xs !== ys) return xs ? 1 : -1;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** True when `keys` are already in code point order. */
export function keysInOrder(keys: readonly string[]): boolean {
  for (let k = 1; k < keys.length; k++) {
    if (compareCodePoints(keys[k - 1], keys[k]) > 0) return false;
  }
  return true;
}

/** The keys of `object` in code point order. */
export function sortedKeys(object: object): string[] {
  const keys = Object.keys(object);
  if (keysInOrder(keys)) return keys;
  for (const key of keys) {
    for (let i = 0; i < key.length; i++) {
      if (key.charCodeAt(i) >= 0xd800) return keys.sort(compareCodePoints);
    }
  }
  return keys.sort();
}

/** True for an object key that engines order numerically before other keys ("0", "17"). */
export function isArrayIndex(key: string): boolean {
  const c = key.charCodeAt(0);
  if (c < 0x30 || c > 0x39) return false;
  return /^(?:0|[1-9][0-9]{0,9})$/.test(key) && Number(key) < 4294967295;
}

// Members of decoded objects whose JSON token was a float with an integral value (`1.0`, `1e2`,
// `-0.0`). JavaScript holds such a value as the same number as the integer, but the reference
// keeps it a float, which its integer fields refuse. The marks travel with the parse result
// itself: the strict decoder's exact path records them on the object it builds, in a
// non-enumerable property under this module-private symbol (invisible to JSON, to key enumeration
// and to deep equality), copyJson carries them over to its copies, and the Wire's integer fields
// ask the object they read. No process-wide state: an object without marks has no such property.
const FLOAT_MEMBERS: unique symbol = Symbol("float members");

/** An object that may carry float marks (see FLOAT_MEMBERS). */
interface FloatMarked {
  readonly [FLOAT_MEMBERS]?: Set<string>;
}

/** @internal Records that `object[key]` was decoded from a float token with an integral value. */
export function markFloatMember(object: object, key: string): void {
  const keys = (object as FloatMarked)[FLOAT_MEMBERS];
  if (keys === undefined) Object.defineProperty(object, FLOAT_MEMBERS, { value: new Set([key]) });
  else keys.add(key);
}

/** @internal True when `object[key]` was decoded from a float token with an integral value. */
export function isFloatMember(object: object, key: string): boolean {
  return (object as FloatMarked)[FLOAT_MEMBERS]?.has(key) === true;
}

/** Carries the float marks of a decoded object over to its copy (before the copy is frozen). */
function copyFloatMembers(from: object, to: object): void {
  const floats = (from as FloatMarked)[FLOAT_MEMBERS];
  if (floats !== undefined) Object.defineProperty(to, FLOAT_MEMBERS, { value: floats });
}

// Canonical JSON: values copied by copyJson are deeply frozen, their objects hold their keys in
// code point order, and they passed every interoperable JSON rule. The root of every copy carries
// its height (the deepest nesting below it) and whether `JSON.stringify` would write it
// differently from the Wire (a number below 1e-4, or an array-index key, which engines order
// numerically), packed as `height * 2 + flag`, so a later copy or the encoder can take it as it is
// wherever it still fits within the depth bound.
//
// The facts travel with the value itself: the copy stamps its root with a private field of a
// module-private class before freezing it (the base class's constructor returns the root, so the
// derived constructor installs its field there). A private field is invisible to JSON, to key and
// symbol enumeration, to for-in, to deep equality, is not forwarded by a Proxy and is dropped by
// structuredClone; no code outside this module can read, copy or forge it. No process-wide
// state. A stamp costs what adding a property with a known shape costs, about a tenth of the
// `Object.defineProperty` of a symbol-keyed mark it replaces (the profile of a handler dispatch
// found that definition in every envelope built).
// One difference is not a memo and is kept deliberately: a canonical value may hold an integral
// number beyond ±(2^53 − 1) that the strict decoder kept from a float token (`1e300`), which the
// encoder writes as a float where it would refuse the same number in a plain value.

/** Returns the object it is given: lets {@linkcode CanonicalMark} stamp a plain root. */
class StampBase {
  constructor(root: object) {
    return root;
  }
}

/** The facts a canonical root carries in its private fields (see above). */
class CanonicalMark extends StampBase {
  readonly #packed: number;
  /** The root's compact JSON text when the decoder proved it (see `canonicalText`). */
  readonly #text: string | undefined;

  private constructor(root: object, packed: number, text: string | undefined) {
    super(root);
    this.#packed = packed;
    this.#text = text;
  }

  /** Stamps a fresh copy (not yet frozen) with its packed facts. */
  static stamp(root: object, packed: number, text: string | undefined): void {
    new CanonicalMark(root, packed, text);
  }

  /** The packed facts of `value` when it is a canonical root, else -1. */
  static packedOf(value: object): number {
    return #packed in value ? (value as CanonicalMark).#packed : -1;
  }

  /** The text `value` carries when it is a canonical root that has one. */
  static textOf(value: object): string | undefined {
    return #text in value ? (value as CanonicalMark).#text : undefined;
  }
}

/** Marks a fresh copy (not yet frozen) as a canonical root. */
function markCanonical(out: object, height: number, flag: number, text?: string): void {
  CanonicalMark.stamp(out, height * 2 + flag, text);
}

/**
 * The height of a canonical JSON value (see {@linkcode copyJson}) — how deep its nesting goes
 * below it — or `undefined` when `value` is not one.
 */
export function canonicalHeight(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const packed = CanonicalMark.packedOf(value);
  return packed < 0 ? undefined : packed >> 1;
}

/**
 * @internal Stamps and freezes `out` as a canonical root with the facts its caller computed, as
 * {@linkcode copyJson} would have: only for a fresh plain object whose keys are in code point
 * order and not array indices, whose strings hold no lone surrogate, whose nested objects are
 * fresh, frozen and likewise built, and whose JSON members are canonical values (or
 * {@linkcode EMPTY_OBJECT}) within the depth bound. The Wire's response factories build the
 * payloads of validated models this way (src/wire/_built_payloads.ts).
 */
export function sealCanonical(
  out: object,
  height: number,
  flag: number,
  text?: string,
): JsonObject {
  markCanonical(out, height, flag, text);
  return Object.freeze(out) as JsonObject;
}

/**
 * @internal The compact JSON text of a canonical root, exactly what the Wire's JSON encoder
 * writes for it, when the strict decoder read the root from that text and proved it (see
 * `sealParsedJson`); else `undefined`. The text lives as long as the root: an encoder that
 * forwards a decoded payload (the gateway's two hops) writes it instead of serializing the root
 * again, which a frozen array makes slow (`JSON.stringify` takes its slow path: 1.5 against 0.65
 * µs for a typical payload).
 */
export function canonicalText(value: object): string | undefined {
  return CanonicalMark.textOf(value);
}

/** True when a canonical value holds something `JSON.stringify` writes differently. */
export function canonicalNeedsWriter(value: object): boolean {
  return (CanonicalMark.packedOf(value) & 1) !== 0;
}

/** What one copy call learns about the value it returned, beside the value itself. */
interface CopyFacts {
  /** The deepest nesting below the value (0 for a scalar or an empty container). */
  height: number;
  /** 1 when `JSON.stringify` would write the value differently from the Wire, else 0. */
  flag: number;
}

function copy(
  value: unknown,
  path: string,
  report: JsonFaultReporter,
  depth: number,
  integers: boolean,
  facts: CopyFacts,
  root: boolean,
): JsonValue {
  if (depth > MAX_JSON_DEPTH) throw report("depth", path, "");
  facts.height = 0;
  facts.flag = 0;
  switch (typeof value) {
    case "string":
      if (hasLoneSurrogate(value)) throw report("surrogate", path, "");
      return value;
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw report("finite", path, "");
      if (Number.isInteger(value)) {
        if (Math.abs(value) > MAX_SAFE_JSON_INTEGER || (!integers && Object.is(value, -0))) {
          if (integers) throw report("integer", path, "");
          // A float token kept by the decoder (1e300, -0.0): the Wire writes it as a float.
          facts.flag = 1;
        }
      } else if (Math.abs(value) < 1e-4) {
        facts.flag = 1;
      }
      return value;
    case "bigint":
      if (value > BigInt(MAX_SAFE_JSON_INTEGER) || value < -BigInt(MAX_SAFE_JSON_INTEGER)) {
        throw report("integer", path, "");
      }
      return Number(value);
    case "object": {
      if (value === null) return null;
      const known = CanonicalMark.packedOf(value);
      if (known >= 0 && depth + (known >> 1) <= MAX_JSON_DEPTH) {
        facts.height = known >> 1;
        facts.flag = known & 1;
        return value as JsonValue;
      }
      let height = 0;
      let flag = 0;
      if (Array.isArray(value)) {
        const out = new Array<JsonValue>(value.length);
        for (let i = 0; i < value.length; i++) {
          out[i] = copy(value[i], `${path}[${i}]`, report, depth + 1, integers, facts, false);
          if (facts.height + 1 > height) height = facts.height + 1;
          flag |= facts.flag;
        }
        facts.height = height;
        facts.flag = flag;
        if (root) markCanonical(out, height, flag);
        return Object.freeze(out);
      }
      let keys: string[];
      let items: Map<string, unknown> | Record<string, unknown>;
      if (value instanceof Map) {
        keys = [];
        for (const key of value.keys()) {
          if (typeof key !== "string") throw report("key-type", path, "");
          keys.push(key);
        }
        keys.sort(compareCodePoints);
        items = value;
      } else if (isPlainObject(value)) {
        keys = sortedKeys(value);
        items = value;
      } else {
        throw report("unsupported", path, typeName(value));
      }
      const map = items instanceof Map ? items : undefined;
      const out: Record<string, unknown> = {};
      // Only the exact parser marks objects, and its output is only ever copied by the decoders,
      // with `integers` false (a copy's canonical result is reused as it is, never copied again):
      // other copies need not look for marks.
      if (!integers) copyFloatMembers(value, out);
      for (let k = 0; k < keys.length; k++) {
        const key = keys[k];
        if (hasLoneSurrogate(key)) throw report("key-surrogate", path, "");
        if (isArrayIndex(key)) flag = 1;
        const item = map === undefined ? (items as Record<string, unknown>)[key] : map.get(key);
        // A member that is taken as it is (a valid string, a boolean, null, a canonical value
        // within the depth bound) needs no path: the member's path is built only for a value
        // that is copied or may be refused (the profile found these strings in every copy).
        let member: unknown;
        if (depth >= MAX_JSON_DEPTH) {
          member = copy(item, `${path}.${key}`, report, depth + 1, integers, facts, false);
        } else if (typeof item === "string" && !hasLoneSurrogate(item)) {
          member = item;
          facts.height = 0;
          facts.flag = 0;
        } else if (typeof item === "boolean" || item === null) {
          member = item;
          facts.height = 0;
          facts.flag = 0;
        } else {
          const known = typeof item === "object" ? CanonicalMark.packedOf(item) : -1;
          if (known >= 0 && depth + 1 + (known >> 1) <= MAX_JSON_DEPTH) {
            member = item;
            facts.height = known >> 1;
            facts.flag = known & 1;
          } else {
            member = copy(item, `${path}.${key}`, report, depth + 1, integers, facts, false);
          }
        }
        setOwn(out, key, member);
        if (facts.height + 1 > height) height = facts.height + 1;
        flag |= facts.flag;
      }
      facts.height = height;
      facts.flag = flag;
      if (root) markCanonical(out, height, flag);
      return Object.freeze(out) as JsonObject;
    }
    default:
      throw report("unsupported", path, typeName(value));
  }
}

/**
 * Copies `value` into a canonical JSON value: deeply frozen, every object's keys inserted in
 * Unicode code point order (the order the Wire writes them), and every interoperable JSON rule
 * enforced: depth at most 64 (the value itself is depth `depth`), strings and keys without lone
 * surrogates, integers within ±(2^53 − 1) (an integral `number` beyond that range, or such a
 * `bigint`, is an integer out of range), finite numbers, and only null, booleans, numbers,
 * bigints, strings, arrays, plain objects and `Map`s with string keys. A `"__proto__"` key stays
 * plain data. A canonical value met again (a field taken from another model) is used as it is.
 * `integers = false` skips the integer range check, for values whose integer tokens the strict
 * decoder already checked (a float token such as `1e300` is not an integer there).
 */
export function copyJson(
  value: unknown,
  path: string,
  report: JsonFaultReporter,
  depth = 0,
  integers = true,
): JsonValue {
  return copy(value, path, report, depth, integers, { height: 0, flag: 0 }, true);
}

/**
 * A JSON object the Wire already checked, handed to a model constructor so that the model takes
 * it as it is instead of copying it (see {@linkcode adoptJsonObject}).
 */
class AdoptedJsonObject {
  readonly value: JsonObject;

  constructor(value: JsonObject) {
    this.value = value;
  }
}

/**
 * Marks `value` for adoption: passed as a model's JSON field (`details`, `outputs`, `data`,
 * `metadata`, `arguments`), {@linkcode copyJsonObject} hands it back as it is instead of copying
 * it. Only for plain objects inside a payload the Wire already checked, when the model built from
 * them is thrown away after validation or the value is canonical (deeply frozen). The marker is
 * typed as the object it wraps so that it fits the models' init types; only copyJsonObject opens
 * it.
 */
export function adoptJsonObject(value: Record<string, unknown>): JsonObject {
  return new AdoptedJsonObject(value as JsonObject) as unknown as JsonObject;
}

/**
 * Copies a mapping-valued model field (`metadata`, `arguments`, `details`, `outputs`, `data`):
 * the value itself when it was marked with {@linkcode adoptJsonObject},
 * `TypeError("<field> must be a mapping")` when it is not a mapping, else {@linkcode copyJson}
 * (`integers` as there).
 */
export function copyJsonObject(
  value: unknown,
  field: string,
  report: JsonFaultReporter = modelFaults,
  integers = true,
): JsonObject {
  if (value instanceof AdoptedJsonObject) return value.value;
  if (!isMapping(value)) throw new TypeError(`${field} must be a mapping`);
  return copyJson(value, field, report, 0, integers) as JsonObject;
}

/** The frozen empty object used as every defaulted JSON field. */
export const EMPTY_OBJECT: JsonObject = Object.freeze({});

/**
 * Structural equality of JSON values and models (same prototype, same own enumerable fields,
 * recursively), the equality the reference's frozen dataclasses have.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b);
  }
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], other[i])) return false;
    return true;
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key)) return false;
    if (!deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) {
      return false;
    }
  }
  return true;
}

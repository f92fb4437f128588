/**
 * JSON value types, the bounded JSON copy shared by the models and the Wire, and the string
 * checks (blank, lone surrogate) every identifier goes through.
 *
 * @module
 */
import { MAX_JSON_DEPTH, MAX_SAFE_JSON_INTEGER } from "./constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "./errors.ts";

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

// The whitespace set of the reference's blank check (Python's str.strip() set without
// U+001C..U+001F): a string made only of these is blank.
const BLANK = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;
// Python's str.isspace() set, used by the handler's endpoint_instance_id check.
const PY_SPACE =
  // deno-lint-ignore no-control-regex -- U+001C..U+001F are whitespace to Python.
  /^[\t\n\v\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `value` is empty or made only of whitespace (the reference's blank set). */
export function isBlank(value: string): boolean {
  // Fast exit: a first character that is visible ASCII cannot start a blank string.
  const c = value.charCodeAt(0);
  if (c > 0x20 && c < 0x7f) return false;
  return BLANK.test(value);
}

/**
 * True when `value` cannot name an endpoint instance: empty, or only Python `str.isspace()`
 * whitespace (the reference handler's rule, stricter than {@linkcode isBlank} by U+001C..U+001F).
 * U+FEFF is not whitespace here, unlike in `String.prototype.trim()`.
 */
export function isBlankInstanceId(value: string): boolean {
  return value === "" || PY_SPACE.test(value);
}

/** True when `value` holds an unpaired UTF-16 surrogate (not a Unicode scalar value string). */
export function hasLoneSurrogate(value: string): boolean {
  // Fast exit: most strings hold no surrogate code unit at all.
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdfff) return LONE_SURROGATE.test(value);
  }
  return false;
}

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

/** Wire style: `ToolProtocolError` `FORGE_PROTOCOL_INVALID_PAYLOAD` at the value's path. */
export const wireFaults: JsonFaultReporter = (fault, path, detail) => {
  const code = ToolErrorCodes.INVALID_PAYLOAD;
  switch (fault) {
    case "depth":
      return new ToolProtocolError(code, `JSON nesting exceeds ${MAX_JSON_DEPTH}`, path);
    case "surrogate":
      return new ToolProtocolError(code, "must contain only valid Unicode scalar values", path);
    case "integer":
      return new ToolProtocolError(
        code,
        `integer exceeds interoperable range ±${MAX_SAFE_JSON_INTEGER}`,
        path,
      );
    case "finite":
      return new ToolProtocolError(code, "floating-point values must be finite", path);
    case "key-type":
      return new ToolProtocolError(code, "object keys must be strings", path);
    case "key-surrogate":
      return new ToolProtocolError(
        code,
        "object keys must contain only valid Unicode scalar values",
        path,
      );
    case "unsupported":
      return new ToolProtocolError(code, `unsupported JSON value: ${detail}`, path);
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
// keeps it a float, which its integer fields refuse. The strict decoder's exact path records them
// here, copyJson carries them over to its copies, and the Wire's integer fields ask.
const floatMembers = new WeakMap<object, Set<string>>();
let floatMembersRecorded = false;

/** @internal Records that `object[key]` was decoded from a float token with an integral value. */
export function markFloatMember(object: object, key: string): void {
  floatMembersRecorded = true;
  const keys = floatMembers.get(object);
  if (keys === undefined) floatMembers.set(object, new Set([key]));
  else keys.add(key);
}

/** @internal True when `object[key]` was decoded from a float token with an integral value. */
export function isFloatMember(object: object, key: string): boolean {
  return floatMembersRecorded && floatMembers.get(object)?.has(key) === true;
}

// Canonical JSON: values copied by copyJson are deeply frozen, their objects hold their keys in
// code point order, and they passed every interoperable JSON rule. The root of every copy is
// remembered with its height (the deepest nesting below it) and whether `JSON.stringify` would
// write it differently from the Wire (a number below 1e-4, or an array-index key, which engines
// order numerically), packed as `height * 2 + flag`, so a later copy or the encoder can take it as
// it is wherever it still fits within the depth bound.
const canonical = new WeakMap<object, number>();

/**
 * The height of a canonical JSON value (see {@linkcode copyJson}) — how deep its nesting goes
 * below it — or `undefined` when `value` is not one.
 */
export function canonicalHeight(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const packed = canonical.get(value);
  return packed === undefined ? undefined : packed >> 1;
}

/** True when a canonical value holds something `JSON.stringify` writes differently. */
export function canonicalNeedsWriter(value: object): boolean {
  return ((canonical.get(value) ?? 1) & 1) === 1;
}

// The height and writer flag of the value copy() returned last (no pair allocated per node).
let copiedHeight = 0;
let copiedFlag = 0;

function copy(
  value: unknown,
  path: string,
  report: JsonFaultReporter,
  depth: number,
  integers: boolean,
): JsonValue {
  if (depth > MAX_JSON_DEPTH) throw report("depth", path, "");
  copiedHeight = 0;
  copiedFlag = 0;
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
          copiedFlag = 1;
        }
      } else if (Math.abs(value) < 1e-4) {
        copiedFlag = 1;
      }
      return value;
    case "bigint":
      if (value > BigInt(MAX_SAFE_JSON_INTEGER) || value < -BigInt(MAX_SAFE_JSON_INTEGER)) {
        throw report("integer", path, "");
      }
      return Number(value);
    case "object": {
      if (value === null) return null;
      const known = canonical.get(value);
      if (known !== undefined && depth + (known >> 1) <= MAX_JSON_DEPTH) {
        copiedHeight = known >> 1;
        copiedFlag = known & 1;
        return value as JsonValue;
      }
      let height = 0;
      let flag = 0;
      if (Array.isArray(value)) {
        const out = new Array<JsonValue>(value.length);
        for (let i = 0; i < value.length; i++) {
          out[i] = copy(value[i], `${path}[${i}]`, report, depth + 1, integers);
          if (copiedHeight + 1 > height) height = copiedHeight + 1;
          flag |= copiedFlag;
        }
        copiedHeight = height;
        copiedFlag = flag;
        return Object.freeze(out);
      }
      let entries: [string, unknown][];
      if (value instanceof Map) {
        entries = [];
        for (const [key, item] of value) {
          if (typeof key !== "string") throw report("key-type", path, "");
          entries.push([key, item]);
        }
        entries.sort((x, y) => compareCodePoints(x[0], y[0]));
      } else if (isPlainObject(value)) {
        entries = sortedKeys(value).map((key) => [key, value[key]]);
      } else {
        throw report("unsupported", path, typeName(value));
      }
      const out: Record<string, unknown> = {};
      if (floatMembersRecorded) {
        const floats = floatMembers.get(value);
        if (floats !== undefined) floatMembers.set(out, floats);
      }
      for (const [key, item] of entries) {
        if (hasLoneSurrogate(key)) throw report("key-surrogate", path, "");
        if (isArrayIndex(key)) flag = 1;
        setOwn(out, key, copy(item, `${path}.${key}`, report, depth + 1, integers));
        if (copiedHeight + 1 > height) height = copiedHeight + 1;
        flag |= copiedFlag;
      }
      copiedHeight = height;
      copiedFlag = flag;
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
  const out = copy(value, path, report, depth, integers);
  if (typeof out === "object" && out !== null && !canonical.has(out)) {
    canonical.set(out, copiedHeight * 2 + copiedFlag);
  }
  return out;
}

/**
 * Copies a mapping-valued model field (`metadata`, `arguments`, `details`, `outputs`, `data`):
 * `TypeError("<field> must be a mapping")` when it is not one, else {@linkcode copyJson}.
 */
export function copyJsonObject(
  value: unknown,
  field: string,
  report: JsonFaultReporter = modelFaults,
): JsonObject {
  if (!isMapping(value)) throw new TypeError(`${field} must be a mapping`);
  if (adopting && isPlainObject(value)) return value as JsonObject;
  return copyJson(value, field, report) as JsonObject;
}

/** The frozen empty object used as every defaulted JSON field. */
export const EMPTY_OBJECT: JsonObject = Object.freeze({});

let adopting = false;

/**
 * Runs `fn` with JSON adoption on: while it runs, {@linkcode copyJsonObject} hands back mappings
 * as they are instead of copying them. Only for values already checked by the Wire (an
 * envelope's payload), when the models built from them are thrown away after validation.
 */
export function withAdoptedJson<T>(fn: () => T): T {
  const previous = adopting;
  adopting = true;
  try {
    return fn();
  } finally {
    adopting = previous;
  }
}

/** @internal True while {@linkcode withAdoptedJson} runs. */
export function isAdoptingJson(): boolean {
  return adopting;
}

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

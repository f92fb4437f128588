/**
 * The Wire's JSON encoder: compact, keys sorted by Unicode code point at every level, non-ASCII
 * written raw, and the interoperable JSON rules re-checked on the way out (with the reference's
 * `FORGE_PROTOCOL_INVALID_PAYLOAD` codes and paths), in one pass over the value.
 *
 * @module
 */
import { MAX_JSON_DEPTH, MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import {
  canonicalHeight,
  canonicalNeedsWriter,
  canonicalText,
  isArrayIndex,
  isPlainObject,
  type JsonFault,
  keysInOrder,
  setOwn,
  sortedKeys,
} from "../_internal/json.ts";
import { formatPythonFloat } from "../_internal/repr.ts";
import { hasLoneSurrogate } from "../_internal/text.ts";
import { wireFaults } from "./envelope.ts";

/** The state of one {@linkcode encodeJson} call, passed down its walks. */
interface EncodeState {
  /** The path of the failing value starts here (`payload`). */
  readonly root: string;
  /**
   * The key or index of the value at each depth below the root, kept only to name a failing
   * value: `path[d]` is the member at depth `d`.
   */
  readonly path: (string | number)[];
  /**
   * Set by prepare() when JSON.stringify would write the value differently from the reference: a
   * number below 1e-4 (Python's float repr switches to exponent form earlier), or an object key
   * that is an array index (engines order such keys numerically, not by insertion).
   */
  needsWriter: boolean;
}

function fault(kind: JsonFault, depth: number, state: EncodeState, detail = ""): Error {
  let path = state.root;
  for (let d = 1; d <= depth; d++) {
    const key = state.path[d];
    path += typeof key === "number" ? `[${key}]` : `.${key}`;
  }
  return wireFaults(kind, path, detail);
}

/** Formats a finite JSON number: integers as integers, other numbers as Python floats. */
export function formatNumber(value: number): string {
  return Number.isInteger(value) && Math.abs(value) <= MAX_SAFE_JSON_INTEGER
    ? String(value === 0 ? 0 : value)
    : formatPythonFloat(value);
}

/** Writes one string as a JSON string literal (raw UTF-8 for non-ASCII, as the reference). */
export function quoteString(value: string): string {
  return JSON.stringify(value);
}

/**
 * The hand-written writer (see `EncodeState.needsWriter`). Inside a canonical value (`checked`), an integral
 * number beyond ±(2^53 − 1) is a float the strict decoder kept, written as Python writes floats.
 */
function write(value: unknown, depth: number, state: EncodeState, checked = false): string {
  if (depth > MAX_JSON_DEPTH) throw fault("depth", depth, state);
  switch (typeof value) {
    case "string":
      if (hasLoneSurrogate(value)) throw fault("surrogate", depth, state);
      return JSON.stringify(value);
    case "number":
      if (!Number.isFinite(value)) throw fault("finite", depth, state);
      if (!checked && Number.isInteger(value) && Math.abs(value) > MAX_SAFE_JSON_INTEGER) {
        throw fault("integer", depth, state);
      }
      // Inside a canonical value -0 can only come from a float token such as -0.0.
      return checked && Object.is(value, -0) ? "-0.0" : formatNumber(value);
    case "boolean":
      return value ? "true" : "false";
    case "object": {
      if (value === null) return "null";
      if (!checked && canonicalHeight(value) !== undefined) checked = true;
      if (Array.isArray(value)) {
        if (value.length === 0) return "[]";
        let out = "[";
        for (let i = 0; i < value.length; i++) {
          state.path[depth + 1] = i;
          out += (i === 0 ? "" : ",") + write(value[i], depth + 1, state, checked);
        }
        return out + "]";
      }
      if (isPlainObject(value)) {
        const keys = sortedKeys(value);
        if (keys.length === 0) return "{}";
        let out = "{";
        for (let k = 0; k < keys.length; k++) {
          const key = keys[k];
          if (hasLoneSurrogate(key)) throw fault("key-surrogate", depth, state);
          state.path[depth + 1] = key;
          out += (k === 0 ? "" : ",") + JSON.stringify(key) + ":" +
            write(value[key], depth + 1, state, checked);
        }
        return out + "}";
      }
      break;
    }
  }
  const name = value === undefined
    ? "undefined"
    : (value as { constructor?: { name?: string } })?.constructor?.name ?? typeof value;
  throw fault("unsupported", depth, state, name);
}

/**
 * Checks a value with the Wire's JSON rules and returns it ready for `JSON.stringify`: the value
 * itself when every object's keys are already in code point order, otherwise a copy whose
 * objects have their keys inserted in that order (the engine keeps insertion order).
 */
function prepare(value: unknown, depth: number, state: EncodeState): unknown {
  if (depth > MAX_JSON_DEPTH) throw fault("depth", depth, state);
  switch (typeof value) {
    case "string":
      if (hasLoneSurrogate(value)) throw fault("surrogate", depth, state);
      return value;
    case "number":
      if (!Number.isFinite(value)) throw fault("finite", depth, state);
      if (Number.isInteger(value)) {
        if (Math.abs(value) > MAX_SAFE_JSON_INTEGER) throw fault("integer", depth, state);
      } else if (Math.abs(value) < 1e-4) {
        state.needsWriter = true;
      }
      return value;
    case "boolean":
      return value;
    case "object": {
      if (value === null) return null;
      // A canonical value (frozen, sorted, checked when it was copied) needs no second look.
      const height = canonicalHeight(value);
      if (height !== undefined && depth + height <= MAX_JSON_DEPTH) {
        if (canonicalNeedsWriter(value)) state.needsWriter = true;
        return value;
      }
      if (Array.isArray(value)) {
        let out: unknown[] | undefined;
        for (let i = 0; i < value.length; i++) {
          state.path[depth + 1] = i;
          const item = value[i];
          const prepared = prepare(item, depth + 1, state);
          if (prepared !== item && out === undefined) out = value.slice(0, i);
          if (out !== undefined) out.push(prepared);
        }
        return out ?? value;
      }
      if (isPlainObject(value)) {
        let keys = Object.keys(value);
        let copy = !keysInOrder(keys);
        if (copy) keys = sortedKeys(value);
        const prepared: unknown[] = new Array(keys.length);
        for (let k = 0; k < keys.length; k++) {
          const key = keys[k];
          if (hasLoneSurrogate(key)) throw fault("key-surrogate", depth, state);
          if (isArrayIndex(key)) state.needsWriter = true;
          state.path[depth + 1] = key;
          const item = value[key];
          const next = prepare(item, depth + 1, state);
          if (next !== item) copy = true;
          prepared[k] = next;
        }
        if (!copy) return value;
        const out: Record<string, unknown> = {};
        for (let k = 0; k < keys.length; k++) setOwn(out, keys[k], prepared[k]);
        return out;
      }
      break;
    }
  }
  const name = value === undefined
    ? "undefined"
    : (value as { constructor?: { name?: string } })?.constructor?.name ?? typeof value;
  throw fault("unsupported", depth, state, name);
}

/**
 * Serializes a JSON value compactly with sorted keys, re-checking every interoperable JSON rule;
 * failures are `FORGE_PROTOCOL_INVALID_PAYLOAD` errors whose path starts at `root`.
 */
export function encodeJson(value: unknown, root = "payload"): string {
  // A decoded root that kept its proven compact text (a payload forwarded as it arrived).
  if (typeof value === "object" && value !== null) {
    const text = canonicalText(value);
    if (text !== undefined) return text;
  }
  const state: EncodeState = { root, path: [], needsWriter: false };
  const prepared = prepare(value, 0, state);
  // The engine's JSON.stringify is the fast path; the hand-written writer takes over in the rare
  // cases where its output would differ (see EncodeState.needsWriter).
  return state.needsWriter ? write(prepared, 0, state) : JSON.stringify(prepared);
}

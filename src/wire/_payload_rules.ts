/**
 * The rules every payload adapter of the Wire shares: the Wire's JSON normalization, closed
 * field sets, and the model errors turned into `FORGE_PROTOCOL_INVALID_PAYLOAD` at the failing
 * path.
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  adoptJsonObject,
  canonicalHeight,
  compareCodePoints,
  copyJson,
  isFloatMember,
  isPlainObject,
  type JsonObject,
} from "../_internal/json.ts";
import { wireMessageOf } from "../_internal/fields.ts";
import { type ToolEnvelope, wireFaults } from "./envelope.ts";

export function invalidPayload(message: string, path: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_PAYLOAD, message, path);
}

/**
 * Normalizes a raw value with the Wire's JSON rules. The result is canonical (deeply frozen, see
 * `copyJson`), so the models built from it may adopt its members.
 */
export function normalized(value: unknown, path: string): unknown {
  return copyJson(value, path, wireFaults);
}

/**
 * The value of an integer field. A member decoded from a float token with an integral value
 * (`2.0`) reads as `NaN`, which every integer check refuses with the message it gives any
 * non-integer, as the reference refuses a float there.
 */
export function integerMember(object: Record<string, unknown>, key: string): unknown {
  return isFloatMember(object, key) ? NaN : object[key];
}

/** The value at `path` as an object, or `"must be an object"`. */
export function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw invalidPayload("must be an object", path);
  return value;
}

/** Normalizes then requires an object: the entry of every public decoder. */
export function rootObject(value: unknown, path: string): Record<string, unknown> {
  return objectAt(normalized(value, path), path);
}

/**
 * A JSON-object field handed to a model. With `adopt` the model takes it as it is (see
 * `adoptJsonObject`): for members of a canonical value, which are deeply frozen already, and for
 * the validation of an envelope, whose payload the Wire checked and whose models are thrown away.
 * Without it the model copies the value.
 */
export function jsonField(value: Record<string, unknown>, adopt: boolean): JsonObject {
  return adopt ? adoptJsonObject(value) : value as JsonObject;
}

/** True when an envelope's payload is canonical, so the models built from it may adopt it. */
export function isCanonicalPayload(envelope: ToolEnvelope): boolean {
  return canonicalHeight(envelope.payload) !== undefined;
}

/** Checks an object's field set: unknown fields first, then missing ones. */
export function closedFields(
  object: Record<string, unknown>,
  path: string,
  required: readonly string[],
  optional: readonly string[] = [],
): void {
  // Common case first, without allocating: every key (distinct by construction) is known and
  // every required one is among them.
  let requiredSeen = 0;
  let allKnown = true;
  keys: for (const key in object) {
    for (let i = 0; i < required.length; i++) {
      if (required[i] === key) {
        requiredSeen++;
        continue keys;
      }
    }
    for (let i = 0; i < optional.length; i++) if (optional[i] === key) continue keys;
    allKnown = false;
    break;
  }
  if (allKnown && requiredSeen === required.length) return;
  const unknown: string[] = [];
  for (const key of Object.keys(object)) {
    if (!required.includes(key) && !optional.includes(key)) unknown.push(key);
  }
  const missing = required.filter((key) => !(key in object));
  if (unknown.length === 0 && missing.length === 0) return;
  const parts: string[] = [];
  if (unknown.length > 0) {
    parts.push(`unknown fields: ${unknown.sort(compareCodePoints).join(", ")}`);
  }
  if (missing.length > 0) {
    parts.push(`missing fields: ${missing.sort(compareCodePoints).join(", ")}`);
  }
  throw invalidPayload(parts.join("; "), path);
}

/** Builds a model, turning its `TypeError`/`RangeError` into `INVALID_PAYLOAD` at `path`. */
export function construct<T>(path: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    throw modelError(error, path);
  }
}

/** A model's `TypeError`/`RangeError` as `INVALID_PAYLOAD` at `path`; anything else as it is. */
export function modelError(error: unknown, path: string): unknown {
  return error instanceof TypeError || error instanceof RangeError
    ? invalidPayload(wireMessageOf(error), path)
    : error;
}

export function has(object: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(object, key);
}

/** The envelope's payload, which its constructor checked, as an object. */
export function payloadOf(envelope: ToolEnvelope): Record<string, unknown> {
  return objectAt(envelope.payload, "payload");
}

/**
 * Field checks shared by the models, the Wire and the carrier: the non-empty string rule, the one
 * integer-range check (`isIntegerIn`), the `ToolContext` field checks the Wire's typed
 * validation runs without building the model (see `validateMessageEnvelope`), and a JSON object
 * field checked with its fault returned (for the edges that answer bad input).
 *
 * @module
 */
import { MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import { hasLoneSurrogate, isBlank } from "./text.ts";
import { copyJsonObject, type JsonObject, modelFaults } from "./json.ts";

/** The property of a model error that holds the reference's message (see {@linkcode fieldError}). */
const WIRE_MESSAGE: unique symbol = Symbol("wireMessage");

/**
 * A model validation error. `wireMessage` is the reference's message, which names the Wire field
 * (`tool_id must be a non-empty string`); when it starts with a snake_case Wire field, `message`
 * names the TypeScript field first (`toolId (tool_id) must be a non-empty string`), and the Wire
 * decoder still reports `wireMessage` (read it with {@linkcode wireMessageOf}).
 */
export function fieldError(
  kind: RangeErrorConstructor | TypeErrorConstructor,
  wireMessage: string,
): RangeError | TypeError {
  const field = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?= )/.exec(wireMessage)?.[0];
  if (field === undefined) return new kind(wireMessage);
  const camel = field.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  const error = new kind(`${camel} (${field})${wireMessage.slice(field.length)}`);
  Object.defineProperty(error, WIRE_MESSAGE, { value: wireMessage });
  return error;
}

/** The reference's message of a model validation error (its `message` for any other error). */
export function wireMessageOf(error: Error): string {
  return (error as Error & { [WIRE_MESSAGE]?: string })[WIRE_MESSAGE] ?? error.message;
}

/** Non-blank string without lone surrogates, else a `RangeError` naming the field. */
export function requireNonEmpty(value: unknown, field: string): string {
  if (typeof value !== "string" || isBlank(value)) {
    throw fieldError(RangeError, `${field} must be a non-empty string`);
  }
  if (hasLoneSurrogate(value)) {
    throw fieldError(RangeError, `${field} must contain valid Unicode scalar values`);
  }
  return value;
}

/**
 * An integral `number` in `[min, 2^53 − 1]` (booleans, bigints and strings are not): the one
 * integer check of the package (`isIntegerIn(value, 1)` is a positive integer).
 */
export function isIntegerIn(value: unknown, min: number): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= min &&
    value <= MAX_SAFE_JSON_INTEGER;
}

/**
 * The checks of a `ToolContext`'s scalar fields, in the constructor's order
 * (`tool_id`, `implementation_id`, `endpoint_id`, `operation`, `caller_id`, `deadline_ms`), with
 * its errors. The Wire's validation of an invoke request runs them without building the model.
 */
export function checkToolContextFields(
  toolId: unknown,
  implementationId: unknown,
  endpointId: unknown,
  operation: unknown,
  callerId: unknown,
  deadlineMs: unknown,
): void {
  requireNonEmpty(toolId, "tool_id");
  requireNonEmpty(implementationId, "implementation_id");
  requireNonEmpty(endpointId, "endpoint_id");
  requireNonEmpty(operation, "operation");
  if (callerId !== undefined) requireNonEmpty(callerId, "caller_id");
  if (deadlineMs !== undefined && !isIntegerIn(deadlineMs, 0)) {
    throw fieldError(
      RangeError,
      "deadline_ms must be a non-negative Unix epoch millisecond not greater than " +
        MAX_SAFE_JSON_INTEGER,
    );
  }
}

/**
 * {@linkcode copyJsonObject} with the models' rules, the fault (a `RangeError` or `TypeError`
 * naming the value's path) returned instead of thrown: for the edges that answer bad input in
 * their own words (the gateway's HTTP 400, MCP's InvalidParams) before a model would throw.
 * `fromTokens`: the value was parsed from JSON text whose integer tokens past ±(2^53 − 1) are
 * bigints (refused here by their exact value), so an integral number past that range, or a -0,
 * was a float token (`1e300`, `-0.0`): kept, and written back as the float it was, as the Wire's
 * decoder keeps it.
 */
export function checkedJsonObject(
  value: unknown,
  field: string,
  fromTokens = false,
): JsonObject | RangeError | TypeError {
  try {
    return copyJsonObject(value, field, modelFaults, !fromTokens);
  } catch (error) {
    if (error instanceof RangeError || error instanceof TypeError) return error;
    throw error;
  }
}

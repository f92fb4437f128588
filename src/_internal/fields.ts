/**
 * Field checks shared by the models, the Wire and the carrier: the non-empty string rule, the one
 * integer-range check (`isIntegerIn`), and the `ToolContext` field checks the Wire's typed
 * validation runs without building the model (see `validateMessageEnvelope`).
 *
 * @module
 */
import { MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import { hasLoneSurrogate, isBlank } from "./text.ts";

/** Non-blank string without lone surrogates, else `RangeError` naming the wire field. */
export function requireNonEmpty(value: unknown, field: string): string {
  if (typeof value !== "string" || isBlank(value)) {
    throw new RangeError(`${field} must be a non-empty string`);
  }
  if (hasLoneSurrogate(value)) {
    throw new RangeError(`${field} must contain valid Unicode scalar values`);
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
    throw new RangeError(
      "deadline_ms must be a non-negative Unix epoch millisecond not greater than " +
        MAX_SAFE_JSON_INTEGER,
    );
  }
}

// The models' shared validation helpers and literal sets (private to src/endpoint/).
import {
  ENDPOINT_REGISTRY_OPERATION_VALUES,
  ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES,
  ENDPOINT_STATE_VALUES,
  EXECUTION_PHASE_VALUES,
  TOOL_CONTROL_COMMAND_VALUES,
  TOOL_CONTROL_STATUS_VALUES,
  TOOL_EVENT_TYPE_VALUES,
  TOOL_RESULT_RESPONSE_STATUS_VALUES,
  TOOL_RESULT_STATUS_VALUES,
  TOOL_SEMANTICS_VALUES,
} from "./constants.ts";
import { TOOL_ERROR_BRAND } from "./errors.ts";
import { copyJsonObject, EMPTY_OBJECT, type JsonObject } from "../_internal/json.ts";
import { fieldError } from "../_internal/fields.ts";

// ---------------------------------------------------------------------------------------------
// Shared validation helpers (reference section b.1)

// The runtime sets of the literal types, derived from their one declaration in constants.ts.
export const TOOL_SEMANTICS: ReadonlySet<string> = new Set(TOOL_SEMANTICS_VALUES);
export const ENDPOINT_STATES: ReadonlySet<string> = new Set(ENDPOINT_STATE_VALUES);
export const EXECUTION_PHASES: ReadonlySet<string> = new Set(EXECUTION_PHASE_VALUES);
export const TOOL_EVENT_TYPES: ReadonlySet<string> = new Set(TOOL_EVENT_TYPE_VALUES);
export const TOOL_RESULT_STATUSES: ReadonlySet<string> = new Set(TOOL_RESULT_STATUS_VALUES);
export const RESULT_RESPONSE_STATUSES: ReadonlySet<string> = new Set(
  TOOL_RESULT_RESPONSE_STATUS_VALUES,
);
export const CONTROL_COMMANDS: ReadonlySet<string> = new Set(TOOL_CONTROL_COMMAND_VALUES);
export const CONTROL_STATUSES: ReadonlySet<string> = new Set(TOOL_CONTROL_STATUS_VALUES);
export const REGISTRY_OPERATIONS: ReadonlySet<string> = new Set(ENDPOINT_REGISTRY_OPERATION_VALUES);
export const REGISTRY_RESPONSE_STATUSES: ReadonlySet<string> = new Set(
  ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES,
);

/** Python `repr()` style for the value named in an "unsupported ..." message. */
export function repr(value: unknown): string {
  if (typeof value === "string") return `'${value}'`;
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** The init object itself must be an object (a missing init is a `TypeError`). */
export function requireInit<T>(init: T, model: string): T {
  if (typeof init !== "object" || init === null) {
    throw fieldError(TypeError, `${model} requires an init object`);
  }
  return init;
}

/** A member of a string-literal set, else `RangeError("unsupported <what>: '<value>'")`. */
export function requireMember<T extends string>(
  value: unknown,
  members: ReadonlySet<string>,
  what: string,
): T {
  if (typeof value !== "string" || !members.has(value)) {
    throw fieldError(RangeError, `unsupported ${what}: ${repr(value)}`);
  }
  return value as T;
}

/** A real boolean (absent means `false`), else `TypeError("<field> must be a bool")`. */
export function requireBool(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw fieldError(TypeError, `${field} must be a bool`);
  return value;
}

/** A mapping field: absent -> the frozen empty object, else the bounded deep-frozen copy. */
export function jsonField(value: unknown, field: string): JsonObject {
  return value === undefined ? EMPTY_OBJECT : copyJsonObject(value, field);
}

/** An optional ToolError: absent, or a ToolError, else `TypeError`. */
export function requireOptionalError(value: unknown): void {
  // The brand ToolError.prototype carries (outcomes.ts), so this module needs no import of it.
  const branded = typeof value === "object" && value !== null &&
    (value as { [TOOL_ERROR_BRAND]?: unknown })[TOOL_ERROR_BRAND] === true;
  if (value !== undefined && !branded) {
    throw fieldError(TypeError, "error must be a ToolError or undefined");
  }
}

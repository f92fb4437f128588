/**
 * The validated, immutable values of the ToolEndpoint contracts: operation and endpoint
 * descriptors, the execution key and context, requests, results, control and status answers,
 * events and Registry decisions.
 *
 * Every model is a class with an init-object constructor that validates each field (plain
 * JavaScript callers exist, so the checks run even where the types already forbid a value),
 * copies JSON-valued fields into deeply frozen plain objects, and freezes the instance. A wrong
 * type is a `TypeError`, a wrong value a `RangeError`, with the reference package's messages and
 * its snake_case field names.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolError, ToolResult } from "@forge/tool";
 * const ok = new ToolResult({ status: "succeeded", outputs: { objects: [] } });
 * const failed = new ToolResult({
 *   status: "failed",
 *   error: new ToolError({ code: "EXECUTOR_FAILED", message: "camera offline" }),
 * });
 * assertEquals([ok.status, failed.error?.code], ["succeeded", "EXECUTOR_FAILED"]);
 * ```
 *
 * @module
 */
// The JSON types the models' public shapes use (the literal types are in ./constants.ts).
export type { JsonArray, JsonObject, JsonPrimitive, JsonValue } from "../_internal/json.ts";
export * from "./descriptors.ts";
export * from "./execution.ts";
export * from "./outcomes.ts";
export * from "./management.ts";

/**
 * Validation in the provider definitions: the invoke's arguments (before the function runs) and
 * the returned outputs (when an `outputs` schema is declared), over a Standard Schema or a JSON
 * Schema; the option checks of the definitions; the execution-key fields of their log records.
 *
 * @module
 */
import { ToolEndpointError, ToolErrorCodes } from "../endpoint/errors.ts";
import { optionMessage } from "../_internal/options.ts";
import { logSafely as report, type ToolLogger } from "../endpoint/log.ts";
import { type ToolContext, ToolError, type ToolRequest } from "../endpoint/models.ts";
import { MAX_LISTED_ISSUES, OUTPUTS_VALIDATOR_ERROR, VALIDATOR_ERROR } from "./_constants.ts";
import {
  isStandardSchema,
  type JsonSchema,
  jsonSchema,
  type StandardSchemaV1,
  type StandardSchemaV1Issue,
  type StandardSchemaV1Result,
} from "./schema.ts";
import type { ArgumentSchema } from "./types.ts";

/** An option error in the style of `src/_internal/options.ts` (the value received shown). */
export function optionError(
  what: string,
  option: string,
  requirement: string,
  value: unknown,
): TypeError {
  return new TypeError(optionMessage(what, option, requirement, value));
}

/** A boolean option, `fallback` when absent; a `TypeError` naming the value otherwise. */
export function booleanOption(
  value: unknown,
  fallback: boolean,
  what: string,
  option: string,
): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw optionError(what, option, "a boolean", value);
  return value;
}

/** The execution-key fields of a log record. */
export function keyFields(context: ToolContext) {
  return {
    endpointId: context.endpointId,
    operation: context.operation,
    invocationId: context.executionKey.invocationId,
    attemptId: context.executionKey.attemptId,
  };
}

function issuePath(issue: StandardSchemaV1Issue): (string | number)[] {
  const path: (string | number)[] = [];
  for (const segment of issue.path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    path.push(typeof key === "number" ? key : String(key));
  }
  return path;
}

function invalidArguments(issues: ReadonlyArray<StandardSchemaV1Issue>): ToolEndpointError {
  const count = issues.length === 1 ? "1 issue" : `${issues.length} issues`;
  try {
    const listed = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => ({
      path: issuePath(issue),
      message: String(issue.message),
    }));
    const first = listed[0];
    const where = first === undefined || first.path.length === 0 ? "" : `${first.path.join(".")}: `;
    return new ToolEndpointError(
      new ToolError({
        code: ToolErrorCodes.ENDPOINT_INVALID_ARGUMENTS,
        message: `arguments are invalid (${count}): ${where}${first?.message ?? "rejected"}`,
        retryable: false,
        details: { issues: listed },
      }),
    );
  } catch {
    // An issue that is not representable as JSON text (a lone surrogate, a throwing toString)
    // still rejects the arguments, without the list.
    return new ToolEndpointError(
      new ToolError({
        code: ToolErrorCodes.ENDPOINT_INVALID_ARGUMENTS,
        message: `arguments are invalid (${count})`,
        retryable: false,
      }),
    );
  }
}

/**
 * The validation step of one definition: the validated arguments, synchronously when the schema
 * answers synchronously. Throws a `ToolEndpointError` (rejected before execution).
 */
export type Validate<A> = (
  request: ToolRequest,
  context: ToolContext,
  logger: ToolLogger,
) => A | Promise<A>;

/** The argument validation of a definition (`arguments`), or a pass-through without a schema. */
export function validatorOf<A>(schema: ArgumentSchema | undefined, what: string): Validate<A> {
  if (schema === undefined) return (request) => request.arguments as A;
  let standard: StandardSchemaV1;
  if (isStandardSchema(schema)) standard = schema;
  else if (typeof schema === "object" && schema !== null) standard = jsonSchema(schema);
  else {
    throw optionError(what, "arguments", "a Standard Schema or a JSON Schema", schema);
  }
  const validate = standard["~standard"].validate;
  const failed = (context: ToolContext, logger: ToolLogger, error: unknown): never => {
    report(logger, {
      level: "error",
      event: "arguments.validator_failed",
      message: "the argument validator threw",
      ...keyFields(context),
      error,
    });
    throw new ToolEndpointError(VALIDATOR_ERROR);
  };
  const settle = (result: StandardSchemaV1Result<unknown>): A => {
    if (typeof result !== "object" || result === null) {
      throw new TypeError(`a Standard Schema validate() returned ${String(result)}`);
    }
    if (result.issues === undefined) return result.value as A;
    if (!Array.isArray(result.issues)) {
      throw new TypeError("a Standard Schema validate() returned issues that are not an array");
    }
    throw invalidArguments(result.issues);
  };
  const checked = (context: ToolContext, logger: ToolLogger, result: unknown): A => {
    try {
      return settle(result as StandardSchemaV1Result<unknown>);
    } catch (error) {
      if (error instanceof ToolEndpointError) throw error;
      return failed(context, logger, error);
    }
  };
  return (request, context, logger) => {
    let result: ReturnType<typeof validate>;
    try {
      result = validate(request.arguments);
    } catch (error) {
      return failed(context, logger, error);
    }
    if (result instanceof Promise) {
      return result.then(
        (value) => checked(context, logger, value),
        (error) => failed(context, logger, error),
      );
    }
    return checked(context, logger, result);
  };
}

/** Checks returned outputs: the error to fail with, or `undefined` when they are valid. */
export type CheckOutputs = (
  value: unknown,
  context: ToolContext,
  logger: ToolLogger,
) => Promise<ToolError | undefined>;

/** The outputs check of a definition (`outputs`), or `undefined` without a schema. */
export function outputsCheckOf(schema: unknown, what: string): CheckOutputs | undefined {
  if (schema === undefined) return undefined;
  let standard: StandardSchemaV1;
  if (isStandardSchema(schema)) standard = schema;
  else if (typeof schema === "object" && schema !== null) {
    standard = jsonSchema(schema as JsonSchema);
  } else {
    throw optionError(what, "outputs", "a Standard Schema or a JSON Schema", schema);
  }
  const validate = standard["~standard"].validate;
  return async (value, context, logger) => {
    let issues: ReadonlyArray<StandardSchemaV1Issue>;
    try {
      const result = await validate(value ?? {});
      if (typeof result !== "object" || result === null) {
        throw new TypeError(`a Standard Schema validate() returned ${String(result)}`);
      }
      if (result.issues === undefined) return undefined;
      if (!Array.isArray(result.issues)) {
        throw new TypeError("a Standard Schema validate() returned issues that are not an array");
      }
      issues = result.issues;
    } catch (error) {
      report(logger, {
        level: "error",
        event: "outputs.validator_failed",
        message: "the outputs validator threw",
        ...keyFields(context),
        error,
      });
      return OUTPUTS_VALIDATOR_ERROR;
    }
    const count = issues.length === 1 ? "1 issue" : `${issues.length} issues`;
    const error = new ToolError({
      code: ToolErrorCodes.ENDPOINT_INVALID_OUTPUTS,
      message: `the provider function returned outputs its outputs schema rejects (${count})`,
      retryable: false,
    });
    let listed: string;
    try {
      listed = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => {
        const path = issuePath(issue);
        return `${path.length === 0 ? "" : `${path.join(".")}: `}${String(issue.message)}`;
      }).join("; ");
    } catch {
      listed = "(issues not representable as text)";
    }
    report(logger, {
      level: "error",
      event: "provider.invalid_outputs",
      message: `${error.code}: ${error.message}: ${listed}`,
      ...keyFields(context),
    });
    return error;
  };
}

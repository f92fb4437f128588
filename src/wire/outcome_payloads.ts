/**
 * The payload forms of the outcome models several message types share: {@linkcode ToolError},
 * {@linkcode ToolResult} and {@linkcode ToolExecutionStatus}.
 *
 * @module
 */
import type { JsonObject } from "../_internal/json.ts";
import { ToolError, ToolExecutionStatus, ToolResult } from "../endpoint/models.ts";
import { closedFields, construct, has, jsonField, normalized, objectAt } from "./_payload_rules.ts";

/** The payload form of a {@linkcode ToolError}: `{code, message, retryable, details}`. */
export function toolErrorToPayload(error: ToolError): JsonObject {
  if (!(error instanceof ToolError)) throw new TypeError("error must be a ToolError");
  return {
    code: error.code,
    message: error.message,
    retryable: error.retryable,
    details: error.details,
  };
}

export function readToolError(value: unknown, path: string, adopt: boolean): ToolError {
  const object = objectAt(value, path);
  closedFields(object, path, ["code", "message", "retryable", "details"]);
  const details = objectAt(object.details, `${path}.details`);
  return construct(path, () =>
    new ToolError({
      code: object.code as string,
      message: object.message as string,
      retryable: object.retryable as boolean,
      details: jsonField(details, adopt),
    }));
}

/** Decodes a {@linkcode ToolError} object found at `path` (default `payload.error`). */
export function toolErrorFromPayload(value: unknown, path = "payload.error"): ToolError {
  return readToolError(normalized(value, path), path, true);
}

/** The payload form of a {@linkcode ToolResult}: `{status, outputs}` and `error` when failed. */
export function toolResultToPayload(result: ToolResult): JsonObject {
  if (!(result instanceof ToolResult)) throw new TypeError("result must be a ToolResult");
  return result.error === undefined
    ? { status: result.status, outputs: result.outputs }
    : { status: result.status, outputs: result.outputs, error: toolErrorToPayload(result.error) };
}

export function readToolResult(value: unknown, path: string, adopt: boolean): ToolResult {
  const object = objectAt(value, path);
  closedFields(object, path, ["status", "outputs"], ["error"]);
  const error = has(object, "error")
    ? readToolError(object.error, `${path}.error`, adopt)
    : undefined;
  const outputs = jsonField(objectAt(object.outputs, `${path}.outputs`), adopt);
  return construct(
    path,
    () =>
      new ToolResult(
        { status: object.status, outputs, error } as ConstructorParameters<
          typeof ToolResult
        >[0],
      ),
  );
}

/** Decodes a {@linkcode ToolResult} object found at `path` (default `payload.result`). */
export function toolResultFromPayload(value: unknown, path = "payload.result"): ToolResult {
  return readToolResult(normalized(value, path), path, true);
}

/** The payload form of a {@linkcode ToolExecutionStatus}: `{phase, details}` and `error`. */
export function executionStatusToPayload(status: ToolExecutionStatus): JsonObject {
  if (!(status instanceof ToolExecutionStatus)) {
    throw new TypeError("status must be a ToolExecutionStatus");
  }
  return status.error === undefined
    ? { phase: status.phase, details: status.details }
    : { phase: status.phase, details: status.details, error: toolErrorToPayload(status.error) };
}

export function readExecutionStatus(
  value: unknown,
  path: string,
  adopt: boolean,
): ToolExecutionStatus {
  const object = objectAt(value, path);
  closedFields(object, path, ["phase", "details"], ["error"]);
  const error = has(object, "error")
    ? readToolError(object.error, `${path}.error`, adopt)
    : undefined;
  const details = jsonField(objectAt(object.details, `${path}.details`), adopt);
  return construct(
    path,
    () =>
      new ToolExecutionStatus(
        { phase: object.phase, details, error } as ConstructorParameters<
          typeof ToolExecutionStatus
        >[0],
      ),
  );
}

/** Decodes a {@linkcode ToolExecutionStatus} object found at `path` (default `payload.status`). */
export function executionStatusFromPayload(
  value: unknown,
  path = "payload.status",
): ToolExecutionStatus {
  return readExecutionStatus(normalized(value, path), path, true);
}

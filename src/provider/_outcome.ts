/**
 * The outcome rule of the provider definitions: the terminal result of a settled function
 * follows why its signal aborted first (cancel/stop, deadline, close or abandon), whatever the
 * function then did. The table users read is the module documentation of `define.ts`
 * (`defineQuery`, `defineAction`, `defineSession`); {@linkcode outcomeOf} is that table, in one
 * function.
 *
 * @module
 */
import { ToolEndpointError } from "../endpoint/errors.ts";
import { logSafely as report, type ToolLogger } from "../endpoint/log.ts";
import { type ToolContext, ToolExecutionStatus, ToolResult } from "../endpoint/models.ts";
import {
  ABORTED_ERROR,
  DEADLINE_ERROR,
  INTERNAL_ERROR,
  INVALID_OUTPUTS_ERROR,
} from "./_constants.ts";
import { keyFields } from "./_validate.ts";

function isAbort(error: unknown, signal: AbortSignal): boolean {
  return error === signal.reason ||
    (error instanceof DOMException && error.name === "AbortError");
}

/** Why a function's signal aborted, which decides its outcome (see the table in `define.ts`). */
type AbortCause = "stop" | "deadline" | "aborted" | undefined;

function abortCause(
  signal: AbortSignal,
  stopStatus: "cancelled" | "stopped" | undefined,
): AbortCause {
  if (!signal.aborted) return undefined;
  if (stopStatus !== undefined) return "stop";
  return isTimeout(signal.reason) ? "deadline" : "aborted";
}

/**
 * The terminal result of a settled function (the table of `define.ts`'s module documentation), logging
 * every failed or unknown outcome with the execution key. The outcome follows why the signal
 * aborted, whatever the function then did: returning after the deadline or after a close is not
 * a success.
 */
export function outcomeOf(
  fulfilled: boolean,
  value: unknown,
  stopStatus: "cancelled" | "stopped" | undefined,
  signal: AbortSignal,
  context: ToolContext,
  logger: ToolLogger,
): ToolResult {
  const cause = abortCause(signal, stopStatus);
  if (fulfilled) {
    let outputs: ToolResult["outputs"] | undefined;
    try {
      outputs = new ToolResult({
        status: "succeeded",
        outputs: (value ?? undefined) as object | undefined,
      }).outputs;
    } catch (error) {
      report(logger, {
        level: "error",
        event: "provider.invalid_outputs",
        message: INVALID_OUTPUTS_ERROR.message,
        ...keyFields(context),
        error,
      });
      // Outputs that are no JSON object are dropped; an abort still decides the outcome.
      if (cause === undefined || cause === "stop") {
        return new ToolResult({ status: "failed", error: INVALID_OUTPUTS_ERROR });
      }
    }
    if (cause === undefined) return new ToolResult({ status: "succeeded", outputs });
    if (cause === "stop") return new ToolResult({ status: stopStatus!, outputs });
    return aborted(cause, outputs, undefined, context, logger);
  }
  if (value instanceof ToolEndpointError) {
    // The function's own word: a failure it reports explicitly, whatever aborted its signal.
    report(logger, {
      level: "info",
      event: "provider.failed",
      message: `${value.error.code}: ${value.error.message}`,
      ...keyFields(context),
      error: value,
    });
    return new ToolResult({ status: "failed", error: value.error });
  }
  if (cause === "stop") {
    if (!isAbort(value, signal)) {
      report(logger, {
        level: "warn",
        event: "provider.failed",
        message: `the function threw after an accepted ${
          stopStatus === "cancelled" ? "cancel" : "stop"
        }: the outcome is ${stopStatus}`,
        ...keyFields(context),
        error: value,
      });
    }
    return new ToolResult({ status: stopStatus! });
  }
  if (cause !== undefined) return aborted(cause, undefined, value, context, logger);
  report(logger, {
    level: "error",
    event: "provider.failed",
    message: `${INTERNAL_ERROR.code}: ${INTERNAL_ERROR.message}`,
    ...keyFields(context),
    error: value,
  });
  return new ToolResult({ status: "failed", error: INTERNAL_ERROR });
}

/**
 * The outcome of a function whose signal the deadline (`failed`, deadline exceeded) or a close or
 * abandon (`unknown`) aborted, with the outputs it returned, logged with the execution key
 * (`provider.failed` and `provider.aborted`, as when it throws).
 */
function aborted(
  cause: "deadline" | "aborted",
  outputs: ToolResult["outputs"] | undefined,
  thrown: unknown,
  context: ToolContext,
  logger: ToolLogger,
): ToolResult {
  const error = cause === "deadline" ? DEADLINE_ERROR : ABORTED_ERROR;
  const returned = outputs === undefined ? "" : " (it returned; its outputs are kept)";
  report(logger, {
    level: "warn",
    event: cause === "deadline" ? "provider.failed" : "provider.aborted",
    message: `${error.code}: ${error.message}${returned}`,
    ...keyFields(context),
    ...(thrown === undefined ? {} : { error: thrown }),
  });
  return cause === "deadline"
    ? new ToolResult({ status: "failed", error, outputs })
    : new ToolResult({ status: "unknown", error, outputs });
}

function isTimeout(reason: unknown): boolean {
  return reason instanceof DOMException && reason.name === "TimeoutError";
}

/** The execution status a terminal result leaves (`completed` for `succeeded`). */
export function statusOf(result: ToolResult): ToolExecutionStatus {
  switch (result.status) {
    case "succeeded":
      return new ToolExecutionStatus({ phase: "completed" });
    case "failed":
    case "unknown":
      return new ToolExecutionStatus({ phase: result.status, error: result.error! });
    default:
      return new ToolExecutionStatus({ phase: result.status });
  }
}

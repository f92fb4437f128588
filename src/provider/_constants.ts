/**
 * The fixed values of the provider definitions: shared status and answer objects, the errors a
 * definition answers with (fixed, safe messages), the terminal event of each result status, and
 * the bound on listed issues.
 *
 * @module
 */
import { ToolErrorCodes } from "../endpoint/errors.ts";
import {
  ToolAccepted,
  ToolError,
  ToolExecutionStatus,
  type ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";

// Shared answers: the models are immutable, one object serves every execution.
export const RUNNING = new ToolExecutionStatus({ phase: "running" });
export const STOPPING = new ToolExecutionStatus({ phase: "stopping" });
export const ACCEPTED = new ToolAccepted();
export const PENDING = new ToolResultResponse({ status: "pending" });
export const NOT_FOUND = new ToolResultResponse({ status: "not_found" });
export const NOT_FOUND_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_EXECUTION_NOT_FOUND,
  message: "no execution with this key is known here: it was never started or it was forgotten",
  retryable: false,
});
export const INTERNAL_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the provider function failed",
  retryable: false,
});
export const INVALID_OUTPUTS_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the provider function returned outputs that are not a JSON object",
  retryable: false,
});
export const OUTPUTS_VALIDATOR_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the outputs validator failed",
  retryable: false,
});
export const VALIDATOR_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the argument validator failed",
  retryable: false,
});
export const DEADLINE_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_DEADLINE_EXCEEDED,
  message: "deadline_ms passed before the provider function finished",
  retryable: false,
});
export const ABORTED_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
  message: "the execution was aborted (handler closed or invoke abandoned) before it finished",
  retryable: false,
});
/** The terminal event of each result status (`unknown` has its own, see `unknown_event.ts`). */
export const TERMINAL_EVENT: Readonly<
  Record<
    Exclude<ToolResult["status"], "unknown">,
    "executor_completed" | "executor_failed" | "cancelled" | "stopped"
  >
> = {
  succeeded: "executor_completed",
  failed: "executor_failed",
  cancelled: "cancelled",
  stopped: "stopped",
};

/** Issues listed in `details.issues` at most (the message gives the total). */
export const MAX_LISTED_ISSUES = 100;

// Forge outcomes as MCP results: one place for the ToolResult -> CallToolResult rule and the
// result status -> task status mapping.
import type { CallToolResult, Task } from "@modelcontextprotocol/sdk/types.js";
import type { ToolError, ToolEvent, ToolResult } from "../../mod.ts";

/** The `_meta` key that carries the Forge result status on every result. */
export const RESULT_STATUS_META = "forge.tool/result_status";

/** A ToolError as plain JSON (the Wire's field names). */
export function toolErrorJson(error: ToolError): Record<string, unknown> {
  return {
    code: error.code,
    message: error.message,
    retryable: error.retryable,
    details: error.details,
  };
}

/**
 * The MCP result of a terminal Forge result: `succeeded` -> the outputs as `structuredContent`
 * and as a JSON text block; `failed` -> `isError` with the ToolError; `unknown` -> `isError`
 * saying that the outcome is unknown; `cancelled`/`stopped` -> the outputs as text (not an
 * error: the caller asked for it). The Forge status is in `_meta`.
 */
export function callToolResult(result: ToolResult): CallToolResult {
  const _meta = { [RESULT_STATUS_META]: result.status };
  switch (result.status) {
    case "succeeded":
      return {
        content: [{ type: "text", text: JSON.stringify(result.outputs) }],
        structuredContent: { ...result.outputs },
        _meta,
      };
    case "failed":
      return {
        isError: true,
        content: [{
          type: "text",
          text: `The tool failed: ${JSON.stringify(toolErrorJson(result.error!))}`,
        }],
        _meta,
      };
    case "unknown":
      return {
        isError: true,
        content: [{
          type: "text",
          text: "The outcome is unknown: the endpoint cannot tell whether the call took effect" +
            (result.error === undefined
              ? "."
              : ` (${result.error.code}: ${result.error.message}).`),
        }],
        _meta,
      };
    default:
      return {
        content: [{
          type: "text",
          text: `The execution was ${result.status}: ${JSON.stringify(result.outputs)}`,
        }],
        _meta,
      };
  }
}

/** The MCP error result of a call the endpoint rejected or that failed before it ran. */
export function rejectedResult(error: ToolError): CallToolResult {
  return {
    isError: true,
    content: [{
      type: "text",
      text: `The endpoint rejected the call: ${JSON.stringify(toolErrorJson(error))}`,
    }],
  };
}

/** The MCP task status a terminal Forge result ends a task in. */
export function terminalTaskStatus(result: ToolResult): Task["status"] {
  switch (result.status) {
    case "succeeded":
      return "completed";
    case "cancelled":
    case "stopped":
      return "cancelled";
    default:
      return "failed";
  }
}

/** A progress or heartbeat event as one line for `statusMessage` and `notifications/progress`. */
export function eventMessage(event: ToolEvent): string {
  return `${event.type} ${JSON.stringify(event.data)}`;
}

/**
 * The terminal event of an execution whose outcome is `unknown`, and the phase a terminal event
 * establishes. The protocol has no `unknown` event type; `executor_failed` is the one terminal
 * event that claims no outcome nobody reported (`cancelled` or `stopped` would claim the work
 * ended, `executor_completed` that it succeeded). Its data says what was established:
 * `{"phase": "unknown", "result": <the unknown ToolResult>}`; status and result, the
 * authoritative record (PROTOCOL.md 10.3), read `unknown`.
 *
 * The handler publishes it for an execution it converged itself (shutdown grace over, invoke
 * abandoned); the one-function providers of `src/provider/` emit it for an execution whose
 * signal a close or an abandon aborted. Internal: no entry point exports this module.
 *
 * @module
 */
import type { TerminalExecutionPhase } from "../endpoint/constants.ts";
import { ToolEvent, type ToolResult } from "../endpoint/models.ts";
import { toolResultToPayload } from "../wire/outcome_payloads.ts";

/** The terminal event types and the execution phase each establishes. */
export const TERMINAL_EVENT_PHASE: Readonly<Record<string, TerminalExecutionPhase>> = Object
  .freeze({
    executor_completed: "completed",
    executor_failed: "failed",
    cancelled: "cancelled",
    stopped: "stopped",
  });

/** The `executor_failed` event announcing the `unknown` result `result`. */
export function unknownOutcomeEvent(result: ToolResult): ToolEvent {
  return new ToolEvent({
    type: "executor_failed",
    data: { phase: "unknown", result: toolResultToPayload(result) },
  });
}

/**
 * The terminal phase `event` establishes, or undefined for a non-terminal event: an
 * `executor_failed` event whose data says `"phase": "unknown"` establishes `unknown` (the
 * provider's result must then be `unknown`), any other its type's phase.
 */
export function terminalPhaseOf(event: ToolEvent): TerminalExecutionPhase | undefined {
  if (!Object.hasOwn(TERMINAL_EVENT_PHASE, event.type)) return undefined;
  if (event.type === "executor_failed") {
    const data = event.data as { readonly phase?: unknown } | undefined | null;
    if (typeof data === "object" && data !== null && data.phase === "unknown") return "unknown";
  }
  return TERMINAL_EVENT_PHASE[event.type];
}

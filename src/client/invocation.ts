/**
 * The {@linkcode ToolInvocation} interface: the handle of one Action or Session invocation that
 * {@linkcode ToolEndpointClient.invoke} returns.
 *
 * @module
 */
import type {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolResult,
} from "../endpoint/models.ts";
import type { ToolEventRecord } from "./_events.ts";
// deno-lint-ignore no-unused-vars
import type { ToolCallError } from "./errors.ts";
// deno-lint-ignore no-unused-vars
import type { ToolEndpointClient } from "./client.ts";

/**
 * The handle of one Action or Session invocation, from {@linkcode ToolEndpointClient.invoke}.
 * Dispose it (`await using`) to send `cancel`/`stop` when it is still running and release it.
 */
export interface ToolInvocation extends AsyncDisposable {
  /** The execution key of the invocation. */
  readonly key: ToolExecutionKey;
  /** The context the invoke carried. */
  readonly context: ToolContext;
  /**
   * The provider instance the invocation is pinned to, or `undefined` (the invoke named none;
   * its events are then taken from the instance the first one came from).
   */
  readonly endpointInstanceId: string | undefined;
  /**
   * The invoke's answer: the acceptance, or a terminal result the endpoint answered at once;
   * `undefined` when the invoke went unanswered and a result poll showed the execution admitted.
   */
  readonly acceptance: ToolAccepted | ToolResult | undefined;
  /** The semantics, from the descriptor or the call; `undefined` when neither said. */
  readonly semantics: "action" | "session" | undefined;
  /**
   * The invocation's events in sequence order, duplicates dropped, ending after the terminal
   * event, or `reorderWindowMs` after the terminal result became known otherwise (a poll, an
   * invoke answered with a result), so events still in transit arrive. Iterating starts result
   * polling, so a lost terminal event still ends the stream. Throws what ended the wait (abort
   * reason, timeout).
   */
  readonly events: AsyncIterable<ToolEventRecord>;
  /** Events dropped because the reader fell `maxBufferedEvents` behind. */
  readonly droppedEvents: number;
  /** Gaps in the event sequence that were skipped. */
  readonly eventGaps: number;
  /** The current status (a `tool.status.request`). */
  status(): Promise<ToolExecutionStatus>;
  /**
   * The terminal result: from the terminal event (then one result request), else by polling the
   * result with capped backoff. `unknown` is a terminal outcome like any other. A retryable
   * `tool.error` answer to a poll (a gateway whose lease on the instance expired) rejects the
   * waiting calls with its {@linkcode ToolCallError}; the invocation stays open and polling
   * goes on, so a later call resolves once the endpoint answers again.
   */
  result(): Promise<ToolResult>;
  /** Sends `cancel` (an Action) and returns the endpoint's control answer. */
  cancel(reason?: string): Promise<ToolControlResponse>;
  /** Sends `stop` (a Session) and returns the endpoint's control answer. */
  stop(reason?: string): Promise<ToolControlResponse>;
}

/**
 * The provider SPI: the interfaces an endpoint implements for Query, Action and Session
 * operations, and the event emitter an Action or Session receives when it starts.
 *
 * @module
 */
import type {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "./models.ts";

/** A value or a promise of it: provider methods may be synchronous or asynchronous. */
export type Awaitable<T> = T | PromiseLike<T>;

/**
 * What the handler passes to every provider method besides the request data.
 *
 * For `query()` and `start()`, `signal` is the execution's signal: it aborts when a `cancel`
 * (Action) or `stop` (Session) control is accepted, when the handler closes, and, when the
 * handler enforces deadlines, at the context's `deadline_ms`. For `status()`, `result()`,
 * `cancel()` and `stop()` it aborts when the handler closes.
 */
export interface ToolCallOptions {
  /** Aborts when the work should end; `signal.reason` says why. */
  readonly signal: AbortSignal;
}

/**
 * The execution-bound event emitter handed to `start()`. Events are numbered from 0 in emit
 * order; before acceptance they are buffered (bounded), after it they are published through the
 * handler's event sink. A terminal event (`executor_completed`, `executor_failed`, `cancelled`,
 * `stopped`) requires the provider's authoritative result to be available first and closes the
 * emitter.
 */
export interface ToolEventEmitter {
  /** Emits one event; rejects when the event breaks a lifecycle rule or cannot be published. */
  emit(event: ToolEvent): Promise<void>;
}

/**
 * A Query operation: one terminal result per invoke.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { type QueryToolEndpoint, ToolResult } from "@forge/tool";
 * const detector: QueryToolEndpoint = {
 *   query(request) {
 *     return new ToolResult({ status: "succeeded", outputs: { echo: request.arguments } });
 *   },
 * };
 * assertEquals(typeof detector.query, "function");
 * ```
 */
export interface QueryToolEndpoint {
  /**
   * Runs the query. Throw a {@linkcode ToolEndpointError} to reject before work starts; after
   * work began, return a `failed` {@linkcode ToolResult} instead.
   */
  query(
    request: ToolRequest,
    context: ToolContext,
    options: ToolCallOptions,
  ): Awaitable<ToolResult>;
}

/** An Action operation: accepted, then observed through status, result, events and cancel. */
export interface ActionToolEndpoint {
  /** Admits the action and returns without waiting for physical completion. */
  start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    options: ToolCallOptions,
  ): Awaitable<ToolAccepted>;
  /** Requests cancellation; a non-cancellable action answers `unsupported`. */
  cancel(
    key: ToolExecutionKey,
    reason: string | undefined,
    options: ToolCallOptions,
  ): Awaitable<ToolControlResponse>;
  /** The execution's current status (authoritative). */
  status(key: ToolExecutionKey, options: ToolCallOptions): Awaitable<ToolExecutionStatus>;
  /** The execution's result lookup (authoritative). */
  result(key: ToolExecutionKey, options: ToolCallOptions): Awaitable<ToolResultResponse>;
}

/** A Session operation: accepted, then observed through status, result, events and stop. */
export interface SessionToolEndpoint {
  /** Opens the session and returns without waiting for it to end. */
  start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    options: ToolCallOptions,
  ): Awaitable<ToolAccepted>;
  /** Requests the session to stop; a non-stoppable session answers `unsupported`. */
  stop(
    key: ToolExecutionKey,
    reason: string | undefined,
    options: ToolCallOptions,
  ): Awaitable<ToolControlResponse>;
  /** The session's current status (authoritative). */
  status(key: ToolExecutionKey, options: ToolCallOptions): Awaitable<ToolExecutionStatus>;
  /** The session's result lookup (authoritative). */
  result(key: ToolExecutionKey, options: ToolCallOptions): Awaitable<ToolResultResponse>;
}

/** Any provider implementation a handler can bind to an operation. */
export type ToolEndpointImplementation =
  | QueryToolEndpoint
  | ActionToolEndpoint
  | SessionToolEndpoint;

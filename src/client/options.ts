/**
 * The public option and stats types of {@linkcode ToolEndpointClient}: the client's options, one
 * call's options, and the counters `stats` returns.
 *
 * @module
 */
import type { ToolEndpointDescriptor } from "../endpoint/models.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import type { ToolClientTransport } from "./transport.ts";
// deno-lint-ignore no-unused-vars
import type { ToolCallError, ToolClientError } from "./errors.ts";
// deno-lint-ignore no-unused-vars
import type { ToolEndpointClient } from "./client.ts";

/** Options of {@linkcode ToolEndpointClient}. */
export interface ToolEndpointClientOptions {
  /** The carrier requests go out on and answers come back from. */
  readonly transport: ToolClientTransport;
  /** The logical endpoint every call addresses. */
  readonly endpointId: string;
  /**
   * The provider instance to address. When absent, the transport's `resolveInstance` is asked at
   * each invoke (a gateway), else requests carry no instance.
   */
  readonly endpointInstanceId?: string;
  /**
   * The endpoint's descriptor: which operations exist and their semantics (Query, Action,
   * Session), so `query()` and `invoke()` refuse a wrong operation before sending, and abort and
   * dispose pick `cancel` or `stop`. Without it, semantics are learned from the answers: an
   * accepted invoke is an Action or Session, and abort tries `cancel`, then `stop` when `cancel`
   * is `unsupported` (or give `semantics` per call).
   *
   * A function is called at each `query()` and `invoke()` and the descriptor it returns is the
   * one that call is checked against, so a re-registered descriptor takes effect on the next
   * call (what `gatewayClient` passes: the Registry's current descriptor). `undefined` means
   * none is known for that call; what it throws rejects the call before anything is sent (a
   * `ToolEndpointError` as a {@linkcode ToolCallError}, as a failed `resolveInstance` does).
   */
  readonly descriptor?: ToolEndpointDescriptor | (() => ToolEndpointDescriptor | undefined);
  /**
   * The Runtime tool id placed in every context.
   *
   * @default {endpointId}
   */
  readonly toolId?: string;
  /**
   * The implementation id placed in every context.
   *
   * @default {endpointId}
   */
  readonly implementationId?: string;
  /** Who calls, placed in every context unless a call says otherwise. */
  readonly callerId?: string;
  /**
   * How long one attempt of an exchange waits for its answer, in milliseconds.
   *
   * @default {5000}
   */
  readonly timeoutMs?: number;
  /**
   * How many times a status, result or control request is sent (same request id) before it
   * fails with a {@linkcode ToolClientError} `FORGE_CLIENT_TIMEOUT`. An invoke is sent once unless
   * the call opts in with `resendInvoke`.
   *
   * @default {3}
   */
  readonly maxAttempts?: number;
  /**
   * The first delay between result polls while a caller waits and no event arrives, in
   * milliseconds; it doubles up to `maxPollIntervalMs`, and restarts when an event arrives.
   *
   * @default {50}
   */
  readonly pollIntervalMs?: number;
  /**
   * The largest delay between result polls, in milliseconds.
   *
   * @default {1000}
   */
  readonly maxPollIntervalMs?: number;
  /**
   * How long an event after a missing sequence is held for the missing one, in milliseconds,
   * before the gap is skipped (and the result polled).
   *
   * @default {100}
   */
  readonly reorderWindowMs?: number;
  /**
   * The most exchanges waiting for an answer at once; beyond, a call fails with
   * `FORGE_CLIENT_OVERLOADED` without sending.
   *
   * @default {1024}
   */
  readonly maxPendingExchanges?: number;
  /**
   * The most Action/Session invocations whose events are routed at once (open handles that
   * neither reached a terminal event nor were disposed); beyond, `invoke()` fails with
   * `FORGE_CLIENT_OVERLOADED` without sending.
   *
   * @default {1024}
   */
  readonly maxOpenInvocations?: number;
  /**
   * The most events one invocation buffers for its reader (and holds out of order). A reader
   * that falls further behind loses the oldest events (counted in `droppedEvents`); sequence
   * numbers show the hole.
   *
   * @default {256}
   */
  readonly maxBufferedEvents?: number;
  /**
   * Makes the ids the client generates: invocation, attempt and request ids a call does not
   * give (deterministic ids make runs replayable).
   *
   * @default {() => crypto.randomUUID()}
   */
  readonly generateId?: () => string;
  /**
   * Where a failure nobody awaits is reported: the `cancel` or `stop` an abort or a dispose sent
   * in the background. One `error` record `client.background_failed` with the endpoint id, the
   * execution key's ids and the cause.
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
}

/** Options of one call ({@linkcode ToolEndpointClient.query}, {@linkcode ToolEndpointClient.invoke}). */
export interface ToolClientCallOptions {
  /**
   * Ends the call: a pending exchange rejects with the signal's reason; for an Action or Session
   * the client also sends `cancel` (Action) or `stop` (Session), and waits on the handle
   * (`result()`, `events`) end with the reason. A signal already aborted rejects before anything
   * is sent; an abort while the invoke waits sends the control only after a result request shows
   * the execution admitted (`pending`); once the terminal event or result is known, nothing.
   */
  readonly signal?: AbortSignal;
  /**
   * The attempt timeout of this call's exchanges, in milliseconds.
   *
   * @default {the client's timeoutMs}
   */
  readonly timeoutMs?: number;
  /**
   * The absolute deadline, Unix epoch milliseconds, placed in the context as `deadline_ms`. The
   * client stops waiting for the invoke's answer at the deadline too (no attempt or re-send goes
   * past it): the call rejects with a {@linkcode ToolClientError}
   * `FORGE_CLIENT_DEADLINE_EXCEEDED` of outcome `"unknown"` (the endpoint, which enforces the
   * deadline, ends the execution then), or of outcome `"not_sent"` when it had already passed.
   * The status, result and control requests of an invocation are not cut by it: the endpoint's
   * result after the deadline is the outcome.
   */
  readonly deadlineMs?: number;
  /**
   * Who calls.
   *
   * @default {the client's callerId}
   */
  readonly callerId?: string;
  /** JSON metadata placed in the context. */
  readonly metadata?: object;
  /**
   * The invocation id.
   *
   * @default {generateId()}
   */
  readonly invocationId?: string;
  /**
   * The attempt id.
   *
   * @default {generateId()}
   */
  readonly attemptId?: string;
  /**
   * The invoke's request id.
   *
   * @default {generateId()}
   */
  readonly requestId?: string;
  /**
   * The Runtime tool id.
   *
   * @default {the client's toolId}
   */
  readonly toolId?: string;
  /**
   * The implementation id.
   *
   * @default {the client's implementationId}
   */
  readonly implementationId?: string;
  /**
   * Re-send an unanswered invoke (same request id and execution key) up to `maxAttempts`. Only
   * for operations known to be idempotent: a duplicate delivery may execute again (PROTOCOL
   * 5.2).
   *
   * @default {false}
   */
  readonly resendInvoke?: boolean;
  /**
   * The operation's semantics when the client has no descriptor (`"action"` or `"session"`),
   * to pick `cancel` or `stop` on abort and dispose.
   */
  readonly semantics?: "action" | "session";
}

/** Counters of a {@linkcode ToolEndpointClient}, a snapshot. */
export interface ToolEndpointClientStats {
  /** Requests sent, first attempts. */
  readonly sent: number;
  /** Requests re-sent after a timeout. */
  readonly resent: number;
  /** Exchanges that timed out after every attempt. */
  readonly timeouts: number;
  /** Responses that answered a pending exchange. */
  readonly responses: number;
  /** Responses with no pending exchange (late, duplicate or unknown request id): dropped. */
  readonly uncorrelated: number;
  /** Responses or events whose identities do not match their request or invocation: dropped. */
  readonly mismatched: number;
  /** Messages with an invalid payload, or of a type no caller receives: dropped. */
  readonly invalid: number;
  /** Events delivered in order to an invocation. */
  readonly events: number;
  /** Duplicate events dropped. */
  readonly duplicateEvents: number;
  /** Events for no open invocation: dropped. */
  readonly unroutedEvents: number;
  /** Exchanges waiting for an answer now. */
  readonly pendingExchanges: number;
  /** Invocations whose events are routed now. */
  readonly openInvocations: number;
}

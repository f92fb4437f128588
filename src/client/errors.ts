/**
 * The errors a {@linkcode ToolEndpointClient} raises: {@linkcode ToolCallError} when the endpoint
 * answered with a structured error, {@linkcode ToolClientError} when the exchange itself failed
 * (no answer in time, not sent, over a bound, client closed, an answer of the wrong kind).
 *
 * @module
 */
import { ToolEndpointError } from "../endpoint/errors.ts";
import type { ToolError } from "../endpoint/models.ts";

/** The codes of {@linkcode ToolClientError}, one read-only member per code. */
export interface ToolClientErrorCodeTable {
  /** `FORGE_CLIENT_TIMEOUT`: an exchange got no answer after every allowed attempt. */
  readonly TIMEOUT: "FORGE_CLIENT_TIMEOUT";
  /** `FORGE_CLIENT_SEND_FAILED`: the transport could not send the request. */
  readonly SEND_FAILED: "FORGE_CLIENT_SEND_FAILED";
  /** `FORGE_CLIENT_OVERLOADED`: a bound of the client (pending exchanges, open invocations). */
  readonly OVERLOADED: "FORGE_CLIENT_OVERLOADED";
  /** `FORGE_CLIENT_CLOSED`: the client was closed. */
  readonly CLOSED: "FORGE_CLIENT_CLOSED";
  /** `FORGE_CLIENT_UNEXPECTED_RESPONSE`: a valid answer that does not fit the call. */
  readonly UNEXPECTED_RESPONSE: "FORGE_CLIENT_UNEXPECTED_RESPONSE";
  /**
   * `FORGE_CLIENT_DEADLINE_EXCEEDED`: the call's `deadlineMs` passed before the invoke was
   * answered, so the client stopped waiting (outcome `"unknown"`: it may have run; the endpoint
   * ends it at the same deadline), or it had passed before sending (outcome `"not_sent"`).
   */
  readonly DEADLINE_EXCEEDED: "FORGE_CLIENT_DEADLINE_EXCEEDED";
}

/** The error codes of {@linkcode ToolClientError}. */
export const ToolClientErrorCodes: ToolClientErrorCodeTable = Object.freeze(
  {
    TIMEOUT: "FORGE_CLIENT_TIMEOUT",
    SEND_FAILED: "FORGE_CLIENT_SEND_FAILED",
    OVERLOADED: "FORGE_CLIENT_OVERLOADED",
    CLOSED: "FORGE_CLIENT_CLOSED",
    UNEXPECTED_RESPONSE: "FORGE_CLIENT_UNEXPECTED_RESPONSE",
    DEADLINE_EXCEEDED: "FORGE_CLIENT_DEADLINE_EXCEEDED",
  } as const,
);

/** One of the code strings of {@linkcode ToolClientErrorCodes}. */
export type ToolClientErrorCode = typeof ToolClientErrorCodes[keyof typeof ToolClientErrorCodes];

/** The exchanges a client runs; each request type is one exchange. */
export type ToolClientExchange = "invoke" | "status" | "result" | "control";

/**
 * What is known of the execution when an exchange failed:
 * - `"unknown"`: the request may have executed (a Query or an invoke without an answer);
 * - `"not_admitted"`: the endpoint did not know the execution when the client asked after an
 *   unanswered invoke (a delayed invoke may still arrive, and is then refused as already
 *   observed only if the endpoint recorded the observation);
 * - `"not_sent"`: the request never left the client;
 * - `undefined`: not about an execution's fate (a status, result or control exchange).
 */
export type ToolClientOutcome = "unknown" | "not_admitted" | "not_sent";

/** The init object of a {@linkcode ToolClientError}. */
export interface ToolClientErrorInit {
  /** The error code. */
  readonly code: ToolClientErrorCode;
  /** The exchange that failed, when one did. */
  readonly exchange?: ToolClientExchange;
  /** The execution's invocation id, when the error is about one. */
  readonly invocationId?: string;
  /** The execution's attempt id, when the error is about one. */
  readonly attemptId?: string;
  /** How many times the request was sent. */
  readonly attempts?: number;
  /** What is known of the execution. */
  readonly outcome?: ToolClientOutcome;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * An exchange of a {@linkcode ToolEndpointClient} failed without a structured answer from the
 * endpoint. `exchange` names it, `outcome` says what is known of the execution (a timed-out Query
 * is `"unknown"`: it may have run).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolClientError } from "@forge/tool";
 * const error = new ToolClientError("no answer", {
 *   code: "FORGE_CLIENT_TIMEOUT",
 *   exchange: "invoke",
 *   attempts: 1,
 *   outcome: "unknown",
 * });
 * assertEquals(error.message, "FORGE_CLIENT_TIMEOUT: no answer");
 * ```
 */
export class ToolClientError extends Error {
  /** The error code. */
  readonly code: ToolClientErrorCode;
  /** The exchange that failed, or `undefined`. */
  readonly exchange: ToolClientExchange | undefined;
  /** The execution's invocation id, or `undefined`. */
  readonly invocationId: string | undefined;
  /** The execution's attempt id, or `undefined`. */
  readonly attemptId: string | undefined;
  /** How many times the request was sent (0 when it never was). */
  readonly attempts: number;
  /** What is known of the execution, or `undefined`. */
  readonly outcome: ToolClientOutcome | undefined;

  /** Creates a client error; the message is prefixed with the code. */
  constructor(message: string, init: ToolClientErrorInit) {
    super(`${init.code}: ${message}`, init.cause === undefined ? {} : { cause: init.cause });
    this.name = "ToolClientError";
    this.code = init.code;
    this.exchange = init.exchange;
    this.invocationId = init.invocationId;
    this.attemptId = init.attemptId;
    this.attempts = init.attempts ?? 0;
    this.outcome = init.outcome;
  }
}

/**
 * The endpoint answered a call with a structured error: a rejected invoke
 * (`outcome: "rejected"`) or a correlated `tool.error`. `error` is the {@linkcode ToolError}
 * (code, message, retryable, details). The client never retries because `retryable` is true;
 * that is the caller's decision.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolCallError, ToolError } from "@forge/tool";
 * const error = new ToolCallError(
 *   new ToolError({ code: "FORGE_ENDPOINT_CAPACITY", message: "busy", retryable: true }),
 *   "rejected",
 * );
 * assertEquals([error.code, error.retryable, error.kind], ["FORGE_ENDPOINT_CAPACITY", true, "rejected"]);
 * ```
 */
export class ToolCallError extends ToolEndpointError {
  /** `"rejected"` for a rejected invoke, `"error"` for a `tool.error` answer. */
  readonly kind: "rejected" | "error";

  /** Wraps the endpoint's {@linkcode ToolError}. */
  constructor(error: ToolError, kind: "rejected" | "error") {
    super(error);
    this.name = "ToolCallError";
    this.kind = kind;
  }

  /** The endpoint's error code. */
  get code(): string {
    return this.error.code;
  }

  /** Whether the endpoint says retrying may succeed. */
  get retryable(): boolean {
    return this.error.retryable;
  }
}

/**
 * The one error family a {@linkcode ToolEndpointClient} call rejects with: every error is a
 * {@linkcode ToolClientError} with `code`, `retryable`, `outcome` and a message that states the
 * reason. {@linkcode ToolCallError} (a subclass) is the case where the endpoint answered with a
 * structured error (a rejected invoke, a `tool.error`); the other codes are the exchange's own
 * failures (no answer in time, not sent, unanswered, over a bound, client closed, an answer of the
 * wrong kind, an operation the descriptor does not declare).
 *
 * @module
 */
import { ToolEndpointError } from "../endpoint/errors.ts";
import type { ToolError } from "../endpoint/models.ts";

/** The codes of {@linkcode ToolClientError}, one read-only member per code. */
export interface ToolClientErrorCodeTable {
  /** `FORGE_CLIENT_TIMEOUT`: an exchange got no answer after every allowed attempt. */
  readonly TIMEOUT: "FORGE_CLIENT_TIMEOUT";
  /** `FORGE_CLIENT_SEND_FAILED`: the transport could not send the request (the message says why). */
  readonly SEND_FAILED: "FORGE_CLIENT_SEND_FAILED";
  /**
   * `FORGE_CLIENT_UNANSWERED`: the transport delivered the request and knows no answer will come
   * (an in-process handler refused the route, or failed after calling the provider); the message
   * says why, `outcome` whether the provider was called (`"unknown"`) or not (`"not_admitted"`).
   */
  readonly UNANSWERED: "FORGE_CLIENT_UNANSWERED";
  /**
   * `FORGE_CLIENT_UNKNOWN_OPERATION`: the client's descriptor does not declare the operation;
   * nothing was sent.
   */
  readonly UNKNOWN_OPERATION: "FORGE_CLIENT_UNKNOWN_OPERATION";
  /**
   * `FORGE_CLIENT_WRONG_SEMANTICS`: `query()` of an Action or Session, or `invoke()` of a Query,
   * per the client's descriptor; nothing was sent.
   */
  readonly WRONG_SEMANTICS: "FORGE_CLIENT_WRONG_SEMANTICS";
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
    UNANSWERED: "FORGE_CLIENT_UNANSWERED",
    UNKNOWN_OPERATION: "FORGE_CLIENT_UNKNOWN_OPERATION",
    WRONG_SEMANTICS: "FORGE_CLIENT_WRONG_SEMANTICS",
    OVERLOADED: "FORGE_CLIENT_OVERLOADED",
    CLOSED: "FORGE_CLIENT_CLOSED",
    UNEXPECTED_RESPONSE: "FORGE_CLIENT_UNEXPECTED_RESPONSE",
    DEADLINE_EXCEEDED: "FORGE_CLIENT_DEADLINE_EXCEEDED",
  } as const,
);

/** One of the code strings of {@linkcode ToolClientErrorCodes}. */
export type ToolClientErrorCode = typeof ToolClientErrorCodes[keyof typeof ToolClientErrorCodes];

/**
 * Whether retrying a call that failed with a client code may succeed, when the error does not say
 * otherwise: a timeout, a send failure and a bound may pass; the rest will not by themselves.
 * (An `"unknown"` outcome may have run: retrying is the caller's decision, for idempotent work.)
 */
const RETRYABLE_BY_DEFAULT: ReadonlySet<string> = new Set([
  ToolClientErrorCodes.TIMEOUT,
  ToolClientErrorCodes.SEND_FAILED,
  ToolClientErrorCodes.OVERLOADED,
]);

/** The exchanges a client runs; each request type is one exchange. */
export type ToolClientExchange = "invoke" | "status" | "result" | "control";

/**
 * What is known of the execution when a call rejected:
 * - `"unknown"`: the request may have executed (a Query or an invoke without an answer, an
 *   in-process provider that failed without answering);
 * - `"not_admitted"`: the endpoint did not execute it: it rejected the invoke (a
 *   {@linkcode ToolCallError} of kind `"rejected"`, or a `tool.error` answer to the invoke), refused
 *   its route, or did not know the execution when the client asked after an unanswered invoke (a
 *   delayed invoke may still arrive, and is then refused as already observed only if the endpoint
 *   recorded the observation);
 * - `"not_sent"`: the request never left the client;
 * - `undefined`: not about an execution's fate (a status, result or control exchange).
 */
export type ToolClientOutcome = "unknown" | "not_admitted" | "not_sent";

/** Where a call failed: the exchange and execution fields of a {@linkcode ToolClientError}. */
export interface ToolClientErrorContext {
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
  /** The underlying error (its reason is in the message too). */
  readonly cause?: unknown;
}

/** The init object of a {@linkcode ToolClientError}. */
export interface ToolClientErrorInit extends ToolClientErrorContext {
  /** The error code. */
  readonly code: ToolClientErrorCode;
  /**
   * Whether retrying may succeed.
   *
   * @default {true for FORGE_CLIENT_TIMEOUT, FORGE_CLIENT_SEND_FAILED and FORGE_CLIENT_OVERLOADED}
   */
  readonly retryable?: boolean;
}

/**
 * The one error family of a {@linkcode ToolEndpointClient} call: switch on `code`. A client code
 * ({@linkcode ToolClientErrorCodes}) is an exchange's own failure; a {@linkcode ToolCallError}
 * (a subclass) carries the endpoint's code. `outcome` says what is known of the execution (a
 * timed-out Query is `"unknown"`: it may have run), `retryable` whether retrying may succeed, and
 * the message states the reason (never only `cause`).
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
 * assertEquals([error.retryable, error.outcome], [true, "unknown"]);
 * ```
 */
export class ToolClientError extends Error {
  /**
   * The error code: one of {@linkcode ToolClientErrorCodes}, or the endpoint's code for a
   * {@linkcode ToolCallError}.
   */
  readonly code: string;
  /** Whether retrying may succeed (never acted on by the client itself). */
  readonly retryable: boolean;
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
    this.retryable = init.retryable ?? RETRYABLE_BY_DEFAULT.has(init.code);
    this.exchange = init.exchange;
    this.invocationId = init.invocationId;
    this.attemptId = init.attemptId;
    this.attempts = init.attempts ?? 0;
    this.outcome = init.outcome;
  }
}

/**
 * The endpoint answered a call with a structured error: a rejected invoke (`kind: "rejected"`,
 * outcome `"not_admitted"`) or a correlated `tool.error` (`kind: "error"`; outcome
 * `"not_admitted"` for an invoke, `undefined` for a status, result or control exchange). `error`
 * is the {@linkcode ToolError}; `code` and `retryable` are its own. Part of the
 * {@linkcode ToolClientError} family. The client never retries because `retryable` is true; that
 * is the caller's decision.
 *
 * @example
 * ```ts
 * import { assertEquals, assertInstanceOf } from "@std/assert";
 * import { ToolCallError, ToolClientError, ToolError } from "@forge/tool";
 * const error = new ToolCallError(
 *   new ToolError({ code: "FORGE_ENDPOINT_CAPACITY", message: "busy", retryable: true }),
 *   "rejected",
 * );
 * assertInstanceOf(error, ToolClientError);
 * assertEquals([error.code, error.retryable, error.kind], ["FORGE_ENDPOINT_CAPACITY", true, "rejected"]);
 * assertEquals([error.outcome, error.message], ["not_admitted", "FORGE_ENDPOINT_CAPACITY: busy"]);
 * ```
 */
export class ToolCallError extends ToolClientError {
  /** The structured error the endpoint answered with. */
  readonly error: ToolError;
  /** `"rejected"` for a rejected invoke, `"error"` for a `tool.error` answer. */
  readonly kind: "rejected" | "error";

  /**
   * Wraps the endpoint's {@linkcode ToolError}. `context.outcome` defaults to `"not_admitted"`
   * for a rejection and for a `tool.error` answering an invoke.
   */
  constructor(error: ToolError, kind: "rejected" | "error", context: ToolClientErrorContext = {}) {
    // A look-alike is refused as by ToolEndpointError (a TypeError).
    super(new ToolEndpointError(error).error.message, {
      ...context,
      code: error.code as ToolClientErrorCode,
      retryable: error.retryable,
      outcome: context.outcome ??
        (kind === "rejected" || context.exchange === "invoke" ? "not_admitted" : undefined),
    });
    this.name = "ToolCallError";
    this.error = error;
    this.kind = kind;
  }
}

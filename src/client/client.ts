/**
 * The caller side of the ToolEndpoint Wire: {@linkcode ToolEndpointClient} sends correlated
 * requests over a {@linkcode ToolClientTransport} and returns results, invocation handles and
 * ordered event streams.
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { consoleLogger, formatThrown, logSafely, type ToolLogger } from "../endpoint/log.ts";
import type { ToolControlCommand, ToolSemantics } from "../endpoint/constants.ts";
import {
  ToolAccepted,
  ToolContext,
  type ToolControlResponse,
  ToolEndpointDescriptor,
  type ToolError,
  type ToolEvent,
  ToolExecutionKey,
  type ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  type ToolResultResponse,
} from "../endpoint/models.ts";
import { validateResponseCorrelation } from "../wire/correlation.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import {
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
} from "../wire/factories.ts";
import {
  controlResponseFromPayload,
  errorFromPayload,
  eventFromPayload,
  type InvokeResponse,
  invokeResponseFromPayload,
  resultResponseFromPayload,
  statusResponseFromPayload,
} from "../wire/execution_payloads.ts";
import { ToolEndpointError, ToolProtocolError } from "../endpoint/errors.ts";
import {
  ToolCallError,
  ToolClientError,
  type ToolClientErrorCode,
  ToolClientErrorCodes,
  type ToolClientErrorContext,
  type ToolClientExchange,
  type ToolClientOutcome,
} from "./errors.ts";
import {
  EventBuffer,
  type EventBufferHost,
  type PushOutcome,
  type ToolEventRecord,
} from "./_events.ts";
import type { ToolClientTransport } from "./transport.ts";
import type { AnyOperationDefinition, ToolEndpointDefinition } from "../provider/define.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";

export type { ToolEventRecord } from "./_events.ts";

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
   */
  readonly descriptor?: ToolEndpointDescriptor;
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

/** An operation definitions' record, as `defineEndpoint` keeps it. */
export type ToolOperations = Readonly<Record<string, AnyOperationDefinition>>;

/** The names of the Query operations of `Ops`. */
export type QueryOperationName<Ops extends ToolOperations> = {
  [N in keyof Ops & string]: Ops[N]["semantics"] extends "query" ? N : never;
}[keyof Ops & string];

/** The names of the Action and Session operations of `Ops`. */
export type InvokeOperationName<Ops extends ToolOperations> = {
  [N in keyof Ops & string]: Ops[N]["semantics"] extends "action" | "session" ? N : never;
}[keyof Ops & string];

/** The arguments type a caller sends to a definition (its schema's input type). */
export type OperationArguments<D> = D extends { readonly types?: { readonly arguments: infer A } }
  ? A
  : never;

/** The outputs type of a definition's succeeded result. */
export type OperationOutputs<D> = D extends { readonly types?: { readonly outputs: infer O } } ? O
  : never;

/** The arguments and options of a typed call: the arguments may be left out when `{}` fits. */
export type TypedCallArguments<A> = Record<never, never> extends A
  ? [args?: A, options?: ToolClientCallOptions]
  : [args: A, options?: ToolClientCallOptions];

/**
 * A {@linkcode ToolResult} whose `outputs` are typed `O` once `status` is narrowed to
 * `"succeeded"` (any other status carries what the function returned, or `{}`).
 */
export type TypedToolResult<O> =
  & ToolResult
  & (
    | { readonly status: "succeeded"; readonly outputs: O }
    | { readonly status: Exclude<ToolResult["status"], "succeeded"> }
  );

/** A {@linkcode ToolInvocation} whose `result()` is typed. */
export interface TypedToolInvocation<O> extends ToolInvocation {
  /** The terminal result, as {@linkcode ToolInvocation.result}. */
  result(): Promise<TypedToolResult<O>>;
}

/**
 * The typed view of a {@linkcode ToolEndpointClient} that {@linkcode ToolEndpointClient.for}
 * returns: `query()` takes only Query names, `invoke()` only Action and Session names, each
 * with the arguments type of its definition, and results carry its outputs type. The same
 * object at run time (every other member is the client's).
 */
export interface TypedToolEndpointClient<Ops extends ToolOperations>
  extends Omit<ToolEndpointClient, "query" | "invoke"> {
  /** {@linkcode ToolEndpointClient.query}, typed by the definition. */
  query<N extends QueryOperationName<Ops>>(
    operation: N,
    ...rest: TypedCallArguments<OperationArguments<Ops[N]>>
  ): Promise<TypedToolResult<OperationOutputs<Ops[N]>>>;
  /** {@linkcode ToolEndpointClient.invoke}, typed by the definition. */
  invoke<N extends InvokeOperationName<Ops>>(
    operation: N,
    ...rest: TypedCallArguments<OperationArguments<Ops[N]>>
  ): Promise<TypedToolInvocation<OperationOutputs<Ops[N]>>>;
}

/** Options of {@linkcode ToolEndpointClient.for}: the client's, less what the definition says. */
export type TypedToolEndpointClientOptions = Omit<
  ToolEndpointClientOptions,
  "endpointId" | "descriptor"
>;

// ---------------------------------------------------------------------------------------------

type Answer<T> = { readonly ok: T } | { readonly error: ToolError };

interface ExchangeSpec<T> {
  readonly name: ToolClientExchange;
  readonly request: ToolEnvelope;
  readonly parse: (response: ToolEnvelope) => T;
  readonly maxAttempts: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** What is known of the execution when the exchange times out. */
  readonly timeoutOutcome: ToolClientOutcome | undefined;
  /** The call's deadline (Unix epoch ms): no attempt waits past it. */
  readonly deadlineMs?: number;
}

interface Exchange {
  readonly spec: ExchangeSpec<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** When the current attempt times out, on the `performance.now()` clock. */
  deadline: number;
  /** When the call's `deadlineMs` passes, on the same clock (`Infinity` without one). */
  callDeadline: number;
  attempts: number;
  unlinkSignal: (() => void) | undefined;
}

interface Config {
  readonly endpointId: string;
  readonly endpointInstanceId: string | undefined;
  readonly descriptor: ToolEndpointDescriptor | undefined;
  readonly toolId: string;
  readonly implementationId: string;
  readonly callerId: string | undefined;
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  readonly pollIntervalMs: number;
  readonly maxPollIntervalMs: number;
  readonly reorderWindowMs: number;
  readonly maxPendingExchanges: number;
  readonly maxOpenInvocations: number;
  readonly maxBufferedEvents: number;
  readonly onError: (error: unknown, key: ToolExecutionKey) => void;
  readonly generateId: () => string;
}

/** The answers a caller receives (besides `tool.event`); anything else is not for a client. */
const CALLER_BOUND: ReadonlySet<string> = new Set([
  "tool.invoke.response",
  "tool.status.response",
  "tool.result.response",
  "tool.control.response",
  "tool.error",
]);

function optionalString(value: unknown, name: string, action: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(optionMessage(action, name, "a non-empty string", value));
  }
  return value;
}

/** Reports a background failure of the execution `key` to `logger`, as one record. */
function backgroundReporter(
  logger: ToolLogger,
  endpointId: string,
): (error: unknown, key: ToolExecutionKey) => void {
  return (error, key) =>
    logSafely(logger, {
      level: "error",
      event: "client.background_failed",
      message: "a control the client sent in the background failed",
      endpointId,
      invocationId: key.invocationId,
      attemptId: key.attemptId,
      error,
    });
}

function answerOf<T>(response: ToolEnvelope, decode: (payload: unknown) => T): Answer<T> {
  return response.messageType === "tool.error"
    ? { error: errorFromPayload(response.payload) }
    : { ok: decode(response.payload) };
}

/** The exchange and execution of a request, for the errors about it. */
function contextOf(exchange: ToolClientExchange, request: ToolEnvelope): ToolClientErrorContext {
  return {
    exchange,
    invocationId: request.invocationId,
    attemptId: request.attemptId,
    attempts: 1,
  };
}

function unwrap<T>(answer: Answer<T>, context: ToolClientErrorContext): T {
  if ("error" in answer) throw new ToolCallError(answer.error, "error", context);
  return answer.ok;
}

/** The reason a thrown value gives, on one line, for an error message. */
function reasonOf(error: unknown): string {
  if (error instanceof ToolProtocolError) return error.toString();
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return formatThrown(error);
}

/**
 * `error` (of the client's family, from a transport or a resolver) with the call's exchange and
 * execution fields; its code, message, retryable and outcome are kept.
 */
function inContext(
  error: ToolClientError,
  context: ToolClientErrorContext,
): ToolClientError {
  const outcome = "outcome" in context ? context.outcome : error.outcome;
  if (error instanceof ToolCallError) {
    return new ToolCallError(error.error, error.kind, { ...context, outcome, cause: error.cause });
  }
  return new ToolClientError(error.message.slice(error.code.length + 2), {
    ...context,
    code: error.code as ToolClientErrorCode,
    retryable: error.retryable,
    outcome,
    cause: error.cause,
  });
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The call was aborted", "AbortError");
}

function wrongSemantics(
  operation: string,
  endpointId: string,
  semantics: ToolSemantics,
  use: string,
): ToolClientError {
  const article = semantics === "action" ? "an" : "a";
  return new ToolClientError(
    `operation '${operation}' of '${endpointId}' is ${article} ${semantics}: use ${use}`,
    { code: ToolClientErrorCodes.WRONG_SEMANTICS, exchange: "invoke", outcome: "not_sent" },
  );
}

/** The control command that ends an execution of `semantics`. */
function endCommand(semantics: "action" | "session"): ToolControlCommand {
  return semantics === "action" ? "cancel" : "stop";
}

/**
 * The caller side of one ToolEndpoint: Query calls, Action and Session invocations with event
 * streams, status, result and control, over any {@linkcode ToolClientTransport}.
 *
 * Every response is checked against its request with {@linkcode validateResponseCorrelation};
 * responses that answer no pending exchange (late, duplicate, forged, for another instance) are
 * dropped and counted in {@linkcode ToolEndpointClient.stats}, never handed to another call.
 *
 * Lost messages: status, result and control requests without an answer in `timeoutMs` are
 * re-sent with the same request id, up to `maxAttempts` sends, then fail with a
 * {@linkcode ToolClientError} `FORGE_CLIENT_TIMEOUT` naming the exchange. An invoke is not
 * re-sent (a duplicate delivery may execute again, PROTOCOL 5.2) unless the call sets
 * `resendInvoke`: an unanswered Query fails with outcome `"unknown"`; for an unanswered Action or
 * Session invoke the client asks the result of the execution key to learn whether it was
 * admitted. `ToolError.retryable` never triggers a retry by itself.
 *
 * Bounds: `maxPendingExchanges` exchanges wait at once, `maxOpenInvocations` invocations are
 * routed at once, and each buffers at most `maxBufferedEvents` events (the oldest are dropped
 * when its reader falls behind).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   InProcessToolClientTransport,
 *   ToolEndpointClient,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * const descriptor = new ToolEndpointDescriptor({
 *   protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *   endpointId: "math",
 *   operations: [new ToolOperationDescriptor({ name: "add", semantics: "query" })],
 * });
 * const handler = new ToolEndpointHandler(descriptor, {
 *   endpointInstanceId: "math-1",
 *   operations: {
 *     add: {
 *       query: (request) =>
 *         new ToolResult({
 *           status: "succeeded",
 *           outputs: { sum: Number(request.arguments.a) + Number(request.arguments.b) },
 *         }),
 *     },
 *   },
 * });
 * const client = new ToolEndpointClient({
 *   transport: new InProcessToolClientTransport(handler),
 *   endpointId: "math",
 *   descriptor,
 * });
 * const result = await client.query("add", { a: 2, b: 3 });
 * assertEquals(result.outputs, { sum: 5 });
 * await client.close();
 * ```
 */
export class ToolEndpointClient {
  readonly #transport: ToolClientTransport;
  readonly #config: Config;
  readonly #pending = new Map<string, Exchange>();
  readonly #invocations = new Map<string, Invocation>();
  /** Open invocations already settled, whose streams wait one reorder window for late events. */
  readonly #lingering = new Set<Invocation>();
  readonly #counters = {
    sent: 0,
    resent: 0,
    timeouts: 0,
    responses: 0,
    uncorrelated: 0,
    mismatched: 0,
    invalid: 0,
    events: 0,
    duplicateEvents: 0,
    unroutedEvents: 0,
  };
  readonly #background = new Set<Promise<void>>();
  #timer: LongTimeout | undefined;
  #timerAt = 0;
  #closing: Promise<void> | undefined;
  #closed = false;

  /**
   * Checks the options and connects to the transport. Option errors name the option and show
   * the value received.
   */
  constructor(options: ToolEndpointClientOptions) {
    const action = "create a ToolEndpointClient";
    if (typeof options !== "object" || options === null) {
      throw new TypeError(optionMessage(action, "options", "an object", options));
    }
    const transport: unknown = options.transport;
    if (
      typeof transport !== "object" || transport === null ||
      typeof (transport as ToolClientTransport).send !== "function" ||
      typeof (transport as ToolClientTransport).connect !== "function"
    ) {
      throw new TypeError(
        optionMessage(action, "transport", "an object with send() and connect()", transport),
      );
    }
    const endpointId = optionalString(options.endpointId, "endpointId", action);
    if (endpointId === undefined) {
      throw new TypeError(optionMessage(action, "endpointId", "a non-empty string", endpointId));
    }
    const descriptor: unknown = options.descriptor;
    if (descriptor !== undefined) {
      if (!(descriptor instanceof ToolEndpointDescriptor)) {
        throw new TypeError(
          optionMessage(action, "descriptor", "a ToolEndpointDescriptor", descriptor),
        );
      }
      if (descriptor.endpointId !== endpointId) {
        throw new RangeError(
          `Cannot ${action} as 'descriptor' must describe endpoint '${endpointId}': current ` +
            `value describes '${descriptor.endpointId}'`,
        );
      }
    }
    const pollIntervalMs = positiveIntegerOption(
      action,
      "pollIntervalMs",
      options.pollIntervalMs,
      50,
    );
    const maxPollIntervalMs = positiveIntegerOption(
      action,
      "maxPollIntervalMs",
      options.maxPollIntervalMs,
      Math.max(1000, pollIntervalMs),
    );
    if (maxPollIntervalMs < pollIntervalMs) {
      throw new RangeError(
        `Cannot ${action} as 'maxPollIntervalMs' must be at least 'pollIntervalMs' ` +
          `(${pollIntervalMs}): current value is ${maxPollIntervalMs}`,
      );
    }
    optionalFunction(action, "generateId", options.generateId);
    const logger = optionalFunction<ToolLogger>(action, "logger", options.logger) ?? consoleLogger;
    this.#config = Object.freeze({
      endpointId,
      endpointInstanceId: optionalString(
        options.endpointInstanceId,
        "endpointInstanceId",
        action,
      ),
      descriptor: descriptor as ToolEndpointDescriptor | undefined,
      toolId: optionalString(options.toolId, "toolId", action) ?? endpointId,
      implementationId: optionalString(options.implementationId, "implementationId", action) ??
        endpointId,
      callerId: optionalString(options.callerId, "callerId", action),
      timeoutMs: positiveIntegerOption(action, "timeoutMs", options.timeoutMs, 5000),
      maxAttempts: positiveIntegerOption(action, "maxAttempts", options.maxAttempts, 3),
      pollIntervalMs,
      maxPollIntervalMs,
      reorderWindowMs: positiveIntegerOption(
        action,
        "reorderWindowMs",
        options.reorderWindowMs,
        100,
      ),
      maxPendingExchanges: positiveIntegerOption(
        action,
        "maxPendingExchanges",
        options.maxPendingExchanges,
        1024,
      ),
      maxOpenInvocations: positiveIntegerOption(
        action,
        "maxOpenInvocations",
        options.maxOpenInvocations,
        1024,
      ),
      maxBufferedEvents: positiveIntegerOption(
        action,
        "maxBufferedEvents",
        options.maxBufferedEvents,
        256,
      ),
      onError: backgroundReporter(logger, endpointId),
      generateId: options.generateId ?? (() => crypto.randomUUID()),
    });
    this.#transport = transport as ToolClientTransport;
    this.#transport.connect((message) => this.#receive(message));
  }

  /**
   * A client of the endpoint `definition` describes (what `defineEndpoint` returns): its
   * `endpointId` and `descriptor` come from the definition, and the returned view checks
   * operation names, argument types and output types at compile time. At run time it is a plain
   * `ToolEndpointClient`.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { defineEndpoint, defineQuery, InProcessToolClientTransport, ToolEndpointClient } from "@forge/tool";
   * const math = defineEndpoint({
   *   endpointId: "math",
   *   operations: { double: defineQuery((args) => ({ twice: Number(args.n) * 2 })) },
   * });
   * const handler = math.createHandler({ endpointInstanceId: "math-1" });
   * const client = ToolEndpointClient.for(math, {
   *   transport: new InProcessToolClientTransport(handler),
   * });
   * const result = await client.query("double", { n: 4 });
   * assertEquals(result.status, "succeeded");
   * if (result.status === "succeeded") assertEquals(result.outputs.twice, 8);
   * await client.close();
   * await handler.close();
   * ```
   */
  static for<Ops extends ToolOperations>(
    definition: ToolEndpointDefinition<Ops>,
    options: TypedToolEndpointClientOptions,
  ): TypedToolEndpointClient<Ops> {
    const descriptor: unknown = (definition as { descriptor?: unknown } | null)?.descriptor;
    if (!(descriptor instanceof ToolEndpointDescriptor)) {
      throw new TypeError(
        optionMessage(
          "create a ToolEndpointClient",
          "definition",
          "an endpoint definition from defineEndpoint",
          definition,
        ),
      );
    }
    return new ToolEndpointClient({
      ...options,
      endpointId: descriptor.endpointId,
      descriptor,
    }) as TypedToolEndpointClient<Ops>;
  }

  /** The endpoint this client calls. */
  get endpointId(): string {
    return this.#config.endpointId;
  }

  /** A snapshot of the client's counters. */
  get stats(): ToolEndpointClientStats {
    return Object.freeze({
      ...this.#counters,
      pendingExchanges: this.#pending.size,
      openInvocations: this.#invocations.size,
    });
  }

  /**
   * Calls a Query operation and resolves to its {@linkcode ToolResult} (any terminal status,
   * `unknown` included). A rejected invoke or a `tool.error` rejects with a
   * {@linkcode ToolCallError}; no answer in `timeoutMs` rejects with a {@linkcode ToolClientError}
   * `FORGE_CLIENT_TIMEOUT` of outcome `"unknown"` (the query may have run). An answer that
   * accepted the call as an Action or Session (possible without a descriptor) is never left
   * running: the client sends `cancel` (or `stop`) at once, waits for its answer, then rejects
   * with `FORGE_CLIENT_UNEXPECTED_RESPONSE` naming the execution key and what the control got.
   */
  async query(
    operation: string,
    args: object = {},
    options: ToolClientCallOptions = {},
  ): Promise<ToolResult> {
    const semantics = this.#semanticsOf(operation, options, "query");
    if (semantics !== undefined && semantics !== "query") {
      throw wrongSemantics(operation, this.#config.endpointId, semantics, "invoke()");
    }
    const timeoutMs = this.#timeoutOf(options, "query");
    const { envelope, context } = await this.#invokeRequest(operation, args, options, "query");
    const response = await this.#invokeExchange(envelope, options, timeoutMs);
    const outcome = unwrap(response, contextOf("invoke", envelope));
    if (outcome instanceof ToolResult) return outcome;
    if (outcome instanceof ToolAccepted) {
      throw await this.#endUnexpectedAcceptance(operation, envelope, context, options, timeoutMs);
    }
    throw new ToolCallError(outcome, "rejected", contextOf("invoke", envelope));
  }

  /**
   * A `query()` was answered with an acceptance (no descriptor told the operation is an Action or
   * Session): nobody holds a handle to the admitted execution, so it is ended at once (`cancel`,
   * then `stop` when unsupported) and the answer waited for; the error says what was done.
   */
  async #endUnexpectedAcceptance(
    operation: string,
    envelope: ToolEnvelope,
    context: ToolContext,
    options: ToolClientCallOptions,
    timeoutMs: number,
  ): Promise<ToolClientError> {
    const invocation = new Invocation(
      this.#core,
      context,
      envelope,
      options.semantics,
      undefined,
      timeoutMs,
    );
    const key = `invocation_id=${context.invocationId} attempt_id=${context.attemptId}`;
    const init = {
      code: ToolClientErrorCodes.UNEXPECTED_RESPONSE,
      exchange: "invoke",
      invocationId: context.invocationId,
      attemptId: context.attemptId,
      attempts: 1,
    } as const;
    try {
      const answer = await invocation.terminate(
        "the caller used query() on an Action or Session; the client ends it",
      );
      return new ToolClientError(
        `operation '${operation}' was accepted as an Action or Session (${key}); the client ` +
          `sent ${answer.command} at once, answered ${answer.status}; use invoke()`,
        init,
      );
    } catch (error) {
      return new ToolClientError(
        `operation '${operation}' was accepted as an Action or Session (${key}); ending it ` +
          `failed, it may still run; use invoke()`,
        { ...init, cause: error },
      );
    } finally {
      invocation.release(undefined);
    }
  }

  /**
   * Invokes an Action or Session operation and resolves, once the endpoint answered, to its
   * {@linkcode ToolInvocation} handle. A rejected invoke or a `tool.error` rejects with a
   * {@linkcode ToolCallError}. When the invoke gets no answer, the client asks the result of the
   * execution key: `pending` or `available` yield the handle (the execution was admitted), and
   * `not_found` rejects with `FORGE_CLIENT_TIMEOUT` of outcome `"not_admitted"`.
   */
  async invoke(
    operation: string,
    args: object = {},
    options: ToolClientCallOptions = {},
  ): Promise<ToolInvocation> {
    const declared = this.#semanticsOf(operation, options, "invoke");
    if (declared === "query") {
      throw wrongSemantics(operation, this.#config.endpointId, declared, "query()");
    }
    const timeoutMs = this.#timeoutOf(options, "invoke");
    const { envelope, context } = await this.#invokeRequest(operation, args, options, "invoke");
    if (this.#invocations.has(context.executionKey.id)) {
      throw new RangeError(
        `Cannot invoke as the execution key is already open: current value is ` +
          `'${context.invocationId}'/'${context.attemptId}'`,
      );
    }
    // Invocations whose result is known and whose stream only waits for events in transit give
    // way first.
    for (const settled of this.#lingering) {
      if (this.#invocations.size < this.#config.maxOpenInvocations) break;
      settled.endStream();
    }
    if (this.#invocations.size >= this.#config.maxOpenInvocations) {
      throw new ToolClientError(
        `${this.#invocations.size} invocations are open ('maxOpenInvocations')`,
        {
          code: ToolClientErrorCodes.OVERLOADED,
          exchange: "invoke",
          invocationId: context.invocationId,
          attemptId: context.attemptId,
          outcome: "not_sent",
        },
      );
    }
    const invocation = new Invocation(
      this.#core,
      context,
      envelope,
      declared,
      options.signal,
      timeoutMs,
    );
    this.#invocations.set(context.executionKey.id, invocation);
    let answer: Answer<InvokeResponse>;
    try {
      answer = await this.#invokeExchange(envelope, options, timeoutMs);
    } catch (error) {
      if (
        error instanceof ToolClientError && error.code === ToolClientErrorCodes.TIMEOUT &&
        !options.signal?.aborted
      ) {
        return await invocation.recoverAdmission(error);
      }
      if (options.signal?.aborted) invocation.abortUnanswered(abortReason(options.signal));
      else invocation.release(error);
      throw error;
    }
    if ("error" in answer) {
      invocation.release(undefined);
      throw new ToolCallError(answer.error, "error", contextOf("invoke", envelope));
    }
    const outcome = answer.ok;
    if (!(outcome instanceof ToolAccepted) && !(outcome instanceof ToolResult)) {
      invocation.release(undefined);
      throw new ToolCallError(outcome, "rejected", contextOf("invoke", envelope));
    }
    invocation.accept(outcome);
    return invocation;
  }

  /**
   * Closes the client: pending exchanges reject with `FORGE_CLIENT_CLOSED`, open invocations end
   * their waits, and the transport is closed.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    // The cancel or stop an abort sent is let finish (each is bounded by its exchange's
    // attempts); new calls are refused meanwhile.
    while (this.#background.size > 0) await Promise.allSettled(Array.from(this.#background));
    this.#closed = true;
    for (const exchange of Array.from(this.#pending.values())) {
      const request = exchange.spec.request;
      this.#fail(
        exchange,
        new ToolClientError("the client was closed", {
          code: ToolClientErrorCodes.CLOSED,
          exchange: exchange.spec.name,
          invocationId: request.invocationId,
          attemptId: request.attemptId,
          attempts: exchange.attempts,
        }),
      );
    }
    for (const invocation of Array.from(this.#invocations.values())) {
      invocation.release(
        new ToolClientError("the client was closed", {
          code: ToolClientErrorCodes.CLOSED,
          invocationId: invocation.key.invocationId,
          attemptId: invocation.key.attemptId,
        }),
      );
    }
    this.#stopTimer();
    await this.#transport.close?.();
  }

  /** `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // -------------------------------------------------------------------------------------------

  /** What invocations use of the client. */
  readonly #core: ClientCore = {
    config: () => this.#config,
    exchange: (spec) => this.#exchange(spec),
    forget: (invocation) => {
      this.#lingering.delete(invocation);
      if (this.#invocations.get(invocation.key.id) === invocation) {
        this.#invocations.delete(invocation.key.id);
      }
    },
    linger: (invocation) => {
      if (this.#invocations.get(invocation.key.id) === invocation) {
        this.#lingering.add(invocation);
      }
    },
    track: (work) => {
      this.#background.add(work);
      work.then(() => this.#background.delete(work));
    },
  };

  #timeoutOf(options: ToolClientCallOptions, action: string): number {
    return positiveIntegerOption(action, "timeoutMs", options.timeoutMs, this.#config.timeoutMs);
  }

  #semanticsOf(
    operation: string,
    options: ToolClientCallOptions,
    action: string,
  ): ToolSemantics | undefined {
    if (typeof options !== "object" || options === null) {
      throw new TypeError(
        optionMessage(action, "options", "an object", options),
      );
    }
    if (typeof operation !== "string" || operation === "") {
      throw new TypeError(
        optionMessage(action, "operation", "a non-empty string", operation),
      );
    }
    const given: unknown = options.semantics;
    if (given !== undefined && given !== "action" && given !== "session") {
      throw new RangeError(
        optionMessage(action, "semantics", '"action" or "session"', given),
      );
    }
    const descriptor = this.#config.descriptor;
    if (descriptor === undefined) return given;
    const declared = descriptor.operation(operation);
    if (declared === undefined) {
      const known = descriptor.operations.map((o) => `'${o.name}'`).join(", ");
      throw new ToolClientError(
        `operation '${operation}' is not in the descriptor of '${descriptor.endpointId}' ` +
          `(it declares ${known === "" ? "none" : known})`,
        { code: ToolClientErrorCodes.UNKNOWN_OPERATION, exchange: "invoke", outcome: "not_sent" },
      );
    }
    return declared.semantics;
  }

  async #invokeRequest(
    operation: string,
    args: object,
    options: ToolClientCallOptions,
    action: string,
  ): Promise<{ envelope: ToolEnvelope; context: ToolContext }> {
    if (this.#closing !== undefined) {
      throw new ToolClientError("the client was closed", {
        code: ToolClientErrorCodes.CLOSED,
        outcome: "not_sent",
      });
    }
    // An aborted call sends nothing (and so never has anything to cancel).
    if (options.signal?.aborted) throw abortReason(options.signal);
    const config = this.#config;
    const context = new ToolContext({
      executionKey: new ToolExecutionKey({
        invocationId: optionalString(options.invocationId, "invocationId", action) ??
          config.generateId(),
        attemptId: optionalString(options.attemptId, "attemptId", action) ?? config.generateId(),
      }),
      toolId: optionalString(options.toolId, "toolId", action) ?? config.toolId,
      implementationId: optionalString(options.implementationId, "implementationId", action) ??
        config.implementationId,
      endpointId: config.endpointId,
      operation,
      callerId: optionalString(options.callerId, "callerId", action) ?? config.callerId,
      deadlineMs: options.deadlineMs,
      metadata: options.metadata,
    });
    const request = new ToolRequest({ arguments: args });
    const requestId = optionalString(options.requestId, "requestId", action) ??
      config.generateId();
    let endpointInstanceId: string | Promise<string> | undefined;
    const notSent = {
      exchange: "invoke",
      invocationId: context.invocationId,
      attemptId: context.attemptId,
      outcome: "not_sent",
    } as const;
    try {
      endpointInstanceId = config.endpointInstanceId ??
        this.#transport.resolveInstance?.(config.endpointId);
      if (typeof endpointInstanceId === "object") endpointInstanceId = await endpointInstanceId;
    } catch (error) {
      // A gateway without an instance for the endpoint: nothing was sent.
      if (error instanceof ToolClientError) throw inContext(error, notSent);
      if (error instanceof ToolEndpointError) {
        throw new ToolCallError(error.error, "error", { ...notSent, cause: error });
      }
      throw new ToolClientError(
        `the endpoint instance of '${config.endpointId}' could not be resolved: ${reasonOf(error)}`,
        { ...notSent, code: ToolClientErrorCodes.SEND_FAILED, cause: error },
      );
    }
    if (options.signal?.aborted) throw abortReason(options.signal);
    const envelope = makeInvokeRequestEnvelope(request, context, {
      requestId,
      endpointInstanceId,
    });
    return { envelope, context };
  }

  /** The invoke exchange of a Query or an Action/Session start (resent only on request). */
  #invokeExchange(
    envelope: ToolEnvelope,
    options: ToolClientCallOptions,
    timeoutMs: number,
  ): Promise<Answer<InvokeResponse>> {
    return this.#exchange({
      name: "invoke",
      request: envelope,
      parse: (message) => answerOf(message, invokeResponseFromPayload),
      maxAttempts: options.resendInvoke === true ? this.#config.maxAttempts : 1,
      timeoutMs,
      signal: options.signal,
      timeoutOutcome: "unknown",
      deadlineMs: options.deadlineMs,
    });
  }

  #exchange<T>(spec: ExchangeSpec<T>): Promise<T> {
    const request = spec.request;
    const ids = { invocationId: request.invocationId, attemptId: request.attemptId };
    if (this.#closed) {
      return Promise.reject(
        new ToolClientError("the client was closed", {
          code: ToolClientErrorCodes.CLOSED,
          exchange: spec.name,
          ...ids,
          outcome: "not_sent",
        }),
      );
    }
    if (spec.signal?.aborted) return Promise.reject(abortReason(spec.signal));
    if (this.#pending.size >= this.#config.maxPendingExchanges) {
      return Promise.reject(
        new ToolClientError(
          `${this.#pending.size} exchanges are waiting ('maxPendingExchanges')`,
          {
            code: ToolClientErrorCodes.OVERLOADED,
            exchange: spec.name,
            ...ids,
            outcome: "not_sent",
          },
        ),
      );
    }
    const requestId = request.requestId!;
    if (this.#pending.has(requestId)) {
      return Promise.reject(
        new RangeError(
          `Cannot send a ${spec.name} request as 'requestId' is already waiting for an answer: ` +
            `current value is '${requestId}'`,
        ),
      );
    }
    const callDeadline = spec.deadlineMs === undefined
      ? Infinity
      : performance.now() + (spec.deadlineMs - Date.now());
    if (callDeadline <= performance.now()) {
      return Promise.reject(
        new ToolClientError(`the call's deadline (deadline_ms=${spec.deadlineMs}) has passed`, {
          code: ToolClientErrorCodes.DEADLINE_EXCEEDED,
          exchange: spec.name,
          ...ids,
          outcome: "not_sent",
        }),
      );
    }
    const { promise, resolve, reject } = withResolvers<T>();
    const exchange: Exchange = {
      spec: spec as ExchangeSpec<unknown>,
      resolve: resolve as (value: unknown) => void,
      reject,
      deadline: 0,
      callDeadline,
      attempts: 0,
      unlinkSignal: undefined,
    };
    this.#pending.set(requestId, exchange);
    const signal = spec.signal;
    if (signal !== undefined) {
      const onAbort = () => this.#fail(exchange, abortReason(signal));
      signal.addEventListener("abort", onAbort, { once: true });
      exchange.unlinkSignal = () => signal.removeEventListener("abort", onAbort);
    }
    this.#attempt(exchange);
    return promise;
  }

  #attempt(exchange: Exchange): void {
    const { spec } = exchange;
    exchange.attempts++;
    if (exchange.attempts === 1) this.#counters.sent++;
    else this.#counters.resent++;
    exchange.deadline = Math.min(performance.now() + spec.timeoutMs, exchange.callDeadline);
    this.#armTimer(exchange.deadline);
    const attempt = exchange.attempts;
    const sendFailed = (error: unknown) => {
      if (this.#pending.get(spec.request.requestId!) !== exchange) return;
      if (exchange.attempts !== attempt) return;
      const context = {
        exchange: spec.name,
        invocationId: spec.request.invocationId,
        attemptId: spec.request.attemptId,
        attempts: attempt,
      };
      // Only an invoke's failure is about the execution's fate; a re-sent invoke may have been
      // delivered by an earlier attempt.
      const aboutFate = spec.timeoutOutcome !== undefined;
      if (error instanceof ToolClientError) {
        // The transport knows more (an in-process handler refused or failed the request).
        const outcome = !aboutFate
          ? undefined
          : attempt > 1 && error.outcome !== "unknown"
          ? "unknown"
          : error.outcome;
        this.#fail(exchange, inContext(error, { ...context, outcome }));
        return;
      }
      this.#fail(
        exchange,
        new ToolClientError(`the ${spec.name} request could not be sent: ${reasonOf(error)}`, {
          ...context,
          code: ToolClientErrorCodes.SEND_FAILED,
          outcome: !aboutFate ? undefined : attempt === 1 ? "not_sent" : "unknown",
          cause: error,
        }),
      );
    };
    try {
      const sent = this.#transport.send(spec.request);
      if (sent !== undefined && typeof (sent as Promise<void>).then === "function") {
        (sent as Promise<void>).then(undefined, sendFailed);
      }
    } catch (error) {
      sendFailed(error);
    }
  }

  /**
   * One timer serves every pending exchange: it is set for the earliest deadline and only moved
   * earlier, never cleared when an exchange settles (a timer per exchange costs more than the
   * rest of a Query); when it fires, expired exchanges time out and it is set for the next.
   */
  #armTimer(deadline: number): void {
    if (this.#timer !== undefined && this.#timerAt <= deadline) return;
    this.#timer?.clear();
    this.#timerAt = deadline;
    this.#timer = setLongTimeout(() => this.#timerFired(), deadline - performance.now());
  }

  #timerFired(): void {
    this.#timer = undefined;
    const now = performance.now();
    let next = Infinity;
    for (const exchange of Array.from(this.#pending.values())) {
      if (exchange.deadline <= now) this.#timedOut(exchange);
      // A re-sent exchange has a new deadline; a failed one left the map.
      if (this.#pending.has(exchange.spec.request.requestId!)) {
        next = Math.min(next, exchange.deadline);
      }
    }
    if (next !== Infinity) this.#armTimer(next);
  }

  #stopTimer(): void {
    this.#timer?.clear();
    this.#timer = undefined;
  }

  #timedOut(exchange: Exchange): void {
    const { spec } = exchange;
    if (this.#pending.get(spec.request.requestId!) !== exchange) return;
    if (exchange.callDeadline <= performance.now()) {
      this.#fail(
        exchange,
        new ToolClientError(
          `the ${spec.name} request (request_id=${spec.request.requestId}) got no answer by the ` +
            `call's deadline (deadline_ms=${spec.deadlineMs}) after ${exchange.attempts} attempt(s)`,
          {
            code: ToolClientErrorCodes.DEADLINE_EXCEEDED,
            exchange: spec.name,
            invocationId: spec.request.invocationId,
            attemptId: spec.request.attemptId,
            attempts: exchange.attempts,
            outcome: spec.timeoutOutcome,
          },
        ),
      );
      return;
    }
    if (exchange.attempts < spec.maxAttempts) {
      this.#attempt(exchange);
      return;
    }
    this.#counters.timeouts++;
    this.#fail(
      exchange,
      new ToolClientError(
        `the ${spec.name} request (request_id=${spec.request.requestId}) got no answer after ` +
          `${exchange.attempts} attempt(s) of ${spec.timeoutMs} ms`,
        {
          code: ToolClientErrorCodes.TIMEOUT,
          exchange: spec.name,
          invocationId: spec.request.invocationId,
          attemptId: spec.request.attemptId,
          attempts: exchange.attempts,
          outcome: spec.timeoutOutcome,
        },
      ),
    );
  }

  #fail(exchange: Exchange, error: unknown): void {
    if (!this.#settle(exchange)) return;
    exchange.reject(error);
  }

  /** Removes a pending exchange; false when it was no longer pending. */
  #settle(exchange: Exchange): boolean {
    const requestId = exchange.spec.request.requestId!;
    if (this.#pending.get(requestId) !== exchange) return false;
    this.#pending.delete(requestId);
    exchange.unlinkSignal?.();
    return true;
  }

  /** Every message the transport delivers; never throws. */
  #receive(message: ToolEnvelope): void {
    try {
      if (!(message instanceof ToolEnvelope)) {
        this.#counters.invalid++;
        return;
      }
      if (message.messageType === "tool.event") {
        this.#receiveEvent(message);
        return;
      }
      if (!CALLER_BOUND.has(message.messageType)) {
        this.#counters.invalid++;
        return;
      }
      const requestId = message.requestId;
      const exchange = requestId === undefined ? undefined : this.#pending.get(requestId);
      if (exchange === undefined) {
        this.#counters.uncorrelated++;
        return;
      }
      try {
        validateResponseCorrelation(exchange.spec.request, message);
      } catch {
        this.#counters.mismatched++;
        return;
      }
      let value: unknown;
      try {
        value = exchange.spec.parse(message);
      } catch {
        this.#counters.invalid++;
        return;
      }
      this.#counters.responses++;
      if (this.#settle(exchange)) exchange.resolve(value);
    } catch {
      this.#counters.invalid++;
    }
  }

  #receiveEvent(message: ToolEnvelope): void {
    const { invocationId, attemptId, sequence } = message;
    if (invocationId === undefined || attemptId === undefined || sequence === undefined) {
      this.#counters.invalid++;
      return;
    }
    const invocation = this.#invocations.get(`${invocationId.length}:${invocationId}${attemptId}`);
    if (invocation === undefined) {
      this.#counters.unroutedEvents++;
      return;
    }
    const request = invocation.request;
    if (
      message.endpointId !== request.endpointId || message.operation !== request.operation ||
      !invocation.fromInstance(message.endpointInstanceId)
    ) {
      this.#counters.mismatched++;
      return;
    }
    if (!Number.isSafeInteger(sequence) || sequence < 0) {
      this.#counters.invalid++;
      return;
    }
    let event;
    try {
      event = eventFromPayload(message.payload);
    } catch {
      this.#counters.invalid++;
      return;
    }
    const outcome = invocation.pushEvent(sequence, event);
    if (outcome === "duplicate") this.#counters.duplicateEvents++;
    else if (outcome === "ignored") this.#counters.unroutedEvents++;
    else this.#counters.events++;
  }
}

// ---------------------------------------------------------------------------------------------
// Invocation handles

interface ClientCore {
  config(): Config;
  exchange<T>(spec: ExchangeSpec<T>): Promise<T>;
  forget(invocation: Invocation): void;
  /** Marks a settled invocation whose stream stays open a while (it gives way at the limit). */
  linger(invocation: Invocation): void;
  /** Keeps background work (a control an abort sent) that `close()` lets finish. */
  track(work: Promise<void>): void;
}

/** Why the result watch woke: `poll` is a caller asking `result()`. */
type Wake = "event" | "poll" | "gap" | "terminal" | "timeout" | "stopped";
const WAKE_PRIORITY: Readonly<Record<Wake, number>> = {
  timeout: 0,
  event: 1,
  poll: 2,
  gap: 2,
  terminal: 3,
  stopped: 4,
};

/** The implementation of {@linkcode ToolInvocation}. */
class Invocation implements ToolInvocation, EventBufferHost {
  readonly key: ToolExecutionKey;
  readonly context: ToolContext;
  readonly request: ToolEnvelope;
  readonly endpointInstanceId: string | undefined;
  acceptance: ToolAccepted | ToolResult | undefined = undefined;
  semantics: "action" | "session" | undefined;
  readonly #core: ClientCore;
  readonly #timeoutMs: number;
  readonly #buffer: EventBuffer;
  #outcome = withResolvers<ToolResult>();
  readonly #signal: AbortSignal | undefined;
  #unlinkSignal: (() => void) | undefined;
  #terminal: ToolResult | undefined;
  #ended = false;
  #watching = false;
  #wakeup: PromiseWithResolvers<Wake> | undefined;
  #pendingWake: Wake | undefined;
  #controlSent = false;
  #tailTimer: LongTimeout | undefined;
  /** The instance events must come from: the addressed one, else the first event's. */
  #eventInstanceId: string | undefined;

  constructor(
    core: ClientCore,
    context: ToolContext,
    request: ToolEnvelope,
    semantics: ToolSemantics | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ) {
    const config = core.config();
    this.#core = core;
    this.key = context.executionKey;
    this.context = context;
    this.request = request;
    this.endpointInstanceId = request.endpointInstanceId;
    this.#eventInstanceId = request.endpointInstanceId;
    this.semantics = semantics === "query" ? undefined : semantics;
    this.#timeoutMs = timeoutMs;
    this.#buffer = new EventBuffer(this, config.maxBufferedEvents, config.reorderWindowMs);
    this.#signal = signal;
    // Nobody may be waiting when the outcome fails: that is not an unhandled rejection.
    this.#outcome.promise.catch(() => undefined);
  }

  get droppedEvents(): number {
    return this.#buffer.dropped;
  }

  get eventGaps(): number {
    return this.#buffer.gaps;
  }

  get events(): AsyncIterable<ToolEventRecord> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<ToolEventRecord>> => {
          this.#watch();
          const record = await this.#buffer.next();
          return record === undefined
            ? { done: true, value: undefined }
            : { done: false, value: record };
        },
      }),
    };
  }

  // --- called by the client ------------------------------------------------------------------

  /** The invoke was answered: an acceptance or an initial terminal result. */
  accept(outcome: ToolAccepted | ToolResult): void {
    this.acceptance = outcome;
    if (outcome instanceof ToolResult) {
      this.#settleTerminal(outcome);
      return;
    }
    this.#linkSignal();
  }

  /** The invoke went unanswered: learn from the result whether the execution was admitted. */
  async recoverAdmission(timeout: ToolClientError): Promise<ToolInvocation> {
    let answer: Answer<ToolResultResponse>;
    try {
      answer = await this.#resultRequest();
    } catch (error) {
      this.release(error);
      const closed = error instanceof ToolClientError &&
        error.code === ToolClientErrorCodes.CLOSED;
      throw new ToolClientError(
        closed
          ? "the client was closed while the unanswered invoke's admission was looked up"
          : `the invoke got no answer and its admission could not be learned: ${reasonOf(error)}`,
        {
          code: closed ? ToolClientErrorCodes.CLOSED : ToolClientErrorCodes.TIMEOUT,
          exchange: "invoke",
          invocationId: this.key.invocationId,
          attemptId: this.key.attemptId,
          attempts: timeout.attempts,
          outcome: "unknown",
          cause: error,
        },
      );
    }
    const response = "error" in answer ? undefined : answer.ok;
    if (response === undefined || response.status === "not_found") {
      this.release(undefined);
      throw new ToolClientError(
        "error" in answer
          ? `the invoke got no answer and the result request asking its admission was answered ` +
            `${answer.error.code}: ${answer.error.message}`
          : "the invoke got no answer and the endpoint did not know the execution when asked",
        {
          code: ToolClientErrorCodes.TIMEOUT,
          exchange: "invoke",
          invocationId: this.key.invocationId,
          attemptId: this.key.attemptId,
          attempts: timeout.attempts,
          outcome: response === undefined ? "unknown" : "not_admitted",
          cause: "error" in answer
            ? new ToolCallError(answer.error, "error", this.#about("result"))
            : timeout,
        },
      );
    }
    if (response.result !== undefined) this.#settleTerminal(response.result);
    else this.#linkSignal();
    return this;
  }

  /**
   * Whether an event of `endpointInstanceId` belongs to this execution. An invoke sent without an
   * instance (a gateway that fills it in, such as a Dora caller of a ToolGateway node) learns it
   * from the first event: events carry the instance that runs the execution, and one execution
   * has one.
   */
  fromInstance(endpointInstanceId: string | undefined): boolean {
    if (endpointInstanceId === undefined) return false;
    this.#eventInstanceId ??= endpointInstanceId;
    return endpointInstanceId === this.#eventInstanceId;
  }

  pushEvent(sequence: number, event: ToolEvent): PushOutcome {
    const outcome = this.#buffer.push(sequence, event);
    if (outcome === "delivered") this.#wake("event");
    if (this.#buffer.ended) this.endStream();
    return outcome;
  }

  /** The abort signal fired: send the ending control in the background and end the waits. */
  abort(reason: unknown): void {
    if (!this.#over() && !this.#controlSent) {
      this.#controlSent = true;
      this.#endInBackground("the caller aborted the invocation");
    }
    this.release(reason);
  }

  /**
   * Ends an execution nobody holds a handle to (a `query()` answered with an acceptance): sends
   * the ending control and returns its answer; `close()` lets it finish.
   */
  terminate(reason: string): Promise<ToolControlResponse> {
    this.#controlSent = true;
    const ending = this.#end(reason);
    this.#core.track(ending.then(() => undefined, () => undefined));
    return ending;
  }

  /**
   * The abort signal fired while the invoke waited for its answer: whether the execution was
   * admitted is unknown (the invoke may be lost, or still on its way), so the ending control is
   * sent only after a result request shows it pending; `not_found` sends nothing.
   */
  abortUnanswered(reason: unknown): void {
    if (!this.#controlSent) {
      this.#controlSent = true;
      this.#core.track(
        this.#endIfAdmitted("the caller aborted the invocation").then(
          undefined,
          (error) => this.#core.config().onError(error, this.key),
        ),
      );
    }
    this.release(reason);
  }

  async #endIfAdmitted(reason: string): Promise<void> {
    const response = unwrap(await this.#resultRequest(), this.#about("result"));
    if (response.status === "pending") await this.#end(reason);
  }

  /** Stops routing events and ends every wait (with `error`, when given). */
  release(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#unlinkSignal?.();
    this.#tailTimer?.clear();
    this.#tailTimer = undefined;
    this.#core.forget(this);
    const failure = error ?? new ToolClientError("the invocation was released", {
      code: ToolClientErrorCodes.CLOSED,
      invocationId: this.key.invocationId,
      attemptId: this.key.attemptId,
    });
    this.#buffer.end(this.#terminal === undefined ? { reason: failure } : undefined);
    if (this.#terminal === undefined) this.#outcome.reject(failure);
    this.#wake("stopped");
  }

  // --- EventBufferHost ------------------------------------------------------------------------

  recover(reason: "gap" | "terminal"): void {
    // A skipped gap may have delivered the terminal event: the stream is over, so the handle
    // stops being routed (and counted against maxOpenInvocations) as when it arrives in order.
    if (this.#buffer.ended) this.endStream();
    this.#wake(reason);
  }

  // --- ToolInvocation -------------------------------------------------------------------------

  async status(): Promise<ToolExecutionStatus> {
    return unwrap(
      await this.#core.exchange({
        ...this.#requestSpec("status", makeStatusRequestEnvelope(this.context, this.#ids())),
        parse: (message) => answerOf(message, statusResponseFromPayload),
      }),
      this.#about("status"),
    );
  }

  result(): Promise<ToolResult> {
    if (this.#terminal !== undefined) return Promise.resolve(this.#terminal);
    // The first look is at once: an execution may already be over without a terminal event.
    this.#wake("poll");
    this.#watch();
    return this.#outcome.promise;
  }

  cancel(reason?: string): Promise<ToolControlResponse> {
    return this.#control("cancel", reason);
  }

  stop(reason?: string): Promise<ToolControlResponse> {
    return this.#control("stop", reason);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#over() && !this.#ended && !this.#controlSent) {
      this.#controlSent = true;
      try {
        await this.#end("the caller disposed the invocation");
      } catch (error) {
        this.#core.config().onError(error, this.key);
      }
    }
    this.release(undefined);
  }

  // --- internals ------------------------------------------------------------------------------

  /** Whether the execution is known to be over: its terminal result or terminal event came. */
  #over(): boolean {
    return this.#terminal !== undefined || this.#buffer.terminalSeen;
  }

  /** The fields of an error about an exchange of this invocation. */
  #about(exchange: ToolClientExchange): ToolClientErrorContext {
    return {
      exchange,
      invocationId: this.key.invocationId,
      attemptId: this.key.attemptId,
      attempts: 1,
    };
  }

  #ids(): { requestId: string; endpointInstanceId: string | undefined } {
    return {
      requestId: this.#core.config().generateId(),
      endpointInstanceId: this.endpointInstanceId,
    };
  }

  #requestSpec(name: ToolClientExchange, request: ToolEnvelope) {
    return {
      name,
      request,
      maxAttempts: this.#core.config().maxAttempts,
      timeoutMs: this.#timeoutMs,
      signal: undefined,
      timeoutOutcome: undefined,
    } as const;
  }

  #resultRequest(): Promise<Answer<ToolResultResponse>> {
    return this.#core.exchange({
      ...this.#requestSpec("result", makeResultRequestEnvelope(this.context, this.#ids())),
      parse: (message) => answerOf(message, resultResponseFromPayload),
    });
  }

  async #control(command: ToolControlCommand, reason?: string): Promise<ToolControlResponse> {
    if (reason !== undefined && typeof reason !== "string") {
      throw new TypeError(
        optionMessage(command, "reason", "a string", reason),
      );
    }
    const response = unwrap(
      await this.#core.exchange({
        ...this.#requestSpec(
          "control",
          makeControlRequestEnvelope(command, this.context, { ...this.#ids(), reason }),
        ),
        parse: (message) => answerOf(message, controlResponseFromPayload),
      }),
      this.#about("control"),
    );
    if (response.status !== "unsupported" && this.semantics === undefined) {
      this.semantics = command === "cancel" ? "action" : "session";
    }
    return response;
  }

  /** Sends the control that ends the execution (learning `cancel` vs `stop` when unknown). */
  async #end(reason: string): Promise<ToolControlResponse> {
    if (this.semantics !== undefined) {
      return await this.#control(endCommand(this.semantics), reason);
    }
    const cancel = await this.#control("cancel", reason);
    return cancel.status === "unsupported" ? await this.#control("stop", reason) : cancel;
  }

  #endInBackground(reason: string): void {
    this.#core.track(
      this.#end(reason).then(
        () => undefined,
        (error) => this.#core.config().onError(error, this.key),
      ),
    );
  }

  #linkSignal(): void {
    const signal = this.#signal;
    if (signal === undefined || this.#ended) return;
    if (signal.aborted) {
      this.abort(abortReason(signal));
      return;
    }
    const onAbort = () => this.abort(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    this.#unlinkSignal = () => signal.removeEventListener("abort", onAbort);
  }

  #settleTerminal(result: ToolResult): void {
    if (this.#terminal !== undefined || this.#ended) return;
    this.#terminal = result;
    this.#unlinkSignal?.();
    this.#unlinkSignal = undefined;
    this.#outcome.resolve(result);
    this.#wake("stopped");
    if (this.#buffer.ended) {
      this.#core.forget(this);
      return;
    }
    // The result came from a poll or the invoke answer while events may still be on their way
    // (a carrier publishes a response before the events that follow it): the stream stays open
    // one reorder window for them, then ends (held events delivered, gaps skipped).
    this.#tailTimer = setLongTimeout(() => this.endStream(), this.#core.config().reorderWindowMs);
    this.#core.linger(this);
  }

  /** Ends the event stream (held events delivered, gaps skipped) and stops routing events. */
  endStream(): void {
    this.#tailTimer?.clear();
    this.#tailTimer = undefined;
    this.#buffer.end(undefined);
    this.#core.forget(this);
  }

  #wake(reason: Wake): void {
    const waiter = this.#wakeup;
    if (waiter !== undefined) {
      this.#wakeup = undefined;
      waiter.resolve(reason);
      return;
    }
    if (
      this.#pendingWake === undefined || WAKE_PRIORITY[reason] > WAKE_PRIORITY[this.#pendingWake]
    ) {
      this.#pendingWake = reason;
    }
  }

  #sleep(ms: number): Promise<Wake> {
    const pending = this.#pendingWake;
    this.#pendingWake = undefined;
    if (pending !== undefined) return Promise.resolve(pending);
    const wakeup = withResolvers<Wake>();
    this.#wakeup = wakeup;
    const timer = setLongTimeout(() => this.#wake("timeout"), ms);
    return wakeup.promise.finally(() => timer.clear());
  }

  /** Starts the result watch once: it runs until the terminal result is known or the end. */
  #watch(): void {
    if (this.#watching || this.#terminal !== undefined || this.#ended) return;
    this.#watching = true;
    this.#watchLoop().then(undefined, (error) => this.release(error));
  }

  async #watchLoop(): Promise<void> {
    const { pollIntervalMs, maxPollIntervalMs } = this.#core.config();
    let backoff = pollIntervalMs;
    // A terminal event that arrived before anyone waited is acted on at once.
    if (this.#buffer.terminalSeen) this.#wake("terminal");
    while (this.#terminal === undefined && !this.#ended) {
      const woke = await this.#sleep(backoff);
      if (this.#terminal !== undefined || this.#ended || woke === "stopped") return;
      if (woke === "event") {
        backoff = pollIntervalMs;
        continue;
      }
      let response: ToolResultResponse;
      try {
        response = unwrap(await this.#resultRequest(), this.#about("result"));
      } catch (error) {
        if (!(error instanceof ToolCallError) || !error.retryable) throw error;
        // The endpoint is away for now (a gateway whose lease on it expired, a provider at
        // capacity) and the execution may still run: the waiting result() calls get the error,
        // the invocation stays open (its events keep arriving) and the watch polls on.
        const waiting = this.#outcome;
        this.#outcome = withResolvers<ToolResult>();
        this.#outcome.promise.catch(() => undefined);
        waiting.reject(error);
        backoff = Math.min(backoff * 2, maxPollIntervalMs);
        continue;
      }
      if (response.status === "available" && response.result !== undefined) {
        this.#settleTerminal(response.result);
        return;
      }
      if (response.status === "not_found") {
        throw new ToolClientError("the endpoint no longer knows the execution", {
          code: ToolClientErrorCodes.UNEXPECTED_RESPONSE,
          exchange: "result",
          invocationId: this.key.invocationId,
          attemptId: this.key.attemptId,
          attempts: 1,
        });
      }
      backoff = woke === "timeout" ? Math.min(backoff * 2, maxPollIntervalMs) : pollIntervalMs;
    }
  }
}

/**
 * The transport-independent provider handler: routes execution requests to Query, Action and
 * Session providers, and guards admission, duplicate suppression, ordering, immutability and
 * bounded retention of every execution it admits.
 *
 * @module
 */
import { TOOL_ENDPOINT_PROTOCOL } from "../endpoint/constants.ts";
import { ToolEndpointError, ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { hasLoneSurrogate, isBlankInstanceId } from "../_internal/text.ts";
import {
  type ToolContext,
  ToolEndpointDescriptor,
  ToolError,
  ToolExecutionKey,
  type ToolOperationDescriptor,
  ToolResult,
} from "../endpoint/models.ts";
import type {
  ActionToolEndpoint,
  QueryToolEndpoint,
  SessionToolEndpoint,
  ToolCallOptions,
  ToolEndpointImplementation,
} from "../endpoint/spi.ts";
import { pairedResponseType, ToolEnvelope } from "../wire/envelope.ts";
import {
  makeControlResponseEnvelope,
  makeErrorResponseEnvelope,
  makeInvokeResponseEnvelope,
  makeResultResponseEnvelope,
  makeStatusResponseEnvelope,
} from "../wire/factories.ts";
import {
  checkInvokeRequestEnvelope,
  type InvokeRequestFields,
  invokeRequestFromFields,
  type InvokeRequestParts,
} from "../wire/invoke_request.ts";
import { validateMessageEnvelope } from "../wire/validate.ts";
import { pyRepr, showValue } from "../_internal/repr.ts";
import { optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import {
  consoleLogger,
  logIdsOf,
  logSafely,
  type ToolLogger,
  type ToolLogIds,
  type ToolLogLevel,
} from "../endpoint/log.ts";
import { settleWithin } from "../_internal/async.ts";
import type { ToolEventSink } from "./_emitter.ts";
import { atCapacity, ExecutionLedger, type ExecutionRecord } from "./_ledger.ts";
import { ExecutionLifecycle } from "./_lifecycle.ts";
import { endInvocationSpan, startInvocationSpan, type ToolTracer } from "../endpoint/trace.ts";
import { AbortFanout, atDeadline, type DeadlineTimer, raceAbort } from "./_abort.ts";
import { OperationMeter, type ToolEndpointMetrics, type ToolOperationMetrics } from "./_metrics.ts";

export type { ToolEventSink } from "./_emitter.ts";
export {
  type ToolEndpointMetrics,
  ToolLatencyHistogram,
  type ToolOperationMetrics,
} from "./_metrics.ts";

/**
 * The route headers of a request, what {@linkcode ToolEndpointHandler.validateRequestRoute}
 * checks: every {@linkcode ToolEnvelope} has them, and a transport can read them from a carrier
 * before it parses the payload.
 */
export interface ToolRequestRoute {
  /** The message type: one of the four execution request types. */
  readonly messageType: string;
  /** The logical endpoint. */
  readonly endpointId: string;
  /** The provider instance (absent before provider routing, which this handler refuses). */
  readonly endpointInstanceId: string | undefined;
  /** The operation. */
  readonly operation: string | undefined;
}

/** Options of {@linkcode ToolEndpointHandler}. */
export interface ToolEndpointHandlerOptions {
  /** This process's provider instance: requests for another instance are refused. */
  readonly endpointInstanceId: string;
  /** One implementation per declared operation, by operation name (a record or a `Map`). */
  readonly operations:
    | Readonly<Record<string, ToolEndpointImplementation>>
    | ReadonlyMap<string, ToolEndpointImplementation>;
  /** Events an execution may emit before it is accepted (default 32). */
  readonly maxEarlyEvents?: number;
  /**
   * Events of one execution that may wait to be published at once, that is `emit()` calls in
   * progress (default 1024). A provider that does not await `emit()` queues its events; one more
   * than this rejects at once with a {@linkcode ToolProtocolError} whose code is
   * `FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE`, is not numbered and is not published.
   * @default {1024}
   */
  readonly maxPendingEvents?: number;
  /** Action and Session executions retained for duplicate suppression (default 1024). */
  readonly maxRetainedExecutions?: number;
  /**
   * Enforce `deadline_ms`: an invoke whose deadline has passed is rejected with
   * `FORGE_ENDPOINT_DEADLINE_EXCEEDED` before the provider is called, the provider's signal
   * aborts (a `TimeoutError`) when the deadline passes during the work, and a Query that answers
   * `succeeded` once its deadline passed is answered `failed` with
   * `FORGE_ENDPOINT_DEADLINE_EXCEEDED` (its outputs kept). This differs from the reference, which
   * validates `deadline_ms` but does not enforce it; `false` restores that.
   *
   * @default {true}
   */
  readonly enforceDeadlines?: boolean;
  /** The wall clock in Unix epoch milliseconds, for deadlines (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Where every provider failure and every handler event is reported, one structured record
   * each (see the README's "Observability" section for the event names). The binding, the node
   * runner and the node lifecycle built on this handler report to it too unless given their
   * own.
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
  /**
   * Starts one span per admitted invocation, ended with its outcome (see
   * {@linkcode ToolTracer}); {@linkcode denoTracer} gives Deno's built-in OpenTelemetry tracer
   * when it is enabled. Without it nothing is traced and nothing is allocated for tracing.
   */
  readonly tracer?: ToolTracer;
}

/** Options of {@linkcode ToolEndpointHandler.dispatch}. */
export interface DispatchOptions {
  /** Publishes events emitted after acceptance (required for late Action/Session events). */
  readonly eventSink?: ToolEventSink;
  /**
   * Abandons the dispatch: when it aborts while `start()` is pending, the execution converges to
   * `unknown` (waking duplicates), the provider's signal aborts, and the dispatch rejects with
   * the signal's reason.
   */
  readonly signal?: AbortSignal;
}

// The module-private token of dispatchRouted (the hidden third argument of dispatch): nothing
// outside this module can pass it, so a caller's dispatch always checks the route.
const ROUTE_TRUSTED: unique symbol = Symbol("route trusted");

/** Options of {@linkcode ToolEndpointHandler.close}. */
export interface CloseOptions {
  /**
   * How long to wait, in milliseconds, for in-flight provider calls to settle and for every
   * admitted execution to end and publish its terminal event, before the rest converges to
   * `unknown`; publishing those events and the remaining answers gets as long again. A
   * non-negative finite number (`0`: no grace, what is still running converges at once);
   * anything else rejects with a `RangeError` showing the value.
   *
   * @default {5000}
   */
  readonly graceMs?: number;
}

/** A read-only snapshot of a handler's state, for health reporting. */
export interface ToolEndpointHandlerState {
  /** True once {@linkcode ToolEndpointHandler.close} was called. */
  readonly closed: boolean;
  /** Admission permits in use per Action/Session operation (admitted, not yet terminal). */
  readonly permitsInUse: Readonly<Record<string, number>>;
  /** `max_concurrency` per Action/Session operation. */
  readonly maxConcurrency: Readonly<Record<string, number>>;
  /** Query calls in progress per Query operation (at most its `max_concurrency`). */
  readonly activeQueries: Readonly<Record<string, number>>;
  /** Executions in progress: permits in use plus Query calls in progress. */
  readonly activeInvocations: number;
  /** Records in the execution ledger. */
  readonly retainedExecutions: number;
  /** The ledger's bound. */
  readonly maxRetainedExecutions: number;
  /** True when every Action/Session operation has all its permits in use. */
  readonly saturated: boolean;
}

const REQUIRED_METHODS: Readonly<Record<string, readonly string[]>> = {
  query: ["query"],
  action: ["start", "cancel", "status", "result"],
  session: ["start", "stop", "status", "result"],
};

/** Why a provider call still pending when {@linkcode ToolEndpointHandler.close}'s grace ran out ended. */
const ABANDONED = new ToolProtocolError(
  ToolErrorCodes.ENDPOINT_UNAVAILABLE,
  "the endpoint handler closed before the provider answered",
);

const CREATE_HANDLER = "create the handler";

/** The failure of a Query that ended (threw or answered `succeeded`) after its deadline. */
const QUERY_DEADLINE_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_DEADLINE_EXCEEDED,
  message: "deadline_ms passed before the query finished",
  retryable: false,
});

/** `CloseOptions.graceMs`: 5000 when absent, else a non-negative finite number. */
function graceOption(value: unknown): number {
  if (value === undefined || value === null) return 5000;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new RangeError(
      optionMessage("close the handler", "graceMs", "a non-negative finite number", value),
    );
  }
  return value;
}

/**
 * Provider failures answered as a protocol error that are the provider's fault (a changed
 * terminal record, a backward transition...), logged as such; the other protocol errors of a
 * status, result or control request (a key bound to another operation, a full ledger, a call
 * abandoned at close) are the caller's or the handler's.
 */
const PROVIDER_FAULTS: ReadonlySet<string> = new Set([
  ToolErrorCodes.ENDPOINT_TERMINAL_CHANGED,
  ToolErrorCodes.ENDPOINT_TERMINAL_MISMATCH,
  ToolErrorCodes.ENDPOINT_TERMINAL_RESULT_UNAVAILABLE,
  ToolErrorCodes.ENDPOINT_INVALID_TRANSITION,
  ToolErrorCodes.CORRELATION_MISMATCH,
]);

/** The record event of a failed status, result or control request. */
const REQUEST_FAILED_EVENT: Readonly<Record<string, string>> = {
  "tool.status.request": "provider.status_failed",
  "tool.result.request": "provider.result_failed",
  "tool.control.request": "provider.control_failed",
};

/** The identifier fields of records about the execution of `context`. */
function contextIds(endpointId: string, context: ToolContext): ToolLogIds {
  return {
    endpointId,
    operation: context.operation,
    invocationId: context.executionKey.invocationId,
    attemptId: context.executionKey.attemptId,
  };
}

function protocolErrorResponse(error: ToolProtocolError, request: ToolEnvelope): ToolEnvelope {
  return makeErrorResponseEnvelope(
    new ToolError({
      code: error.code,
      message: error.message,
      retryable: false,
      details: error.path === undefined ? {} : { path: error.path },
    }),
    request,
  );
}

function rejection(code: string, message: string, retryable: boolean): ToolError {
  return new ToolError({ code, message, retryable });
}

/** True for the four execution request types (those with a paired response). */
function isExecutionRequestType(messageType: string): boolean {
  return pairedResponseType(messageType) !== undefined;
}

/** The refusal of a message that is no execution request where only requests are accepted. */
function notARequest(messageType: string): ToolProtocolError {
  return new ToolProtocolError(
    ToolErrorCodes.UNKNOWN_MESSAGE_TYPE,
    `request envelope must be an execution request, found ${pyRepr(messageType)}`,
    "message_type",
  );
}

/**
 * The provider side of the ToolEndpoint Wire for one endpoint instance.
 *
 * Route trust comes first: a request for another endpoint or instance, or an undeclared
 * operation, is raised as a {@linkcode ToolProtocolError} and never answered. On a trusted route
 * every request gets exactly one correlated response (an invalid payload becomes a correlated
 * `tool.error`). Action and Session executions are admitted against the operation's
 * `max_concurrency`, deduplicated by {@linkcode ToolExecutionKey} (a duplicate invoke replays the
 * original answer without restarting the provider), and retained in a bounded ledger.
 *
 * Unlike the reference, which runs every Query it receives at once, a Query is admitted against
 * its operation's `max_concurrency` too: while that many Query calls of the operation are in
 * progress, another is answered with the retryable `FORGE_ENDPOINT_CAPACITY` rejection
 * ("operation '<name>' is at max_concurrency"), as an Action would be. Queries are not
 * deduplicated and not retained.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   ToolContext,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolExecutionKey,
 *   ToolOperationDescriptor,
 *   ToolRequest,
 *   ToolResult,
 * } from "@forge/tool";
 * import { makeInvokeRequestEnvelope, TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: "instance-1",
 *     operations: {
 *       detect: { query: () => new ToolResult({ status: "succeeded", outputs: { objects: [] } }) },
 *     },
 *   },
 * );
 * const context = new ToolContext({
 *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
 *   toolId: "forge.tool.detect",
 *   implementationId: "yolo",
 *   endpointId: "vision.yolo",
 *   operation: "detect",
 * });
 * const request = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
 *   requestId: "request-1",
 *   endpointInstanceId: "instance-1",
 * });
 * const [response] = await handler.dispatch(request);
 * assertEquals(response.payload.outcome, "completed");
 * ```
 */
export class ToolEndpointHandler {
  readonly #descriptor: ToolEndpointDescriptor;
  readonly #endpointInstanceId: string;
  readonly #implementations: ReadonlyMap<string, ToolEndpointImplementation>;
  readonly #operations: ReadonlyMap<string, ToolOperationDescriptor>;
  readonly #enforceDeadlines: boolean;
  readonly #now: () => number;
  readonly #logger: ToolLogger;
  readonly #tracer: ToolTracer | undefined;
  /** The counters of Query operations (the ledger keeps those of Actions and Sessions). */
  readonly #queryMeters = new Map<string, OperationMeter>();
  readonly #activeQueries = new Map<string, number>();
  readonly #ledger: ExecutionLedger;
  readonly #lifecycle: ExecutionLifecycle;
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #dispatches = new Set<Promise<unknown>>();
  readonly #lifetime = new AbortController();
  readonly #abandon = new AbortController();
  // One listener per shared signal, fanning out: linking a call costs O(1) however many pend.
  readonly #onLifetimeEnd = new AbortFanout(this.#lifetime.signal);
  readonly #onAbandon = new AbortFanout(this.#abandon.signal);
  readonly #callerSignals = new WeakMap<AbortSignal, AbortFanout>();
  #closed = false;
  /** Listeners of {@linkcode ToolEndpointHandler.watchState}, told once per microtask turn. */
  readonly #stateWatchers = new Set<() => void>();
  #stateNoticeQueued = false;

  /**
   * Binds one implementation to every declared operation. Checks, in order: the descriptor, its
   * protocol version, the operations mapping, `maxEarlyEvents`, `maxRetainedExecutions`,
   * `maxPendingEvents`, the exact operation mapping, the methods each semantics requires, and
   * `endpointInstanceId`.
   */
  constructor(descriptor: ToolEndpointDescriptor, options: ToolEndpointHandlerOptions) {
    if (!(descriptor instanceof ToolEndpointDescriptor)) {
      throw new TypeError(
        optionMessage(CREATE_HANDLER, "descriptor", "a ToolEndpointDescriptor", descriptor),
      );
    }
    if (descriptor.protocolVersion !== TOOL_ENDPOINT_PROTOCOL) {
      throw new RangeError(
        optionMessage(
          CREATE_HANDLER,
          "descriptor.protocolVersion",
          `'${TOOL_ENDPOINT_PROTOCOL}'`,
          descriptor.protocolVersion,
        ),
      );
    }
    if (typeof options !== "object" || options === null) {
      throw new TypeError(optionMessage(CREATE_HANDLER, "options", "an object", options));
    }
    const operations: unknown = options.operations;
    const isMap = operations instanceof Map;
    if (
      !isMap &&
      (typeof operations !== "object" || operations === null || Array.isArray(operations))
    ) {
      throw new TypeError(optionMessage(CREATE_HANDLER, "operations", "a mapping", operations));
    }
    const maxEarlyEvents = positiveIntegerOption(
      CREATE_HANDLER,
      "maxEarlyEvents",
      options.maxEarlyEvents ?? undefined,
      32,
    );
    const maxRetained = positiveIntegerOption(
      CREATE_HANDLER,
      "maxRetainedExecutions",
      options.maxRetainedExecutions ?? undefined,
      1024,
    );
    const maxPendingEvents = positiveIntegerOption(
      CREATE_HANDLER,
      "maxPendingEvents",
      options.maxPendingEvents ?? undefined,
      1024,
    );
    const implementations = new Map<string, ToolEndpointImplementation>();
    const entries = isMap
      ? [...(operations as Map<unknown, ToolEndpointImplementation>)]
      : Object.entries(operations as Record<string, ToolEndpointImplementation>);
    for (const [name, implementation] of entries) {
      if (typeof name !== "string") {
        throw new TypeError("operation implementation names must be strings");
      }
      implementations.set(name, implementation);
    }
    const declared = descriptor.operations.map((operation) => operation.name);
    const missing = declared.filter((name) => !implementations.has(name)).sort();
    const undeclared = [...implementations.keys()].filter((name) => !declared.includes(name))
      .sort();
    if (missing.length > 0 || undeclared.length > 0) {
      const parts: string[] = [];
      if (missing.length > 0) parts.push(`missing implementations: ${missing.join(", ")}`);
      if (undeclared.length > 0) parts.push(`undeclared implementations: ${undeclared.join(", ")}`);
      throw new RangeError(`operation mapping does not match descriptor: ${parts.join("; ")}`);
    }
    for (const operation of descriptor.operations) {
      const implementation = implementations.get(operation.name) as unknown as Record<
        string,
        unknown
      >;
      for (const method of REQUIRED_METHODS[operation.semantics]) {
        if (
          typeof implementation !== "object" && typeof implementation !== "function" ||
          implementation === null || typeof implementation[method] !== "function"
        ) {
          throw new TypeError(
            `operation '${operation.name}' with ${operation.semantics} semantics requires a callable ${method}() method`,
          );
        }
      }
    }
    const instance: unknown = options.endpointInstanceId;
    if (typeof instance !== "string" || isBlankInstanceId(instance)) {
      throw new RangeError(
        optionMessage(CREATE_HANDLER, "endpointInstanceId", "a non-empty string", instance),
      );
    }
    if (hasLoneSurrogate(instance)) {
      throw new RangeError(
        "Cannot create the handler as 'endpointInstanceId' must contain valid Unicode scalar " +
          `values: current value is ${JSON.stringify(instance)}`,
      );
    }
    const logger: unknown = options.logger;
    if (logger !== undefined && typeof logger !== "function") {
      throw new TypeError(optionMessage(CREATE_HANDLER, "logger", "a function", logger));
    }
    this.#logger = (logger as ToolLogger | undefined) ?? consoleLogger;
    const tracer: unknown = options.tracer;
    if (
      tracer !== undefined &&
      (typeof tracer !== "object" || tracer === null ||
        typeof (tracer as ToolTracer).startSpan !== "function")
    ) {
      throw new TypeError(
        optionMessage(CREATE_HANDLER, "tracer", "an object with a startSpan() method", tracer),
      );
    }
    this.#tracer = tracer as ToolTracer | undefined;
    this.#descriptor = descriptor;
    this.#endpointInstanceId = instance;
    this.#implementations = implementations;
    this.#operations = new Map(
      descriptor.operations.map((operation) => [operation.name, operation]),
    );
    const executing: string[] = [];
    for (const operation of descriptor.operations) {
      if (operation.semantics === "query") {
        this.#activeQueries.set(operation.name, 0);
        this.#queryMeters.set(operation.name, new OperationMeter());
      } else {
        executing.push(operation.name);
      }
    }
    this.#ledger = new ExecutionLedger(executing, maxRetained, () => this.#stateChanged());
    this.#lifecycle = new ExecutionLifecycle(this.#ledger, {
      endpointInstanceId: instance,
      maxEarlyEvents,
      maxPendingEvents,
      provider: (name) =>
        this.#implementations.get(name) as ActionToolEndpoint | SessionToolEndpoint,
      call: (fn) => this.#call(fn),
      callOptions: () => this.#callOptions(),
      admissionRefusal: (context) => this.#admissionRefusal(context),
      linkSignals: (controller, context, record) => this.#linkSignals(controller, context, record),
      callerFanout: (signal) => this.#callerFanout(signal),
      endpointId: descriptor.endpointId,
      log: (level, event, message, ids, error) => this.#log(level, event, message, ids, error),
      tracer: this.#tracer,
    });
    const enforceDeadlines: unknown = options.enforceDeadlines;
    if (enforceDeadlines !== undefined && typeof enforceDeadlines !== "boolean") {
      throw new TypeError(
        optionMessage(CREATE_HANDLER, "enforceDeadlines", "a boolean", enforceDeadlines),
      );
    }
    this.#enforceDeadlines = enforceDeadlines ?? true;
    this.#now = options.now ?? Date.now;
  }

  /** The descriptor this handler serves (the same object). */
  get descriptor(): ToolEndpointDescriptor {
    return this.#descriptor;
  }

  /** This handler's provider instance. */
  get endpointInstanceId(): string {
    return this.#endpointInstanceId;
  }

  /** The declared operation names, in descriptor order. */
  get operationNames(): readonly string[] {
    return this.#descriptor.operations.map((operation) => operation.name);
  }

  /** Where this handler reports (its `logger` option, else {@linkcode consoleLogger}). */
  get logger(): ToolLogger {
    return this.#logger;
  }

  /**
   * A snapshot of the per-operation counters and latency histograms (see
   * {@linkcode ToolOperationMetrics}): invokes admitted and rejected, and admitted executions by
   * terminal outcome, each counted once, when its outcome is first established (a Query when its
   * provider answers; an Action or Session when a status or result read, a terminal event, a
   * failed start or a convergence establishes it). Counting costs a few additions per execution
   * and never allocates; reading copies the numbers.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { defineEndpoint, defineQuery } from "@forge/tool";
   * const handler = defineEndpoint({
   *   endpointId: "vision.yolo",
   *   operations: { detect: defineQuery(() => ({ objects: [] })) },
   * }).createHandler({ endpointInstanceId: "yolo-1" });
   * const detect = handler.metrics.operations.detect;
   * assertEquals([detect.admitted, detect.succeeded, detect.latency.count], [0, 0, 0]);
   * assertEquals(detect.latency.p99, undefined);
   * ```
   */
  get metrics(): ToolEndpointMetrics {
    const operations: Record<string, ToolOperationMetrics> = {};
    for (const { name, semantics } of this.#descriptor.operations) {
      const meter = semantics === "query" ? this.#queryMeters.get(name)! : this.#ledger.meter(name);
      operations[name] = meter.snapshot();
    }
    return Object.freeze({ operations: Object.freeze(operations) });
  }

  /**
   * Reports one record to the handler's logger (a throwing logger cannot break the handler). A
   * provider call the handler abandoned at close() is the shutdown's doing: never an error.
   */
  #log(
    level: ToolLogLevel,
    event: string,
    message: string,
    ids: ToolLogIds,
    error?: unknown,
  ): void {
    logSafely(
      this.#logger,
      error === undefined ? { level, event, message, ...ids } : {
        level: error === ABANDONED && level === "error" ? "warn" : level,
        event,
        message,
        ...ids,
        error,
      },
    );
  }

  /**
   * Calls `listener` after an Action or Session admission permit was taken or released, so a
   * health reporter sees `busy` and `ready` when they happen rather than on its next period.
   * Calls are coalesced to one per microtask turn and made outside the handler's own work; a
   * listener that throws is logged (`handler.watcher_failed`) and stays subscribed. Query calls are not
   * signalled (they begin and end inside `dispatch`: check after it). Returns the unsubscribe;
   * `EndpointNodeLifecycle` subscribes its health reporter's `check()` this way.
   */
  watchState(listener: () => void): () => void {
    if (typeof listener !== "function") {
      throw new TypeError(
        `Cannot watch the handler state as 'listener' must be a function: current value is ${
          String(listener)
        }`,
      );
    }
    const entry = () => listener();
    this.#stateWatchers.add(entry);
    return () => void this.#stateWatchers.delete(entry);
  }

  #stateChanged(): void {
    if (this.#stateWatchers.size === 0 || this.#stateNoticeQueued) return;
    this.#stateNoticeQueued = true;
    queueMicrotask(() => {
      this.#stateNoticeQueued = false;
      for (const watcher of this.#stateWatchers) {
        try {
          watcher();
        } catch (error) {
          this.#log(
            "error",
            "handler.watcher_failed",
            "a watchState listener failed; it stays subscribed",
            { endpointId: this.#descriptor.endpointId },
            error,
          );
        }
      }
    });
  }

  /** A snapshot of admission and retention state, for health reporting. */
  get state(): ToolEndpointHandlerState {
    const permitsInUse: Record<string, number> = {};
    const maxConcurrency: Record<string, number> = {};
    let active = 0;
    const permits = this.#ledger.permits;
    let saturated = permits.size > 0;
    for (const [name, count] of permits) {
      permitsInUse[name] = count;
      const maximum = this.#operations.get(name)!.maxConcurrency;
      maxConcurrency[name] = maximum;
      active += count;
      if (count < maximum) saturated = false;
    }
    const activeQueries: Record<string, number> = {};
    for (const [name, count] of this.#activeQueries) {
      activeQueries[name] = count;
      active += count;
    }
    return Object.freeze({
      closed: this.#closed,
      permitsInUse: Object.freeze(permitsInUse),
      maxConcurrency: Object.freeze(maxConcurrency),
      activeQueries: Object.freeze(activeQueries),
      activeInvocations: active,
      retainedExecutions: this.#ledger.size,
      maxRetainedExecutions: this.#ledger.maxRetained,
      saturated,
    });
  }

  // -------------------------------------------------------------------------------------------
  // Route trust

  /**
   * Checks that `request` is an execution request for this endpoint, this instance and a
   * declared operation. Mismatches are raised, never answered: an untrusted route gets no
   * response. Another message type (a response, an event, an `endpoint.*` message arriving where
   * requests are expected) is `FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE` at `message_type`; then
   * `FORGE_PROTOCOL_ROUTE_MISMATCH` at `endpoint_id` or `endpoint_instance_id`, and
   * `FORGE_PROTOCOL_UNKNOWN_OPERATION` at `operation`.
   */
  validateRequestRoute(request: ToolEnvelope): void {
    if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
    this.validateRequestRouteHeaders(request);
  }

  /**
   * {@linkcode validateRequestRoute} on the route headers alone, with the same errors in the same
   * order: a transport trusts (or refuses) a request this way before it parses the payload.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import {
   *   ToolEndpointDescriptor,
   *   ToolEndpointHandler,
   *   ToolOperationDescriptor,
   *   ToolResult,
   * } from "@forge/tool";
   * import { ToolProtocolError } from "@forge/tool/wire";
   * const handler = new ToolEndpointHandler(
   *   new ToolEndpointDescriptor({
   *     protocolVersion: "forge.tool.endpoint/v1alpha1",
   *     endpointId: "vision.yolo",
   *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
   *   }),
   *   {
   *     endpointInstanceId: "instance-1",
   *     operations: { detect: { query: () => new ToolResult({ status: "succeeded", outputs: {} }) } },
   *   },
   * );
   * let code: string | undefined;
   * try {
   *   handler.validateRequestRouteHeaders({
   *     messageType: "tool.invoke.request",
   *     endpointId: "vision.yolo",
   *     endpointInstanceId: "instance-2",
   *     operation: "detect",
   *   });
   * } catch (error) {
   *   if (error instanceof ToolProtocolError) code = error.code;
   * }
   * assertEquals(code, "FORGE_PROTOCOL_ROUTE_MISMATCH");
   * ```
   */
  validateRequestRouteHeaders(route: ToolRequestRoute): void {
    if (!isExecutionRequestType(route.messageType)) throw notARequest(route.messageType);
    if (route.endpointId !== this.#descriptor.endpointId) {
      throw new ToolProtocolError(
        ToolErrorCodes.ROUTE_MISMATCH,
        `request targets endpoint ${pyRepr(route.endpointId)}, expected ${
          pyRepr(this.#descriptor.endpointId)
        }`,
        "endpoint_id",
      );
    }
    if (route.endpointInstanceId !== this.#endpointInstanceId) {
      throw new ToolProtocolError(
        ToolErrorCodes.ROUTE_MISMATCH,
        `request targets endpoint instance ${pyRepr(route.endpointInstanceId)}, expected ${
          pyRepr(this.#endpointInstanceId)
        }`,
        "endpoint_instance_id",
      );
    }
    if (route.operation === undefined || !this.#operations.has(route.operation)) {
      throw new ToolProtocolError(
        ToolErrorCodes.UNKNOWN_OPERATION,
        `endpoint does not declare operation ${pyRepr(route.operation)}`,
        "operation",
      );
    }
  }

  /**
   * {@linkcode validateRequestRoute} for a `tool.invoke.request` only: a message that is no
   * execution request is refused as there, another request type is a `RangeError`.
   */
  validateInvokeRoute(request: ToolEnvelope): void {
    if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
    if (!isExecutionRequestType(request.messageType)) throw notARequest(request.messageType);
    if (request.messageType !== "tool.invoke.request") {
      throw new RangeError("request envelope must be tool.invoke.request");
    }
    this.validateRequestRoute(request);
  }

  // -------------------------------------------------------------------------------------------
  // Dispatch

  /**
   * Handles one execution request and returns the messages to publish: the correlated response
   * first, then (for an Action or Session invoke) the events emitted before acceptance, in
   * sequence order. Events emitted after acceptance go to `options.eventSink`.
   */
  dispatch(request: ToolEnvelope, options?: DispatchOptions): Promise<readonly ToolEnvelope[]>;
  dispatch(
    request: ToolEnvelope,
    options: DispatchOptions = {},
    routed?: unknown,
  ): Promise<readonly ToolEnvelope[]> {
    // Only dispatchRouted passes ROUTE_TRUSTED; any other value is ignored.
    const work = this.#dispatch(request, options, routed === ROUTE_TRUSTED);
    // close() waits for answers, not only for provider calls.
    this.#dispatches.add(work);
    const forget = () => this.#dispatches.delete(work);
    work.then(forget, forget);
    return work;
  }

  async #dispatch(
    request: ToolEnvelope,
    options: DispatchOptions,
    routed: boolean,
  ): Promise<readonly ToolEnvelope[]> {
    if (!routed) this.validateRequestRoute(request);
    // The typed validation, once: an invoke request's checked fields then build its models.
    let invoke: InvokeRequestFields | undefined;
    try {
      if (request.messageType === "tool.invoke.request") {
        invoke = checkInvokeRequestEnvelope(request);
      } else validateMessageEnvelope(request);
    } catch (error) {
      if (error instanceof ToolProtocolError) return [protocolErrorResponse(error, request)];
      throw error;
    }
    const operation = this.#operations.get(request.operation!)!;
    if (invoke !== undefined) {
      const parts = invokeRequestFromFields(request, invoke);
      return operation.semantics === "query"
        ? [await this.#invokeQuery(request, operation, parts)]
        : await this.#lifecycle.start(request, operation, parts, options.eventSink, options.signal);
    }
    if (operation.semantics === "query") {
      throw new ToolProtocolError(
        ToolErrorCodes.UNSUPPORTED_OPERATION,
        "Query operations do not support status, result, or control requests",
        "operation",
      );
    }
    const key = new ToolExecutionKey({
      invocationId: request.invocationId!,
      attemptId: request.attemptId!,
    });
    try {
      switch (request.messageType) {
        case "tool.status.request":
          return [
            makeStatusResponseEnvelope(await this.#lifecycle.status(key, operation), request),
          ];
        case "tool.result.request":
          return [
            makeResultResponseEnvelope(await this.#lifecycle.result(key, operation), request),
          ];
        default:
          return [
            makeControlResponseEnvelope(
              await this.#lifecycle.control(request, key, operation),
              request,
            ),
          ];
      }
    } catch (error) {
      if (error instanceof ToolEndpointError) {
        return [makeErrorResponseEnvelope(error.error, request)];
      }
      const isProtocol = error instanceof ToolProtocolError;
      if (!isProtocol || PROVIDER_FAULTS.has(error.code)) {
        this.#log(
          "error",
          REQUEST_FAILED_EVENT[request.messageType],
          `answering ${request.messageType} failed through the provider: ${
            isProtocol ? "it is answered with a protocol error" : "it is not answered"
          }`,
          logIdsOf(request),
          error,
        );
      }
      if (isProtocol) return [protocolErrorResponse(error, request)];
      throw error;
    }
  }

  /** Handles a Query `tool.invoke.request` and returns its correlated response. */
  async handleInvoke(request: ToolEnvelope): Promise<ToolEnvelope> {
    this.validateInvokeRoute(request);
    if (this.#operations.get(request.operation!)!.semantics !== "query") {
      throw new TypeError(
        "handleInvoke is Query-only; Action or Session operations must use dispatch",
      );
    }
    return (await this.dispatch(request))[0];
  }

  /** Handles a `tool.status.request` and returns its correlated response. */
  async handleStatus(request: ToolEnvelope): Promise<ToolEnvelope> {
    return (await this.dispatch(request))[0];
  }

  /** Handles a `tool.result.request` and returns its correlated response. */
  async handleResult(request: ToolEnvelope): Promise<ToolEnvelope> {
    return (await this.dispatch(request))[0];
  }

  /** Handles a `tool.control.request` and returns its correlated response. */
  async handleControl(request: ToolEnvelope): Promise<ToolEnvelope> {
    return (await this.dispatch(request))[0];
  }

  /**
   * Stops admitting new executions (new invokes are rejected with
   * `FORGE_ENDPOINT_UNAVAILABLE`), aborts every provider signal, and waits up to `graceMs` until
   * in-flight provider calls settled and every admitted Action and Session execution ended its
   * event progression: it reached a terminal state and its terminal event was published through
   * its event sink (or its terminal state was established by a status or result read).
   *
   * When the grace runs out, nothing admitted ends silent: every accepted execution still running
   * converges to `unknown` (status and result `unknown` with `FORGE_ENDPOINT_OUTCOME_UNKNOWN`,
   * its permit released) and gets an `executor_failed` terminal event with data
   * `{"phase": "unknown", "result": ...}` through its event sink (the protocol has no `unknown`
   * event type; this one claims no outcome the provider did not report); a later emit from its
   * provider fails with `FORGE_ENDPOINT_EVENT_AFTER_TERMINAL`. Provider calls still pending are
   * abandoned: each request waiting on one is answered (an invoke with a `completed` `unknown`
   * result, status, result and control with `FORGE_ENDPOINT_UNAVAILABLE`). close() then waits up
   * to `graceMs` more for those events and answers to be published, so it ends within about
   * twice `graceMs`. Retained results stay readable afterwards. A `graceMs` that is not a
   * non-negative finite number rejects with a `RangeError` before anything changes.
   */
  async close(options: CloseOptions = {}): Promise<void> {
    const graceMs = graceOption(options?.graceMs);
    if (!this.#closed) {
      this.#closed = true;
      this.#lifetime.abort(new DOMException("the endpoint handler closed", "AbortError"));
      for (const record of this.#ledger.records()) this.#ledger.unlink(record);
    }
    const executions = this.#lifecycle.unfinishedExecutions();
    // Calls an earlier close() abandoned are not waited for again.
    const waiting = new Set<Promise<unknown>>(this.#abandon.signal.aborted ? [] : this.#inFlight);
    for (const record of executions) waiting.add(record.emitter!.finished);
    await settleWithin(waiting, graceMs);
    // The grace is over. Accepted executions still running end as `unknown`, with a terminal
    // event; pending provider calls are abandoned, so every request waiting on one is answered.
    const publications = new Set<Promise<unknown>>();
    for (const record of executions) {
      if (!record.emitter!.isFinished) publications.add(this.#lifecycle.shutDown(record));
    }
    if (this.#inFlight.size > 0) {
      const count = this.#inFlight.size;
      this.#log(
        "warn",
        "handler.calls_abandoned",
        `close() abandoned ${count} provider call${
          count === 1 ? "" : "s"
        } still pending after its grace`,
        { endpointId: this.#descriptor.endpointId },
      );
      this.#abandon.abort(ABANDONED);
    }
    for (const dispatch of this.#dispatches) publications.add(dispatch);
    // Then let the answers and the terminal events themselves be produced before close() returns.
    await settleWithin(publications, graceMs);
  }

  /**
   * Tells the handler that its answer to an Action or Session invoke could not be delivered:
   * the response could not be encoded within the message limit (the caller got a correlated
   * `tool.error` instead) or its publication failed. An execution the caller never learned was
   * accepted must not keep running unseen, so when `request` is the invoke that admitted an
   * execution (same key and `request_id`) whose acceptance is its outcome:
   *
   * - its provider's signal aborts (reason: an `AbortError` naming the undelivered response);
   * - unless a terminal result was already established (it is immutable and stays), its status
   *   and result converge to `unknown` with `FORGE_ENDPOINT_OUTCOME_UNKNOWN`, and its permit is
   *   released;
   * - its invoke outcome becomes that terminal result, so a duplicate invoke, a status or a result
   *   read answers it (a retry with the same key learns the outcome was lost);
   * - no event is published for it: buffered events are dropped and a later emit fails with
   *   `FORGE_ENDPOINT_EVENT_AFTER_TERMINAL`.
   *
   * Returns true when it ended such an execution; false (and changes nothing) for any other
   * request: a Query, an invoke answered with a terminal result or a rejection, an execution
   * already abandoned, an unknown key, or a duplicate invoke (another `request_id`: the
   * acceptance it replays reached the caller that started the execution). The failure itself
   * is the caller's to report.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import {
   *   ToolAccepted,
   *   ToolContext,
   *   ToolControlResponse,
   *   ToolEndpointDescriptor,
   *   ToolEndpointHandler,
   *   ToolExecutionKey,
   *   ToolExecutionStatus,
   *   ToolOperationDescriptor,
   *   ToolRequest,
   *   ToolResultResponse,
   * } from "@forge/tool";
   * import {
   *   makeInvokeRequestEnvelope,
   *   makeResultRequestEnvelope,
   *   resultResponseFromPayload,
   *   TOOL_ENDPOINT_PROTOCOL,
   * } from "@forge/tool/wire";
   * let aborted = false;
   * const logged: string[] = [];
   * const handler = new ToolEndpointHandler(
   *   new ToolEndpointDescriptor({
   *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
   *     endpointId: "arm",
   *     operations: [
   *       new ToolOperationDescriptor({ name: "move", semantics: "action", statusSupported: true }),
   *     ],
   *   }),
   *   {
   *     endpointInstanceId: "instance-1",
   *     logger: (record) => void logged.push(record.event),
   *     operations: {
   *       move: {
   *         start: (_request, _context, _events, { signal }) => {
   *           signal.addEventListener("abort", () => (aborted = true));
   *           return new ToolAccepted();
   *         },
   *         cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
   *         status: () => new ToolExecutionStatus({ phase: "running" }),
   *         result: () => new ToolResultResponse({ status: "pending" }),
   *       },
   *     },
   *   },
   * );
   * const context = new ToolContext({
   *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
   *   toolId: "forge.tool.move",
   *   implementationId: "arm",
   *   endpointId: "arm",
   *   operation: "move",
   * });
   * const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
   *   requestId: "request-1",
   *   endpointInstanceId: "instance-1",
   * });
   * await handler.dispatch(invoke, { eventSink: () => {} });
   * // ... publishing the acceptance failed:
   * assertEquals(handler.abandonInvoke(invoke), true);
   * assertEquals(aborted, true);
   * assertEquals(logged, ["execution.unknown"]);
   * const [answer] = await handler.dispatch(
   *   makeResultRequestEnvelope(context, { requestId: "request-2", endpointInstanceId: "instance-1" }),
   * );
   * assertEquals(resultResponseFromPayload(answer.payload).result?.status, "unknown");
   * assertEquals(handler.state.permitsInUse.move, 0);
   * ```
   */
  abandonInvoke(request: ToolEnvelope): boolean {
    if (!(request instanceof ToolEnvelope) || request.messageType !== "tool.invoke.request") {
      return false;
    }
    const operation = this.#operations.get(request.operation ?? "");
    if (
      operation === undefined || operation.semantics === "query" ||
      request.endpointId !== this.#descriptor.endpointId ||
      request.endpointInstanceId !== this.#endpointInstanceId ||
      request.invocationId === undefined || request.attemptId === undefined
    ) return false;
    const key = new ToolExecutionKey({
      invocationId: request.invocationId,
      attemptId: request.attemptId,
    });
    return this.#lifecycle.abandon(key, operation.name, request.requestId);
  }

  // -------------------------------------------------------------------------------------------
  // Query

  async #invokeQuery(
    request: ToolEnvelope,
    operation: ToolOperationDescriptor,
    { request: toolRequest, context }: InvokeRequestParts,
  ): Promise<ToolEnvelope> {
    const meter = this.#queryMeters.get(operation.name)!;
    const refusal = this.#admissionRefusal(context);
    if (refusal !== undefined) {
      meter.rejected++;
      return makeInvokeResponseEnvelope(refusal, request);
    }
    // Beyond the reference, which runs every Query at once: a Query holds one of the operation's
    // max_concurrency slots while its provider call is in progress.
    if (this.#activeQueries.get(operation.name)! >= operation.maxConcurrency) {
      meter.rejected++;
      return makeInvokeResponseEnvelope(atCapacity(operation.name), request);
    }
    meter.admitted++;
    const admittedAt = performance.now();
    const span = this.#tracer === undefined
      ? undefined
      : startInvocationSpan(this.#tracer, logIdsOf(request));
    const provider = this.#implementations.get(operation.name) as QueryToolEndpoint;
    const controller = new AbortController();
    const unlink = this.#linkSignals(controller, context);
    this.#activeQueries.set(operation.name, this.#activeQueries.get(operation.name)! + 1);
    const call = this.#call(() =>
      provider.query(toolRequest, context, { signal: controller.signal })
    );
    let result: unknown;
    try {
      result = await call;
    } catch (error) {
      if (error instanceof ToolEndpointError) {
        // A provider's rejection is an answer, not a failure: counted, not logged.
        meter.rejected++;
        endInvocationSpan(span, "rejected");
        return makeInvokeResponseEnvelope(error.error, request);
      }
      if (error === ABANDONED) {
        meter.finish("unknown", admittedAt);
        endInvocationSpan(span, "unknown");
        // The query may have had effects: its outcome is unknown, not a rejection.
        return makeInvokeResponseEnvelope(
          new ToolResult({
            status: "unknown",
            error: rejection(
              ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
              "the endpoint handler closed before the query finished",
              false,
            ),
          }),
          request,
        );
      }
      if (controller.signal.aborted && this.#deadlinePassed(context)) {
        meter.finish("failed", admittedAt);
        endInvocationSpan(span, "failed");
        return makeInvokeResponseEnvelope(
          new ToolResult({ status: "failed", error: QUERY_DEADLINE_ERROR }),
          request,
        );
      }
      meter.finish("failed", admittedAt);
      endInvocationSpan(span, "failed");
      this.#log(
        "error",
        "provider.query_failed",
        "query() failed; the request is not answered",
        logIdsOf(request),
        error,
      );
      throw error;
    } finally {
      unlink();
      this.#activeQueries.set(operation.name, this.#activeQueries.get(operation.name)! - 1);
    }
    if (!(result instanceof ToolResult)) {
      const error = new TypeError(
        `QueryToolEndpoint.query() must return a ToolResult: current value is ${showValue(result)}`,
      );
      meter.finish("failed", admittedAt);
      endInvocationSpan(span, "failed");
      this.#log(
        "error",
        "provider.query_failed",
        "query() returned no ToolResult; the request is not answered",
        logIdsOf(request),
        error,
      );
      throw error;
    }
    let answer: ToolResult = result;
    if (result.status === "succeeded" && this.#enforceDeadlines && this.#deadlinePassed(context)) {
      // As when it throws once its signal aborted at the deadline: an answer after the deadline
      // is no success, whether or not the provider looked at its signal.
      this.#log(
        "warn",
        "provider.deadline_exceeded",
        `query() answered succeeded after deadline_ms ${context.deadlineMs} passed: ` +
          "answered failed with FORGE_ENDPOINT_DEADLINE_EXCEEDED, its outputs kept",
        logIdsOf(request),
      );
      answer = new ToolResult({
        status: "failed",
        error: QUERY_DEADLINE_ERROR,
        outputs: result.outputs,
      });
    }
    meter.finish(answer.status, admittedAt);
    endInvocationSpan(span, answer.status);
    return makeInvokeResponseEnvelope(answer, request);
  }

  // -------------------------------------------------------------------------------------------
  // Action and Session start

  /** Why a new execution cannot be admitted now (closed, or deadline passed), if it cannot. */
  #admissionRefusal(context: ToolContext): ToolError | undefined {
    if (this.#closed) {
      return rejection(ToolErrorCodes.ENDPOINT_UNAVAILABLE, "endpoint handler is closed", true);
    }
    if (this.#enforceDeadlines && this.#deadlinePassed(context)) {
      return rejection(
        ToolErrorCodes.ENDPOINT_DEADLINE_EXCEEDED,
        "deadline_ms has already passed",
        false,
      );
    }
    return undefined;
  }

  #deadlinePassed(context: ToolContext): boolean {
    return context.deadlineMs !== undefined && this.#now() >= context.deadlineMs;
  }

  /**
   * Makes `controller` abort when the handler closes and, when deadlines are enforced, at the
   * context's deadline. Returns the function that undoes the link. O(1) however many executions
   * are linked: the handler's lifetime signal has one listener, fanning out.
   */
  #linkSignals(
    controller: AbortController,
    context: ToolContext,
    record?: ExecutionRecord,
  ): () => void {
    const unlinkLifetime = this.#onLifetimeEnd.subscribe((reason) => controller.abort(reason));
    let timer: DeadlineTimer | undefined;
    if (this.#enforceDeadlines && context.deadlineMs !== undefined) {
      const deadlineMs = context.deadlineMs;
      timer = atDeadline(deadlineMs, this.#now, () => {
        this.#log(
          "warn",
          "execution.deadline_exceeded",
          `deadline_ms ${deadlineMs} passed: the provider's signal aborted`,
          {
            ...contextIds(this.#descriptor.endpointId, context),
            requestId: record?.admittedBy,
          },
        );
        controller.abort(new DOMException("deadline_ms passed", "TimeoutError"));
      });
      if (record !== undefined) record.deadlineTimer = timer;
    }
    if (record !== undefined) record.unlinkLifetime = unlinkLifetime;
    return () => {
      unlinkLifetime();
      if (record === undefined) timer?.clear();
    };
  }

  /** The fan-out of a caller's abort signal (one listener on it however many calls wait). */
  #callerFanout(signal: AbortSignal): AbortFanout {
    let fanout = this.#callerSignals.get(signal);
    if (fanout === undefined) {
      fanout = new AbortFanout(signal);
      this.#callerSignals.set(signal, fanout);
    }
    return fanout;
  }

  /** Calls provider code (a synchronous throw becomes a rejection) and tracks it for close(). */
  #call<T>(fn: () => T | PromiseLike<T>): Promise<T> {
    let promise: Promise<T>;
    try {
      promise = Promise.resolve(fn());
    } catch (error) {
      promise = Promise.reject(error);
    }
    this.#inFlight.add(promise);
    const forget = () => this.#inFlight.delete(promise);
    promise.then(forget, forget);
    return raceAbort(promise, this.#onAbandon);
  }

  #callOptions(): ToolCallOptions {
    return { signal: this.#lifetime.signal };
  }
}

/** `dispatch` with its hidden third argument (see ROUTE_TRUSTED). */
type RoutedDispatch = (
  request: ToolEnvelope,
  options: DispatchOptions,
  routed: typeof ROUTE_TRUSTED,
) => Promise<readonly ToolEnvelope[]>;

/**
 * @internal {@linkcode ToolEndpointHandler.dispatch} of a request whose route the transport
 * already checked on its headers with {@linkcode ToolEndpointHandler.validateRequestRouteHeaders}
 * (the Dora binding, before it parsed the payload): the handler does not check it a second time.
 * Only for envelopes the transport decoded itself; never exported from the package's entry
 * points.
 */
export function dispatchRouted(
  handler: ToolEndpointHandler,
  request: ToolEnvelope,
  options: DispatchOptions = {},
): Promise<readonly ToolEnvelope[]> {
  return (handler.dispatch as RoutedDispatch).call(handler, request, options, ROUTE_TRUSTED);
}

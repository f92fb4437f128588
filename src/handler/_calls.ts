/**
 * The one object through which the Query path and the Action/Session lifecycle reach provider
 * code: provider lookup, call tracking for close(), the signals a call is linked to, admission
 * and the handler's logger.
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { type ToolContext, ToolError } from "../endpoint/models.ts";
import type { ToolCallOptions, ToolEndpointImplementation } from "../endpoint/spi.ts";
import { logSafely, type ToolLogger, type ToolLogIds, type ToolLogLevel } from "../endpoint/log.ts";
import type { ToolTracer } from "../endpoint/trace.ts";
import type { ExecutionRecord } from "./_ledger.ts";
import { AbortFanout, atDeadline, type DeadlineTimer, PendingSet } from "./_abort.ts";
import type { HandlerSettings } from "./_options.ts";
import { isThenable } from "../_internal/async.ts";

/** Why a provider call still pending when close()'s grace ran out ended. */
export const ABANDONED: ToolProtocolError = new ToolProtocolError(
  ToolErrorCodes.ENDPOINT_UNAVAILABLE,
  "the endpoint handler closed before the provider answered",
);

/** A handler's rejection of an invoke (not retained, not a provider answer). */
export function rejection(code: string, message: string, retryable: boolean): ToolError {
  return new ToolError({ code, message, retryable });
}

/** The identifier fields of records about the execution of `context`. */
function contextIds(endpointId: string, context: ToolContext): ToolLogIds {
  return {
    endpointId,
    operation: context.operation,
    invocationId: context.executionKey.invocationId,
    attemptId: context.executionKey.attemptId,
  };
}

/** Provider calls, signals, admission and logging of one handler. */
export class ProviderCalls {
  /** The logical endpoint, for log records. */
  readonly endpointId: string;
  /** The handler's provider instance. */
  readonly endpointInstanceId: string;
  /** Events an execution may emit before it is accepted. */
  readonly maxEarlyEvents: number;
  /** Events of one execution that may wait to be published at once. */
  readonly maxPendingEvents: number;
  /** Where the handler reports. */
  readonly logger: ToolLogger;
  /** The handler's tracer, if any. */
  readonly tracer: ToolTracer | undefined;
  /** Whether deadlines are enforced. */
  readonly enforceDeadlines: boolean;
  readonly #now: () => number;
  readonly #implementations: ReadonlyMap<string, ToolEndpointImplementation>;
  readonly #inFlight = new PendingSet();
  readonly #lifetime = new AbortController();
  readonly #abandon = new AbortController();
  // One listener per shared signal, fanning out: linking a call costs O(1) however many pend.
  readonly #onLifetimeEnd = new AbortFanout(this.#lifetime.signal);
  readonly #onAbandon = new AbortFanout(this.#abandon.signal);
  readonly #callerSignals = new WeakMap<AbortSignal, AbortFanout>();
  #closed = false;

  /** The calls of a handler created with `settings`. */
  constructor(settings: HandlerSettings) {
    this.endpointId = settings.descriptor.endpointId;
    this.endpointInstanceId = settings.endpointInstanceId;
    this.maxEarlyEvents = settings.maxEarlyEvents;
    this.maxPendingEvents = settings.maxPendingEvents;
    this.logger = settings.logger;
    this.tracer = settings.tracer;
    this.enforceDeadlines = settings.enforceDeadlines;
    this.#now = settings.now;
    this.#implementations = settings.implementations;
  }

  /** True once {@linkcode close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Provider calls in progress (each tracked until it settles). */
  get inFlight(): Iterable<Promise<unknown>> {
    return this.#inFlight;
  }

  /** True once {@linkcode abandonPending} abandoned the calls then pending. */
  get abandoned(): boolean {
    return this.#abandon.signal.aborted;
  }

  /** Stops admission and aborts every provider signal; false when already closed. */
  close(): boolean {
    if (this.#closed) return false;
    this.#closed = true;
    this.#lifetime.abort(new DOMException("the endpoint handler closed", "AbortError"));
    return true;
  }

  /** Ends every pending provider call with {@linkcode ABANDONED}, logging how many there were. */
  abandonPending(): void {
    if (this.#inFlight.size === 0) return;
    const count = this.#inFlight.size;
    this.log(
      "warn",
      "handler.calls_abandoned",
      `close() abandoned ${count} provider call${
        count === 1 ? "" : "s"
      } still pending after its grace`,
      { endpointId: this.endpointId },
    );
    this.#abandon.abort(ABANDONED);
  }

  /** The implementation of an operation. */
  provider(operation: string): ToolEndpointImplementation {
    return this.#implementations.get(operation)!;
  }

  /**
   * Reports one record to the handler's logger (a throwing logger cannot break the handler). A
   * provider call the handler abandoned at close() is the shutdown's doing: never an error.
   */
  log(level: ToolLogLevel, event: string, message: string, ids: ToolLogIds, error?: unknown): void {
    logSafely(
      this.logger,
      error === undefined ? { level, event, message, ...ids } : {
        level: error === ABANDONED && level === "error" ? "warn" : level,
        event,
        message,
        ...ids,
        error,
      },
    );
  }

  /** Why a new execution cannot be admitted now (closed, or deadline passed), if it cannot. */
  admissionRefusal(context: ToolContext): ToolError | undefined {
    if (this.#closed) {
      return rejection(ToolErrorCodes.ENDPOINT_UNAVAILABLE, "endpoint handler is closed", true);
    }
    if (this.enforceDeadlines && this.deadlinePassed(context)) {
      return rejection(
        ToolErrorCodes.ENDPOINT_DEADLINE_EXCEEDED,
        "deadline_ms has already passed",
        false,
      );
    }
    return undefined;
  }

  /** True when the context has a deadline and it passed. */
  deadlinePassed(context: ToolContext): boolean {
    return context.deadlineMs !== undefined && this.#now() >= context.deadlineMs;
  }

  /**
   * Makes `controller` abort when the handler closes and, when deadlines are enforced, at the
   * context's deadline. Returns the function that undoes the link. O(1) however many executions
   * are linked: the handler's lifetime signal has one listener, fanning out.
   */
  linkSignals(
    controller: AbortController,
    context: ToolContext,
    record?: ExecutionRecord,
  ): () => void {
    const unlinkLifetime = this.#onLifetimeEnd.subscribe((reason) => controller.abort(reason));
    let timer: DeadlineTimer | undefined;
    if (this.enforceDeadlines && context.deadlineMs !== undefined) {
      const deadlineMs = context.deadlineMs;
      timer = atDeadline(deadlineMs, this.#now, () => {
        this.log(
          "warn",
          "execution.deadline_exceeded",
          `deadline_ms ${deadlineMs} passed: the provider's signal aborted`,
          {
            ...contextIds(this.endpointId, context),
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
  callerFanout(signal: AbortSignal): AbortFanout {
    let fanout = this.#callerSignals.get(signal);
    if (fanout === undefined) {
      fanout = new AbortFanout(signal);
      this.#callerSignals.set(signal, fanout);
    }
    return fanout;
  }

  /** Calls provider code (a synchronous throw becomes a rejection) and tracks it for close(). */
  call<T>(fn: () => T | PromiseLike<T>): Promise<T> {
    const answer = this.callNow(fn);
    return answer instanceof Promise ? answer : Promise.resolve(answer);
  }

  /**
   * {@linkcode call}, except that an answer the provider returned synchronously (not a thenable)
   * is returned as it is, for a caller that goes on without a microtask turn (see `andThen`).
   */
  callNow<T>(fn: () => T | PromiseLike<T>): T | Promise<T> {
    let promise: Promise<T>;
    try {
      const answer = fn();
      if (!isThenable(answer)) {
        // Answered before returning (most status and result methods): nothing is left for
        // close() to wait for or abandon, so the call is not tracked, and its answer is already
        // settled: it reaches the caller one microtask turn before a promised answer would.
        if (this.#onAbandon.signal.aborted) return Promise.reject(this.#onAbandon.signal.reason);
        return answer;
      }
      promise = Promise.resolve(answer);
    } catch (error) {
      promise = Promise.reject(error);
    }
    // One pair of reactions on the provider's promise both forgets the call and settles the
    // race against close()'s abandonment (raceAbort's, inlined): the call is forgotten in the
    // same microtask as before, just before its caller resumes.
    const forget = this.#inFlight.add(promise);
    const abandon = this.#onAbandon;
    if (abandon.signal.aborted) {
      promise.then(forget, forget);
      return Promise.reject(abandon.signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      const unsubscribe = abandon.subscribe(reject);
      promise.then(
        (value) => {
          forget();
          unsubscribe();
          resolve(value);
        },
        (error) => {
          forget();
          unsubscribe();
          reject(error);
        },
      );
    });
  }

  /** The options of a status, result or control call. */
  callOptions(): ToolCallOptions {
    return { signal: this.#lifetime.signal };
  }
}

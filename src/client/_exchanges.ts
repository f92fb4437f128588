// Kept whole: the pending map, its one timer and the routing of answers and events share one state.
/**
 * The exchange table: every request waiting for its answer (keyed by request id), its attempts
 * and re-sends, the one long timer that times them out, and the routing of what the transport
 * delivers (answers to their exchange, events to their open invocation), with the counters
 * `stats` reports.
 *
 * @module
 */
import { isThenable, withResolvers } from "../_internal/async.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { pairKey } from "../_internal/text.ts";
import type { ToolEvent } from "../endpoint/models.ts";
import { validateResponseCorrelation } from "../wire/correlation.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import { eventFromPayload } from "../wire/execution_payloads.ts";
import {
  ToolClientError,
  ToolClientErrorCodes,
  type ToolClientExchange,
  type ToolClientOutcome,
} from "./errors.ts";
import type { PushOutcome } from "./_events.ts";
import type { ToolClientTransport } from "./transport.ts";
import type { Config } from "./_config.ts";
import type { ToolEndpointClientStats } from "./options.ts";
import { abortReason, sendFailure } from "./_failure.ts";
import { RequestTable } from "./_request_table.ts";

/** One request and how to wait for its answer. */
export interface ExchangeSpec<T> {
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

/**
 * A pending exchange. Once it settles, `#settle` drops what it holds of the call (the spec with
 * its request and parser, the resolvers that reach the caller's awaiting code): V8's Scavenger
 * keeps whatever a dead old-generation object points to, and a settled exchange can stay
 * reachable from one (a send promise of the transport), so it must not keep the call alive (see
 * `_request_table.ts` for the measurement).
 */
interface Exchange {
  readonly requestId: string;
  /** The table's hash of `requestId` (`RequestTable.hashOf`), computed once. */
  readonly hash: number;
  /** `undefined` once settled. */
  spec: ExchangeSpec<unknown> | undefined;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** When the current attempt times out, on the `performance.now()` clock. */
  deadline: number;
  /** When the call's `deadlineMs` passes, on the same clock (`Infinity` without one). */
  callDeadline: number;
  attempts: number;
  unlinkSignal: (() => void) | undefined;
}

/** What the table needs of an open invocation to route its events. */
export interface EventRoute {
  /** The invoke request (its endpoint and operation are what events must carry). */
  readonly request: ToolEnvelope;
  /** Whether an event of `endpointInstanceId` belongs to the execution. */
  fromInstance(endpointInstanceId: string | undefined): boolean;
  /** Hands over an event; says whether it was delivered, a duplicate or ignored. */
  pushEvent(sequence: number, event: ToolEvent): PushOutcome;
}

/** What a settled exchange's resolvers become. */
function released(): void {}

/** The answers a caller receives (besides `tool.event`); anything else is not for a client. */
const CALLER_BOUND: ReadonlySet<string> = new Set([
  "tool.invoke.response",
  "tool.status.response",
  "tool.result.response",
  "tool.control.response",
  "tool.error",
]);

/** The pending exchanges of one client, and the routing of what its transport delivers. */
export class ExchangeTable {
  readonly #transport: ToolClientTransport;
  readonly #config: Config;
  readonly #invocations: ReadonlyMap<string, EventRoute>;
  readonly #pending = new RequestTable<Exchange>();
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
  #timer: LongTimeout | undefined;
  #timerAt = 0;
  #closed = false;

  /** A table sending on `transport`, routing events to the open `invocations` (by key id). */
  constructor(
    transport: ToolClientTransport,
    config: Config,
    invocations: ReadonlyMap<string, EventRoute>,
  ) {
    this.#transport = transport;
    this.#config = config;
    this.#invocations = invocations;
  }

  /** The counters, a snapshot, with `openInvocations` (the facade's count). */
  stats(openInvocations: number): ToolEndpointClientStats {
    return Object.freeze({
      ...this.#counters,
      pendingExchanges: this.#pending.size,
      openInvocations,
    });
  }

  /** Sends `spec.request` and resolves to its parsed answer (or rejects: timeout, abort, close). */
  exchange<T>(spec: ExchangeSpec<T>): Promise<T> {
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
    const hash = RequestTable.hashOf(requestId);
    if (this.#pending.has(requestId, hash)) {
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
    // No deadline, no clock read (90-220 ns on these machines, a call's share of 2-4%).
    if (callDeadline !== Infinity && callDeadline <= performance.now()) {
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
      requestId,
      hash,
      spec: spec as ExchangeSpec<unknown>,
      resolve: resolve as (value: unknown) => void,
      reject,
      deadline: 0,
      callDeadline,
      attempts: 0,
      unlinkSignal: undefined,
    };
    this.#pending.set(requestId, exchange, hash);
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
    const spec = exchange.spec;
    if (spec === undefined) return;
    exchange.attempts++;
    if (exchange.attempts === 1) this.#counters.sent++;
    else this.#counters.resent++;
    exchange.deadline = Math.min(performance.now() + spec.timeoutMs, exchange.callDeadline);
    this.#armTimer(exchange.deadline);
    const attempt = exchange.attempts;
    // Reads the spec from the exchange (not this attempt's scope): a send promise that outlives the
    // answer must not keep the request alive.
    const sendFailed = (error: unknown) => {
      const spec = exchange.spec;
      if (spec === undefined || this.#pending.get(exchange.requestId, exchange.hash) !== exchange) {
        return;
      }
      if (exchange.attempts !== attempt) return;
      const context = {
        exchange: spec.name,
        invocationId: spec.request.invocationId,
        attemptId: spec.request.attemptId,
        attempts: attempt,
      };
      // Only an invoke's failure is about the execution's fate; a re-sent invoke may have been
      // delivered by an earlier attempt.
      this.#fail(
        exchange,
        sendFailure(spec.name, error, context, spec.timeoutOutcome !== undefined),
      );
    };
    try {
      const sent = this.#transport.send(spec.request);
      if (isThenable(sent)) {
        sent.then(undefined, sendFailed);
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
    for (const exchange of this.#pending.values()) {
      if (exchange.deadline <= now) this.#timedOut(exchange);
      // A re-sent exchange has a new deadline; a failed one left the map.
      if (this.#pending.get(exchange.requestId, exchange.hash) === exchange) {
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
    const spec = exchange.spec;
    if (spec === undefined || this.#pending.get(exchange.requestId, exchange.hash) !== exchange) {
      return;
    }
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
    const reject = exchange.reject;
    if (this.#settle(exchange)) reject(error);
  }

  /**
   * Removes a pending exchange and releases what it held of the call (see `Exchange`); false
   * when it was no longer pending. The caller keeps the resolver it needs before settling.
   */
  #settle(exchange: Exchange): boolean {
    const { requestId, hash } = exchange;
    if (this.#pending.get(requestId, hash) !== exchange) return false;
    this.#pending.delete(requestId, hash);
    exchange.unlinkSignal?.();
    exchange.unlinkSignal = undefined;
    exchange.spec = undefined;
    exchange.resolve = released;
    exchange.reject = released;
    return true;
  }

  /**
   * Refuses new exchanges, rejects the pending ones with `FORGE_CLIENT_CLOSED` and stops the
   * timer.
   */
  close(): void {
    this.#closed = true;
    for (const exchange of this.#pending.values()) {
      const spec = exchange.spec;
      if (spec === undefined) continue;
      const request = spec.request;
      this.#fail(
        exchange,
        new ToolClientError("the client was closed", {
          code: ToolClientErrorCodes.CLOSED,
          exchange: spec.name,
          invocationId: request.invocationId,
          attemptId: request.attemptId,
          attempts: exchange.attempts,
        }),
      );
    }
    this.#stopTimer();
  }

  /** Every message the transport delivers; never throws. */
  receive(message: ToolEnvelope): void {
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
      const spec = exchange?.spec;
      if (exchange === undefined || spec === undefined) {
        this.#counters.uncorrelated++;
        return;
      }
      try {
        validateResponseCorrelation(spec.request, message);
      } catch {
        this.#counters.mismatched++;
        return;
      }
      let value: unknown;
      try {
        value = spec.parse(message);
      } catch {
        this.#counters.invalid++;
        return;
      }
      this.#counters.responses++;
      const resolve = exchange.resolve;
      if (this.#settle(exchange)) resolve(value);
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
    const invocation = this.#invocations.get(pairKey(invocationId, attemptId));
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

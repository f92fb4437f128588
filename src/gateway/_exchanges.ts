/**
 * Caller -> endpoint forwarding: the choice of the instance, the pending exchanges (their bounds
 * and timeouts), the ownership of invocations and the execution store with its bound, and the
 * routing of the providers' answers and events back to the caller that asked.
 *
 * Stays whole (over 400 lines): forwarding and answer routing share the pending-exchange and
 * execution tables and their bounds; split, each half would reach into the other's maps.
 *
 * @module
 */
import { ToolProtocolError } from "../endpoint/errors.ts";
import { ToolError } from "../endpoint/models.ts";
import type { NodeClock } from "../node/clock.ts";
import type { EndpointRegistry } from "../node/registry.ts";
import type { EndpointRegistryChange } from "../node/registry_records.ts";
import { validateResponseCorrelation } from "../wire/correlation.ts";
import { isFactoryTyped, ToolEnvelope } from "../wire/envelope.ts";
import { makeErrorResponseEnvelope } from "../wire/factories.ts";
import { type GatewayAnswers, replacedError, unavailableError } from "./_answers.ts";
import { ExchangeTimeouts } from "./_exchange_timeouts.ts";
import { OrderedMap } from "../_internal/ordered_map.ts";
import {
  answerEndsExecution,
  type Caller,
  describe,
  EXECUTION_REQUESTS,
  executionKey,
  type ExecutionRecord,
  type GatewayCounters,
  newCaller,
  type PendingExchange,
  type RouteLink,
  TERMINAL_EVENT_TYPES,
  withExchange,
} from "./_records.ts";

/** What {@linkcode ExchangeRouter} shares with the rest of the gateway. */
export interface ExchangeRouterParts {
  readonly registry: EndpointRegistry;
  /** endpoint id -> route id. */
  readonly routeOf: ReadonlyMap<string, string>;
  /** route id -> endpoint id. */
  readonly endpointOf: ReadonlyMap<string, string>;
  readonly links: ReadonlyMap<string, RouteLink>;
  readonly answers: GatewayAnswers;
  readonly stats: GatewayCounters;
  readonly clock: NodeClock;
  readonly exchangeTimeoutMs: number;
  readonly maxPending: number;
  readonly maxPendingPerEndpoint: number;
  readonly maxExecutions: number;
}

/** Forwards callers' requests to the current instance and routes the answers back. */
export class ExchangeRouter {
  readonly #parts: ExchangeRouterParts;
  readonly #answers: GatewayAnswers;
  readonly #stats: GatewayCounters;
  readonly #pending = new Map<string, PendingExchange>();
  /** route id -> how many of `#pending` wait on it. */
  readonly #pendingOnRoute = new Map<string, number>();
  /** In the order they were last remembered, so the oldest that may go is found at once. */
  readonly #executions = new OrderedMap<string, ExecutionRecord>();
  readonly #callers = new Set<Caller>();
  readonly #timeouts: ExchangeTimeouts;
  /** Told the request type and latency (ms) of every answered exchange. */
  readonly latency = new Set<(messageType: string, ms: number) => void>();
  #exchangeNumber = 0;
  #closed = false;

  constructor(parts: ExchangeRouterParts) {
    this.#parts = parts;
    this.#answers = parts.answers;
    this.#stats = parts.stats;
    this.#timeouts = new ExchangeTimeouts(parts, this.#pending, (id) => this.#timedOut(id));
  }

  /** An exchange whose time ran out: forgotten, its invoke's execution given up, logged. */
  #timedOut(exchangeId: string): void {
    const exchange = this.#pending.get(exchangeId)!;
    this.#forget(exchangeId, exchange);
    this.#invokeUnanswered(exchange);
    this.#answers.noAnswer(exchange, this.#parts.exchangeTimeoutMs);
  }

  /** Forwarded requests still waiting for their provider's answer. */
  get pendingExchanges(): number {
    return this.#pending.size;
  }

  /** Remembered executions not known to be over. */
  get openExecutions(): number {
    let open = 0;
    for (const record of this.#executions.values()) {
      if (!record.finished && record.unknown === undefined) open += 1;
    }
    return open;
  }

  /** A new caller (see `ToolGateway.connect`). */
  addCaller(callerId: string | undefined): Caller {
    const caller = newCaller(callerId);
    this.#callers.add(caller);
    return caller;
  }

  // -------------------------------------------------------------------------------------------
  // Callers -> providers

  /**
   * Forwards `request`; `validated` when the edge that received it ran its typed validation (a
   * request a factory built is known validated either way).
   */
  async send(caller: Caller, request: ToolEnvelope, validated = false): Promise<void> {
    if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
    if (!EXECUTION_REQUESTS.has(request.messageType)) {
      throw new RangeError(`a caller sends execution requests, not ${request.messageType}`);
    }
    if (this.#closed || caller.closed) throw new Error("the gateway caller is closed");
    const { registry, clock, maxPending, maxPendingPerEndpoint } = this.#parts;
    const endpointId = request.endpointId;
    const routeId = this.#parts.routeOf.get(endpointId);
    if (routeId === undefined) {
      this.#answers.unavailable(
        caller,
        request,
        `endpoint '${endpointId}' is not configured on this gateway`,
        false,
      );
      return;
    }
    const key = executionKey(endpointId, request.invocationId, request.attemptId);
    const record = this.#executions.get(key);
    const invoke = request.messageType === "tool.invoke.request";
    // Ownership first: a stranger learns nothing, not even that the key exists or was replaced.
    if (record !== undefined && record.owner !== caller.identity) {
      if (invoke) this.#answers.owned(caller, request);
      else this.#answers.notFound(caller, request);
      return;
    }
    if (record === undefined && !invoke) {
      // Not invoked through this gateway, or forgotten (maxExecutions): nobody's to read.
      this.#answers.notFound(caller, request);
      return;
    }
    if (record?.unknown !== undefined) {
      this.#answers.unknown(caller, request, record.unknown);
      return;
    }
    const current = registry.lookup(endpointId);
    const target = (invoke ? undefined : record?.instanceId) ?? request.endpointInstanceId ??
      current?.endpointInstanceId;
    if (target === undefined) {
      this.#answers.unavailable(
        caller,
        request,
        `endpoint '${endpointId}' has no current instance`,
      );
      return;
    }
    if (current === undefined) {
      this.#answers.unavailable(
        caller,
        request,
        `endpoint instance '${target}' of '${endpointId}' is not registered`,
      );
      return;
    }
    if (current.endpointInstanceId !== target) {
      if (invoke) {
        // Nothing ran: the caller may address the current instance.
        this.#answers.unavailable(
          caller,
          request,
          `endpoint instance '${target}' of '${endpointId}' is no longer current`,
        );
      } else {
        const error = replacedError(target, current);
        this.#remember(key, {
          routeId,
          instanceId: target,
          owner: caller.identity,
          caller: record?.caller,
          unknown: error,
          finished: true,
        });
        this.#answers.unknown(caller, request, error);
      }
      return;
    }
    const link = this.#parts.links.get(routeId);
    if (link === undefined) {
      this.#answers.unavailable(
        caller,
        request,
        `route '${routeId}' of endpoint '${endpointId}' is not connected`,
      );
      return;
    }
    if (this.#pending.size >= maxPending) {
      this.#answers.capacity(
        caller,
        request,
        `the gateway already waits for ${maxPending} answers`,
        { max_pending_exchanges: maxPending },
      );
      return;
    }
    const pendingOnRoute = this.#pendingOnRoute.get(routeId) ?? 0;
    if (pendingOnRoute >= maxPendingPerEndpoint) {
      this.#answers.capacity(
        caller,
        request,
        `the gateway already waits for ${pendingOnRoute} answers of endpoint '${endpointId}'`,
        {
          endpoint_id: endpointId,
          max_pending_exchanges_per_endpoint: maxPendingPerEndpoint,
        },
      );
      return;
    }
    if (invoke && !this.#executions.has(key) && !this.#makeRoomForExecution()) {
      this.#answers.capacity(
        caller,
        request,
        `the gateway already routes ${this.#executions.size} running executions`,
        { max_executions: this.#parts.maxExecutions },
      );
      return;
    }
    const exchangeId = `${request.requestId}@gateway-${++this.#exchangeNumber}`;
    const forwarded = withExchange(
      request,
      exchangeId,
      target,
      validated || isFactoryTyped(request),
    );
    let frame: unknown;
    try {
      // The route's framing, once (the Dora edge encodes IPC here; it may find it too large).
      frame = link.frame(forwarded);
    } catch (error) {
      if (!(error instanceof ToolProtocolError)) throw error;
      this.#answers.deliver(
        caller,
        makeErrorResponseEnvelope(
          new ToolError({ code: error.code, message: error.message, retryable: false }),
          request,
        ),
      );
      return;
    }
    const startedAtMs = clock.now();
    this.#pending.set(exchangeId, {
      caller,
      request,
      forwarded,
      routeId,
      instanceId: target,
      key,
      startedAtMs,
    });
    this.#timeouts.add(exchangeId, startedAtMs, this.#pending.size);
    this.#pendingOnRoute.set(routeId, pendingOnRoute + 1);
    if (invoke) {
      this.#remember(key, {
        routeId,
        instanceId: target,
        owner: caller.identity,
        caller,
        unknown: undefined,
        finished: false,
      });
    }
    this.#stats.forwarded += 1;
    try {
      await link.send(frame as never);
    } catch (error) {
      const exchange = this.#pending.get(exchangeId);
      this.#answers.log(
        "error",
        "gateway.send_failed",
        `sending ${describe(forwarded)} on route '${routeId}' failed: ${error}`,
        error,
      );
      if (exchange !== undefined) {
        this.#settle(exchangeId, exchange);
        this.#invokeUnanswered(exchange);
        this.#answers.unavailable(
          caller,
          request,
          `sending on route '${routeId}' of endpoint '${endpointId}' failed`,
        );
      }
    }
  }

  /**
   * Records `key`'s execution (the latest record last). A new key needs room: without any (every
   * remembered execution still running) a record that only holds an `unknown` outcome is not
   * kept; an invoke never gets here without room (see #makeRoomForExecution).
   */
  #remember(key: string, record: ExecutionRecord): void {
    if (!this.#executions.delete(key) && !this.#makeRoomForExecution()) return;
    this.#executions.set(key, record);
  }

  /**
   * True when the execution table can take one more record, after forgetting the oldest
   * finished one when it is full; false when every remembered execution is still running.
   */
  #makeRoomForExecution(): boolean {
    if (this.#executions.size < this.#parts.maxExecutions) return true;
    const { registry, endpointOf } = this.#parts;
    const oldest = this.#executions.oldestWhere((record) =>
      record.finished || record.unknown !== undefined ||
      registry.lookup(endpointOf.get(record.routeId)!)?.endpointInstanceId !== record.instanceId
    );
    if (oldest === undefined) return false;
    this.#executions.delete(oldest);
    return true;
  }

  /** Marks the execution of an invoke exchange finished when it ended without an answer. */
  #invokeUnanswered(exchange: PendingExchange): void {
    if (exchange.request.messageType !== "tool.invoke.request") return;
    const record = this.#executions.get(exchange.key);
    if (record !== undefined && record.instanceId === exchange.instanceId) record.finished = true;
  }

  closeCaller(caller: Caller): void {
    caller.closed = true;
    this.#callers.delete(caller);
    for (const [id, exchange] of [...this.#pending]) {
      if (exchange.caller !== caller) continue;
      this.#settle(id, exchange);
      this.#invokeUnanswered(exchange);
    }
    for (const record of this.#executions.values()) {
      if (record.caller === caller) record.caller = undefined;
    }
  }

  // -------------------------------------------------------------------------------------------
  // Providers -> callers

  event(routeId: string, event: ToolEnvelope): void {
    const record = this.#executions.get(
      executionKey(event.endpointId, event.invocationId, event.attemptId),
    );
    if (
      record === undefined || record.routeId !== routeId ||
      record.instanceId !== event.endpointInstanceId || record.unknown !== undefined
    ) {
      this.#answers.drop(`${describe(event)} is not of an execution route '${routeId}' runs`);
      return;
    }
    if (TERMINAL_EVENT_TYPES.has(event.payload.type)) record.finished = true;
    if (record.caller === undefined || record.caller.closed) {
      this.#answers.log(
        "debug",
        "gateway.caller_gone",
        `${describe(event)} dropped: its caller closed`,
      );
      return;
    }
    this.#stats.events += 1;
    this.#answers.deliver(record.caller, event);
  }

  answer(routeId: string, response: ToolEnvelope): void {
    const exchange = response.requestId === undefined
      ? undefined
      : this.#pending.get(response.requestId);
    if (exchange === undefined || exchange.routeId !== routeId) {
      this.#answers.drop(
        `${describe(response)} answers no request forwarded on route '${routeId}'`,
      );
      return;
    }
    try {
      validateResponseCorrelation(exchange.forwarded, response);
    } catch (error) {
      this.#answers.drop(
        `${describe(response)} on route '${routeId}' does not correlate: ${error}`,
      );
      return;
    }
    this.#settle(response.requestId!, exchange);
    if (this.latency.size > 0) {
      // The clock is read only for someone to tell (a read costs about 85 ns in Deno 2.9).
      const ms = this.#parts.clock.now() - exchange.startedAtMs;
      for (const listener of this.latency) listener(exchange.request.messageType, ms);
    }
    if (answerEndsExecution(response)) {
      const record = this.#executions.get(exchange.key);
      if (record !== undefined && record.instanceId === exchange.instanceId) {
        record.finished = true;
      }
    }
    this.#stats.answered += 1;
    this.#answers.deliver(
      exchange.caller,
      // Every answer reaching the router was validated on receipt (see ToolGateway.receive).
      withExchange(
        response,
        exchange.request.requestId,
        exchange.request.endpointInstanceId,
        true,
      ),
    );
  }

  // -------------------------------------------------------------------------------------------
  // An instance left the Registry; the gateway closes

  /**
   * The executions and waiting exchanges of the instance a Registry change removed: replaced,
   * they become `unknown`; expired or unregistered, the waits end with a retryable
   * `FORGE_ENDPOINT_UNAVAILABLE`.
   */
  instanceGone(change: EndpointRegistryChange): void {
    if (change.kind === "registered") return;
    const gone = change.kind === "replaced" ? change.previous : change.record;
    const replaced = change.kind === "replaced"
      ? replacedError(gone.endpointInstanceId, change.record)
      : undefined;
    if (replaced !== undefined) {
      for (const record of this.#executions.values()) {
        if (record.routeId === gone.routeId && record.instanceId === gone.endpointInstanceId) {
          record.unknown ??= replaced;
        }
      }
    }
    for (const [id, exchange] of [...this.#pending]) {
      if (exchange.routeId !== gone.routeId || exchange.instanceId !== gone.endpointInstanceId) {
        continue;
      }
      this.#settle(id, exchange);
      this.#invokeUnanswered(exchange);
      if (replaced !== undefined) {
        this.#answers.unknown(exchange.caller, exchange.request, replaced);
      } else {
        this.#answers.unavailable(
          exchange.caller,
          exchange.request,
          change.kind === "expired"
            ? `the lease of endpoint instance '${gone.endpointInstanceId}' of '${gone.endpointId}' expired`
            : `endpoint instance '${gone.endpointInstanceId}' of '${gone.endpointId}' unregistered`,
        );
      }
    }
  }

  /**
   * Answers every waiting exchange with a retryable `FORGE_ENDPOINT_UNAVAILABLE` error, releases
   * the callers and forgets the executions; later requests are refused.
   */
  close(): void {
    this.#closed = true;
    for (const [id, exchange] of [...this.#pending]) {
      this.#settle(id, exchange);
      this.#stats.unavailable += 1;
      this.#answers.deliver(
        exchange.caller,
        makeErrorResponseEnvelope(
          unavailableError(exchange.request.endpointId, "the gateway closed"),
          exchange.request,
        ),
      );
    }
    this.#timeouts.close();
    for (const caller of this.#callers) caller.closed = true;
    this.#callers.clear();
    this.#executions.clear();
  }

  #settle(id: string, exchange: PendingExchange): void {
    this.#forget(id, exchange);
    this.#timeouts.settled();
  }

  /** Removes a waiting exchange (its timer fired or is being cleared). */
  #forget(id: string, exchange: PendingExchange): void {
    if (!this.#pending.delete(id)) return;
    const left = (this.#pendingOnRoute.get(exchange.routeId) ?? 1) - 1;
    if (left === 0) this.#pendingOnRoute.delete(exchange.routeId);
    else this.#pendingOnRoute.set(exchange.routeId, left);
  }
}

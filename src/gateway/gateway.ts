/**
 * The Gateway side of the ToolEndpoint Wire, on envelopes: {@linkcode ToolGateway} hosts the
 * {@linkcode EndpointRegistry} and routes execution requests by endpoint id. Providers register on
 * their trusted management routes; a caller names an `endpoint_id`, never an instance; the gateway
 * fills `endpoint_instance_id` from the current registration, forwards the request on that
 * endpoint's route, and hands each answer back to the caller that asked.
 *
 * The router is transport-independent: a route carries {@linkcode ToolEnvelope} values. Framing
 * belongs to the edge that attaches the route (the Dora gateway node encodes and decodes Arrow IPC
 * once per message, through {@linkcode attachFramedRoute} and {@linkcode receiveFramed}).
 *
 * Over 400 lines because the class doc example and the option checks are long; the routing
 * itself is in `_exchanges.ts`, `_registry_host.ts` and `_answers.ts`.
 *
 * @module
 */
import type { EndpointStatus } from "../endpoint/models.ts";
import { consoleLogger, type ToolLogger, warningsAndErrors } from "../endpoint/log.ts";
import type { NodeClock } from "../node/clock.ts";
import type { EndpointRegistry } from "../node/registry.ts";
import { optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { checkTypedEnvelope } from "../wire/validate.ts";
import type { ToolClientTransport } from "../client/transport.ts";
import { ToolCallError } from "../client/errors.ts";
import { GatewayAnswers, unavailableError } from "./_answers.ts";
import { ExchangeRouter } from "./_exchanges.ts";
import { describe, type GatewayCounters, type RouteLink } from "./_records.ts";
import { RegistryHost } from "./_registry_host.ts";
import { FramedMessage, RouteFraming } from "./_framing.ts";
import type { EndpointRegistryRecord } from "../node/registry.ts";
import { type ToolGatewayWaitOptions, waitForEndpoint } from "./_discovery.ts";
import {
  type GatewayRegistryEvent,
  type GatewayRegistryEventsOptions,
  RegistryEventStream,
} from "./_registry_events.ts";
import { isBlank } from "../_internal/text.ts";
import {
  checkGatewayOptions,
  type ToolGatewayConnectOptions,
  type ToolGatewayOptions,
  type ToolGatewayRouteSender,
  type ToolGatewayStats,
} from "./options.ts";

export type {
  ToolGatewayConnectOptions,
  ToolGatewayOptions,
  ToolGatewayRouteSender,
  ToolGatewayStats,
} from "./options.ts";
export { describe as describeEnvelope } from "./_records.ts";
export { attachFramedRoute, receiveFramed } from "./_framing.ts";
export type { ToolGatewayWaitOptions } from "./_discovery.ts";
export type { GatewayRegistryEvent, GatewayRegistryEventsOptions } from "./_registry_events.ts";

const REGISTRY_EVENTS = "iterate the Registry events";

const DEFAULT_LOGGER: ToolLogger = warningsAndErrors(consoleLogger);

const unframed = (envelope: ToolEnvelope): ToolEnvelope => envelope;

/**
 * A Gateway router: the {@linkcode EndpointRegistry} of its provider routes, and the routing of
 * callers' execution requests to the current instance of the endpoint they name.
 *
 * - **Management.** `endpoint.register` / `endpoint.unregister` arriving on a provider route are
 *   decided by the Registry (the route authorizes its one endpoint) and answered on that route;
 *   `endpoint.status` snapshots of the current instance are kept ({@linkcode
 *   ToolGateway.endpointStatus}). Leases expire on the clock without traffic.
 * - **Routing.** A caller ({@linkcode ToolGateway.connect}) sends a request naming an endpoint. The
 *   gateway addresses the instance that runs the execution (the one its invoke went to), or the
 *   instance the caller pinned, or else the current one; forwards a copy with a request id of its
 *   own; and returns the provider's answer with the caller's headers restored. Events go to the
 *   caller that invoked the execution.
 * - **Ownership:** an execution belongs to the caller that invoked it (see
 *   {@linkcode ToolGateway.connect}); a stranger's status, result, cancel or stop is answered as
 *   for a key nobody knows, and its invoke with that key is refused, never forwarded.
 * - **No current instance:** a correlated `tool.error` `FORGE_ENDPOINT_UNAVAILABLE`, retryable.
 * - **Instance replaced** (another process start registered on the route): every exchange waiting
 *   on the old instance, and every later request for an execution it ran, is answered with the
 *   outcome `unknown` (`FORGE_ENDPOINT_OUTCOME_UNKNOWN`): the new instance cannot know it.
 * - **Lease expired or unregistered:** waiting exchanges end with a retryable
 *   `FORGE_ENDPOINT_UNAVAILABLE` error; when the same instance registers again, status and result
 *   are forwarded to it again.
 * - **Forged answers** — an answer for a request not forwarded on that route, not correlating
 *   with it, or an event for an execution that route's instance does not run — are dropped and
 *   logged with their execution key.
 *
 * Routes carry envelopes ({@linkcode ToolGateway.attachRoute}, {@linkcode ToolGateway.receive});
 * running the gateway as a Dora node is `runToolGatewayNode` in `@forge/tool/dora`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolContext, ToolExecutionKey, ToolRequest } from "@forge/tool";
 * import { makeInvokeRequestEnvelope, type ToolEnvelope } from "@forge/tool/wire";
 * import { ToolGateway } from "@forge/tool/gateway";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const caller = gateway.connect();
 * const answers: ToolEnvelope[] = [];
 * caller.connect((message) => answers.push(message));
 * const context = new ToolContext({
 *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
 *   toolId: "forge.tool.detect",
 *   implementationId: "yolo",
 *   endpointId: "vision.yolo",
 *   operation: "detect",
 * });
 * // Nothing registered on the route yet: a retryable FORGE_ENDPOINT_UNAVAILABLE answer.
 * await caller.send(
 *   makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
 *     requestId: "invoke-1",
 *     endpointInstanceId: undefined,
 *   }),
 * );
 * assertEquals(answers[0].messageType, "tool.error");
 * assertEquals(answers[0].payload.error, {
 *   code: "FORGE_ENDPOINT_UNAVAILABLE",
 *   message: "endpoint 'vision.yolo' has no current instance",
 *   retryable: true,
 *   details: { endpoint_id: "vision.yolo" },
 * });
 * await gateway.close();
 * ```
 */
export class ToolGateway {
  /** route id -> endpoint id. */
  readonly #endpointOf: ReadonlyMap<string, string>;
  readonly #links = new Map<string, RouteLink>();
  readonly #host: RegistryHost;
  readonly #exchanges: ExchangeRouter;
  readonly #answers: GatewayAnswers;
  readonly #maxMessageBytes: number | undefined;
  readonly #clock: NodeClock;
  readonly #stats: GatewayCounters = {
    forwarded: 0,
    answered: 0,
    events: 0,
    unavailable: 0,
    unknown: 0,
    management: 0,
    dropped: 0,
    refused: 0,
  };
  #closed = false;

  /**
   * Checks the options (route table, lease, limits) and starts with an empty Registry at
   * revision 0. Nothing is sent until a route is attached and a provider registers.
   */
  constructor(options: ToolGatewayOptions) {
    const { clock, exchangeTimeoutMs, maxPending, maxPendingPerEndpoint, maxExecutions } =
      checkGatewayOptions(options);
    this.#maxMessageBytes = options.maxMessageBytes;
    this.#clock = clock;
    const logger = options.logger ?? DEFAULT_LOGGER;
    const answers = new GatewayAnswers(logger, this.#stats);
    this.#answers = answers;
    this.#host = new RegistryHost({
      routes: options.routes,
      leaseTtlMs: options.leaseTtlMs,
      clock,
      logger,
      links: this.#links,
      answers,
      stats: this.#stats,
      onChange: (change) => this.#exchanges.instanceGone(change),
    });
    this.#endpointOf = this.#host.registry.routes;
    const routeOf = new Map<string, string>();
    for (const [routeId, endpointId] of this.#endpointOf) routeOf.set(endpointId, routeId);
    this.#exchanges = new ExchangeRouter({
      registry: this.#host.registry,
      routeOf,
      endpointOf: this.#endpointOf,
      links: this.#links,
      answers,
      stats: this.#stats,
      clock,
      exchangeTimeoutMs,
      maxPending,
      maxPendingPerEndpoint,
      maxExecutions,
    });
  }

  /** The Registry the gateway hosts (read its records and revision; it decides on its own). */
  get registry(): EndpointRegistry {
    return this.#host.registry;
  }

  /** A snapshot of the counters. */
  get stats(): ToolGatewayStats {
    return { ...this.#stats };
  }

  /** Forwarded requests still waiting for their provider's answer. */
  get pendingExchanges(): number {
    return this.#exchanges.pendingExchanges;
  }

  /** Routed executions the gateway remembers that are not known to be over. */
  get openExecutions(): number {
    return this.#exchanges.openExecutions;
  }

  /** How many answers the gateway made itself (no provider asked), by error code. */
  get rejections(): Readonly<Record<string, number>> {
    return Object.freeze(Object.fromEntries(this.#answers.rejections));
  }

  /** The last `endpoint.status` the current instance of `endpointId` reported, if any. */
  endpointStatus(endpointId: string): EndpointStatus | undefined {
    return this.#host.endpointStatus(endpointId);
  }

  /**
   * The current instance of `endpointId`; throws a {@linkcode ToolCallError} (a
   * `ToolEndpointError`) `FORGE_ENDPOINT_UNAVAILABLE`, retryable, of kind `"error"`
   * when it has none: the error the gateway answers a request for that endpoint with.
   */
  resolveInstance(endpointId: string): string {
    const record = this.#host.registry.lookup(endpointId);
    if (record !== undefined) return record.endpointInstanceId;
    throw new ToolCallError(unavailableError(endpointId), "error");
  }

  /**
   * Resolves with the Registry record of `endpointId` once it has a current registration (at
   * once when it has one). Rejects with a retryable `FORGE_ENDPOINT_UNAVAILABLE`
   * {@linkcode ToolCallError} when `timeoutMs` passes first (its message names the endpoint and
   * the timeout) or the gateway closes, and with the signal's reason when `signal` aborts. Leaves
   * no timer or watcher behind ({@linkcode ToolGateway.registryWatchers}).
   *
   * @example
   * ```ts
   * import { assertEquals, assertRejects } from "@std/assert";
   * import { ToolCallError } from "@forge/tool";
   * import { ToolGateway } from "@forge/tool/gateway";
   *
   * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
   * const error = await assertRejects(
   *   () => gateway.waitFor("vision.yolo", { timeoutMs: 1 }),
   *   ToolCallError,
   * );
   * assertEquals(error.error.code, "FORGE_ENDPOINT_UNAVAILABLE");
   * assertEquals(error.retryable, true);
   * assertEquals(gateway.registryWatchers, 0);
   * await gateway.close();
   * ```
   */
  waitFor(endpointId: string, options?: ToolGatewayWaitOptions): Promise<EndpointRegistryRecord> {
    return waitForEndpoint(
      {
        registry: this.#host.registry,
        clock: this.#clock,
        watch: (watcher) => this.#host.watch(watcher),
        closed: () => this.#closed,
      },
      endpointId,
      options,
    );
  }

  /**
   * Calls `listener` with every later Registry change (see {@linkcode GatewayRegistryEvent}:
   * registered, replaced, unregistered, expired, and state changes the current instance
   * reports), synchronously, in order. A throwing listener is logged (`gateway.watcher_failed`)
   * and stays subscribed. Returns the function that unsubscribes it.
   */
  watchRegistry(listener: (event: GatewayRegistryEvent) => void): () => void {
    if (typeof listener !== "function") {
      throw new TypeError(optionMessage("watch the Registry", "listener", "a function", listener));
    }
    return this.#host.watch({ event: listener, close: () => {} });
  }

  /**
   * The later Registry changes as an async iterator, bounded: when the consumer falls
   * `maxBuffered` records behind, the oldest are dropped and the next record it reads is one
   * `{ kind: "gap", dropped }`. It ends when `signal` aborts, the consumer breaks out
   * (`return()`), or the gateway closes; each releases its watcher.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { ToolGateway } from "@forge/tool/gateway";
   *
   * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
   * const events = gateway.registryEvents();
   * assertEquals(gateway.registryWatchers, 1);
   * await gateway.close();
   * assertEquals(await events.next(), { value: undefined, done: true });
   * assertEquals(gateway.registryWatchers, 0);
   * ```
   */
  registryEvents(
    options: GatewayRegistryEventsOptions = {},
  ): AsyncIterableIterator<GatewayRegistryEvent> {
    if (options === null || typeof options !== "object") {
      throw new TypeError(optionMessage(REGISTRY_EVENTS, "options", "an object", options));
    }
    const max = positiveIntegerOption(
      REGISTRY_EVENTS,
      "maxBuffered",
      options.maxBuffered ?? undefined,
      256,
    );
    if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
      throw new TypeError(
        optionMessage(REGISTRY_EVENTS, "signal", "an AbortSignal", options.signal),
      );
    }
    const stream = new RegistryEventStream(max, options.signal);
    return stream.start(this.#host.watch(stream));
  }

  /**
   * Calls `listener` with the request type (`tool.invoke.request`, ...) and the latency (ms, on
   * the gateway's clock) of every exchange a provider answered; returns the unsubscribe function.
   * What `gatewayMetrics` observes.
   */
  watchExchanges(listener: (requestType: string, ms: number) => void): () => void {
    if (typeof listener !== "function") {
      throw new TypeError(optionMessage("watch exchanges", "listener", "a function", listener));
    }
    const latency = this.#exchanges.latency;
    latency.add(listener);
    return () => {
      latency.delete(listener);
    };
  }

  /** How many Registry watchers are subscribed: listeners, iterators and pending `waitFor`s. */
  get registryWatchers(): number {
    return this.#host.watchers;
  }

  /**
   * Attaches the physical link of a provider route: how envelopes for its provider (requests
   * and Registry answers) are sent. Returns a function that detaches it. A route has at most
   * one link.
   */
  attachRoute(routeId: string, send: ToolGatewayRouteSender): () => void;
  attachRoute(routeId: string, send: ToolGatewayRouteSender, framing?: unknown): () => void {
    if (!this.#endpointOf.has(routeId)) {
      throw new RangeError(`route '${routeId}' is not a configured route of this gateway`);
    }
    if (typeof send !== "function") {
      throw new TypeError(optionMessage("attach a route", "send", "a function", send));
    }
    if (this.#links.has(routeId)) throw new Error(`route '${routeId}' is already attached`);
    // Only attachFramedRoute passes a RouteFraming; any other value is ignored.
    const maxMessageBytes = this.#maxMessageBytes;
    const link: RouteLink = framing instanceof RouteFraming
      ? { frame: (envelope) => framing.frame(envelope, maxMessageBytes), send }
      : { frame: unframed, send };
    this.#links.set(routeId, link);
    return () => {
      if (this.#links.get(routeId) === link) this.#links.delete(routeId);
    };
  }

  /**
   * Takes one message a provider sent on route `routeId`. Never throws: an invalid envelope
   * (its typed payload is checked unless a factory built it), an untrusted route and forged or
   * late answers are dropped and logged.
   */
  receive(routeId: string, envelope: ToolEnvelope): void;
  receive(routeId: string, envelope: ToolEnvelope, framed?: unknown): void {
    const endpointId = this.#endpointOf.get(routeId);
    if (endpointId === undefined) {
      this.#answers.drop(`message on route '${routeId}', which is not configured`);
      return;
    }
    let message: ToolEnvelope;
    if (framed instanceof FramedMessage) {
      try {
        // The edge decodes and validates, once: the router takes the envelope as it is.
        message = framed.decode(this.#maxMessageBytes);
      } catch (error) {
        this.#answers.drop(`undecodable message on route '${routeId}': ${error}`);
        return;
      }
    } else {
      try {
        checkTypedEnvelope(envelope);
      } catch (error) {
        this.#answers.drop(`invalid message on route '${routeId}': ${error}`);
        return;
      }
      message = envelope;
    }
    try {
      this.#dispatch(routeId, endpointId, message);
    } catch (error) {
      // Every path above is checked; this only keeps a defect from escaping into the transport.
      this.#stats.dropped += 1;
      this.#answers.log(
        "error",
        "gateway.handle_failed",
        `handling ${describe(message)} from route '${routeId}' failed: ${error}`,
        error,
      );
    }
  }

  #dispatch(routeId: string, endpointId: string, envelope: ToolEnvelope): void {
    switch (envelope.messageType) {
      case "endpoint.register":
      case "endpoint.unregister":
        this.#host.manage(routeId, envelope);
        return;
      case "endpoint.status":
        this.#host.status(endpointId, envelope);
        return;
      case "tool.event":
        this.#exchanges.event(routeId, envelope);
        return;
      case "tool.invoke.response":
      case "tool.status.response":
      case "tool.result.response":
      case "tool.control.response":
      case "tool.error":
        this.#exchanges.answer(routeId, envelope);
        return;
      default:
        this.#answers.drop(
          `${describe(envelope)} is not a provider message (route '${routeId}')`,
        );
    }
  }

  /**
   * A new caller: a {@linkcode ToolClientTransport} whose requests are routed by endpoint id
   * and whose `connect` callback receives the answers to its own requests and the events of the
   * executions it invoked.
   *
   * **Ownership.** An execution belongs to the caller that invoked it: without a `callerId`, to
   * this handle alone; with one, to every handle connected with the same `callerId` (a caller
   * that reconnects, or an HTTP caller whose token names it). Another caller's status, result,
   * cancel or stop gets what an endpoint answers for a key it does not know
   * (`FORGE_ENDPOINT_EXECUTION_NOT_FOUND`: a `tool.error` for status, `not_found` for result,
   * `rejected` for control), so it cannot learn that the key exists; its invoke with that key is
   * answered `rejected` with `FORGE_PROTOCOL_DEDUP_CONFLICT` and is not forwarded. A repeated
   * invoke by the owner (any handle of its `callerId`) is forwarded as a duplicate, and the
   * execution's events go to that handle from then on. A status, result or control for a key the
   * gateway did not route an invoke for (or has forgotten, see `maxExecutions`) is answered as
   * not found too.
   */
  connect(options: ToolGatewayConnectOptions = {}): ToolClientTransport {
    if (options === null || typeof options !== "object") {
      throw new TypeError(optionMessage("connect a caller", "options", "an object", options));
    }
    const callerId = options.callerId;
    if (callerId !== undefined && (typeof callerId !== "string" || isBlank(callerId))) {
      throw new TypeError(
        optionMessage("connect a caller", "callerId", "a non-blank string", callerId),
      );
    }
    const caller = this.#exchanges.addCaller(callerId);
    return {
      send: (request) => this.#exchanges.send(caller, request),
      connect: (deliver) => {
        if (typeof deliver !== "function") throw new TypeError("deliver must be a function");
        if (caller.deliver !== undefined) throw new Error("this caller is already connected");
        caller.deliver = deliver;
      },
      resolveInstance: (endpointId) => {
        try {
          return this.resolveInstance(endpointId);
        } catch (error) {
          // The client rejects the call with this error before sending anything.
          this.#stats.unavailable += 1;
          throw error;
        }
      },
      close: () => this.#exchanges.closeCaller(caller),
    };
  }

  /**
   * Stops routing: every waiting exchange is answered with a retryable
   * `FORGE_ENDPOINT_UNAVAILABLE` error, timers are cleared, callers and routes are released.
   * Later requests are refused. Calling it again does nothing.
   */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    this.#host.close();
    this.#exchanges.close();
    this.#links.clear();
    return Promise.resolve();
  }
}

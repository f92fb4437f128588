/**
 * The transport-independent provider handler: routes execution requests to Query, Action and
 * Session providers, and guards admission, duplicate suppression, ordering, immutability and
 * bounded retention of every execution it admits.
 *
 * This module is the facade. Option checks are in `_options.ts`, route trust in `_routes.ts`,
 * answering a trusted request in `_dispatch.ts`, provider calls and their signals in `_calls.ts`
 * (the one object the Query path of `_query.ts` and the Action/Session lifecycle of
 * `_lifecycle.ts` call providers through), close() in `_shutdown.ts`, state in `_state.ts`.
 *
 * @module
 */
import type { ToolEndpointDescriptor, ToolOperationDescriptor } from "../endpoint/models.ts";
import { executionKeyOf, ToolEnvelope } from "../wire/envelope.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import { ExecutionLedger } from "./_ledger.ts";
import { ExecutionLifecycle } from "./_lifecycle.ts";
import type { ToolEndpointMetrics, ToolOperationMetrics } from "./_metrics.ts";
import {
  type CloseOptions,
  graceOption,
  handlerSettings,
  type ToolEndpointHandlerOptions,
} from "./_options.ts";
import {
  checkRoute,
  isExecutionRequestType,
  notARequest,
  type ToolRequestRoute,
} from "./_routes.ts";
import { ProviderCalls } from "./_calls.ts";
import { PendingSet } from "./_abort.ts";
import { QueryPath } from "./_query.ts";
import { shutDown } from "./_shutdown.ts";
import { type DispatchOptions, RequestAnswers } from "./_dispatch.ts";
import { registerHandlerState, stateSnapshot, StateWatchers } from "./_state.ts";
import type { ToolEndpointHandlerState } from "./_state.ts";

export type { ToolEventSink } from "./_emitter.ts";
export {
  type ToolEndpointMetrics,
  ToolLatencyHistogram,
  type ToolOperationMetrics,
} from "./_metrics.ts";
export type { CloseOptions, ToolEndpointHandlerOptions } from "./_options.ts";
export type { DispatchOptions } from "./_dispatch.ts";
export type { ToolRequestRoute } from "./_routes.ts";
export { type HandlerLoad, handlerLoad, type ToolEndpointHandlerState } from "./_state.ts";

// The module-private token of dispatchRouted (the hidden third argument of dispatch): nothing
// outside this module can pass it, so a caller's dispatch always checks the route.
const ROUTE_TRUSTED: unique symbol = Symbol("route trusted");

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
  readonly #operations: ReadonlyMap<string, ToolOperationDescriptor>;
  readonly #calls: ProviderCalls;
  readonly #queries: QueryPath;
  readonly #ledger: ExecutionLedger;
  readonly #lifecycle: ExecutionLifecycle;
  readonly #requests: RequestAnswers;
  readonly #dispatches = new PendingSet();
  readonly #watchers: StateWatchers;

  /**
   * Binds one implementation to every declared operation. Checks, in order: the descriptor, its
   * protocol version, the operations mapping, `maxEarlyEvents`, `maxRetainedExecutions`,
   * `maxPendingEvents`, the exact operation mapping, the methods each semantics requires, and
   * `endpointInstanceId`.
   */
  constructor(descriptor: ToolEndpointDescriptor, options: ToolEndpointHandlerOptions) {
    const settings = handlerSettings(descriptor, options);
    this.#descriptor = descriptor;
    this.#endpointInstanceId = settings.endpointInstanceId;
    this.#operations = new Map(
      descriptor.operations.map((operation) => [operation.name, operation]),
    );
    this.#calls = new ProviderCalls(settings);
    this.#watchers = new StateWatchers(this.#calls);
    this.#queries = new QueryPath(descriptor.operations, this.#calls);
    const executing = descriptor.operations
      .filter((operation) => operation.semantics !== "query")
      .map((operation) => operation.name);
    const changed = () => this.#watchers.changed();
    this.#ledger = new ExecutionLedger(executing, settings.maxRetained, changed);
    this.#lifecycle = new ExecutionLifecycle(this.#ledger, this.#calls);
    registerHandlerState(
      this,
      this.#ledger,
      this.#operations,
      this.#queries,
      this.#calls,
      this.#dispatches,
    );
    this.#requests = new RequestAnswers(
      this.#operations,
      (request) => this.validateRequestRoute(request),
      this.#queries,
      this.#lifecycle,
      this.#calls,
      this.#dispatches,
    );
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
    return this.#calls.logger;
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
      const meter = semantics === "query" ? this.#queries.meter(name) : this.#ledger.meter(name);
      operations[name] = meter.snapshot();
    }
    return Object.freeze({ operations: Object.freeze(operations) });
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
    return this.#watchers.watch(listener);
  }

  /** A snapshot of admission and retention state, for health reporting. */
  get state(): ToolEndpointHandlerState {
    return stateSnapshot(this.#ledger, this.#operations, this.#queries, this.#calls);
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
    checkRoute(route, this.#descriptor.endpointId, this.#endpointInstanceId, this.#operations);
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
    // close() waits for answers, not only for provider calls: each answer leaves the set itself.
    const entry = this.#dispatches.enter();
    const work = this.#requests.answer(request, options, routed === ROUTE_TRUSTED, entry);
    entry.promise = work;
    return work;
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
    await shutDown(this.#calls, this.#ledger, this.#lifecycle, this.#dispatches, graceMs);
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
    const key = executionKeyOf(request);
    return this.#lifecycle.abandon(key, operation.name, request.requestId);
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

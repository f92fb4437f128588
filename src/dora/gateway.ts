/**
 * The Gateway side of the ToolEndpoint Wire: {@linkcode ToolGateway} hosts the
 * {@linkcode EndpointRegistry} and routes execution requests by endpoint id. Providers register on
 * their trusted management routes; a caller names an `endpoint_id`, never an instance; the gateway
 * fills `endpoint_instance_id` from the current registration, forwards the request on that
 * endpoint's route as Arrow IPC bytes, and hands each answer back to the caller that asked.
 *
 * Runs on the loopback dataflow ({@linkcode ToolGateway.serveLoopbackRoute}) and as a Dora node
 * with one input/output pair per provider route ({@linkcode runToolGatewayNode}).
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  type EndpointStatus,
  ToolControlResponse,
  ToolError,
  ToolExecutionStatus,
  ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  TERMINAL_EXECUTION_PHASE_VALUES,
} from "../endpoint/constants.ts";
import { type NodeClock, SYSTEM_CLOCK } from "../node/clock.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import {
  EndpointRegistry,
  type EndpointRegistryChange,
  type EndpointRegistryRecord,
} from "../node/registry.ts";
import { validateResponseCorrelation } from "../wire/correlation.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import {
  makeControlResponseEnvelope,
  makeErrorResponseEnvelope,
  makeInvokeResponseEnvelope,
  makeResultResponseEnvelope,
  makeStatusResponseEnvelope,
} from "../wire/factories.ts";
import { controlRequestFromPayload } from "../wire/execution_payloads.ts";
import { endpointStatusFromEnvelope } from "../wire/management_payloads.ts";
import { validateMessageEnvelope } from "../wire/validate.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "./fast_ipc.ts";
import { DEFAULT_MAX_IPC_BYTES } from "./ipc.ts";
import type { LoopbackDataflow } from "./loopback.ts";
import {
  consoleLogger,
  logSafely,
  type ToolLogger,
  type ToolLogLevel,
  warningsAndErrors,
} from "../endpoint/log.ts";
import { transportLogger } from "./_transport_log.ts";
import type { DoraTransport } from "./transport.ts";
import type { ToolClientTransport } from "../client/transport.ts";
import { ToolCallError } from "../client/errors.ts";

/** Sends Arrow IPC bytes (one ToolMessage) toward the provider on one route. */
export type ToolGatewayRouteSender = (bytes: Uint8Array) => void | Promise<void>;

/** Options of {@linkcode ToolGateway}. */
export interface ToolGatewayOptions {
  /**
   * The trusted provider routes: route id -> the one endpoint id it serves. A provider's
   * management messages (register, unregister, status) and its answers and events arrive on its
   * route; requests for its endpoint leave on it.
   */
  readonly routes: Readonly<Record<string, string>> | ReadonlyMap<string, string>;
  /**
   * The lease the Registry grants on every accepted registration, in milliseconds.
   *
   * @default {30000}
   */
  readonly leaseTtlMs?: number;
  /**
   * The monotonic clock of leases and exchange timeouts.
   *
   * @default {SYSTEM_CLOCK}
   */
  readonly clock?: NodeClock;
  /**
   * Where the gateway reports dropped messages and failures (events `gateway.handle_failed`,
   * `gateway.no_answer`, `gateway.send_failed`, `gateway.no_link`, `gateway.deliver_failed`,
   * `gateway.dropped`, and `gateway.caller_gone` at `debug`), and its Registry a throwing
   * listener (`registry.listener_failed`). By default warnings and errors go to
   * `consoleLogger` and `debug` records are dropped.
   *
   * @default {consoleLogger, warnings and errors}
   */
  readonly logger?: ToolLogger;
  /**
   * The largest logical Wire message sent or accepted, in bytes (the IPC stream limit is this
   * plus 64 KiB).
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
  /**
   * How long a forwarded request waits for its provider's answer, in milliseconds; after that
   * the exchange is forgotten (the caller's own timeout decides what to do) and a late answer is
   * dropped.
   *
   * @default {60000}
   */
  readonly exchangeTimeoutMs?: number;
  /**
   * How many forwarded requests may wait for an answer at once, over every route; beyond it a
   * request is answered with a retryable `FORGE_ENDPOINT_CAPACITY` error.
   *
   * @default {1024}
   */
  readonly maxPendingExchanges?: number;
  /**
   * How many forwarded requests for one endpoint (one route) may wait for an answer at once;
   * beyond it a request for that endpoint is answered with a retryable `FORGE_ENDPOINT_CAPACITY`
   * error, while the other endpoints keep their own share of `maxPendingExchanges` (a slow
   * provider cannot make every other endpoint answer capacity errors).
   *
   * @default {256}
   */
  readonly maxPendingExchangesPerEndpoint?: number;
  /**
   * How many routed executions the gateway remembers (which instance runs them, who receives
   * their events). When the table is full, the oldest finished execution is forgotten (its
   * invoke answered with a result or a rejection, or its terminal event, result or terminal
   * status seen; an invoke that got no answer, and an execution of an instance that is no longer
   * registered, count as finished); when every remembered execution is still running, a new
   * invoke is answered with a retryable `FORGE_ENDPOINT_CAPACITY` error.
   *
   * @default {4096}
   */
  readonly maxExecutions?: number;
}

const CREATE_GATEWAY = "create a ToolGateway";

/** Counters of a {@linkcode ToolGateway}. */
export interface ToolGatewayStats {
  /** Requests forwarded to a provider. */
  readonly forwarded: number;
  /** Provider answers handed back to the caller that asked. */
  readonly answered: number;
  /** Provider events handed to the caller of their execution. */
  readonly events: number;
  /** Requests or waits answered with `FORGE_ENDPOINT_UNAVAILABLE` (or capacity) errors. */
  readonly unavailable: number;
  /** Requests or waits answered with an `unknown` outcome (their instance was replaced). */
  readonly unknown: number;
  /** Management messages decided by the Registry. */
  readonly management: number;
  /** Provider messages dropped: undecodable, on an unknown route, forged, stale or late. */
  readonly dropped: number;
}

/** Options of {@linkcode runToolGatewayNode}. */
export interface ToolGatewayNodeOptions {
  /** The gateway node's transport: {@linkcode openDoraNode} under Dora, or a loopback. */
  readonly transport: DoraTransport;
  /**
   * The Dora input and output of each provider route (default for route `r`: input
   * `r_response`, output `r_request`). Routes of the gateway not listed use the default.
   */
  readonly routes?: Readonly<Record<string, { readonly input?: string; readonly output?: string }>>;
  /**
   * Dora callers: input id -> output id. Requests (IPC bytes) arriving on the input are routed
   * like an in-process caller's; their answers and events leave on the output.
   */
  readonly callers?: Readonly<Record<string, string>>;
  /**
   * Where the node reports what it drops (events `gateway_node.caller_input_undecodable` at
   * `warn`, `gateway_node.caller_output_failed` and `gateway_node.route_failed` at `error`).
   * By default warnings and errors go to the transport's log as the text `consoleLogger`
   * writes, or to `consoleLogger` when the transport has no log.
   *
   * @default {the transport's log}
   */
  readonly logger?: ToolLogger;
}

/** Why {@linkcode runToolGatewayNode} returned, and what it saw. */
export interface ToolGatewayNodeStats {
  /** `"stop"`: Dora sent Stop; `"end"`: the event stream ended. */
  readonly stopReason: "stop" | "end";
  /** Input events received (every input id, ticks included). */
  readonly inputs: number;
  /** Caller request bytes that could not be decoded and were dropped. */
  readonly invalidCallerInputs: number;
  /** The gateway's counters when the node stopped. */
  readonly gateway: ToolGatewayStats;
}

/** The Arrow framing allowed around one logical message in an IPC stream. */
const IPC_OVERHEAD_BYTES = DEFAULT_MAX_IPC_BYTES - DEFAULT_MAX_MESSAGE_BYTES;

const EXECUTION_REQUESTS = new Set<string>([
  "tool.invoke.request",
  "tool.status.request",
  "tool.result.request",
  "tool.control.request",
]);

/** A caller connected through {@linkcode ToolGateway.connect}. */
interface Caller {
  deliver: ((message: ToolEnvelope) => void) | undefined;
  closed: boolean;
}

/** A request forwarded to a provider and not answered yet. */
interface PendingExchange {
  readonly caller: Caller;
  /** The request as the caller sent it: its headers are restored on the answer. */
  readonly request: ToolEnvelope;
  /** The request as sent to the provider: the answer must correlate with it. */
  readonly forwarded: ToolEnvelope;
  readonly routeId: string;
  readonly instanceId: string;
  readonly timer: unknown;
}

/** An execution the gateway routed an invoke for. */
interface ExecutionRecord {
  readonly routeId: string;
  readonly instanceId: string;
  caller: Caller | undefined;
  /** Set once the instance was replaced: the outcome every later request gets. */
  unknown: ToolError | undefined;
  /**
   * Set once the execution is known to be over (or its invoke went unanswered): the record may
   * be forgotten to make room (see `maxExecutions`).
   */
  finished: boolean;
}

const TERMINAL_EVENT_TYPES: ReadonlySet<unknown> = new Set([
  "executor_completed",
  "executor_failed",
  "cancelled",
  "stopped",
]);

const TERMINAL_PHASES: ReadonlySet<unknown> = new Set(TERMINAL_EXECUTION_PHASE_VALUES);

/** True when a validated answer says its execution is over. */
function answerEndsExecution(response: ToolEnvelope): boolean {
  const payload = response.payload as Record<string, unknown>;
  switch (response.messageType) {
    case "tool.error":
      return true;
    case "tool.invoke.response":
      return payload.outcome !== "accepted";
    case "tool.status.response":
      return TERMINAL_PHASES.has((payload.status as Record<string, unknown>).phase);
    case "tool.result.response":
      return payload.status === "available";
    case "tool.control.response":
      return (payload.response as Record<string, unknown>).status === "terminal";
    default:
      return false;
  }
}

function executionKey(endpointId: string, invocationId?: string, attemptId?: string): string {
  return JSON.stringify([endpointId, invocationId, attemptId]);
}

function describe(envelope: ToolEnvelope): string {
  return `${envelope.messageType} endpoint_id=${envelope.endpointId} invocation_id=${envelope.invocationId} attempt_id=${envelope.attemptId} request_id=${envelope.requestId}`;
}

/** A copy of `envelope` with another request id and instance (both may be absent). */
function withExchange(
  envelope: ToolEnvelope,
  requestId: string | undefined,
  endpointInstanceId: string | undefined,
): ToolEnvelope {
  return new ToolEnvelope({
    messageType: envelope.messageType,
    requestId,
    invocationId: envelope.invocationId,
    attemptId: envelope.attemptId,
    endpointId: envelope.endpointId,
    endpointInstanceId,
    operation: envelope.operation,
    payload: envelope.payload,
  });
}

const DEFAULT_LOGGER: ToolLogger = warningsAndErrors(consoleLogger);

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
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolContext, ToolExecutionKey } from "@forge/tool";
 * import { makeStatusRequestEnvelope, type ToolEnvelope } from "@forge/tool/wire";
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
 *   makeStatusRequestEnvelope(context, { requestId: "status-1", endpointInstanceId: undefined }),
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
  readonly #registry: EndpointRegistry;
  /** endpoint id -> route id. */
  readonly #routeOf = new Map<string, string>();
  /** route id -> endpoint id. */
  readonly #endpointOf: ReadonlyMap<string, string>;
  readonly #links = new Map<string, ToolGatewayRouteSender>();
  readonly #pending = new Map<string, PendingExchange>();
  /** route id -> how many of `#pending` wait on it. */
  readonly #pendingOnRoute = new Map<string, number>();
  readonly #executions = new Map<string, ExecutionRecord>();
  readonly #health = new Map<string, EndpointStatus>();
  readonly #callers = new Set<Caller>();
  readonly #clock: NodeClock;
  readonly #logger: ToolLogger;
  readonly #maxMessageBytes: number | undefined;
  readonly #exchangeTimeoutMs: number;
  readonly #maxPending: number;
  readonly #maxPendingPerEndpoint: number;
  readonly #maxExecutions: number;
  readonly #stats = {
    forwarded: 0,
    answered: 0,
    events: 0,
    unavailable: 0,
    unknown: 0,
    management: 0,
    dropped: 0,
  };
  #leaseTimer: unknown = undefined;
  #exchangeNumber = 0;
  #closed = false;

  /**
   * Checks the options (route table, lease, limits) and starts with an empty Registry at
   * revision 0. Nothing is sent until a route is attached and a provider registers.
   */
  constructor(options: ToolGatewayOptions) {
    if (options === null || typeof options !== "object") {
      throw new TypeError(optionMessage(CREATE_GATEWAY, "options", "an object", options));
    }
    const clock = options.clock ?? SYSTEM_CLOCK;
    if (
      typeof clock?.now !== "function" || typeof clock.setTimeout !== "function" ||
      typeof clock.clearTimeout !== "function"
    ) {
      throw new TypeError(
        optionMessage(
          CREATE_GATEWAY,
          "clock",
          "an object with now(), setTimeout() and clearTimeout()",
          clock,
        ),
      );
    }
    this.#clock = clock;
    this.#exchangeTimeoutMs = positiveIntegerOption(
      CREATE_GATEWAY,
      "exchangeTimeoutMs",
      options.exchangeTimeoutMs ?? undefined,
      60_000,
    );
    this.#maxPending = positiveIntegerOption(
      CREATE_GATEWAY,
      "maxPendingExchanges",
      options.maxPendingExchanges ?? undefined,
      1024,
    );
    this.#maxPendingPerEndpoint = positiveIntegerOption(
      CREATE_GATEWAY,
      "maxPendingExchangesPerEndpoint",
      options.maxPendingExchangesPerEndpoint ?? undefined,
      256,
    );
    this.#maxExecutions = positiveIntegerOption(
      CREATE_GATEWAY,
      "maxExecutions",
      options.maxExecutions ?? undefined,
      4096,
    );
    positiveIntegerOption(CREATE_GATEWAY, "maxMessageBytes", options.maxMessageBytes, 0);
    this.#maxMessageBytes = options.maxMessageBytes;
    this.#logger = optionalFunction<ToolLogger>(CREATE_GATEWAY, "logger", options.logger) ??
      DEFAULT_LOGGER;
    this.#registry = new EndpointRegistry({
      routes: options.routes,
      leaseTtlMs: options.leaseTtlMs,
      clock,
      onChange: (change) => this.#onRegistryChange(change),
      logger: this.#logger,
    });
    this.#endpointOf = this.#registry.routes;
    for (const [routeId, endpointId] of this.#endpointOf) this.#routeOf.set(endpointId, routeId);
  }

  /** The Registry the gateway hosts (read its records and revision; it decides on its own). */
  get registry(): EndpointRegistry {
    return this.#registry;
  }

  /** A snapshot of the counters. */
  get stats(): ToolGatewayStats {
    return { ...this.#stats };
  }

  /** Forwarded requests still waiting for their provider's answer. */
  get pendingExchanges(): number {
    return this.#pending.size;
  }

  /** The last `endpoint.status` the current instance of `endpointId` reported, if any. */
  endpointStatus(endpointId: string): EndpointStatus | undefined {
    this.#registry.expire();
    return this.#health.get(endpointId);
  }

  /**
   * The current instance of `endpointId`; throws a {@linkcode ToolCallError} (a
   * `ToolEndpointError`) `FORGE_ENDPOINT_UNAVAILABLE`, retryable, of kind `"error"`
   * when it has none: the error the gateway answers a request for that endpoint with.
   */
  resolveInstance(endpointId: string): string {
    const record = this.#registry.lookup(endpointId);
    if (record !== undefined) return record.endpointInstanceId;
    throw new ToolCallError(this.#unavailableError(endpointId), "error");
  }

  /**
   * Attaches the physical link of a provider route: how bytes for its provider are sent.
   * Returns a function that detaches it. A route has at most one link.
   */
  attachRoute(routeId: string, send: ToolGatewayRouteSender): () => void {
    if (!this.#endpointOf.has(routeId)) {
      throw new RangeError(`route '${routeId}' is not a configured route of this gateway`);
    }
    if (typeof send !== "function") {
      throw new TypeError(optionMessage("attach a route", "send", "a function", send));
    }
    if (this.#links.has(routeId)) throw new Error(`route '${routeId}' is already attached`);
    this.#links.set(routeId, send);
    return () => {
      if (this.#links.get(routeId) === send) this.#links.delete(routeId);
    };
  }

  /**
   * Serves the provider node of a {@linkcode LoopbackDataflow} as route `routeId`: requests and
   * Registry answers are delivered on its request input, everything the node sends is received.
   * Resolves when the node closed its transport.
   */
  async serveLoopbackRoute(routeId: string, flow: LoopbackDataflow): Promise<void> {
    const detach = this.attachRoute(routeId, (bytes) => flow.request(bytes));
    try {
      for (let output = await flow.nextOutput(); output; output = await flow.nextOutput()) {
        this.receive(routeId, output.data);
      }
    } finally {
      detach();
    }
  }

  /**
   * Takes one message (Arrow IPC bytes) a provider sent on route `routeId`. Never throws: bad
   * bytes, untrusted routes and forged or late answers are dropped and logged.
   */
  receive(routeId: string, bytes: Uint8Array): void {
    const endpointId = this.#endpointOf.get(routeId);
    if (endpointId === undefined) {
      this.#drop(`message on route '${routeId}', which is not configured`);
      return;
    }
    let envelope: ToolEnvelope;
    try {
      envelope = decodeToolEnvelopeIpc(bytes, {
        maxMessageBytes: this.#maxMessageBytes,
        maxBytes: this.#maxMessageBytes === undefined
          ? undefined
          : this.#maxMessageBytes + IPC_OVERHEAD_BYTES,
      });
      validateMessageEnvelope(envelope);
    } catch (error) {
      this.#drop(`undecodable message on route '${routeId}': ${error}`);
      return;
    }
    try {
      this.#dispatch(routeId, endpointId, envelope);
    } catch (error) {
      // Every path above is checked; this only keeps a defect from escaping into the transport.
      this.#stats.dropped += 1;
      this.#log(
        "error",
        "gateway.handle_failed",
        `handling ${describe(envelope)} from route '${routeId}' failed: ${error}`,
        error,
      );
    }
  }

  #dispatch(routeId: string, endpointId: string, envelope: ToolEnvelope): void {
    switch (envelope.messageType) {
      case "endpoint.register":
      case "endpoint.unregister":
        this.#manage(routeId, envelope);
        return;
      case "endpoint.status":
        this.#status(endpointId, envelope);
        return;
      case "tool.event":
        this.#event(routeId, envelope);
        return;
      case "tool.invoke.response":
      case "tool.status.response":
      case "tool.result.response":
      case "tool.control.response":
      case "tool.error":
        this.#answer(routeId, envelope);
        return;
      default:
        this.#drop(`${describe(envelope)} is not a provider message (route '${routeId}')`);
    }
  }

  /**
   * A new caller: a {@linkcode ToolClientTransport} whose requests are routed by endpoint id
   * and whose `connect` callback receives the answers to its own requests and the events of the
   * executions it invoked.
   */
  connect(): ToolClientTransport {
    const caller: Caller = { deliver: undefined, closed: false };
    this.#callers.add(caller);
    return {
      send: (request) => this.#send(caller, request),
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
      close: () => this.#closeCaller(caller),
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
    if (this.#leaseTimer !== undefined) this.#clock.clearTimeout(this.#leaseTimer);
    this.#leaseTimer = undefined;
    for (const [id, exchange] of [...this.#pending]) {
      this.#settle(id, exchange);
      this.#stats.unavailable += 1;
      this.#deliver(
        exchange.caller,
        makeErrorResponseEnvelope(
          this.#unavailableError(exchange.request.endpointId, "the gateway closed"),
          exchange.request,
        ),
      );
    }
    for (const caller of this.#callers) caller.closed = true;
    this.#callers.clear();
    this.#links.clear();
    this.#executions.clear();
    return Promise.resolve();
  }

  // -------------------------------------------------------------------------------------------
  // Callers -> providers

  async #send(caller: Caller, request: ToolEnvelope): Promise<void> {
    if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
    if (!EXECUTION_REQUESTS.has(request.messageType)) {
      throw new RangeError(`a caller sends execution requests, not ${request.messageType}`);
    }
    if (this.#closed || caller.closed) throw new Error("the gateway caller is closed");
    const endpointId = request.endpointId;
    const routeId = this.#routeOf.get(endpointId);
    if (routeId === undefined) {
      this.#answerUnavailable(
        caller,
        request,
        `endpoint '${endpointId}' is not configured on this gateway`,
        false,
      );
      return;
    }
    const key = executionKey(endpointId, request.invocationId, request.attemptId);
    const record = this.#executions.get(key);
    if (record?.unknown !== undefined) {
      this.#answerUnknown(caller, request, record.unknown);
      return;
    }
    const invoke = request.messageType === "tool.invoke.request";
    const current = this.#registry.lookup(endpointId);
    const target = (invoke ? undefined : record?.instanceId) ?? request.endpointInstanceId ??
      current?.endpointInstanceId;
    if (target === undefined) {
      this.#answerUnavailable(caller, request, `endpoint '${endpointId}' has no current instance`);
      return;
    }
    if (current === undefined) {
      this.#answerUnavailable(
        caller,
        request,
        `endpoint instance '${target}' of '${endpointId}' is not registered`,
      );
      return;
    }
    if (current.endpointInstanceId !== target) {
      if (invoke) {
        // Nothing ran: the caller may address the current instance.
        this.#answerUnavailable(
          caller,
          request,
          `endpoint instance '${target}' of '${endpointId}' is no longer current`,
        );
      } else {
        const error = this.#replacedError(target, current);
        this.#remember(key, {
          routeId,
          instanceId: target,
          caller: record?.caller,
          unknown: error,
          finished: true,
        });
        this.#answerUnknown(caller, request, error);
      }
      return;
    }
    const send = this.#links.get(routeId);
    if (send === undefined) {
      this.#answerUnavailable(
        caller,
        request,
        `route '${routeId}' of endpoint '${endpointId}' is not connected`,
      );
      return;
    }
    if (this.#pending.size >= this.#maxPending) {
      this.#answerCapacity(
        caller,
        request,
        `the gateway already waits for ${this.#maxPending} answers`,
        { max_pending_exchanges: this.#maxPending },
      );
      return;
    }
    const pendingOnRoute = this.#pendingOnRoute.get(routeId) ?? 0;
    if (pendingOnRoute >= this.#maxPendingPerEndpoint) {
      this.#answerCapacity(
        caller,
        request,
        `the gateway already waits for ${pendingOnRoute} answers of endpoint '${endpointId}'`,
        {
          endpoint_id: endpointId,
          max_pending_exchanges_per_endpoint: this.#maxPendingPerEndpoint,
        },
      );
      return;
    }
    if (invoke && !this.#executions.has(key) && !this.#makeRoomForExecution()) {
      this.#answerCapacity(
        caller,
        request,
        `the gateway already routes ${this.#executions.size} running executions`,
        { max_executions: this.#maxExecutions },
      );
      return;
    }
    const exchangeId = `${request.requestId}@gateway-${++this.#exchangeNumber}`;
    const forwarded = withExchange(request, exchangeId, target);
    let bytes: Uint8Array;
    try {
      bytes = encodeToolEnvelopeIpc(forwarded, { maxMessageBytes: this.#maxMessageBytes });
    } catch (error) {
      if (!(error instanceof ToolProtocolError)) throw error;
      this.#deliver(
        caller,
        makeErrorResponseEnvelope(
          new ToolError({ code: error.code, message: error.message, retryable: false }),
          request,
        ),
      );
      return;
    }
    const timer = this.#clock.setTimeout(() => {
      const exchange = this.#pending.get(exchangeId);
      if (exchange === undefined) return;
      this.#forget(exchangeId, exchange);
      this.#invokeUnanswered(exchange);
      this.#log(
        "warn",
        "gateway.no_answer",
        `no answer within ${this.#exchangeTimeoutMs} ms on route '${routeId}' to ${
          describe(request)
        }; the exchange is forgotten`,
      );
    }, this.#exchangeTimeoutMs);
    this.#pending.set(exchangeId, {
      caller,
      request,
      forwarded,
      routeId,
      instanceId: target,
      timer,
    });
    this.#pendingOnRoute.set(routeId, pendingOnRoute + 1);
    if (invoke) {
      this.#remember(key, {
        routeId,
        instanceId: target,
        caller,
        unknown: undefined,
        finished: false,
      });
    }
    this.#stats.forwarded += 1;
    try {
      await send(bytes);
    } catch (error) {
      const exchange = this.#pending.get(exchangeId);
      this.#log(
        "error",
        "gateway.send_failed",
        `sending ${describe(forwarded)} on route '${routeId}' failed: ${error}`,
        error,
      );
      if (exchange !== undefined) {
        this.#settle(exchangeId, exchange);
        this.#invokeUnanswered(exchange);
        this.#answerUnavailable(
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
    if (this.#executions.size < this.#maxExecutions) return true;
    for (const [key, record] of this.#executions) {
      if (
        record.finished || record.unknown !== undefined ||
        this.#registry.lookup(this.#endpointOf.get(record.routeId)!)?.endpointInstanceId !==
          record.instanceId
      ) {
        this.#executions.delete(key);
        return true;
      }
    }
    return false;
  }

  /** Marks the execution of an invoke exchange finished when it ended without an answer. */
  #invokeUnanswered(exchange: PendingExchange): void {
    if (exchange.request.messageType !== "tool.invoke.request") return;
    const record = this.#executions.get(
      executionKey(
        exchange.request.endpointId,
        exchange.request.invocationId,
        exchange.request.attemptId,
      ),
    );
    if (record !== undefined && record.instanceId === exchange.instanceId) record.finished = true;
  }

  #closeCaller(caller: Caller): void {
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

  #manage(routeId: string, request: ToolEnvelope): void {
    const response = this.#registry.handle(request, routeId);
    this.#stats.management += 1;
    this.#armLeaseTimer();
    const send = this.#links.get(routeId);
    if (send === undefined) {
      this.#log(
        "error",
        "gateway.no_link",
        `route '${routeId}' has no link: ${describe(response)} not sent`,
      );
      return;
    }
    try {
      const sent = send(
        encodeToolEnvelopeIpc(response, { maxMessageBytes: this.#maxMessageBytes }),
      );
      Promise.resolve(sent).catch((error) =>
        this.#log(
          "error",
          "gateway.send_failed",
          `sending ${describe(response)} on route '${routeId}' failed: ${error}`,
        )
      );
    } catch (error) {
      this.#log(
        "error",
        "gateway.send_failed",
        `sending ${describe(response)} on route '${routeId}' failed: ${error}`,
      );
    }
  }

  #status(endpointId: string, envelope: ToolEnvelope): void {
    const current = this.#registry.lookup(endpointId);
    if (
      envelope.endpointId !== endpointId ||
      current?.endpointInstanceId !== envelope.endpointInstanceId
    ) {
      this.#drop(`endpoint.status of instance '${envelope.endpointInstanceId}' is not current`);
      return;
    }
    this.#health.set(endpointId, endpointStatusFromEnvelope(envelope));
  }

  #event(routeId: string, event: ToolEnvelope): void {
    const record = this.#executions.get(
      executionKey(event.endpointId, event.invocationId, event.attemptId),
    );
    if (
      record === undefined || record.routeId !== routeId ||
      record.instanceId !== event.endpointInstanceId || record.unknown !== undefined
    ) {
      this.#drop(`${describe(event)} is not of an execution route '${routeId}' runs`);
      return;
    }
    if (TERMINAL_EVENT_TYPES.has(event.payload.type)) record.finished = true;
    if (record.caller === undefined || record.caller.closed) {
      this.#log("debug", "gateway.caller_gone", `${describe(event)} dropped: its caller closed`);
      return;
    }
    this.#stats.events += 1;
    this.#deliver(record.caller, event);
  }

  #answer(routeId: string, response: ToolEnvelope): void {
    const exchange = response.requestId === undefined
      ? undefined
      : this.#pending.get(response.requestId);
    if (exchange === undefined || exchange.routeId !== routeId) {
      this.#drop(`${describe(response)} answers no request forwarded on route '${routeId}'`);
      return;
    }
    try {
      validateResponseCorrelation(exchange.forwarded, response);
    } catch (error) {
      this.#drop(`${describe(response)} on route '${routeId}' does not correlate: ${error}`);
      return;
    }
    this.#settle(response.requestId!, exchange);
    if (answerEndsExecution(response)) {
      const request = exchange.request;
      const record = this.#executions.get(
        executionKey(request.endpointId, request.invocationId, request.attemptId),
      );
      if (record !== undefined && record.instanceId === exchange.instanceId) {
        record.finished = true;
      }
    }
    this.#stats.answered += 1;
    this.#deliver(
      exchange.caller,
      withExchange(response, exchange.request.requestId, exchange.request.endpointInstanceId),
    );
  }

  // -------------------------------------------------------------------------------------------
  // Registry changes

  #onRegistryChange(change: EndpointRegistryChange): void {
    this.#health.delete(change.record.endpointId);
    this.#armLeaseTimer();
    if (change.kind === "registered") return;
    const gone = change.kind === "replaced" ? change.previous : change.record;
    const replaced = change.kind === "replaced"
      ? this.#replacedError(gone.endpointInstanceId, change.record)
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
        this.#answerUnknown(exchange.caller, exchange.request, replaced);
      } else {
        this.#answerUnavailable(
          exchange.caller,
          exchange.request,
          change.kind === "expired"
            ? `the lease of endpoint instance '${gone.endpointInstanceId}' of '${gone.endpointId}' expired`
            : `endpoint instance '${gone.endpointInstanceId}' of '${gone.endpointId}' unregistered`,
        );
      }
    }
  }

  #armLeaseTimer(): void {
    if (this.#closed) return;
    if (this.#leaseTimer !== undefined) this.#clock.clearTimeout(this.#leaseTimer);
    this.#leaseTimer = undefined;
    const next = this.#registry.nextLeaseDeadlineMs();
    if (next === undefined) return;
    this.#leaseTimer = this.#clock.setTimeout(() => {
      this.#leaseTimer = undefined;
      this.#registry.expire();
      this.#armLeaseTimer();
    }, Math.max(0, next - this.#clock.now()));
  }

  // -------------------------------------------------------------------------------------------
  // Answers made by the gateway

  #unavailableError(endpointId: string, message?: string, retryable = true): ToolError {
    return new ToolError({
      code: ToolErrorCodes.ENDPOINT_UNAVAILABLE,
      message: message ?? `endpoint '${endpointId}' has no current instance`,
      retryable,
      details: { endpoint_id: endpointId },
    });
  }

  #replacedError(instanceId: string, current: EndpointRegistryRecord): ToolError {
    return new ToolError({
      code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
      message: `endpoint instance '${instanceId}' of '${current.endpointId}' was replaced by ` +
        `'${current.endpointInstanceId}'; the outcome of the execution cannot be recovered`,
      retryable: false,
      details: {
        endpoint_instance_id: instanceId,
        current_endpoint_instance_id: current.endpointInstanceId,
      },
    });
  }

  #answerUnavailable(
    caller: Caller,
    request: ToolEnvelope,
    message: string,
    retryable = true,
  ): void {
    this.#stats.unavailable += 1;
    this.#deliver(
      caller,
      makeErrorResponseEnvelope(
        this.#unavailableError(request.endpointId, message, retryable),
        request,
      ),
    );
  }

  /** The `unknown` outcome in the answer type of `request`. */
  #answerUnknown(caller: Caller, request: ToolEnvelope, error: ToolError): void {
    this.#stats.unknown += 1;
    const result = new ToolResult({ status: "unknown", error });
    let answer: ToolEnvelope;
    switch (request.messageType) {
      case "tool.invoke.request":
        answer = makeInvokeResponseEnvelope(result, request);
        break;
      case "tool.status.request":
        answer = makeStatusResponseEnvelope(
          new ToolExecutionStatus({ phase: "unknown", error }),
          request,
        );
        break;
      case "tool.result.request":
        answer = makeResultResponseEnvelope(
          new ToolResultResponse({ status: "available", result }),
          request,
        );
        break;
      default:
        // The execution is terminal (unknown) when the command arrives.
        answer = makeControlResponseEnvelope(
          new ToolControlResponse({
            command: controlRequestFromPayload(request.payload).command,
            status: "terminal",
          }),
          request,
        );
    }
    this.#deliver(caller, answer);
  }

  #settle(id: string, exchange: PendingExchange): void {
    this.#forget(id, exchange);
    this.#clock.clearTimeout(exchange.timer);
  }

  /** Removes a waiting exchange (its timer fired or is being cleared). */
  #forget(id: string, exchange: PendingExchange): void {
    if (!this.#pending.delete(id)) return;
    const left = (this.#pendingOnRoute.get(exchange.routeId) ?? 1) - 1;
    if (left === 0) this.#pendingOnRoute.delete(exchange.routeId);
    else this.#pendingOnRoute.set(exchange.routeId, left);
  }

  #answerCapacity(
    caller: Caller,
    request: ToolEnvelope,
    message: string,
    details: Record<string, unknown>,
  ): void {
    this.#stats.unavailable += 1;
    this.#deliver(
      caller,
      makeErrorResponseEnvelope(
        new ToolError({
          code: ToolErrorCodes.ENDPOINT_CAPACITY,
          message,
          retryable: true,
          details,
        }),
        request,
      ),
    );
  }

  #deliver(caller: Caller, message: ToolEnvelope): void {
    if (caller.closed || caller.deliver === undefined) {
      this.#log(
        "debug",
        "gateway.caller_gone",
        `${describe(message)} dropped: its caller is not connected`,
      );
      return;
    }
    try {
      caller.deliver(message);
    } catch (error) {
      this.#log(
        "error",
        "gateway.deliver_failed",
        `a caller's deliver callback threw on ${describe(message)}: ${error}`,
        error,
      );
    }
  }

  #log(level: ToolLogLevel, event: string, message: string, error?: unknown): void {
    logSafely(
      this.#logger,
      error === undefined ? { level, event, message } : { level, event, message, error },
    );
  }

  #drop(message: string): void {
    this.#stats.dropped += 1;
    this.#log("warn", "gateway.dropped", `dropped: ${message}`);
  }
}

/**
 * Runs `gateway` as a Dora node on `options.transport`: every provider route is an input/output
 * pair (the input carries what the provider sends, the output its requests and Registry
 * answers), and each configured Dora caller an input/output pair too. Returns at Stop or at the
 * end of the event stream, after closing the gateway and the transport.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway } from "@forge/tool/gateway";
 * import { LoopbackDataflow, runToolGatewayNode } from "@forge/tool/dora";
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const flow = new LoopbackDataflow(); // under Dora: `transport: await openDoraNode()`
 * const running = runToolGatewayNode(gateway, { transport: flow.transport });
 * await flow.stop();
 * assertEquals((await running).stopReason, "stop");
 * ```
 */
export async function runToolGatewayNode(
  gateway: ToolGateway,
  options: ToolGatewayNodeOptions,
): Promise<ToolGatewayNodeStats> {
  if (!(gateway instanceof ToolGateway)) {
    throw new TypeError(optionMessage("run a gateway node", "gateway", "a ToolGateway", gateway));
  }
  const { transport } = options;
  const logger = optionalFunction<ToolLogger>("run a gateway node", "logger", options.logger) ??
    transportLogger(transport);
  const routeOfInput = new Map<string, string>();
  const detach: (() => void)[] = [];
  const failed = (event: string, what: string) => (error: unknown) =>
    logSafely(logger, { level: "error", event, message: `${what} failed: ${error}`, error });
  for (const routeId of gateway.registry.routes.keys()) {
    const pair = options.routes?.[routeId];
    const input = pair?.input ?? `${routeId}_response`;
    const output = pair?.output ?? `${routeId}_request`;
    routeOfInput.set(input, routeId);
    detach.push(gateway.attachRoute(routeId, (bytes) => transport.sendOutput(output, bytes)));
  }
  const callers = new Map<string, ToolClientTransport>();
  for (const [input, output] of Object.entries(options.callers ?? {})) {
    const caller = gateway.connect();
    caller.connect((message) => {
      let bytes: Uint8Array;
      try {
        bytes = encodeToolEnvelopeIpc(message);
      } catch (error) {
        failed(
          "gateway_node.caller_output_failed",
          `encoding ${describe(message)} for caller output '${output}'`,
        )(error);
        return;
      }
      transport.sendOutput(output, bytes).catch(
        failed("gateway_node.caller_output_failed", `sending on caller output '${output}'`),
      );
    });
    callers.set(input, caller);
  }
  let inputs = 0;
  let invalidCallerInputs = 0;
  let stopReason: "stop" | "end" = "end";
  try {
    for (let event = await transport.nextEvent(); event; event = await transport.nextEvent()) {
      if (event.type === "stop") {
        stopReason = "stop";
        break;
      }
      if (event.type !== "input") continue;
      inputs += 1;
      const routeId = routeOfInput.get(event.id);
      if (routeId !== undefined) {
        gateway.receive(routeId, event.data);
        continue;
      }
      const caller = callers.get(event.id);
      if (caller === undefined) continue; // ticks and other inputs
      let request: ToolEnvelope;
      try {
        request = decodeToolEnvelopeIpc(event.data);
        validateMessageEnvelope(request);
      } catch (error) {
        invalidCallerInputs += 1;
        logSafely(logger, {
          level: "warn",
          event: "gateway_node.caller_input_undecodable",
          message: `dropped undecodable request on caller input '${event.id}': ${error}`,
          error,
        });
        continue;
      }
      Promise.resolve()
        .then(() => caller.send(request))
        .catch(
          failed(
            "gateway_node.route_failed",
            `routing ${describe(request)} from caller input '${event.id}'`,
          ),
        );
    }
  } finally {
    for (const release of detach) release();
    await gateway.close();
    await transport.close();
  }
  return { stopReason, inputs, invalidCallerInputs, gateway: gateway.stats };
}

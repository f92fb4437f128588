/**
 * The options and counters of {@linkcode ToolGateway}, and the type of a route's sender: what a
 * caller of the router configures and reads, apart from the router itself.
 *
 * @module
 */
import { type NodeClock, SYSTEM_CLOCK } from "../node/clock.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
// deno-lint-ignore no-unused-vars
import type { ToolGateway } from "./gateway.ts";

/**
 * Sends one logical message (a request or a Registry answer) toward the provider on one route.
 * The router hands it envelopes; a transport edge frames them (the Dora gateway node encodes
 * each one once as Arrow IPC).
 */
export type ToolGatewayRouteSender = (envelope: ToolEnvelope) => void | Promise<void>;

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
   * The largest logical Wire message sent or accepted on a framed route, in bytes: the Dora
   * gateway node (`runToolGatewayNode` in `@forge/tool/dora`) checks it when it encodes or decodes a route's
   * messages (the IPC stream limit is this plus 64 KiB). A route attached with
   * {@linkcode ToolGateway.attachRoute} carries envelopes and frames them itself.
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
  /**
   * Requests the gateway answered itself because their execution is not the caller's (or was
   * not routed here): not-found answers and `FORGE_PROTOCOL_DEDUP_CONFLICT` invoke rejections.
   */
  readonly refused: number;
}

/** Options of {@linkcode ToolGateway.connect}. */
export interface ToolGatewayConnectOptions {
  /**
   * The caller's identity: every handle connected with the same `callerId` shares the executions
   * any of them invoked. Without one, the handle is its own identity (nobody else can read its
   * executions, and they are nobody's once it closes).
   *
   * @default {undefined}
   */
  readonly callerId?: string;
}

const CREATE_GATEWAY = "create a ToolGateway";

/** The checked settings of {@linkcode ToolGatewayOptions} (option errors show the value). */
export function checkGatewayOptions(options: ToolGatewayOptions): {
  clock: NodeClock;
  exchangeTimeoutMs: number;
  maxPending: number;
  maxPendingPerEndpoint: number;
  maxExecutions: number;
} {
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage(CREATE_GATEWAY, "options", "an object", options));
  }
  const clock: NodeClock = options.clock ?? SYSTEM_CLOCK;
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
  const exchangeTimeoutMs = positiveIntegerOption(
    CREATE_GATEWAY,
    "exchangeTimeoutMs",
    options.exchangeTimeoutMs ?? undefined,
    60_000,
  );
  const maxPending = positiveIntegerOption(
    CREATE_GATEWAY,
    "maxPendingExchanges",
    options.maxPendingExchanges ?? undefined,
    1024,
  );
  const maxPendingPerEndpoint = positiveIntegerOption(
    CREATE_GATEWAY,
    "maxPendingExchangesPerEndpoint",
    options.maxPendingExchangesPerEndpoint ?? undefined,
    256,
  );
  const maxExecutions = positiveIntegerOption(
    CREATE_GATEWAY,
    "maxExecutions",
    options.maxExecutions ?? undefined,
    4096,
  );
  positiveIntegerOption(CREATE_GATEWAY, "maxMessageBytes", options.maxMessageBytes, 0);
  optionalFunction<ToolLogger>(CREATE_GATEWAY, "logger", options.logger);
  return { clock, exchangeTimeoutMs, maxPending, maxPendingPerEndpoint, maxExecutions };
}

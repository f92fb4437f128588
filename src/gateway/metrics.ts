/**
 * Prometheus metrics of a {@linkcode ToolGateway}, in the text exposition format, through
 * `prom-client` with a private Registry per call (never the library's global default): the
 * router's counters, its own answers by error code, open executions, waiting exchanges, SSE
 * subscribers (set by the HTTP layer) and the latency of answered exchanges by request type.
 *
 * @module
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { optionMessage } from "../_internal/options.ts";
import type { ToolGateway } from "./gateway.ts";
import type { ToolGatewayStats } from "./options.ts";

/** Options of {@linkcode gatewayMetrics}. */
export interface GatewayMetricsOptions {
  /**
   * The prefix of every metric name.
   *
   * @default {"forge_gateway_"}
   */
  readonly prefix?: string;
  /**
   * The latency histogram's bucket bounds, in seconds.
   *
   * @default {[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]}
   */
  readonly buckets?: readonly number[];
}

/** The metrics of one gateway (see {@linkcode gatewayMetrics}). */
export interface GatewayMetrics {
  /** The `Content-Type` of {@linkcode GatewayMetrics.text}. */
  readonly contentType: string;
  /** The Prometheus text exposition of every metric, read at the call. */
  text(): Promise<string>;
  /** Sets the SSE subscriber gauge (the HTTP layer calls it as subscribers come and go). */
  setSubscribers(count: number): void;
  /** Stops observing the gateway's exchanges. */
  close(): void;
}

const COUNTERS: readonly [keyof ToolGatewayStats, string][] = [
  ["forwarded", "Requests forwarded to a provider"],
  ["answered", "Provider answers handed back to the caller that asked"],
  ["events", "Provider events handed to the caller of their execution"],
  ["unavailable", "Requests answered with FORGE_ENDPOINT_UNAVAILABLE or capacity errors"],
  ["unknown", "Requests answered with an unknown outcome (instance replaced)"],
  ["management", "Management messages decided by the Registry"],
  ["dropped", "Provider messages dropped"],
  ["refused", "Requests refused because their execution is not the caller's"],
];

const DEFAULT_BUCKETS = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/**
 * The Prometheus metrics of `gateway`, on a private `prom-client` Registry: counters
 * `<prefix>forwarded_total` ... `<prefix>refused_total` (the {@linkcode ToolGatewayStats}),
 * `<prefix>rejections_total{code}` (answers the gateway made itself), gauges
 * `<prefix>open_executions`, `<prefix>pending_exchanges`, `<prefix>sse_subscribers`, and the
 * histogram `<prefix>exchange_duration_seconds{request_type}` of answered exchanges.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { gatewayMetrics, ToolGateway } from "@forge/tool/gateway";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const metrics = gatewayMetrics(gateway);
 * const text = await metrics.text();
 * assertEquals(text.includes("forge_gateway_forwarded_total 0\n"), true);
 * metrics.close();
 * await gateway.close();
 * ```
 */
export function gatewayMetrics(
  gateway: ToolGateway,
  options: GatewayMetricsOptions = {},
): GatewayMetrics {
  const action = "create gateway metrics";
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage(action, "options", "an object", options));
  }
  const prefix = options.prefix ?? "forge_gateway_";
  if (typeof prefix !== "string" || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix)) {
    throw new TypeError(optionMessage(action, "prefix", "a Prometheus metric name prefix", prefix));
  }
  const buckets = options.buckets ?? DEFAULT_BUCKETS;
  if (!Array.isArray(buckets) || buckets.some((b) => typeof b !== "number" || !(b > 0))) {
    throw new TypeError(
      optionMessage(action, "buckets", "an array of positive numbers", buckets),
    );
  }
  const registry = new Registry();
  for (const [name, help] of COUNTERS) {
    new Counter({
      name: `${prefix}${name}_total`,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(gateway.stats[name]);
      },
    });
  }
  new Counter({
    name: `${prefix}rejections_total`,
    help: "Answers the gateway made itself (no provider asked), by error code",
    labelNames: ["code"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [code, count] of Object.entries(gateway.rejections)) {
        this.inc({ code }, count);
      }
    },
  });
  new Gauge({
    name: `${prefix}open_executions`,
    help: "Routed executions not known to be over",
    registers: [registry],
    collect() {
      this.set(gateway.openExecutions);
    },
  });
  new Gauge({
    name: `${prefix}pending_exchanges`,
    help: "Forwarded requests waiting for their provider's answer",
    registers: [registry],
    collect() {
      this.set(gateway.pendingExchanges);
    },
  });
  const subscribers = new Gauge({
    name: `${prefix}sse_subscribers`,
    help: "Open SSE subscriptions of the HTTP service",
    registers: [registry],
  });
  subscribers.set(0);
  const latency = new Histogram({
    name: `${prefix}exchange_duration_seconds`,
    help: "Time from forwarding a request to its provider's answer, by request type",
    labelNames: ["request_type"],
    buckets: [...buckets],
    registers: [registry],
  });
  const unwatch = gateway.watchExchanges((messageType, ms) => {
    latency.observe({ request_type: messageType }, ms / 1000);
  });
  return {
    contentType: registry.contentType,
    text: () => registry.metrics(),
    setSubscribers(count: number) {
      if (!Number.isInteger(count) || count < 0) {
        throw new RangeError(
          optionMessage("set the SSE subscribers", "count", "a non-negative integer", count),
        );
      }
      subscribers.set(count);
    },
    close: unwatch,
  };
}

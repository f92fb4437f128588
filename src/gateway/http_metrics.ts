/**
 * `GET /metrics` as a route of the gateway's HTTP service: {@linkcode metricsRoute} mounts a
 * {@linkcode GatewayMetrics} exposition through `extraRoutes`. It lives on the HTTP side of
 * `src/gateway/` (the router's `metrics.ts` imports no HTTP module).
 *
 * @module
 */
import { optionalFunction, optionMessage } from "../_internal/options.ts";
import type { GatewayMetrics } from "./metrics.ts";
import type { ToolGatewayHttpRoute } from "./http_options.ts";

/** Options of {@linkcode metricsRoute}. */
export interface MetricsRouteOptions {
  /**
   * Whether `GET /metrics` is reachable without a bearer token when tokens are configured
   * (a Prometheus scraper can send one: `authorization` in its scrape config).
   *
   * @default {false}
   */
  readonly public?: boolean;
  /**
   * Read at each scrape into the `sse_subscribers` gauge (`setSubscribers`): the HTTP service's
   * open SSE streams, `() => handler.stats.subscribers`. Without it the gauge keeps what
   * `setSubscribers` last set.
   */
  readonly subscribers?: () => number;
  /**
   * The path.
   *
   * @default {"/metrics"}
   */
  readonly pathname?: string;
}

const ACTION = "mount the metrics route";

/**
 * The route `GET /metrics` answering `metrics.text()` with its Prometheus `Content-Type`, for
 * the `extraRoutes` option of `toolGatewayHttpHandler` / `serveToolGateway`. Behind the same
 * bearer tokens as the Tool API unless `public: true`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   gatewayMetrics,
 *   metricsRoute,
 *   ToolGateway,
 *   toolGatewayHttpHandler,
 * } from "@forge/tool/gateway";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const metrics = gatewayMetrics(gateway);
 * const handler = toolGatewayHttpHandler(gateway, {
 *   logger: () => {},
 *   extraRoutes: [metricsRoute(metrics, { subscribers: () => handler.stats.subscribers })],
 * });
 * const response = await handler(new Request("http://gateway/metrics"));
 * assertEquals(response.headers.get("content-type"), metrics.contentType);
 * assertEquals((await response.text()).includes("forge_gateway_sse_subscribers 0\n"), true);
 * await handler.close();
 * metrics.close();
 * await gateway.close();
 * ```
 */
export function metricsRoute(
  metrics: GatewayMetrics,
  options: MetricsRouteOptions = {},
): ToolGatewayHttpRoute {
  if (metrics === null || typeof metrics !== "object" || typeof metrics.text !== "function") {
    throw new TypeError(optionMessage(ACTION, "metrics", "a gatewayMetrics(...) value", metrics));
  }
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage(ACTION, "options", "an object", options));
  }
  const subscribers = optionalFunction<() => number>(ACTION, "subscribers", options.subscribers);
  const pathname = options.pathname ?? "/metrics";
  if (typeof pathname !== "string" || !pathname.startsWith("/")) {
    throw new TypeError(optionMessage(ACTION, "pathname", "a path starting with '/'", pathname));
  }
  if (options.public !== undefined && typeof options.public !== "boolean") {
    throw new TypeError(optionMessage(ACTION, "public", "a boolean", options.public));
  }
  return {
    method: "GET",
    pathname,
    public: options.public ?? false,
    handler: async () => {
      if (subscribers !== undefined) metrics.setSubscribers(subscribers());
      return new Response(await metrics.text(), {
        headers: { "content-type": metrics.contentType },
      });
    },
  };
}

/**
 * The whole gateway service in one call: the Tool API over HTTP and SSE, `GET /metrics` and the
 * MCP server over Streamable HTTP at `/mcp`, on one `Deno.serve` with one set of bearer tokens.
 * It lives in `src/mcp/` because it mounts `/mcp` (only this folder imports the MCP SDK); the
 * metrics route is the gateway's {@linkcode metricsRoute}.
 *
 * @module
 */
import { optionMessage } from "../_internal/options.ts";
import type { ToolGateway } from "../gateway/gateway.ts";
import {
  type GatewayMetrics,
  gatewayMetrics,
  type GatewayMetricsOptions,
} from "../gateway/metrics.ts";
import { metricsRoute } from "../gateway/http_metrics.ts";
import {
  serveToolGateway,
  type ServeToolGatewayOptions,
  type ToolGatewayHttpHandler,
  type ToolGatewayHttpRoute,
} from "../gateway/http.ts";
import { type McpHttpHandler, mcpHttpHandler, type McpHttpHandlerOptions } from "./http.ts";

/** Options of {@linkcode mcpRoute}. */
export interface McpRouteOptions {
  /**
   * The path of the Streamable HTTP endpoint.
   *
   * @default {"/mcp"}
   */
  readonly pathname?: string;
}

/**
 * The route `/mcp` (any method: the Streamable HTTP transport answers POST, GET and DELETE) for
 * the `extraRoutes` option of `toolGatewayHttpHandler` / `serveToolGateway`: the service checks
 * the bearer token and hands `mcp` the caller id it names, so an agent's MCP tasks and the HTTP
 * invocations of the same token belong to one caller, and another token's agent sees none of
 * them. Closing `mcp` stays the caller's job.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway, toolGatewayHttpHandler } from "@forge/tool/gateway";
 * import { mcpHttpHandler, mcpRoute } from "@forge/tool/mcp";
 *
 * const gateway = new ToolGateway({ routes: {} });
 * const mcp = mcpHttpHandler(gateway, { logger: () => {} });
 * const handler = toolGatewayHttpHandler(gateway, {
 *   tokens: { "secret-a": "agent-a" },
 *   extraRoutes: [mcpRoute(mcp)],
 *   logger: () => {},
 * });
 * const anonymous = await handler(new Request("http://gateway/mcp", { method: "POST" }));
 * assertEquals(anonymous.status, 401);
 * await anonymous.body?.cancel();
 * const noSession = await handler(
 *   new Request("http://gateway/mcp", { headers: { authorization: "Bearer secret-a" } }),
 * );
 * assertEquals(noSession.status, 400); // a client starts with POST initialize
 * await noSession.body?.cancel();
 * await mcp.close();
 * await handler.close();
 * await gateway.close();
 * ```
 */
export function mcpRoute(mcp: McpHttpHandler, options: McpRouteOptions = {}): ToolGatewayHttpRoute {
  const action = "mount the MCP route";
  if (typeof mcp !== "function" || typeof mcp.close !== "function") {
    throw new TypeError(optionMessage(action, "mcp", "an mcpHttpHandler(...) handler", mcp));
  }
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage(action, "options", "an object", options));
  }
  const pathname = options.pathname ?? "/mcp";
  if (typeof pathname !== "string" || !pathname.startsWith("/")) {
    throw new TypeError(optionMessage(action, "pathname", "a path starting with '/'", pathname));
  }
  return { method: "*", pathname, handler: (request, { callerId }) => mcp(request, callerId) };
}

/** The metrics part of {@linkcode ToolGatewayServiceOptions}. */
export interface ToolGatewayServiceMetricsOptions extends GatewayMetricsOptions {
  /**
   * Whether `GET /metrics` is reachable without a bearer token when tokens are configured.
   *
   * @default {false}
   */
  readonly public?: boolean;
}

/** Options of {@linkcode serveToolGatewayService}: `serveToolGateway`'s, and what to mount. */
export interface ToolGatewayServiceOptions extends ServeToolGatewayOptions {
  /**
   * Mount the MCP server (Streamable HTTP) at `/mcp`: `true`, or the options of its
   * `mcpHttpHandler` (`definitions`, `tools`, bounds; its `logger` defaults to this `logger`);
   * `false` mounts none.
   *
   * @default {true}
   */
  readonly mcp?: boolean | McpHttpHandlerOptions;
  /**
   * Mount `GET /metrics` (Prometheus text, `gatewayMetrics`), its SSE subscriber gauge read from
   * the service at each scrape: `true`, or `gatewayMetrics` options plus `public`; `false`
   * mounts none.
   *
   * @default {true}
   */
  readonly metrics?: boolean | ToolGatewayServiceMetricsOptions;
}

/** A running {@linkcode serveToolGatewayService}. */
export interface ToolGatewayService {
  /** Where it listens (the port picked when `port` was 0). */
  readonly addr: Deno.NetAddr;
  /** The Tool API handler (its `stats`). */
  readonly handler: ToolGatewayHttpHandler;
  /** The MCP handler mounted at `/mcp`, when mounted (its `sessions`). */
  readonly mcp: McpHttpHandler | undefined;
  /** The metrics served at `/metrics`, when mounted. */
  readonly metrics: GatewayMetrics | undefined;
  /** Resolves once the server stopped and everything is closed. */
  readonly finished: Promise<void>;
  /**
   * Closes the MCP sessions, then the Tool API (event streams, running invocations) and the
   * server, then the metrics. Idempotent. The gateway stays open: it is the caller's.
   */
  close(): Promise<void>;
}

const SERVE = "serve the gateway service";

/**
 * Serves the whole gateway service on one port: the Tool API of `serveToolGateway`, `GET
 * /metrics` ({@linkcode metricsRoute}) and `/mcp` ({@linkcode mcpRoute}), every route behind the
 * same bearer `tokens` (an option makes `/metrics` public). Routes in `extraRoutes` (a status
 * page) are matched first. `signal` closes it like `close()`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway } from "@forge/tool/gateway";
 * import { serveToolGatewayService } from "@forge/tool/mcp";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" }, logger: () => {} });
 * const service = serveToolGatewayService(gateway, {
 *   port: 0,
 *   tokens: { "secret-a": "agent-a" },
 *   logger: () => {},
 * });
 * const response = await fetch(`http://127.0.0.1:${service.addr.port}/metrics`, {
 *   headers: { authorization: "Bearer secret-a" },
 * });
 * assertEquals((await response.text()).includes("forge_gateway_forwarded_total 0\n"), true);
 * await service.close();
 * await gateway.close();
 * ```
 */
export function serveToolGatewayService(
  gateway: ToolGateway,
  options: ToolGatewayServiceOptions = {},
): ToolGatewayService {
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage(SERVE, "options", "an object", options));
  }
  const { mcp: mcpOption = true, metrics: metricsOption = true, signal, ...serve } = options;
  if (typeof mcpOption !== "boolean" && (mcpOption === null || typeof mcpOption !== "object")) {
    throw new TypeError(optionMessage(SERVE, "mcp", "a boolean or MCP handler options", mcpOption));
  }
  if (
    typeof metricsOption !== "boolean" &&
    (metricsOption === null || typeof metricsOption !== "object")
  ) {
    throw new TypeError(
      optionMessage(SERVE, "metrics", "a boolean or metrics options", metricsOption),
    );
  }
  if (serve.extraRoutes !== undefined && !Array.isArray(serve.extraRoutes)) {
    throw new TypeError(
      optionMessage(SERVE, "extraRoutes", "an array of routes", serve.extraRoutes),
    );
  }
  const routes: ToolGatewayHttpRoute[] = [...serve.extraRoutes ?? []];
  let metrics: GatewayMetrics | undefined;
  let mcp: McpHttpHandler | undefined;
  let handler: ToolGatewayHttpHandler | undefined;
  try {
    if (metricsOption !== false) {
      const { public: isPublic, ...metricsOptions } = metricsOption === true ? {} : metricsOption;
      metrics = gatewayMetrics(gateway, metricsOptions);
      routes.push(
        metricsRoute(metrics, {
          public: isPublic,
          subscribers: () => handler?.stats.subscribers ?? 0,
        }),
      );
    }
    if (mcpOption !== false) {
      const mcpOptions = mcpOption === true ? {} : mcpOption;
      mcp = mcpHttpHandler(gateway, {
        ...mcpOptions,
        logger: mcpOptions.logger ?? serve.logger,
      });
      routes.push(mcpRoute(mcp));
    }
    const server = serveToolGateway(gateway, { ...serve, extraRoutes: routes });
    handler = server.handler;
    let closing: Promise<void> | undefined;
    const close = () =>
      closing ??= (async () => {
        signal?.removeEventListener("abort", close);
        // MCP sessions first: their open GET streams would keep the server's shutdown waiting.
        await mcp?.close();
        await server.close();
        metrics?.close();
      })();
    if (signal?.aborted) void close();
    else signal?.addEventListener("abort", close, { once: true });
    const finished = server.finished.then(() => closing);
    return {
      addr: server.addr,
      handler: server.handler,
      mcp,
      metrics,
      finished: finished.then(() => undefined),
      close,
    };
  } catch (error) {
    metrics?.close();
    void mcp?.close();
    throw error;
  }
}

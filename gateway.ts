/**
 * The ToolGateway: a Registry host that routes execution requests by endpoint id to the
 * endpoint nodes registered with it, and hands callers an in-process client transport. The
 * router works on envelopes and imports no npm package and no FFI; running it as a Dora node
 * (Arrow IPC framing at the edge) is `runToolGatewayNode` in `@forge/tool/dora`.
 *
 * @module
 */
export {
  type GatewayRegistryEvent,
  type GatewayRegistryEventsOptions,
  ToolGateway,
  type ToolGatewayConnectOptions,
  type ToolGatewayOptions,
  type ToolGatewayRouteSender,
  type ToolGatewayStats,
  type ToolGatewayWaitOptions,
} from "./src/gateway/gateway.ts";
export { gatewayClient, type ToolGatewayClientOptions } from "./src/gateway/client.ts";
export {
  type GatewayMetrics,
  gatewayMetrics,
  type GatewayMetricsOptions,
} from "./src/gateway/metrics.ts";
export {
  serveToolGateway,
  type ServeToolGatewayOptions,
  type ToolGatewayHttpHandler,
  toolGatewayHttpHandler,
  type ToolGatewayHttpOptions,
  type ToolGatewayHttpRoute,
  type ToolGatewayHttpRouteContext,
  type ToolGatewayHttpStats,
  type ToolGatewayServer,
} from "./src/gateway/http.ts";
export { metricsRoute, type MetricsRouteOptions } from "./src/gateway/http_metrics.ts";

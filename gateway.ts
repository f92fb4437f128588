/**
 * The ToolGateway: a Registry host that routes execution requests by endpoint id to the
 * endpoint nodes registered with it, and hands callers an in-process client transport. Running
 * it as a Dora node is `runToolGatewayNode` in `@forge/tool/dora`.
 *
 * The router still frames its routes as Arrow IPC, so this entry (unlike `@forge/tool`,
 * `@forge/tool/wire` and `@forge/tool/node`) imports the `apache-arrow` npm package.
 *
 * @module
 */
export {
  ToolGateway,
  type ToolGatewayOptions,
  type ToolGatewayRouteSender,
  type ToolGatewayStats,
} from "./src/dora/gateway.ts";

/**
 * `@forge/tool/mcp`: the Model Context Protocol server over a {@linkcode ToolGateway}, for LLM
 * agents. Every operation of every endpoint in the gateway's Registry is an MCP tool; Queries
 * answer `tools/call`, Actions and Sessions run as MCP tasks (`taskSupport: "optional"`) with
 * cancel/stop and progress reaching the endpoint. Each caller id has its own gateway transport
 * and task table. Transports: any SDK transport ({@linkcode createMcpServer}) and Streamable
 * HTTP as a web-standard handler ({@linkcode mcpHttpHandler}), mounted on the gateway's HTTP
 * service with {@linkcode mcpRoute}; {@linkcode serveToolGatewayService} serves the Tool API,
 * `/metrics` and `/mcp` together on one port behind one set of bearer tokens.
 *
 * This is the only entry point that imports the MCP SDK (`npm:@modelcontextprotocol/sdk`).
 *
 * @module
 */
export {
  createMcpServer,
  type ForgeMcpServer,
  type McpServerOptions,
  type McpServerSettings,
  type McpToolMetadata,
} from "./src/mcp/server.ts";
export { type McpHttpHandler, mcpHttpHandler, type McpHttpHandlerOptions } from "./src/mcp/http.ts";
export { mcpToolName } from "./src/mcp/server.ts";
export {
  mcpRoute,
  type McpRouteOptions,
  serveToolGatewayService,
  type ToolGatewayService,
  type ToolGatewayServiceMetricsOptions,
  type ToolGatewayServiceOptions,
} from "./src/mcp/service.ts";

// A Query through MCP against the same Query through the in-process client, same run: the
// gateway client directly, MCP in memory (SDK Client + InMemoryTransport), and MCP over
// Streamable HTTP on 127.0.0.1. Run: deno bench -A bench/mcp_bench.ts
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolEndpointClient } from "../mod.ts";
import { createMcpServer, mcpHttpHandler } from "../mcp.ts";
import { startDemoGateway } from "../examples/mcp_demo.ts";

const demo = await startDemoGateway();
const ARGS = { classes: ["cube"] };

const direct = new ToolEndpointClient({
  transport: demo.gateway.connect(),
  endpointId: "robot.demo",
  callerId: "bench",
});

const mcp = createMcpServer(demo.gateway, {
  callerId: "bench-mcp",
  definitions: [demo.definition],
});
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await mcp.server.connect(serverSide);
const memory = new Client({ name: "bench", version: "1" });
await memory.connect(clientSide);

const handler = mcpHttpHandler(demo.gateway, { definitions: [demo.definition] });
const server = Deno.serve(
  { port: 0, hostname: "127.0.0.1", onListen: () => {} },
  (request) => handler(request, "bench-http"),
);
const http = new Client({ name: "bench", version: "1" });
await http.connect(
  new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.addr.port}/mcp`)),
);

Deno.bench("Query: in-process client through the gateway", { baseline: true }, async () => {
  await direct.query("detect", ARGS);
});
Deno.bench("Query: MCP tools/call in memory", async () => {
  await memory.callTool({ name: "robot.demo.detect", arguments: ARGS });
});
Deno.bench("Query: MCP tools/call over Streamable HTTP", async () => {
  await http.callTool({ name: "robot.demo.detect", arguments: ARGS });
});

globalThis.addEventListener("unload", () => {
  // deno bench ends the process after the last bench; nothing to await here.
  void server.shutdown();
});

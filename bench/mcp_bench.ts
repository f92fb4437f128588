// One Query, four ways, same run (issue 21 "Done when"): (a) the in-process client on the gateway
// (the baseline), (b) the gateway's HTTP Tool API (`fetch`, keep-alive), (c) MCP tools/call over
// Streamable HTTP, (d) MCP in memory (SDK Client + InMemoryTransport). (b) and (c) go through
// one `serveToolGatewayService` on 127.0.0.1, as `deno task gateway` serves them.
// Run: deno bench -A bench/mcp_bench.ts
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolEndpointClient } from "../mod.ts";
import { createMcpServer, serveToolGatewayService } from "../mcp.ts";
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

const service = serveToolGatewayService(demo.gateway, {
  port: 0,
  tokens: { "bench-token": "bench-http" },
  mcp: { definitions: [demo.definition] },
  metrics: false,
  logger: () => {},
});
const base = `http://127.0.0.1:${service.addr.port}`;
const authorization = "Bearer bench-token";
const http = new Client({ name: "bench", version: "1" });
await http.connect(
  new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { authorization } },
  }),
);
const QUERY_BODY = JSON.stringify({ arguments: ARGS });

Deno.bench("Query: in-process client through the gateway", { baseline: true }, async () => {
  await direct.query("detect", ARGS);
});
Deno.bench("Query: gateway HTTP Tool API (fetch)", async () => {
  const response = await fetch(`${base}/tools/robot.demo/detect:invoke`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: QUERY_BODY,
  });
  if (response.status !== 200) throw new Error(`HTTP ${response.status}`);
  await response.arrayBuffer();
});
Deno.bench("Query: MCP tools/call over Streamable HTTP", async () => {
  await http.callTool({ name: "robot.demo.detect", arguments: ARGS });
});
Deno.bench("Query: MCP tools/call in memory", async () => {
  await memory.callTool({ name: "robot.demo.detect", arguments: ARGS });
});

globalThis.addEventListener("unload", () => {
  // deno bench ends the process after the last bench; nothing to await here.
  void service.close();
});

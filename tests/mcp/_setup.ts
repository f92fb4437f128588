// Shared setup of the MCP tests: the demo gateway and SDK clients connected to it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CreateTaskResultSchema, type Task } from "@modelcontextprotocol/sdk/types.js";
import { createMcpServer, type ForgeMcpServer, type McpServerSettings } from "../../mcp.ts";
import { type DemoGateway, startDemoGateway } from "../../examples/mcp_demo.ts";

export interface Connected {
  readonly client: Client;
  readonly mcp: ForgeMcpServer;
  readonly clientTransport: InMemoryTransport;
}

/** A fresh SDK client (tasks capability on) connected in memory to an MCP server of `callerId`. */
export async function connect(
  demo: DemoGateway,
  callerId: string,
  settings: McpServerSettings = {},
): Promise<Connected> {
  const mcp = createMcpServer(demo.gateway, {
    callerId,
    definitions: [demo.definition],
    pollIntervalMs: 10,
    logger: () => {},
    ...settings,
  });
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverTransport);
  const client = newClient();
  await client.connect(clientTransport);
  return { client, mcp, clientTransport };
}

export function newClient(): Client {
  return new Client({ name: "test-agent", version: "1.0.0" }, {
    capabilities: { tasks: { list: {}, cancel: {} } },
  });
}

export function startDemo(stepMs = 20): Promise<DemoGateway> {
  return startDemoGateway({ stepMs });
}

/** `tools/call` with `params.task`: the CreateTaskResult's task. */
export async function startTask(client: Client, name: string, args: object): Promise<Task> {
  const created = await client.request(
    {
      method: "tools/call",
      params: { name, arguments: args as Record<string, unknown>, task: {} },
    },
    CreateTaskResultSchema,
  );
  return created.task;
}

/** Polls `check` every 5 ms until it is true (at most ~5 s). */
export async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let turn = 0; turn < 1000; turn++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

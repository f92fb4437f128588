import { assertEquals, assertRejects } from "@std/assert";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  EmptyResultSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { mcpHttpHandler } from "../../mcp.ts";
import { connect, newClient, startDemo, startTask, until } from "./_setup.ts";

const RESULT = "forge.tool/result_status";

/** The gateway's HTTP layer in miniature: the bearer token is the caller id. */
function serve(handler: (request: Request, callerId: string) => Promise<Response>) {
  return Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, (request) => {
    const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
    if (token === undefined) return new Response("unauthorized", { status: 401 });
    return handler(request, token);
  });
}

function httpClient(url: URL, token: string) {
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  return { client: newClient(), transport };
}

/** The demo gateway's MCP handler, served over HTTP. */
async function startHttp(stepMs?: number) {
  const demo = await startDemo(stepMs);
  const handler = mcpHttpHandler(demo.gateway, {
    definitions: [demo.definition],
    pollIntervalMs: 10,
    logger: () => {},
  });
  return { demo, handler, server: serve(handler) };
}

Deno.test("mcp over HTTP: list, Query, an Action task cancelled, ownership by caller", async () => {
  const { demo, handler, server } = await startHttp();
  const url = new URL(`http://127.0.0.1:${server.addr.port}/mcp`);
  const a = httpClient(url, "agent-a");
  const b = httpClient(url, "agent-b");
  await a.client.connect(a.transport);
  await b.client.connect(b.transport);
  assertEquals(handler.sessions, 2);

  const { tools } = await a.client.listTools();
  assertEquals(tools.map((tool: Tool) => tool.name), [
    "robot.demo.detect",
    "robot.demo.move",
    "robot.demo.policy",
  ]);
  const query = await a.client.callTool({
    name: "robot.demo.detect",
    arguments: { classes: ["cube"] },
  });
  assertEquals(query.structuredContent, {
    objects: [{ class: "cube", score: 0.9, box: [0, 20, 32, 32] }],
  });

  const task = await startTask(a.client, "robot.demo.move", { target: "shelf" });
  await until(
    async () =>
      (await a.client.experimental.tasks.getTask(task.taskId)).statusMessage?.startsWith(
        "progress",
      ) === true,
    "a progress statusMessage",
  );
  // Agent b sees none of it.
  const error = (await assertRejects(
    () => b.client.experimental.tasks.getTask(task.taskId),
    McpError,
  )) as McpError;
  assertEquals(error.code, -32602);
  assertEquals((await b.client.experimental.tasks.listTasks()).tasks, []);
  // Nor can b use a's session id.
  const stolen = await fetch(url, {
    method: "POST",
    headers: {
      authorization: "Bearer agent-b",
      "mcp-session-id": a.transport.sessionId!,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/list" }),
  });
  assertEquals(stolen.status, 404);
  await stolen.body?.cancel();

  const cancelled = await a.client.experimental.tasks.cancelTask(task.taskId);
  assertEquals([cancelled.status, cancelled.statusMessage], ["cancelled", "result cancelled"]);
  const result = await a.client.experimental.tasks.getTaskResult(
    task.taskId,
    CallToolResultSchema,
  );
  assertEquals(result._meta?.[RESULT], "cancelled");
  assertEquals(demo.handler.metrics.operations.move.cancelled, 1);

  // A blocking call with progress over the POST's SSE stream.
  let progress = 0;
  const blocking = await a.client.callTool(
    { name: "robot.demo.move", arguments: { target: "bin" } },
    undefined,
    { onprogress: () => void progress++ },
  );
  assertEquals(blocking.structuredContent, { pose: "bin" });
  assertEquals(progress, 11);

  await a.transport.terminateSession();
  await a.client.close();
  await b.client.close();
  await until(() => handler.sessions === 1, "the terminated session to close");
  await handler.close();
  assertEquals(handler.sessions, 0);
  await server.shutdown();
  await demo.stop();
});

/** Requests whose params break the MCP schema of a method the SDK parses itself. */
const BAD_PARAMS: [string, unknown][] = [
  ["tasks/get", { taskId: 5 }],
  ["tasks/get", {}],
  ["tasks/result", { taskId: {} }],
  ["tasks/cancel", { taskId: [] }],
  ["tasks/list", { cursor: 5 }],
  ["tools/list", { cursor: 5 }],
  ["initialize", { protocolVersion: 5 }],
];

Deno.test("mcp: bad params of the SDK's own methods are InvalidParams, a non-object params an answered InvalidRequest", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  for (const [method, params] of BAD_PARAMS) {
    const error = (await assertRejects(
      () => client.request({ method, params } as never, EmptyResultSchema),
      McpError,
    )) as McpError;
    // -32603 (InternalError, the SDK Protocol's parse failure) before.
    assertEquals(error.code, -32602, `${method} ${JSON.stringify(params)}`);
    assertEquals(error.message.includes(`Invalid ${method} request`), true, error.message);
  }
  // Params that are no object: the Protocol dropped the message and the agent waited forever.
  for (const params of ["x", [1], 5]) {
    const error = (await assertRejects(
      () =>
        client.request({ method: "ping", params } as never, EmptyResultSchema, {
          timeout: 2000,
        }),
      McpError,
    )) as McpError;
    assertEquals(error.code, -32600, JSON.stringify(params));
    assertEquals(error.message.includes("'ping' must carry its params as an object"), true);
  }
  // Well-formed requests are untouched; a task the agent does not hold is still the SDK's answer.
  assertEquals(await client.ping(), {});
  assertEquals((await client.listTools()).tools.length, 3);
  const unknown = (await assertRejects(
    () => client.experimental.tasks.getTask("nope"),
    McpError,
  )) as McpError;
  assertEquals([unknown.code, unknown.message.includes("Task not found")], [-32602, true]);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp over HTTP: bad params of the SDK's own methods are InvalidParams there too", async () => {
  const { demo, handler, server } = await startHttp();
  const a = httpClient(new URL(`http://127.0.0.1:${server.addr.port}/mcp`), "agent-a");
  await a.client.connect(a.transport);
  for (const [method, params] of BAD_PARAMS.filter(([method]) => method !== "initialize")) {
    const error = (await assertRejects(
      () => a.client.request({ method, params } as never, EmptyResultSchema),
      McpError,
    )) as McpError;
    assertEquals(error.code, -32602, `${method} ${JSON.stringify(params)}`);
  }
  assertEquals((await a.client.listTools()).tools.length, 3);
  await a.transport.terminateSession();
  await a.client.close();
  await handler.close();
  await server.shutdown();
  await demo.stop();
});

Deno.test("mcp: closing the server ends the tasks still working: a Session stopped, an Action cancelled", async () => {
  const demo = await startDemo(50);
  const { client, mcp } = await connect(demo, "agent-1");
  await startTask(client, "robot.demo.policy", { task: "sort" });
  await startTask(client, "robot.demo.move", { target: "shelf" });
  assertEquals(demo.handler.state.activeInvocations, 2);
  await mcp.close();
  // Nobody can reach those tasks once their table is gone: both ran on at the endpoint before.
  assertEquals(demo.handler.state.activeInvocations, 0);
  const { policy, move } = demo.handler.metrics.operations;
  assertEquals([policy.stopped, move.cancelled], [1, 1]);
  await client.close();
  await demo.stop();
});

Deno.test("mcp: a task start the endpoint accepts while the server closes is ended, not left running", async () => {
  const demo = await startDemo(50);
  const { client, mcp } = await connect(demo, "agent-1");
  // The invoke is on its way to the endpoint when close() begins.
  const call = client.request(
    {
      method: "tools/call",
      params: { name: "robot.demo.policy", arguments: { task: "sort" }, task: {} },
    },
    CreateTaskResultSchema,
  ).catch((error: unknown) => error);
  await mcp.close();
  assertEquals(demo.handler.metrics.operations.policy.admitted, 1);
  // Before, the clients closed under the pending invoke, and the Session ran on unreachable.
  await until(() => demo.handler.state.activeInvocations === 0, "the Session to stop");
  assertEquals(demo.handler.metrics.operations.policy.stopped, 1);
  assertEquals((await call) instanceof McpError, true);
  await client.close();
  await demo.stop();
});

Deno.test("mcp over HTTP: closing the handler ends every caller's working tasks", async () => {
  const { demo, handler, server } = await startHttp(50);
  const a = httpClient(new URL(`http://127.0.0.1:${server.addr.port}/mcp`), "agent-a");
  await a.client.connect(a.transport);
  await startTask(a.client, "robot.demo.policy", { task: "sort" });
  assertEquals(demo.handler.state.activeInvocations, 1);
  await handler.close();
  assertEquals(demo.handler.state.activeInvocations, 0);
  assertEquals(demo.handler.metrics.operations.policy.stopped, 1);
  await a.client.close();
  await server.shutdown();
  await demo.stop();
});

Deno.test("mcp over stdio: the demo script serves robot.demo to an SDK client", async () => {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "--allow-read", "--allow-env", "examples/mcp_stdio.ts", "--step-ms", "10"],
    stderr: "pipe",
  });
  const client = newClient();
  await client.connect(transport);
  const { tools } = await client.listTools();
  assertEquals(tools.map((tool: Tool) => tool.name), [
    "robot.demo.detect",
    "robot.demo.move",
    "robot.demo.policy",
  ]);
  const query = await client.callTool({ name: "robot.demo.detect", arguments: { classes: ["a"] } });
  assertEquals(query.structuredContent, {
    objects: [{ class: "a", score: 0.9, box: [0, 20, 32, 32] }],
  });
  const session = await startTask(client, "robot.demo.policy", { task: "sort" });
  await until(
    async () =>
      (await client.experimental.tasks.getTask(session.taskId)).statusMessage?.startsWith(
        "heartbeat",
      ) === true,
    "a heartbeat",
  );
  const stopped = await client.experimental.tasks.cancelTask(session.taskId);
  assertEquals([stopped.status, stopped.statusMessage], ["cancelled", "result stopped"]);
  const move = await startTask(client, "robot.demo.move", { target: "home" });
  await until(
    async () => (await client.experimental.tasks.getTask(move.taskId)).status === "completed",
    "the move",
  );
  const result = await client.experimental.tasks.getTaskResult(move.taskId, CallToolResultSchema);
  assertEquals(result.structuredContent, { pose: "home" });
  assertEquals((await client.experimental.tasks.listTasks()).tasks.length, 2);
  await client.close();
});

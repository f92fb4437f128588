// serveToolGatewayService: the Tool API, GET /metrics and /mcp on one real socket (port 0), one
// set of bearer tokens, one owner per invocation or task.
import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError, type Task, type Tool } from "@modelcontextprotocol/sdk/types.js";
import type { ToolLogRecord } from "../../mod.ts";
import { mcpRoute, serveToolGatewayService } from "../../mcp.ts";
import { gatewayMetrics, metricsRoute, ToolGateway } from "../../gateway.ts";
import { newClient, startDemo, startTask, until } from "./_setup.ts";

const TOKENS = { "secret-a": "agent-a", "secret-b": "agent-b" };

/** `name{labels} value` lines of the exposition, comments left out. */
function samples(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return out;
}

function bearer(token: string, init: RequestInit = {}): RequestInit {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  return { ...init, headers };
}

Deno.test("service: /metrics after a Query over HTTP has the exact counters, and the SSE gauge follows the service", async () => {
  const demo = await startDemo(100);
  const logs: ToolLogRecord[] = [];
  const service = serveToolGatewayService(demo.gateway, {
    port: 0,
    tokens: TOKENS,
    mcp: false,
    logger: (record) => logs.push(record),
  });
  const base = `http://127.0.0.1:${service.addr.port}`;
  assertEquals(service.mcp, undefined);
  // Behind the same tokens as the Tool API.
  const anonymous = await fetch(`${base}/metrics`);
  assertEquals(anonymous.status, 401);
  assertEquals((await anonymous.json()).error.code, "FORGE_TOOL_UNAUTHORIZED");

  const query = await fetch(
    `${base}/tools/robot.demo/detect:invoke`,
    bearer("secret-a", { method: "POST", body: JSON.stringify({ arguments: { classes: ["a"] } }) }),
  );
  assertEquals(query.status, 200);
  assertEquals((await query.json()).data.response.result.status, "succeeded");

  const scrape = async () => {
    const response = await fetch(`${base}/metrics`, bearer("secret-b"));
    assertEquals(response.status, 200);
    assertEquals(response.headers.get("content-type"), service.metrics!.contentType);
    return samples(await response.text());
  };
  const after = await scrape();
  assertEquals(
    {
      forwarded: after.forge_gateway_forwarded_total,
      answered: after.forge_gateway_answered_total,
      events: after.forge_gateway_events_total,
      unavailable: after.forge_gateway_unavailable_total,
      unknown: after.forge_gateway_unknown_total,
      dropped: after.forge_gateway_dropped_total,
      refused: after.forge_gateway_refused_total,
      open: after.forge_gateway_open_executions,
      pending: after.forge_gateway_pending_exchanges,
      subscribers: after.forge_gateway_sse_subscribers,
      invokes:
        after['forge_gateway_exchange_duration_seconds_count{request_type="tool.invoke.request"}'],
    },
    {
      forwarded: 1,
      answered: 1,
      events: 0,
      unavailable: 0,
      unknown: 0,
      dropped: 0,
      refused: 0,
      open: 0,
      pending: 0,
      subscribers: 0,
      invokes: 1,
    },
  );

  // An Action with one SSE subscriber: the gauge reads the service at the scrape.
  const move = await fetch(
    `${base}/tools/robot.demo/move:invoke`,
    bearer("secret-a", { method: "POST", body: "{}" }),
  );
  assertEquals(move.status, 202);
  const invocation = (await move.json()).data;
  const events = await fetch(`${base}${invocation.links.events}`, bearer("secret-a"));
  assertEquals(events.status, 200);
  const reader = events.body!.getReader();
  await reader.read(); // the stream is attached
  assertEquals(service.handler.stats.subscribers, 1);
  assertEquals((await scrape()).forge_gateway_sse_subscribers, 1);
  await reader.cancel();
  await until(() => service.handler.stats.subscribers === 0, "the subscriber to go");
  assertEquals((await scrape()).forge_gateway_sse_subscribers, 0);
  const cancel = await fetch(
    `${base}${invocation.links.cancel}`,
    bearer("secret-a", {
      method: "POST",
      body: "{}",
    }),
  );
  assertEquals(cancel.status, 202);
  await cancel.body?.cancel();

  await service.close();
  await service.finished;
  await demo.stop();
  assertEquals(logs.filter((record) => record.level === "error"), []);
});

Deno.test("service: /mcp with the SDK client over Streamable HTTP, bearer tokens name the agent, and agents see only their own tasks", async () => {
  const demo = await startDemo();
  const service = serveToolGatewayService(demo.gateway, {
    port: 0,
    tokens: TOKENS,
    mcp: { definitions: [demo.definition], pollIntervalMs: 10 },
    metrics: { public: true },
    logger: () => {},
  });
  const base = `http://127.0.0.1:${service.addr.port}`;
  const url = new URL(`${base}/mcp`);
  // No token: 401 before the MCP transport sees the request; /metrics was made public.
  const anonymous = await fetch(url, { method: "POST", body: "{}" });
  assertEquals(anonymous.status, 401);
  await anonymous.body?.cancel();
  const publicMetrics = await fetch(`${base}/metrics`);
  assertEquals(publicMetrics.status, 200);
  await publicMetrics.body?.cancel();

  const connect = async (token: string) => {
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    const client = newClient();
    await client.connect(transport);
    return { client, transport };
  };
  const a = await connect("secret-a");
  const b = await connect("secret-b");
  assertEquals(service.mcp!.sessions, 2);
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

  const task = await startTask(a.client, "robot.demo.policy", { task: "patrol" });
  assertEquals(task.status, "working");
  const error = (await assertRejects(
    () => b.client.experimental.tasks.getTask(task.taskId),
    McpError,
  )) as McpError;
  assertEquals(error.code, -32602);
  assertEquals((await b.client.experimental.tasks.listTasks()).tasks, []);
  assertEquals(
    (await a.client.experimental.tasks.listTasks()).tasks.map((t: Task) => t.taskId),
    [task.taskId],
  );
  // The Tool API's invocation list is the HTTP store's: an MCP task is in neither agent's list
  // (each path keeps its own table; the router's ownership holds under both).
  for (const token of ["secret-a", "secret-b"]) {
    const listed = await fetch(`${base}/invocations`, bearer(token));
    assertEquals((await listed.json()).data.invocations, [], token);
  }

  const stopped = await a.client.experimental.tasks.cancelTask(task.taskId);
  assertEquals([stopped.status, stopped.statusMessage], ["cancelled", "result stopped"]);
  assertEquals(demo.handler.metrics.operations.policy.stopped, 1);

  // close() ends the open MCP sessions, then the server: nothing keeps it waiting.
  await service.close();
  await service.finished;
  assertEquals(service.mcp!.sessions, 0);
  await a.client.close();
  await b.client.close();
  await demo.stop();
});

Deno.test("service: the signal closes it; option errors name the option and show the value", async () => {
  const gateway = new ToolGateway({ routes: {}, logger: () => {} });
  const controller = new AbortController();
  const service = serveToolGatewayService(gateway, {
    port: 0,
    signal: controller.signal,
    logger: () => {},
  });
  const metrics = await fetch(`http://127.0.0.1:${service.addr.port}/metrics`);
  assertEquals(metrics.status, 200);
  await metrics.body?.cancel();
  controller.abort();
  await service.finished;
  assertThrows(
    () => serveToolGatewayService(gateway, { mcp: "yes" as unknown as boolean }),
    TypeError,
    "Cannot serve the gateway service as 'mcp' must be a boolean or MCP handler options: " +
      'current value is "yes"',
  );
  assertThrows(
    () => mcpRoute({} as never),
    TypeError,
    "Cannot mount the MCP route as 'mcp' must be an mcpHttpHandler(...) handler: current value " +
      "is [object Object]",
  );
  const gauge = gatewayMetrics(gateway);
  assertThrows(
    () => metricsRoute(gauge, { pathname: "metrics" }),
    TypeError,
    `Cannot mount the metrics route as 'pathname' must be a path starting with '/': current ` +
      `value is "metrics"`,
  );
  gauge.close();
  await gateway.close();
});

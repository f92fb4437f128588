import { assertEquals, assertRejects, assertThrows } from "@std/assert";
import {
  CallToolResultSchema,
  ListTasksResultSchema,
  McpError,
  type Task,
  type Tool,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  jsonSchema,
  ToolEndpointDescriptor,
  ToolOperationDescriptor,
} from "../../mod.ts";
import {
  EndpointStatus,
  makeEndpointStatusEnvelope,
  makeRegistrationEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
} from "../../wire.ts";
import { ToolGateway } from "../../gateway.ts";
import { createMcpServer, mcpToolName } from "../../mcp.ts";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { connect, newClient, startDemo, startTask, until } from "./_setup.ts";

const RESULT = "forge.tool/result_status";

/** assertRejects with the MCP error type. */
async function rejects(call: () => Promise<unknown>, type: typeof McpError): Promise<McpError> {
  return (await assertRejects(call, type)) as McpError;
}

Deno.test("mcp: tool names follow the MCP rule, deterministic, hashed only when needed", () => {
  assertEquals(mcpToolName("robot.demo", "detect"), "robot.demo.detect");
  const odd = mcpToolName("robot demo", "dé tect");
  assertEquals(/^robot_demo\.d_\_tect-[0-9a-f]{8}$/.test(odd), true);
  assertEquals(mcpToolName("robot demo", "dé tect"), odd);
  assertEquals(mcpToolName("robot_demo", "d__tect"), "robot_demo.d__tect");
  const long = mcpToolName("e".repeat(200), "op");
  assertEquals(long.length, 128);
  assertEquals(/^[A-Za-z0-9._-]{1,128}$/.test(long), true);
});

Deno.test("mcp: option errors name the option and show the value", async () => {
  const gateway = new ToolGateway({ routes: {} });
  assertThrows(
    () => createMcpServer(gateway, { callerId: "a", maxTasks: 0 }),
    RangeError,
    "Cannot create the MCP server as 'maxTasks' must be a positive integer: current value is 0",
  );
  assertThrows(
    () => createMcpServer(gateway, { callerId: " " }),
    TypeError,
    `Cannot create the MCP server as 'callerId' must be a non-blank string: current value is " "`,
  );
  await gateway.close();
});

Deno.test("mcp: tools/list is the Registry's operations, with schemas and task support", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const { tools } = await client.listTools();
  assertEquals(tools.map((tool: Tool) => [tool.name, tool.execution?.taskSupport]), [
    ["robot.demo.detect", "forbidden"],
    ["robot.demo.move", "optional"],
    ["robot.demo.policy", "optional"],
  ]);
  // `definitions: [demo.definition]`: each tool's description and schemas are the definition's.
  assertEquals(
    tools.map((tool: Tool) => [tool.description, tool.inputSchema, tool.outputSchema]),
    [
      [
        "Detects objects of the given classes in the camera image (Query).",
        { type: "object", properties: { classes: { type: "array", items: { type: "string" } } } },
        { type: "object", properties: { objects: { type: "array" } }, required: ["objects"] },
      ],
      [
        "Moves the arm to `target` in ten steps with progress; cancel stops it (Action).",
        { type: "object", properties: { target: { type: "string" } } },
        undefined,
      ],
      [
        "Runs a policy with heartbeats until stopped (Session).",
        { type: "object", properties: { task: { type: "string" } } },
        undefined,
      ],
    ],
  );
  assertEquals(tools[1]._meta?.["forge.tool/semantics"], "action");
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: without definitions or tools, a tool has the default description and schema", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1", { definitions: undefined });
  const { tools } = await client.listTools();
  assertEquals(tools.map((tool: Tool) => [tool.description, tool.inputSchema, tool.outputSchema]), [
    [
      "Query (answers at once): operation 'detect' of endpoint 'robot.demo'.",
      { type: "object" },
      undefined,
    ],
    [
      "Action (long-running, cancellable; run it as a task): operation 'move' of endpoint 'robot.demo'.",
      { type: "object" },
      undefined,
    ],
    [
      "Session (runs until stopped; run it as a task, cancel the task to stop it): operation 'policy' of endpoint 'robot.demo'.",
      { type: "object" },
      undefined,
    ],
  ]);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: tools wins over definitions field by field; object schemas only", async () => {
  const demo = await startDemo();
  // Another in-process definition of `robot.demo`, for its metadata only: a schema without
  // `type` gets `type: "object"`, an array schema is not an MCP object schema (the default).
  const definition = defineEndpoint({
    endpointId: "robot.demo",
    operations: {
      detect: defineQuery({
        description: "From the definition.",
        arguments: { properties: { classes: { type: "array" } } },
        outputs: jsonSchema({ type: "object", required: ["objects"] }),
      }, () => ({ objects: [] })),
      move: defineAction({
        description: "Move, from the definition.",
        arguments: jsonSchema({ type: "array" }),
        outputs: { type: ["object", "null"] },
      }, () => ({})),
    },
  });
  const { client, mcp } = await connect(demo, "agent-1", {
    definitions: [definition],
    tools: {
      "robot.demo": {
        detect: { description: "From tools." },
        move: { inputSchema: { type: "object", required: ["target"] } },
        policy: { outputSchema: { type: "object", required: ["ticks"] } },
      },
    },
  });
  const { tools } = await client.listTools();
  assertEquals(tools.map((tool: Tool) => [tool.description, tool.inputSchema, tool.outputSchema]), [
    [
      "From tools.",
      { type: "object", properties: { classes: { type: "array" } } },
      { type: "object", required: ["objects"] },
    ],
    ["Move, from the definition.", { type: "object", required: ["target"] }, undefined],
    [
      "Session (runs until stopped; run it as a task, cancel the task to stop it): operation 'policy' of endpoint 'robot.demo'.",
      { type: "object" },
      { type: "object", required: ["ticks"] },
    ],
  ]);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: definitions option errors name the option and show the value", async () => {
  const gateway = new ToolGateway({ routes: {} });
  const definition = defineEndpoint({
    endpointId: "arm",
    operations: { pose: defineQuery(() => ({})) },
  });
  assertThrows(
    () =>
      createMcpServer(gateway, {
        callerId: "a",
        definitions: "arm" as unknown as [],
      }),
    TypeError,
    `Cannot create the MCP server as 'definitions' must be an array of endpoint definitions: current value is "arm"`,
  );
  assertThrows(
    () => createMcpServer(gateway, { callerId: "a", definitions: [definition, definition] }),
    TypeError,
    `Cannot create the MCP server as 'definitions[1]' must be a definition of an endpoint id no other definition has: current value is "arm"`,
  );
  assertThrows(
    () =>
      createMcpServer(gateway, {
        callerId: "a",
        definitions: [{ descriptor: {} } as unknown as typeof definition],
      }),
    TypeError,
    "Cannot create the MCP server as 'definitions[0]' must be a definition from defineEndpoint: current value is [object Object]",
  );
  await gateway.close();
});

Deno.test("mcp: arguments no Forge message can carry are InvalidParams, for a Query and a task", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const cases: [Record<string, unknown>, string][] = [
    [{ n: 2 ** 60 }, "arguments.n integer exceeds interoperable range ±9007199254740991"],
    [{ label: "\ud800" }, "arguments.label must contain valid Unicode scalar values"],
  ];
  for (const [args, why] of cases) {
    for (const name of ["robot.demo.detect", "robot.demo.move"]) {
      const call = name === "robot.demo.detect"
        ? () => client.callTool({ name, arguments: args })
        : () => startTask(client, name, args);
      const error = await rejects(call, McpError);
      // An InternalError (-32603) before: the caller's mistake read as the server failing.
      assertEquals(error.code, -32602, `${name} ${why}`);
      // (The SDK prefixes "MCP error -32602: " once on each side.)
      assertEquals(
        error.message.endsWith(`: Invalid arguments for tool ${name}: ${why}`),
        true,
        error.message,
      );
    }
  }
  // Nothing was invoked: no task, and the endpoint saw no call.
  assertEquals(
    (await client.request({ method: "tasks/list", params: {} }, ListTasksResultSchema)).tasks,
    [],
  );
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: a tools/call whose params break the MCP schema is InvalidParams", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const cases: Record<string, unknown>[] = [
    { name: "robot.demo.detect", arguments: [] },
    { name: "robot.demo.detect", arguments: "x" },
    { name: 5, arguments: {} },
    { name: "robot.demo.move", arguments: {}, task: { ttl: "soon" } },
  ];
  for (const params of cases) {
    const error = await rejects(
      () => client.request({ method: "tools/call", params } as never, CallToolResultSchema),
      McpError,
    );
    // -32603 (InternalError, zod's issues as the message) before: the SDK's request parse ran
    // before the Server's own tools/call check.
    assertEquals(error.code, -32602, JSON.stringify(params));
    assertEquals(error.message.includes("Invalid tools/call request"), true, error.message);
  }
  // A well-formed call still works.
  const result = await client.callTool({ name: "robot.demo.detect", arguments: {} });
  assertEquals(result.isError, undefined);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: a Query is tools/call with structuredContent and a text block", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const result = await client.callTool({
    name: "robot.demo.detect",
    arguments: { classes: ["cube"] },
  });
  const outputs = { objects: [{ class: "cube", score: 0.9, box: [0, 20, 32, 32] }] };
  assertEquals(result.structuredContent, outputs);
  assertEquals(result.content, [{
    type: "text",
    text: '{"objects":[{"box":[0,20,32,32],"class":"cube","score":0.9}]}',
  }]);
  assertEquals(result.isError, undefined);
  assertEquals(result._meta?.[RESULT], "succeeded");
  // Arguments the endpoint's schema refuses: the ToolError as isError.
  const refused = await client.callTool({ name: "robot.demo.detect", arguments: { classes: 3 } });
  assertEquals(refused.isError, true);
  const text = (refused.content as { text: string }[])[0].text;
  assertEquals(text.startsWith("The endpoint rejected the call: "), true);
  assertEquals(JSON.parse(text.slice(text.indexOf("{"))).code, "FORGE_ENDPOINT_INVALID_ARGUMENTS");
  // An unknown tool is the SDK's InvalidParams error.
  const unknown = await rejects(
    () => client.callTool({ name: "robot.demo.nope", arguments: {} }),
    McpError,
  );
  assertEquals(unknown.code, -32602);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: an Action runs as a task: working with progress, then completed", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const task = await startTask(client, "robot.demo.move", { target: "home" });
  assertEquals(task.status, "working");
  assertEquals(task.ttl, 3_600_000);
  assertEquals(task.pollInterval, 10);
  const messages = new Set<string>();
  await until(async () => {
    const got = await client.experimental.tasks.getTask(task.taskId);
    if (got.statusMessage !== undefined) messages.add(got.statusMessage);
    return got.status === "completed";
  }, "the move task to complete");
  // Polling sees some of the progress events (which ones depends on timing), then the result.
  const seen = [...messages];
  assertEquals(
    seen.every((m) => /^progress \{"fraction":(0|0\.\d|1)\}$|^result succeeded$/.test(m)),
    true,
  );
  assertEquals(seen.includes("result succeeded"), true);
  const done = await client.experimental.tasks.getTask(task.taskId);
  assertEquals([done.status, done.statusMessage], ["completed", "result succeeded"]);
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assertEquals(result.structuredContent, { pose: "home" });
  assertEquals(result._meta?.[RESULT], "succeeded");
  const listed = await client.experimental.tasks.listTasks();
  assertEquals(listed.tasks.map((t: Task) => [t.taskId, t.status]), [[task.taskId, "completed"]]);
  assertEquals(demo.handler.metrics.operations.move.succeeded, 1);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: tasks/cancel sends cancel to an Action; the task ends cancelled", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const task = await startTask(client, "robot.demo.move", { target: "shelf" });
  await until(
    async () =>
      (await client.experimental.tasks.getTask(task.taskId)).statusMessage?.startsWith(
        "progress",
      ) === true,
    "a progress statusMessage",
  );
  const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
  assertEquals([cancelled.status, cancelled.statusMessage], ["cancelled", "result cancelled"]);
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assertEquals(result._meta?.[RESULT], "cancelled");
  assertEquals(result.isError, undefined);
  assertEquals(demo.handler.metrics.operations.move.cancelled, 1);
  // A terminal task cannot be cancelled again (the SDK's InvalidParams).
  const again = await rejects(
    () => client.experimental.tasks.cancelTask(task.taskId),
    McpError,
  );
  assertEquals(again.code, -32602);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: a Session runs as a task with heartbeats; tasks/cancel stops it", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const task = await startTask(client, "robot.demo.policy", { task: "sort" });
  await until(
    async () =>
      (await client.experimental.tasks.getTask(task.taskId)).statusMessage?.startsWith(
        "heartbeat",
      ) === true,
    "a heartbeat statusMessage",
  );
  const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
  assertEquals([cancelled.status, cancelled.statusMessage], ["cancelled", "result stopped"]);
  const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  assertEquals(result._meta?.[RESULT], "stopped");
  assertEquals(demo.handler.metrics.operations.policy.stopped, 1);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: a blocking Action call sends notifications/progress for a progress token", async () => {
  const demo = await startDemo(5);
  const { client, mcp } = await connect(demo, "agent-1");
  const progress: [number, string | undefined][] = [];
  const result = await client.callTool(
    { name: "robot.demo.move", arguments: { target: "bin" } },
    undefined,
    {
      onprogress: (p: { progress: number; message?: string }) =>
        void progress.push([p.progress, p.message]),
    },
  );
  assertEquals(result.structuredContent, { pose: "bin" });
  assertEquals(progress.length, 11);
  assertEquals(progress[0], [1, 'progress {"fraction":0}']);
  assertEquals(progress[10], [11, 'progress {"fraction":1}']);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: notifications/cancelled of a blocking call sends cancel to the Action", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  const controller = new AbortController();
  const call = client.callTool(
    { name: "robot.demo.move", arguments: { target: "far" } },
    undefined,
    { signal: controller.signal, onprogress: () => controller.abort("operator") },
  );
  await assertRejects(() => call);
  await until(() => demo.handler.metrics.operations.move.cancelled === 1, "the cancel");
  assertEquals(demo.handler.metrics.operations.move.succeeded, 0);
  await client.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: a client disconnect mid-call cancels a blocking call; tasks go on", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  // The demo's move runs one at a time: the task is a Session.
  const task = await startTask(client, "robot.demo.policy", { task: "go on" });
  let progressed = false;
  const call = client.callTool(
    { name: "robot.demo.move", arguments: { target: "blocking" } },
    undefined,
    { onprogress: () => void (progressed = true) },
  );
  call.catch(() => {});
  await until(() => progressed, "the blocking call's first progress");
  await client.close();
  await until(() => demo.handler.metrics.operations.move.cancelled === 1, "the cancel");
  assertEquals(demo.handler.metrics.operations.move.succeeded, 0);
  assertEquals(demo.handler.metrics.operations.policy.stopped, 0);
  // The task is not tied to the connection: the agent reconnects and still holds it.
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverTransport);
  const again = newClient();
  await again.connect(clientTransport);
  assertEquals((await again.experimental.tasks.getTask(task.taskId)).status, "working");
  const ended = await again.experimental.tasks.cancelTask(task.taskId);
  assertEquals([ended.status, ended.statusMessage], ["cancelled", "result stopped"]);
  await again.close();
  await mcp.close();
  await demo.stop();
});

Deno.test("mcp: a Registry change sends notifications/tools/list_changed", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1");
  let changed = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
  assertEquals((await client.listTools()).tools.length, 3);
  await demo.stop(); // the endpoint node unregisters
  await until(() => changed === 1, "list_changed");
  assertEquals((await client.listTools()).tools, []);
  await client.close();
  await mcp.close();
});

Deno.test("mcp: each Registry change sends one list_changed at once; a renewal or a state report sends none", async () => {
  const gateway = new ToolGateway({ routes: { arm: "robot.arm" }, logger: () => {} });
  gateway.attachRoute("arm", () => {});
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "robot.arm",
    operations: [new ToolOperationDescriptor({ name: "pose", semantics: "query" })],
  });
  const register = (requestId: string) =>
    gateway.receive(
      "arm",
      makeRegistrationEnvelope(descriptor, { endpointInstanceId: "arm-1", requestId }),
    );
  const mcp = createMcpServer(gateway, { callerId: "agent-1", logger: () => {} });
  assertEquals(gateway.registryWatchers, 1);
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await mcp.server.connect(serverTransport);
  const client = newClient();
  await client.connect(clientTransport);
  let changed = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
  // One round trip after each step: the notification, sent when the change happens, is ahead.
  register("register-1");
  await client.ping();
  assertEquals(changed, 1);
  assertEquals((await client.listTools()).tools.map((tool: Tool) => tool.name), ["robot.arm.pose"]);
  register("register-2"); // a lease renewal: no Registry change
  gateway.receive(
    "arm",
    makeEndpointStatusEnvelope(
      new EndpointStatus({ endpointId: "robot.arm", state: "busy", activeInvocations: 1 }),
      { endpointInstanceId: "arm-1" },
    ),
  );
  await client.ping();
  assertEquals(changed, 1);
  gateway.receive(
    "arm",
    makeUnregisterEnvelope({
      endpointId: "robot.arm",
      endpointInstanceId: "arm-1",
      requestId: "unregister-1",
    }),
  );
  await client.ping();
  assertEquals(changed, 2);
  assertEquals((await client.listTools()).tools, []);
  await client.close();
  await mcp.close();
  assertEquals(gateway.registryWatchers, 0);
  await gateway.close();
});

Deno.test("mcp: two callers never see each other's tasks", async () => {
  const demo = await startDemo();
  const a = await connect(demo, "agent-a");
  const b = await connect(demo, "agent-b");
  const task = await startTask(a.client, "robot.demo.policy", {});
  const tasksB = b.client.experimental.tasks;
  for (
    const call of [
      () => tasksB.getTask(task.taskId),
      () => tasksB.getTaskResult(task.taskId, CallToolResultSchema),
      () => tasksB.cancelTask(task.taskId),
    ]
  ) {
    const error = await rejects(call, McpError);
    assertEquals(error.code, -32602);
  }
  assertEquals((await tasksB.listTasks()).tasks, []);
  assertEquals((await a.client.experimental.tasks.listTasks()).tasks.length, 1);
  assertEquals((await a.client.experimental.tasks.cancelTask(task.taskId)).status, "cancelled");
  await a.client.close();
  await b.client.close();
  await a.mcp.close();
  await b.mcp.close();
  await demo.stop();
});

Deno.test("mcp: the task table is bounded: a full table of working tasks refuses a new one", async () => {
  const demo = await startDemo();
  const { client, mcp } = await connect(demo, "agent-1", { maxTasks: 1 });
  const first = await startTask(client, "robot.demo.policy", {});
  const error = await rejects(() => startTask(client, "robot.demo.policy", {}), McpError);
  assertEquals(error.code, -32600);
  assertEquals(
    error.message,
    "MCP error -32600: MCP error -32600: Cannot create a task as 1 tasks of this caller are working ('maxTasks'); " +
      "wait for one to finish or cancel one",
  );
  assertEquals(demo.handler.metrics.operations.policy.admitted, 1);
  await client.experimental.tasks.cancelTask(first.taskId);
  // A finished task is evicted for a new one.
  const second = await startTask(client, "robot.demo.policy", {});
  assertEquals((await client.experimental.tasks.listTasks()).tasks.map((t: Task) => t.taskId), [
    second.taskId,
  ]);
  await client.experimental.tasks.cancelTask(second.taskId);
  await client.close();
  await mcp.close();
  await demo.stop();
});

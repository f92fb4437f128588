// The MCP server under bad JSON-RPC: sequences of up to eight messages to a fresh server over an
// in-memory transport (which hands every message over as sent): requests of every method the
// server knows and some it does not, with params of the right shape and of every wrong one (a
// `taskId`, `cursor`, `name`, `arguments` or `task` of another type, params that are no object),
// notifications, beside valid Queries and Action and Session tasks of the demo endpoint, whose
// task ids later requests address.
//
// Invariant: the server answers every request that has an id (a string or a number) exactly once,
// with that id, and never as its own failure (no -32603 Internal error); it answers no
// notification and no id it was never sent. (A `tasks/result` of a real task, and a blocking
// `tools/call` of the Session, wait for the Session's end, which it never reaches unstopped:
// those are answered at most once.) Once the server closed, nothing it started runs on: the
// endpoint's executions have all ended.
import fc from "fast-check";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { createMcpServer } from "../../mcp.ts";
import { startDemoGateway } from "../../examples/mcp_demo.ts";
import { type AnyTarget, type FuzzTarget, invariant, tick } from "./_common.ts";

/** Stands for the task id of the last task the scenario created (or an unknown one). */
const LAST_TASK = "{last-task}";
/** The id {@linkcode LAST_TASK} becomes before any task was created: no task has it. */
const NO_TASK = "nope";

/** One message of a scenario: its method, params (or none) and whether it carries an id. */
export interface McpMessage {
  readonly method: string;
  /** `undefined`: no params member. */
  readonly params: unknown;
  /** "number" or "string": a request with an id of that type; "none": a notification. */
  readonly id: "number" | "string" | "none";
}

const wrongValue: fc.Arbitrary<unknown> = fc.constantFrom(5, -1, 1.5, true, null, [], {}, "", [1]);

const taskIdArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(LAST_TASK, NO_TASK),
  wrongValue,
);

const argumentsArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom({}, { classes: ["cube"] }, { target: "shelf" }, { task: "sort" }),
  wrongValue,
  fc.constant({ n: 2 ** 60 }),
);

const toolNameArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom("robot.demo.detect", "robot.demo.move", "robot.demo.policy", "robot.demo.nope"),
  wrongValue,
);

/** Params for `method`: well formed, with one member of a wrong type, or no object at all. */
function paramsArb(method: string): fc.Arbitrary<unknown> {
  const notAnObject = fc.constantFrom("x", [1], 5, null);
  switch (method) {
    case "tasks/get":
    case "tasks/result":
    case "tasks/cancel":
      return fc.oneof(
        fc.record({ taskId: taskIdArb }),
        fc.constant({}),
        notAnObject,
      );
    case "tasks/list":
    case "tools/list":
      return fc.oneof(fc.constant(undefined), fc.record({ cursor: wrongValue }), notAnObject);
    case "tools/call":
      return fc.oneof(
        fc.record(
          {
            name: toolNameArb,
            arguments: argumentsArb,
            task: fc.oneof(fc.constant({}), fc.record({ ttl: wrongValue })),
          },
          { requiredKeys: ["name"] },
        ),
        notAnObject,
      );
    case "initialize":
      return fc.oneof(
        fc.record({ protocolVersion: wrongValue, capabilities: fc.constant({}) }),
        notAnObject,
      );
    default:
      return fc.oneof(fc.constant(undefined), fc.constant({}), notAnObject);
  }
}

const METHODS = [
  "tools/call",
  "tools/call",
  "tools/list",
  "tasks/get",
  "tasks/result",
  "tasks/list",
  "tasks/cancel",
  "ping",
  "initialize",
  "resources/list",
  "no/such/method",
] as const;

const messageArb: fc.Arbitrary<McpMessage> = fc.constantFrom(...METHODS).chain((method) =>
  fc.record({
    method: fc.constant(method),
    params: paramsArb(method),
    id: fc.constantFrom("number", "string", "string", "none") as fc.Arbitrary<
      McpMessage["id"]
    >,
  })
);

/** A valid task start of the demo's Action or Session, whose task id later messages address. */
const taskStartArb: fc.Arbitrary<McpMessage> = fc.constantFrom(
  {
    method: "tools/call",
    params: { name: "robot.demo.move", arguments: { target: "shelf" }, task: {} },
    id: "number" as const,
  },
  {
    method: "tools/call",
    params: { name: "robot.demo.policy", arguments: { task: "sort" }, task: {} },
    id: "string" as const,
  },
);

/** One to eight messages; the first often starts a task the others can address. */
export function mcpScenarioArb(): fc.Arbitrary<readonly McpMessage[]> {
  return fc.tuple(
    fc.option(taskStartArb, { nil: undefined }),
    fc.array(messageArb, { minLength: 1, maxLength: 7 }),
  ).map(([first, rest]) => (first === undefined ? rest : [first, ...rest]));
}

/** True for a request that may wait for a Session's end (see the invariant above). */
function waitsForSession(message: McpMessage, sentParams: unknown, lastTask: string): boolean {
  // Only a real task's result waits: NO_TASK (no task yet) is answered "not found" at once.
  if (message.method === "tasks/result") {
    return sentParams !== message.params && lastTask !== NO_TASK;
  }
  const params = message.params as { name?: unknown; task?: unknown } | null;
  return message.method === "tools/call" && typeof params === "object" && params !== null &&
    params.name === "robot.demo.policy" && params.task === undefined;
}

function withTask(params: unknown, taskId: string): unknown {
  if (typeof params !== "object" || params === null || Array.isArray(params)) return params;
  const record = params as Record<string, unknown>;
  return record.taskId === LAST_TASK ? { ...record, taskId } : params;
}

/** Runs one scenario against a fresh server and checks the invariant. */
async function runScenario(
  scenario: readonly McpMessage[],
  counters: Record<string, number>,
): Promise<void> {
  const demo = await startDemoGateway({ stepMs: 1 });
  const mcp = createMcpServer(demo.gateway, {
    callerId: "agent-1",
    definitions: [demo.definition],
    pollIntervalMs: 5,
    logger: () => {},
  });
  const [client, server] = InMemoryTransport.createLinkedPair();
  const answers = new Map<string | number, JSONRPCMessage[]>();
  const unexpected: JSONRPCMessage[] = [];
  client.onmessage = (message: JSONRPCMessage) => {
    const id = (message as { id?: unknown }).id;
    if ("method" in message) return; // the server's own notifications and requests
    if (typeof id === "string" || typeof id === "number") {
      answers.set(id, [...(answers.get(id) ?? []), message]);
    } else unexpected.push(message);
  };
  let lastTask = NO_TASK;
  try {
    await mcp.server.connect(server);
    await client.start();
    await client.send({
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: { tasks: { list: {}, cancel: {} } },
        clientInfo: { name: "fuzz", version: "1" },
      },
    });
    await client.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const sent: (string | number)[] = [];
    const mayWait = new Set<string | number>();
    for (const [index, message] of scenario.entries()) {
      const id = message.id === "none" ? undefined : message.id === "number" ? index : `m-${index}`;
      const raw: Record<string, unknown> = { jsonrpc: "2.0", method: message.method };
      if (id !== undefined) raw.id = id;
      if (message.params !== undefined) raw.params = withTask(message.params, lastTask);
      await client.send(raw as JSONRPCMessage);
      if (id === undefined) continue;
      sent.push(id);
      if (waitsForSession(message, raw.params, lastTask)) {
        mayWait.add(id);
        continue;
      }
      // Let the request run (a task start answers once the endpoint accepted).
      for (let turn = 0; turn < 400 && !answers.has(id); turn++) await tick();
      const answer = answers.get(id)?.[0] as { result?: { task?: { taskId?: unknown } } };
      const taskId = answer?.result?.task?.taskId;
      if (typeof taskId === "string") lastTask = taskId;
    }
    const owed = sent.filter((id) => !mayWait.has(id));
    for (let turn = 0; turn < 2000 && owed.some((id) => !answers.has(id)); turn++) await tick();
    for (const id of sent) {
      const got = answers.get(id) ?? [];
      if (mayWait.has(id) && got.length === 0) {
        counters["waits for the Session pending"] =
          (counters["waits for the Session pending"] ?? 0) + 1;
        continue;
      }
      const what = () => {
        const message = scenario[typeof id === "number" ? id : Number(id.slice(2))];
        return `${message.method} ${JSON.stringify(message.params)} (id ${JSON.stringify(id)})`;
      };
      invariant(got.length === 1, () => `${what()} was answered ${got.length} times`);
      const error = (got[0] as { error?: { code?: unknown } }).error;
      const kind = error === undefined ? "answered with a result" : `answered ${error.code}`;
      counters[kind] = (counters[kind] ?? 0) + 1;
      invariant(error?.code !== -32603, () => `${what()} was answered as an internal error`);
    }
    const extra = [...answers.keys()].filter((id) => id !== "init" && !sent.includes(id));
    invariant(extra.length === 0, () => `answers to ids never sent: ${extra.join(", ")}`);
    invariant(
      unexpected.length === 0,
      () => `answers without an id: ${JSON.stringify(unexpected)}`,
    );
  } finally {
    await client.close();
    await mcp.close();
  }
  try {
    const running = () => demo.handler.state.activeInvocations;
    for (let turn = 0; turn < 1000 && running() > 0; turn++) await tick();
    invariant(
      running() === 0,
      () => `${running()} executions still run after the MCP server closed`,
    );
  } finally {
    await demo.stop();
  }
}

/** The MCP server under bad JSON-RPC. */
export const mcpRequestsTarget: FuzzTarget<readonly McpMessage[]> = {
  name: "mcp_requests",
  arbitrary: mcpScenarioArb,
  check: runScenario,
  async: true,
  batchSize: 50,
  timeBoundMs: 5000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [mcpRequestsTarget];

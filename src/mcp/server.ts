/**
 * The MCP server of one caller over a {@linkcode ToolGateway}: every operation of every endpoint
 * in the gateway's Registry is an MCP tool; a Query is a plain `tools/call`, an Action or Session
 * runs as an MCP task (or as a blocking call for a client that does not use tasks).
 *
 * @module
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  type CreateTaskResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Task,
} from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { ToolCallError, ToolClientError } from "../client/errors.ts";
import type { ToolInvocation } from "../client/client.ts";
import type { ToolResult } from "../endpoint/outcomes.ts";
import { consoleLogger, logSafely, type ToolLogger } from "../endpoint/log.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { checkedJsonObject } from "../_internal/fields.ts";
import { ToolGateway } from "../gateway/gateway.ts";
import type { ToolEndpointDefinition } from "../provider/endpoint.ts";
import { McpCaller } from "./_caller.ts";
import { guardOnConnect } from "./_requests.ts";
import { toolEntries, type ToolEntry } from "./_names.ts";
import {
  callToolResult,
  eventMessage,
  rejectedResult,
  terminalTaskStatus,
  toolErrorJson,
} from "./_results.ts";

/** What MCP shows of one operation beyond its descriptor (the descriptor has no schemas). */
export interface McpToolMetadata {
  /** The tool description. @default {a sentence naming the semantics, operation and endpoint} */
  readonly description?: string;
  /** The JSON Schema of the arguments (an object schema). @default {{ type: "object" }} */
  readonly inputSchema?: Readonly<Record<string, unknown>>;
  /** The JSON Schema of a succeeded result's outputs; omitted when not given. */
  readonly outputSchema?: Readonly<Record<string, unknown>>;
}

/** Options shared by {@linkcode createMcpServer} and `mcpHttpHandler`. */
export interface McpServerSettings {
  /**
   * Endpoints defined in this process (`defineEndpoint`): for the endpoint id of each, every
   * operation's tool takes its `description`, `inputSchema` (`argumentsJsonSchema`) and
   * `outputSchema` (`outputsJsonSchema`) from the definition, where it has them. A schema whose
   * `type` is absent gets `type: "object"`; one of another type is not used (MCP schemas are
   * object schemas). Two definitions of one endpoint id are refused. @default {[]}
   */
  readonly definitions?: readonly ToolEndpointDefinition[];
  /**
   * Descriptions and schemas by endpoint id, then operation name, written by hand: for endpoints
   * defined elsewhere, or to override a definition. Field by field, what `tools` gives wins over
   * what `definitions` give, which wins over the default. @default {{}}
   */
  readonly tools?: Readonly<Record<string, Readonly<Record<string, McpToolMetadata>>>>;
  /** The most tasks one caller holds (working and finished). @default {256} */
  readonly maxTasks?: number;
  /**
   * How long a finished task (and its result) stays, in ms; the task's `ttl` (a client may ask
   * for less). @default {3600000}
   */
  readonly retentionMs?: number;
  /** The `pollInterval` suggested to clients, in ms. @default {100} */
  readonly pollIntervalMs?: number;
  /**
   * How long `tasks/cancel` waits for the endpoint's result after cancel/stop was accepted, in
   * ms; past it the answer shows the task still `working`. @default {10000}
   */
  readonly cancelWaitMs?: number;
  /** The attempt timeout of the gateway clients' exchanges, in ms. @default {5000} */
  readonly timeoutMs?: number;
  /** The server name and version in `initialize`. @default {{ name: "forge-tool", version: "0.3.0" }} */
  readonly serverInfo?: { readonly name: string; readonly version: string };
  /** Where failures of background task followers go. @default {consoleLogger} */
  readonly logger?: ToolLogger;
}

/** Options of {@linkcode createMcpServer}. */
export interface McpServerOptions extends McpServerSettings {
  /** Who calls: every invocation carries it, and the tasks are this caller's alone. */
  readonly callerId: string;
}

/** A running MCP server of one caller: connect it to one MCP transport. */
export interface ForgeMcpServer {
  /** The SDK server; `await mcp.server.connect(transport)`. */
  readonly server: Server;
  /** The caller id. */
  readonly callerId: string;
  /** Tasks this caller holds now. */
  readonly tasks: number;
  /**
   * Closes the server. A server from `createMcpServer` also closes its caller: each task still
   * working is ended first (cancel for an Action, stop for a Session; each waits at most
   * `cancelWaitMs` for the endpoint's result), since no one could reach it once its table is
   * gone, then the tasks are forgotten.
   */
  close(): Promise<void>;
}

const CREATE = "create the MCP server";

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Checked settings. */
export interface CheckedSettings {
  readonly tools: Readonly<Record<string, Readonly<Record<string, McpToolMetadata>>>>;
  readonly maxTasks: number;
  readonly retentionMs: number;
  readonly pollIntervalMs: number;
  readonly cancelWaitMs: number;
  readonly timeoutMs: number | undefined;
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly logger: ToolLogger;
}

/** Checks the shared settings; errors name the option and show the value received. */
export function checkSettings(action: string, options: McpServerSettings): CheckedSettings {
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage(action, "options", "an object", options));
  }
  const tools = options.tools ?? {};
  if (tools === null || typeof tools !== "object") {
    throw new TypeError(optionMessage(action, "tools", "an object", tools));
  }
  return {
    tools: withDefinitions(action, options.definitions, tools),
    maxTasks: positiveIntegerOption(action, "maxTasks", options.maxTasks, 256),
    retentionMs: positiveIntegerOption(action, "retentionMs", options.retentionMs, 3_600_000),
    pollIntervalMs: positiveIntegerOption(action, "pollIntervalMs", options.pollIntervalMs, 100),
    cancelWaitMs: positiveIntegerOption(action, "cancelWaitMs", options.cancelWaitMs, 10_000),
    timeoutMs: options.timeoutMs === undefined
      ? undefined
      : positiveIntegerOption(action, "timeoutMs", options.timeoutMs, 5000),
    serverInfo: options.serverInfo ?? { name: "forge-tool", version: "0.3.0" },
    logger: optionalFunction<ToolLogger>(action, "logger", options.logger) ?? consoleLogger,
  };
}

type ToolsMetadata = Readonly<Record<string, Readonly<Record<string, McpToolMetadata>>>>;

/** `tools` completed from `definitions`, field by field (`tools` first). */
function withDefinitions(
  action: string,
  definitions: unknown,
  tools: ToolsMetadata,
): ToolsMetadata {
  if (definitions === undefined) return tools;
  if (!Array.isArray(definitions)) {
    throw new TypeError(
      optionMessage(action, "definitions", "an array of endpoint definitions", definitions),
    );
  }
  const merged: Record<string, Record<string, McpToolMetadata>> = {};
  definitions.forEach((definition: unknown, index) => {
    const candidate = definition as Partial<ToolEndpointDefinition> | null;
    const endpointId = candidate?.descriptor?.endpointId;
    if (
      typeof candidate !== "object" || candidate === null || typeof endpointId !== "string" ||
      typeof candidate.definitions !== "object" || candidate.definitions === null
    ) {
      throw new TypeError(
        optionMessage(
          action,
          `definitions[${index}]`,
          "a definition from defineEndpoint",
          definition,
        ),
      );
    }
    if (Object.hasOwn(merged, endpointId)) {
      throw new TypeError(
        optionMessage(
          action,
          `definitions[${index}]`,
          "a definition of an endpoint id no other definition has",
          endpointId,
        ),
      );
    }
    const operations: Record<string, McpToolMetadata> = {};
    for (const [name, operation] of Object.entries(candidate.definitions)) {
      const inputSchema = objectSchema(operation?.argumentsJsonSchema);
      const outputSchema = objectSchema(operation?.outputsJsonSchema);
      operations[name] = {
        ...(typeof operation?.description === "string"
          ? { description: operation.description }
          : {}),
        ...(inputSchema === undefined ? {} : { inputSchema }),
        ...(outputSchema === undefined ? {} : { outputSchema }),
      };
    }
    merged[endpointId] = operations;
  });
  for (const [endpointId, operations] of Object.entries(tools)) {
    const defined = merged[endpointId] ??= {};
    for (const [name, meta] of Object.entries(operations ?? {})) {
      const from = defined[name] ?? {};
      defined[name] = {
        description: meta?.description ?? from.description,
        inputSchema: meta?.inputSchema ?? from.inputSchema,
        outputSchema: meta?.outputSchema ?? from.outputSchema,
      };
    }
  }
  return merged;
}

/** A JSON Schema as an MCP object schema: `type: "object"` added when absent, else as it is. */
function objectSchema(schema: unknown): Readonly<Record<string, unknown>> | undefined {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return undefined;
  const type = (schema as { type?: unknown }).type;
  if (type === undefined) return { type: "object", ...schema };
  return type === "object" ? schema as Readonly<Record<string, unknown>> : undefined;
}

/** Checks a caller id option. */
export function checkCallerId(action: string, callerId: unknown): string {
  if (typeof callerId !== "string" || callerId.trim() === "") {
    throw new TypeError(optionMessage(action, "callerId", "a non-blank string", callerId));
  }
  return callerId;
}

/**
 * Creates the MCP server of `options.callerId` over `gateway`: its own gateway transport and its
 * own task table (bounded by `maxTasks` and `retentionMs`). Connect it to one transport (stdio,
 * in-memory, or a streamable HTTP transport per session).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway } from "@forge/tool/gateway";
 * import { createMcpServer } from "@forge/tool/mcp";
 * const gateway = new ToolGateway({ routes: {} });
 * const mcp = createMcpServer(gateway, { callerId: "agent-1" });
 * assertEquals(mcp.callerId, "agent-1");
 * assertEquals(mcp.tasks, 0);
 * await mcp.close();
 * await gateway.close();
 * ```
 */
export function createMcpServer(gateway: ToolGateway, options: McpServerOptions): ForgeMcpServer {
  if (!(gateway instanceof ToolGateway)) {
    throw new TypeError(optionMessage(CREATE, "gateway", "a ToolGateway", gateway));
  }
  const settings = checkSettings(CREATE, options);
  const callerId = checkCallerId(CREATE, options.callerId);
  const caller = new McpCaller(gateway, { ...settings, callerId });
  return serveCaller(gateway, caller, settings, true);
}

/** A server for `caller` (several may share one caller: one per HTTP session). */
export function serveCaller(
  gateway: ToolGateway,
  caller: McpCaller,
  settings: CheckedSettings,
  ownsCaller: boolean,
): ForgeMcpServer {
  const server = new Server(settings.serverInfo, {
    capabilities: {
      tools: { listChanged: true },
      tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
    },
    taskStore: caller.tasks,
    defaultTaskPollInterval: settings.pollIntervalMs,
  });
  guardOnConnect(server);
  const currentTools = (): Map<string, ToolEntry> => {
    gateway.registry.expire();
    return toolEntries(gateway.registry.records(), settings.tools);
  };
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [...currentTools().values()].map((entry) => entry.tool),
  }));
  server.setRequestHandler(CALL_TOOL_METHOD, (raw: unknown, extra: Extra): Promise<
    CallToolResult | CreateTaskResult
  > => {
    // The SDK Server's own tools/call check validated it against CallToolRequestSchema.
    const request = raw as unknown as CallToolRequest;
    const entry = currentTools().get(request.params.name);
    if (entry === undefined) {
      throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    }
    const args = checkedArguments(entry.name, request.params.arguments ?? {});
    const client = caller.client(entry.endpointId);
    const callOptions = { callerId: caller.settings.callerId };
    if (entry.semantics === "query") {
      if (request.params.task !== undefined) {
        throw new McpError(
          ErrorCode.InvalidParams,
          `Tool ${entry.name} is a Query: it answers at once and does not run as a task`,
        );
      }
      return client.query(entry.operation, args, { ...callOptions, signal: extra.signal })
        .then(callToolResult, failedCall);
    }
    if (request.params.task !== undefined) {
      return startTask(entry, args, request.params.task, request, extra.requestId);
    }
    return blockingCall(entry, args, extra);
  });

  // --- Actions and Sessions -------------------------------------------------------------------

  const end = (entry: ToolEntry, invocation: ToolInvocation, reason: string) =>
    entry.semantics === "session" ? invocation.stop(reason) : invocation.cancel(reason);

  async function startTask(
    entry: ToolEntry,
    args: Record<string, unknown>,
    params: { ttl?: number },
    request: CallToolRequest,
    requestId: Extra["requestId"],
  ): Promise<CreateTaskResult> {
    const release = caller.tasks.reserve();
    let task: CreateTaskResult["task"] | undefined;
    try {
      // Tracked until the task holds its cancel hook: a close() meanwhile waits for it, then
      // ends the task with the others (or, closed before, the start ends what it started).
      task = await caller.trackStart((async () => {
        const invocation = await caller.client(entry.endpointId).invoke(entry.operation, args, {
          callerId: caller.settings.callerId,
        });
        release();
        if (caller.closed) {
          await end(entry, invocation, "the MCP server closed before the task was created")
            .catch(() => undefined);
          return undefined;
        }
        let created;
        try {
          created = await caller.tasks.createTask(params, requestId, request);
        } catch (error) {
          await end(entry, invocation, "its MCP task could not be created").catch(() => undefined);
          throw error;
        }
        follow(entry, invocation, created.taskId);
        return created;
      })());
    } catch (error) {
      release();
      if (error instanceof McpError) throw error;
      if (error instanceof ToolCallError) {
        throw new McpError(
          ErrorCode.InvalidParams,
          `The endpoint rejected the call: ${error.error.code}: ${error.error.message}`,
          { error: toolErrorJson(error.error) },
        );
      }
      throw new McpError(ErrorCode.InternalError, `The call failed: ${error}`);
    }
    if (task === undefined) throw new McpError(ErrorCode.InvalidRequest, "the MCP server closed");
    return { task };
  }

  /** Follows a task's invocation: events as `statusMessage`, the terminal result at the end. */
  function follow(entry: ToolEntry, invocation: ToolInvocation, taskId: string): void {
    const { promise: ended, resolve: markEnded } = Promise.withResolvers<void>();
    caller.tasks.setCancel(taskId, async (reason) => {
      let answer;
      try {
        answer = await end(entry, invocation, reason);
      } catch (error) {
        caller.tasks.update(taskId, "working", `${cancelWord(entry)} failed: ${error}`);
        return;
      }
      if (answer.status !== "accepted") {
        const why = answer.error === undefined
          ? ""
          : `: ${answer.error.code}: ${answer.error.message}`;
        caller.tasks.update(taskId, "working", `${answer.command} ${answer.status}${why}`);
        return;
      }
      caller.tasks.update(taskId, "working", `${answer.command} accepted; waiting for the result`);
      let timer: LongTimeout | undefined;
      await Promise.race([
        ended,
        new Promise<void>((resolve) => timer = setLongTimeout(resolve, settings.cancelWaitMs)),
      ]);
      timer?.clear();
    });
    (async () => {
      try {
        for await (const { event } of invocation.events) {
          if (event.type === "progress" || event.type === "heartbeat") {
            caller.tasks.update(taskId, "working", eventMessage(event));
          }
        }
      } catch {
        // The stream ended early (a gap, a timeout): the result below still decides.
      }
      const result = await settledResult(invocation);
      caller.tasks.finish(
        taskId,
        terminalTaskStatus(result),
        `result ${result.status}`,
        callToolResult(result),
      );
    })().catch((error) => {
      logSafely(settings.logger, {
        level: "error",
        event: "mcp.task_failed",
        message: `following task ${taskId} (${entry.name}) failed: ${error}`,
        endpointId: entry.endpointId,
        operation: entry.operation,
        invocationId: invocation.key.invocationId,
        error,
      });
      caller.tasks.finish(taskId, "failed", `the outcome is unknown: ${error}`, {
        isError: true,
        content: [{ type: "text", text: `The outcome is unknown: ${error}` }],
      });
    }).finally(markEnded);
  }

  async function blockingCall(
    entry: ToolEntry,
    args: Record<string, unknown>,
    extra: Extra,
  ): Promise<CallToolResult> {
    let invocation: ToolInvocation;
    try {
      // An abort of `extra.signal` (notifications/cancelled, the connection closed) makes the
      // client send cancel (Action) or stop (Session).
      invocation = await caller.client(entry.endpointId).invoke(entry.operation, args, {
        callerId: caller.settings.callerId,
        signal: extra.signal,
      });
    } catch (error) {
      return failedCall(error);
    }
    const progressToken = extra._meta?.progressToken;
    let progress = 0;
    for await (const { event } of invocation.events) {
      if (
        progressToken !== undefined && (event.type === "progress" || event.type === "heartbeat")
      ) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken, progress: ++progress, message: eventMessage(event) },
        });
      }
    }
    return callToolResult(await invocation.result());
  }

  // --- list_changed ---------------------------------------------------------------------------

  // Every change of the Registry's instances (registered, replaced, unregistered, expired) may
  // change the tool list: announced as it happens. A reported state changes no tool.
  let closed = false;
  const unwatch = gateway.watchRegistry((event) => {
    if (event.kind === "state" || server.transport === undefined) return;
    server.sendToolListChanged().catch(() => {});
  });

  const unsubscribe = caller.onTaskStatus((task: Task) => {
    if (server.transport === undefined) return;
    server.notification({ method: "notifications/tasks/status", params: task }).catch(() => {});
  });

  return {
    server,
    callerId: caller.settings.callerId,
    get tasks() {
      return caller.tasks.size;
    },
    async close() {
      if (closed) return;
      closed = true;
      unwatch();
      unsubscribe();
      await server.close();
      if (ownsCaller) await caller.close();
    },
  };
}

/**
 * The schema tools/call is registered with: its method alone. The SDK's Protocol parses every
 * request with the registered schema before the Server's own tools/call check runs, so a call
 * whose params break the MCP schema (arguments that are not an object, a task ttl that is not a
 * number) came back as -32603 InternalError with zod's issues as its message. With only the
 * method to match, that check answers: -32602 `Invalid tools/call request: …`.
 */
const CALL_TOOL_METHOD = CallToolRequestSchema.pick({ method: true }).passthrough();

/**
 * The call's arguments checked with the Wire's JSON rules, as a canonical copy the request takes as
 * it is. A value no Forge message can carry (an integer past ±(2^53 − 1), a lone surrogate,
 * nesting past the bound) is the agent's mistake: InvalidParams, before anything is invoked.
 */
function checkedArguments(name: string, args: Record<string, unknown>): Record<string, unknown> {
  const checked = checkedJsonObject(args, "arguments");
  if (!(checked instanceof Error)) return checked as Record<string, unknown>;
  throw new McpError(
    ErrorCode.InvalidParams,
    `Invalid arguments for tool ${name}: ${checked.message}`,
  );
}

function cancelWord(entry: ToolEntry): string {
  return entry.semantics === "session" ? "stop" : "cancel";
}

/** The terminal result; a retryable failure of the wait (a lease gap) is retried a few times. */
async function settledResult(invocation: ToolInvocation): Promise<ToolResult> {
  for (let attempt = 1;; attempt++) {
    try {
      return await invocation.result();
    } catch (error) {
      if (!(error instanceof ToolClientError) || !error.retryable || attempt >= 5) throw error;
      await new Promise<void>((resolve) => setLongTimeout(resolve, 100 * attempt));
    }
  }
}

/** A call that got no result: rejected by the endpoint, or failed on the way. */
function failedCall(error: unknown): CallToolResult {
  if (error instanceof ToolCallError) return rejectedResult(error.error);
  if (error instanceof ToolClientError && error.outcome === "unknown") {
    return {
      isError: true,
      content: [{
        type: "text",
        text: `The outcome is unknown: the call may have run (${error.message}).`,
      }],
    };
  }
  if (error instanceof ToolClientError) {
    return {
      isError: true,
      content: [{ type: "text", text: `The call failed: ${error.message}` }],
    };
  }
  throw error;
}

export { mcpToolName } from "./_names.ts";

/**
 * The MCP server over Streamable HTTP as a web-standard handler, for the gateway's HTTP server to
 * mount at `/mcp` after it has authenticated the caller.
 *
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { ToolGateway } from "../gateway/gateway.ts";
import { McpCaller } from "./_caller.ts";
import {
  checkCallerId,
  checkSettings,
  type ForgeMcpServer,
  type McpServerSettings,
  serveCaller,
} from "./server.ts";

/** Options of {@linkcode mcpHttpHandler}. */
export interface McpHttpHandlerOptions extends McpServerSettings {
  /** The most open MCP sessions, all callers together. @default {1024} */
  readonly maxSessions?: number;
}

/**
 * A Streamable HTTP handler: `handler(request, callerId)` answers one HTTP request of the
 * authenticated `callerId`. `close()` ends every session and caller.
 */
export interface McpHttpHandler {
  (request: Request, callerId: string): Promise<Response>;
  /** Open MCP sessions now. */
  readonly sessions: number;
  /**
   * Closes every session, then every caller: tasks still working are ended (cancel or stop,
   * each waiting at most `cancelWaitMs` for the result), then every task is forgotten.
   */
  close(): Promise<void>;
}

interface Session {
  readonly callerId: string;
  readonly transport: WebStandardStreamableHTTPServerTransport;
  readonly mcp: ForgeMcpServer;
}

const CREATE = "create the MCP HTTP handler";

function notFound(message: string): Response {
  return Response.json(
    { jsonrpc: "2.0", error: { code: -32001, message }, id: null },
    { status: 404 },
  );
}

/**
 * Builds the Streamable HTTP handler over `gateway` (the SDK's
 * `WebStandardStreamableHTTPServerTransport`, stateful: one session per `initialize`). Each
 * caller id has one gateway transport and one task table shared by its sessions; a session id of
 * another caller is answered `404` like an unknown one, so one agent never reaches another's
 * session or tasks.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway } from "@forge/tool/gateway";
 * import { mcpHttpHandler } from "@forge/tool/mcp";
 * const gateway = new ToolGateway({ routes: {} });
 * const handler = mcpHttpHandler(gateway, {});
 * const response = await handler(
 *   new Request("http://localhost/mcp", { method: "GET", headers: { "mcp-session-id": "nope" } }),
 *   "agent-1",
 * );
 * assertEquals(response.status, 404);
 * await handler.close();
 * await gateway.close();
 * ```
 */
export function mcpHttpHandler(
  gateway: ToolGateway,
  options: McpHttpHandlerOptions,
): McpHttpHandler {
  if (!(gateway instanceof ToolGateway)) {
    throw new TypeError(optionMessage(CREATE, "gateway", "a ToolGateway", gateway));
  }
  const settings = checkSettings(CREATE, options);
  const maxSessions = positiveIntegerOption(CREATE, "maxSessions", options.maxSessions, 1024);
  const callers = new Map<string, McpCaller>();
  const sessions = new Map<string, Session>();
  let closed = false;

  const callerOf = (callerId: string): McpCaller => {
    let caller = callers.get(callerId);
    if (caller === undefined) {
      caller = new McpCaller(gateway, { ...settings, callerId });
      callers.set(callerId, caller);
    }
    return caller;
  };

  const handle = async (request: Request, callerId: string): Promise<Response> => {
    checkCallerId("answer an MCP request", callerId);
    if (closed) return notFound("the MCP server is closed");
    const sessionId = request.headers.get("mcp-session-id");
    if (sessionId !== null) {
      const session = sessions.get(sessionId);
      if (session === undefined || session.callerId !== callerId) {
        return notFound(`Session not found: ${sessionId}`);
      }
      return await session.transport.handleRequest(request);
    }
    if (request.method !== "POST") {
      return Response.json(
        {
          jsonrpc: "2.0",
          error: { code: -32000, message: "Bad Request: no session id" },
          id: null,
        },
        { status: 400 },
      );
    }
    if (sessions.size >= maxSessions) {
      return Response.json(
        {
          jsonrpc: "2.0",
          error: { code: -32000, message: `${maxSessions} MCP sessions are open ('maxSessions')` },
          id: null,
        },
        { status: 503 },
      );
    }
    const mcp = serveCaller(gateway, callerOf(callerId), settings, false);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (id: string) => void sessions.set(id, { callerId, transport, mcp }),
      onsessionclosed: (id: string) => {
        sessions.delete(id);
        void mcp.close();
      },
    });
    await mcp.server.connect(transport);
    const response = await transport.handleRequest(request);
    // Not an initialize request: the transport answered an error and opened no session.
    if (transport.sessionId === undefined) await mcp.close();
    return response;
  };

  return Object.defineProperties(handle, {
    sessions: { get: () => sessions.size },
    close: {
      value: async () => {
        if (closed) return;
        closed = true;
        const open = [...sessions.values()];
        sessions.clear();
        await Promise.all(open.map((session) => session.mcp.close()));
        await Promise.all([...callers.values()].map((caller) => caller.close()));
        callers.clear();
      },
    },
  }) as McpHttpHandler;
}

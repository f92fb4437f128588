// Requests the MCP SDK's Protocol would mishandle, answered before it sees them (private to
// src/mcp/). The Protocol parses a request's params with the schema its handler was registered
// with, and a parse failure is thrown as a plain error: JSON-RPC -32603 Internal error, the
// server failing, for what is the agent's mistake (`tasks/get` with a numeric `taskId`,
// `tools/list` with a numeric `cursor`, `initialize` with a numeric `protocolVersion`). A message
// with an id and a method whose params are not an object is no JSON-RPC request to it at all: it
// is dropped, and the agent waits for an answer that never comes. Here the first is -32602
// Invalid params (`Invalid <method> request: …`, the SDK Server's own words for tools/call) and
// the second -32600 Invalid Request, each answered to the request's id.
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CancelTaskRequestSchema,
  ErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  InitializeRequestSchema,
  isJSONRPCRequest,
  type JSONRPCMessage,
  ListTasksRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type MessageExtraInfo,
  PingRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

interface RequestSchema {
  safeParse(value: unknown): { success: boolean; error?: { message: string } };
}

/**
 * The methods whose params the Protocol parses with a schema of the SDK (tools/call is parsed
 * by a schema of its method alone, then checked by the SDK Server itself: see server.ts).
 */
const SCHEMAS: ReadonlyMap<string, RequestSchema> = new Map<string, RequestSchema>([
  ["initialize", InitializeRequestSchema],
  ["ping", PingRequestSchema],
  ["tools/list", ListToolsRequestSchema],
  ["tasks/get", GetTaskRequestSchema],
  ["tasks/result", GetTaskPayloadRequestSchema],
  ["tasks/list", ListTasksRequestSchema],
  ["tasks/cancel", CancelTaskRequestSchema],
]);

function errorAnswer(id: string | number, code: ErrorCode, message: string): JSONRPCMessage {
  return { jsonrpc: "2.0", id, error: { code, message: new McpError(code, message).message } };
}

/**
 * The error answer to `message` when it is a request the Protocol would drop or answer as its
 * own failure; `undefined` for every other message (which the Protocol handles).
 */
function refusalOf(message: unknown): JSONRPCMessage | undefined {
  if (typeof message !== "object" || message === null) return undefined;
  const { id, method } = message as { id?: unknown; method?: unknown };
  if ((typeof id !== "string" && typeof id !== "number") || typeof method !== "string") {
    return undefined;
  }
  if (!isJSONRPCRequest(message)) {
    return errorAnswer(
      id,
      ErrorCode.InvalidRequest,
      `Invalid request: '${method}' must carry its params as an object`,
    );
  }
  const parsed = SCHEMAS.get(method)?.safeParse(message);
  if (parsed === undefined || parsed.success) return undefined;
  return errorAnswer(
    id,
    ErrorCode.InvalidParams,
    `Invalid ${method} request: ${parsed.error?.message}`,
  );
}

/**
 * Answers, on `transport`, the requests {@linkcode refusalOf} refuses, and hands every other
 * message to the handler the server installed (call after the server connected).
 */
function guardRequests(transport: Transport): void {
  const handle = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage, extra?: MessageExtraInfo) => {
    const refusal = refusalOf(message);
    if (refusal === undefined) handle?.(message, extra);
    else transport.send(refusal).catch((error: unknown) => transport.onerror?.(error as Error));
  };
}

/** Makes `server` guard every transport it connects to with {@linkcode guardRequests}. */
export function guardOnConnect(server: Server): void {
  const connect = server.connect.bind(server);
  server.connect = async (transport: Transport): Promise<void> => {
    await connect(transport);
    guardRequests(transport);
  };
}

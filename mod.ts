/**
 * Forge ToolEndpoint contracts and the logical Wire protocol `forge.tool.endpoint/v1alpha1` for
 * Deno: models and descriptors, the provider SPI (Query, Action, Session), the strict Wire codec,
 * message factories and correlation checks, and the transport-independent endpoint handler.
 *
 * This entry imports no npm package and touches no FFI; the Dora bridge lives in `./dora`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { decodeEnvelope, encodeEnvelope, ToolEnvelope } from "@forge/tool/wire";
 * const bytes = encodeEnvelope(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * assertEquals(decodeEnvelope(bytes).requestId, "unregister-1");
 * ```
 *
 * @module
 */
export {
  type ActionDefinitionOptions,
  type ArgumentSchema,
  defineAction,
  defineEndpoint,
  defineQuery,
  defineSession,
  type DefinitionOptions,
  type EndpointDefinitionOptions,
  type ExecutionCallContext,
  type QueryCallContext,
  type SessionDefinitionOptions,
  type ToolEndpointDefinition,
  type ToolOperationDefinition,
} from "./src/provider/define.ts";
export { type JsonSchema, jsonSchema, type StandardSchemaV1 } from "./src/provider/schema.ts";
export {
  type CloseOptions,
  type DispatchOptions,
  ToolEndpointHandler,
  type ToolEndpointHandlerOptions,
} from "./src/handler/handler.ts";
export type {
  ActionToolEndpoint,
  QueryToolEndpoint,
  SessionToolEndpoint,
  ToolCallOptions,
  ToolEndpointImplementation,
  ToolEventEmitter,
} from "./src/endpoint/spi.ts";
export {
  type ToolClientCallOptions,
  ToolEndpointClient,
  type ToolEndpointClientOptions,
  type ToolEventRecord,
  type ToolInvocation,
} from "./src/client/client.ts";
export type { ToolClientTransport } from "./src/client/transport.ts";
export { InProcessToolClientTransport } from "./src/client/in_process.ts";
export {
  ToolCallError,
  ToolClientError,
  type ToolClientErrorCode,
  ToolClientErrorCodes,
  type ToolClientOutcome,
} from "./src/client/errors.ts";
export { ToolEndpointDescriptor, ToolOperationDescriptor } from "./src/endpoint/descriptors.ts";
export { ToolContext, ToolExecutionKey, ToolRequest } from "./src/endpoint/execution.ts";
export {
  ToolAccepted,
  ToolControlResponse,
  ToolError,
  ToolEvent,
  ToolExecutionStatus,
  ToolResult,
  ToolResultResponse,
} from "./src/endpoint/outcomes.ts";
export { ToolEndpointError, type ToolErrorCode, ToolErrorCodes } from "./src/endpoint/errors.ts";
export {
  consoleLogger,
  type ToolLogger,
  type ToolLogLevel,
  type ToolLogRecord,
} from "./src/endpoint/log.ts";
export type { JsonObject, JsonValue } from "./src/_internal/json.ts";

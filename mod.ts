/**
 * Forge ToolEndpoint for Deno, for providers and callers of `forge.tool.endpoint/v1alpha1`:
 * `defineQuery`, `defineAction`, `defineSession` and `defineEndpoint` to write a provider, the
 * transport-independent `ToolEndpointHandler` and its provider SPI, the `ToolEndpointClient` with
 * its in-process transport, the models and errors they hand over, and the logger.
 *
 * The Wire itself (envelopes, codec, factories, payload adapters, protocol constants, init
 * shapes) is `@forge/tool/wire`; running a node (registration, health, Registry, clocks,
 * metrics, tracing) is `@forge/tool/node`; the router is `@forge/tool/gateway`; the Dora bridge
 * is `@forge/tool/dora`. This entry imports no npm package and touches no FFI.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   defineEndpoint,
 *   defineQuery,
 *   InProcessToolClientTransport,
 *   jsonSchema,
 *   ToolEndpointClient,
 * } from "@forge/tool";
 * const arm = defineEndpoint({
 *   endpointId: "robot.arm",
 *   operations: {
 *     position: defineQuery(
 *       {
 *         arguments: jsonSchema<{ joint: number }>({
 *           type: "object",
 *           properties: { joint: { type: "integer" } },
 *           required: ["joint"],
 *         }),
 *       },
 *       ({ joint }) => ({ angle: joint * 10 }),
 *     ),
 *   },
 * });
 * const handler = arm.createHandler({ endpointInstanceId: "arm-1" });
 * const client = new ToolEndpointClient({
 *   transport: new InProcessToolClientTransport(handler),
 *   endpointId: "robot.arm",
 *   descriptor: arm.descriptor,
 * });
 * const result = await client.query("position", { joint: 3 });
 * assertEquals([result.status, result.outputs], ["succeeded", { angle: 30 }]);
 * await client.close();
 * await handler.close();
 * ```
 *
 * @module
 */
export { defineAction, defineQuery, defineSession } from "./src/provider/define.ts";
export {
  defineEndpoint,
  type EndpointDefinitionOptions,
  type ToolEndpointDefinition,
} from "./src/provider/endpoint.ts";
export type {
  ActionDefinitionOptions,
  ArgumentSchema,
  DefinitionOptions,
  ExecutionCallContext,
  QueryCallContext,
  SessionDefinitionOptions,
  ToolOperationDefinition,
} from "./src/provider/types.ts";
export { type JsonSchema, jsonSchema, type StandardSchemaV1 } from "./src/provider/schema.ts";
export {
  type CloseOptions,
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
  type TypedToolEndpointClient,
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
  lineLogger,
  type ToolLogger,
  type ToolLogLevel,
  type ToolLogRecord,
} from "./src/endpoint/log.ts";
export type { JsonObject, JsonValue } from "./src/_internal/json.ts";

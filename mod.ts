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
 * import { decodeEnvelope, encodeEnvelope, ToolEnvelope } from "@forge/tool";
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
export * from "./src/endpoint/constants.ts";
export {
  ToolEndpointError,
  type ToolErrorCode,
  ToolErrorCodes,
  type ToolErrorCodeTable,
  ToolProtocolError,
} from "./src/endpoint/errors.ts";
export * from "./src/endpoint/models.ts";
export type * from "./src/endpoint/spi.ts";
// --- provider: logger (issue 12) ---
export {
  consoleLogger,
  type ToolLogger,
  type ToolLogLevel,
  type ToolLogRecord,
} from "./src/endpoint/log.ts";
// --- end provider: logger ---
export { ToolEnvelope, type ToolEnvelopeInit } from "./src/wire/envelope.ts";
export {
  type CodecOptions,
  decodeEnvelope,
  encodedEnvelopeSize,
  encodeEnvelope,
} from "./src/wire/codec.ts";
export * from "./src/wire/messages.ts";
export * from "./src/wire/factories.ts";
export * from "./src/wire/correlation.ts";
export {
  type CloseOptions,
  type DispatchOptions,
  ToolEndpointHandler,
  type ToolEndpointHandlerOptions,
  type ToolEndpointHandlerState,
  type ToolEventSink,
} from "./src/handler/handler.ts";
export { type MonotonicClock, type NodeClock, SYSTEM_CLOCK } from "./src/node/clock.ts";
export {
  DEFAULT_LEASE_TTL_MS,
  descriptorsEqual,
  EndpointRegistry,
  type EndpointRegistryChange,
  EndpointRegistryErrorCodes,
  type EndpointRegistryErrorCodeTable,
  type EndpointRegistryOptions,
  type EndpointRegistryRecord,
} from "./src/node/registry.ts";
export {
  EndpointRegistration,
  type EndpointRegistrationOptions,
  type EndpointRegistrationState,
  type RegistrationBackoff,
  type RegistrationStopOptions,
} from "./src/node/registration.ts";
export {
  EndpointHealthReporter,
  type EndpointHealthReporterOptions,
  endpointStateOf,
  type HealthStopOptions,
} from "./src/node/health.ts";
export {
  EndpointNodeLifecycle,
  type EndpointNodeLifecycleOptions,
  type EndpointNodePhase,
  newEndpointInstanceId,
} from "./src/node/node.ts";

// --- Node health: which provider callback failed ----------------------------------------------
export type { HealthCallback } from "./src/node/health.ts";

// --- Caller side: ToolEndpointClient, its transport interface and the in-process transport ---
export {
  type ToolClientCallOptions,
  ToolEndpointClient,
  type ToolEndpointClientOptions,
  type ToolEndpointClientStats,
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
  type ToolClientErrorCodeTable,
  type ToolClientErrorContext,
  type ToolClientErrorInit,
  type ToolClientExchange,
  type ToolClientOutcome,
} from "./src/client/errors.ts";

// --- Provider definitions: one-function Query/Action/Session, argument schemas ------------
export {
  type ActionDefinitionOptions,
  type ArgumentSchema,
  type ArgumentsOf,
  defineAction,
  type DefinedHandlerOptions,
  defineEndpoint,
  defineQuery,
  defineSession,
  type DefinitionOptions,
  type EndpointDefinitionOptions,
  type ExecutionCallContext,
  type ExecutionFunction,
  type ImplementOptions,
  type QueryCallContext,
  type QueryFunction,
  type SessionDefinitionOptions,
  type ToolEndpointDefinition,
  type ToolOperationDefinition,
  type ToolOutputs,
} from "./src/provider/define.ts";
export {
  type InferSchemaOutput,
  isStandardSchema,
  type JsonSchema,
  jsonSchema,
  type JsonSchemaType,
  type JsonSchemaValidator,
  type StandardSchemaV1,
  type StandardSchemaV1Issue,
  type StandardSchemaV1PathSegment,
  type StandardSchemaV1Props,
  type StandardSchemaV1Result,
} from "./src/provider/schema.ts";

// --- Observability: handler metrics and tracing (issue 12, part 4) ----------------------------
export {
  type ToolEndpointMetrics,
  ToolLatencyHistogram,
  type ToolOperationMetrics,
} from "./src/handler/handler.ts";
export {
  denoTracer,
  type ToolSpan,
  type ToolSpanAttribute,
  type ToolTracer,
} from "./src/endpoint/trace.ts";
// --- end observability ---

// --- Route trust checked on the headers alone -------------------------------------------------
export { type ToolRequestRoute } from "./src/handler/handler.ts";

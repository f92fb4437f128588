/**
 * Forge ToolEndpoint contracts and the logical Wire protocol `forge.tool.endpoint/v1alpha1` for
 * Deno: models and descriptors, the provider SPI (Query, Action, Session), the strict Wire codec,
 * message factories and correlation checks, and the transport-independent endpoint handler.
 *
 * This entry imports no npm package and touches no FFI; the Dora bridge lives in `./dora`.
 *
 * @example
 * ```ts
 * import { decodeEnvelope, encodeEnvelope, ToolEnvelope } from "@forge/tool";
 * const bytes = encodeEnvelope(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * console.log(decodeEnvelope(bytes).requestId); // unregister-1
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

// --- Route trust on headers (decode-path reliability) -------------------------------------------
export { type ToolRequestRoute } from "./src/handler/handler.ts";

/**
 * Running an endpoint node: the lifecycle that ties registration, lease renewal and health
 * together, the Registry itself, the clocks they run on, the handler's and the client's
 * metrics and state, tracing, and the handler hooks transports use. None of it is needed to
 * define a provider or make a call (that is `@forge/tool`). This entry imports no npm package and
 * no FFI.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EndpointRegistry } from "@forge/tool/node";
 * import { makeRegistrationEnvelope, TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * import { ToolEndpointDescriptor, ToolOperationDescriptor } from "@forge/tool";
 * const registry = new EndpointRegistry({ routes: { arm: "robot.arm" } });
 * const descriptor = new ToolEndpointDescriptor({
 *   protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *   endpointId: "robot.arm",
 *   operations: [new ToolOperationDescriptor({ name: "position", semantics: "query" })],
 * });
 * const request = makeRegistrationEnvelope(descriptor, {
 *   endpointInstanceId: "instance-1",
 *   requestId: "register-1",
 * });
 * assertEquals(registry.handle(request, "arm").payload.status, "accepted");
 * assertEquals(registry.lookup("robot.arm")?.endpointInstanceId, "instance-1");
 * ```
 *
 * @module
 */
export {
  EndpointNodeLifecycle,
  type EndpointNodeLifecycleOptions,
  type EndpointNodePhase,
  newEndpointInstanceId,
} from "./src/node/node.ts";
export { EndpointRegistration } from "./src/node/registration.ts";
export type {
  EndpointRegistrationOptions,
  EndpointRegistrationState,
  RegistrationBackoff,
  RegistrationStopOptions,
} from "./src/node/registration_options.ts";
export {
  EndpointHealthReporter,
  type EndpointHealthReporterOptions,
  endpointStateOf,
  type HealthCallback,
  type HealthStopOptions,
} from "./src/node/health.ts";
export { descriptorsEqual, EndpointRegistry } from "./src/node/registry.ts";
export {
  DEFAULT_LEASE_TTL_MS,
  type EndpointRegistryChange,
  EndpointRegistryErrorCodes,
  type EndpointRegistryErrorCodeTable,
  type EndpointRegistryOptions,
  type EndpointRegistryRecord,
} from "./src/node/registry_records.ts";
export { type MonotonicClock, type NodeClock, SYSTEM_CLOCK } from "./src/node/clock.ts";
export {
  type ToolEndpointHandlerState,
  type ToolEndpointMetrics,
  type ToolEventSink,
  ToolLatencyHistogram,
  type ToolOperationMetrics,
  type ToolRequestRoute,
} from "./src/handler/handler.ts";
export type { ToolEndpointClientStats } from "./src/client/client.ts";
export {
  denoTracer,
  type ToolSpan,
  type ToolSpanAttribute,
  type ToolTracer,
} from "./src/endpoint/trace.ts";

/**
 * The Dora bridge of forge-tool: the Arrow ToolMessage carrier, the Dora endpoint binding, the
 * FFI node and the node runner. Imports `apache-arrow`; the base entry `mod.ts` does not.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool";
 * import {
 *   decodeToolMessageIpc,
 *   encodeToolMessageIpc,
 *   toolEnvelopeToMessage,
 *   toolMessageToEnvelope,
 * } from "@forge/tool/dora";
 * const batch = toolEnvelopeToMessage(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * const bytes = encodeToolMessageIpc(batch);
 * assertEquals(toolMessageToEnvelope(decodeToolMessageIpc(bytes)).requestId, "unregister-1");
 * ```
 *
 * @module
 */
export { TOOL_ENDPOINT_PROTOCOL } from "./src/endpoint/constants.ts";

// --- Dora: the ToolMessage carrier, IPC framing and the endpoint binding (no FFI) -------------
export {
  TOOL_MESSAGE_SCHEMA,
  toolEnvelopeToMessage,
  type ToolEnvelopeToMessageOptions,
  type ToolMessageArrowValue,
  toolMessageCarrierSize,
  type ToolMessageStructVector,
  toolMessageToEnvelope,
  type ToolMessageToEnvelopeOptions,
} from "./src/dora/carrier.ts";
export {
  decodeToolMessageIpc,
  type DecodeToolMessageIpcOptions,
  encodeToolMessageIpc,
} from "./src/dora/ipc.ts";
export {
  decodeToolEnvelopeIpc,
  type DecodeToolEnvelopeIpcOptions,
  encodeToolEnvelopeIpc,
  type EncodeToolEnvelopeIpcOptions,
} from "./src/dora/fast_ipc.ts";
export {
  type DoraEventSink,
  type DoraIpcEventSink,
  DoraToolEndpointBinding,
  type DoraToolEndpointBindingOptions,
} from "./src/dora/binding.ts";

// --- Dora: transports, the FFI node, the runner and serving a handler -------------------------
export {
  type DoraEvent,
  type DoraEventType,
  type DoraTransport,
  epochMsToNtp64,
  ntp64ToEpochMs,
} from "./src/dora/transport.ts";
export {
  DORA_NODE_API_LIB_ENV,
  type DoraNodeTransport,
  openDoraNode,
  type OpenDoraNodeOptions,
} from "./src/dora/ffi.ts";
export {
  runToolEndpointNode,
  ToolEndpointNode,
  type ToolEndpointNodeOptions,
  type ToolEndpointNodeStats,
  type ToolEndpointNodeStopReason,
  type ToolEndpointRequestHandler,
} from "./src/dora/runner.ts";
export {
  LoopbackDataflow,
  type LoopbackDataflowOptions,
  type LoopbackFaults,
  type LoopbackInputOptions,
  type LoopbackOutput,
} from "./src/dora/loopback.ts";
export {
  type ServeLifecycleSettings,
  serveToolEndpoint,
  type ServeToolEndpointOptions,
} from "./src/dora/serve.ts";

// --- Dora: the ToolGateway (Registry host and router by endpoint id) -------------------------
export {
  runToolGatewayNode,
  ToolGateway,
  type ToolGatewayNodeOptions,
  type ToolGatewayNodeStats,
  type ToolGatewayOptions,
  type ToolGatewayRouteSender,
  type ToolGatewayStats,
} from "./src/dora/gateway.ts";

// --- Caller side: client transports over a Dora node and over a loopback dataflow -------------
export {
  DoraToolClientTransport,
  type DoraToolClientTransportOptions,
  type DoraToolClientTransportStats,
  LoopbackToolClientTransport,
  type LoopbackToolClientTransportOptions,
} from "./src/dora/client_transport.ts";

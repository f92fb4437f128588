/**
 * The Dora bridge of forge-tool: the Arrow ToolMessage carrier, the Dora endpoint binding, the
 * FFI node and the node runner. Imports `apache-arrow`; the base entry `mod.ts` does not.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
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
export {
  TOOL_MESSAGE_SCHEMA,
  toolEnvelopeToMessage,
  type ToolEnvelopeToMessageOptions,
  type ToolMessageArrowValue,
  type ToolMessageStructVector,
  toolMessageToEnvelope,
  type ToolMessageToEnvelopeOptions,
} from "./src/dora/carrier.ts";
export { toolMessageCarrierSize } from "./src/dora/carrier_size.ts";
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
export { DoraToolEndpointBinding } from "./src/dora/binding.ts";
export type {
  DoraEventSink,
  DoraIpcEventSink,
  DoraToolEndpointBindingOptions,
} from "./src/dora/binding_options.ts";

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
export { runToolEndpointNode, ToolEndpointNode } from "./src/dora/runner.ts";
export type {
  ToolEndpointNodeOptions,
  ToolEndpointNodeStats,
  ToolEndpointNodeStopReason,
  ToolEndpointRequestHandler,
} from "./src/dora/runner_options.ts";
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

export {
  runToolGatewayNode,
  type ToolGatewayNodeOptions,
  type ToolGatewayNodeStats,
} from "./src/dora/gateway_node.ts";

export {
  DoraToolClientTransport,
  type DoraToolClientTransportOptions,
  type DoraToolClientTransportStats,
  LoopbackToolClientTransport,
  type LoopbackToolClientTransportOptions,
} from "./src/dora/client_transport.ts";

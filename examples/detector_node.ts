/**
 * The example endpoint as a real Dora node: run it from a dataflow (see `dataflow.yml`) with
 * `DORA_NODE_API_LIB` pointing at a shared build of dora's C node API.
 *
 * ```sh
 * deno run --allow-ffi --allow-env --allow-read examples/detector_node.ts
 * ```
 *
 * It serves `tool_request` inputs (ToolMessage Arrow IPC streams) and publishes responses and
 * events on `tool_response` until the dataflow stops it. It also registers with the gateway's
 * Registry on `tool_response` (renewing its lease, reporting health, unregistering on shutdown)
 * and reads the Registry's answers from `tool_request`: see `gateway_dataflow.yml`.
 *
 * @module
 */
import { lineLogger } from "../mod.ts";
import { openDoraNode, serveToolEndpoint } from "../dora.ts";
import { createDemoHandler } from "./endpoint.ts";

// A new provider instance per process start.
const handler = createDemoHandler(`detector-${crypto.randomUUID()}`);
const transport = await openDoraNode();
const stats = await serveToolEndpoint(handler, {
  transport,
  lifecycle: true,
  // The Dora log gets every record of the node (runner, binding, registration, health) as lines.
  logger: lineLogger((level, message) => transport.log?.(level, message)),
});
console.error(`detector node stopped (${stats.stopReason}) after ${stats.requests} requests`);

/**
 * A ToolGateway as a real Dora node: it hosts the Registry of the detector's route and routes the
 * requests of a Dora caller (`planner`) to the detector's current instance. Run it from a
 * dataflow (see `gateway_dataflow.yml`) with `DORA_NODE_API_LIB` pointing at a shared build of
 * dora's C node API.
 *
 * ```sh
 * deno run --allow-ffi --allow-env --allow-read examples/gateway_node.ts
 * ```
 *
 * Inputs and outputs: `detector_response` / `detector_request` (the provider route: what the
 * detector sends, and its requests and Registry answers), `planner_request` / `planner_response`
 * (a Dora caller: requests in, answers and events out). Everything is a ToolMessage as an Arrow
 * IPC stream in a UInt8 array.
 *
 * @module
 */
import { lineLogger } from "../mod.ts";
import { ToolGateway } from "../gateway.ts";
import { openDoraNode, runToolGatewayNode } from "../dora.ts";
import { demoDescriptor } from "./endpoint.ts";

const transport = await openDoraNode();
const gateway = new ToolGateway({
  routes: { detector: demoDescriptor.endpointId },
  // The Dora log gets the gateway's records as lines.
  logger: lineLogger((level, message) => transport.log(level, message)),
});
const stats = await runToolGatewayNode(gateway, {
  transport,
  callers: { planner_request: "planner_response" },
});
console.error(
  `gateway node stopped (${stats.stopReason}): ${stats.gateway.forwarded} requests forwarded, ` +
    `${stats.gateway.dropped} provider messages dropped`,
);

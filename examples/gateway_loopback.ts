/**
 * The dataflow of `gateway_dataflow.yml` in one process, without Dora: a caller node (`planner`),
 * the {@linkcode ToolGateway} node and an endpoint node (`detector`), each on its own
 * {@linkcode LoopbackDataflow}, with the YAML's four edges copied from one node's output to the
 * next node's input as Arrow IPC bytes:
 *
 * ```
 * planner  --tool_request-->      gateway (planner_request)
 * gateway  --detector_request-->  detector (tool_request)
 * detector --tool_response-->     gateway (detector_response)
 * gateway  --planner_response-->  planner (tool_response)
 * ```
 *
 * So a {@linkcode ToolEndpointClient} on the planner's node side ({@linkcode
 * DoraToolClientTransport}) reaches the endpoint through the gateway with IPC bytes on both hops,
 * as under Dora. Used by the demo, its test, the gateway client test and the client bench.
 *
 * @module
 */
import type { ToolEndpointHandler } from "../mod.ts";
import { ToolGateway } from "../gateway.ts";
import {
  type DoraTransport,
  LoopbackDataflow,
  runToolGatewayNode,
  serveToolEndpoint,
  type ServeToolEndpointOptions,
  type ToolEndpointNodeStats,
  type ToolGatewayNodeStats,
} from "../dora.ts";

/** One edge of the dataflow, named `from→to`. */
export type GatewayEdge =
  | "planner→gateway"
  | "gateway→detector"
  | "detector→gateway"
  | "gateway→planner";

/** Options of {@linkcode startGatewayLoopback}. */
export interface GatewayLoopbackOptions {
  /** The gateway; it must have a route named `detector` (the endpoint node's edges). */
  readonly gateway: ToolGateway;
  /** The endpoint node's handler. */
  readonly handler: ToolEndpointHandler;
  /** How the endpoint node is served (lifecycle, grace, logger); the transport is its own. */
  readonly serve?: Omit<ServeToolEndpointOptions, "transport">;
  /** Sees every message on every edge, before it is delivered (for a trace). */
  readonly tap?: (edge: GatewayEdge, bytes: Uint8Array) => void;
}

/** The running dataflow of {@linkcode startGatewayLoopback}. */
export interface GatewayLoopback {
  /** The planner's node side: give it to a {@linkcode DoraToolClientTransport}. */
  readonly planner: DoraTransport;
  /** The endpoint node's run (resolves once it shut down). */
  readonly detector: Promise<ToolEndpointNodeStats>;
  /** The gateway node's run (resolves once it stopped). */
  readonly gatewayNode: Promise<ToolGatewayNodeStats>;
  /** Messages not delivered because their receiving node had closed (as Dora drops them). */
  readonly undelivered: number;
  /**
   * Sends Stop to the endpoint node (it unregisters through the gateway), then to the gateway
   * node, closes the planner's node side, and resolves when every edge stopped.
   */
  stop(): Promise<{ detector: ToolEndpointNodeStats; gatewayNode: ToolGatewayNodeStats }>;
}

/** Starts the three nodes and the four edges. */
export function startGatewayLoopback(options: GatewayLoopbackOptions): GatewayLoopback {
  const { gateway, handler, tap } = options;
  if (!(gateway instanceof ToolGateway) || !gateway.registry.routes.has("detector")) {
    throw new TypeError("Cannot start the gateway loopback as 'gateway' has no route 'detector'");
  }
  const planner = new LoopbackDataflow();
  const gatewayFlow = new LoopbackDataflow({ requestInputId: "planner_request" });
  const detectorFlow = new LoopbackDataflow();
  let undelivered = 0;
  const deliver = (edge: GatewayEdge, to: LoopbackDataflow, input: string, bytes: Uint8Array) => {
    tap?.(edge, bytes);
    to.input(input, bytes).catch(() => undelivered++);
  };
  const edges = (from: LoopbackDataflow, route: (id: string, bytes: Uint8Array) => void) =>
    (async () => {
      for (let output = await from.nextOutput(); output; output = await from.nextOutput()) {
        route(output.id, output.data);
      }
    })();

  const detector = serveToolEndpoint(handler, {
    ...options.serve,
    transport: detectorFlow.transport,
  });
  const gatewayNode = runToolGatewayNode(gateway, {
    transport: gatewayFlow.transport,
    callers: { planner_request: "planner_response" },
  });
  const running = [
    edges(
      planner,
      (_id, bytes) => deliver("planner→gateway", gatewayFlow, "planner_request", bytes),
    ),
    edges(
      detectorFlow,
      (_id, bytes) => deliver("detector→gateway", gatewayFlow, "detector_response", bytes),
    ),
    edges(gatewayFlow, (id, bytes) => {
      if (id === "detector_request") {
        deliver("gateway→detector", detectorFlow, "tool_request", bytes);
      } else deliver("gateway→planner", planner, "tool_response", bytes);
    }),
  ];
  return {
    planner: planner.transport,
    detector,
    gatewayNode,
    get undelivered() {
      return undelivered;
    },
    async stop() {
      if (!detectorFlow.isClosed) await detectorFlow.stop().catch(() => undefined);
      const detectorStats = await detector;
      if (!gatewayFlow.isClosed) await gatewayFlow.stop().catch(() => undefined);
      const gatewayStats = await gatewayNode;
      await planner.transport.close();
      await Promise.all(running);
      return { detector: detectorStats, gatewayNode: gatewayStats };
    },
  };
}

/**
 * The example endpoint `robot.demo` behind a {@linkcode ToolGateway} in this process, ready for
 * the MCP server: the endpoint node runs on an embedded loopback dataflow attached to the
 * gateway's route `detector`, registers with its Registry, and keeps its lease. Used by
 * `mcp_stdio.ts`, the MCP tests and the MCP bench.
 *
 * @module
 */
import type { ToolEndpointDefinition, ToolEndpointHandler, ToolLogger } from "../mod.ts";
import { ToolGateway } from "../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
} from "../dora.ts";
import { demoEndpoint } from "./endpoint.ts";

/** A running demo gateway. */
export interface DemoGateway {
  readonly gateway: ToolGateway;
  /** The endpoint's definition, for the MCP server's `definitions` option. */
  readonly definition: ToolEndpointDefinition;
  /** The endpoint's handler (its metrics show what reached the endpoint). */
  readonly handler: ToolEndpointHandler;
  /** Stops the endpoint node (it unregisters), then closes the gateway. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startDemoGateway}. */
export interface DemoGatewayOptions {
  /** The Action and Session step, ms. @default {20} */
  readonly stepMs?: number;
  /** The endpoint's, node's and gateway's logger. @default {silent} */
  readonly logger?: ToolLogger;
  /** The endpoint instance id. @default {"demo-instance-1"} */
  readonly instanceId?: string;
}

/** Starts the gateway and the endpoint node, and resolves once `robot.demo` registered. */
export async function startDemoGateway(options: DemoGatewayOptions = {}): Promise<DemoGateway> {
  const logger = options.logger ?? (() => {});
  const gateway = new ToolGateway({ routes: { detector: "robot.demo" }, logger });
  const flow = new LoopbackDataflow();
  // The route's edge: requests leave as IPC bytes, the node's messages are decoded once.
  gateway.attachRoute("detector", (envelope) => flow.request(encodeToolEnvelopeIpc(envelope)));
  const route = (async () => {
    for (let output = await flow.nextOutput(); output; output = await flow.nextOutput()) {
      gateway.receive("detector", decodeToolEnvelopeIpc(output.data));
    }
  })();
  const definition = demoEndpoint(options.stepMs ?? 20, logger);
  const handler = definition.createHandler({
    endpointInstanceId: options.instanceId ?? "demo-instance-1",
    logger,
  });
  const node = serveToolEndpoint(handler, {
    transport: flow.transport,
    lifecycle: { logger },
    logger,
  });
  for (let turn = 0; gateway.registry.lookup("robot.demo") === undefined; turn++) {
    if (turn === 1000) throw new Error("robot.demo never registered with the gateway");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return {
    gateway,
    definition,
    handler,
    async stop() {
      if (!flow.isClosed) await flow.stop().catch(() => undefined);
      await node;
      await route;
      await gateway.close();
    },
  };
}

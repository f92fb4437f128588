/**
 * The example endpoint `robot.demo` behind a {@linkcode ToolGateway} in this process, ready for
 * the MCP server: the endpoint node runs on an embedded loopback dataflow attached to the
 * gateway's route `detector`, registers with its Registry, and keeps its lease. Used by
 * `mcp_stdio.ts`, the MCP tests and the MCP bench.
 *
 * @module
 */
import type { ToolEndpointHandler, ToolLogger } from "../mod.ts";
import { ToolGateway } from "../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
} from "../dora.ts";
import type { McpToolMetadata } from "../mcp.ts";
import { demoEndpoint } from "./endpoint.ts";

/** What the MCP server shows of `robot.demo` beyond its descriptor. */
export const demoMcpTools: Readonly<Record<string, Readonly<Record<string, McpToolMetadata>>>> = {
  "robot.demo": {
    detect: {
      description: "Detects objects of the given classes in the camera image (Query).",
      inputSchema: {
        type: "object",
        properties: { classes: { type: "array", items: { type: "string" } } },
      },
      outputSchema: {
        type: "object",
        properties: { objects: { type: "array" } },
        required: ["objects"],
      },
    },
    move: {
      description:
        "Moves the arm to `target` in ten steps with progress; cancel stops it (Action).",
      inputSchema: { type: "object", properties: { target: { type: "string" } } },
    },
    policy: {
      description: "Runs a policy with heartbeats until stopped (Session).",
      inputSchema: { type: "object", properties: { task: { type: "string" } } },
    },
  },
};

/** A running demo gateway. */
export interface DemoGateway {
  readonly gateway: ToolGateway;
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
  const handler = demoEndpoint(options.stepMs ?? 20, logger).createHandler({
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
    handler,
    async stop() {
      if (!flow.isClosed) await flow.stop().catch(() => undefined);
      await node;
      await route;
      await gateway.close();
    },
  };
}

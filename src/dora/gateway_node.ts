/**
 * The Dora edge of the {@linkcode ToolGateway}: the router works on envelopes; this module frames
 * them as ToolMessage Arrow IPC, once per message. Each provider route is a Dora input/output
 * pair ({@linkcode runToolGatewayNode}), or a {@linkcode LoopbackDataflow} in one process
 * (`serveGatewayLoopbackRoute`); what arrives is decoded and validated here, once, and handed to
 * the router; what the router sends is encoded here, once.
 *
 * @module
 */
import { DEFAULT_MAX_MESSAGE_BYTES } from "../endpoint/constants.ts";
import { logSafely, type ToolLogger } from "../endpoint/log.ts";
import { optionalFunction, optionMessage } from "../_internal/options.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { validateMessageEnvelope } from "../wire/validate.ts";
import type { ToolClientTransport } from "../client/transport.ts";
import {
  attachFramedRoute,
  describeEnvelope,
  receiveFramed,
  sendValidated,
  ToolGateway,
  type ToolGatewayStats,
} from "../gateway/gateway.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "./fast_ipc.ts";
import { DEFAULT_MAX_IPC_BYTES } from "./ipc.ts";
import type { LoopbackDataflow } from "./loopback.ts";
import { transportLogger } from "./_transport_log.ts";
import type { DoraTransport } from "./transport.ts";

/** Options of {@linkcode runToolGatewayNode}. */
export interface ToolGatewayNodeOptions {
  /** The gateway node's transport: {@linkcode openDoraNode} under Dora, or a loopback. */
  readonly transport: DoraTransport;
  /**
   * The Dora input and output of each provider route (default for route `r`: input
   * `r_response`, output `r_request`). Routes of the gateway not listed use the default.
   */
  readonly routes?: Readonly<Record<string, { readonly input?: string; readonly output?: string }>>;
  /**
   * Dora callers: input id -> output id. Requests (IPC bytes) arriving on the input are routed
   * like an in-process caller's; their answers and events leave on the output. Each caller input
   * is one caller of the gateway (its own `connect()` handle): it owns the executions it invokes,
   * and another input's status, result, cancel or stop of them is answered as not found.
   */
  readonly callers?: Readonly<Record<string, string>>;
  /**
   * Where the node reports what it drops (events `gateway_node.caller_input_undecodable` at
   * `warn`, `gateway_node.caller_output_failed` and `gateway_node.route_failed` at `error`).
   * By default warnings and errors go to the transport's log as the text `consoleLogger`
   * writes, or to `consoleLogger` when the transport has no log.
   *
   * @default {the transport's log}
   */
  readonly logger?: ToolLogger;
}

/** Why {@linkcode runToolGatewayNode} returned, and what it saw. */
export interface ToolGatewayNodeStats {
  /** `"stop"`: Dora sent Stop; `"end"`: the event stream ended. */
  readonly stopReason: "stop" | "end";
  /** Input events received (every input id, ticks included). */
  readonly inputs: number;
  /** Caller request bytes that could not be decoded and were dropped. */
  readonly invalidCallerInputs: number;
  /** The gateway's counters when the node stopped. */
  readonly gateway: ToolGatewayStats;
}

/** The Arrow framing allowed around one logical message in an IPC stream. */
const IPC_OVERHEAD_BYTES = DEFAULT_MAX_IPC_BYTES - DEFAULT_MAX_MESSAGE_BYTES;

/** A route's framing: one IPC stream per envelope, within the gateway's `maxMessageBytes`. */
function encodeRouteMessage(envelope: ToolEnvelope, maxMessageBytes?: number): Uint8Array {
  return encodeToolEnvelopeIpc(envelope, { maxMessageBytes });
}

/** Decodes and validates, once, what a provider sent on a route (see `receiveFramed`). */
function routeMessageDecoder(bytes: Uint8Array): (maxMessageBytes?: number) => ToolEnvelope {
  return (maxMessageBytes) => {
    const envelope = decodeToolEnvelopeIpc(bytes, {
      maxMessageBytes,
      maxBytes: maxMessageBytes === undefined ? undefined : maxMessageBytes + IPC_OVERHEAD_BYTES,
    });
    validateMessageEnvelope(envelope);
    return envelope;
  };
}

/**
 * Serves the provider node of a {@linkcode LoopbackDataflow} as route `routeId` of `gateway`:
 * requests and Registry answers are delivered on its request input as IPC bytes, everything the
 * node sends is decoded and received. Resolves when the node closed its transport.
 */
export async function serveGatewayLoopbackRoute(
  gateway: ToolGateway,
  routeId: string,
  flow: LoopbackDataflow,
): Promise<void> {
  const detach = attachFramedRoute(
    gateway,
    routeId,
    encodeRouteMessage,
    (bytes) => flow.request(bytes),
  );
  try {
    for (let output = await flow.nextOutput(); output; output = await flow.nextOutput()) {
      receiveFramed(gateway, routeId, routeMessageDecoder(output.data));
    }
  } finally {
    detach();
  }
}

/**
 * Runs `gateway` as a Dora node on `options.transport`: every provider route is an input/output
 * pair (the input carries what the provider sends, the output its requests and Registry
 * answers), and each configured Dora caller an input/output pair too. Returns at Stop or at the
 * end of the event stream, after closing the gateway and the transport.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway } from "@forge/tool/gateway";
 * import { LoopbackDataflow, runToolGatewayNode } from "@forge/tool/dora";
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const flow = new LoopbackDataflow(); // under Dora: `transport: await openDoraNode()`
 * const running = runToolGatewayNode(gateway, { transport: flow.transport });
 * await flow.stop();
 * assertEquals((await running).stopReason, "stop");
 * ```
 */
export async function runToolGatewayNode(
  gateway: ToolGateway,
  options: ToolGatewayNodeOptions,
): Promise<ToolGatewayNodeStats> {
  if (!(gateway instanceof ToolGateway)) {
    throw new TypeError(optionMessage("run a gateway node", "gateway", "a ToolGateway", gateway));
  }
  const { transport } = options;
  const logger = optionalFunction<ToolLogger>("run a gateway node", "logger", options.logger) ??
    transportLogger(transport);
  const routeOfInput = new Map<string, string>();
  const detach: (() => void)[] = [];
  const failed = (event: string, what: string) => (error: unknown) =>
    logSafely(logger, { level: "error", event, message: `${what} failed: ${error}`, error });
  for (const routeId of gateway.registry.routes.keys()) {
    const pair = options.routes?.[routeId];
    const input = pair?.input ?? `${routeId}_response`;
    const output = pair?.output ?? `${routeId}_request`;
    routeOfInput.set(input, routeId);
    detach.push(
      attachFramedRoute(
        gateway,
        routeId,
        encodeRouteMessage,
        (bytes) => transport.sendOutput(output, bytes),
      ),
    );
  }
  const callers = new Map<string, ToolClientTransport>();
  for (const [input, output] of Object.entries(options.callers ?? {})) {
    const caller = gateway.connect();
    caller.connect((message) => {
      let bytes: Uint8Array;
      try {
        bytes = encodeToolEnvelopeIpc(message);
      } catch (error) {
        failed(
          "gateway_node.caller_output_failed",
          `encoding ${describeEnvelope(message)} for caller output '${output}'`,
        )(error);
        return;
      }
      transport.sendOutput(output, bytes).catch(
        failed("gateway_node.caller_output_failed", `sending on caller output '${output}'`),
      );
    });
    callers.set(input, caller);
  }
  let inputs = 0;
  let invalidCallerInputs = 0;
  let stopReason: "stop" | "end" = "end";
  try {
    for (let event = await transport.nextEvent(); event; event = await transport.nextEvent()) {
      if (event.type === "stop") {
        stopReason = "stop";
        break;
      }
      if (event.type !== "input") continue;
      inputs += 1;
      const routeId = routeOfInput.get(event.id);
      if (routeId !== undefined) {
        receiveFramed(gateway, routeId, routeMessageDecoder(event.data));
        continue;
      }
      const caller = callers.get(event.id);
      if (caller === undefined) continue; // ticks and other inputs
      let request: ToolEnvelope;
      try {
        request = decodeToolEnvelopeIpc(event.data);
        validateMessageEnvelope(request);
      } catch (error) {
        invalidCallerInputs += 1;
        logSafely(logger, {
          level: "warn",
          event: "gateway_node.caller_input_undecodable",
          message: `dropped undecodable request on caller input '${event.id}': ${error}`,
          error,
        });
        continue;
      }
      Promise.resolve()
        // Validated above, once: the copy forwarded to the provider is not validated again.
        .then(() => sendValidated(caller, request))
        .catch(
          failed(
            "gateway_node.route_failed",
            `routing ${describeEnvelope(request)} from caller input '${event.id}'`,
          ),
        );
    }
  } finally {
    for (const release of detach) release();
    await gateway.close();
    await transport.close();
  }
  return { stopReason, inputs, invalidCallerInputs, gateway: gateway.stats };
}

/**
 * Serving a {@linkcode ToolEndpointHandler} on a Dora transport: request bytes (an Arrow IPC
 * stream holding one ToolMessage) → the binding's `dispatchIpc` (the fast codec: bounded IPC
 * decode, carrier rules, dispatch, IPC encode) → the response output. Events of Actions and
 * Sessions are published on the same output after their response, through the binding's
 * publication barrier. The `codec: "generic"` option runs the same node through apache-arrow's
 * generic IPC reader and writer instead, for comparison.
 *
 * @module
 */
import type { ToolEndpointHandler } from "../handler/handler.ts";
import { EndpointNodeLifecycle, type EndpointNodeLifecycleOptions } from "../node/node.ts";
import { DoraToolEndpointBinding } from "./binding.ts";
import { encodeToolEnvelopeIpc } from "./fast_ipc.ts";
import { decodeToolMessageIpc, encodeToolMessageIpc } from "./ipc.ts";
import {
  ToolEndpointNode,
  type ToolEndpointNodeLogger,
  type ToolEndpointNodeStats,
  type ToolEndpointRequestHandler,
} from "./runner.ts";
import type { DoraTransport } from "./transport.ts";

/** Options of {@linkcode serveToolEndpoint}. */
export interface ServeToolEndpointOptions {
  /** The node's transport: {@linkcode openDoraNode} under Dora, or a loopback dataflow. */
  readonly transport: DoraTransport;
  /** The input requests arrive on (default `"tool_request"`). */
  readonly requestInputId?: string;
  /** The output responses and events are published on (default `"tool_response"`). */
  readonly responseOutputId?: string;
  /** The Wire message limit (default 1 MiB); see {@linkcode DoraToolEndpointBinding}. */
  readonly maxMessageBytes?: number;
  /** The carrier limit, also the IPC stream limit (default message limit + 64 KiB). */
  readonly maxCarrierBytes?: number;
  /** How long shutdown waits for in-flight work, in milliseconds (default 5000). */
  readonly graceMs?: number;
  /** Where the node logs. */
  readonly logger?: ToolEndpointNodeLogger;
  /**
   * How requests are decoded and messages encoded: `"fast"` (default) with the specialised
   * ToolMessage codec ({@linkcode DoraToolEndpointBinding.dispatchIpc}), `"generic"` with
   * apache-arrow's IPC reader and writer around {@linkcode DoraToolEndpointBinding.dispatchInput}.
   * Both give the same answers; the choice is for comparison.
   */
  readonly codec?: "fast" | "generic";
  /**
   * Keep the endpoint registered: with `true` or lifecycle settings, the node sends
   * `endpoint.register` at start and renews its lease, publishes `endpoint.status` snapshots, and
   * unregisters on shutdown ({@linkcode EndpointNodeLifecycle}), all on the response output;
   * `endpoint.registry.response` messages arriving on the request input feed the loop. Off by
   * default.
   */
  readonly lifecycle?: true | ServeLifecycleSettings;
}

/** Lifecycle settings of {@linkcode serveToolEndpoint} (the handler and sending are its own). */
export type ServeLifecycleSettings = Omit<
  EndpointNodeLifecycleOptions,
  "handler" | "send" | "graceMs" | "closeTransport"
>;

/**
 * Runs `handler` as a Dora node on `options.transport` until Stop or the end of the event stream,
 * then closes the handler (stop admitting, let in-flight work settle up to `graceMs`) and the
 * transport. Bad bytes or a request for another route get no response and do not stop the node.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   TOOL_ENDPOINT_PROTOCOL,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { LoopbackDataflow, serveToolEndpoint } from "@forge/tool/dora";
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: "instance-1",
 *     operations: { detect: { query: () => new ToolResult({ status: "succeeded" }) } },
 *   },
 * );
 * const flow = new LoopbackDataflow(); // under Dora: `transport: await openDoraNode()`
 * const serving = serveToolEndpoint(handler, { transport: flow.transport });
 * await flow.stop();
 * assertEquals((await serving).stopReason, "stop");
 * ```
 */
export function serveToolEndpoint(
  handler: ToolEndpointHandler,
  options: ServeToolEndpointOptions,
): Promise<ToolEndpointNodeStats> {
  const { transport } = options;
  const responseOutputId = options.responseOutputId ?? "tool_response";
  const graceMs = options.graceMs ?? 5000;
  // Everything goes out through the node (created below, before any sink can run), so events
  // and registry messages are counted, and a failed send logged, like responses.
  const send = (bytes: Uint8Array) => node.publish(bytes);
  const codec = options.codec ?? "fast";
  if (codec !== "fast" && codec !== "generic") {
    throw new RangeError(
      `Cannot serve the endpoint as 'codec' must be "fast" or "generic": current value is ${
        String(codec)
      }`,
    );
  }
  const settings = options.lifecycle === true ? {} : options.lifecycle;
  const logger = options.logger;
  const lifecycle = settings === undefined ? undefined : new EndpointNodeLifecycle({
    ...settings,
    // A failing degraded()/details() callback goes to the node's logger when there is one.
    health: settings.health?.onError !== undefined || logger === undefined ? settings.health : {
      ...settings.health,
      onError: (error, callback) =>
        logger("error", `health ${callback}() failed; reporting degraded: ${String(error)}`),
    },
    handler,
    graceMs,
    send: (envelope) =>
      send(encodeToolEnvelopeIpc(envelope, { maxMessageBytes: options.maxMessageBytes })),
  });
  const binding = new DoraToolEndpointBinding(handler, {
    maxMessageBytes: options.maxMessageBytes,
    maxCarrierBytes: options.maxCarrierBytes,
    eventSink: (batch) => send(encodeToolMessageIpc(batch)),
    ipcEventSink: send,
    // Endpoint failures answered with a fallback go to the node's logger, not the console.
    onError: options.logger === undefined
      ? undefined
      : (error) => options.logger!("error", `endpoint failure answered with a fallback: ${error}`),
    onRegistryResponse: lifecycle === undefined
      ? undefined
      : (response) => void lifecycle.receive(response),
  });
  // State changes are reported when they happen: Action/Session permits through the lifecycle's
  // watch of the handler, Query calls (admitted synchronously inside dispatch, released when it
  // answers) by a check right after dispatch starts and after it ends. A check is
  // O(operations) and sends only when the state changed.
  const check = lifecycle === undefined ? () => {} : () => void lifecycle.check();
  const dispatch: (request: Uint8Array) => Promise<Uint8Array[]> = codec === "fast"
    ? (request) => binding.dispatchIpc(request)
    : async (request) => {
      const batch = decodeToolMessageIpc(request, { maxBytes: binding.maxCarrierBytes });
      return (await binding.dispatchInput(batch)).map((response) => encodeToolMessageIpc(response));
    };
  const handle: ToolEndpointRequestHandler = async (request, publish) => {
    const dispatched = dispatch(request);
    check();
    try {
      for (const response of await dispatched) await publish(response);
    } finally {
      check();
    }
  };
  const node = new ToolEndpointNode({
    transport,
    requestInputId: options.requestInputId,
    responseOutputId,
    graceMs,
    logger: options.logger,
    // With a lifecycle: stop admitting, settle, report unavailable, unregister (the runner then
    // closes the transport); without: stop admitting and settle.
    // The node keeps reading events while this runs, so the unregister's answer arrives; when
    // none did (or the send failed), the node's logger gets the reason.
    onShutdown: async () => {
      if (lifecycle === undefined) return await handler.close({ graceMs });
      const response = await lifecycle.shutdown();
      const error = lifecycle.registration.lastError;
      if (response === undefined && error !== undefined) {
        throw new Error(`endpoint.unregister got no answer: ${error.message}`);
      }
    },
    handle,
  });
  const stats = node.run();
  lifecycle?.start();
  return stats;
}

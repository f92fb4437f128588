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
import { settleWithin } from "../_internal/async.ts";
import { consoleLogger, type ToolLogger } from "../endpoint/log.ts";
import { optionalFunction } from "../_internal/options.ts";
import { EndpointNodeLifecycle, type EndpointNodeLifecycleOptions } from "../node/node.ts";
import { DoraToolEndpointBinding } from "./binding.ts";
import { encodeToolEnvelopeIpc } from "./fast_ipc.ts";
import { decodeToolMessageIpc, encodeToolMessageIpc } from "./ipc.ts";
import { ToolEndpointNode } from "./runner.ts";
import type { ToolEndpointNodeStats, ToolEndpointRequestHandler } from "./runner_options.ts";
import type { DoraTransport } from "./transport.ts";

/** The registration loop's default response timeout, which bounds the unregister's wait. */
const DEFAULT_RESPONSE_TIMEOUT_MS = 5000;

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
  /**
   * How long shutdown waits for admitted executions to end and publish their terminal events, in
   * milliseconds (default 5000); see {@linkcode serveToolEndpoint} for the whole bound.
   */
  readonly graceMs?: number;
  /**
   * Where the node reports: the runner's records (`node.*`), the binding's failures
   * (`binding.*`) and, with a lifecycle, the registration loop's and health reporter's
   * (`registration.*`, `health.*`; a `logger` in the lifecycle settings wins for those). A
   * `(level, message)` line logger fits through `lineLogger` (from `@forge/tool`). By default
   * everything goes to the handler's `logger`, except when that is the default `consoleLogger`:
   * the runner's warnings and errors then go to the transport's log (the Dora log).
   *
   * @default {the handler's logger}
   */
  readonly logger?: ToolLogger;
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
 * then shuts down without losing an outcome, in this order:
 *
 * 1. stop admitting and abort every running execution's signal (`handler.close`);
 * 2. wait up to `graceMs` until every admitted Action and Session reached a terminal state and its
 *    terminal event was published; what did not converges to `unknown` and its terminal event is
 *    published then (up to `graceMs` more); answers and events still being sent get up to
 *    `graceMs` more. The node keeps reading events (late requests are answered
 *    `FORGE_ENDPOINT_UNAVAILABLE`) and, with a lifecycle, keeps renewing the lease;
 * 3. with a lifecycle: one `unavailable` snapshot, then `endpoint.unregister` and its answer;
 * 4. close the transport.
 *
 * The runner's own shutdown bound is the sum: three times `graceMs`, plus the unregister timeout
 * with a lifecycle. Bad bytes or a request for another route get no response and do not stop the
 * node.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
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
  const logger = optionalFunction<ToolLogger>("serve the endpoint", "logger", options.logger);
  const lifecycle = settings === undefined ? undefined : new EndpointNodeLifecycle({
    ...settings,
    // The node's logger, unless the lifecycle settings name their own.
    logger: settings.logger ?? logger,
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
    // Without a node logger, the handler's.
    logger,
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
  // Requests being handled, their publication included: an invoke's response and the events
  // emitted before its acceptance go out before the node reports unavailable and unregisters.
  const handling = new Set<Promise<void>>();
  const handleOne = async (
    request: Uint8Array,
    publish: (response: Uint8Array) => Promise<void>,
  ) => {
    const dispatched = dispatch(request);
    check();
    try {
      for (const response of await dispatched) await publish(response);
    } finally {
      check();
    }
  };
  const handle: ToolEndpointRequestHandler = (request, publish) => {
    const work = handleOne(request, publish);
    handling.add(work);
    const forget = () => handling.delete(work);
    work.then(forget, forget);
    return work;
  };
  const settle = async () => {
    await handler.close({ graceMs });
    await settleWithin(handling, graceMs);
  };
  const lifecycleSettings = options.lifecycle === true ? {} : options.lifecycle;
  const unregisterBoundMs = lifecycleSettings === undefined
    ? 0
    : lifecycleSettings.unregisterTimeoutMs ??
      lifecycleSettings.registration?.responseTimeoutMs ?? DEFAULT_RESPONSE_TIMEOUT_MS;
  const node = new ToolEndpointNode({
    transport,
    requestInputId: options.requestInputId,
    responseOutputId,
    // A backstop only: every step of onShutdown has its own bound, and their sum is this.
    graceMs: 3 * graceMs + unregisterBoundMs,
    // One logger set on the handler reaches the runner too; the default keeps the Dora log.
    logger: logger ?? (handler.logger !== consoleLogger ? handler.logger : undefined),
    // Stop admitting, let every admitted execution end and its terminal event go out (settle);
    // with a lifecycle then report unavailable and unregister (lifecycle.shutdown, whose own
    // handler.close finds nothing left to wait for). The runner then closes the transport.
    // The node keeps reading events while this runs, so the unregister's answer arrives; when
    // none did (or the send failed), the node's logger gets the reason.
    onShutdown: async () => {
      await settle();
      if (lifecycle === undefined) return;
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

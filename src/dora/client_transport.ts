/**
 * Client transports over Dora carriers: {@linkcode DoraToolClientTransport} makes a Dora node a
 * caller (it sends `tool_request` outputs and reads `tool_response` inputs through the same
 * {@linkcode DoraTransport} an endpoint node runs on, FFI or loopback), and
 * {@linkcode LoopbackToolClientTransport} calls the endpoint node of a
 * {@linkcode LoopbackDataflow} from its gateway side. Both carry each envelope as one Arrow IPC
 * ToolMessage.
 *
 * @module
 */
import type { ToolClientTransport } from "../client/transport.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "./fast_ipc.ts";
import type { LoopbackDataflow } from "./loopback.ts";
import type { DoraTransport } from "./transport.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { consoleLogger, logSafely, type ToolLogger } from "../endpoint/log.ts";

/** Counters of a Dora client transport, a snapshot. */
export interface DoraToolClientTransportStats {
  /** Requests handed to the carrier. */
  readonly sent: number;
  /** Messages decoded and delivered to the client. */
  readonly delivered: number;
  /** Messages on the response input whose bytes did not decode: dropped. */
  readonly undecodable: number;
  /** Inputs or outputs on other ids: ignored. */
  readonly ignored: number;
}

/** Options of {@linkcode DoraToolClientTransport}. */
export interface DoraToolClientTransportOptions {
  /**
   * The output requests are sent on.
   *
   * @default {"tool_request"}
   */
  readonly requestOutputId?: string;
  /**
   * The input responses and events arrive on.
   *
   * @default {"tool_response"}
   */
  readonly responseInputId?: string;
  /**
   * The Wire message limit for encoding and decoding, in bytes.
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
  /**
   * Where a message dropped because its bytes did not decode is reported: one `warn` record
   * `client_transport.undecodable` with the decoding error (the drop is also counted in
   * {@linkcode DoraToolClientTransportStats.undecodable}).
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
}

/** Options of {@linkcode LoopbackToolClientTransport}. */
export interface LoopbackToolClientTransportOptions {
  /**
   * The node output responses and events are read from; other outputs are ignored.
   *
   * @default {"tool_response"}
   */
  readonly responseOutputId?: string;
  /**
   * The Wire message limit for encoding and decoding, in bytes.
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
  /**
   * Where a message dropped because its bytes did not decode is reported: one `warn` record
   * `client_transport.undecodable` with the decoding error (the drop is also counted in
   * {@linkcode DoraToolClientTransportStats.undecodable}).
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
}

/** The decoding and counting both transports share. */
class EnvelopeChannel {
  readonly #maxMessageBytes: number | undefined;
  readonly #logger: ToolLogger;
  #deliver: ((message: ToolEnvelope) => void) | undefined;
  sent = 0;
  delivered = 0;
  undecodable = 0;
  ignored = 0;

  constructor(
    who: string,
    maxMessageBytes: number | undefined,
    logger: ToolLogger | undefined,
  ) {
    positiveIntegerOption(`create a ${who}`, "maxMessageBytes", maxMessageBytes, 0);
    this.#maxMessageBytes = maxMessageBytes;
    this.#logger = optionalFunction<ToolLogger>(`create a ${who}`, "logger", logger) ??
      consoleLogger;
  }

  connect(deliver: (message: ToolEnvelope) => void): void {
    if (this.#deliver !== undefined) {
      throw new Error("the transport is already connected to a client");
    }
    this.#deliver = deliver;
  }

  encode(request: ToolEnvelope): Uint8Array {
    this.sent++;
    return encodeToolEnvelopeIpc(request, { maxMessageBytes: this.#maxMessageBytes });
  }

  receive(bytes: Uint8Array): void {
    let envelope: ToolEnvelope;
    try {
      envelope = decodeToolEnvelopeIpc(bytes, { maxMessageBytes: this.#maxMessageBytes });
    } catch (error) {
      this.undecodable++;
      logSafely(this.#logger, {
        level: "warn",
        event: "client_transport.undecodable",
        message: `a message of ${bytes.length} bytes did not decode; dropped`,
        error,
      });
      return;
    }
    this.delivered++;
    this.#deliver?.(envelope);
  }

  stats(): DoraToolClientTransportStats {
    return Object.freeze({
      sent: this.sent,
      delivered: this.delivered,
      undecodable: this.undecodable,
      ignored: this.ignored,
    });
  }
}

/**
 * A {@linkcode ToolClientTransport} for a caller that is itself a Dora node: requests go out on
 * the `tool_request` output, responses and events come in on the `tool_response` input of the
 * node's {@linkcode DoraTransport} (from `openDoraNode`, or a loopback dataflow's node side).
 * The transport owns the node: it reads its events from `connect()` until Stop or the end of
 * the stream, and `close()` closes it. Give the client the endpoint instance to address
 * (`endpointInstanceId`), or route through a gateway.
 *
 * @example
 * ```ts ignore
 * import { ToolEndpointClient } from "@forge/tool";
 * import { DoraToolClientTransport, openDoraNode } from "@forge/tool/dora";
 * const client = new ToolEndpointClient({
 *   transport: new DoraToolClientTransport(await openDoraNode()),
 *   endpointId: "vision.yolo",
 *   endpointInstanceId: "yolo-1",
 * });
 * const result = await client.query("detect", { class: "cube" });
 * ```
 */
export class DoraToolClientTransport implements ToolClientTransport {
  readonly #node: DoraTransport;
  readonly #requestOutputId: string;
  readonly #responseInputId: string;
  readonly #channel: EnvelopeChannel;
  #reading: Promise<void> | undefined;
  #stopped = false;

  /** Wraps the node's transport; nothing is read before a client connects. */
  constructor(node: DoraTransport, options: DoraToolClientTransportOptions = {}) {
    if (
      typeof node !== "object" || node === null || typeof node.nextEvent !== "function" ||
      typeof node.sendOutput !== "function"
    ) {
      throw new TypeError(
        optionMessage("create a DoraToolClientTransport", "node", "a DoraTransport", node),
      );
    }
    this.#node = node;
    this.#requestOutputId = options.requestOutputId ?? "tool_request";
    this.#responseInputId = options.responseInputId ?? "tool_response";
    this.#channel = new EnvelopeChannel(
      "DoraToolClientTransport",
      options.maxMessageBytes,
      options.logger,
    );
  }

  /** A snapshot of the transport's counters. */
  get stats(): DoraToolClientTransportStats {
    return this.#channel.stats();
  }

  /** Resolves once the read loop ended (Stop, end of stream, or close). */
  get done(): Promise<void> {
    return this.#reading ?? Promise.resolve();
  }

  /** Takes the client's delivery function and starts reading the node's events. */
  connect(deliver: (message: ToolEnvelope) => void): void {
    this.#channel.connect(deliver);
    this.#reading = this.#read();
  }

  /** Sends `request` on the request output; rejects when Dora refused the bytes. */
  send(request: ToolEnvelope): Promise<void> {
    return this.#node.sendOutput(this.#requestOutputId, this.#channel.encode(request));
  }

  /** Stops reading and closes the node's transport. */
  async close(): Promise<void> {
    this.#stopped = true;
    await this.#node.close();
    await this.#reading;
  }

  async #read(): Promise<void> {
    while (!this.#stopped) {
      const event = await this.#node.nextEvent();
      if (event === null || event.type === "stop") return;
      if (event.type !== "input" || event.id !== this.#responseInputId) {
        this.#channel.ignored++;
        continue;
      }
      this.#channel.receive(event.data);
    }
  }
}

/**
 * A {@linkcode ToolClientTransport} on the gateway side of a {@linkcode LoopbackDataflow}: each
 * request is delivered to the node's request input, each `tool_response` output the node sends
 * is decoded and delivered to the client. The dataflow's fault hooks apply (drop, duplicate,
 * reorder, forge). `close()` stops reading; the dataflow stays open.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   ToolEndpointClient,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * import {
 *   LoopbackDataflow,
 *   LoopbackToolClientTransport,
 *   serveToolEndpoint,
 * } from "@forge/tool/dora";
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: "yolo-1",
 *     operations: {
 *       detect: { query: (request) => new ToolResult({ status: "succeeded", outputs: request.arguments }) },
 *     },
 *   },
 * );
 * const flow = new LoopbackDataflow();
 * const serving = serveToolEndpoint(handler, { transport: flow.transport });
 * const client = new ToolEndpointClient({
 *   transport: new LoopbackToolClientTransport(flow),
 *   endpointId: "vision.yolo",
 *   endpointInstanceId: "yolo-1",
 * });
 * const result = await client.query("detect", { class: "cube" });
 * assertEquals(result.outputs, { class: "cube" });
 * await client.close();
 * await flow.stop();
 * await serving;
 * ```
 */
export class LoopbackToolClientTransport implements ToolClientTransport {
  readonly #flow: LoopbackDataflow;
  readonly #responseOutputId: string;
  readonly #channel: EnvelopeChannel;
  #stopped = false;

  /** Wraps the dataflow's gateway side; nothing is read before a client connects. */
  constructor(flow: LoopbackDataflow, options: LoopbackToolClientTransportOptions = {}) {
    if (typeof flow !== "object" || flow === null || typeof flow.nextOutput !== "function") {
      throw new TypeError(
        optionMessage("create a LoopbackToolClientTransport", "flow", "a LoopbackDataflow", flow),
      );
    }
    this.#flow = flow;
    this.#responseOutputId = options.responseOutputId ?? "tool_response";
    this.#channel = new EnvelopeChannel(
      "LoopbackToolClientTransport",
      options.maxMessageBytes,
      options.logger,
    );
  }

  /** A snapshot of the transport's counters. */
  get stats(): DoraToolClientTransportStats {
    return this.#channel.stats();
  }

  /** Takes the client's delivery function and starts reading the node's outputs. */
  connect(deliver: (message: ToolEnvelope) => void): void {
    this.#channel.connect(deliver);
    void this.#read();
  }

  /** Delivers `request` to the node; rejects when the node closed before taking it. */
  send(request: ToolEnvelope): Promise<void> {
    if (this.#stopped) return Promise.reject(new Error("LoopbackToolClientTransport is closed"));
    return this.#flow.request(this.#channel.encode(request));
  }

  /**
   * Stops delivering. The read already waiting on the dataflow takes (and drops) one more output,
   * so close the client before reading the dataflow's outputs directly.
   */
  close(): void {
    this.#stopped = true;
  }

  async #read(): Promise<void> {
    while (!this.#stopped) {
      const output = await this.#flow.nextOutput();
      if (output === null || this.#stopped) return;
      if (output.id !== this.#responseOutputId) {
        this.#channel.ignored++;
        continue;
      }
      this.#channel.receive(output.data);
    }
  }
}

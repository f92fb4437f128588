/**
 * The options of the Dora node runner ({@linkcode ToolEndpointNode}): the transport, the
 * request-bytes handler, the input and output ids, the shutdown grace period and the logger, with
 * their checks; and the types of its stop reason and live counters.
 *
 * @module
 */
import type { DoraEvent, DoraTransport } from "./transport.ts";
import { optionalFunction } from "../_internal/options.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import { transportLogger } from "./_transport_log.ts";

/**
 * Handles one request's bytes. `publish` sends response bytes on the response output (it may be
 * called any number of times, also after the handler returned, until the transport closed); it
 * rejects when the send failed. A throw or rejection is logged and answered with nothing.
 */
export type ToolEndpointRequestHandler = (
  request: Uint8Array,
  publish: (response: Uint8Array) => Promise<void>,
) => Promise<void>;

/** Options of {@linkcode runToolEndpointNode} and {@linkcode ToolEndpointNode}. */
export interface ToolEndpointNodeOptions {
  /** Where events come from and outputs go (the FFI node or a loopback dataflow). */
  readonly transport: DoraTransport;
  /**
   * The request-bytes handler, called once per request input and not awaited before the next
   * event is read.
   */
  readonly handle: ToolEndpointRequestHandler;
  /** The input carrying requests (default `"tool_request"`). Other inputs are ignored. */
  readonly requestInputId?: string;
  /** The output responses are published on (default `"tool_response"`). */
  readonly responseOutputId?: string;
  /**
   * How long a shutdown waits for `onShutdown` and the in-flight handler calls, in milliseconds
   * (default 5000). The transport closes afterwards even if some are still running.
   */
  readonly graceMs?: number;
  /** Called once when shutdown begins, before in-flight requests are awaited (e.g. handler.close). */
  readonly onShutdown?: () => Promise<void>;
  /**
   * Receives the runner's records (events `node.read_failed`, `node.request_failed`,
   * `node.publish_failed`, `node.shutdown_hook_failed`, `node.grace_exceeded`,
   * `node.transport_close_failed`, and `node.dora_event`, `node.input_ignored` at `debug` or
   * `info`). A `(level, message)` line logger fits through `lineLogger` (from `@forge/tool`).
   * By default warnings and errors go to the transport's log as the text `consoleLogger`
   * writes, or to `consoleLogger` when the transport has no log; `debug` and `info` are dropped.
   *
   * @default {the transport's log}
   */
  readonly logger?: ToolLogger;
}

/** Why a {@linkcode ToolEndpointNode} stopped serving. */
export type ToolEndpointNodeStopReason =
  /** Dora delivered a Stop event. */
  | "stop"
  /** The event stream ended (`nextEvent` returned `null`). */
  | "end-of-stream"
  /** {@linkcode ToolEndpointNode.stop} was called. */
  | "requested"
  /** `nextEvent` failed; {@linkcode ToolEndpointNode.run} rejects with that error. */
  | "transport-error";

/** Counters of a {@linkcode ToolEndpointNode}, live while it runs. */
export interface ToolEndpointNodeStats {
  /** Input events received, on any input id. */
  inputs: number;
  /** Input events on the request input (handler calls started). */
  requests: number;
  /**
   * Messages published successfully on the response output: the handlers' responses and
   * whatever went through {@linkcode ToolEndpointNode.publish} (events, registrations).
   */
  responses: number;
  /** Handler calls that threw or rejected (a failed publish the handler let through included). */
  errors: number;
  /** Publishes whose send failed. */
  sendFailures: number;
  /** Handler calls still running when the transport was closed after the grace period. */
  abandoned: number;
  /** Non-input events received, by type (`stop`, `input-closed`, `error`, `unknown`). */
  readonly events: Map<Exclude<DoraEvent["type"], "input">, number>;
  /** The timestamp (epoch ms) of the last input received, per input id. */
  readonly lastTimestampMs: Map<string, number>;
  /** Why serving stopped; `null` while the node runs. */
  stopReason: ToolEndpointNodeStopReason | null;
}

const DEFAULT_REQUEST_INPUT = "tool_request";
const DEFAULT_RESPONSE_OUTPUT = "tool_response";
const DEFAULT_GRACE_MS = 5000;

/** @internal The checked options of a node, defaults filled in. */
export interface ToolEndpointNodeSettings {
  readonly transport: DoraTransport;
  readonly handle: ToolEndpointRequestHandler;
  readonly requestInputId: string;
  readonly responseOutputId: string;
  readonly graceMs: number;
  readonly onShutdown: (() => Promise<void>) | undefined;
  readonly logger: ToolLogger;
}

/**
 * @internal Checks, in order, `handle` (a function, `TypeError`), `transport` (an object,
 * `TypeError`), `graceMs` (a non-negative finite number, `RangeError`) and `logger`, and fills in
 * the defaults.
 */
export function nodeSettings(options: ToolEndpointNodeOptions): ToolEndpointNodeSettings {
  if (typeof options?.handle !== "function") {
    throw new TypeError(
      `Cannot create a ToolEndpointNode as 'handle' must be a function: current value is ${
        String(options?.handle)
      }`,
    );
  }
  if (options.transport === null || typeof options.transport !== "object") {
    throw new TypeError(
      "Cannot create a ToolEndpointNode as 'transport' must be a DoraTransport: current value " +
        `is ${String(options.transport)}`,
    );
  }
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  if (!(graceMs >= 0) || !Number.isFinite(graceMs)) {
    throw new RangeError(
      `Cannot create a ToolEndpointNode as 'graceMs' must be a non-negative finite number: ` +
        `current value is ${graceMs}`,
    );
  }
  return {
    transport: options.transport,
    handle: options.handle,
    requestInputId: options.requestInputId ?? DEFAULT_REQUEST_INPUT,
    responseOutputId: options.responseOutputId ?? DEFAULT_RESPONSE_OUTPUT,
    graceMs,
    onShutdown: options.onShutdown,
    logger: optionalFunction<ToolLogger>(
      "create a ToolEndpointNode",
      "logger",
      options.logger,
    ) ?? transportLogger(options.transport),
  };
}

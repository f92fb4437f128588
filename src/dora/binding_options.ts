/**
 * The options of {@linkcode DoraToolEndpointBinding}: its message and carrier limits, the event
 * sinks of its two entry points (Arrow record batches and IPC bytes), its logger and the hook
 * that takes Registry responses for the registration loop.
 *
 * @module
 */
import type { RecordBatch } from "apache-arrow";
import type { ToolLogger } from "../endpoint/log.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";

/**
 * Publishes one ToolMessage record batch on the node's output and resolves once it is published
 * (the acknowledgement the publication barrier waits for).
 */
export type DoraEventSink = (batch: RecordBatch) => void | PromiseLike<void>;

/**
 * Publishes one ToolMessage as Arrow IPC stream bytes on the node's output and resolves once it
 * is published (the IPC form of {@linkcode DoraEventSink}, used by
 * {@linkcode DoraToolEndpointBinding.dispatchIpc}).
 */
export type DoraIpcEventSink = (bytes: Uint8Array) => void | PromiseLike<void>;

/** Options of {@linkcode DoraToolEndpointBinding}. */
export interface DoraToolEndpointBindingOptions {
  /**
   * The largest logical encoded message, in bytes, of every response and event (at least 1024).
   * Requests get 512 bytes less, kept as headroom for a correlated error.
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
  /**
   * The largest in-memory Arrow carrier accepted, in bytes, checked before anything is read (at
   * least `maxMessageBytes`).
   *
   * @default {maxMessageBytes + 65536}
   */
  readonly maxCarrierBytes?: number;
  /**
   * Publishes Action and Session invoke responses and their events, in order (required for
   * {@linkcode DoraToolEndpointBinding.dispatchInput} of an Action or Session invoke).
   */
  readonly eventSink?: DoraEventSink;
  /**
   * Publishes, as IPC bytes, Action and Session invoke responses and their events, in order
   * (required for {@linkcode DoraToolEndpointBinding.dispatchIpc} of an Action or Session invoke).
   */
  readonly ipcEventSink?: DoraIpcEventSink;
  /**
   * Where the binding reports, one `error` record per failure with the request's ids and the
   * cause: an endpoint failure answered with a correlated fallback (`binding.dispatch_failed`),
   * a response or fallback that could not be encoded (`binding.response_unencodable`,
   * `binding.fallback_unencodable`), an acceptance that did not reach the caller
   * (`binding.acceptance_undelivered`).
   *
   * @default {the handler's logger}
   */
  readonly logger?: ToolLogger;
  /**
   * Receives every `endpoint.registry.response` arriving on the request input, for the node's
   * registration loop ({@linkcode EndpointNodeLifecycle.receive}, which ignores uncorrelated
   * ones); `dispatchInput` and `dispatchIpc` then return no message. Without it such a message is
   * refused like any non-execution request.
   */
  readonly onRegistryResponse?: (response: ToolEnvelope) => void;
}

/**
 * {@linkcode InProcessToolClientTransport}: a {@linkcode ToolEndpointClient} calling a
 * {@linkcode ToolEndpointHandler} in the same process, without encoding.
 *
 * @module
 */
import { dispatchRouted, type ToolEndpointHandler } from "../handler/handler.ts";
import { ToolProtocolError } from "../endpoint/errors.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import type { ToolClientTransport } from "./transport.ts";
import { ToolClientError, ToolClientErrorCodes, type ToolClientOutcome } from "./errors.ts";
import { optionMessage } from "../_internal/options.ts";

function unanswered(
  request: ToolEnvelope,
  error: unknown,
  outcome: ToolClientOutcome,
): ToolClientError {
  const reason = error instanceof ToolProtocolError
    ? error.toString()
    : error instanceof Error
    ? `${error.name}: ${error.message}`
    : String(error);
  const what = outcome === "not_admitted"
    ? `refused the ${request.messageType} without answering`
    : `failed the ${request.messageType} without answering`;
  return new ToolClientError(`the endpoint handler ${what}: ${reason}`, {
    code: ToolClientErrorCodes.UNANSWERED,
    retryable: false,
    outcome,
    cause: error,
  });
}

/**
 * A {@linkcode ToolClientTransport} that dispatches each request to a handler in this process and
 * delivers what it answers: the response, the events emitted before acceptance, then (through
 * the handler's event sink) later events. The instance addressed is the handler's.
 *
 * A request the handler does not answer makes `send` reject, so the call fails at once with a
 * `FORGE_CLIENT_UNANSWERED` {@linkcode ToolClientError} whose message states the handler's reason,
 * instead of waiting for its timeout: a route it refuses (another endpoint or instance, an
 * undeclared operation) with outcome `"not_admitted"`, a provider failure it does not answer (an
 * SPI `query()` that throws, or returns no `ToolResult`) with outcome `"unknown"`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   InProcessToolClientTransport,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "clock",
 *     operations: [new ToolOperationDescriptor({ name: "now", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: "clock-1",
 *     operations: { now: { query: () => new ToolResult({ status: "succeeded" }) } },
 *   },
 * );
 * const transport = new InProcessToolClientTransport(handler);
 * assertEquals(transport.resolveInstance(), "clock-1");
 * ```
 */
export class InProcessToolClientTransport implements ToolClientTransport {
  readonly #handler: ToolEndpointHandler;
  #deliver: ((message: ToolEnvelope) => void) | undefined;
  #closed = false;

  /** Wraps `handler`; nothing is sent before a client connects. */
  constructor(handler: ToolEndpointHandler) {
    if (
      typeof handler !== "object" || handler === null ||
      typeof (handler as ToolEndpointHandler).dispatch !== "function"
    ) {
      throw new TypeError(
        optionMessage(
          "create an InProcessToolClientTransport",
          "handler",
          "a ToolEndpointHandler",
          handler,
        ),
      );
    }
    this.#handler = handler;
  }

  /** Takes the client's delivery function (once). */
  connect(deliver: (message: ToolEnvelope) => void): void {
    if (this.#deliver !== undefined) {
      throw new Error("InProcessToolClientTransport is already connected to a client");
    }
    this.#deliver = deliver;
  }

  /** The handler's instance. */
  resolveInstance(): string {
    return this.#handler.endpointInstanceId;
  }

  /**
   * Dispatches `request`; resolves once its answers were delivered, rejects when the handler
   * refuses to answer it or the transport is closed.
   */
  async send(request: ToolEnvelope): Promise<void> {
    const deliver = this.#deliver;
    if (deliver === undefined) throw new Error("InProcessToolClientTransport is not connected");
    if (this.#closed) throw new Error("InProcessToolClientTransport is closed");
    try {
      this.#handler.validateRequestRoute(request);
    } catch (error) {
      throw unanswered(request, error, "not_admitted");
    }
    let messages: readonly ToolEnvelope[];
    try {
      messages = await dispatchRouted(this.#handler, request, {
        eventSink: (event) => {
          if (!this.#closed) deliver(event);
        },
      });
    } catch (error) {
      throw unanswered(request, error, "unknown");
    }
    if (this.#closed) return;
    for (const message of messages) deliver(message);
  }

  /** Stops delivering; the handler itself stays open (its owner closes it). */
  close(): void {
    this.#closed = true;
  }
}

// Stays whole: one class; its two entry points share dispatch and fallbacks (decode, codec and barrier live in _binding_*.ts).
/**
 * The Dora binding of a {@linkcode ToolEndpointHandler}: bounded ToolMessage carriers in (Arrow
 * values, or Arrow IPC bytes through the fast codec), responses and events out in the same form,
 * with correlated fallbacks that fit the configured message limit and an acknowledged
 * publication barrier that puts every Action or Session response on the output before any of its
 * events.
 *
 * The binding owns no Dora node and chooses no input or output ids: a node receives an input,
 * awaits the binding, and publishes what it returns (or what the event sink receives).
 *
 * @module
 */
import type { RecordBatch } from "apache-arrow";
import { ToolProtocolError } from "../endpoint/errors.ts";
import { dispatchRouted, ToolEndpointHandler, type ToolRequestRoute } from "../handler/handler.ts";
import { optionalFunction, optionMessage } from "../_internal/options.ts";
import { logIdsOf, logSafely, type ToolLogger } from "../endpoint/log.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import type { DecodedCarrier } from "./_carrier_rules.ts";
import { toolEnvelopeToMessage, type ToolMessageArrowValue } from "./carrier.ts";
import { encodeToolEnvelopeIpc } from "./fast_ipc.ts";
import type {
  DoraEventSink,
  DoraIpcEventSink,
  DoraToolEndpointBindingOptions,
} from "./binding_options.ts";
import {
  correlatedInternalError,
  correlatedProtocolError,
  DISPATCH_FAILED,
  type OutputCodec,
} from "./_binding_codec.ts";
import { type PublishPorts, publishStart } from "./_binding_publish.ts";
import {
  type BindingLimits,
  bindingLimits,
  requestFromArrow,
  requestFromIpc,
  requestTooLarge,
} from "./_binding_decode.ts";

const CREATE_BINDING = "create a DoraToolEndpointBinding";

/**
 * Bridges bounded Dora ToolMessage inputs to an embedded {@linkcode ToolEndpointHandler}.
 *
 * Two entry points share one implementation: {@linkcode DoraToolEndpointBinding.dispatchInput}
 * takes and returns Arrow values (publishing events through `eventSink`), and
 * {@linkcode DoraToolEndpointBinding.dispatchIpc} takes and returns ToolMessage IPC stream bytes
 * through the fast codec ({@linkcode decodeToolEnvelopeIpc}, {@linkcode encodeToolEnvelopeIpc};
 * events go to `ipcEventSink`), with exactly the outcome of decoding the bytes with
 * {@linkcode decodeToolMessageIpc} (limit: `maxCarrierBytes`), dispatching the batch and encoding
 * each message with {@linkcode encodeToolMessageIpc}.
 *
 * Before route trust everything is raised, never answered: IPC bytes given to `dispatchInput`
 * (`TypeError`), an IPC stream or a carrier larger than `maxCarrierBytes` or a `payload_json`
 * larger than `maxMessageBytes`
 * (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`), carrier rule violations, and the handler's route check
 * ({@linkcode ToolEndpointHandler.validateRequestRouteHeaders}: a message that is no execution
 * request, `FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE`; `FORGE_PROTOCOL_ROUTE_MISMATCH`,
 * `FORGE_PROTOCOL_UNKNOWN_OPERATION`). The route check reads the header columns once they passed
 * their carrier rules and before `payload_json` is parsed, so refusing a request for another
 * route costs no payload parse (and a payload error of such a request is not reported: its route
 * is). Once the route is
 * trusted, every failure gets a correlated `tool.error` that fits the message limit: a request
 * larger than `maxRequestBytes`, a response that is too large or violates the Wire, and an
 * endpoint that throws (`FORGE_ENDPOINT_INTERNAL`).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   ToolContext,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolExecutionKey,
 *   ToolOperationDescriptor,
 *   ToolRequest,
 *   ToolResult,
 * } from "@forge/tool";
 * import { makeInvokeRequestEnvelope } from "@forge/tool/wire";
 * import {
 *   DoraToolEndpointBinding,
 *   toolEnvelopeToMessage,
 *   toolMessageToEnvelope,
 * } from "@forge/tool/dora";
 *
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: "forge.tool.endpoint/v1alpha1",
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: "instance-1",
 *     operations: {
 *       detect: { query: (request) => new ToolResult({ status: "succeeded", outputs: request.arguments }) },
 *     },
 *   },
 * );
 * const binding = new DoraToolEndpointBinding(handler);
 * const context = new ToolContext({
 *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
 *   toolId: "forge.tool.detect",
 *   implementationId: "yolo",
 *   endpointId: "vision.yolo",
 *   operation: "detect",
 * });
 * const request = makeInvokeRequestEnvelope(new ToolRequest({ arguments: { class: "cube" } }), context, {
 *   requestId: "request-1",
 *   endpointInstanceId: "instance-1",
 * });
 * const [response] = await binding.dispatchInput(toolEnvelopeToMessage(request));
 * assertEquals(toolMessageToEnvelope(response).messageType, "tool.invoke.response");
 * ```
 */
export class DoraToolEndpointBinding {
  readonly #handler: ToolEndpointHandler;
  readonly #arrow: OutputCodec<RecordBatch>;
  readonly #ipc: OutputCodec<Uint8Array>;
  readonly #logger: ToolLogger;
  readonly #onRegistryResponse: ((response: ToolEnvelope) => void) | undefined;
  /** The checked limits (one frozen object, read on every message). */
  readonly #limits: BindingLimits;
  /** The options of every encode: the message limit (one object, not one per message). */
  readonly #encodeOptions: { readonly maxMessageBytes: number };
  /** What the publication barrier calls back (made once, not per message). */
  readonly #ports: PublishPorts;
  /** The names of the declared Action and Session operations. */
  readonly #startOperations: ReadonlySet<string>;

  /**
   * Checks, in order: the handler (`TypeError`), `maxMessageBytes` (a positive integer of at
   * least 1024, `RangeError`), `maxCarrierBytes` (a positive integer of at least
   * `maxMessageBytes`, `RangeError`), `eventSink` and `ipcEventSink` (functions, `TypeError`).
   */
  constructor(handler: ToolEndpointHandler, options: DoraToolEndpointBindingOptions = {}) {
    if (!(handler instanceof ToolEndpointHandler)) {
      throw new TypeError(
        optionMessage(CREATE_BINDING, "handler", "a ToolEndpointHandler", handler),
      );
    }
    if (typeof options !== "object" || options === null) {
      throw new TypeError(optionMessage(CREATE_BINDING, "options", "an object", options));
    }
    const limits = bindingLimits(CREATE_BINDING, options);
    const sink = optionalFunction<DoraEventSink>(CREATE_BINDING, "eventSink", options.eventSink);
    const ipcSink = optionalFunction<DoraIpcEventSink>(
      CREATE_BINDING,
      "ipcEventSink",
      options.ipcEventSink,
    );
    this.#handler = handler;
    this.#ports = {
      handler,
      encodeResponse: (codec, response, request) =>
        this.#encodeResponse(codec, response, request, false),
      event: (codec, event) => this.#event(codec, event),
      report: (event, message, error, request) => this.#report(event, message, error, request),
    };
    this.#arrow = { encode: toolEnvelopeToMessage, sink };
    this.#ipc = { encode: encodeToolEnvelopeIpc, sink: ipcSink };
    this.#logger = optionalFunction<ToolLogger>(CREATE_BINDING, "logger", options.logger) ??
      handler.logger;
    this.#onRegistryResponse = optionalFunction<(response: ToolEnvelope) => void>(
      CREATE_BINDING,
      "onRegistryResponse",
      options.onRegistryResponse,
    );
    this.#limits = limits;
    this.#encodeOptions = Object.freeze({ maxMessageBytes: limits.maxMessageBytes });
    this.#startOperations = new Set(
      handler.descriptor.operations.filter((operation) => operation.semantics !== "query")
        .map((operation) => operation.name),
    );
  }

  /** The embedded transport-independent handler. */
  get handler(): ToolEndpointHandler {
    return this.#handler;
  }

  /** The logical encoded-message limit of every response and event. */
  get maxMessageBytes(): number {
    return this.#limits.maxMessageBytes;
  }

  /** The logical encoded-message limit of a request (`maxMessageBytes` − 512). */
  get maxRequestBytes(): number {
    return this.#limits.maxRequestBytes;
  }

  /** The in-memory Arrow carrier limit, checked before a carrier is read. */
  get maxCarrierBytes(): number {
    return this.#limits.maxCarrierBytes;
  }

  /** Reports a failure as a `logger` record with the request's ids. */
  #report(event: string, message: string, error: unknown, request: ToolEnvelope): void {
    logSafely(this.#logger, { level: "error", event, message, ...logIdsOf(request), error });
  }

  #fallback<T>(
    codec: OutputCodec<T>,
    fallback: ToolEnvelope,
    request: ToolEnvelope,
    original: unknown,
  ): T {
    try {
      return codec.encode(fallback, this.#encodeOptions);
    } catch (error) {
      this.#report(
        "binding.fallback_unencodable",
        "the correlated fallback answer could not be encoded either; the request gets no answer",
        error,
        request,
      );
      throw original;
    }
  }

  #response<T>(codec: OutputCodec<T>, response: ToolEnvelope, request: ToolEnvelope): T {
    return this.#encodeResponse(codec, response, request).message;
  }

  /** Encodes a response, or its correlated fallback (`fallback: true`) when it cannot be. */
  #encodeResponse<T>(
    codec: OutputCodec<T>,
    response: ToolEnvelope,
    request: ToolEnvelope,
    reportFailure = true,
  ): { readonly message: T; readonly failure?: unknown } {
    try {
      return { message: codec.encode(response, this.#encodeOptions) };
    } catch (error) {
      if (reportFailure) {
        this.#report(
          "binding.response_unencodable",
          `the ${response.messageType} could not be encoded; a correlated tool.error answers instead`,
          error,
          request,
        );
      }
      const fallback = error instanceof ToolProtocolError
        ? correlatedProtocolError(error, request, this.#limits.maxMessageBytes)
        : correlatedInternalError(request);
      return { message: this.#fallback(codec, fallback, request, error), failure: error };
    }
  }

  /** Encodes one event; a failure is raised, never turned into a correlated response. */
  #event<T>(codec: OutputCodec<T>, event: ToolEnvelope): T {
    if (event.messageType !== "tool.event") {
      throw new RangeError("event sink only accepts tool.event envelopes");
    }
    return codec.encode(event, this.#encodeOptions);
  }

  /**
   * The route check of every inbound carrier, run on its header columns before `payload_json` is
   * parsed: a request for another route is raised, never answered, and costs no parse. A Registry
   * response passes when the registration loop takes it (`onRegistryResponse`).
   */
  #trust(route: ToolRequestRoute, registryResponses: boolean): void {
    if (
      registryResponses && this.#onRegistryResponse !== undefined &&
      route.messageType === "endpoint.registry.response"
    ) return;
    this.#handler.validateRequestRouteHeaders(route);
  }

  readonly #trustRequest = (route: ToolRequestRoute): void => this.#trust(route, false);
  readonly #trustInput = (route: ToolRequestRoute): void => this.#trust(route, true);

  /** The correlated too-large answer to a trusted request beyond `maxRequestBytes`, if any. */
  #requestTooLarge<T>(codec: OutputCodec<T>, decoded: DecodedCarrier): T | undefined {
    const tooLarge = requestTooLarge(decoded, this.#limits);
    if (tooLarge === undefined) return undefined;
    return this.#fallback(codec, tooLarge.fallback, decoded.envelope, tooLarge.error);
  }

  /** True for an invoke of an Action or Session operation (one that starts an execution). */
  #startsExecution(request: ToolEnvelope): boolean {
    return request.messageType === "tool.invoke.request" &&
      this.#startOperations.has(request.operation!);
  }

  /**
   * Handles one Query `tool.invoke.request` carrier and returns its single Arrow response (the
   * legacy Query-only entry; {@linkcode dispatchInput} handles every execution request).
   *
   * IPC bytes are a `TypeError`: decode them upstream under bounded framing and decompression
   * limits ({@linkcode decodeToolMessageIpc}). A message that is no execution request is refused
   * by the route check (`FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE`), another request type is a
   * `RangeError`, an Action or Session operation a `TypeError` (its provider is never started).
   */
  async handleInput(value: ToolMessageArrowValue): Promise<RecordBatch> {
    // The route was checked on the headers (an execution request for this endpoint): what is
    // left of the handler's invoke-route check is the message type.
    const decoded = requestFromArrow(value, this.#limits, this.#trustRequest);
    const request = decoded.envelope;
    if (request.messageType !== "tool.invoke.request") {
      throw new RangeError("request envelope must be tool.invoke.request");
    }
    if (this.#startsExecution(request)) {
      throw new TypeError(
        "handleInput is Query-only; Action or Session operations must use dispatchInput",
      );
    }
    const tooLarge = this.#requestTooLarge(this.#arrow, decoded);
    if (tooLarge !== undefined) return tooLarge;
    let response: ToolEnvelope;
    try {
      // handleInvoke stays the call (a subclass may override it), with its own route check.
      response = await this.#handler.handleInvoke(request);
    } catch (error) {
      this.#report("binding.dispatch_failed", DISPATCH_FAILED, error, request);
      response = correlatedInternalError(request);
    }
    return this.#response(this.#arrow, response, request);
  }

  /**
   * Dispatches one execution request carrier (invoke, status, result or control).
   *
   * For a Query invoke and for status, result and control requests the Arrow messages are
   * returned, the correlated response first. For an Action or Session invoke (which requires
   * `eventSink`) everything is published through the sink and an empty array is returned: the
   * response is published and acknowledged first, then the events emitted before acceptance in
   * sequence order, then events emitted later — a late event waits until the response is
   * published. A failure never fabricates a second correlated answer: if the response cannot be
   * published, waiting and later events fail with an `Error` whose `cause` is the failure; an
   * event that cannot be encoded or published is raised to the provider from `emit()` (late) or
   * from this method after the response was published (early).
   *
   * An acceptance that does not reach the caller (it cannot be encoded within the limit, so a
   * correlated `tool.error` goes out instead, or the sink fails to publish it) does not leave its
   * execution running unseen: the binding calls {@linkcode ToolEndpointHandler.abandonInvoke}
   * (the provider's signal aborts, the outcome converges to `unknown` for a retry, a status or a
   * result to read, the permit is released), publishes none of its events (later emits fail with
   * `FORGE_ENDPOINT_EVENT_AFTER_TERMINAL`), and logs `binding.acceptance_undelivered`.
   */
  async dispatchInput(value: ToolMessageArrowValue): Promise<RecordBatch[]> {
    return await this.#dispatchDecoded(
      this.#arrow,
      requestFromArrow(value, this.#limits, this.#trustInput),
    );
  }

  /**
   * Dispatches one execution request given as ToolMessage Arrow IPC stream bytes and returns the
   * messages as IPC bytes, through the fast codec: {@linkcode dispatchInput} with the same
   * barrier, fallbacks and errors, as if the bytes were decoded with
   * {@linkcode decodeToolMessageIpc} (limit: `maxCarrierBytes`) and every message encoded with
   * {@linkcode encodeToolMessageIpc}. An Action or Session invoke requires `ipcEventSink`, which
   * receives the response and the events. A non-bytes argument is a `TypeError`.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import {
   *   ToolContext,
   *   ToolEndpointDescriptor,
   *   ToolEndpointHandler,
   *   ToolExecutionKey,
   *   ToolOperationDescriptor,
   *   ToolRequest,
   *   ToolResult,
   * } from "@forge/tool";
   * import { makeInvokeRequestEnvelope } from "@forge/tool/wire";
   * import {
   *   decodeToolEnvelopeIpc,
   *   DoraToolEndpointBinding,
   *   encodeToolEnvelopeIpc,
   * } from "@forge/tool/dora";
   *
   * const handler = new ToolEndpointHandler(
   *   new ToolEndpointDescriptor({
   *     protocolVersion: "forge.tool.endpoint/v1alpha1",
   *     endpointId: "vision.yolo",
   *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
   *   }),
   *   {
   *     endpointInstanceId: "instance-1",
   *     operations: {
   *       detect: { query: (request) => new ToolResult({ status: "succeeded", outputs: request.arguments }) },
   *     },
   *   },
   * );
   * const context = new ToolContext({
   *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
   *   toolId: "forge.tool.detect",
   *   implementationId: "yolo",
   *   endpointId: "vision.yolo",
   *   operation: "detect",
   * });
   * const request = makeInvokeRequestEnvelope(new ToolRequest({ arguments: { class: "cube" } }), context, {
   *   requestId: "request-1",
   *   endpointInstanceId: "instance-1",
   * });
   * const binding = new DoraToolEndpointBinding(handler);
   * const [response] = await binding.dispatchIpc(encodeToolEnvelopeIpc(request));
   * assertEquals(decodeToolEnvelopeIpc(response).messageType, "tool.invoke.response");
   * ```
   */
  async dispatchIpc(bytes: Uint8Array | ArrayBuffer): Promise<Uint8Array[]> {
    return await this.#dispatchDecoded(
      this.#ipc,
      requestFromIpc(bytes, this.#limits, this.#trustInput),
    );
  }

  /**
   * Hands a Registry response to the registration loop, or dispatches a request whose route the
   * decode trusted. A request that is answered at once (a Query invoke, a status, result or
   * control request) takes no publication barrier: nothing is published before its answer.
   */
  #dispatchDecoded<T>(codec: OutputCodec<T>, decoded: DecodedCarrier): T[] | Promise<T[]> {
    const request = decoded.envelope;
    const hook = this.#onRegistryResponse;
    if (hook !== undefined && request.messageType === "endpoint.registry.response") {
      hook(request);
      return [];
    }
    const tooLarge = this.#requestTooLarge(codec, decoded);
    if (tooLarge !== undefined) return [tooLarge];
    if (this.#startsExecution(request)) {
      return this.#dispatchStart(codec, request);
    }
    return this.#answer(codec, request);
  }

  /** Dispatches a request answered at once and encodes its answer (the route is trusted). */
  async #answer<T>(codec: OutputCodec<T>, request: ToolEnvelope): Promise<T[]> {
    let messages: readonly ToolEnvelope[];
    try {
      messages = await dispatchRouted(this.#handler, request);
    } catch (error) {
      // A trusted request always gets an answer.
      this.#report("binding.dispatch_failed", DISPATCH_FAILED, error, request);
      messages = [correlatedInternalError(request)];
    }
    return messages.map((message) =>
      message.messageType === "tool.event"
        ? this.#event(codec, message)
        : this.#response(codec, message, request)
    );
  }

  /**
   * Dispatches an Action or Session invoke (the route is trusted, the size checked) with the
   * publication barrier and the fallbacks: everything goes out through the codec's sink.
   */
  #dispatchStart<T>(codec: OutputCodec<T>, request: ToolEnvelope): Promise<T[]> {
    return publishStart(codec, request, this.#ports);
  }
}

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
import { FifoLock, withResolvers } from "../_internal/async.ts";
import type { RecordBatch } from "apache-arrow";
import { isArrowData, isArrowRecordBatch, isArrowTable, isArrowVector } from "apache-arrow";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { ToolError } from "../endpoint/models.ts";
import { dispatchRouted, ToolEndpointHandler, type ToolRequestRoute } from "../handler/handler.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { logIdsOf, logSafely, type ToolLogger } from "../endpoint/log.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { maxMessageBytesOption } from "../wire/codec.ts";
import { makeErrorResponseEnvelope } from "../wire/factories.ts";
import { type DecodedCarrier, envelopeFromRow } from "./_carrier_rules.ts";
import { carrierMessageSizeOver } from "./_carrier_size.ts";
import {
  carrierToEnvelope,
  toolEnvelopeToMessage,
  type ToolMessageArrowValue,
  toolMessageCarrierSize,
} from "./carrier.ts";
import { decodeCarrierIpc, encodeToolEnvelopeIpc } from "./fast_ipc.ts";

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

const CREATE_BINDING = "create a DoraToolEndpointBinding";
/** The message of a `binding.dispatch_failed` record. */
const DISPATCH_FAILED =
  "the handler failed on a trusted request; it is answered FORGE_ENDPOINT_INTERNAL";
const CORRELATED_ERROR_RESERVE_BYTES = 512;
const MIN_BINDING_MESSAGE_BYTES = 1024;
const DEFAULT_CARRIER_OVERHEAD_BYTES = 65536;
const SIZE_LIMIT_MESSAGE = "ToolEndpoint message exceeds the configured size limit";
const IPC_BYTES_MESSAGE =
  "DoraToolEndpointBinding does not accept IPC bytes; decode them upstream " +
  "under bounded framing and decompression limits";

function correlatedProtocolError(
  error: ToolProtocolError,
  request: ToolEnvelope,
  maxMessageBytes: number,
  maxRequestBytes?: number,
): ToolEnvelope {
  const details: Record<string, number> = {};
  let message = "ToolEndpoint response violates the Wire protocol";
  if (error.code === ToolErrorCodes.MESSAGE_TOO_LARGE) {
    message = SIZE_LIMIT_MESSAGE;
    details.max_message_bytes = maxMessageBytes;
    if (maxRequestBytes !== undefined) details.max_request_bytes = maxRequestBytes;
  }
  return makeErrorResponseEnvelope(
    new ToolError({ code: error.code, message, retryable: false, details }),
    request,
  );
}

function correlatedInternalError(request: ToolEnvelope): ToolEnvelope {
  return makeErrorResponseEnvelope(
    new ToolError({
      code: ToolErrorCodes.ENDPOINT_INTERNAL,
      message: "endpoint failed to produce a valid response",
      retryable: false,
    }),
    request,
  );
}

/** How one entry point writes its messages: as Arrow record batches or as IPC bytes. */
interface OutputCodec<T> {
  readonly encode: (envelope: ToolEnvelope, options: { maxMessageBytes: number }) => T;
  readonly sink: ((message: T) => void | PromiseLike<void>) | undefined;
}

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
  readonly #maxMessageBytes: number;
  readonly #maxRequestBytes: number;
  readonly #maxCarrierBytes: number;
  /** The options of every encode: the message limit (one object, not one per message). */
  readonly #encodeOptions: { readonly maxMessageBytes: number };
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
    const maximum = maxMessageBytesOption(CREATE_BINDING, options.maxMessageBytes);
    if (maximum < MIN_BINDING_MESSAGE_BYTES) {
      throw new RangeError(
        optionMessage(
          CREATE_BINDING,
          "maxMessageBytes",
          `at least ${MIN_BINDING_MESSAGE_BYTES} for correlated error responses`,
          maximum,
        ),
      );
    }
    const carrierMaximum = positiveIntegerOption(
      CREATE_BINDING,
      "maxCarrierBytes",
      options.maxCarrierBytes,
      maximum + DEFAULT_CARRIER_OVERHEAD_BYTES,
    );
    if (carrierMaximum < maximum) {
      throw new RangeError(
        optionMessage(
          CREATE_BINDING,
          "maxCarrierBytes",
          `at least 'maxMessageBytes' (${maximum})`,
          carrierMaximum,
        ),
      );
    }
    const sink = optionalFunction<DoraEventSink>(CREATE_BINDING, "eventSink", options.eventSink);
    const ipcSink = optionalFunction<DoraIpcEventSink>(
      CREATE_BINDING,
      "ipcEventSink",
      options.ipcEventSink,
    );
    this.#handler = handler;
    this.#arrow = { encode: toolEnvelopeToMessage, sink };
    this.#ipc = { encode: encodeToolEnvelopeIpc, sink: ipcSink };
    this.#logger = optionalFunction<ToolLogger>(CREATE_BINDING, "logger", options.logger) ??
      handler.logger;
    this.#onRegistryResponse = optionalFunction<(response: ToolEnvelope) => void>(
      CREATE_BINDING,
      "onRegistryResponse",
      options.onRegistryResponse,
    );
    this.#maxMessageBytes = maximum;
    this.#encodeOptions = Object.freeze({ maxMessageBytes: maximum });
    this.#startOperations = new Set(
      handler.descriptor.operations.filter((operation) => operation.semantics !== "query")
        .map((operation) => operation.name),
    );
    this.#maxRequestBytes = maximum - CORRELATED_ERROR_RESERVE_BYTES;
    this.#maxCarrierBytes = carrierMaximum;
  }

  /** The embedded transport-independent handler. */
  get handler(): ToolEndpointHandler {
    return this.#handler;
  }

  /** The logical encoded-message limit of every response and event. */
  get maxMessageBytes(): number {
    return this.#maxMessageBytes;
  }

  /** The logical encoded-message limit of a request (`maxMessageBytes` − 512). */
  get maxRequestBytes(): number {
    return this.#maxRequestBytes;
  }

  /** The in-memory Arrow carrier limit, checked before a carrier is read. */
  get maxCarrierBytes(): number {
    return this.#maxCarrierBytes;
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
        ? correlatedProtocolError(error, request, this.#maxMessageBytes)
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

  #checkCarrierSize(size: number): void {
    if (size > this.#maxCarrierBytes) {
      throw new ToolProtocolError(
        ToolErrorCodes.MESSAGE_TOO_LARGE,
        `Arrow carrier size ${size} exceeds limit ${this.#maxCarrierBytes}`,
      );
    }
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

  /**
   * Reads an inbound carrier (before route trust: every failure here is raised), with the route
   * check `trust` ahead of the payload.
   */
  #requestFromArrow(value: unknown, trust: (route: ToolRequestRoute) => void): DecodedCarrier {
    if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
      throw new TypeError(IPC_BYTES_MESSAGE);
    }
    if (
      typeof SharedArrayBuffer !== "undefined" && value instanceof SharedArrayBuffer
    ) throw new TypeError(IPC_BYTES_MESSAGE);
    if (
      isArrowRecordBatch(value) || isArrowTable(value) || isArrowVector(value) || isArrowData(value)
    ) {
      this.#checkCarrierSize(toolMessageCarrierSize(value as ToolMessageArrowValue));
    }
    return carrierToEnvelope(value, this.#maxMessageBytes, trust);
  }

  /**
   * Reads inbound IPC bytes with the fast codec: what decoding them with
   * `decodeToolMessageIpc` and reading the batch with `#requestFromArrow` does.
   */
  #requestFromIpc(bytes: unknown): DecodedCarrier {
    const carrier = decodeCarrierIpc(bytes, "dispatchIpc", this.#maxCarrierBytes);
    if (carrier.row === undefined) return this.#requestFromArrow(carrier.batch, this.#trustInput);
    this.#checkCarrierSize(carrier.row.carrierSize);
    return envelopeFromRow(carrier.row, this.#maxMessageBytes, this.#trustInput);
  }

  /** The correlated too-large answer to a trusted request beyond `maxRequestBytes`, if any. */
  #requestTooLarge<T>(codec: OutputCodec<T>, decoded: DecodedCarrier): T | undefined {
    // Once the route is trusted, accepted requests keep headroom for a later correlated failure.
    const size = carrierMessageSizeOver(decoded, this.#maxRequestBytes);
    if (size === undefined) return undefined;
    const request = decoded.envelope;
    const error = new ToolProtocolError(
      ToolErrorCodes.MESSAGE_TOO_LARGE,
      `message size ${size} exceeds limit ${this.#maxRequestBytes}`,
    );
    const fallback = correlatedProtocolError(
      error,
      request,
      this.#maxMessageBytes,
      this.#maxRequestBytes,
    );
    return this.#fallback(codec, fallback, request, error);
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
    const decoded = this.#requestFromArrow(value, this.#trustRequest);
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
      this.#requestFromArrow(value, this.#trustInput),
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
    return await this.#dispatchDecoded(this.#ipc, this.#requestFromIpc(bytes));
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
  async #dispatchStart<T>(codec: OutputCodec<T>, request: ToolEnvelope): Promise<T[]> {
    const sink = codec.sink;
    if (sink === undefined) {
      throw new Error("Action or Session dispatch requires an asynchronous event_sink publisher");
    }

    const gate = withResolvers<void>();
    let gateOpen = false;
    let publishFailed = false;
    let publishFailure: unknown;
    const publishLock = new FifoLock();

    const emitEvent = async (event: ToolEnvelope): Promise<void> => {
      await gate.promise;
      if (publishFailed) {
        throw new Error("Response publication failed; event was not published", {
          cause: publishFailure,
        });
      }
      const release = await publishLock.acquire();
      try {
        await sink(this.#event(codec, event));
      } finally {
        release();
      }
    };

    let messages: readonly ToolEnvelope[];
    try {
      messages = await dispatchRouted(this.#handler, request, { eventSink: emitEvent });
    } catch (error) {
      // A trusted request always gets an answer.
      this.#report("binding.dispatch_failed", DISPATCH_FAILED, error, request);
      messages = [correlatedInternalError(request)];
    }

    const release = await publishLock.acquire();
    // Closes the gate for good: the caller never learned of an acceptance, so the execution is
    // abandoned (aborted, converged, no events) before any waiting event is let through.
    const undelivered = (failure: unknown) => {
      publishFailed = true;
      publishFailure = failure;
      if (this.#handler.abandonInvoke(request)) {
        this.#report(
          "binding.acceptance_undelivered",
          "the acceptance did not reach the caller: the execution was aborted and its outcome " +
            "converged to unknown",
          new Error(
            "the acceptance did not reach the caller: the execution was aborted and its outcome " +
              "converged to unknown",
            { cause: failure },
          ),
          request,
        );
      }
      gateOpen = true;
      gate.resolve();
    };
    try {
      // An acceptance that cannot be encoded is reported once, as undelivered (its cause).
      const response = this.#encodeResponse(codec, messages[0], request, false);
      if ("failure" in response) {
        // The caller gets a correlated tool.error, not the acceptance: the execution must not
        // keep running behind it, and none of its events may follow the error.
        undelivered(response.failure);
        await sink(response.message);
        return [];
      }
      await sink(response.message);
      gateOpen = true;
      gate.resolve();
      for (let i = 1; i < messages.length; i++) await sink(this.#event(codec, messages[i]));
    } catch (error) {
      if (!gateOpen) undelivered(error);
      throw error;
    } finally {
      release();
    }
    return [];
  }
}

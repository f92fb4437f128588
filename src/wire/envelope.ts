/**
 * The logical Wire envelope of `forge.tool.endpoint/v1alpha1` and its header matrix.
 *
 * @module
 */
import type { InvokeRequestParts } from "./invoke_request.ts";
import {
  MAX_JSON_DEPTH,
  MAX_SAFE_JSON_INTEGER,
  TOOL_ENDPOINT_PROTOCOL,
  TOOL_MESSAGE_TYPES,
  type ToolMessageType,
} from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { isIntegerIn } from "../_internal/fields.ts";
import {
  copyJson,
  EMPTY_OBJECT,
  isMapping,
  type JsonFaultReporter,
  type JsonObject,
} from "../_internal/json.ts";
import { pyRepr } from "../_internal/repr.ts";
import {
  absent,
  checkHeader,
  checkInstanceId,
  checkRequestId,
  HEADER_MATRIX,
  type HeaderRow,
  invalidMessage,
} from "./header_matrix.ts";
import { executionKeyOfCheckedFields, ToolExecutionKey } from "../endpoint/execution.ts";

/** The fields of a {@linkcode ToolEnvelope}; absent optional headers are `undefined`. */
export interface ToolEnvelopeInit {
  /** Defaults to {@linkcode TOOL_ENDPOINT_PROTOCOL}; any other value is rejected. */
  readonly protocol?: string;
  /** One of the 14 message types. */
  readonly messageType: ToolMessageType;
  /** The message payload, a JSON object (default `{}`); copied and frozen. */
  readonly payload?: object;
  /** Exchange identity: required on every request/response, omitted on events and status. */
  readonly requestId?: string;
  /** Execution identity, required on every `tool.*` message. */
  readonly invocationId?: string;
  /** Attempt identity, required on every `tool.*` message. */
  readonly attemptId?: string;
  /** The logical endpoint, always required. */
  readonly endpointId: string;
  /** The provider process instance: required on `endpoint.*`, optional on `tool.*`. */
  readonly endpointInstanceId?: string;
  /** The operation, required on every `tool.*` message. */
  readonly operation?: string;
  /** The event sequence number, required on `tool.event` and only there. */
  readonly sequence?: number;
}

/**
 * @internal The Wire's style of JSON faults: `ToolProtocolError` `FORGE_PROTOCOL_INVALID_PAYLOAD`
 * at the value's path (the models' style is `modelFaults`).
 */
export const wireFaults: JsonFaultReporter = (fault, path, detail) => {
  const code = ToolErrorCodes.INVALID_PAYLOAD;
  switch (fault) {
    case "depth":
      return new ToolProtocolError(code, `JSON nesting exceeds ${MAX_JSON_DEPTH}`, path);
    case "surrogate":
      return new ToolProtocolError(code, "must contain only valid Unicode scalar values", path);
    case "integer":
      return new ToolProtocolError(
        code,
        `integer exceeds interoperable range ±${MAX_SAFE_JSON_INTEGER}`,
        path,
      );
    case "finite":
      return new ToolProtocolError(code, "floating-point values must be finite", path);
    case "key-type":
      return new ToolProtocolError(code, "object keys must be strings", path);
    case "key-surrogate":
      return new ToolProtocolError(
        code,
        "object keys must contain only valid Unicode scalar values",
        path,
      );
    case "unsupported":
      return new ToolProtocolError(code, `unsupported JSON value: ${detail}`, path);
  }
};

/**
 * @internal How a decoded payload is taken: `"checked"` when the strict decoder's fast path
 * proved it interoperable (adopted as it is, already deeply frozen by the decoder) and every header string was decoded from UTF-8
 * without escapes (so holds no lone surrogate), `"decoded"` when it still needs the walk but its
 * integer tokens were already range-checked (a float token such as `1e300` stays valid).
 */
export type DecodedPayload = "checked" | "decoded";

/**
 * The fields of a decoded envelope and how far the decoder checked them: the module-private
 * token of {@linkcode envelopeFromDecoded}. The constructor tells one from any other value by its
 * private brand, which nothing outside this module can give, so `new ToolEnvelope(init)` always
 * checks and copies everything.
 */
class DecodedFields {
  readonly #brand = true;
  constructor(readonly init: ToolEnvelopeInit, readonly checked: boolean) {}

  static holds(value: object): value is DecodedFields {
    return #brand in value;
  }
}

/** Reads and sets an envelope's private #typed mark from outside the class body. */
interface TypedMark {
  read(envelope: ToolEnvelope): boolean;
  set(envelope: ToolEnvelope, source?: object): void;
  /** The models a factory built the payload from (see `envelopeFromFactory`), or `undefined`. */
  source(envelope: ToolEnvelope): object | undefined;
  /** True when the constructor built `value` (a forged, proxied or plain object is not). */
  built(value: object): boolean;
}

// Set once, by the class's static block, when this module is evaluated; never reassigned. Only
// envelopeFromFactory sets a mark, so user code cannot mark an envelope.
const typedMark: TypedMark = {
  read: () => false,
  set: () => {},
  source: () => undefined,
  built: () => false,
};

/**
 * The fields of an envelope whose headers are those of an envelope the constructor built: a
 * response to it (its headers as they are), or a copy of it with another request id and
 * instance, both checked already (see {@linkcode envelopeAnswering} and
 * {@linkcode envelopeReheaded}, the only two that make one). The constructor tells it from any
 * other value by its private brand, like {@linkcode DecodedFields}.
 */
class CopiedFields {
  readonly #brand = true;
  constructor(
    readonly messageType: ToolMessageType,
    readonly payload: JsonObject,
    readonly headers: ToolEnvelope,
    readonly requestId: string | undefined,
    readonly endpointInstanceId: string | undefined,
    readonly typed: boolean,
    readonly source: object | undefined,
  ) {}

  static holds(value: object): value is CopiedFields {
    return #brand in value;
  }
}

/**
 * One logical Wire message: a header matrix checked at construction, and a JSON-object payload.
 * The header rules depend on the message type:
 *
 * | message type | request_id | invocation/attempt/operation | endpoint_instance_id | sequence |
 * |---|---|---|---|---|
 * | endpoint.register / unregister / registry.response | required | forbidden | required | forbidden |
 * | endpoint.status | forbidden | forbidden | required | forbidden |
 * | tool.event | forbidden | required | optional | required |
 * | other tool.* | required | required | optional | forbidden |
 *
 * Construction checks the generic rules only; {@linkcode validateMessageEnvelope} checks the
 * typed payload. Every violation is a {@linkcode ToolProtocolError} with the reference's code
 * and the failing field as its path. The payload is copied into a frozen JSON value (a
 * decoded envelope's payload is frozen in place, deeply, by the decoder), so no later change
 * reaches the models built from it.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
 * const envelope = new ToolEnvelope({
 *   messageType: "endpoint.unregister",
 *   requestId: "unregister-1",
 *   endpointId: "vision.yolo",
 *   endpointInstanceId: "instance-1",
 * });
 * assertEquals(envelope.payload, {});
 * ```
 */
export class ToolEnvelope {
  /** Always {@linkcode TOOL_ENDPOINT_PROTOCOL}. */
  readonly protocol: string;
  /** The message type. */
  readonly messageType: ToolMessageType;
  /** The payload (read-only). */
  readonly payload: JsonObject;
  /** Exchange identity, when the message type has one. */
  readonly requestId: string | undefined;
  /** Execution identity on `tool.*` messages. */
  readonly invocationId: string | undefined;
  /** Attempt identity on `tool.*` messages. */
  readonly attemptId: string | undefined;
  /** The logical endpoint. */
  readonly endpointId: string;
  /** The provider instance, when known. */
  readonly endpointInstanceId: string | undefined;
  /** The operation on `tool.*` messages. */
  readonly operation: string | undefined;
  /** The event sequence number on `tool.event`. */
  readonly sequence: number | undefined;
  // True when a Wire factory built the envelope and its typed validation passed (the envelope is
  // immutable, so the encoders need not validate it again). A private field: it cannot be forged.
  #typed = false;
  // The models a Wire factory built the payload from, when their own constructors built them: an
  // invoke request's request and context, a response's answer. Whoever reads the envelope back
  // takes them as they are (see builtInvokeRequestParts and builtAnswerOf).
  #source: object | undefined = undefined;

  static {
    typedMark.read = (envelope) => #typed in envelope && envelope.#typed;
    // A private field is no property: the frozen envelope still takes the mark.
    typedMark.set = (envelope, source) => {
      envelope.#typed = true;
      envelope.#source = source;
    };
    typedMark.source = (envelope) => #source in envelope ? envelope.#source : undefined;
    typedMark.built = (value) => #typed in value;
  }

  /** Checks the header matrix and copies the payload; throws {@linkcode ToolProtocolError}. */
  constructor(init: ToolEnvelopeInit);
  constructor(init: ToolEnvelopeInit | DecodedFields | CopiedFields) {
    if (typeof init !== "object" || init === null) {
      throw new TypeError("envelope fields must be an object");
    }
    if (CopiedFields.holds(init)) {
      // Only envelopeAnswering and envelopeReheaded pass CopiedFields: the headers passed this
      // constructor's checks (the two a copy replaces were checked by their rules), a
      // response's row of the header matrix is its request's, and the payload is canonical.
      const headers = init.headers;
      this.protocol = headers.protocol;
      this.messageType = init.messageType;
      this.payload = init.payload;
      this.requestId = init.requestId;
      this.invocationId = headers.invocationId;
      this.attemptId = headers.attemptId;
      this.endpointId = headers.endpointId;
      this.endpointInstanceId = init.endpointInstanceId;
      this.operation = headers.operation;
      this.sequence = headers.sequence;
      this.#typed = init.typed;
      this.#source = init.source;
      Object.freeze(this);
      return;
    }
    // Only envelopeFromDecoded passes DecodedFields (see DecodedPayload).
    let checked = false;
    let integers = true;
    if (DecodedFields.holds(init)) {
      checked = init.checked;
      integers = false;
      init = init.init;
    }
    const protocol = init.protocol === undefined ? TOOL_ENDPOINT_PROTOCOL : init.protocol;
    if (protocol !== TOOL_ENDPOINT_PROTOCOL) {
      throw new ToolProtocolError(
        ToolErrorCodes.UNSUPPORTED_VERSION,
        `expected '${TOOL_ENDPOINT_PROTOCOL}', found ${pyRepr(protocol)}`,
        "protocol",
      );
    }
    const messageType = init.messageType;
    if (typeof messageType !== "string" || !TOOL_MESSAGE_TYPES.has(messageType)) {
      throw new ToolProtocolError(
        ToolErrorCodes.UNKNOWN_MESSAGE_TYPE,
        `unsupported message type: ${pyRepr(messageType)}`,
        "message_type",
      );
    }
    const payload = init.payload === undefined ? EMPTY_OBJECT : init.payload;
    if (!isMapping(payload)) {
      throw new ToolProtocolError(
        ToolErrorCodes.INVALID_PAYLOAD,
        "must be a JSON object",
        "payload",
      );
    }
    const row: HeaderRow = HEADER_MATRIX[messageType as ToolMessageType];
    const endpointId = checkHeader(init.endpointId, "endpoint_id", checked);
    const endpointInstanceId = checkInstanceId(row, init.endpointInstanceId, checked);
    let invocationId: string | undefined;
    let attemptId: string | undefined;
    let operation: string | undefined;
    if (row.execution === "required") {
      invocationId = checkHeader(init.invocationId, "invocation_id", checked);
      attemptId = checkHeader(init.attemptId, "attempt_id", checked);
      operation = checkHeader(init.operation, "operation", checked);
      checkRequestId(row, init.requestId, checked);
    } else {
      checkRequestId(row, init.requestId, checked);
      const forbidden = [
        ["invocation_id", init.invocationId],
        ["attempt_id", init.attemptId],
        ["operation", init.operation],
        ["sequence", init.sequence],
      ] as const;
      for (const [field, value] of forbidden) {
        if (!absent(value)) {
          throw invalidMessage("must be omitted for endpoint management messages", field);
        }
      }
    }
    let sequence: number | undefined;
    if (row.sequence === "required") {
      const value: unknown = init.sequence;
      if (!isIntegerIn(value, 0)) {
        throw invalidMessage(`must be an integer in [0, ${MAX_SAFE_JSON_INTEGER}]`, "sequence");
      }
      sequence = value;
    } else if (!absent(init.sequence)) {
      throw invalidMessage("must be omitted for non-event messages", "sequence");
    }
    const requestId = absent(init.requestId)
      ? undefined
      : checkHeader(init.requestId, "request_id", checked);

    this.protocol = protocol;
    this.messageType = messageType as ToolMessageType;
    this.payload = checked
      ? payload as JsonObject
      : copyJson(payload, "payload", wireFaults, 0, integers) as JsonObject;
    this.requestId = requestId;
    this.invocationId = invocationId;
    this.attemptId = attemptId;
    this.endpointId = endpointId;
    this.endpointInstanceId = endpointInstanceId;
    this.operation = operation;
    this.sequence = sequence;
    Object.freeze(this);
  }

  /**
   * The envelope as the Wire's JSON object: `protocol`, `message_type`, `endpoint_id` and
   * `payload` always; every other header only when present (absent is not `null`).
   */
  toWireObject(): Record<string, unknown> {
    const out: Record<string, unknown> = {
      protocol: this.protocol,
      message_type: this.messageType,
      endpoint_id: this.endpointId,
      payload: this.payload,
    };
    if (this.requestId !== undefined) out.request_id = this.requestId;
    if (this.endpointInstanceId !== undefined) out.endpoint_instance_id = this.endpointInstanceId;
    if (this.invocationId !== undefined) out.invocation_id = this.invocationId;
    if (this.attemptId !== undefined) out.attempt_id = this.attemptId;
    if (this.operation !== undefined) out.operation = this.operation;
    if (this.sequence !== undefined) out.sequence = this.sequence;
    return out;
  }
}

/**
 * @internal Builds an envelope as a Wire factory does: the constructor's checks and copy, then
 * `validate` (the typed validation), and marks it so that {@linkcode isFactoryTyped} is true.
 * `source`: the built models a built payload came from (see {@linkcode builtInvokeRequestParts}
 * and {@linkcode builtAnswerOf}).
 */
export function envelopeFromFactory(
  init: ToolEnvelopeInit,
  validate: (envelope: ToolEnvelope) => void,
  source?: object,
): ToolEnvelope {
  const envelope = new ToolEnvelope(init);
  validate(envelope);
  typedMark.set(envelope, source);
  return envelope;
}

/**
 * @internal The request and context whose constructors built them and from which a factory built
 * this invoke request's payload (`builtInvokeRequestPayload`), or `undefined`: their fields are
 * the payload's and the headers', already checked, so reading the envelope back needs no models
 * built again.
 */
export function builtInvokeRequestParts(envelope: ToolEnvelope): InvokeRequestParts | undefined {
  return envelope.messageType === "tool.invoke.request"
    ? typedMark.source(envelope) as InvokeRequestParts | undefined
    : undefined;
}

/**
 * @internal The answer a factory built this response's payload from, when that model's own
 * constructor built it (`builtInvokeResponsePayload` and its siblings), or `undefined`: what the
 * payload's reader would build again, equal in every field (the `InvokeResponse` of a
 * `tool.invoke.response`, the `ToolExecutionStatus` of a `tool.status.response`, the
 * `ToolResultResponse` of a `tool.result.response`, the `ToolControlResponse` of a
 * `tool.control.response`, the `ToolError` of a `tool.error`).
 */
export function builtAnswerOf(envelope: ToolEnvelope): object | undefined {
  return envelope.messageType === "tool.invoke.request" ? undefined : typedMark.source(envelope);
}

/**
 * @internal The `responseType` envelope answering `request` with `payload`, its headers taken
 * from `request` without checking them again, marked as a factory's envelope; `undefined` when
 * `request` is no envelope the constructor built (a forged or proxied one), which then takes the
 * checked path. Only for a `tool.*` request whose pairing `responseType` the caller checked, and a
 * canonical payload of models that passed their typed validation (what `builtInvokeResponsePayload`
 * and its siblings return): the constructor would take both as they are and check the same headers.
 */
export function envelopeAnswering(
  request: ToolEnvelope,
  responseType: ToolMessageType,
  payload: JsonObject,
  source: object,
): ToolEnvelope | undefined {
  if (!typedMark.built(request)) return undefined;
  const fields = new CopiedFields(
    responseType,
    payload,
    request,
    request.requestId,
    request.endpointInstanceId,
    true,
    source,
  ) as unknown as ToolEnvelopeInit;
  return new ToolEnvelope(fields);
}

/**
 * @internal A copy of a request or response `envelope` (never an event: a forged one's sequence
 * is not copied) with `requestId` and `endpointInstanceId` (either may be absent where its
 * message type allows), both checked as the constructor checks them. Its other headers and its
 * payload are the source's, which passed the constructor's checks already, so they are not
 * checked again. `validated`: the source passed its typed validation, which reads neither
 * header, so the copy is marked as a factory's envelope. A forged or proxied source (no envelope
 * the constructor built) takes the checked path: `new ToolEnvelope` of its fields.
 */
export function envelopeReheaded(
  envelope: ToolEnvelope,
  requestId: string | undefined,
  endpointInstanceId: string | undefined,
  validated: boolean,
): ToolEnvelope {
  if (typedMark.built(envelope)) {
    // The two new headers by the constructor's rules, in its order; the others are the source's.
    const row: HeaderRow = HEADER_MATRIX[envelope.messageType];
    const instance = checkInstanceId(row, endpointInstanceId, false);
    checkRequestId(row, requestId, false);
    const fields = new CopiedFields(
      envelope.messageType,
      copyJson(envelope.payload, "payload", wireFaults, 0, true) as JsonObject,
      envelope,
      requestId,
      instance,
      // Neither header is part of the typed validation or of the models a payload was built
      // from, so a validated source's copy is validated and keeps its models.
      validated,
      validated ? typedMark.source(envelope) : undefined,
    );
    return new ToolEnvelope(fields as unknown as ToolEnvelopeInit);
  }
  const init: ToolEnvelopeInit = {
    messageType: envelope.messageType,
    requestId,
    invocationId: envelope.invocationId,
    attemptId: envelope.attemptId,
    endpointId: envelope.endpointId,
    endpointInstanceId,
    operation: envelope.operation,
    payload: envelope.payload,
  };
  return validated ? envelopeFromFactory(init, () => {}) : new ToolEnvelope(init);
}

/**
 * @internal The execution key of an execution message's headers. For an envelope the constructor
 * built, whose `invocation_id` and `attempt_id` it checked by the key's own rules, the key is
 * built without checking them again; a forged or proxied envelope's key is checked (a
 * `RangeError` at the field, as `new ToolExecutionKey` throws).
 */
export function executionKeyOf(envelope: ToolEnvelope): ToolExecutionKey {
  const invocationId = envelope.invocationId!;
  const attemptId = envelope.attemptId!;
  return typedMark.built(envelope)
    ? executionKeyOfCheckedFields(invocationId, attemptId)
    : new ToolExecutionKey({ invocationId, attemptId });
}

/**
 * @internal True when a Wire factory built the envelope and validated it
 * ({@linkcode envelopeFromFactory}); false for every other envelope.
 */
export function isFactoryTyped(envelope: ToolEnvelope): boolean {
  return typedMark.read(envelope);
}

/** @internal Builds an envelope from decoded fields (see {@linkcode DecodedPayload}). */
export function envelopeFromDecoded(init: ToolEnvelopeInit, mode: DecodedPayload): ToolEnvelope {
  // The constructor's public signature names ToolEnvelopeInit only; its implementation also takes
  // the module-private DecodedFields.
  const fields = new DecodedFields(init, mode === "checked") as unknown as ToolEnvelopeInit;
  return new ToolEnvelope(fields);
}

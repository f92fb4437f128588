/**
 * The logical Wire envelope of `forge.tool.endpoint/v1alpha1` and its header matrix.
 *
 * @module
 */
import {
  MAX_SAFE_JSON_INTEGER,
  TOOL_ENDPOINT_PROTOCOL,
  TOOL_MESSAGE_TYPES,
  type ToolMessageType,
} from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  copyJson,
  EMPTY_OBJECT,
  hasLoneSurrogate,
  isBlank,
  isMapping,
  type JsonObject,
  wireFaults,
} from "../endpoint/_json.ts";
import { pyRepr } from "./_repr.ts";

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

const MANAGEMENT_WITH_REQUEST = new Set<string>([
  "endpoint.register",
  "endpoint.unregister",
  "endpoint.registry.response",
]);

function invalidMessage(message: string, path: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_MESSAGE, message, path);
}

function absent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** Checks an envelope string header: a non-blank string of Unicode scalar values. */
function checkHeader(value: unknown, field: string): string {
  if (typeof value !== "string" || isBlank(value)) {
    throw invalidMessage("must be a non-empty string", field);
  }
  // Decoded headers in "checked" mode come from valid UTF-8 without escapes that could encode
  // a surrogate (the strict decoder's fast path, or the carrier's columns): already scalar.
  if (payloadMode !== "checked" && hasLoneSurrogate(value)) {
    throw invalidMessage("must contain only valid Unicode scalar values", field);
  }
  return value;
}

/**
 * @internal How a decoded payload is taken: `"checked"` when the strict decoder's fast path
 * proved it interoperable (adopted as it is) and every header string was decoded from UTF-8
 * without escapes (so holds no lone surrogate), `"decoded"` when it still needs the walk but its
 * integer tokens were already range-checked (a float token such as `1e300` stays valid).
 */
export type DecodedPayload = "checked" | "decoded";

let payloadMode: DecodedPayload | undefined;

/** @internal Builds an envelope from decoded fields (see {@linkcode DecodedPayload}). */
export function envelopeFromDecoded(init: ToolEnvelopeInit, mode: DecodedPayload): ToolEnvelope {
  payloadMode = mode;
  try {
    return new ToolEnvelope(init);
  } finally {
    payloadMode = undefined;
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
 * and the failing field as its path. The payload is copied into a frozen JSON value.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool";
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

  /** Checks the header matrix and copies the payload; throws {@linkcode ToolProtocolError}. */
  constructor(init: ToolEnvelopeInit) {
    if (typeof init !== "object" || init === null) {
      throw new TypeError("envelope fields must be an object");
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
    const endpointId = checkHeader(init.endpointId, "endpoint_id");
    const isTool = messageType.startsWith("tool.");
    let endpointInstanceId: string | undefined;
    if (absent(init.endpointInstanceId)) {
      if (!isTool) {
        throw invalidMessage(
          "must be present for endpoint management messages",
          "endpoint_instance_id",
        );
      }
    } else {
      endpointInstanceId = checkHeader(init.endpointInstanceId, "endpoint_instance_id");
    }
    let invocationId: string | undefined;
    let attemptId: string | undefined;
    let operation: string | undefined;
    if (isTool) {
      invocationId = checkHeader(init.invocationId, "invocation_id");
      attemptId = checkHeader(init.attemptId, "attempt_id");
      operation = checkHeader(init.operation, "operation");
      if (messageType === "tool.event") {
        if (!absent(init.requestId)) {
          throw invalidMessage("must be omitted for tool.event", "request_id");
        }
      } else {
        checkHeader(init.requestId, "request_id");
      }
    } else {
      if (MANAGEMENT_WITH_REQUEST.has(messageType)) {
        checkHeader(init.requestId, "request_id");
      } else if (!absent(init.requestId)) {
        throw invalidMessage("must be omitted for unsolicited endpoint.status", "request_id");
      }
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
    if (messageType === "tool.event") {
      const value: unknown = init.sequence;
      if (
        typeof value !== "number" || !Number.isInteger(value) || value < 0 ||
        value > MAX_SAFE_JSON_INTEGER
      ) {
        throw invalidMessage(`must be an integer in [0, ${MAX_SAFE_JSON_INTEGER}]`, "sequence");
      }
      sequence = value;
    } else if (!absent(init.sequence)) {
      throw invalidMessage("must be omitted for non-event messages", "sequence");
    }
    const requestId = absent(init.requestId)
      ? undefined
      : checkHeader(init.requestId, "request_id");

    this.protocol = protocol;
    this.messageType = messageType as ToolMessageType;
    this.payload = payloadMode === "checked"
      ? payload as JsonObject
      : copyJson(payload, "payload", wireFaults, 0, payloadMode !== "decoded") as JsonObject;
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

/** True for `endpoint.*` message types. */
export function isManagementType(messageType: string): boolean {
  return messageType.startsWith("endpoint.");
}

const RESPONSE_OF: Readonly<Record<string, ToolMessageType>> = {
  "tool.invoke.request": "tool.invoke.response",
  "tool.status.request": "tool.status.response",
  "tool.result.request": "tool.result.response",
  "tool.control.request": "tool.control.response",
};

/** The response type paired with an execution request type, or `undefined` for other types. */
export function pairedResponseType(messageType: string): ToolMessageType | undefined {
  return Object.hasOwn(RESPONSE_OF, messageType) ? RESPONSE_OF[messageType] : undefined;
}

/** The Registry operation a management request asks for, or `undefined` for other types. */
export function registryOperationOf(messageType: string): "register" | "unregister" | undefined {
  return messageType === "endpoint.register"
    ? "register"
    : messageType === "endpoint.unregister"
    ? "unregister"
    : undefined;
}

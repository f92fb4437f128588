/**
 * Encoding and decoding of whole envelopes: bytes on the Wire are compact UTF-8 JSON with
 * sorted keys, bounded by a size limit checked before any parsing.
 *
 * @module
 */
import { DEFAULT_MAX_MESSAGE_BYTES } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { positiveIntegerOption } from "../_internal/options.ts";
import { compareCodePoints, isFloatMember, isPlainObject } from "../_internal/json.ts";
import { sealParsedJson } from "../_internal/json_parsed.ts";
import { encodeJson } from "./_json_encode.ts";
import { encodeUtf8Text, parseStrictJsonBytes } from "./_json_decode.ts";
import { envelopeFromDecoded, ToolEnvelope, type ToolEnvelopeInit } from "./envelope.ts";
import { headerRowOf } from "./header_matrix.ts";
import { checkTypedEnvelope, validateMessageEnvelope } from "./validate.ts";

// The Wire's JSON encoder and strict decoder, for the carrier outside this folder (a `_file.ts`
// is imported only from its own folder).
export { encodeJson } from "./_json_encode.ts";
export { parseStrictJsonBytes } from "./_json_decode.ts";

/** Options of {@linkcode encodeEnvelope} and {@linkcode decodeEnvelope}. */
export interface CodecOptions {
  /**
   * The largest encoded message accepted, in bytes.
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
}

const OPTIONAL_FIELDS = [
  "request_id",
  "invocation_id",
  "attempt_id",
  "endpoint_instance_id",
  "operation",
  "sequence",
] as const;

const encoder = new TextEncoder();

/**
 * The `maxMessageBytes` option of a codec call: the Wire default when absent (`undefined` or
 * `null`), else a positive integer (`RangeError` naming the option and the value otherwise).
 */
export function maxMessageBytesOption(action: string, value: unknown): number {
  return positiveIntegerOption(
    action,
    "maxMessageBytes",
    value ?? undefined,
    DEFAULT_MAX_MESSAGE_BYTES,
  );
}

/** Throws `FORGE_PROTOCOL_MESSAGE_TOO_LARGE` when `size` exceeds `maximum`. */
export function checkMessageSize(size: number, maximum: number): void {
  if (size > maximum) {
    throw new ToolProtocolError(
      ToolErrorCodes.MESSAGE_TOO_LARGE,
      `message size ${size} exceeds limit ${maximum}`,
    );
  }
}

/** The number of bytes `text` takes in UTF-8 (lone surrogates count as U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2;
        i++;
      } else bytes += 2;
    } else bytes += 2;
  }
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// The Wire JSON layout of an envelope: the one place that knows the field order, where the
// payload sits, and how many bytes the fields around it take.
//
// Keys are written in code point order: attempt_id, endpoint_id, endpoint_instance_id,
// invocation_id, message_type, operation, payload, protocol, request_id, sequence. So the text
// is a head (every header before the payload, ending in `"payload":`), the payload's JSON, and
// a tail (`,"protocol":…`, the request id and the sequence when present, and `}`).

/** @internal The Wire JSON of an envelope in its three parts; their concatenation is the text. */
export interface EnvelopeJsonParts {
  /** `{` through `"payload":`: every header that sorts before the payload. */
  readonly head: string;
  /** The payload's JSON (see `encodeJson`). */
  readonly payload: string;
  /** `,"protocol":…` through the closing `}`: every header that sorts after the payload. */
  readonly tail: string;
}

/**
 * @internal The envelope's Wire JSON in its three parts, re-checking the payload's JSON rules
 * (a payload changed after construction through a cast is caught here).
 */
export function envelopeJsonParts(envelope: ToolEnvelope): EnvelopeJsonParts {
  if (!(envelope instanceof ToolEnvelope)) throw new TypeError("envelope must be a ToolEnvelope");
  const payload = encodeJson(envelope.payload, "payload");
  let head = "{";
  if (envelope.attemptId !== undefined) {
    head += `"attempt_id":${JSON.stringify(envelope.attemptId)},`;
  }
  head += `"endpoint_id":${JSON.stringify(envelope.endpointId)},`;
  if (envelope.endpointInstanceId !== undefined) {
    head += `"endpoint_instance_id":${JSON.stringify(envelope.endpointInstanceId)},`;
  }
  if (envelope.invocationId !== undefined) {
    head += `"invocation_id":${JSON.stringify(envelope.invocationId)},`;
  }
  head += `"message_type":${JSON.stringify(envelope.messageType)},`;
  if (envelope.operation !== undefined) {
    head += `"operation":${JSON.stringify(envelope.operation)},`;
  }
  head += '"payload":';
  let tail = `,"protocol":${JSON.stringify(envelope.protocol)}`;
  if (envelope.requestId !== undefined) {
    tail += `,"request_id":${JSON.stringify(envelope.requestId)}`;
  }
  if (envelope.sequence !== undefined) tail += `,"sequence":${envelope.sequence}`;
  return { head, payload, tail: tail + "}" };
}

/**
 * The envelope as compact JSON text with sorted keys, re-checking the payload's JSON rules
 * (a payload changed after construction through a cast is caught here).
 */
export function envelopeJson(envelope: ToolEnvelope): string {
  const parts = envelopeJsonParts(envelope);
  return parts.head + parts.payload + parts.tail;
}

// The bytes each header adds besides its value: the quoted key, the colon, and the comma that
// joins it to its neighbour (before the payload the comma follows, after it the comma leads).
const KEY_BYTES = {
  attempt_id: '"attempt_id":,'.length,
  endpoint_id: '"endpoint_id":,'.length,
  endpoint_instance_id: '"endpoint_instance_id":,'.length,
  invocation_id: '"invocation_id":,'.length,
  message_type: '"message_type":,'.length,
  operation: '"operation":,'.length,
  payload: '"payload":'.length,
  protocol: ',"protocol":'.length,
  request_id: ',"request_id":'.length,
  sequence: ',"sequence":'.length,
} as const;

const HEADER_KEYS_BYTES = 2 + Object.values(KEY_BYTES).reduce((sum, bytes) => sum + bytes, 0);

/** The ten envelope fields, the keys of the layout (what the decoder's field check allows). */
const ENVELOPE_FIELDS: ReadonlySet<string> = new Set(Object.keys(KEY_BYTES));

/** The UTF-8 byte length of `JSON.stringify(value)`. */
function jsonStringBytes(value: string): number {
  let bytes = 2;
  const length = value.length;
  for (let i = 0; i < length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x80) {
      if (c >= 0x20) bytes += c === 0x22 || c === 0x5c ? 2 : 1;
      else bytes += c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
    } else if (c < 0x800) {
      bytes += 2;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A surrogate pair is one 4-byte character; JSON.stringify escapes a lone surrogate.
      const next = value.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else {
        bytes += 6;
      }
    } else {
      bytes += 3;
    }
  }
  return bytes;
}

/**
 * @internal The byte length of the envelope's Wire JSON without the payload's own text: exactly
 * `utf8Length(envelopeJson(envelope)) - utf8Length(encodeJson(envelope.payload))`.
 */
export function envelopeHeaderBytes(envelope: ToolEnvelope): number {
  let bytes = 2 + KEY_BYTES.payload + KEY_BYTES.protocol + jsonStringBytes(envelope.protocol) +
    KEY_BYTES.endpoint_id + jsonStringBytes(envelope.endpointId) + KEY_BYTES.message_type +
    jsonStringBytes(envelope.messageType);
  if (envelope.attemptId !== undefined) {
    bytes += KEY_BYTES.attempt_id + jsonStringBytes(envelope.attemptId);
  }
  if (envelope.endpointInstanceId !== undefined) {
    bytes += KEY_BYTES.endpoint_instance_id + jsonStringBytes(envelope.endpointInstanceId);
  }
  if (envelope.invocationId !== undefined) {
    bytes += KEY_BYTES.invocation_id + jsonStringBytes(envelope.invocationId);
  }
  if (envelope.operation !== undefined) {
    bytes += KEY_BYTES.operation + jsonStringBytes(envelope.operation);
  }
  if (envelope.requestId !== undefined) {
    bytes += KEY_BYTES.request_id + jsonStringBytes(envelope.requestId);
  }
  if (envelope.sequence !== undefined) {
    bytes += KEY_BYTES.sequence + String(envelope.sequence).length;
  }
  return bytes;
}

/**
 * @internal An upper bound of {@linkcode envelopeHeaderBytes} without reading the strings: a
 * UTF-16 unit takes at most 6 bytes in JSON (a `\u00XX` escape), a sequence number at most 16
 * digits.
 */
export function envelopeHeaderBound(envelope: ToolEnvelope): number {
  const units = envelope.protocol.length + envelope.messageType.length +
    envelope.endpointId.length + (envelope.attemptId?.length ?? 0) +
    (envelope.endpointInstanceId?.length ?? 0) + (envelope.invocationId?.length ?? 0) +
    (envelope.operation?.length ?? 0) + (envelope.requestId?.length ?? 0);
  return HEADER_KEYS_BYTES + 8 * 2 + 6 * units + 16;
}

/**
 * Encodes an envelope as UTF-8 JSON bytes: compact, keys sorted by code point at every level,
 * non-ASCII raw. Checks the payload's JSON rules, the typed payload
 * ({@linkcode validateMessageEnvelope}) and the size limit.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { encodeEnvelope, ToolEnvelope } from "@forge/tool/wire";
 * const bytes = encodeEnvelope(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * assertEquals(
 *   new TextDecoder().decode(bytes),
 *   '{"endpoint_id":"vision.yolo","endpoint_instance_id":"instance-1",' +
 *     '"message_type":"endpoint.unregister","payload":{},' +
 *     '"protocol":"forge.tool.endpoint/v1alpha1","request_id":"unregister-1"}',
 * );
 * ```
 */
export function encodeEnvelope(envelope: ToolEnvelope, options: CodecOptions = {}): Uint8Array {
  const text = envelopeJson(envelope);
  checkTypedEnvelope(envelope);
  const maximum = maxMessageBytesOption("encode an envelope", options.maxMessageBytes);
  const bytes = encoder.encode(text);
  checkMessageSize(bytes.length, maximum);
  return bytes;
}

/**
 * The encoded size of an envelope in bytes, after the payload's JSON checks but without the
 * typed payload validation (what a transport needs to budget a response).
 */
export function encodedEnvelopeSize(envelope: ToolEnvelope): number {
  return utf8Length(envelopeJson(envelope));
}

/**
 * Decodes and fully validates one envelope from UTF-8 bytes (or a string). Only
 * {@linkcode ToolProtocolError} escapes for any bytes; a `TypeError` means the argument was not
 * bytes or a string, a `RangeError` a bad `maxMessageBytes`.
 *
 * Checks, in the reference's order: size (before any parsing), UTF-8, strict JSON (duplicate
 * keys, non-finite literals, integer range, trailing data), a top-level object, unknown,
 * missing and explicitly null fields, the header matrix, the payload's JSON rules (depth ≤ 64,
 * Unicode scalar values, finite numbers), and the typed payload of the message type.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { decodeEnvelope } from "@forge/tool/wire";
 * const envelope = decodeEnvelope(
 *   '{"endpoint_id":"vision.yolo","endpoint_instance_id":"instance-1",' +
 *     '"message_type":"endpoint.unregister","payload":{},' +
 *     '"protocol":"forge.tool.endpoint/v1alpha1","request_id":"unregister-1"}',
 * );
 * assertEquals(envelope.messageType, "endpoint.unregister");
 * ```
 */
export function decodeEnvelope(
  data: Uint8Array | ArrayBuffer | string,
  options: CodecOptions = {},
): ToolEnvelope {
  let bytes: Uint8Array;
  if (typeof data === "string") bytes = encodeUtf8Text(data);
  else if (data instanceof Uint8Array) bytes = data;
  else if (data instanceof ArrayBuffer) bytes = new Uint8Array(data);
  else if (ArrayBuffer.isView(data)) {
    const view = data as ArrayBufferView;
    bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  } else throw new TypeError("data must be UTF-8 bytes or a string");
  const maximum = maxMessageBytesOption("decode an envelope", options.maxMessageBytes);
  checkMessageSize(bytes.length, maximum);
  const parsed = parseStrictJsonBytes(bytes);
  const envelope = envelopeFromJson(parsed.value, parsed.normalized);
  validateMessageEnvelope(envelope);
  return envelope;
}

/**
 * @internal Builds an envelope from a parsed top-level JSON value with the decoder's field
 * checks (unknown, missing, explicit null) and the constructor's header checks.
 */
export function envelopeFromJson(value: unknown, normalized: boolean): ToolEnvelope {
  if (!isPlainObject(value)) {
    throw new ToolProtocolError(
      ToolErrorCodes.INVALID_MESSAGE,
      "top-level JSON value must be an object",
    );
  }
  // The common case in named loads (monomorphic for parsed envelopes of one shape): every key
  // is a known field, the required ones are present and no optional one is null. Anything else
  // takes the checks below, which report the reference's errors in its order.
  const messageType = value.message_type;
  const requestId = value.request_id;
  const invocationId = value.invocation_id;
  const attemptId = value.attempt_id;
  const endpointInstanceId = value.endpoint_instance_id;
  const operation = value.operation;
  // A float token with an integral value is not an integer to the reference (see integerMember).
  const sequence = isFloatMember(value, "sequence") ? NaN : value.sequence;
  let known = 4; // protocol, message_type, endpoint_id, payload (checked just below)
  if (requestId !== undefined) known++;
  if (invocationId !== undefined) known++;
  if (attemptId !== undefined) known++;
  if (endpointInstanceId !== undefined) known++;
  if (operation !== undefined) known++;
  if (sequence !== undefined) known++;
  if (
    value.protocol === undefined || messageType === undefined || value.endpoint_id === undefined ||
    value.payload === undefined || known !== Object.keys(value).length ||
    requestId === null || invocationId === null || attemptId === null ||
    endpointInstanceId === null || operation === null || sequence === null ||
    (endpointInstanceId === undefined && headerRowOf(messageType).endpointInstanceId === "required")
  ) checkEnvelopeFields(value);
  // The fast path's payload is adopted as it is, frozen in place here (one walk: a copy would
  // cost more); the exact path's is copied, and so frozen, by the constructor.
  const payload = value.payload;
  if (normalized && typeof payload === "object" && payload !== null) sealParsedJson(payload);
  const init = {
    protocol: value.protocol ?? null,
    messageType,
    payload: payload ?? null,
    requestId,
    invocationId,
    attemptId,
    endpointId: value.endpoint_id,
    endpointInstanceId,
    operation,
    sequence,
  } as unknown as ToolEnvelopeInit;
  return envelopeFromDecoded(init, normalized ? "checked" : "decoded");
}

/** The envelope field checks: unknown, then missing, then explicitly null fields. */
function checkEnvelopeFields(value: Record<string, unknown>): void {
  const unknown: string[] = [];
  for (const key of Object.keys(value)) if (!ENVELOPE_FIELDS.has(key)) unknown.push(key);
  if (unknown.length > 0) {
    throw new ToolProtocolError(
      ToolErrorCodes.INVALID_MESSAGE,
      `unknown envelope fields: ${unknown.sort(compareCodePoints).join(", ")}`,
    );
  }
  const missing: string[] = [];
  const messageType = value.message_type;
  if (!("endpoint_id" in value)) missing.push("endpoint_id");
  if (
    !("endpoint_instance_id" in value) && headerRowOf(messageType).endpointInstanceId === "required"
  ) missing.push("endpoint_instance_id");
  if (!("message_type" in value)) missing.push("message_type");
  if (!("payload" in value)) missing.push("payload");
  if (!("protocol" in value)) missing.push("protocol");
  if (missing.length > 0) {
    throw new ToolProtocolError(
      ToolErrorCodes.INVALID_MESSAGE,
      `missing envelope fields: ${missing.join(", ")}`,
    );
  }
  const nulls = OPTIONAL_FIELDS.filter((field) => value[field] === null);
  if (nulls.length > 0) {
    throw new ToolProtocolError(
      ToolErrorCodes.INVALID_MESSAGE,
      `optional fields must be omitted rather than null: ${nulls.sort().join(", ")}`,
    );
  }
}

/**
 * The carrier rules shared by every carrier source: one checked carrier row (an apache-arrow
 * carrier's row 0, or the same row read straight from IPC bytes) to a logical envelope, in the
 * reference's order. Private to `src/dora/`.
 *
 * @module
 */
import {
  MAX_JSON_DEPTH,
  MAX_SAFE_JSON_INTEGER,
  TOOL_ENDPOINT_PROTOCOL,
  TOOL_MESSAGE_TYPES,
  type ToolMessageType,
} from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { copyJson, isPlainObject, type JsonObject } from "../_internal/json.ts";
import { sealParsedJson } from "../_internal/json_parsed.ts";
import { pyRepr } from "../_internal/repr.ts";
import { isBlank } from "../_internal/text.ts";
import { parseStrictJsonBytes } from "../wire/codec.ts";
import { envelopeFromDecoded, type ToolEnvelope, wireFaults } from "../wire/envelope.ts";
import { HEADER_MATRIX } from "../wire/header_matrix.ts";
import { asciiText, identifierTexts, repeatedText } from "./_header_strings.ts";
import type { ToolRequestRoute } from "../handler/handler.ts";

// The column indices of the carrier, by name: the order of TOOL_MESSAGE_SCHEMA (carrier.ts),
// declared here so the rules need no import of the schema.
const COLUMN = {
  protocol: 0,
  message_type: 1,
  request_id: 2,
  invocation_id: 3,
  attempt_id: 4,
  endpoint_id: 5,
  endpoint_instance_id: 6,
  operation: 7,
  sequence: 8,
  payload_json: 9,
} as const;

const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
// Values this long or shorter are read as ASCII first (see _header_strings.ts).
const SHORT_VALUE_BYTES = 64;
// The height (deepest nesting below the object, see sealParsedJson) up to which the fast path's
// result is adopted: every value at depth 64 at most. Deeper documents take the exact walk, which
// decides.
const MAX_ADOPTED_HEIGHT = MAX_JSON_DEPTH;

/** @internal A `FORGE_PROTOCOL_INVALID_MESSAGE` error with the message and path given. */
export function invalid(message: string, path?: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_MESSAGE, message, path);
}

/** @internal A UTF-8 byte range: the bytes, the start and the end. */
export type Utf8Range = readonly [bytes: Uint8Array, start: number, end: number];

/**
 * @internal Row 0 of a carrier whose shape (one row, exactly `TOOL_MESSAGE_SCHEMA`) was
 * checked. Each read throws the column's buffer errors, named after the column.
 */
export interface CarrierRow {
  /** The byte range of row 0 of Utf8 column `index`, or `undefined` when it is null. */
  utf8(index: number, name: string): Utf8Range | undefined;
  /** Row 0 of the Int64 `sequence` column, or `undefined` when it is null. */
  sequence(): bigint | undefined;
}

/** @internal The column indices of the carrier. */
export const CARRIER_COLUMN = COLUMN;

/** @internal "<name> has an invalid validity bitmap". */
export function invalidBitmap(name: string): ToolProtocolError {
  return invalid(`${name} has an invalid validity bitmap`, name);
}

/** @internal "<name> has invalid Arrow buffers". */
export function invalidBuffers(name: string): ToolProtocolError {
  return invalid(`${name} has invalid Arrow buffers`, name);
}

/**
 * @internal The row-0 range of a Utf8 column whose data buffer is `bytes[dataStart, dataEnd)` and
 * whose first two value offsets are `start` and `end`, checked against the data buffer.
 */
export function checkedUtf8Range(
  bytes: Uint8Array,
  dataStart: number,
  dataEnd: number,
  start: number,
  end: number,
  name: string,
): Utf8Range {
  if (start < 0 || end < start || end > dataEnd - dataStart) {
    throw invalid(`${name} has invalid Arrow value offsets`, name);
  }
  return [bytes, dataStart + start, dataStart + end];
}

/**
 * The string of a Utf8 value (`undefined` for null), decoded as strict UTF-8. `column` names a
 * repeating column (its short ASCII values are kept, see `repeatedText`), or is -1.
 */
function utf8Value(
  range: Utf8Range | undefined,
  name: string,
  column = -1,
): string | undefined {
  if (range === undefined) return undefined;
  const [bytes, start, end] = range;
  if (end - start <= SHORT_VALUE_BYTES) {
    const text = column < 0
      ? asciiText(bytes, start, end)
      : repeatedText(column, bytes, start, end);
    if (text !== undefined) return text;
  }
  try {
    return fatalDecoder.decode(bytes.subarray(start, end));
  } catch {
    throw invalid(`${name} must contain valid Unicode scalar values`, name);
  }
}

function requiredUtf8(range: Utf8Range | undefined, name: string, column: number): string {
  const value = utf8Value(range, name, column);
  if (value === undefined) throw invalid(`${name} must be non-null`, name);
  return value;
}

/**
 * The request, invocation and attempt ids of a row, as reading each in turn gives them: cut from
 * one decode when they are ASCII and close together (`identifierTexts`), else read one by one, so
 * that an earlier column's error (a buffer or a UTF-8 fault) still comes first.
 */
function identifiers(row: CarrierRow): readonly (string | undefined)[] {
  let texts;
  try {
    texts = identifierTexts(
      row.utf8(COLUMN.request_id, "request_id"),
      row.utf8(COLUMN.invocation_id, "invocation_id"),
      row.utf8(COLUMN.attempt_id, "attempt_id"),
    );
  } catch {
    // A buffer fault: the reads below raise it again, after any fault of an earlier column.
  }
  return texts ?? [
    utf8Value(row.utf8(COLUMN.request_id, "request_id"), "request_id"),
    utf8Value(row.utf8(COLUMN.invocation_id, "invocation_id"), "invocation_id"),
    utf8Value(row.utf8(COLUMN.attempt_id, "attempt_id"), "attempt_id"),
  ];
}

const MAX_SEQUENCE = BigInt(MAX_SAFE_JSON_INTEGER);

/** Parses `payload_json` strictly into a JSON object (the carrier's rule 6). */
function parsePayloadJson(
  bytes: Uint8Array,
  start: number,
  end: number,
): { payload: JsonObject; narrow: boolean } {
  let parsed;
  try {
    parsed = parseStrictJsonBytes(bytes, start, end);
  } catch (error) {
    if (!(error instanceof ToolProtocolError)) throw error;
    if (error.message === "message is not valid UTF-8") {
      throw new ToolProtocolError(
        ToolErrorCodes.INVALID_JSON,
        "payload_json must be valid UTF-8",
        "payload_json",
      );
    }
    const detail = error.path === undefined ? error.message : `${error.message}: ${error.path}`;
    throw new ToolProtocolError(
      error.code,
      `payload_json must be valid strict JSON: ${detail}`,
      "payload_json",
    );
  }
  const value = parsed.value;
  if (!isPlainObject(value)) {
    throw new ToolProtocolError(
      ToolErrorCodes.INVALID_PAYLOAD,
      "payload_json must be a JSON object",
      "payload_json",
    );
  }
  // The fast path proved every value interoperable and free of duplicate keys; only the depth
  // bound is relative to the envelope there, so it is re-checked for payload_json on its own. It
  // also proved no number token has an exponent or a fraction after 16 or more integer digits
  // (the strict decoder sends those to the exact path), and every other token is written at most
  // as long as it is read (fewest escapes, fewest digits, no whitespace): the payload's compact
  // encoding is no longer than payload_json.
  // The walk that freezes the fast path's value in place (and marks it canonical when it already
  // is one) measures its height too.
  if (parsed.normalized && sealParsedJson(value, parsed.compactText) <= MAX_ADOPTED_HEIGHT) {
    return { payload: value as JsonObject, narrow: true };
  }
  try {
    return {
      payload: copyJson(value, "payload_json", wireFaults, 0, false) as JsonObject,
      narrow: false,
    };
  } catch (error) {
    if (!(error instanceof ToolProtocolError)) throw error;
    throw new ToolProtocolError(error.code, `${error.path} ${error.message}`, "payload_json");
  }
}

function nonEmpty(name: string, value: string | undefined): void {
  if (value !== undefined && isBlank(value)) {
    throw invalid(`${name} must be non-empty when present`, name);
  }
}

function nullForManagement(name: string, value: unknown): void {
  if (value !== undefined) {
    throw invalid(`${name} must be null for endpoint management messages`, name);
  }
}

function nonNullForTool(name: string, value: string | undefined): void {
  if (value === undefined) {
    throw invalid(`${name} must be non-null for Tool execution messages`, name);
  }
}

/**
 * @internal An envelope read from a carrier, with what the logical size check needs: the raw
 * `payload_json` byte length, and whether the payload's compact encoding is proven no longer
 * than it.
 */
export interface DecodedCarrier {
  readonly envelope: ToolEnvelope;
  readonly payloadJsonBytes: number;
  readonly narrow: boolean;
}

/**
 * @internal Reads and checks row 0 of a carrier whose shape was checked, applying every carrier
 * rule in the reference's order (no logical size check: see `carrierMessageSizeOver`).
 * The one implementation of the rules, for apache-arrow carriers and IPC bytes alike. `trust`,
 * when given, checks the route from the header columns once they passed their rules, before
 * `payload_json` is parsed (its error is raised as it is).
 */
export function envelopeFromRow(
  row: CarrierRow,
  maxPayloadJsonBytes?: number,
  trust?: (route: ToolRequestRoute) => void,
): DecodedCarrier {
  const payloadRange = row.utf8(COLUMN.payload_json, "payload_json");
  if (maxPayloadJsonBytes !== undefined && payloadRange !== undefined) {
    const size = payloadRange[2] - payloadRange[1];
    if (size > maxPayloadJsonBytes) {
      throw new ToolProtocolError(
        ToolErrorCodes.MESSAGE_TOO_LARGE,
        `payload_json size ${size} exceeds limit ${maxPayloadJsonBytes}`,
        "payload_json",
      );
    }
  }
  const protocol = requiredUtf8(row.utf8(COLUMN.protocol, "protocol"), "protocol", COLUMN.protocol);
  const messageType = requiredUtf8(
    row.utf8(COLUMN.message_type, "message_type"),
    "message_type",
    COLUMN.message_type,
  );
  const ids = identifiers(row);
  const requestId = ids[0];
  const invocationId = ids[1];
  const attemptId = ids[2];
  const endpointId = requiredUtf8(
    row.utf8(COLUMN.endpoint_id, "endpoint_id"),
    "endpoint_id",
    COLUMN.endpoint_id,
  );
  const endpointInstanceId = utf8Value(
    row.utf8(COLUMN.endpoint_instance_id, "endpoint_instance_id"),
    "endpoint_instance_id",
    COLUMN.endpoint_instance_id,
  );
  const operation = utf8Value(
    row.utf8(COLUMN.operation, "operation"),
    "operation",
    COLUMN.operation,
  );
  const sequence = row.sequence();
  if (payloadRange === undefined) throw invalid("payload_json must be non-null", "payload_json");

  // 1. protocol and message type.
  if (protocol !== TOOL_ENDPOINT_PROTOCOL) {
    throw new ToolProtocolError(
      ToolErrorCodes.UNSUPPORTED_VERSION,
      `protocol must equal '${TOOL_ENDPOINT_PROTOCOL}'`,
      "protocol",
    );
  }
  if (!TOOL_MESSAGE_TYPES.has(messageType as ToolMessageType)) {
    throw new ToolProtocolError(
      ToolErrorCodes.UNKNOWN_MESSAGE_TYPE,
      `message_type must be one of the v1alpha1 message types, found ${pyRepr(messageType)}`,
      "message_type",
    );
  }
  // 2. non-empty strings.
  nonEmpty("request_id", requestId);
  nonEmpty("invocation_id", invocationId);
  nonEmpty("attempt_id", attemptId);
  nonEmpty("endpoint_id", endpointId);
  nonEmpty("endpoint_instance_id", endpointInstanceId);
  nonEmpty("operation", operation);
  // 3-4. the header matrix.
  const headers = HEADER_MATRIX[messageType as ToolMessageType];
  if (headers.family === "endpoint") {
    if (endpointInstanceId === undefined) {
      throw invalid(
        "endpoint_instance_id must be non-null for endpoint management messages",
        "endpoint_instance_id",
      );
    }
    if (headers.requestId === "required" && requestId === undefined) {
      throw invalid("request_id must be non-null for endpoint management exchanges", "request_id");
    }
    if (headers.requestId === "forbidden" && requestId !== undefined) {
      throw invalid("request_id must be null for unsolicited endpoint.status", "request_id");
    }
    nullForManagement("invocation_id", invocationId);
    nullForManagement("attempt_id", attemptId);
    nullForManagement("operation", operation);
    nullForManagement("sequence", sequence);
  } else {
    nonNullForTool("invocation_id", invocationId);
    nonNullForTool("attempt_id", attemptId);
    nonNullForTool("operation", operation);
    if (headers.requestId === "forbidden") {
      if (requestId !== undefined) {
        throw invalid("request_id must be null for tool.event", "request_id");
      }
    } else if (requestId === undefined) {
      throw invalid(
        "request_id must be non-null for non-event Tool execution messages",
        "request_id",
      );
    }
  }
  // 5. sequence, converted exactly.
  if (headers.sequence === "required") {
    if (sequence === undefined) {
      throw invalid("sequence must be non-null for tool.event", "sequence");
    }
    if (sequence < 0n || sequence > MAX_SEQUENCE) {
      throw invalid(`sequence must be in [0, ${MAX_SAFE_JSON_INTEGER}]`, "sequence");
    }
  } else if (sequence !== undefined) {
    throw invalid("sequence must be null for non-event messages", "sequence");
  }
  // The receiver's route check, on the headers just checked and before the payload is parsed:
  // a request for another route costs no parse of its (possibly large) payload_json.
  trust?.({ messageType, endpointId, endpointInstanceId, operation });
  // 6. payload_json.
  const { payload, narrow } = parsePayloadJson(payloadRange[0], payloadRange[1], payloadRange[2]);
  const envelope = envelopeFromDecoded({
    protocol,
    messageType: messageType as ToolMessageType,
    payload,
    requestId,
    invocationId,
    attemptId,
    endpointId,
    endpointInstanceId,
    operation,
    sequence: sequence === undefined ? undefined : Number(sequence),
  }, "checked");
  return {
    envelope,
    payloadJsonBytes: payloadRange[2] - payloadRange[1],
    narrow,
  };
}

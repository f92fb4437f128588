/**
 * The fast ToolMessage IPC codec: a logical envelope straight to Arrow IPC stream bytes and back,
 * specialised for the carrier's fixed schema (ten columns, Utf8 and Int64, one row) so the hot
 * path builds no generic apache-arrow objects.
 *
 * **Equivalence.** {@linkcode decodeToolEnvelopeIpc} returns what
 * `toolMessageToEnvelope(decodeToolMessageIpc(bytes))` returns for every input — the same
 * envelope, or the same error (class, code, message and path). It shares the IPC framing and
 * metadata validation with {@linkcode decodeToolMessageIpc} and the carrier rules with
 * {@linkcode toolMessageToEnvelope}; between the two it reads the ten columns from the record
 * batch body itself, the way apache-arrow would materialise them. A stream it does not read
 * exactly that way — another schema, other metadata versions, buffers apache-arrow would reject
 * for alignment, more or fewer field nodes or buffers than the schema needs — goes through the
 * generic path instead, so it is never misread. {@linkcode encodeToolEnvelopeIpc} writes bytes
 * that apache-arrow and pyarrow read to the values `toolEnvelopeToMessage` holds, after the same
 * checks in the same order.
 *
 * **Stream layout written.** Three parts, each 8-byte aligned:
 *
 * 1. The schema message: `0xFFFFFFFF` (continuation marker), the metadata length (int32, a
 *    multiple of 8), then a `Message` flatbuffer (metadata version V5, header `Schema`:
 *    little-endian, ten fields with an empty `children` vector and a type table each — `Utf8` or
 *    `Int { bitWidth: 64, is_signed: true }` — names and nullability of
 *    {@linkcode TOOL_MESSAGE_SCHEMA}, no custom metadata), zero-padded; no body. Constant.
 * 2. The record batch message: marker, length, `Message` (V5, header `RecordBatch`: `length` 1,
 *    ten `FieldNode`s of length 1 and null count 0 or 1, 29 `Buffer`s, no compression), then the
 *    body. In column order, each column's buffers: a validity bitmap (length 0 when the value
 *    is present; one byte `0x00` when it is null), for Utf8 the two int32 value offsets
 *    `[0, n]` (8 bytes) and the `n` UTF-8 bytes of the value, for Int64 the 8-byte
 *    little-endian value (zero when null). Every buffer starts 8-byte aligned; padding is zero.
 *    `payload_json` comes last, written straight into the body from the payload's compact JSON.
 * 3. The end-of-stream marker `0xFFFFFFFF 0x00000000`.
 *
 * @module
 */
import {
  checkMessageSize,
  encodeJson,
  envelopeHeaderBound,
  envelopeHeaderBytes,
  maxMessageBytesOption,
  utf8Length,
} from "../wire/codec.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import { commitOutput, outputSlab, reserveOutput, skipOutput } from "./_output_slab.ts";
import { checkTypedEnvelope } from "../wire/validate.ts";
import { CARRIER_COLUMN, envelopeFromRow } from "./_carrier_rules.ts";
import { carrierDecodeLimits, checkedCarrierEnvelope } from "./_carrier_size.ts";
import {
  type ToolEnvelopeToMessageOptions,
  toolMessageToEnvelope,
  type ToolMessageToEnvelopeOptions,
} from "./carrier.ts";
import { type DecodeToolMessageIpcOptions, ipcByteLimit } from "./ipc.ts";
import {
  BUFFER_BYTES,
  CONTINUATION_MARKER,
  END_OF_STREAM_BYTES,
  FIELD_NODE_BYTES,
} from "./_arrow_format.ts";
import { decodeCarrierIpc, firstBuffer, SEQUENCE } from "./_fast_ipc_read.ts";
import { BODY_AT, BODY_LENGTH_AT, BUFFERS_AT, HEAD, NODES_AT } from "./_ipc_head.ts";

/** Options of {@linkcode encodeToolEnvelopeIpc}: those of {@linkcode toolEnvelopeToMessage}. */
export type EncodeToolEnvelopeIpcOptions = ToolEnvelopeToMessageOptions;

/**
 * Options of {@linkcode decodeToolEnvelopeIpc}: the IPC stream limit of
 * {@linkcode decodeToolMessageIpc} and the carrier limits of {@linkcode toolMessageToEnvelope}.
 */
export interface DecodeToolEnvelopeIpcOptions
  extends DecodeToolMessageIpcOptions, ToolMessageToEnvelopeOptions {}

const encoder = new TextEncoder();

function align8(n: number): number {
  return (n + 7) & ~7;
}

// ---------------------------------------------------------------------------------------------
// Envelope -> IPC bytes

function setInt64(view: DataView, at: number, value: number): void {
  view.setUint32(at, value >>> 0, true);
  view.setUint32(at + 4, Math.floor(value / 4294967296), true);
}

/**
 * Writes `value` as UTF-8 at `at` (room for 3 bytes per UTF-16 unit) and returns the byte count:
 * ASCII directly, four units a step (a step's one test costs what each unit's did), anything else
 * through the encoder.
 */
function writeText(out: Uint8Array, at: number, value: string): number {
  const length = value.length;
  let i = 0;
  for (; i + 3 < length; i += 4) {
    const a = value.charCodeAt(i);
    const b = value.charCodeAt(i + 1);
    const c = value.charCodeAt(i + 2);
    const d = value.charCodeAt(i + 3);
    if ((a | b | c | d) >= 0x80) return encodedText(out, at, value);
    out[at + i] = a;
    out[at + i + 1] = b;
    out[at + i + 2] = c;
    out[at + i + 3] = d;
  }
  for (; i < length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x80) return encodedText(out, at, value);
    out[at + i] = c;
  }
  return length;
}

/** Writes `value` as UTF-8 at `at` through the encoder and returns the byte count. */
function encodedText(out: Uint8Array, at: number, value: string): number {
  return encoder.encodeInto(value, out.subarray(at, at + 3 * value.length)).written;
}

/**
 * Encodes an envelope as a ToolMessage Arrow IPC stream (schema, one record batch, end-of-stream
 * marker) without building apache-arrow objects; the bytes are those
 * `encodeToolMessageIpc(toolEnvelopeToMessage(envelope, options))` writes up to layout (see the
 * module documentation), and apache-arrow and pyarrow read them to the same values.
 *
 * Checks, in the order of {@linkcode toolEnvelopeToMessage}: the argument (`TypeError`),
 * `maxMessageBytes` (`RangeError`), the full typed validation of the message
 * ({@linkcode validateMessageEnvelope}), then the logical encoded size
 * (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`, "message size N exceeds limit M"). The payload's compact
 * JSON is written straight into the record batch body. The bytes are a view of a larger buffer:
 * a stream up to 4 KiB shares a 64 KiB buffer with the streams encoded before and after it (a
 * buffer per stream cost as much as the encoding), so copy them (`bytes.slice()`) before you
 * post or transfer them to a worker (a posted view carries its whole buffer) or keep many of them
 * for long; the view itself is never written again.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
 * import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "@forge/tool/dora";
 * const bytes = encodeToolEnvelopeIpc(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * assertEquals(decodeToolEnvelopeIpc(bytes).requestId, "unregister-1");
 * ```
 */
export function encodeToolEnvelopeIpc(
  envelope: ToolEnvelope,
  options: EncodeToolEnvelopeIpcOptions = {},
): Uint8Array {
  if (!(envelope instanceof ToolEnvelope)) throw new TypeError("envelope must be a ToolEnvelope");
  const maximum = maxMessageBytesOption("encode a ToolEnvelope as IPC", options.maxMessageBytes);
  checkTypedEnvelope(envelope);
  const payload = encodeJson(envelope.payload, "payload");
  const units = payload.length;
  // A UTF-16 unit takes 1 to 3 bytes: the exact size is only needed when the bound passes the
  // limit.
  if (envelopeHeaderBound(envelope) + 3 * units > maximum) {
    checkMessageSize(envelopeHeaderBytes(envelope) + utf8Length(payload), maximum);
  }

  // Columns 0-7 are Utf8 headers, 8 the sequence, 9 payload_json.
  const values = [
    envelope.protocol,
    envelope.messageType,
    envelope.requestId,
    envelope.invocationId,
    envelope.attemptId,
    envelope.endpointId,
    envelope.endpointInstanceId,
    envelope.operation,
  ];
  let headerRoom = 0;
  for (const value of values) headerRoom += value === undefined ? 16 : 8 + align8(3 * value.length);
  // Room for the payload: one byte per unit and some; a wider payload is measured and rewritten.
  let room = units + (units >>> 3) + 64;
  for (;;) {
    const size = BODY_AT + headerRoom + 16 + 8 + align8(room) + END_OF_STREAM_BYTES;
    // A small stream is written in place in the encoder's buffer (its one view beside it), a
    // large one in a buffer of its own; `base` is where the stream starts.
    let base = reserveOutput(size);
    const own = base < 0;
    const out = own ? new Uint8Array(size) : outputSlab.bytes;
    const view = own ? new DataView(out.buffer) : outputSlab.view;
    if (own) base = 0;
    out.set(HEAD, base);
    const body = base + BODY_AT;
    const nodes = base + NODES_AT;
    const buffers = base + BUFFERS_AT;
    let offset = 0;
    for (let column = 0; column < values.length; column++) {
      const entry = buffers + BUFFER_BYTES * firstBuffer(column);
      const value = values[column];
      if (value === undefined) {
        setInt64(view, nodes + FIELD_NODE_BYTES * column + 8, 1);
        // validity: one zero byte; offsets: [0, 0]; data: empty.
        setInt64(view, entry, offset);
        setInt64(view, entry + 8, 1);
        setInt64(view, entry + 16, offset + 8);
        setInt64(view, entry + 24, 8);
        setInt64(view, entry + 32, offset + 16);
        offset += 16;
      } else {
        const length = writeText(out, body + offset + 8, value);
        view.setInt32(body + offset + 4, length, true);
        setInt64(view, entry, offset);
        setInt64(view, entry + 16, offset);
        setInt64(view, entry + 24, 8);
        setInt64(view, entry + 32, offset + 8);
        setInt64(view, entry + 40, length);
        offset += 8 + align8(length);
      }
    }
    const sequence = buffers + BUFFER_BYTES * firstBuffer(SEQUENCE);
    setInt64(view, sequence, offset);
    if (envelope.sequence === undefined) {
      setInt64(view, nodes + FIELD_NODE_BYTES * SEQUENCE + 8, 1);
      setInt64(view, sequence + 8, 1);
      offset += 8;
    } else {
      setInt64(view, body + offset, envelope.sequence);
    }
    setInt64(view, sequence + 16, offset);
    setInt64(view, sequence + 24, 8);
    offset += 8;
    // payload_json: no validity bytes, offsets [0, n], then the payload's UTF-8 written in place.
    const payloadJson = buffers + BUFFER_BYTES * firstBuffer(CARRIER_COLUMN.payload_json);
    const at = body + offset + 8;
    const { read, written } = encoder.encodeInto(payload, out.subarray(at, at + room));
    if (read < units) {
      // The region was written: it is never handed out, and the next one starts past it.
      if (!own) skipOutput(base, size);
      room = written + utf8Length(payload.slice(read));
      continue;
    }
    view.setInt32(body + offset + 4, written, true);
    setInt64(view, payloadJson, offset);
    setInt64(view, payloadJson + 16, offset);
    setInt64(view, payloadJson + 24, 8);
    setInt64(view, payloadJson + 32, offset + 8);
    setInt64(view, payloadJson + 40, written);
    offset += 8 + align8(written);
    setInt64(view, base + BODY_LENGTH_AT, offset);
    view.setInt32(body + offset, CONTINUATION_MARKER, true);
    const used = BODY_AT + offset + END_OF_STREAM_BYTES;
    if (!own) return commitOutput(base, used);
    return used === size ? out : out.subarray(0, used);
  }
}

/**
 * Decodes ToolMessage Arrow IPC stream bytes straight to a logical envelope: the same envelope, or
 * the same error, as `toolMessageToEnvelope(decodeToolMessageIpc(bytes, options), options)`,
 * without building apache-arrow objects for a well-formed stream. `payload_json` is parsed from
 * the record batch body in place.
 *
 * Checks, in order: the argument (`TypeError`), `maxBytes` (`RangeError`), the stream size and
 * its framing and metadata (see {@linkcode decodeToolMessageIpc}), `maxMessageBytes` and
 * `maxPayloadJsonBytes` (`RangeError`), then the carrier's shape and rules and the logical size
 * (see {@linkcode toolMessageToEnvelope}). The typed payload is not validated here.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope, ToolProtocolError } from "@forge/tool/wire";
 * import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "@forge/tool/dora";
 * const envelope = new ToolEnvelope({
 *   messageType: "endpoint.unregister",
 *   requestId: "unregister-1",
 *   endpointId: "vision.yolo",
 *   endpointInstanceId: "instance-1",
 * });
 * const bytes = encodeToolEnvelopeIpc(envelope);
 * assertEquals(decodeToolEnvelopeIpc(bytes, { maxBytes: 65536 }).endpointId, "vision.yolo");
 * try {
 *   decodeToolEnvelopeIpc(bytes.subarray(0, 100));
 * } catch (error) {
 *   assertEquals(error instanceof ToolProtocolError, true);
 * }
 * ```
 */
export function decodeToolEnvelopeIpc(
  bytes: Uint8Array | ArrayBuffer,
  options: DecodeToolEnvelopeIpcOptions = {},
): ToolEnvelope {
  const carrier = decodeCarrierIpc(bytes, "decodeToolEnvelopeIpc", ipcByteLimit(options.maxBytes));
  if (carrier.row === undefined) return toolMessageToEnvelope(carrier.batch, options);
  const limits = carrierDecodeLimits(options);
  const decoded = envelopeFromRow(carrier.row, limits.maxPayloadJsonBytes);
  return checkedCarrierEnvelope(decoded, limits.maxMessageBytes);
}

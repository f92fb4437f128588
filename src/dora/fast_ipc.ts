// Stays whole: one writer; the constant metadata and the body writer share the offsets it patches (the reader is _fast_ipc_read.ts).
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
import { outputBytes, trimOutput } from "./_output_slab.ts";
import { checkTypedEnvelope } from "../wire/validate.ts";
import { CARRIER_COLUMN, envelopeFromRow } from "./_carrier_rules.ts";
import { carrierDecodeLimits, checkedCarrierEnvelope } from "./_carrier_size.ts";
import {
  TOOL_MESSAGE_SCHEMA,
  type ToolEnvelopeToMessageOptions,
  toolMessageToEnvelope,
  type ToolMessageToEnvelopeOptions,
} from "./carrier.ts";
import { type DecodeToolMessageIpcOptions, ipcByteLimit } from "./ipc.ts";
import {
  BUFFER_BYTES,
  CONTINUATION_MARKER,
  END_OF_STREAM_BYTES,
  Endianness,
  FIELD_NODE_BYTES,
  FieldSlot,
  IntSlot,
  MESSAGE_PREFIX_BYTES,
  MessageHeader,
  MessageSlot,
  MetadataVersion,
  RecordBatchSlot,
  SchemaSlot,
  Type,
} from "./_arrow_format.ts";
import { BUFFERS, COLUMNS, decodeCarrierIpc, firstBuffer, SEQUENCE } from "./_fast_ipc_read.ts";

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
// The constant metadata, built once by a small forward flatbuffer writer: every table is written
// after its vtable and before its children, so each reference points forward, and every scalar,
// vector and struct is aligned to its size.

type FbScalar = { readonly size: 1 | 2 | 4 | 8; readonly value: number; readonly mark?: string };
type FbRef = { readonly ref: FbNode };
type FbField = FbScalar | FbRef | undefined;
type FbNode =
  | { readonly table: readonly FbField[] }
  | { readonly string: string }
  | { readonly tables: readonly FbNode[] }
  | { readonly structs: number; readonly size: number; readonly mark: string };

/** A table's fields by name, placed at their slots (`slots`); the slots between stay absent. */
function slotted<K extends string>(
  slots: Readonly<Record<K, number>>,
  fields: Partial<Record<K, FbField>>,
): FbField[] {
  const present = (Object.keys(fields) as K[]).map((name) => slots[name]);
  const out: FbField[] = Array.from({ length: Math.max(-1, ...present) + 1 }, () => undefined);
  for (const name of Object.keys(fields) as K[]) out[slots[name]] = fields[name];
  return out;
}

class ForwardFlatBufferWriter {
  readonly marks = new Map<string, number>();
  #bytes = new Uint8Array(4096);
  #view = new DataView(this.#bytes.buffer);
  #pos = 0;

  /** Writes `root` as a flatbuffer; the result is zero-padded to a multiple of 8. */
  finish(root: FbNode): Uint8Array {
    this.#pos = 4;
    this.#view.setUint32(0, this.#node(root), true);
    this.#pos = align8(this.#pos);
    return this.#bytes.slice(0, this.#pos);
  }

  #node(node: FbNode): number {
    if ("table" in node) return this.#table(node.table);
    if ("string" in node) {
      this.#pos = (this.#pos + 3) & ~3;
      const start = this.#pos;
      const bytes = encoder.encode(node.string);
      this.#view.setUint32(start, bytes.length, true);
      this.#bytes.set(bytes, start + 4);
      this.#pos = start + 4 + bytes.length + 1; // NUL-terminated
      return start;
    }
    if ("tables" in node) {
      this.#pos = (this.#pos + 3) & ~3;
      const start = this.#pos;
      this.#view.setUint32(start, node.tables.length, true);
      this.#pos = start + 4 + 4 * node.tables.length;
      node.tables.forEach((item, i) => {
        const slot = start + 4 + 4 * i;
        this.#view.setUint32(slot, this.#node(item) - slot, true);
      });
      return start;
    }
    // A vector of structs: the elements are 8-byte aligned.
    while (this.#pos % 8 !== 4) this.#pos++;
    const start = this.#pos;
    this.#view.setUint32(start, node.structs, true);
    this.marks.set(node.mark, start + 4);
    this.#pos = start + 4 + node.structs * node.size;
    return start;
  }

  #table(fields: readonly FbField[]): number {
    this.#pos = (this.#pos + 3) & ~3;
    const vtable = this.#pos;
    const vtableSize = 4 + 2 * fields.length;
    this.#pos += (vtableSize + 3) & ~3;
    // Inline fields, widest first, so each is aligned once the table start is.
    const sizeOf = (field: FbField) => field === undefined ? 0 : "ref" in field ? 4 : field.size;
    const order = fields.map((_, i) => i).filter((i) => fields[i] !== undefined)
      .sort((a, b) => sizeOf(fields[b]) - sizeOf(fields[a]) || a - b);
    const wide = order.some((i) => sizeOf(fields[i]) === 8);
    while (this.#pos % (wide ? 8 : 4) !== (wide ? 4 : 0)) this.#pos++;
    const table = this.#pos;
    this.#view.setInt32(table, table - vtable, true);
    let at = table + 4;
    const positions: number[] = [];
    for (const i of order) {
      const size = sizeOf(fields[i]);
      while (at % size !== 0) at++;
      positions[i] = at;
      at += size;
    }
    const tableSize = ((at - table) + 3) & ~3;
    this.#pos = table + tableSize;
    this.#view.setUint16(vtable, vtableSize, true);
    this.#view.setUint16(vtable + 2, tableSize, true);
    fields.forEach((_, i) => {
      this.#view.setUint16(
        vtable + 4 + 2 * i,
        positions[i] === undefined ? 0 : positions[i] - table,
        true,
      );
    });
    for (const i of order) {
      const field = fields[i]!;
      const at = positions[i];
      if ("ref" in field) continue;
      if (field.mark !== undefined) this.marks.set(field.mark, at);
      if (field.size === 1) this.#view.setUint8(at, field.value);
      else if (field.size === 2) this.#view.setInt16(at, field.value, true);
      else if (field.size === 4) this.#view.setInt32(at, field.value, true);
      else this.#view.setBigInt64(at, BigInt(field.value), true);
    }
    for (const i of order) {
      const field = fields[i]!;
      if (!("ref" in field)) continue;
      const at = positions[i];
      this.#view.setUint32(at, this.#node(field.ref) - at, true);
    }
    return table;
  }
}

/** A message: continuation marker, metadata length, the metadata (a multiple of 8). */
function framed(metadata: Uint8Array): Uint8Array {
  const out = new Uint8Array(MESSAGE_PREFIX_BYTES + metadata.length);
  const view = new DataView(out.buffer);
  view.setInt32(0, CONTINUATION_MARKER, true);
  view.setInt32(4, metadata.length, true);
  out.set(metadata, MESSAGE_PREFIX_BYTES);
  return out;
}

function schemaMessage(): Uint8Array {
  const int64: FbNode = {
    table: slotted(IntSlot, { bitWidth: { size: 4, value: 64 }, isSigned: { size: 1, value: 1 } }),
  };
  const fields = TOOL_MESSAGE_SCHEMA.fields.map((field, i): FbNode => ({
    table: slotted(FieldSlot, {
      name: { ref: { string: field.name } },
      nullable: { size: 1, value: field.nullable ? 1 : 0 },
      typeType: { size: 1, value: i === SEQUENCE ? Type.Int : Type.Utf8 },
      type: { ref: i === SEQUENCE ? int64 : { table: [] } },
      children: { ref: { tables: [] } },
    }),
  }));
  const schema: FbNode = {
    table: slotted(SchemaSlot, {
      endianness: { size: 2, value: Endianness.Little },
      fields: { ref: { tables: fields } },
    }),
  };
  const message: FbNode = {
    table: slotted(MessageSlot, {
      version: { size: 2, value: MetadataVersion.V5 },
      headerType: { size: 1, value: MessageHeader.Schema },
      header: { ref: schema },
      bodyLength: { size: 8, value: 0 },
    }),
  };
  return framed(new ForwardFlatBufferWriter().finish(message));
}

function batchMessage(): { bytes: Uint8Array; bodyLength: number; nodes: number; buffers: number } {
  const writer = new ForwardFlatBufferWriter();
  const metadata = writer.finish({
    table: slotted(MessageSlot, {
      version: { size: 2, value: MetadataVersion.V5 },
      headerType: { size: 1, value: MessageHeader.RecordBatch },
      header: {
        ref: {
          table: slotted(RecordBatchSlot, {
            length: { size: 8, value: 1 },
            nodes: { ref: { structs: COLUMNS, size: FIELD_NODE_BYTES, mark: "nodes" } },
            buffers: { ref: { structs: BUFFERS, size: BUFFER_BYTES, mark: "buffers" } },
          }),
        },
      },
      bodyLength: { size: 8, value: 0, mark: "bodyLength" },
    }),
  });
  const nodes = writer.marks.get("nodes")!;
  const view = new DataView(metadata.buffer);
  // Every field node's length is the one row (its null count is written per message).
  for (let i = 0; i < COLUMNS; i++) view.setBigInt64(nodes + FIELD_NODE_BYTES * i, 1n, true);
  return {
    bytes: framed(metadata),
    bodyLength: MESSAGE_PREFIX_BYTES + writer.marks.get("bodyLength")!,
    nodes: MESSAGE_PREFIX_BYTES + nodes,
    buffers: MESSAGE_PREFIX_BYTES + writer.marks.get("buffers")!,
  };
}

const SCHEMA_MESSAGE = schemaMessage();
const BATCH_MESSAGE = batchMessage();
/** The schema message and the record batch metadata template: the head of every stream. */
const HEAD = new Uint8Array(SCHEMA_MESSAGE.length + BATCH_MESSAGE.bytes.length);
HEAD.set(SCHEMA_MESSAGE, 0);
HEAD.set(BATCH_MESSAGE.bytes, SCHEMA_MESSAGE.length);
const BODY_LENGTH_AT = SCHEMA_MESSAGE.length + BATCH_MESSAGE.bodyLength;
const NODES_AT = SCHEMA_MESSAGE.length + BATCH_MESSAGE.nodes;
const BUFFERS_AT = SCHEMA_MESSAGE.length + BATCH_MESSAGE.buffers;
const BODY_AT = HEAD.length;

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
    const out = outputBytes(BODY_AT + headerRoom + 16 + 8 + align8(room) + END_OF_STREAM_BYTES);
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
    out.set(HEAD, 0);
    let offset = 0;
    for (let column = 0; column < values.length; column++) {
      const entry = BUFFERS_AT + BUFFER_BYTES * firstBuffer(column);
      const value = values[column];
      if (value === undefined) {
        setInt64(view, NODES_AT + FIELD_NODE_BYTES * column + 8, 1);
        // validity: one zero byte; offsets: [0, 0]; data: empty.
        setInt64(view, entry, offset);
        setInt64(view, entry + 8, 1);
        setInt64(view, entry + 16, offset + 8);
        setInt64(view, entry + 24, 8);
        setInt64(view, entry + 32, offset + 16);
        offset += 16;
      } else {
        const length = writeText(out, BODY_AT + offset + 8, value);
        view.setInt32(BODY_AT + offset + 4, length, true);
        setInt64(view, entry, offset);
        setInt64(view, entry + 16, offset);
        setInt64(view, entry + 24, 8);
        setInt64(view, entry + 32, offset + 8);
        setInt64(view, entry + 40, length);
        offset += 8 + align8(length);
      }
    }
    const sequence = BUFFERS_AT + BUFFER_BYTES * firstBuffer(SEQUENCE);
    setInt64(view, sequence, offset);
    if (envelope.sequence === undefined) {
      setInt64(view, NODES_AT + FIELD_NODE_BYTES * SEQUENCE + 8, 1);
      setInt64(view, sequence + 8, 1);
      offset += 8;
    } else {
      setInt64(view, BODY_AT + offset, envelope.sequence);
    }
    setInt64(view, sequence + 16, offset);
    setInt64(view, sequence + 24, 8);
    offset += 8;
    // payload_json: no validity bytes, offsets [0, n], then the payload's UTF-8 written in place.
    const payloadJson = BUFFERS_AT + BUFFER_BYTES * firstBuffer(CARRIER_COLUMN.payload_json);
    const at = BODY_AT + offset + 8;
    const { read, written } = encoder.encodeInto(payload, out.subarray(at, at + room));
    if (read < units) {
      room = written + utf8Length(payload.slice(read));
      continue;
    }
    view.setInt32(BODY_AT + offset + 4, written, true);
    setInt64(view, payloadJson, offset);
    setInt64(view, payloadJson + 16, offset);
    setInt64(view, payloadJson + 24, 8);
    setInt64(view, payloadJson + 32, offset + 8);
    setInt64(view, payloadJson + 40, written);
    offset += 8 + align8(written);
    setInt64(view, BODY_LENGTH_AT, offset);
    view.setInt32(BODY_AT + offset, CONTINUATION_MARKER, true);
    return trimOutput(out, BODY_AT + offset + END_OF_STREAM_BYTES);
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

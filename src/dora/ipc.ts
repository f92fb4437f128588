// Stays whole: one bounded decoder; the framing and metadata checks feed apache-arrow the exact stream they checked.
/**
 * Arrow IPC stream framing of one ToolMessage carrier: the schema, one record batch, and the
 * end-of-stream marker. Decoding is bounded: the byte length is checked first, every message's
 * framing and flatbuffer metadata is checked before apache-arrow reads it, and only an
 * uncompressed stream of exactly one schema and one single-row batch without dictionaries is
 * accepted, so a decoded batch never allocates more than the bytes it was given.
 *
 * @module
 */
import {
  isArrowRecordBatch,
  type RecordBatch,
  RecordBatchReader,
  RecordBatchStreamWriter,
} from "apache-arrow";
import { DEFAULT_MAX_MESSAGE_BYTES } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { positiveIntegerOption } from "../_internal/options.ts";
import { isToolMessageSchema } from "./carrier.ts";
import {
  BUFFER_BYTES,
  CONTINUATION_MARKER,
  Endianness,
  FIELD_NODE_BYTES,
  FieldSlot,
  KeyValueSlot,
  MESSAGE_PREFIX_BYTES,
  MessageHeader,
  MessageSlot,
  MetadataVersion,
  NESTED_TYPES,
  OFFSET_BYTES,
  RecordBatchSlot,
  SchemaSlot,
} from "./_arrow_format.ts";
import { corrupt, FlatBuffer } from "./_flatbuffer.ts";

/** Options of {@linkcode decodeToolMessageIpc}. */
export interface DecodeToolMessageIpcOptions {
  /**
   * The largest IPC stream accepted, in bytes, checked before anything is read (1 MiB plus 64
   * KiB by default, the Dora binding's default carrier limit).
   *
   * @default {1114112}
   */
  readonly maxBytes?: number;
}

/** @internal The default IPC stream limit: 1 MiB plus 64 KiB. */
export const DEFAULT_MAX_IPC_BYTES: number = DEFAULT_MAX_MESSAGE_BYTES + 65536;

function unsupported(message: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_MESSAGE, message);
}

const ONE_BATCH = "ToolMessage IPC stream must contain exactly one RecordBatch";

function checkKeyValues(fb: FlatBuffer, table: number, index: number): void {
  const { start, length } = fb.vector(table, index, OFFSET_BYTES);
  for (let i = 0; i < length; i++) {
    const entry = fb.element(start, i);
    fb.string(entry, KeyValueSlot.key);
    fb.string(entry, KeyValueSlot.value);
  }
}

/** Checks a Schema table: little-endian, flat, dictionary-free fields. */
function checkSchema(fb: FlatBuffer, schema: number): void {
  if (fb.scalarI16(schema, SchemaSlot.endianness, Endianness.Little) !== Endianness.Little) {
    throw unsupported("ToolMessage IPC stream must be little-endian");
  }
  const fields = fb.vector(schema, SchemaSlot.fields, OFFSET_BYTES);
  for (let i = 0; i < fields.length; i++) {
    const field = fb.element(fields.start, i);
    fb.string(field, FieldSlot.name);
    const typeTag = fb.scalarU8(field, FieldSlot.typeType, 0);
    fb.table(field, FieldSlot.type);
    if (fb.table(field, FieldSlot.dictionary) !== 0) {
      throw unsupported("ToolMessage IPC stream must not contain dictionary-encoded columns");
    }
    if (
      NESTED_TYPES.has(typeTag) || fb.vector(field, FieldSlot.children, OFFSET_BYTES).length !== 0
    ) {
      throw unsupported("ToolMessage IPC stream columns must not be nested");
    }
    checkKeyValues(fb, field, FieldSlot.customMetadata);
  }
  checkKeyValues(fb, schema, SchemaSlot.customMetadata);
  fb.vector(schema, SchemaSlot.features, 8);
}

/**
 * Checks a RecordBatch table: one row, uncompressed, buffers inside the body. Returns the null
 * count of every field node and the offset and length of every buffer (in pairs).
 */
function checkRecordBatch(
  fb: FlatBuffer,
  batch: number,
  bodyLength: number,
): { nullCounts: number[]; buffers: number[] } {
  if (fb.scalarI64(batch, RecordBatchSlot.length, 0) !== 1) {
    throw unsupported("ToolMessage RecordBatch must contain exactly one row");
  }
  const nodes = fb.vector(batch, RecordBatchSlot.nodes, FIELD_NODE_BYTES);
  const nullCounts: number[] = new Array(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const length = fb.vectorI64(nodes.start + FIELD_NODE_BYTES * i);
    const nullCount = fb.vectorI64(nodes.start + FIELD_NODE_BYTES * i + 8);
    if (length !== 1 || nullCount < 0 || nullCount > 1) {
      throw unsupported("ToolMessage RecordBatch must contain exactly one row");
    }
    nullCounts[i] = nullCount;
  }
  const vector = fb.vector(batch, RecordBatchSlot.buffers, BUFFER_BYTES);
  const buffers: number[] = new Array(2 * vector.length);
  for (let i = 0; i < vector.length; i++) {
    const offset = fb.vectorI64(vector.start + BUFFER_BYTES * i);
    const length = fb.vectorI64(vector.start + BUFFER_BYTES * i + 8);
    if (offset < 0 || length < 0 || offset + length > bodyLength) {
      throw corrupt("a record batch buffer lies outside the message body");
    }
    buffers[2 * i] = offset;
    buffers[2 * i + 1] = length;
  }
  if (fb.table(batch, RecordBatchSlot.compression) !== 0) {
    throw unsupported("ToolMessage IPC stream must not use body compression");
  }
  fb.vector(batch, RecordBatchSlot.variadicBufferCounts, 8);
  return { nullCounts, buffers };
}

// The schema memo of the IPC readers (this module's checkToolMessageStream and the fast reader of
// _fast_ipc_read.ts), the one module state of the carrier code, kept in this one object. A sender writes
// the same schema message every time, and the same bytes pass the same checks: the memo only
// skips checks whose outcome it recorded, never changes one.
const schemaMemo: {
  /** The metadata of the last schema message that passed checkSchema (when small enough). */
  known: DataView | undefined;
  /** The same bytes as words (the memo's copy starts a buffer of its own: aligned). */
  knownWords: Int32Array | undefined;
  /** Its identity (IpcStreamLayout.schemaId): counts the schemas that passed checkSchema. */
  knownId: number;
  /** The identity of the last schema the fast reader found to be the carrier's (-1: none). */
  carrierId: number;
} = { known: undefined, knownWords: undefined, knownId: 0, carrierId: -1 };
// A ToolMessage schema takes well under 1 KiB; larger ones are checked every time, not kept.
const MAX_KNOWN_SCHEMA_BYTES = 4096;

/**
 * @internal True when the fast reader found the schema of this identity
 * ({@linkcode IpcStreamLayout.schemaId}) to be the carrier's.
 */
export function isCarrierSchemaId(schemaId: number): boolean {
  return schemaId === schemaMemo.carrierId;
}

/** @internal Records that the schema of this identity is the carrier's (see the memo above). */
export function rememberCarrierSchemaId(schemaId: number): void {
  schemaMemo.carrierId = schemaId;
}

function isKnownSchema(view: DataView, start: number, length: number): boolean {
  const known = schemaMemo.known;
  if (known === undefined || known.byteLength !== length) return false;
  const at = view.byteOffset + start;
  if ((at & 3) === 0 && (length & 3) === 0) {
    // Aligned (every stream the encoder and the loopback carve is): whole words, no DataView.
    const words = new Int32Array(view.buffer, at, length >> 2);
    const knownWords = schemaMemo.knownWords!;
    for (let w = 0; w < words.length; w++) if (words[w] !== knownWords[w]) return false;
    return true;
  }
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    if (view.getInt32(start + i, true) !== known.getInt32(i, true)) return false;
  }
  for (; i < length; i++) if (view.getUint8(start + i) !== known.getUint8(i)) return false;
  return true;
}

/**
 * @internal Where the parts of a checked ToolMessage IPC stream are: its one schema and its one
 * record batch (each message's metadata as a {@linkcode FlatBuffer}, the header table's position
 * in it and the message's metadata version), the record batch body with its field nodes' null
 * counts and its buffers, and the byte length of the stream up to and including the batch (and
 * the end-of-stream marker when present).
 */
export interface IpcStreamLayout {
  readonly end: number;
  readonly schema: FlatBuffer;
  readonly schemaTable: number;
  readonly schemaVersion: number;
  /** Equal for two streams whose schema messages have the same metadata bytes. */
  readonly schemaId: number;
  readonly batch: FlatBuffer;
  readonly batchTable: number;
  readonly batchVersion: number;
  readonly bodyStart: number;
  readonly bodyLength: number;
  /** The null count of every field node. */
  readonly nullCounts: readonly number[];
  /** The offset (in the body) and length of every buffer, in pairs. */
  readonly buffers: readonly number[];
}

/** Walks the stream's messages, checking framing and metadata, and returns its layout. */
function checkStream(bytes: Uint8Array): IpcStreamLayout {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = bytes.byteLength;
  let position = 0;
  let schema: FlatBuffer | undefined;
  let schemaTable = 0;
  let schemaVersion = 0;
  let schemaId = 0;
  let batch: FlatBuffer | undefined;
  let batchTable = 0;
  let batchVersion = 0;
  let batchBodyStart = 0;
  let batchBodyLength = 0;
  let batchRegions: { nullCounts: number[]; buffers: number[] } | undefined;
  while (position < size) {
    if (size - position < 4) throw corrupt("truncated message length");
    let metadataLength = view.getInt32(position, true);
    // A pre-0.15 stream has no continuation marker: the length comes first.
    let prefix = 4;
    if (metadataLength === CONTINUATION_MARKER) {
      if (size - position < MESSAGE_PREFIX_BYTES) throw corrupt("truncated message length");
      metadataLength = view.getInt32(position + 4, true);
      prefix = MESSAGE_PREFIX_BYTES;
    }
    if (metadataLength === 0) {
      position += prefix;
      if (position !== size) throw corrupt("trailing bytes after the end-of-stream marker");
      break;
    }
    const metadataStart = position + prefix;
    if (metadataLength < 0 || metadataLength > size - metadataStart) {
      throw corrupt("truncated message metadata");
    }
    const fb = new FlatBuffer(view, metadataStart, metadataLength);
    const message = fb.root();
    fb.i32(message);
    const version = fb.scalarI16(message, MessageSlot.version, 0);
    if (version < MetadataVersion.V4) {
      throw unsupported("ToolMessage IPC stream must use Arrow IPC metadata version V4 or V5");
    }
    const headerType = fb.scalarU8(message, MessageSlot.headerType, 0);
    const header = fb.table(message, MessageSlot.header);
    const declaredBody = fb.scalarI64(message, MessageSlot.bodyLength, 0);
    checkKeyValues(fb, message, MessageSlot.customMetadata);
    const bodyStart = metadataStart + metadataLength;
    if (declaredBody < 0 || declaredBody > size - bodyStart) {
      throw corrupt("truncated message body");
    }
    const bodyLength = declaredBody;
    if (header === 0) throw corrupt("message has no header");
    switch (headerType) {
      case MessageHeader.Schema:
        if (schema !== undefined || batch !== undefined) {
          throw unsupported("ToolMessage IPC stream must contain exactly one schema");
        }
        if (!isKnownSchema(view, metadataStart, metadataLength)) {
          checkSchema(fb, header);
          const copy = metadataLength <= MAX_KNOWN_SCHEMA_BYTES
            ? bytes.slice(metadataStart, metadataStart + metadataLength).buffer
            : undefined;
          schemaMemo.known = copy === undefined ? undefined : new DataView(copy);
          schemaMemo.knownWords = copy === undefined
            ? undefined
            : new Int32Array(copy, 0, metadataLength >> 2);
          schemaMemo.knownId++;
        }
        schemaId = schemaMemo.knownId;
        schema = fb;
        schemaTable = header;
        schemaVersion = version;
        break;
      case MessageHeader.RecordBatch:
        if (schema === undefined) {
          throw unsupported("ToolMessage IPC stream must start with a schema");
        }
        if (batch !== undefined) throw unsupported(ONE_BATCH);
        batchRegions = checkRecordBatch(fb, header, bodyLength);
        batch = fb;
        batchTable = header;
        batchVersion = version;
        batchBodyStart = bodyStart;
        batchBodyLength = bodyLength;
        break;
      case MessageHeader.DictionaryBatch:
        throw unsupported("ToolMessage IPC stream must not contain dictionary batches");
      default:
        throw unsupported(
          `ToolMessage IPC stream must contain only schema and record batch messages, found message type ${headerType}`,
        );
    }
    position = bodyStart + bodyLength;
  }
  if (schema === undefined) {
    throw unsupported("ToolMessage IPC stream must start with a schema");
  }
  if (batch === undefined || batchRegions === undefined) throw unsupported(ONE_BATCH);
  return {
    end: position,
    schema,
    schemaTable,
    schemaVersion,
    schemaId,
    batch,
    batchTable,
    batchVersion,
    bodyStart: batchBodyStart,
    bodyLength: batchBodyLength,
    nullCounts: batchRegions.nullCounts,
    buffers: batchRegions.buffers,
  };
}

/**
 * @internal The bytes argument of an IPC decoder as a `Uint8Array` (no copy), or a `TypeError`
 * naming `decoder`.
 */
export function ipcBytesView(bytes: unknown, decoder: string): Uint8Array {
  if (bytes instanceof Uint8Array) return bytes;
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) {
    const source = bytes as ArrayBufferView;
    return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  }
  throw new TypeError(`${decoder} expects IPC bytes (a Uint8Array or ArrayBuffer)`);
}

/** @internal The `maxBytes` option of an IPC decoder, checked (`RangeError`), with its default. */
export function ipcByteLimit(maxBytes: number | undefined): number {
  return positiveIntegerOption(
    "decode a ToolMessage IPC stream",
    "maxBytes",
    maxBytes ?? undefined,
    DEFAULT_MAX_IPC_BYTES,
  );
}

/**
 * @internal Checks one ToolMessage IPC stream before anything reads its values: its byte length
 * against `maximum` (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`), then its framing and every message's
 * metadata (`FORGE_PROTOCOL_INVALID_MESSAGE`), and returns where its parts are. The one
 * validation of IPC framing, shared by the apache-arrow decoder and the fast codec.
 */
export function checkToolMessageStream(view: Uint8Array, maximum: number): IpcStreamLayout {
  if (view.byteLength > maximum) {
    throw new ToolProtocolError(
      ToolErrorCodes.MESSAGE_TOO_LARGE,
      `IPC stream size ${view.byteLength} exceeds limit ${maximum}`,
    );
  }
  try {
    return checkStream(view);
  } catch (error) {
    throw asIpcError(error);
  }
}

function asIpcError(error: unknown): ToolProtocolError {
  if (error instanceof ToolProtocolError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  return corrupt(detail);
}

/**
 * Writes one ToolMessage carrier as an Arrow IPC stream: the schema, the record batch, and the
 * end-of-stream marker. The batch must have one row and exactly the carrier schema.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
 * import {
 *   decodeToolMessageIpc,
 *   encodeToolMessageIpc,
 *   toolEnvelopeToMessage,
 *   toolMessageToEnvelope,
 * } from "@forge/tool/dora";
 * const bytes = encodeToolMessageIpc(
 *   toolEnvelopeToMessage(
 *     new ToolEnvelope({
 *       messageType: "endpoint.unregister",
 *       requestId: "unregister-1",
 *       endpointId: "vision.yolo",
 *       endpointInstanceId: "instance-1",
 *     }),
 *   ),
 * );
 * const envelope = toolMessageToEnvelope(decodeToolMessageIpc(bytes, { maxBytes: 65536 }));
 * assertEquals(envelope.requestId, "unregister-1");
 * ```
 */
export function encodeToolMessageIpc(batch: RecordBatch): Uint8Array {
  if (!isArrowRecordBatch(batch)) {
    throw new TypeError("encodeToolMessageIpc expects an arrow RecordBatch");
  }
  if (batch.numRows !== 1 || !isToolMessageSchema(batch.schema.fields)) {
    throw new RangeError(
      "batch must be a one-row ToolMessage RecordBatch with exactly TOOL_MESSAGE_SCHEMA",
    );
  }
  return RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true);
}

/**
 * Reads one ToolMessage carrier from Arrow IPC stream bytes, bounded: the byte length is checked
 * against `maxBytes` before anything is read (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`, "IPC stream
 * size N exceeds limit M"); then the stream must hold exactly one schema and exactly one
 * single-row record batch, with no dictionary batches, no dictionary-encoded or nested columns
 * and no body compression. Every failure, including any error apache-arrow raises on corrupted
 * bytes, is a {@linkcode ToolProtocolError} `FORGE_PROTOCOL_INVALID_MESSAGE`; a non-bytes
 * argument is a `TypeError` and a bad `maxBytes` a `RangeError`.
 *
 * The schema is not compared with {@linkcode TOOL_MESSAGE_SCHEMA} here:
 * {@linkcode toolMessageToEnvelope} does that. The returned batch shares memory with `bytes`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolProtocolError } from "@forge/tool/wire";
 * import { decodeToolMessageIpc } from "@forge/tool/dora";
 * try {
 *   decodeToolMessageIpc(new Uint8Array([1, 2, 3]), { maxBytes: 1024 });
 * } catch (error) {
 *   assertEquals(error instanceof ToolProtocolError, true);
 * }
 * ```
 */
export function decodeToolMessageIpc(
  bytes: Uint8Array | ArrayBuffer,
  options: DecodeToolMessageIpcOptions = {},
): RecordBatch {
  const view = ipcBytesView(bytes, "decodeToolMessageIpc");
  const layout = checkToolMessageStream(view, ipcByteLimit(options.maxBytes));
  try {
    const batches: RecordBatch[] = [];
    for (const batch of RecordBatchReader.from(view.subarray(0, layout.end))) batches.push(batch);
    if (batches.length !== 1) throw unsupported(ONE_BATCH);
    return batches[0];
  } catch (error) {
    throw asIpcError(error);
  }
}

// Stays whole: one carrier; the encoder and the decoder share its schema and column rules.
/**
 * The `forge_msgs.ToolMessage` Arrow carrier (`interfaces/forge_msgs/tool.v1.yaml`): one logical
 * Wire envelope as a single-row Arrow record batch with ten exact columns, and the conversions
 * between the two.
 *
 * @module
 */
import {
  type Data,
  type DataType,
  Field,
  Int64,
  isArrowData,
  isArrowRecordBatch,
  isArrowTable,
  isArrowVector,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  type Table,
  Type,
  Utf8,
} from "apache-arrow";
import type { ToolRequestRoute } from "../handler/handler.ts";
import {
  checkMessageSize,
  envelopeJsonParts,
  maxMessageBytesOption,
  utf8Length,
} from "../wire/codec.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import { checkTypedEnvelope } from "../wire/validate.ts";
import {
  CARRIER_COLUMN,
  type CarrierRow,
  checkedUtf8Range,
  type DecodedCarrier,
  envelopeFromRow,
  invalid,
  invalidBitmap,
  invalidBuffers,
  type Utf8Range,
} from "./_carrier_rules.ts";
import { carrierDecodeLimits, checkedCarrierEnvelope } from "./_carrier_size.ts";

/**
 * An Arrow value that can hold one ToolMessage: a record batch, a table of one batch, or a
 * one-row Struct vector (or Struct `Data`) whose child fields are the carrier's columns.
 */
export type ToolMessageArrowValue = RecordBatch | Table | ToolMessageStructVector | Data<Struct>;

/** The shape of an apache-arrow `Vector` of `Struct` type (`makeVector(structData)`). */
export interface ToolMessageStructVector {
  /** The Struct type; its child fields are the carrier's schema. */
  readonly type: Struct;
  /** The chunks. */
  readonly data: readonly Data<Struct>[];
  /** The number of rows. */
  readonly length: number;
}

/** Options of {@linkcode toolEnvelopeToMessage}. */
export interface ToolEnvelopeToMessageOptions {
  /**
   * The largest logical encoded message accepted, in bytes.
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
}

/** Options of {@linkcode toolMessageToEnvelope}. */
export interface ToolMessageToEnvelopeOptions {
  /**
   * The largest logical encoded message accepted, in bytes.
   *
   * @default {1048576}
   */
  readonly maxMessageBytes?: number;
  /**
   * The largest raw `payload_json` accepted, in UTF-8 bytes including any whitespace, checked
   * before the JSON is parsed.
   *
   * @default {undefined: no separate limit}
   */
  readonly maxPayloadJsonBytes?: number;
}

const utf8Field = (name: string, nullable: boolean) =>
  Object.freeze(new Field(name, Object.freeze(new Utf8()), nullable));

/**
 * The exact schema of a ToolMessage carrier, ten columns in this order:
 *
 * | # | column | Arrow type | nullable |
 * |---|---|---|---|
 * | 1 | protocol | Utf8 | no |
 * | 2 | message_type | Utf8 | no |
 * | 3 | request_id | Utf8 | yes |
 * | 4 | invocation_id | Utf8 | yes |
 * | 5 | attempt_id | Utf8 | yes |
 * | 6 | endpoint_id | Utf8 | no |
 * | 7 | endpoint_instance_id | Utf8 | yes |
 * | 8 | operation | Utf8 | yes |
 * | 9 | sequence | Int64 | yes |
 * | 10 | payload_json | Utf8 | no |
 *
 * A carrier must match it exactly (names, order, types and nullability; metadata is ignored):
 * `LargeUtf8`, `Utf8View`, dictionary-encoded or `Int32` columns are rejected. The schema and
 * its fields are frozen.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { TOOL_MESSAGE_SCHEMA } from "@forge/tool/dora";
 * assertEquals(TOOL_MESSAGE_SCHEMA.fields.map((field) => field.name), [
 *   "protocol",
 *   "message_type",
 *   "request_id",
 *   "invocation_id",
 *   "attempt_id",
 *   "endpoint_id",
 *   "endpoint_instance_id",
 *   "operation",
 *   "sequence",
 *   "payload_json",
 * ]);
 * ```
 */
export const TOOL_MESSAGE_SCHEMA: RecordBatch["schema"] = Object.freeze(
  new Schema(
    Object.freeze([
      utf8Field("protocol", false),
      utf8Field("message_type", false),
      utf8Field("request_id", true),
      utf8Field("invocation_id", true),
      utf8Field("attempt_id", true),
      utf8Field("endpoint_id", false),
      utf8Field("endpoint_instance_id", true),
      utf8Field("operation", true),
      Object.freeze(new Field("sequence", Object.freeze(new Int64()), true)),
      utf8Field("payload_json", false),
    ]) as Field[],
  ),
);

const FIELDS = TOOL_MESSAGE_SCHEMA.fields;
const STRUCT_TYPE = Object.freeze(new Struct(FIELDS));
const encoder = new TextEncoder();
const EMPTY_BYTES = new Uint8Array(0);
const NULL_BITMAP = new Uint8Array([0]);
const NULL_OFFSETS = new Int32Array([0, 0]);

// ---------------------------------------------------------------------------------------------
// Envelope -> carrier

function utf8Column(value: string | undefined): Data {
  if (value === undefined) {
    return makeData({
      type: FIELDS[0].type as Utf8,
      length: 1,
      nullCount: 1,
      nullBitmap: NULL_BITMAP,
      valueOffsets: NULL_OFFSETS,
      data: EMPTY_BYTES,
    });
  }
  const bytes = encoder.encode(value);
  return makeData({
    type: FIELDS[0].type as Utf8,
    length: 1,
    nullCount: 0,
    valueOffsets: new Int32Array([0, bytes.length]),
    data: bytes,
  });
}

function sequenceColumn(value: number | undefined): Data {
  return value === undefined
    ? makeData({
      type: FIELDS[CARRIER_COLUMN.sequence].type as Int64,
      length: 1,
      nullCount: 1,
      nullBitmap: NULL_BITMAP,
      data: new BigInt64Array(1),
    })
    : makeData({
      type: FIELDS[CARRIER_COLUMN.sequence].type as Int64,
      length: 1,
      nullCount: 0,
      data: new BigInt64Array([BigInt(value)]),
    });
}

/** The Wire JSON of the envelope and the payload's JSON text inside it (one encode). */
function envelopeAndPayloadJson(envelope: ToolEnvelope): { text: string; payload: string } {
  const { head, payload, tail } = envelopeJsonParts(envelope);
  return { text: head + payload + tail, payload };
}

/**
 * Converts a logical envelope to a ToolMessage carrier: a one-row record batch with exactly
 * {@linkcode TOOL_MESSAGE_SCHEMA}. Absent headers become nulls; `payload_json` is the payload as
 * compact JSON with keys sorted by code point, non-ASCII raw.
 *
 * Checks, in the reference's order: the argument (`TypeError`), `maxMessageBytes`
 * (`RangeError`), the full typed validation of the message ({@linkcode validateMessageEnvelope}),
 * then the logical encoded size (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`, "message size N exceeds
 * limit M"). So an invalid payload is reported as invalid even when it is also too large.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
 * import { toolEnvelopeToMessage, toolMessageToEnvelope } from "@forge/tool/dora";
 * const envelope = new ToolEnvelope({
 *   messageType: "endpoint.unregister",
 *   requestId: "unregister-1",
 *   endpointId: "vision.yolo",
 *   endpointInstanceId: "instance-1",
 * });
 * const batch = toolEnvelopeToMessage(envelope);
 * assertEquals([batch.numRows, toolMessageToEnvelope(batch).requestId], [1, "unregister-1"]);
 * ```
 */
export function toolEnvelopeToMessage(
  envelope: ToolEnvelope,
  options: ToolEnvelopeToMessageOptions = {},
): RecordBatch {
  if (!(envelope instanceof ToolEnvelope)) throw new TypeError("envelope must be a ToolEnvelope");
  const maximum = maxMessageBytesOption(
    "convert a ToolEnvelope to a ToolMessage",
    options.maxMessageBytes,
  );
  checkTypedEnvelope(envelope);
  const { text, payload } = envelopeAndPayloadJson(envelope);
  checkMessageSize(utf8Length(text), maximum);
  const children = [
    utf8Column(envelope.protocol),
    utf8Column(envelope.messageType),
    utf8Column(envelope.requestId),
    utf8Column(envelope.invocationId),
    utf8Column(envelope.attemptId),
    utf8Column(envelope.endpointId),
    utf8Column(envelope.endpointInstanceId),
    utf8Column(envelope.operation),
    sequenceColumn(envelope.sequence),
    utf8Column(payload),
  ];
  const data = makeData({ type: STRUCT_TYPE, length: 1, nullCount: 0, children });
  return new RecordBatch(TOOL_MESSAGE_SCHEMA, data);
}

// ---------------------------------------------------------------------------------------------
// Carrier -> envelope

/** The fields and column data of one candidate carrier row (each column positioned at row 0). */
interface CarrierColumns {
  readonly fields: readonly Field[];
  readonly columns: readonly Data[];
  readonly rows: number;
}

function isStructType(type: unknown): boolean {
  return (type as DataType | undefined)?.typeId === Type.Struct;
}

/** A record batch, table or Struct vector as fields and columns; `undefined` for other values. */
function carrierColumns(value: unknown): CarrierColumns | undefined {
  if (isArrowRecordBatch(value)) {
    const batch = value as RecordBatch;
    return { fields: batch.schema.fields, columns: batch.data.children, rows: batch.numRows };
  }
  if (isArrowTable(value)) {
    // deno-lint-ignore no-explicit-any
    const batches = (value as { batches: RecordBatch<any>[] }).batches;
    if (batches.length !== 1) {
      throw invalid("ToolMessage Table must contain exactly one RecordBatch");
    }
    const batch = batches[0];
    return { fields: batch.schema.fields, columns: batch.data.children, rows: batch.numRows };
  }
  let chunks: readonly Data[] | undefined;
  if (isArrowVector(value) && isStructType((value as { type: unknown }).type)) {
    chunks = (value as { readonly data: readonly Data[] }).data;
  } else if (isArrowData(value) && isStructType((value as Data).type)) {
    chunks = [value as Data];
  }
  if (chunks === undefined) return undefined;
  const fields = (chunks[0]?.type as Struct | undefined)?.children ??
    ((value as { type: Struct }).type.children);
  let rows = 0;
  let chunk: Data | undefined;
  for (const candidate of chunks) {
    rows += candidate.length;
    if (candidate.length > 0) chunk = candidate;
  }
  if (rows === 1 && chunk !== undefined && isNull(chunk, "ToolMessage Struct vector")) {
    throw invalid("ToolMessage Struct vector row must not be null");
  }
  return { fields, columns: chunk?.children ?? [], rows };
}

function toolMessageColumns(value: unknown): CarrierColumns {
  const carrier = carrierColumns(value);
  if (carrier === undefined) {
    throw new TypeError(
      "toolMessageToEnvelope expects an arrow RecordBatch, Table, or Struct vector",
    );
  }
  return carrier;
}

function typeMatches(actual: DataType, expected: DataType): boolean {
  if (actual?.typeId !== expected.typeId) return false;
  if (expected.typeId === Type.Int) {
    const int = actual as unknown as { bitWidth: number; isSigned: boolean };
    return int.bitWidth === 64 && int.isSigned === true;
  }
  return true;
}

/** True when `fields` are exactly the ten carrier columns (names, order, types, nullability). */
export function isToolMessageSchema(fields: readonly Field[]): boolean {
  if (fields === FIELDS) return true;
  if (fields.length !== FIELDS.length) return false;
  for (let i = 0; i < FIELDS.length; i++) {
    const actual = fields[i];
    const expected = FIELDS[i];
    if (
      actual?.name !== expected.name || actual.nullable !== expected.nullable ||
      !typeMatches(actual.type, expected.type)
    ) return false;
  }
  return true;
}

/** Checks the row count and the schema of a carrier. */
function checkCarrierShape(carrier: CarrierColumns): void {
  if (carrier.rows !== 1) throw invalid("ToolMessage RecordBatch must contain exactly one row");
  if (!isToolMessageSchema(carrier.fields)) {
    throw invalid("ToolMessage RecordBatch schema must exactly match TOOL_MESSAGE_SCHEMA");
  }
  for (let i = 0; i < FIELDS.length; i++) {
    const column = carrier.columns[i];
    if (column === undefined || !typeMatches(column.type, FIELDS[i].type)) {
      throw invalid("ToolMessage RecordBatch schema must exactly match TOOL_MESSAGE_SCHEMA");
    }
    if (!(column.length >= 1)) {
      throw invalid("ToolMessage RecordBatch must contain exactly one row");
    }
  }
}

// The row-0 reads of an apache-arrow carrier. Their errors are part of the carrier's contract:
// the fast IPC codec (fast_ipc.ts) reads the same buffers from IPC bytes and reports the same.

/** True when row 0 of `data` is null; a malformed validity bitmap is an error. */
function isNull(data: Data, name: string): boolean {
  const bitmap = data.nullBitmap as Uint8Array | undefined;
  if (bitmap === undefined || bitmap.length === 0) {
    if (data.nullCount > 0) throw invalidBitmap(name);
    return false;
  }
  if (data.nullCount === 0) return false;
  const position = data.offset;
  if (position >> 3 >= bitmap.length) throw invalidBitmap(name);
  return (bitmap[position >> 3] & (1 << (position & 7))) === 0;
}

/** The byte range of the row-0 value of a Utf8 column, or `undefined` when it is null. */
function utf8Range(data: Data, name: string): Utf8Range | undefined {
  if (isNull(data, name)) return undefined;
  const offsets = data.valueOffsets as Int32Array | undefined;
  const values = data.values as Uint8Array | undefined;
  if (!(offsets instanceof Int32Array) || offsets.length < 2 || !(values instanceof Uint8Array)) {
    throw invalidBuffers(name);
  }
  return checkedUtf8Range(values, 0, values.length, offsets[0], offsets[1], name);
}

/** The row-0 value of the Int64 sequence column (`undefined` for null). */
function sequenceValue(data: Data): bigint | undefined {
  if (isNull(data, "sequence")) return undefined;
  const values = data.values as BigInt64Array | undefined;
  if (!(values instanceof BigInt64Array) || values.length < 1) {
    throw invalidBuffers("sequence");
  }
  return values[0];
}

/** Row 0 of the columns of an apache-arrow carrier. */
class DataRow implements CarrierRow {
  readonly #columns: readonly Data[];

  constructor(columns: readonly Data[]) {
    this.#columns = columns;
  }

  utf8(index: number, name: string): Utf8Range | undefined {
    return utf8Range(this.#columns[index], name);
  }

  sequence(): bigint | undefined {
    return sequenceValue(this.#columns[CARRIER_COLUMN.sequence]);
  }
}

/**
 * @internal Converts a carrier value to an envelope without the logical size check (the Dora
 * binding checks the size of a request against its own limit after route trust), with the route
 * check `trust` before `payload_json` is parsed (see {@linkcode envelopeFromRow}).
 */
export function carrierToEnvelope(
  value: unknown,
  maxPayloadJsonBytes?: number,
  trust?: (route: ToolRequestRoute) => void,
): DecodedCarrier {
  const carrier = toolMessageColumns(value);
  checkCarrierShape(carrier);
  return envelopeFromRow(new DataRow(carrier.columns), maxPayloadJsonBytes, trust);
}

/**
 * Converts a ToolMessage carrier to a logical envelope. Accepts a one-row record batch, a table
 * holding exactly one such batch, or a one-row Struct vector (or Struct `Data`) whose child
 * fields are the schema; anything else is a `TypeError`. Nulls become absent headers, the Int64
 * `sequence` becomes an exact number.
 *
 * Checks, in order: one row and exactly {@linkcode TOOL_MESSAGE_SCHEMA}
 * (`FORGE_PROTOCOL_INVALID_MESSAGE`); `maxPayloadJsonBytes` on the raw `payload_json` bytes
 * before parsing (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`, "payload_json size N exceeds limit M");
 * every carrier rule of `tool.v1.yaml` — protocol (`FORGE_PROTOCOL_UNSUPPORTED_VERSION`), message
 * type (`FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE`), non-empty strings, the header matrix and the
 * sequence range (`FORGE_PROTOCOL_INVALID_MESSAGE`), `payload_json` as a strict JSON object
 * (`FORGE_PROTOCOL_INVALID_JSON`, `FORGE_PROTOCOL_DUPLICATE_KEY`,
 * `FORGE_PROTOCOL_INVALID_PAYLOAD`) — each a {@linkcode ToolProtocolError} whose message starts
 * with the column name and whose path is the column; and last the logical encoded size against
 * `maxMessageBytes` (`FORGE_PROTOCOL_MESSAGE_TOO_LARGE`, "message size N exceeds limit M"). The
 * typed payload of the message type is not validated here.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
 * import { toolEnvelopeToMessage, toolMessageToEnvelope } from "@forge/tool/dora";
 * const batch = toolEnvelopeToMessage(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * assertEquals(toolMessageToEnvelope(batch, { maxMessageBytes: 4096 }).endpointId, "vision.yolo");
 * ```
 */
export function toolMessageToEnvelope(
  value: ToolMessageArrowValue,
  options: ToolMessageToEnvelopeOptions = {},
): ToolEnvelope {
  const carrier = toolMessageColumns(value);
  const limits = carrierDecodeLimits(options);
  checkCarrierShape(carrier);
  const decoded = envelopeFromRow(new DataRow(carrier.columns), limits.maxPayloadJsonBytes);
  return checkedCarrierEnvelope(decoded, limits.maxMessageBytes);
}

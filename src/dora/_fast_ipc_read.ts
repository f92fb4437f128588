/**
 * The fast reader of ToolMessage IPC bytes: row 0 of a checked stream read straight from the
 * record batch body, the way apache-arrow materialises it (with the carrier's errors), or
 * `undefined` for a layout only apache-arrow reads exactly; and the one decode pipeline of
 * inbound IPC bytes built on it. The writer is `fast_ipc.ts`. Private to `src/dora/`.
 *
 * @module
 */
import type { RecordBatch } from "apache-arrow";
import {
  CARRIER_COLUMN,
  type CarrierRow,
  checkedUtf8Range,
  invalidBitmap,
  invalidBuffers,
  type Utf8Range,
} from "./_carrier_rules.ts";
import { TOOL_MESSAGE_SCHEMA } from "./carrier.ts";
import {
  checkToolMessageStream,
  decodeToolMessageIpc,
  ipcBytesView,
  type IpcStreamLayout,
  isCarrierSchemaId,
  rememberCarrierSchemaId,
} from "./ipc.ts";
import {
  FieldSlot,
  IntSlot,
  MetadataVersion,
  OFFSET_BYTES,
  SchemaSlot,
  Type,
} from "./_arrow_format.ts";

const encoder = new TextEncoder();

// The carrier's buffer layout in a record batch, shared with the writer (fast_ipc.ts).

/** The carrier's column count. */
export const COLUMNS: number = TOOL_MESSAGE_SCHEMA.fields.length;
/** The index of the one Int64 column, `sequence`. */
export const SEQUENCE: number = CARRIER_COLUMN.sequence;
/** Buffers per column: validity, offsets and data for Utf8; validity and data for Int64. */
export const BUFFERS: number = COLUMNS * 3 - 1;

/** The index of the first (validity) buffer of column `column`. */
export function firstBuffer(column: number): number {
  return column <= SEQUENCE ? 3 * column : 3 * column - 1;
}

const NAMES = TOOL_MESSAGE_SCHEMA.fields.map((field) => encoder.encode(field.name));
const NULLABLE = TOOL_MESSAGE_SCHEMA.fields.map((field) => field.nullable);

/** True when the checked schema is exactly the carrier's, as apache-arrow reads it. */
function schemaMatches(layout: IpcStreamLayout): boolean {
  const fb = layout.schema;
  const fields = fb.vector(layout.schemaTable, SchemaSlot.fields, OFFSET_BYTES);
  if (fields.length !== COLUMNS) return false;
  for (let i = 0; i < COLUMNS; i++) {
    const field = fb.element(fields.start, i);
    if (!fb.stringEquals(field, FieldSlot.name, NAMES[i])) return false;
    if ((fb.scalarU8(field, FieldSlot.nullable, 0) !== 0) !== NULLABLE[i]) return false;
    const tag = fb.scalarU8(field, FieldSlot.typeType, 0);
    if (i === SEQUENCE) {
      if (tag !== Type.Int) return false;
      const type = fb.table(field, FieldSlot.type);
      if (
        type === 0 || fb.scalarI32(type, IntSlot.bitWidth, 0) !== 64 ||
        fb.scalarU8(type, IntSlot.isSigned, 0) === 0
      ) {
        return false;
      }
    } else if (tag !== Type.Utf8) {
      return false;
    }
  }
  return true;
}

/**
 * @internal Row 0 of a ToolMessage read from IPC bytes: the record batch's buffers, read the way
 * apache-arrow materialises them, with the errors the carrier reports for them.
 */
export class IpcCarrierRow implements CarrierRow {
  /** The in-memory size apache-arrow's batch would have (`toolMessageCarrierSize`). */
  readonly carrierSize: number;
  readonly #bytes: Uint8Array;
  readonly #view: DataView;
  readonly #body: number;
  /** Offset and length of every buffer, relative to the body. */
  readonly #buffers: readonly number[];
  readonly #nulls: readonly number[];

  constructor(
    bytes: Uint8Array,
    view: DataView,
    body: number,
    buffers: readonly number[],
    nulls: readonly number[],
  ) {
    this.#bytes = bytes;
    this.#view = view;
    this.#body = body;
    this.#buffers = buffers;
    this.#nulls = nulls;
    let size = 0;
    for (let column = 0; column < COLUMNS; column++) {
      const b = firstBuffer(column);
      if (nulls[column] > 0) size += buffers[2 * b + 1];
      if (column === SEQUENCE) size += buffers[2 * b + 3] - buffers[2 * b + 3] % 8;
      else size += buffers[2 * b + 3] - buffers[2 * b + 3] % 4 + buffers[2 * b + 5];
    }
    this.carrierSize = size;
  }

  /** True when row 0 of `column` is null (its first buffer is the validity bitmap). */
  #isNull(column: number, name: string): boolean {
    if (this.#nulls[column] === 0) return false;
    const b = firstBuffer(column);
    if (this.#buffers[2 * b + 1] === 0) throw invalidBitmap(name);
    return (this.#bytes[this.#body + this.#buffers[2 * b]] & 1) === 0;
  }

  utf8(index: number, name: string): Utf8Range | undefined {
    if (this.#isNull(index, name)) return undefined;
    const b = firstBuffer(index);
    const buffers = this.#buffers;
    if (buffers[2 * b + 3] < 8) throw invalidBuffers(name);
    const offsets = this.#body + buffers[2 * b + 2];
    const data = this.#body + buffers[2 * b + 4];
    return checkedUtf8Range(
      this.#bytes,
      data,
      data + buffers[2 * b + 5],
      this.#view.getInt32(offsets, true),
      this.#view.getInt32(offsets + 4, true),
      name,
    );
  }

  sequence(): bigint | undefined {
    if (this.#isNull(SEQUENCE, "sequence")) return undefined;
    const b = firstBuffer(SEQUENCE);
    if (this.#buffers[2 * b + 3] < 8) throw invalidBuffers("sequence");
    return this.#view.getBigInt64(this.#body + this.#buffers[2 * b + 2], true);
  }
}

/**
 * @internal Row 0 of a checked ToolMessage IPC stream, or `undefined` when the stream is not one
 * the fast path reads exactly as apache-arrow does (then the generic path decides).
 */
export function readToolMessageRow(
  bytes: Uint8Array,
  layout: IpcStreamLayout,
): IpcCarrierRow | undefined {
  const { schemaVersion, batchVersion, nullCounts, buffers } = layout;
  if (
    (schemaVersion !== MetadataVersion.V4 && schemaVersion !== MetadataVersion.V5) ||
    (batchVersion !== MetadataVersion.V4 && batchVersion !== MetadataVersion.V5) ||
    nullCounts.length !== COLUMNS || buffers.length !== 2 * BUFFERS
  ) return undefined;
  if (!isCarrierSchemaId(layout.schemaId)) {
    try {
      if (!schemaMatches(layout)) return undefined;
    } catch {
      // A read the generic reader makes differently (out of the metadata's bounds): it decides.
      return undefined;
    }
    rememberCarrierSchemaId(layout.schemaId);
  }
  // apache-arrow views offsets as Int32Array and Int64 data as BigInt64Array, which throws for
  // a misaligned buffer: such streams take the generic path for its exact error.
  for (let column = 0; column < COLUMNS; column++) {
    const at = 2 * (firstBuffer(column) + 1);
    const alignment = column === SEQUENCE ? 8 : 4;
    if (buffers[at + 1] > 0 && buffers[at] % alignment !== 0) return undefined;
  }
  return new IpcCarrierRow(bytes, layout.batch.view, layout.bodyStart, buffers, nullCounts);
}

/**
 * @internal One ToolMessage IPC stream, bounded and checked: its row read by the fast reader, or,
 * for a layout the fast reader leaves to apache-arrow, the record batch apache-arrow decoded.
 */
export type DecodedCarrierIpc =
  | { readonly row: IpcCarrierRow; readonly batch?: undefined }
  | { readonly row?: undefined; readonly batch: RecordBatch };

/**
 * @internal The one decode pipeline of inbound IPC bytes (framing and metadata checked against
 * `maxBytes` before anything is read, then the fast row reader, else apache-arrow), shared by
 * {@linkcode decodeToolEnvelopeIpc} and the binding. `caller` names the API in a bad-input error.
 */
export function decodeCarrierIpc(
  bytes: unknown,
  caller: string,
  maxBytes: number,
): DecodedCarrierIpc {
  const view = ipcBytesView(bytes, caller);
  const row = readToolMessageRow(view, checkToolMessageStream(view, maxBytes));
  return row === undefined ? { batch: decodeToolMessageIpc(view, { maxBytes }) } : { row };
}

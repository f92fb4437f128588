/**
 * The constant head of every ToolMessage IPC stream the fast writer (`fast_ipc.ts`) emits: the
 * schema message and the record batch metadata template, and where in that template the writer
 * patches each message's body length, null counts and buffers. Private to `src/dora/`.
 *
 * @module
 */
import {
  BUFFER_BYTES,
  CONTINUATION_MARKER,
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
import { TOOL_MESSAGE_SCHEMA } from "./carrier.ts";
import { BUFFERS, COLUMNS, SEQUENCE } from "./_fast_ipc_read.ts";

const encoder = new TextEncoder();

function align8(n: number): number {
  return (n + 7) & ~7;
}

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
export const HEAD: Uint8Array = new Uint8Array(SCHEMA_MESSAGE.length + BATCH_MESSAGE.bytes.length);
HEAD.set(SCHEMA_MESSAGE, 0);
HEAD.set(BATCH_MESSAGE.bytes, SCHEMA_MESSAGE.length);
/** Where the record batch's `bodyLength` is. */
export const BODY_LENGTH_AT: number = SCHEMA_MESSAGE.length + BATCH_MESSAGE.bodyLength;
/** Where the record batch's field nodes start. */
export const NODES_AT: number = SCHEMA_MESSAGE.length + BATCH_MESSAGE.nodes;
/** Where the record batch's buffers start. */
export const BUFFERS_AT: number = SCHEMA_MESSAGE.length + BATCH_MESSAGE.buffers;
/** Where the record batch body starts: the end of the head. */
export const BODY_AT: number = HEAD.length;

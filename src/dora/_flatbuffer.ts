/**
 * A bounds-checked reader of one flatbuffer (the metadata of an Arrow IPC message), used by the
 * IPC framing checks and the fast row reader. Private to `src/dora/`.
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";

/** The `FORGE_PROTOCOL_INVALID_MESSAGE` error of a corrupt IPC stream, naming what is wrong. */
export function corrupt(detail: string): ToolProtocolError {
  return new ToolProtocolError(
    ToolErrorCodes.INVALID_MESSAGE,
    `invalid Arrow IPC stream: ${detail}`,
  );
}

/**
 * @internal A bounds-checked reader of one flatbuffer (an IPC message's metadata, `size` bytes at
 * `base` in `view`) that follows the flatbuffers runtime's own (signed) offset arithmetic, so it
 * sees exactly the tables and vectors apache-arrow will read. Every read outside the metadata and
 * every vector longer than the metadata can hold is an error, so no loop over a corrupted length
 * runs longer than the metadata is big. 64-bit integers are read as numbers: exact up to
 * 2^53 in magnitude, and beyond it still of the right sign and far beyond any bound compared
 * with.
 */
export class FlatBuffer {
  readonly view: DataView;
  readonly base: number;
  readonly size: number;

  constructor(view: DataView, base: number, size: number) {
    this.view = view;
    this.base = base;
    this.size = size;
  }

  #check(position: number, size: number): void {
    if (!(position >= 0 && position + size <= this.size)) {
      throw corrupt("message metadata is out of bounds");
    }
  }

  u8(position: number): number {
    this.#check(position, 1);
    return this.view.getUint8(this.base + position);
  }

  i16(position: number): number {
    this.#check(position, 2);
    return this.view.getInt16(this.base + position, true);
  }

  i32(position: number): number {
    this.#check(position, 4);
    return this.view.getInt32(this.base + position, true);
  }

  i64(position: number): number {
    this.#check(position, 8);
    const at = this.base + position;
    return this.view.getInt32(at + 4, true) * 4294967296 + this.view.getUint32(at, true);
  }

  /** An int64 inside a vector that {@linkcode FlatBuffer.vector} bounds-checked. */
  vectorI64(position: number): number {
    const at = this.base + position;
    return this.view.getInt32(at + 4, true) * 4294967296 + this.view.getUint32(at, true);
  }

  /** The root table's position. */
  root(): number {
    return this.i32(0);
  }

  /** The position of field `index` of the table at `table`, or 0 when absent. */
  field(table: number, index: number): number {
    const vtable = table - this.i32(table);
    const slot = 4 + 2 * index;
    if (!(slot < this.i16(vtable))) return 0;
    const offset = this.i16(vtable + slot);
    return offset === 0 ? 0 : table + offset;
  }

  /** The table (or union value) referenced by field `index`, or 0 when absent. */
  table(table: number, index: number): number {
    const position = this.field(table, index);
    if (position === 0) return 0;
    const target = position + this.i32(position);
    this.i32(target);
    return target;
  }

  /** The start and length of the vector in field `index` (elements of `size` bytes). */
  vector(table: number, index: number, size: number): { start: number; length: number } {
    const position = this.field(table, index);
    if (position === 0) return { start: 0, length: 0 };
    const vector = position + this.i32(position);
    const length = this.i32(vector);
    // The runtime's loops run zero times for a negative length.
    if (length <= 0) return { start: vector + 4, length: 0 };
    this.#check(vector + 4, length * size);
    return { start: vector + 4, length };
  }

  /** The table at element `i` of a vector of tables. */
  element(start: number, i: number): number {
    const position = start + 4 * i;
    const target = position + this.i32(position);
    this.i32(target);
    return target;
  }

  /** Checks the string in field `index` lies inside the buffer. */
  string(table: number, index: number): void {
    this.vector(table, index, 1);
  }

  /** True when the string in field `index` holds exactly the bytes of `expected`. */
  stringEquals(table: number, index: number, expected: Uint8Array): boolean {
    const { start, length } = this.vector(table, index, 1);
    if (length !== expected.length) return false;
    const at = this.base + start;
    for (let i = 0; i < length; i++) {
      if (this.view.getUint8(at + i) !== expected[i]) return false;
    }
    return true;
  }

  /** An int16 scalar field with its default. */
  scalarI16(table: number, index: number, fallback: number): number {
    const position = this.field(table, index);
    return position === 0 ? fallback : this.i16(position);
  }

  /** An int32 scalar field with its default. */
  scalarI32(table: number, index: number, fallback: number): number {
    const position = this.field(table, index);
    return position === 0 ? fallback : this.i32(position);
  }

  /** A uint8 scalar field with its default. */
  scalarU8(table: number, index: number, fallback: number): number {
    const position = this.field(table, index);
    return position === 0 ? fallback : this.u8(position);
  }

  /** An int64 scalar field with its default. */
  scalarI64(table: number, index: number, fallback: number): number {
    const position = this.field(table, index);
    return position === 0 ? fallback : this.i64(position);
  }
}

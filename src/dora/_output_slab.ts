/**
 * @internal Where {@linkcode encodeToolEnvelopeIpc} takes the bytes of a small stream: a region
 * of a 64 KiB buffer shared with the streams encoded before and after it, instead of a buffer of
 * its own. Allocating an `ArrayBuffer` beyond V8's on-heap limit (64 bytes) cost 1.3–2.8 µs in
 * Deno 2.9 on these machines (its backing store, and the garbage collections its external memory
 * drives), as much as encoding a typical message; carving a region costs 0.1–0.5 µs. A region is
 * handed out once and never written again, so a stream someone keeps stays as it was; a buffer
 * that was transferred (detached) is left behind for a fresh one. Each region starts 8-byte
 * aligned and is zero-filled, as a fresh `Uint8Array` is. A stream beyond 4 KiB gets a buffer of
 * its own, so one kept stream holds at most 64 KiB alive. The loopback dataflow copies the bytes it
 * carries the same way, from buffers of its own ({@linkcode copyBytes}, {@linkcode newSlab}).
 *
 * @module
 */

/** The size of each shared buffer. */
const SLAB_BYTES = 65536;
/** Streams larger than this get a buffer of their own. */
const SLAB_MAX_BYTES = 4096;

/** A buffer regions are carved from, a view of it, and where the next region starts. */
export interface Slab {
  bytes: Uint8Array;
  view: DataView;
  at: number;
}

/**
 * A slab of its own, for an owner that keeps some of what it carves (the loopback's history of
 * outputs): what it keeps then pins only buffers its own traffic filled, never a shared buffer
 * for each message kept.
 */
export function newSlab(): Slab {
  const bytes = new Uint8Array(0);
  return { bytes, view: new DataView(bytes.buffer), at: 0 };
}

/**
 * The encoder's buffer (module state, listed in tests/structure_test.ts: one allocator for the
 * process, as the encoder it serves is a function).
 */
const slab: { bytes: Uint8Array; view: DataView; at: number } = newSlab();

/**
 * The encoder's buffer and its view, read-only: {@linkcode reserveOutput} says where in it to
 * write (a `DataView` and a `subarray` per stream cost 150–250 ns of an encode's 1.5 µs).
 */
export const outputSlab: Readonly<Slab> = slab;

/** Makes sure `from` has `size` bytes free at `from.at` (a fresh buffer when it has not). */
function makeRoom(size: number, from: Slab): void {
  // A detached buffer has byteLength 0, so it is replaced like a full one.
  if (from.bytes.byteLength - from.at < size) {
    from.bytes = new Uint8Array(SLAB_BYTES);
    from.view = new DataView(from.bytes.buffer);
    from.at = 0;
  }
}

/**
 * Where `size` zero bytes start in {@linkcode outputSlab}'s buffer, for the encoder to write in
 * place, or -1 when `size` is too large for it (the caller takes a buffer of its own). Nothing
 * is handed out until {@linkcode commitOutput} (or given up by {@linkcode skipOutput}); no other
 * region is carved in between.
 */
export function reserveOutput(size: number): number {
  if (size > SLAB_MAX_BYTES) return -1;
  makeRoom(size, slab);
  return slab.at;
}

/** Hands out the first `used` bytes of the region reserved at `at`; the rest stays free. */
export function commitOutput(at: number, used: number): Uint8Array {
  slab.at = (at + used + 7) & ~7;
  return slab.bytes.subarray(at, at + used);
}

/** Gives up the region of `size` bytes reserved at `at` after writing in it: it is not reused. */
export function skipOutput(at: number, size: number): void {
  slab.at = (at + size + 7) & ~7;
}

/** `size` zero bytes: a region of `from` when small enough. */
function outputBytes(size: number, from: Slab): Uint8Array {
  if (size > SLAB_MAX_BYTES) return new Uint8Array(size);
  makeRoom(size, from);
  const at = from.at;
  from.at = at + ((size + 7) & ~7);
  return from.bytes.subarray(at, at + size);
}

/** A copy of `bytes` that shares nothing with them, carved from `from` when small enough. */
export function copyBytes(bytes: Uint8Array, from: Slab): Uint8Array {
  const out = outputBytes(bytes.length, from);
  out.set(bytes);
  return out;
}

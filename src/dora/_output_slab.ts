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

/** A buffer regions are carved from, and where the next region starts. */
export interface Slab {
  bytes: Uint8Array;
  at: number;
}

/**
 * A slab of its own, for an owner that keeps some of what it carves (the loopback's history of
 * outputs): what it keeps then pins only buffers its own traffic filled, never a shared buffer
 * for each message kept.
 */
export function newSlab(): Slab {
  return { bytes: new Uint8Array(0), at: 0 };
}

/**
 * The encoder's buffer (module state, listed in tests/structure_test.ts: one allocator for the
 * process, as the encoder it serves is a function).
 */
const slab: { bytes: Uint8Array; at: number } = newSlab();

/** `size` zero bytes: a region of `from` (the encoder's buffer) when small enough. */
export function outputBytes(size: number, from: Slab = slab): Uint8Array {
  if (size > SLAB_MAX_BYTES) return new Uint8Array(size);
  let bytes = from.bytes;
  let at = from.at;
  // A detached buffer has byteLength 0, so it is replaced like a full one.
  if (bytes.byteLength - at < size) {
    bytes = from.bytes = new Uint8Array(SLAB_BYTES);
    at = 0;
  }
  from.at = at + ((size + 7) & ~7);
  return bytes.subarray(at, at + size);
}

/**
 * The first `used` bytes of `out` (from {@linkcode outputBytes}); when `out` is the region carved
 * last, the rest of it (never written, still zero) goes back to the encoder's buffer.
 */
export function trimOutput(out: Uint8Array, used: number): Uint8Array {
  if (out.buffer === slab.bytes.buffer && slab.at === ((out.byteOffset + out.length + 7) & ~7)) {
    slab.at = (out.byteOffset + used + 7) & ~7;
  }
  return used === out.length ? out : out.subarray(0, used);
}

/** A copy of `bytes` that shares nothing with them, carved from `from` when small enough. */
export function copyBytes(bytes: Uint8Array, from: Slab): Uint8Array {
  const out = outputBytes(bytes.length, from);
  out.set(bytes);
  return out;
}

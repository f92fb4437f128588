/**
 * FNV-1a (32 bits) over a string's UTF-16 code units: a fast, well-spread, non-cryptographic
 * hash for table slots and short name suffixes.
 *
 * @module
 */

/** The FNV-1a 32-bit hash of `text`'s UTF-16 code units, as an unsigned integer. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

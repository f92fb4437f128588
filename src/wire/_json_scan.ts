/**
 * The strict JSON decoder's fast path: an allocation-free structural scan over the UTF-8 bytes
 * that proves a document holds nothing the strict rules care about, so the engine's `JSON.parse`
 * may read it (see `_json_decode.ts`). Its duplicate-key check confirms every hash match on the
 * key bytes and gives up within a linear probe budget.
 *
 * @module
 */

// The fast path only accepts documents whose nesting keeps every payload value within depth 64:
// the top-level object is level 1 and the payload level 2, so a container at level 65 is at
// payload depth 63 and its members at depth 64. Deeper documents take the exact path.
const FAST_MAX_LEVEL = 65;

// Scan state, reused across calls (the scan never allocates on the common path). Keys of the
// open small objects sit on one stack, two words per key: the key's hash and the offset of its
// first byte (a key's text ends at its closing quote: a key with an escape takes the exact path).
// An object that grows past SMALL_OBJECT_KEYS keys moves its keys to a KeyTable, and its level
// records the table owner it was given (0: still on the stack).
const SMALL_OBJECT_KEYS = 16;
const frameIsObject = new Uint8Array(FAST_MAX_LEVEL + 2);
const frameKeyStart = new Int32Array(FAST_MAX_LEVEL + 2);
const frameOwner = new Int32Array(FAST_MAX_LEVEL + 2);
// A level holds at most SMALL_OBJECT_KEYS keys on the stack (then they move to the table) and
// levels stop at FAST_MAX_LEVEL + 1, so the stack never needs more than this: a fixed scratch
// buffer, written before it is read within one scan, never read across calls.
const keyStack = new Int32Array(2 * SMALL_OBJECT_KEYS * (FAST_MAX_LEVEL + 2));

/** True when the unescaped keys whose text starts at `a` and at `b` are the same bytes. */
function sameKey(bytes: Uint8Array, a: number, b: number): boolean {
  for (;;) {
    const x = bytes[a++];
    if (x !== bytes[b++]) return false;
    if (x === 0x22) return true;
  }
}

/**
 * The keys of the scan's large objects: one open-addressing hash table for the whole document,
 * three words per slot (owner, hash, key offset; owner 0 is an empty slot). Each large object is
 * an owner of its own, so the keys of a closed object never match again and need no removal. A
 * hash match is confirmed on the key bytes, so two different keys with the same 32-bit hash are
 * not taken for a duplicate. The work is bounded: once the probes (each at most one key
 * comparison) pass `PROBE_BUDGET_PER_KEY` per key inserted, the table gives up and the document
 * takes the exact path, so keys crafted to collide cost linear time, never quadratic.
 */
class KeyTable {
  #slots = new Int32Array(3 * 64);
  #mask = 63;
  #shift = 32 - 6;
  #size = 0;
  #probes = 0;
  #owners = 0;

  /** A new owner for an object that outgrew the key stack. */
  newOwner(): number {
    return ++this.#owners;
  }

  /**
   * Adds the key at `start` with `hash` to `owner`'s keys: 1 when added, 0 when `owner` already
   * holds the same key, -1 when the probe budget is spent.
   */
  add(bytes: Uint8Array, owner: number, hash: number, start: number): number {
    if (2 * this.#size >= this.#mask) this.#grow();
    const slots = this.#slots;
    const mask = this.#mask;
    let index = Math.imul(hash, 0x9e3779b1) >>> this.#shift;
    for (;;) {
      const at = 3 * index;
      const occupant = slots[at];
      if (occupant === 0) {
        slots[at] = owner;
        slots[at + 1] = hash;
        slots[at + 2] = start;
        this.#size++;
        return 1;
      }
      if (occupant === owner && slots[at + 1] === hash && sameKey(bytes, slots[at + 2], start)) {
        return 0;
      }
      if (++this.#probes > PROBE_BUDGET_PER_KEY * this.#size + PROBE_BUDGET_BASE) return -1;
      index = (index + 1) & mask;
    }
  }

  #grow(): void {
    const old = this.#slots;
    const slots = new Int32Array(old.length * 2);
    const shift = this.#shift - 1;
    const mask = this.#mask * 2 + 1;
    for (let at = 0; at < old.length; at += 3) {
      if (old[at] === 0) continue;
      let index = Math.imul(old[at + 1], 0x9e3779b1) >>> shift;
      while (slots[3 * index] !== 0) index = (index + 1) & mask;
      const to = 3 * index;
      slots[to] = old[at];
      slots[to + 1] = old[at + 1];
      slots[to + 2] = old[at + 2];
    }
    this.#slots = slots;
    this.#mask = mask;
    this.#shift = shift;
  }
}

// With at most half of the slots in use, linear probing averages 2.5 probes per new key; a
// document that needs several times more is colliding on purpose and takes the exact path.
const PROBE_BUDGET_PER_KEY = 8;
const PROBE_BUDGET_BASE = 1024;

/** The scan's verdict: clean (the fast path applies), and whether any byte was non-ASCII. */
export const SCAN_DIRTY = 0;
export const SCAN_CLEAN_ASCII = 1;
const SCAN_CLEAN_UTF8 = 2;
/**
 * Added to a clean verdict when the text is also written the way `JSON.stringify` writes the
 * value it parses to: no whitespace outside strings, no escape in a string, and every float token
 * in its shortest form (no trailing zero in the fraction, at most 15 significant digits: such a
 * decimal is the shortest that reads back to its binary64 value). Key order and the numbers the
 * Wire writes otherwise (below 1e-4, `-0`) are the seal's to judge (`json_parsed.ts`).
 */
export const SCAN_COMPACT = 4;

/**
 * Scans `bytes[start, end)` and answers whether the document is free of everything the strict
 * rules reject or transform and `JSON.parse` would let through (`SCAN_DIRTY` only means "take the
 * exact path"; it is never an error by itself), and whether every byte was ASCII (then the text
 * is valid UTF-8 without a fatal decode).
 */
export function scan(bytes: Uint8Array, start: number, end: number): number {
  let level = 0;
  let keyTop = 0;
  let expectKey = false;
  let high = 0;
  // 0 while the text is compact (see SCAN_COMPACT).
  let loose = 0;
  let i = start;
  let table: KeyTable | undefined;
  while (i < end) {
    const c = bytes[i];
    if (c === 0x22) {
      i++;
      if (!expectKey) {
        // A value string: skip it; reject escaped surrogates.
        for (;;) {
          if (i >= end) return SCAN_DIRTY;
          const s = bytes[i];
          if (s === 0x22) break;
          high |= s;
          if (s === 0x5c) {
            loose = 1;
            if (i + 3 < end && bytes[i + 1] === 0x75 && (bytes[i + 2] | 0x20) === 0x64) {
              const h = bytes[i + 3] | 0x20;
              if (h === 0x38 || h === 0x39 || (h >= 0x61 && h <= 0x66)) return SCAN_DIRTY;
            }
            i += 2;
          } else {
            i++;
          }
        }
        i++;
        // The byte after a value is most often a comma: taken here, it skips a trip through
        // the dispatch below (the same for numbers and for the colon after a key).
        if (i < end && bytes[i] === 0x2c) {
          i++;
          expectKey = frameIsObject[level] === 1;
        }
        continue;
      }
      // An object key: hash it for the duplicate check; an escaped key takes the exact path.
      const keyStart = i;
      let hash = 0x811c9dc5 | 0;
      for (;;) {
        if (i >= end) return SCAN_DIRTY;
        const s = bytes[i];
        if (s === 0x22) break;
        if (s === 0x5c) return SCAN_DIRTY;
        high |= s;
        hash = Math.imul(hash ^ s, 0x01000193);
        i++;
      }
      i++;
      if (i < end && bytes[i] === 0x3a) i++;
      expectKey = false;
      // A duplicate key takes the exact path, which reports it (or, for a table that spent its
      // probe budget, decides).
      const owner = frameOwner[level];
      if (owner !== 0) {
        if (table!.add(bytes, owner, hash, keyStart) !== 1) return SCAN_DIRTY;
        continue;
      }
      const from = frameKeyStart[level];
      for (let k = 2 * from; k < 2 * keyTop; k += 2) {
        if (keyStack[k] === hash && sameKey(bytes, keyStack[k + 1], keyStart)) return SCAN_DIRTY;
      }
      if (keyTop - from >= SMALL_OBJECT_KEYS) {
        // The object outgrew the stack: its keys move to the table (the object's stack segment
        // is free again for the objects nested in it).
        table ??= new KeyTable();
        const promoted = table.newOwner();
        for (let k = 2 * from; k < 2 * keyTop; k += 2) {
          if (table.add(bytes, promoted, keyStack[k], keyStack[k + 1]) !== 1) return SCAN_DIRTY;
        }
        if (table.add(bytes, promoted, hash, keyStart) !== 1) return SCAN_DIRTY;
        frameOwner[level] = promoted;
        keyTop = from;
        continue;
      }
      // Unreachable by the bound above; were it reached, the exact path would decide.
      if (2 * keyTop === keyStack.length) return SCAN_DIRTY;
      keyStack[2 * keyTop] = hash;
      keyStack[2 * keyTop + 1] = keyStart;
      keyTop++;
      continue;
    }
    if ((c >= 0x30 && c <= 0x39) || c === 0x2d) {
      const token = i;
      i = scanNumber(bytes, i, end);
      if (i < 0) return SCAN_DIRTY;
      if (loose === 0 && !isShortestNumber(bytes, token, i)) loose = 1;
      if (i < end && bytes[i] === 0x2c) {
        i++;
        expectKey = frameIsObject[level] === 1;
      }
      continue;
    }
    i++;
    switch (c) {
      case 0x2c: // ,
        expectKey = frameIsObject[level] === 1;
        break;
      case 0x7b: // {
        if (++level > FAST_MAX_LEVEL) return SCAN_DIRTY;
        frameIsObject[level] = 1;
        frameKeyStart[level] = keyTop;
        frameOwner[level] = 0;
        expectKey = true;
        break;
      case 0x5b: // [
        if (++level > FAST_MAX_LEVEL) return SCAN_DIRTY;
        frameIsObject[level] = 0;
        expectKey = false;
        break;
      case 0x7d: // }
      case 0x5d: // ]
        if (level === 0) return SCAN_DIRTY;
        if (frameIsObject[level] === 1) {
          keyTop = frameKeyStart[level];
          frameOwner[level] = 0;
        }
        level--;
        expectKey = false;
        break;
      default:
        // Whitespace (a structural byte or a literal's letter is above 0x20).
        if (c <= 0x20) loose = 1;
        high |= c;
    }
  }
  if (level !== 0) return SCAN_DIRTY;
  return (high >= 0x80 ? SCAN_CLEAN_UTF8 : SCAN_CLEAN_ASCII) + (loose === 0 ? SCAN_COMPACT : 0);
}

/**
 * True when the number token `bytes[start, end)`, which {@linkcode scanNumber} let through (an
 * integer of at most 15 digits, or a float with a fraction and no exponent), is written as
 * `JSON.stringify` writes its value: an integer always is; a float is when its fraction ends in
 * a digit other than 0 and it has at most 15 significant digits (DBL_DIG: every such decimal is
 * the shortest that reads back to its binary64 value; below 1e21 the engine writes it in fixed
 * notation, and a float below 1e-4, which the Wire writes as Python does, is the seal's to judge).
 */
function isShortestNumber(bytes: Uint8Array, start: number, end: number): boolean {
  let point = -1;
  for (let k = start; k < end; k++) {
    if (bytes[k] === 0x2e) {
      point = k;
      break;
    }
  }
  if (point < 0) return true;
  if (bytes[end - 1] === 0x30) return false;
  let k = bytes[start] === 0x2d ? start + 1 : start;
  // Leading zeros (of "0.00…") are not significant.
  while (k < end && (bytes[k] === 0x30 || bytes[k] === 0x2e)) k++;
  const significant = end - k - (k <= point ? 1 : 0);
  return significant <= 15;
}

/**
 * Skips one number token starting at `i` and returns the index after it, or -1 when the token
 * needs the exact path: an integer of 16 or more digits (it may exceed ±(2^53 − 1)), `-0`, or a
 * float with an exponent, 16 or more integer digits, or a value that is or may round to an
 * integer.
 */
function scanNumber(bytes: Uint8Array, i: number, end: number): number {
  const negative = bytes[i] === 0x2d;
  let j = negative ? i + 1 : i;
  const first = j;
  while (j < end) {
    const d = bytes[j];
    if (d < 0x30 || d > 0x39) break;
    j++;
  }
  const digits = j - first;
  const next = j < end ? bytes[j] : 0;
  // "-0", "-0.0", "-0.000": a negative zero the exact path keeps (the Wire writes "-0.0").
  if (negative && bytes[first] === 0x30) return -1;
  if (next !== 0x2e && next !== 0x65 && next !== 0x45) {
    if (digits >= 16) return -1;
    return j;
  }
  // A float token. One with an exponent, or with 16 or more integer digits, may be integral
  // beyond ±(2^53 − 1) or overflow: the exact path keeps such values as floats (a canonical,
  // frozen payload re-encodes them as the reference does).
  if (next !== 0x2e || digits >= 16) return -1;
  j++;
  // A float that is, or may round to, an integer takes the exact path, which marks it (the
  // Wire's integer fields refuse a float token, as the reference does): a fraction of zeros only
  // (1.0), or one so close to an integer that binary64 may round it there (1.0000000000000001).
  // With d integer digits, half an ulp is below 2.3e-16 × 10^d, and a fraction whose first
  // digit other than 0 (or other than 9) comes after z digits is at least 10^-(z+1) away from an
  // integer: z ≤ 14 − d is safe.
  const fractionStart = j;
  let zeros = -1;
  let nines = -1;
  while (j < end) {
    const d = bytes[j];
    if (d < 0x30 || d > 0x39) break;
    if (zeros < 0 && d !== 0x30) zeros = j - fractionStart;
    if (nines < 0 && d !== 0x39) nines = j - fractionStart;
    j++;
  }
  if (zeros < 0) return -1;
  if (nines < 0) nines = j - fractionStart;
  if (zeros > 14 - digits || nines > 14 - digits) return -1;
  const after = j < end ? bytes[j] : 0;
  return after === 0x65 || after === 0x45 ? -1 : j;
}

/** True when the fast path applies to `bytes[start, end)` (see the module documentation). */
export function scanIsClean(bytes: Uint8Array, start = 0, end = bytes.length): boolean {
  return scan(bytes, start, end) !== SCAN_DIRTY;
}

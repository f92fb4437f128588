/**
 * The strict JSON decoder of the Wire.
 *
 * Two paths, one set of rules. The fast path runs an allocation-free structural scan over the
 * UTF-8 bytes and then the engine's `JSON.parse`; the scan proves the document holds nothing
 * the strict rules care about (no duplicate key, no escaped surrogate, no integer token beyond
 * ±(2^53 − 1), no float token that could overflow, no `-0`, nesting within the payload bound).
 * Anything the scan cannot prove, and every document `JSON.parse` refuses, goes to the exact
 * path: an iterative (never recursive) parser that reproduces the reference's decisions, codes,
 * messages, precedence and `line L column C` positions. Both paths run in linear time: the
 * scan's duplicate check confirms every hash match on the key bytes (so many distinct keys stay on
 * the fast path) and gives up within a linear probe budget (so keys crafted to share a hash cost
 * one exact parse, never a quadratic scan).
 *
 * @module
 */
import { MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { markFloatMember, setOwn } from "../_internal/json.ts";
import { pyRepr } from "../_internal/repr.ts";
import { hasLoneSurrogate } from "../_internal/text.ts";

/**
 * The deepest container nesting the exact parser follows before it gives up the way the
 * reference's parser does when it runs out of recursion (`FORGE_PROTOCOL_INVALID_JSON`).
 */
export const MAX_PARSE_NESTING = 1000;

// The fast path only accepts documents whose nesting keeps every payload value within depth 64:
// the top-level object is level 1 and the payload level 2, so a container at level 65 is at
// payload depth 63 and its members at depth 64. Deeper documents take the exact path.
const FAST_MAX_LEVEL = 65;

/** The outcome of a successful strict parse. */
export interface ParsedJson {
  /** The top-level value. */
  readonly value: unknown;
  /**
   * True when the fast path proved the whole document holds only interoperable values within
   * the payload depth bound, so the envelope need not walk the payload again.
   */
  readonly normalized: boolean;
}

const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function invalidJson(message: string, path?: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_JSON, message, path);
}

/** Decodes UTF-8 strictly (a BOM is kept as a character), as `INVALID_JSON` on failure. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return fatalDecoder.decode(bytes);
  } catch {
    throw invalidJson("message is not valid UTF-8");
  }
}

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
const SCAN_DIRTY = 0;
const SCAN_CLEAN_ASCII = 1;
const SCAN_CLEAN_UTF8 = 2;

/**
 * Scans `bytes[start, end)` and answers whether the document is free of everything the strict
 * rules reject or transform and `JSON.parse` would let through (`SCAN_DIRTY` only means "take the
 * exact path"; it is never an error by itself), and whether every byte was ASCII (then the text
 * is valid UTF-8 without a fatal decode).
 */
function scan(bytes: Uint8Array, start: number, end: number): number {
  let level = 0;
  let keyTop = 0;
  let expectKey = false;
  let high = 0;
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
      i = scanNumber(bytes, i, end);
      if (i < 0) return SCAN_DIRTY;
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
        high |= c;
    }
  }
  if (level !== 0) return SCAN_DIRTY;
  return high >= 0x80 ? SCAN_CLEAN_UTF8 : SCAN_CLEAN_ASCII;
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

const asciiDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Parses strict JSON from UTF-8 bytes (already size-checked): valid UTF-8, no duplicate key,
 * no `NaN`/`Infinity`, integer tokens within ±(2^53 − 1), no trailing data.
 */
export function parseStrictJsonBytes(bytes: Uint8Array, start = 0, end = bytes.length): ParsedJson {
  const view = start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end);
  const verdict = scan(bytes, start, end);
  if (verdict !== SCAN_DIRTY) {
    // Pure ASCII is valid UTF-8: the engine's non-fatal decoder is several times faster.
    const text = verdict === SCAN_CLEAN_ASCII ? asciiDecoder.decode(view) : decodeUtf8(view);
    try {
      return { value: JSON.parse(text), normalized: true };
    } catch {
      // The exact parser reports the reference's error below (after a strict UTF-8 decode: an
      // invalid byte sequence is reported before any JSON error, as the reference does).
    }
  }
  return { value: parseExact(decodeUtf8(view)), normalized: false };
}

/** Parses strict JSON from a string with the exact parser (used for text input). */
export function parseStrictJsonText(text: string): ParsedJson {
  return { value: parseExact(text), normalized: false };
}

// ---------------------------------------------------------------------------------------------
// The exact parser.

/** A syntax error at a character position; the caller turns it into `line L column C`. */
class SyntaxFault {
  constructor(readonly message: string, readonly pos: number) {}
}

function positionPath(text: string, pos: number): string {
  // Python counts characters (code points); a JS string index counts UTF-16 units.
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < pos; i++) if (text.charCodeAt(i) === 0x0a) (line++, lineStart = i + 1);
  let column = 1;
  for (let i = lineStart; i < pos; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const n = text.charCodeAt(i + 1);
      if (n >= 0xdc00 && n <= 0xdfff) i++;
    }
    column++;
  }
  return `line ${line} column ${column}`;
}

const enum Ctx {
  Array,
  ObjectValue,
}

/** An open container: the array, or the object with the key whose value is being read. */
interface Frame {
  kind: Ctx;
  array?: unknown[];
  object?: Record<string, unknown>;
  key?: string;
  /** The first key seen twice; reported when the object closes, as the reference does. */
  duplicate?: string;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function parseExact(text: string): unknown {
  try {
    return new ExactParser(text).parse();
  } catch (fault) {
    if (fault instanceof SyntaxFault) {
      throw invalidJson(fault.message, positionPath(text, fault.pos));
    }
    throw fault;
  }
}

/** What #readValue returns after opening a non-empty container (never a JSON value). */
const OPENED: unique symbol = Symbol("opened");

/**
 * The exact parser over one text: iterative, never recursive (open containers sit on an explicit
 * stack bounded by `MAX_PARSE_NESTING`), one method per token kind. A syntax error is thrown as a
 * `SyntaxFault` at its character position; every other rejection as a `ToolProtocolError`.
 */
class ExactParser {
  readonly #text: string;
  readonly #end: number;
  /** The position of the next character to read. */
  #pos = 0;
  readonly #stack: Frame[] = [];
  /** Set by #readNumber for a float token with an integral value (see markFloatMember). */
  #integralFloat = false;

  constructor(text: string) {
    this.#text = text;
    this.#end = text.length;
  }

  /** Parses the whole text as one value followed only by whitespace. */
  parse(): unknown {
    if (this.#text.charCodeAt(0) === 0xfeff) {
      throw new SyntaxFault("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    }
    this.#skipWhitespace();
    const result = this.#readDocument();
    this.#skipWhitespace();
    if (this.#pos !== this.#end) throw new SyntaxFault("Extra data", this.#pos);
    return result;
  }

  /** Reads one top-level value: containers push frames and the loop reads their members. */
  #readDocument(): unknown {
    const text = this.#text;
    const stack = this.#stack;
    for (;;) {
      this.#integralFloat = false;
      let v = this.#readValue();
      if (v === OPENED) continue;
      // Attach the finished value and close every container it completes.
      for (;;) {
        const frame = stack[stack.length - 1];
        if (frame === undefined) return v;
        if (frame.kind === Ctx.Array) {
          frame.array!.push(v);
          this.#integralFloat = false;
          this.#skipWhitespace();
          const d = text.charCodeAt(this.#pos);
          if (d === 0x2c) {
            this.#pos++;
            this.#skipWhitespace();
            break;
          }
          if (d === 0x5d) {
            this.#pos++;
            stack.pop();
            v = frame.array;
            continue;
          }
          throw new SyntaxFault("Expecting ',' delimiter", this.#pos);
        }
        if (this.#setMember(frame, v)) break;
        v = frame.object;
      }
    }
  }

  /**
   * Reads one value at the current position. A non-empty container pushes its frame (an object
   * reads its first key too) and returns `OPENED`: its members are read next.
   */
  #readValue(): unknown {
    const text = this.#text;
    const i = this.#pos;
    const c = text.charCodeAt(i);
    if (c === 0x7b) return this.#openObject();
    if (c === 0x5b) return this.#openArray();
    if (c === 0x22) return this.#readString();
    if (c === 0x6e && text.startsWith("null", i)) {
      this.#pos = i + 4;
      return null;
    }
    if (c === 0x74 && text.startsWith("true", i)) {
      this.#pos = i + 4;
      return true;
    }
    if (c === 0x66 && text.startsWith("false", i)) {
      this.#pos = i + 5;
      return false;
    }
    if (c === 0x4e && text.startsWith("NaN", i)) {
      throw invalidJson("non-finite JSON number is not allowed: NaN");
    }
    if (c === 0x49 && text.startsWith("Infinity", i)) {
      throw invalidJson("non-finite JSON number is not allowed: Infinity");
    }
    if (c === 0x2d && text.startsWith("-Infinity", i)) {
      throw invalidJson("non-finite JSON number is not allowed: -Infinity");
    }
    if (c === 0x2d || isDigit(c)) return this.#readNumber();
    throw new SyntaxFault("Expecting value", i);
  }

  /** Opens an object at `{`: `{}` is a finished value, anything else pushes a frame. */
  #openObject(): unknown {
    if (this.#stack.length >= MAX_PARSE_NESTING) {
      throw invalidJson(
        "maximum recursion depth exceeded while decoding a JSON object from a unicode string",
      );
    }
    this.#pos++;
    this.#skipWhitespace();
    if (this.#text.charCodeAt(this.#pos) === 0x7d) {
      this.#pos++;
      return {};
    }
    const frame: Frame = { kind: Ctx.ObjectValue, object: {} };
    this.#stack.push(frame);
    this.#readKey(frame);
    return OPENED;
  }

  /** Opens an array at `[`: `[]` is a finished value, anything else pushes a frame. */
  #openArray(): unknown {
    if (this.#stack.length >= MAX_PARSE_NESTING) {
      throw invalidJson(
        "maximum recursion depth exceeded while decoding a JSON array from a unicode string",
      );
    }
    this.#pos++;
    this.#skipWhitespace();
    if (this.#text.charCodeAt(this.#pos) === 0x5d) {
      this.#pos++;
      return [];
    }
    this.#stack.push({ kind: Ctx.Array, array: [] });
    return OPENED;
  }

  /**
   * Stores `v` as the value of the frame's current key and reads the delimiter after it: true
   * after `,` (the next key is read), false after `}` (the frame is popped; a duplicate key seen
   * in it is reported now).
   */
  #setMember(frame: Frame, v: unknown): boolean {
    const object = frame.object!;
    const key = frame.key!;
    // The object is its own key set: a member is an own property once set (setOwn makes
    // "__proto__" one too), and no JSON value is undefined.
    if (frame.duplicate === undefined && Object.hasOwn(object, key)) frame.duplicate = key;
    setOwn(object, key, v);
    if (this.#integralFloat) markFloatMember(object, key);
    this.#integralFloat = false;
    this.#skipWhitespace();
    const d = this.#text.charCodeAt(this.#pos);
    if (d === 0x2c) {
      this.#pos++;
      this.#skipWhitespace();
      this.#readKey(frame);
      return true;
    }
    if (d === 0x7d) {
      this.#pos++;
      this.#stack.pop();
      if (frame.duplicate !== undefined) {
        throw new ToolProtocolError(
          ToolErrorCodes.DUPLICATE_KEY,
          `duplicate JSON object key: ${pyRepr(frame.duplicate)}`,
        );
      }
      return false;
    }
    throw new SyntaxFault("Expecting ',' delimiter", this.#pos);
  }

  #skipWhitespace(): void {
    const text = this.#text;
    const end = this.#end;
    let i = this.#pos;
    while (i < end && isWs(text.charCodeAt(i))) i++;
    this.#pos = i;
  }

  /** Reads a member's key and the `:` after it into `frame`. */
  #readKey(frame: Frame): void {
    if (this.#text.charCodeAt(this.#pos) !== 0x22) {
      throw new SyntaxFault("Expecting property name enclosed in double quotes", this.#pos);
    }
    frame.key = this.#readString();
    this.#skipWhitespace();
    if (this.#text.charCodeAt(this.#pos) !== 0x3a) {
      throw new SyntaxFault("Expecting ':' delimiter", this.#pos);
    }
    this.#pos++;
    this.#skipWhitespace();
  }

  /** Reads a string token at its opening quote and returns its unescaped text. */
  #readString(): string {
    const text = this.#text;
    const end = this.#end;
    const begin = this.#pos;
    let i = begin + 1;
    let out = "";
    let chunk = i;
    for (;;) {
      if (i >= end) throw new SyntaxFault("Unterminated string starting at", begin);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(chunk, i);
        this.#pos = i + 1;
        return out;
      }
      if (c < 0x20) throw new SyntaxFault("Invalid control character at", i);
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(chunk, i);
      const e = text.charCodeAt(i + 1);
      if (Number.isNaN(e)) throw new SyntaxFault("Unterminated string starting at", begin);
      switch (e) {
        case 0x22:
          out += '"';
          break;
        case 0x5c:
          out += "\\";
          break;
        case 0x2f:
          out += "/";
          break;
        case 0x62:
          out += "\b";
          break;
        case 0x66:
          out += "\f";
          break;
        case 0x6e:
          out += "\n";
          break;
        case 0x72:
          out += "\r";
          break;
        case 0x74:
          out += "\t";
          break;
        case 0x75: {
          const unit = this.#readHex(i + 2);
          i += 6;
          // A high surrogate followed by an escaped low surrogate forms one character.
          if (
            unit >= 0xd800 && unit <= 0xdbff && text.charCodeAt(i) === 0x5c &&
            text.charCodeAt(i + 1) === 0x75
          ) {
            const low = this.#readHexOrNaN(i + 2);
            if (low >= 0xdc00 && low <= 0xdfff) {
              out += String.fromCharCode(unit, low);
              i += 6;
              chunk = i;
              continue;
            }
          }
          out += String.fromCharCode(unit);
          chunk = i;
          continue;
        }
        default:
          throw new SyntaxFault("Invalid \\escape", i);
      }
      i += 2;
      chunk = i;
    }
  }

  /** The four hex digits at `at` as a code unit, or NaN when they are not four hex digits. */
  #readHexOrNaN(at: number): number {
    if (at + 4 > this.#end) return NaN;
    const hex = this.#text.slice(at, at + 4);
    return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : NaN;
  }

  /** The four hex digits of the `\u` escape whose `u` is at `at - 1`. */
  #readHex(at: number): number {
    const unit = this.#readHexOrNaN(at);
    if (Number.isNaN(unit)) throw new SyntaxFault("Invalid \\uXXXX escape", at - 1);
    return unit;
  }

  /**
   * Reads a number token: a float (its integral values flagged for the float mark), or an
   * integer within ±(2^53 − 1).
   */
  #readNumber(): number {
    const text = this.#text;
    const start = this.#pos;
    let i = start;
    if (text.charCodeAt(i) === 0x2d) i++;
    const intStart = i;
    const first = text.charCodeAt(i);
    if (first === 0x30) i++;
    else if (first >= 0x31 && first <= 0x39) {
      while (isDigit(text.charCodeAt(i))) i++;
    } else {
      throw new SyntaxFault("Expecting value", start);
    }
    const intEnd = i;
    let integer = true;
    if (text.charCodeAt(i) === 0x2e && isDigit(text.charCodeAt(i + 1))) {
      integer = false;
      i += 2;
      while (isDigit(text.charCodeAt(i))) i++;
    }
    const e = text.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      let j = i + 1;
      const s = text.charCodeAt(j);
      if (s === 0x2b || s === 0x2d) j++;
      if (isDigit(text.charCodeAt(j))) {
        integer = false;
        while (isDigit(text.charCodeAt(j))) j++;
        i = j;
      }
    }
    this.#pos = i;
    const token = text.slice(start, i);
    if (!integer) {
      const float = Number(token);
      this.#integralFloat = Number.isInteger(float);
      return float;
    }
    const digits = intEnd - intStart;
    if (digits > 4300) throw invalidJson("integer cannot be parsed safely");
    const value = Number(token);
    if (
      digits >= 16 &&
      (Math.abs(value) > MAX_SAFE_JSON_INTEGER ||
        BigInt(token) > BigInt(MAX_SAFE_JSON_INTEGER) ||
        BigInt(token) < -BigInt(MAX_SAFE_JSON_INTEGER))
    ) {
      throw invalidJson(`integer exceeds interoperable range ±${MAX_SAFE_JSON_INTEGER}`);
    }
    return value === 0 ? 0 : value;
  }
}

/**
 * Encodes a string as UTF-8 for decoding, rejecting a lone surrogate the way the reference's
 * text input path does.
 */
export function encodeUtf8Text(text: string): Uint8Array {
  if (hasLoneSurrogate(text)) {
    throw invalidJson("message contains an invalid Unicode scalar value");
  }
  return new TextEncoder().encode(text);
}

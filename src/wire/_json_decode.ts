/**
 * The strict JSON decoder of the Wire.
 *
 * Two paths, one set of rules. The fast path runs an allocation-free structural scan over the
 * UTF-8 bytes and then the engine's `JSON.parse`; the scan proves the document holds nothing
 * the strict rules care about (no duplicate key, no escaped surrogate, no integer token beyond
 * ±(2^53 − 1), no float token that could overflow, no `-0`, nesting within the payload bound).
 * Anything the scan cannot prove, and every document `JSON.parse` refuses, goes to the exact
 * path: an iterative (never recursive) parser that reproduces the reference's decisions, codes,
 * messages, precedence and `line L column C` positions. Both paths run in linear time.
 *
 * @module
 */
import { MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { hasLoneSurrogate, setOwn } from "../endpoint/_json.ts";
import { pyRepr } from "./_repr.ts";

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

// Scan state, reused across calls (the scan never allocates on the common path).
const frameIsObject = new Uint8Array(FAST_MAX_LEVEL + 2);
const frameKeyStart = new Int32Array(FAST_MAX_LEVEL + 2);
const frameKeySets: (Set<number> | undefined)[] = new Array(FAST_MAX_LEVEL + 2);
let keyHashes = new Int32Array(1024);
const SMALL_OBJECT_KEYS = 16;

/**
 * Scans `bytes[start, end)` and answers whether the document is free of everything the strict
 * rules reject or transform and `JSON.parse` would let through. A `false` answer only means
 * "take the exact path"; it is never an error by itself.
 */
export function scanIsClean(bytes: Uint8Array, start = 0, end = bytes.length): boolean {
  let level = 0;
  let keyTop = 0;
  let expectKey = false;
  let i = start;
  while (i < end) {
    const c = bytes[i];
    if (c === 0x22) {
      // String: hash it when it is an object key; reject escaped surrogates.
      let hash = 0x811c9dc5 | 0;
      i++;
      for (;;) {
        if (i >= end) return false;
        const s = bytes[i];
        if (s === 0x22) break;
        if (s === 0x5c) {
          if (expectKey) return false; // escaped key: equality after unescaping is exact-path work
          const e = bytes[i + 1];
          if (e === 0x75) {
            const h = bytes[i + 2] | 0x20;
            if (h === 0x64) {
              const h2 = bytes[i + 3] | 0x20;
              if (h2 >= 0x38 && h2 <= 0x66 && (h2 >= 0x61 || h2 <= 0x39)) return false;
            }
            i += 6;
          } else {
            i += 2;
          }
          continue;
        }
        hash = Math.imul(hash ^ s, 0x01000193);
        i++;
      }
      i++;
      if (expectKey) {
        const from = frameKeyStart[level];
        const set = frameKeySets[level];
        if (set !== undefined) {
          if (set.has(hash)) return false;
          set.add(hash);
        } else {
          for (let k = from; k < keyTop; k++) if (keyHashes[k] === hash) return false;
          if (keyTop - from >= SMALL_OBJECT_KEYS) {
            const promoted = new Set<number>();
            for (let k = from; k < keyTop; k++) promoted.add(keyHashes[k]);
            promoted.add(hash);
            frameKeySets[level] = promoted;
          } else {
            if (keyTop === keyHashes.length) {
              const grown = new Int32Array(keyHashes.length * 2);
              grown.set(keyHashes);
              keyHashes = grown;
            }
            keyHashes[keyTop++] = hash;
          }
        }
        expectKey = false;
      }
      continue;
    }
    switch (c) {
      case 0x7b: // {
        if (++level > FAST_MAX_LEVEL) return false;
        frameIsObject[level] = 1;
        frameKeyStart[level] = keyTop;
        frameKeySets[level] = undefined;
        expectKey = true;
        i++;
        continue;
      case 0x5b: // [
        if (++level > FAST_MAX_LEVEL) return false;
        frameIsObject[level] = 0;
        expectKey = false;
        i++;
        continue;
      case 0x7d: // }
      case 0x5d: // ]
        if (level === 0) return false;
        if (frameIsObject[level] === 1) {
          keyTop = frameKeyStart[level];
          frameKeySets[level] = undefined;
        }
        level--;
        expectKey = false;
        i++;
        continue;
      case 0x2c: // ,
        expectKey = level > 0 && frameIsObject[level] === 1;
        i++;
        continue;
      case 0x2d: // -
      case 0x30:
      case 0x31:
      case 0x32:
      case 0x33:
      case 0x34:
      case 0x35:
      case 0x36:
      case 0x37:
      case 0x38:
      case 0x39: {
        const tokenStart = i;
        let digits = 0;
        let integer = true;
        let exponentDigits = 0;
        let inExponent = false;
        if (c === 0x2d) i++;
        const firstDigit = i;
        while (i < end) {
          const d = bytes[i];
          if (d >= 0x30 && d <= 0x39) {
            if (inExponent) exponentDigits++;
            else digits++;
          } else if (d === 0x2e) integer = false;
          else if (d === 0x65 || d === 0x45) {
            integer = false;
            inExponent = true;
          } else if (d !== 0x2b && d !== 0x2d) break;
          i++;
        }
        if (integer) {
          if (digits >= 16) return false;
          if (c === 0x2d && digits === 1 && bytes[firstDigit] === 0x30) return false; // -0
        } else if (exponentDigits > 2 || i - tokenStart > 300) {
          return false;
        }
        continue;
      }
      default:
        i++;
    }
  }
  return level === 0;
}

/**
 * Parses strict JSON from UTF-8 bytes (already size-checked): valid UTF-8, no duplicate key,
 * no `NaN`/`Infinity`, integer tokens within ±(2^53 − 1), no trailing data.
 */
export function parseStrictJsonBytes(bytes: Uint8Array, start = 0, end = bytes.length): ParsedJson {
  const text = decodeUtf8(
    start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end),
  );
  if (scanIsClean(bytes, start, end)) {
    try {
      return { value: JSON.parse(text), normalized: true };
    } catch {
      // The exact parser reports the reference's error below.
    }
  }
  return { value: parseExact(text), normalized: false };
}

/** Parses strict JSON from a string with the exact parser (used for text input). */
export function parseStrictJsonText(text: string): ParsedJson {
  return { value: parseExact(text), normalized: false };
}

// ---------------------------------------------------------------------------------------------
// The exact parser.

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

interface Frame {
  kind: Ctx;
  array?: unknown[];
  object?: Record<string, unknown>;
  seen?: Set<string>;
  key?: string;
  duplicate?: string;
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function parseExact(text: string): unknown {
  try {
    return parseExactOrFault(text);
  } catch (fault) {
    if (fault instanceof SyntaxFault) {
      throw invalidJson(fault.message, positionPath(text, fault.pos));
    }
    throw fault;
  }
}

function parseExactOrFault(text: string): unknown {
  const n = text.length;
  if (text.charCodeAt(0) === 0xfeff) {
    throw new SyntaxFault("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
  }
  let i = 0;
  const skip = () => {
    while (i < n && isWs(text.charCodeAt(i))) i++;
  };
  const stack: Frame[] = [];
  let result: unknown;
  skip();
  // Parse one value; containers push frames and continue the loop.
  value: for (;;) {
    let v: unknown;
    const c = text.charCodeAt(i);
    if (c === 0x7b) {
      if (stack.length >= MAX_PARSE_NESTING) {
        throw invalidJson(
          "maximum recursion depth exceeded while decoding a JSON object from a unicode string",
        );
      }
      i++;
      skip();
      if (text.charCodeAt(i) === 0x7d) {
        i++;
        v = {};
      } else {
        const frame: Frame = { kind: Ctx.ObjectValue, object: {}, seen: new Set() };
        stack.push(frame);
        readKey(frame);
        continue value;
      }
    } else if (c === 0x5b) {
      if (stack.length >= MAX_PARSE_NESTING) {
        throw invalidJson(
          "maximum recursion depth exceeded while decoding a JSON array from a unicode string",
        );
      }
      i++;
      skip();
      if (text.charCodeAt(i) === 0x5d) {
        i++;
        v = [];
      } else {
        stack.push({ kind: Ctx.Array, array: [] });
        continue value;
      }
    } else if (c === 0x22) {
      v = readString();
    } else if (c === 0x6e && text.startsWith("null", i)) {
      i += 4;
      v = null;
    } else if (c === 0x74 && text.startsWith("true", i)) {
      i += 4;
      v = true;
    } else if (c === 0x66 && text.startsWith("false", i)) {
      i += 5;
      v = false;
    } else if (c === 0x4e && text.startsWith("NaN", i)) {
      throw invalidJson("non-finite JSON number is not allowed: NaN");
    } else if (c === 0x49 && text.startsWith("Infinity", i)) {
      throw invalidJson("non-finite JSON number is not allowed: Infinity");
    } else if (c === 0x2d && text.startsWith("-Infinity", i)) {
      throw invalidJson("non-finite JSON number is not allowed: -Infinity");
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      v = readNumber();
    } else {
      throw new SyntaxFault("Expecting value", i);
    }
    // Attach the finished value and close every container it completes.
    for (;;) {
      const frame = stack[stack.length - 1];
      if (frame === undefined) {
        result = v;
        break value;
      }
      if (frame.kind === Ctx.Array) {
        frame.array!.push(v);
        skip();
        const d = text.charCodeAt(i);
        if (d === 0x2c) {
          i++;
          skip();
          continue value;
        }
        if (d === 0x5d) {
          i++;
          stack.pop();
          v = frame.array;
          continue;
        }
        throw new SyntaxFault("Expecting ',' delimiter", i);
      }
      // Object member value.
      const key = frame.key!;
      if (frame.seen!.has(key)) frame.duplicate ??= key;
      else frame.seen!.add(key);
      setOwn(frame.object!, key, v);
      skip();
      const d = text.charCodeAt(i);
      if (d === 0x2c) {
        i++;
        skip();
        readKey(frame);
        continue value;
      }
      if (d === 0x7d) {
        i++;
        stack.pop();
        if (frame.duplicate !== undefined) {
          throw new ToolProtocolError(
            ToolErrorCodes.DUPLICATE_KEY,
            `duplicate JSON object key: ${pyRepr(frame.duplicate)}`,
          );
        }
        v = frame.object;
        continue;
      }
      throw new SyntaxFault("Expecting ',' delimiter", i);
    }
  }
  skip();
  if (i !== n) throw new SyntaxFault("Extra data", i);
  return result;

  function readKey(frame: Frame): void {
    if (text.charCodeAt(i) !== 0x22) {
      throw new SyntaxFault("Expecting property name enclosed in double quotes", i);
    }
    frame.key = readString();
    skip();
    if (text.charCodeAt(i) !== 0x3a) throw new SyntaxFault("Expecting ':' delimiter", i);
    i++;
    skip();
  }

  function readString(): string {
    const begin = i;
    i++;
    let out = "";
    let chunk = i;
    for (;;) {
      if (i >= n) throw new SyntaxFault("Unterminated string starting at", begin);
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(chunk, i);
        i++;
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
          const unit = readHex(i + 2);
          i += 6;
          // A high surrogate followed by an escaped low surrogate forms one character.
          if (
            unit >= 0xd800 && unit <= 0xdbff && text.charCodeAt(i) === 0x5c &&
            text.charCodeAt(i + 1) === 0x75
          ) {
            const low = readHexOrNaN(i + 2);
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

  function readHexOrNaN(at: number): number {
    if (at + 4 > n) return NaN;
    const hex = text.slice(at, at + 4);
    return /^[0-9a-fA-F]{4}$/.test(hex) ? parseInt(hex, 16) : NaN;
  }

  function readHex(at: number): number {
    const unit = readHexOrNaN(at);
    if (Number.isNaN(unit)) throw new SyntaxFault("Invalid \\uXXXX escape", at - 1);
    return unit;
  }

  function readNumber(): number {
    const start = i;
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
    const token = text.slice(start, i);
    if (!integer) return Number(token);
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

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
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

/**
 * The strict JSON decoder's exact path: an iterative (never recursive) parser that reproduces
 * the reference's decisions, codes, messages, precedence and `line L column C` positions (see
 * `_json_decode.ts`).
 *
 * @module
 */
import { MAX_SAFE_JSON_INTEGER } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { markFloatMember, setOwn } from "../_internal/json.ts";
import { pyRepr } from "../_internal/repr.ts";

/**
 * The deepest container nesting the exact parser follows before it gives up the way the
 * reference's parser does when it runs out of recursion (`FORGE_PROTOCOL_INVALID_JSON`).
 */
export const MAX_PARSE_NESTING = 1000;

export function invalidJson(message: string, path?: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_JSON, message, path);
}

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

export function parseExact(text: string): unknown {
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

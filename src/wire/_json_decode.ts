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
import { hasLoneSurrogate } from "../_internal/text.ts";
import { scan, SCAN_CLEAN_ASCII, SCAN_COMPACT, SCAN_DIRTY } from "./_json_scan.ts";
import { invalidJson, parseExact } from "./_json_exact.ts";

/** The outcome of a successful strict parse. */
export interface ParsedJson {
  /** The top-level value. */
  readonly value: unknown;
  /**
   * True when the fast path proved the whole document holds only interoperable values within
   * the payload depth bound, so the envelope need not walk the payload again.
   */
  readonly normalized: boolean;
  /**
   * The text itself when the scan also proved it compact (`SCAN_COMPACT`: as `JSON.stringify`
   * writes the value, up to key order and the numbers the seal judges), else `undefined`.
   */
  readonly compactText?: string;
}

const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Decodes UTF-8 strictly (a BOM is kept as a character), as `INVALID_JSON` on failure. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return fatalDecoder.decode(bytes);
  } catch {
    throw invalidJson("message is not valid UTF-8");
  }
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
    const text = (verdict & ~SCAN_COMPACT) === SCAN_CLEAN_ASCII
      ? asciiDecoder.decode(view)
      : decodeUtf8(view);
    try {
      const value = JSON.parse(text);
      return {
        value,
        normalized: true,
        compactText: (verdict & SCAN_COMPACT) !== 0 ? text : undefined,
      };
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

/**
 * The header strings of a carrier row: short ASCII values read without the fatal decoder, the
 * three identifiers cut from one decode, and the values that repeat from message to message handed
 * back as the string read before. Private to
 * `src/dora/`; the carrier rules (`_carrier_rules.ts`) are its one caller.
 *
 * @module
 */

// Every header of a typical message is short ASCII. The fatal decoder costs 1.2 µs on a 36-byte
// identifier against 0.35–0.6 µs for the non-fatal one (the same string for ASCII bytes), and a
// character loop is cheaper still up to a dozen bytes (V8 copies a string that short on each
// append; a longer one it builds as a rope, flattened at its first use).
const LOOP_VALUE_BYTES = 12;
const asciiDecoder = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * The header values that repeat from message to message (the protocol, the message types, the
 * endpoint, instance and operation names), as the string read last time: a table of 256 short
 * ASCII strings keyed by the column, the length and three of the bytes, every hit confirmed byte
 * by byte. A hit costs 60–160 ns against 220–820 ns to build the string again; a miss (a new
 * value, or one that shares a slot) builds it and takes the slot. Identifiers (request, invocation
 * and attempt ids) are new in every message and are not kept. Module state, listed in
 * tests/structure_test.ts: bounded, and each string only what some message held.
 */
const repeatedHeaders: { readonly strings: string[] } = {
  strings: new Array<string>(256).fill(""),
};

/** The ASCII string of `bytes[start, end)`, or `undefined` when a byte is not ASCII. */
export function asciiText(bytes: Uint8Array, start: number, end: number): string | undefined {
  if (end - start <= LOOP_VALUE_BYTES) {
    let text = "";
    for (let i = start; i < end; i++) {
      const c = bytes[i];
      if (c >= 0x80) return undefined;
      text += String.fromCharCode(c);
    }
    return text;
  }
  for (let i = start; i < end; i++) if (bytes[i] >= 0x80) return undefined;
  return asciiDecoder.decode(bytes.subarray(start, end));
}

/**
 * The string of `bytes[start, end)` in repeating column `column` (see repeatedHeaders), or
 * `undefined` when a byte is not ASCII.
 */
export function repeatedText(
  column: number,
  bytes: Uint8Array,
  start: number,
  end: number,
): string | undefined {
  const length = end - start;
  if (length === 0) return "";
  const strings = repeatedHeaders.strings;
  const slot = (column * 37 + length * 7 + bytes[start] * 3 + bytes[start + (length >> 1)] * 5 +
    bytes[end - 1]) & 255;
  const kept = strings[slot];
  if (kept.length === length) {
    let i = 0;
    while (i < length && kept.charCodeAt(i) === bytes[start + i]) i++;
    // Equal to an ASCII string, so ASCII itself.
    if (i === length) return kept;
  }
  const text = asciiText(bytes, start, end);
  if (text !== undefined) strings[slot] = text;
  return text;
}

/** A byte range: the bytes, the start and the end (the carrier rules' `Utf8Range`). */
type ByteRange = readonly [bytes: Uint8Array, start: number, end: number];

/** The widest stretch of bytes {@linkcode identifierTexts} decodes with one call. */
const SPAN_BYTES = 256;

/**
 * The ASCII strings of the identifier columns (request, invocation and attempt id; `undefined`
 * for a null one), cut from one decode of the bytes that hold them all: a decoder call costs about
 * 200 ns whatever its length, and the carrier's writer puts the three values next to each other
 * (a 36-byte id each: 300 against 520 ns). `undefined` when that does not apply: fewer than two
 * values, values in different buffers or spread over more than {@linkcode SPAN_BYTES}, or a byte of
 * the stretch that is not ASCII (one between the values too, as it would shift the indices). The
 * caller then reads each value on its own, with its rules and errors. The strings share the
 * decoded stretch (at most 256 bytes), which stays alive while any of them does: a retained
 * execution record keeps that much, not more.
 */
export function identifierTexts(
  first: ByteRange | undefined,
  second: ByteRange | undefined,
  third: ByteRange | undefined,
): [string | undefined, string | undefined, string | undefined] | undefined {
  const bytes = (first ?? second ?? third)?.[0];
  if (
    bytes === undefined || (first !== undefined && first[0] !== bytes) ||
    (second !== undefined && second[0] !== bytes) || (third !== undefined && third[0] !== bytes)
  ) return undefined;
  const count = (first === undefined ? 0 : 1) + (second === undefined ? 0 : 1) +
    (third === undefined ? 0 : 1);
  const low = Math.min(first?.[1] ?? Infinity, second?.[1] ?? Infinity, third?.[1] ?? Infinity);
  const high = Math.max(first?.[2] ?? -Infinity, second?.[2] ?? -Infinity, third?.[2] ?? -Infinity);
  if (count < 2 || high - low > SPAN_BYTES) return undefined;
  for (let i = low; i < high; i++) if (bytes[i] >= 0x80) return undefined;
  const text = asciiDecoder.decode(bytes.subarray(low, high));
  return [
    first && text.substring(first[1] - low, first[2] - low),
    second && text.substring(second[1] - low, second[2] - low),
    third && text.substring(third[1] - low, third[2] - low),
  ];
}

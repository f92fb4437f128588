/**
 * The header strings of a carrier row: short ASCII values read without the fatal decoder, and the
 * values that repeat from message to message handed back as the string read before. Private to
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

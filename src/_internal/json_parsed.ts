/**
 * Adopting what `JSON.parse` built for the strict decoder's fast path: the value is frozen in
 * place, deeply, in one walk, and its root becomes a canonical value (see `copyJson`) when it
 * already is one in all but the mark, so the models built from a decoded payload, the gateway's
 * forwarded copy and the encoders take it as it is instead of copying it again.
 *
 * @module
 */
import { MAX_JSON_DEPTH } from "../endpoint/constants.ts";
import { compareCodePoints, isArrayIndex, sealCanonical } from "./json.ts";

/** What the walk learns about the value beside its height. */
interface ParsedFacts {
  /** False once something rules the canonical mark out (see {@linkcode sealParsedJson}). */
  canonical: boolean;
  /** 1 when `JSON.stringify` would write a number differently from the Wire (below 1e-4). */
  flag: number;
}

function numberFacts(value: number, facts: ParsedFacts): void {
  if (Number.isInteger(value)) {
    // -0 here is the integer token `-0`, which the Wire writes `0`; inside a canonical value the
    // encoder takes -0 for a float token (`-0.0`). Past the integer range, a float token.
    if (Object.is(value, -0) || !Number.isSafeInteger(value)) facts.canonical = false;
  } else if (Math.abs(value) < 1e-4) {
    facts.flag = 1;
  }
}

function walk(value: object, facts: ParsedFacts, freeze: boolean): number {
  let height = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      let below = 0;
      if (typeof item === "object" && item !== null) below = walk(item, facts, true);
      else if (typeof item === "number") numberFacts(item, facts);
      if (below >= height) height = below + 1;
    }
  } else {
    let previous: string | undefined;
    for (const key in value) {
      // Keys in code point order, none an array index (engines enumerate those first).
      if (
        facts.canonical &&
        (isArrayIndex(key) || (previous !== undefined && compareCodePoints(previous, key) > 0))
      ) facts.canonical = false;
      previous = key;
      const item: unknown = (value as Record<string, unknown>)[key];
      let below = 0;
      if (typeof item === "object" && item !== null) below = walk(item, facts, true);
      else if (typeof item === "number") numberFacts(item, facts);
      if (below >= height) height = below + 1;
    }
  }
  if (freeze) Object.freeze(value);
  return height;
}

/**
 * @internal Freezes a container that `JSON.parse` built, and every container below it, in place,
 * in one walk, and returns its height (the deepest nesting below it: 0 for an empty container).
 * Only for the strict decoder's fast path, whose scan proved the text interoperable (no
 * duplicate key, no lone surrogate, integers in range, no float token with an integral value).
 * The root is marked canonical, with its height and writer flag, when every object's keys are in
 * code point order and none is an array index, no number is -0 or beyond the integer range, and
 * the height is within the depth bound: then it holds exactly what `copyJson` would have built.
 * `compactText`, the text the value was parsed from when the scan proved it compact
 * (`SCAN_COMPACT`), is kept by a canonical root without a writer flag: it is then the encoder's
 * output for the root (see `canonicalText`).
 */
export function sealParsedJson(value: object, compactText?: string): number {
  const facts: ParsedFacts = { canonical: true, flag: 0 };
  const height = walk(value, facts, false);
  if (facts.canonical && height <= MAX_JSON_DEPTH) {
    // A compact text of a canonical value written without the Wire's own number forms is, key
    // for key, what the encoder writes: the root keeps it (see canonicalText).
    sealCanonical(value, height, facts.flag, facts.flag === 0 ? compactText : undefined);
  } else {
    Object.freeze(value);
  }
  return height;
}

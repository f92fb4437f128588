/**
 * The string rules every identifier goes through: the two blank sets (the reference's blank
 * check and Python's `str.strip()`) and the lone-surrogate check; and the injective key
 * of a pair of identifiers.
 *
 * @module
 */

// The whitespace set of the reference's blank check (Python's str.strip() set without
// U+001C..U+001F): a string made only of these is blank.
const BLANK = /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;
// Python's str.isspace() set: what str.strip() removes (see isStripBlank).
const PY_SPACE =
  // deno-lint-ignore no-control-regex -- U+001C..U+001F are whitespace to Python.
  /^[\t\n\v\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/;

/** True when `value` is empty or made only of whitespace (the reference's blank set). */
export function isBlank(value: string): boolean {
  // Fast exit: a first character that is visible ASCII cannot start a blank string.
  const c = value.charCodeAt(0);
  if (c > 0x20 && c < 0x7f) return false;
  return BLANK.test(value);
}

/**
 * True when Python's `str.strip()` leaves nothing of `value`: empty, or only `str.isspace()`
 * whitespace (stricter than {@linkcode isBlank} by U+001C..U+001F). The reference handler's
 * `endpoint_instance_id` rule and Forge Gateway's `caller_id` check. U+FEFF is not whitespace
 * here, unlike in `String.prototype.trim()`.
 */
export function isStripBlank(value: string): boolean {
  return value === "" || PY_SPACE.test(value);
}

/**
 * True when `value` holds an unpaired UTF-16 surrogate (not a Unicode scalar value string).
 * `String.prototype.isWellFormed` is V8's own scan: constant time for a one-byte string (which
 * cannot hold a surrogate), and 6–8× faster than a `charCodeAt` loop on identifiers; the check
 * runs on every header, identifier and JSON string the models and the Wire accept.
 */
export function hasLoneSurrogate(value: string): boolean {
  return !value.isWellFormed();
}

/**
 * An injective string identity of the pair (`first`, `second`), for use as a `Map` key: the
 * length of `first`, a colon, `first`, then `second` (the length says where `first` ends). A
 * template string: `JSON.stringify` of the pair cost 0.25 µs a key.
 */
export function pairKey(first: string, second: string): string {
  return `${first.length}:${first}${second}`;
}

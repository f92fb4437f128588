/**
 * Python-compatible text for values quoted in error messages and for floats on the Wire.
 *
 * @module
 */

/**
 * Formats a finite, non-integral or out-of-safe-range number the way Python's `repr(float)`
 * does: the shortest round-trip digits, positional notation for exponents in [-4, 16), otherwise
 * `d.ddde±XX` with at least two exponent digits.
 */
export function formatPythonFloat(value: number): string {
  if (value === 0) return Object.is(value, -0) ? "-0.0" : "0.0";
  const [mantissa, exponentText] = value.toExponential().split("e");
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = negative ? "-" : "";
  if (exponent >= -5 && exponent < 16) {
    // Python switches to scientific notation below 1e-4 (exponent < -4).
    if (exponent < -4) return scientific(sign, digits, exponent);
    if (exponent < 0) return `${sign}0.${"0".repeat(-exponent - 1)}${digits}`;
    const whole = digits.length <= exponent + 1
      ? digits + "0".repeat(exponent + 1 - digits.length)
      : digits.slice(0, exponent + 1);
    const fraction = digits.length <= exponent + 1 ? "0" : digits.slice(exponent + 1);
    return `${sign}${whole}.${fraction}`;
  }
  return scientific(sign, digits, exponent);
}

function scientific(sign: string, digits: string, exponent: number): string {
  const mantissa = digits.length === 1 ? digits : `${digits[0]}.${digits.slice(1)}`;
  const abs = Math.abs(exponent);
  return `${sign}${mantissa}e${exponent < 0 ? "-" : "+"}${abs < 10 ? "0" : ""}${abs}`;
}

function reprString(value: string): string {
  const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
  let out = quote;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    const c = value.charCodeAt(i);
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c === 0xad) {
      out += `\\x${c.toString(16).padStart(2, "0")}`;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const next = value.charCodeAt(i + 1);
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        out += value.slice(i, i + 2);
        i++;
      } else {
        out += `\\u${c.toString(16)}`;
      }
    } else out += ch;
  }
  return out + quote;
}

/** The text Python's `repr()` gives for a JSON value (used in error messages). */
export function pyRepr(value: unknown): string {
  switch (typeof value) {
    case "string":
      return reprString(value);
    case "boolean":
      return value ? "True" : "False";
    case "number":
      return Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER
        ? String(value)
        : Number.isFinite(value)
        ? formatPythonFloat(value)
        : Number.isNaN(value)
        ? "nan"
        : value > 0
        ? "inf"
        : "-inf";
    case "bigint":
      return String(value);
    case "undefined":
      return "None";
    case "object":
      if (value === null) return "None";
      if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
      return `{${
        Object.entries(value).map(([k, v]) => `${reprString(k)}: ${pyRepr(v)}`).join(", ")
      }}`;
    default:
      return String(value);
  }
}

/**
 * A short description of a value a provider returned, for an error message: a string quoted, an
 * object by its class ("a ToolResult", "an Object"), anything else as `String()` shows it.
 */
export function showValue(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "function") return "a function";
  if (typeof value !== "object" || value === null) return String(value);
  let name: unknown;
  try {
    name = Object.getPrototypeOf(value)?.constructor?.name;
  } catch {
    name = undefined;
  }
  if (typeof name !== "string" || name === "") return "an object";
  return `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}`;
}

// Option checks shared by every folder (not exported from mod.ts): one message style for every
// option error, after the Deno standard library's `async/retry.ts`: "Cannot <action> as
// '<option>' must be <requirement>: current value is <value>".

/** How an option error shows the value received: strings quoted as JSON, anything else as text. */
export function describeOptionValue(value: unknown): string {
  try {
    return typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    // A value whose conversion throws (a null-prototype object, a hostile toString).
    return Object.prototype.toString.call(value);
  }
}

/**
 * The message of an option error: "Cannot create a ToolGateway as 'maxExecutions' must be a
 * positive integer: current value is 0". `action` says what could not be done, `name` is the
 * TypeScript option, `requirement` what it must be.
 */
export function optionMessage(
  action: string,
  name: string,
  requirement: string,
  value: unknown,
): string {
  return `Cannot ${action} as '${name}' must be ${requirement}: current value is ${
    describeOptionValue(value)
  }`;
}

/**
 * An optional positive safe integer option: `fallback` when `value` is `undefined`, else `value`
 * when it is an integer in `[1, 2^53 - 1]`; a `RangeError` in the one style otherwise.
 */
export function positiveIntegerOption(
  action: string,
  name: string,
  value: unknown,
  fallback: number,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(optionMessage(action, name, "a positive integer", value));
  }
  return value;
}

/** An optional function option: `undefined` or a function; a `TypeError` in the one style otherwise. */
export function optionalFunction<F extends (...args: never[]) => unknown>(
  action: string,
  name: string,
  value: unknown,
): F | undefined {
  if (value !== undefined && typeof value !== "function") {
    throw new TypeError(optionMessage(action, name, "a function", value));
  }
  return value as F | undefined;
}

/**
 * Checks an option that must be a finite number in `[min, max]` (or `(min, max)` when `open`);
 * the error says what could not be done, names the option and shows the value received:
 * "Cannot create an EndpointRegistration as 'jitter' must be a finite number in [0, 1]: current
 * value is 2".
 */
export function requireNumberIn(
  action: string,
  value: unknown,
  name: string,
  min: number,
  max: number,
  open = false,
): number {
  if (
    typeof value !== "number" || !Number.isFinite(value) ||
    (open ? value <= min || value >= max : value < min || value > max)
  ) {
    const range = open ? `(${min}, ${max})` : `[${min}, ${max}]`;
    throw new RangeError(optionMessage(action, name, `a finite number in ${range}`, value));
  }
  return value;
}

// Helpers of the endpoint node modules (not exported from mod.ts).
import { optionMessage } from "../_internal/repr.ts";

export { optionMessage };

/** `base` scaled by a uniform factor in `[1 − jitter, 1 + jitter)`. */
export function jittered(base: number, jitter: number, random: () => number): number {
  const sample = random();
  const unit = Number.isFinite(sample) ? Math.min(Math.max(sample, 0), 1) : 0.5;
  return base * (1 + jitter * (2 * unit - 1));
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

/** Calls `send` and routes a synchronous throw or a rejection to `onError`. */
export function deliver(
  send: () => void | Promise<void>,
  onError: (error: unknown) => void,
): void {
  let result: void | Promise<void>;
  try {
    result = send();
  } catch (error) {
    onError(error);
    return;
  }
  if (result !== undefined && typeof (result as Promise<void>).then === "function") {
    (result as Promise<void>).then(undefined, onError);
  }
}

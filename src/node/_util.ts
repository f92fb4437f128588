// Helpers of the endpoint node modules (not exported from mod.ts).
import { isThenable } from "../_internal/async.ts";
/** `base` scaled by a uniform factor in `[1 − jitter, 1 + jitter)`. */
export function jittered(base: number, jitter: number, random: () => number): number {
  const sample = random();
  const unit = Number.isFinite(sample) ? Math.min(Math.max(sample, 0), 1) : 0.5;
  return base * (1 + jitter * (2 * unit - 1));
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
  if (isThenable(result)) {
    result.then(undefined, onError);
  }
}

/**
 * The time sources of the endpoint node: a monotonic clock with timers, injected so the lease,
 * renewal, backoff and health timing can be driven deterministically in tests.
 *
 * @module
 */

import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";

/** A monotonic time source: milliseconds that never go backwards (not a wall clock). */
export interface MonotonicClock {
  /** The current monotonic time in milliseconds. */
  now(): number;
}

/** A monotonic time source with one-shot timers, as the endpoint node's loops use it. */
export interface NodeClock extends MonotonicClock {
  /** Calls `callback` once after `ms` milliseconds; returns a handle for `clearTimeout`. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancels a timer that `setTimeout` returned (a fired or cancelled timer is ignored). */
  clearTimeout(handle: unknown): void;
}

/**
 * The process clock: `performance.now()` and timers on the global `setTimeout` that honour any
 * delay: one longer than 2^31 − 1 ms (which `setTimeout` alone would fire after about 1 ms) is
 * waited for in steps, never early.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { SYSTEM_CLOCK } from "@forge/tool/node";
 * const start = SYSTEM_CLOCK.now();
 * assertEquals(SYSTEM_CLOCK.now() >= start, true);
 * ```
 */
export const SYSTEM_CLOCK: NodeClock = Object.freeze({
  now: (): number => performance.now(),
  setTimeout: (callback: () => void, ms: number): unknown => setLongTimeout(callback, ms),
  clearTimeout: (handle: unknown): void => (handle as LongTimeout | undefined)?.clear?.(),
});

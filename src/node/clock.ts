/**
 * The time sources of the endpoint node: a monotonic clock with timers, injected so the lease,
 * renewal, backoff and health timing can be driven deterministically in tests.
 *
 * @module
 */

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
 * The process clock: `performance.now()` and the global `setTimeout` / `clearTimeout`.
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
  setTimeout: (callback: () => void, ms: number): unknown => setTimeout(callback, ms),
  clearTimeout: (handle: unknown): void =>
    clearTimeout(handle as ReturnType<typeof setTimeout> | undefined),
});

/**
 * Timing every bench case the same way in every round. `deno bench` decides how to time a case
 * from its first 10 ms of calls: call by call when they averaged over 10 µs, else in batches of
 * 10,000. A case of a few microseconds whose first calls still ran cold code (first dispatches,
 * tier-up, the garbage of the case before) landed on either side from one round to the next (a
 * Session round: call by call in five rounds of ten, batched in the other five). Its `warmup`
 * option does not help: Deno 2.9.6 overwrites it (`benchDesc.warmup = false` in its
 * `Deno.bench`), so the warmup is those 10 ms alone.
 *
 * {@linkcode warmedUp} makes the first call of a case a warmup of its own ({@linkcode WARMUP_MS}
 * of calls by default, within deno bench's warmup step, never measured), so every case is timed
 * call by call and in its steady state; {@linkcode steadyBench} also makes each timed call run the
 * operation {@linkcode CALLS_PER_ITERATION} times, so that the timer's cost stays small beside a
 * call of the fastest baseline (a bare `Map` round of 0.5 µs).
 *
 * @module
 */

/**
 * How long the first call of a case warms it up by default, in milliseconds: a handler's Action
 * round takes 8 µs in its first 200 ms and 3.0–4.4 µs from then on.
 */
export const WARMUP_MS = 500;

/**
 * Operations per timed call of a {@linkcode steadyBench} case, on both sides of every group, by
 * default: a bare `Map` round (0.5 µs) makes a 16 µs call.
 */
export const CALLS_PER_ITERATION = 32;

/**
 * `fn`, whose first call first runs `fn` for `warmupMs` (at least once); an `async` function
 * stays one (deno bench awaits only an `AsyncFunction`).
 */
export function warmedUp(fn: () => void, warmupMs?: number): () => void;
export function warmedUp(fn: () => Promise<unknown>, warmupMs?: number): () => Promise<void>;
export function warmedUp(
  fn: (() => void) | (() => Promise<unknown>),
  warmupMs = WARMUP_MS,
): (() => void) | (() => Promise<void>) {
  let cold = true;
  const until = () => performance.now() + warmupMs;
  if (fn.constructor.name === "AsyncFunction") {
    const call = fn as () => Promise<unknown>;
    return async () => {
      if (cold) {
        cold = false;
        const end = until();
        do await call(); while (performance.now() < end);
      }
      await call();
    };
  }
  const call = fn as () => void;
  return () => {
    if (cold) {
      cold = false;
      const end = until();
      do call(); while (performance.now() < end);
    }
    call();
  };
}

/** A case of {@linkcode steadyBench}: `fn` is one operation (an `async` function). */
export interface SteadyBenchCase {
  readonly name: string;
  readonly group: string;
  readonly baseline?: boolean;
  /**
   * Operations per timed call ({@linkcode CALLS_PER_ITERATION} by default): the same on both
   * sides of a group, more where the baseline is a bare call of under 0.1 µs.
   */
  readonly perCall?: number;
  /** How long the first call warms the case up ({@linkcode WARMUP_MS} by default). */
  readonly warmupMs?: number;
  readonly fn: () => Promise<unknown>;
}

/**
 * Registers a case whose timed call runs `fn` `perCall` times, after a warmup (see
 * {@linkcode warmedUp}); its name says so (`… ×32`).
 */
export function steadyBench(
  { name, group, baseline = false, perCall = CALLS_PER_ITERATION, warmupMs, fn }: SteadyBenchCase,
): void {
  Deno.bench({
    name: `${name} ×${perCall}`,
    group,
    baseline,
    fn: warmedUp(async () => {
      for (let i = 0; i < perCall; i++) await fn();
    }, warmupMs),
  });
}

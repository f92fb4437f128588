// Async helpers shared across folders (never exported from mod.ts or dora.ts).

import { type LongTimeout, setLongTimeout } from "./timers.ts";

/** A promise with its resolve and reject functions. */
export interface Resolvers<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T | PromiseLike<T>) => void;
  readonly reject: (reason?: unknown) => void;
}

/** A promise already fulfilled (with `undefined`), shared: `SETTLED.then(f)` runs `f` a turn later. */
export const SETTLED: Promise<void> = Promise.resolve();

/**
 * True when `value` is a thenable, which `await` and `Promise.resolve` would follow: an object or
 * function with a callable `then`. Reads `then` once (a throwing getter throws here).
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === "object" ? value !== null : typeof value === "function") &&
    typeof (value as { then?: unknown }).then === "function";
}

/**
 * `f(value)` now when `value` is already there, else once the promise `value` fulfils (a
 * rejection passes through): a step that is synchronous whenever its input was costs no
 * microtask turn. Only a native `Promise` is waited for; any other value is taken as it is.
 */
export function andThen<T, R>(
  value: T | Promise<T>,
  f: (value: T) => R | Promise<R>,
): R | Promise<R> {
  return value instanceof Promise ? value.then(f) : f(value);
}

/**
 * `Promise.withResolvers()` for runtimes that lack it (Node.js 20 has none; mod.ts runs there).
 */
export function withResolvers<T = void>(): Resolvers<T> {
  let resolve!: (value: T | PromiseLike<T>) => void;
  let reject!: (reason?: unknown) => void;
  const promise = new Promise<T>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return { promise, resolve, reject };
}

/**
 * Waits until every promise in `pending` settled, or `ms` passed; never rejects. With `ms <= 0`
 * no timer is armed: what settles within the current microtask turns is waited for, no more.
 */
export async function settleWithin(
  pending: Iterable<Promise<unknown>>,
  ms: number,
): Promise<void> {
  const all = [...pending];
  if (all.length === 0) return;
  if (ms <= 0) {
    await Promise.race([Promise.allSettled(all), Promise.resolve()]);
    return;
  }
  let timer: LongTimeout | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setLongTimeout(resolve, ms)));
  try {
    await Promise.race([Promise.allSettled(all), timeout]);
  } finally {
    timer?.clear();
  }
}

/** A first-in first-out async lock. */
export class FifoLock {
  // Shared until first taken: an emitter that never emits makes no promise for its lock.
  #tail: Promise<void> = SETTLED;

  /** Waits for every earlier holder, then returns the release function. */
  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const previous = this.#tail;
    this.#tail = previous.then(() => held);
    return previous.then(() => release);
  }
}

/**
 * A local stand-in for `jsr:@std/async` with the same names and call shapes (the subset this
 * project uses). JSR is not reachable from this project's machines.
 *
 * @module
 */

/** Resolves after `ms` milliseconds, or rejects with the signal's reason when it aborts. */
export function delay(ms: number, options: { signal?: AbortSignal } = {}): Promise<void> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const abort = () => {
      clearTimeout(id);
      reject(signal?.reason);
    };
    const id = setTimeout(() => {
      signal?.removeEventListener("abort", abort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/** Thrown by {@linkcode deadline} when the time runs out. */
export class DeadlineError extends Error {
  /** Creates a deadline error. */
  constructor() {
    super("Deadline");
    this.name = "DeadlineError";
  }
}

/** Rejects with a {@linkcode DeadlineError} when `promise` has not settled after `ms`. */
export function deadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let id: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    id = setTimeout(() => reject(new DeadlineError()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(id));
}

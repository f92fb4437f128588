// The one long-delay timer of the package (never exported from mod.ts or dora.ts): every timer
// whose delay comes from an option or a deadline goes through `setLongTimeout`, so a delay beyond
// what `setTimeout` honours is waited for in steps instead of firing after about 1 ms.

/**
 * The longest delay `setTimeout` honours, 2^31 − 1 ms (about 24.8 days). Deno, Node.js and
 * browsers replace a longer delay by 1 ms.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** A pending timer of {@linkcode setLongTimeout}. */
export interface LongTimeout {
  /** Cancels the timer; the callback is not called afterwards. Idempotent. */
  clear(): void;
}

/** Options of {@linkcode setLongTimeout}. */
export interface LongTimeoutOptions {
  /**
   * Whether the pending timer lets the process exit (Deno's `unrefTimer`, Node.js's `unref()`).
   * @default {false}
   */
  readonly unref?: boolean;
  /**
   * The monotonic clock, in milliseconds, that each step re-reads.
   * @default {performance.now}
   */
  readonly now?: () => number;
}

const performanceNow = (): number => performance.now();

/**
 * Calls `callback` once, `ms` milliseconds from now. A delay up to
 * {@linkcode MAX_TIMER_DELAY_MS} is one `setTimeout` of exactly that delay; a longer one is waited
 * for in steps of at most that long, each re-reading the clock, so it never fires early (an
 * infinite delay never fires). A delay that is not a positive number (negative, `NaN`) is 0.
 */
export function setLongTimeout(
  callback: () => void,
  ms: number,
  options: LongTimeoutOptions = {},
): LongTimeout {
  const delay = ms > 0 ? ms : 0;
  if (delay <= MAX_TIMER_DELAY_MS) {
    // The common case: one timer, no clock read.
    let id: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
      id = undefined;
      callback();
    }, delay);
    if (options.unref === true) unrefTimer(id);
    return {
      clear() {
        if (id !== undefined) clearTimeout(id);
        id = undefined;
      },
    };
  }
  const now = options.now ?? performanceNow;
  const at = now() + delay;
  let id: ReturnType<typeof setTimeout> | undefined;
  const arm = (remaining: number) => {
    const step = Math.min(remaining, MAX_TIMER_DELAY_MS);
    id = setTimeout(() => {
      id = undefined;
      if (step < remaining) arm(Math.max(0, at - now()));
      else callback();
    }, step);
    if (options.unref === true) unrefTimer(id);
  };
  arm(delay);
  return {
    clear() {
      if (id !== undefined) clearTimeout(id);
      id = undefined;
    },
  };
}

/** Lets the process exit while the timer `id` is pending, in Deno and in Node.js alike. */
function unrefTimer(id: ReturnType<typeof setTimeout>): void {
  const deno = (globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno;
  if (typeof deno?.unrefTimer === "function") {
    deno.unrefTimer(id as unknown as number);
    return;
  }
  (id as unknown as { unref?: () => void } | undefined)?.unref?.();
}

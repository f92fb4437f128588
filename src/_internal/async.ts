// Async helpers shared across folders (never exported from mod.ts or dora.ts).

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
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  try {
    await Promise.race([Promise.allSettled(all), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

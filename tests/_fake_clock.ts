// A deterministic NodeClock for tests (not a test file itself): timers fire only when the test
// moves time forward with advance(ms).
import type { NodeClock } from "../mod.ts";

/** A monotonic clock with a timer queue, advanced by hand. */
export class FakeClock implements NodeClock {
  #now = 0;
  #next = 0;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = ++this.#next;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers still pending. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in (time, creation) order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let due: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (due === undefined || entry[1].at < due[1].at)) due = entry;
      }
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = target;
  }
}

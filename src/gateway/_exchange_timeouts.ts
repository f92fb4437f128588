/**
 * The timeouts of one gateway's pending exchanges, on one timer. Every exchange waits the same
 * `exchangeTimeoutMs` from when it was forwarded, so deadlines come in the order exchanges start:
 * a queue, the timer set for its head. An exchange that settles leaves its entry behind, dropped
 * when it reaches the head (at once when it is the head), so a Query answered in time arms and
 * clears no timer of its own: a timer per exchange (set when forwarded, cleared when answered) cost
 * 3 µs in Deno 2.9, as much as the rest of the gateway's work on a Query. The timer is set for the
 * head's remaining time on the gateway's monotonic clock, so it never ends an exchange early; once
 * the queue is empty it is left to fire once and find nothing (close() clears it).
 *
 * @module
 */
import type { NodeClock } from "../node/clock.ts";

/** Exchange ids by deadline (start order), with the one timer set for the earliest. */
export class ExchangeTimeouts {
  readonly #clock: NodeClock;
  readonly #timeoutMs: number;
  readonly #pending: ReadonlyMap<string, unknown>;
  readonly #expire: (exchangeId: string) => void;
  #ids: string[] = [];
  #deadlines: number[] = [];
  #head = 0;
  #timer: unknown = undefined;
  #armed = false;

  /**
   * Timeouts of `exchangeTimeoutMs` on `clock`; `pending` holds the exchanges still waiting (by
   * id), `expire` ends one whose time ran out (only called for a pending one).
   */
  constructor(
    { clock, exchangeTimeoutMs }: { readonly clock: NodeClock; readonly exchangeTimeoutMs: number },
    pending: ReadonlyMap<string, unknown>,
    expire: (exchangeId: string) => void,
  ) {
    this.#clock = clock;
    this.#timeoutMs = exchangeTimeoutMs;
    this.#pending = pending;
    this.#expire = expire;
  }

  /** Entries queued, settled ones not yet dropped included (for tests of the bound). */
  get size(): number {
    return this.#ids.length - this.#head;
  }

  /** Starts the timeout of `exchangeId`, forwarded at `startedAtMs` on the clock. */
  add(exchangeId: string, startedAtMs: number, pendingCount: number): void {
    // Settled entries behind a waiting head are dropped once they outnumber the pending ones.
    if (this.size > 2 * pendingCount + 64) this.#compact();
    this.#ids.push(exchangeId);
    this.#deadlines.push(startedAtMs + this.#timeoutMs);
    if (!this.#armed) this.#arm(this.#timeoutMs);
  }

  /** Drops settled entries at the head (call after an exchange settled). */
  settled(): void {
    while (this.#head < this.#ids.length && !this.#pending.has(this.#ids[this.#head])) this.#head++;
    if (this.#head === this.#ids.length) this.#reset();
  }

  /** Clears the timer and forgets every entry. */
  close(): void {
    if (this.#armed) this.#clock.clearTimeout(this.#timer);
    this.#armed = false;
    this.#timer = undefined;
    this.#reset();
  }

  #arm(ms: number): void {
    this.#armed = true;
    this.#timer = this.#clock.setTimeout(() => this.#fired(), ms);
  }

  #fired(): void {
    // Still counted as armed while expiring: an exchange a caller sends from inside `expire`
    // (an answer delivered synchronously) is queued without setting a second timer.
    // An `expire` that throws still leaves the timer set for the next deadline, so one failure
    // cannot stop every later exchange from timing out.
    this.#timer = undefined;
    const now = this.#clock.now();
    try {
      while (this.#head < this.#ids.length && this.#deadlines[this.#head] <= now) {
        const id = this.#ids[this.#head++];
        if (this.#pending.has(id)) this.#expire(id);
      }
    } finally {
      this.settled();
      this.#armed = false;
      if (this.#head < this.#ids.length) {
        this.#arm(this.#deadlines[this.#head] - this.#clock.now());
      }
    }
  }

  #compact(): void {
    const ids: string[] = [];
    const deadlines: number[] = [];
    for (let i = this.#head; i < this.#ids.length; i++) {
      if (!this.#pending.has(this.#ids[i])) continue;
      ids.push(this.#ids[i]);
      deadlines.push(this.#deadlines[i]);
    }
    this.#ids = ids;
    this.#deadlines = deadlines;
    this.#head = 0;
  }

  #reset(): void {
    if (this.#ids.length === 0) return;
    this.#ids = [];
    this.#deadlines = [];
    this.#head = 0;
  }
}

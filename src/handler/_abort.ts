/**
 * Abort plumbing whose cost per call does not grow with the number of pending calls: one listener
 * per shared signal fanning out to a set, a promise race against such a signal, and deadline
 * timers that never fire before their deadline however far away it is.
 *
 * @module
 */

import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";

/** One subscription of an {@linkcode AbortFanout}: a node of its doubly linked list. */
interface Subscription {
  readonly onAbort: (reason: unknown) => void;
  prev: Subscription | undefined;
  next: Subscription | undefined;
  /** False once unsubscribed or fired: unsubscribing again changes nothing. */
  linked: boolean;
}

/**
 * The subscribers of one shared `AbortSignal` behind a single listener. `EventTarget` scans its
 * whole listener list on every `addEventListener` and `removeEventListener`, so one listener per
 * pending call makes each call cost O(pending); subscribing here and unsubscribing cost O(1).
 * Subscribers are called in subscription order when the signal aborts. They are kept in an
 * intrusive doubly linked list, not a `Set`: a dispatch subscribes and unsubscribes twice, and a
 * `Set` that empties again rehashes (allocates) on delete, which the handler's dispatch profile
 * showed among its top costs.
 */
export class AbortFanout {
  /** The shared signal. */
  readonly signal: AbortSignal;
  #head: Subscription | undefined;
  #tail: Subscription | undefined;

  constructor(signal: AbortSignal) {
    this.signal = signal;
    if (!signal.aborted) {
      signal.addEventListener("abort", () => this.#fire(), { once: true });
    }
  }

  /**
   * Calls `onAbort` with the signal's reason when it aborts (at once when it already has).
   * Returns the function that unsubscribes.
   */
  subscribe(onAbort: (reason: unknown) => void): () => void {
    if (this.signal.aborted) {
      onAbort(this.signal.reason);
      return () => {};
    }
    const entry: Subscription = { onAbort, prev: this.#tail, next: undefined, linked: true };
    if (this.#tail === undefined) this.#head = entry;
    else this.#tail.next = entry;
    this.#tail = entry;
    return () => this.#unlink(entry);
  }

  #unlink(entry: Subscription): void {
    if (!entry.linked) return;
    entry.linked = false;
    if (entry.prev === undefined) this.#head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.#tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.prev = entry.next = undefined;
  }

  #fire(): void {
    const reason = this.signal.reason;
    // Detach every subscription first (unsubscribing during the calls changes nothing), then
    // call them in subscription order.
    const subscribers: Subscription[] = [];
    for (let entry = this.#head; entry !== undefined; entry = entry.next) {
      entry.linked = false;
      subscribers.push(entry);
    }
    this.#head = this.#tail = undefined;
    for (const { onAbort } of subscribers) onAbort(reason);
  }
}

/** Awaits `promise`, or rejects with the fan-out signal's reason as soon as it aborts. */
export function raceAbort<T>(promise: Promise<T>, fanout: AbortFanout): Promise<T> {
  if (fanout.signal.aborted) return Promise.reject(fanout.signal.reason);
  return new Promise<T>((resolve, reject) => {
    const unsubscribe = fanout.subscribe(reject);
    promise.then(
      (value) => {
        unsubscribe();
        resolve(value);
      },
      (error) => {
        unsubscribe();
        reject(error);
      },
    );
  });
}

/** A pending deadline timer (see {@linkcode atDeadline}): `clear()` cancels it, idempotently. */
export type DeadlineTimer = LongTimeout;

/**
 * Calls `fire` once the deadline `deadlineMs` (on the clock `now`, in milliseconds) is reached,
 * through {@linkcode setLongTimeout}: a deadline further away than `MAX_TIMER_DELAY_MS` is waited
 * for in steps, each re-reading the clock, so it never fires early. The timer does not keep the
 * process alive.
 */
export function atDeadline(deadlineMs: number, now: () => number, fire: () => void): DeadlineTimer {
  return setLongTimeout(fire, deadlineMs - now(), { unref: true, now });
}

/**
 * One promise of a {@linkcode PendingSet}: a node of its doubly linked list. An entry opened by
 * {@linkcode PendingSet.enter} has no promise until its work's promise exists.
 */
export interface Pending {
  promise: Promise<unknown> | undefined;
  prev: Pending | undefined;
  next: Pending | undefined;
  /** False once removed: removing again changes nothing. */
  linked: boolean;
}

/**
 * The promises still pending of some kind of work (provider calls, dispatches), for close() to
 * wait on: added when the work starts, removed when it settles, in O(1) without allocation
 * beyond the node. A `Set` of promises did the same but rehashed whenever it emptied again (a
 * dispatch adds and removes one to two), which the handler's dispatch profile counted among its
 * top costs (`SetPrototypeDelete`, a quarter of the runtime ticks of a Query loop).
 */
export class PendingSet {
  #head: Pending | undefined;
  #tail: Pending | undefined;
  #size = 0;

  /** How many promises are pending. */
  get size(): number {
    return this.#size;
  }

  /** Adds `promise`; returns the function that removes it (idempotent). */
  add(promise: Promise<unknown>): () => void {
    const node = this.enter();
    node.promise = promise;
    return () => this.#remove(node);
  }

  /**
   * Opens an entry for work that leaves the set itself, through {@linkcode leave}, when it ends:
   * the caller sets the entry's `promise` once the work's promise exists (before anything can
   * iterate the set). Work that leaves from its own `finally` costs no reaction on its promise and
   * no microtask, which tracking the promise from outside did: about 7% of an Action round
   * (invoke + status + result) through the handler.
   */
  enter(): Pending {
    const node: Pending = { promise: undefined, prev: this.#tail, next: undefined, linked: true };
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    this.#size++;
    return node;
  }

  /** Removes an entry {@linkcode enter} opened (idempotent). */
  leave(node: Pending): void {
    this.#remove(node);
  }

  #remove(node: Pending): void {
    if (!node.linked) return;
    node.linked = false;
    if (node.prev === undefined) this.#head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = node.next = undefined;
    this.#size--;
  }

  /** The pending promises, in the order they were added. */
  *[Symbol.iterator](): IterableIterator<Promise<unknown>> {
    for (let node = this.#head; node !== undefined; node = node.next) {
      if (node.promise !== undefined) yield node.promise;
    }
  }
}

/**
 * The eviction order of a ledger's evictable records: least recently used first, found in O(1)
 * for the records that became evictable as the most recently used one (every execution that ends
 * through a status or result read, or a terminal event) and in O(log n) for the others.
 *
 * @module
 */

/** Where a record is queued: not at all, in the recency list, or in the heap. */
const Queued = { None: 0, List: 1, Heap: 2 } as const;

/** What the queue needs of a record: its recency stamp and its queue links (queue-private). */
export interface EvictionLinks {
  /** The ledger's recency stamp: larger is more recently used. */
  used: number;
  /** Where the record is queued (see {@linkcode EvictionQueue}). */
  queued: number;
  /** The next older record in the recency list. */
  older: this | undefined;
  /** The next newer record in the recency list. */
  newer: this | undefined;
}

/** The `queued` value of a record not queued yet. */
export const NOT_QUEUED: number = Queued.None;

/** A heap entry: `record` with the stamp it had when queued. */
interface HeapEntry<R> {
  readonly used: number;
  readonly record: R;
}

/**
 * The evictable records of a ledger, in two parts that together give the exact least recently
 * used order:
 *
 * - a doubly linked list in recency order, holding every record that was the most recently used
 *   one when it became evictable, or was used since: appended at the newest end, moved there on
 *   every use, so its oldest end is its least recently used record;
 * - a binary min-heap by stamp, holding the records that became evictable later than their last
 *   use (a start refused, an execution the handler converged itself). A heap record that is used
 *   moves to the list; its heap entry is then stale and dropped when it reaches the top.
 *
 * The least recently used evictable record is the older of the list's oldest record and the
 * heap's top.
 */
export class EvictionQueue<R extends EvictionLinks> {
  #oldest: R | undefined;
  #newest: R | undefined;
  #heap: HeapEntry<R>[] = [];
  #heapRecords = 0;
  #examined = 0;

  /** How many records taking the oldest examined in total (stale heap entries included). */
  get examined(): number {
    return this.#examined;
  }

  /**
   * Queues `record`, which just became evictable; `newest` tells whether its stamp is the most
   * recent one given (then it goes to the list in O(1)).
   */
  add(record: R, newest: boolean): void {
    if (newest) {
      this.#append(record);
      return;
    }
    record.queued = Queued.Heap;
    this.#heapRecords++;
    const heap = this.#heap;
    if (heap.length >= 2 * this.#heapRecords + 64) {
      // More stale entries than live ones: keep the live ones only.
      this.#heap = heap.filter((entry) => entry.record.queued === Queued.Heap);
      for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) siftDown(this.#heap, i);
    }
    this.#heap.push({ used: record.used, record });
    siftUp(this.#heap, this.#heap.length - 1);
  }

  /** Records that `record`, if queued, was just stamped the most recently used. */
  used(record: R): void {
    if (record.queued === Queued.List) {
      if (record === this.#newest) return;
      this.#detach(record);
      this.#append(record);
    } else if (record.queued === Queued.Heap) {
      this.#heapRecords--;
      this.#append(record);
    }
  }

  /** Takes the least recently used queued record off the queue, or `undefined` when none. */
  takeOldest(): R | undefined {
    const heap = this.#heap;
    while (heap.length > 0 && heap[0].record.queued !== Queued.Heap) {
      this.#examined++;
      popTop(heap);
    }
    const listed = this.#oldest;
    const top = heap.length > 0 ? heap[0].record : undefined;
    if (listed === undefined && top === undefined) return undefined;
    this.#examined++;
    if (top === undefined || (listed !== undefined && listed.used < top.used)) {
      this.#detach(listed!);
      listed!.queued = Queued.None;
      return listed;
    }
    popTop(heap);
    this.#heapRecords--;
    top.queued = Queued.None;
    return top;
  }

  #append(record: R): void {
    record.queued = Queued.List;
    record.older = this.#newest;
    record.newer = undefined;
    if (this.#newest === undefined) this.#oldest = record;
    else this.#newest.newer = record;
    this.#newest = record;
  }

  #detach(record: R): void {
    const { older, newer } = record;
    if (older === undefined) this.#oldest = newer;
    else older.newer = newer;
    if (newer === undefined) this.#newest = older;
    else newer.older = older;
    record.older = undefined;
    record.newer = undefined;
  }
}

/** Removes the heap's top. */
function popTop<R>(heap: HeapEntry<R>[]): void {
  const last = heap.pop()!;
  if (heap.length > 0) {
    heap[0] = last;
    siftDown(heap, 0);
  }
}

/** Moves `heap[index]` up to its place in the min-heap by `used`. */
function siftUp<R>(heap: HeapEntry<R>[], index: number): void {
  const entry = heap[index];
  while (index > 0) {
    const parent = (index - 1) >> 1;
    if (heap[parent].used <= entry.used) break;
    heap[index] = heap[parent];
    index = parent;
  }
  heap[index] = entry;
}

/** Moves `heap[index]` down to its place in the min-heap by `used`. */
function siftDown<R>(heap: HeapEntry<R>[], index: number): void {
  const entry = heap[index];
  const length = heap.length;
  for (;;) {
    let child = 2 * index + 1;
    if (child >= length) break;
    if (child + 1 < length && heap[child + 1].used < heap[child].used) child++;
    if (heap[child].used >= entry.used) break;
    heap[index] = heap[child];
    index = child;
  }
  heap[index] = entry;
}

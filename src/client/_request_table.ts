/**
 * {@linkcode RequestTable}: the client's pending exchanges by request id, an open-addressing hash
 * table over arrays that keeps no trace of an entry once it is deleted.
 *
 * Why not a `Map`: the client adds and deletes one string-keyed entry per call. Measured with
 * `--trace-gc-nvp` during a soak of Query invokes over the in-process transport, the same
 * exchange table kept 4.5–8% of the young generation alive at each Scavenge (0.9–2 MiB promoted
 * each time) with a `Map<string, Exchange>` and 0.5% (nothing promoted) with these arrays, all
 * else equal: V8's `Map` re-allocates its backing table as deleted entries accumulate, and an
 * obsolete table (old-generation garbage until the next mark-compact) still points at the
 * exchanges that were pending, which the Scavenger then keeps, with everything they reach. Here a
 * delete clears its slot (backward-shift deletion, no tombstones) and the arrays are replaced
 * only when the table grows.
 *
 * @module
 */

import { fnv1a32 } from "../_internal/hash.ts";

const INITIAL_CAPACITY = 64;

/** A string-keyed table of pending entries (load at most one half, linear probing). */
export class RequestTable<V> {
  #keys: (string | undefined)[] = new Array(INITIAL_CAPACITY).fill(undefined);
  #values: (V | undefined)[] = new Array(INITIAL_CAPACITY).fill(undefined);
  #hashes = new Uint32Array(INITIAL_CAPACITY);
  #mask = INITIAL_CAPACITY - 1;
  #size = 0;

  /** How many entries the table holds. */
  get size(): number {
    return this.#size;
  }

  /**
   * The table's hash of `key`. Every method takes it as its last argument (computed when left
   * out): a caller that uses one key many times hashes it once (a 36-character id costs about
   * 50 ns).
   */
  static hashOf(key: string): number {
    return fnv1a32(key);
  }

  #find(key: string, hash: number): number {
    const keys = this.#keys;
    for (let i = hash & this.#mask;; i = (i + 1) & this.#mask) {
      const stored = keys[i];
      if (stored === undefined) return -1;
      if (this.#hashes[i] === hash && stored === key) return i;
    }
  }

  /** The entry of `key`, if any. */
  get(key: string, hash: number = fnv1a32(key)): V | undefined {
    const i = this.#find(key, hash);
    return i < 0 ? undefined : this.#values[i];
  }

  /** Whether `key` has an entry. */
  has(key: string, hash: number = fnv1a32(key)): boolean {
    return this.#find(key, hash) >= 0;
  }

  /** Adds or replaces the entry of `key`. */
  set(key: string, value: V, hash: number = fnv1a32(key)): void {
    const existing = this.#find(key, hash);
    if (existing >= 0) {
      this.#values[existing] = value;
      return;
    }
    if ((this.#size + 1) * 2 > this.#keys.length) this.#grow();
    this.#insert(key, value, hash);
    this.#size++;
  }

  #insert(key: string, value: V, hash: number): void {
    let i = hash & this.#mask;
    while (this.#keys[i] !== undefined) i = (i + 1) & this.#mask;
    this.#keys[i] = key;
    this.#values[i] = value;
    this.#hashes[i] = hash;
  }

  #grow(): void {
    const [keys, values, hashes] = [this.#keys, this.#values, this.#hashes];
    const capacity = keys.length * 2;
    this.#keys = new Array(capacity).fill(undefined);
    this.#values = new Array(capacity).fill(undefined);
    this.#hashes = new Uint32Array(capacity);
    this.#mask = capacity - 1;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      if (key !== undefined) this.#insert(key, values[i]!, hashes[i]);
    }
    // The old arrays become garbage: clear them so they point at nothing meanwhile.
    keys.fill(undefined);
    values.fill(undefined);
  }

  /** Deletes the entry of `key`; false when it had none. */
  delete(key: string, hash: number = fnv1a32(key)): boolean {
    let hole = this.#find(key, hash);
    if (hole < 0) return false;
    const [keys, values, hashes, mask] = [this.#keys, this.#values, this.#hashes, this.#mask];
    keys[hole] = undefined;
    values[hole] = undefined;
    this.#size--;
    // Backward-shift: an entry after the hole moves into it unless its home slot lies
    // (cyclically) after the hole, up to where it is.
    for (let j = (hole + 1) & mask; keys[j] !== undefined; j = (j + 1) & mask) {
      const home = hashes[j] & mask;
      const stays = hole <= j ? hole < home && home <= j : hole < home || home <= j;
      if (stays) continue;
      keys[hole] = keys[j];
      values[hole] = values[j];
      hashes[hole] = hashes[j];
      keys[j] = undefined;
      values[j] = undefined;
      hole = j;
    }
    return true;
  }

  /** A snapshot of the entries (the table may change while the caller walks it). */
  values(): V[] {
    const out: V[] = [];
    const values = this.#values;
    for (let i = 0; i < values.length; i++) {
      if (this.#keys[i] !== undefined) out.push(values[i]!);
    }
    return out;
  }
}

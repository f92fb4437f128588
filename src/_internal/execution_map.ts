/**
 * A table of values each bound to one execution key, looked up by the key's own two strings.
 *
 * An execution key's `id` is a `pairKey` concatenation of its invocation and attempt ids. Every
 * status, result and control request carries a fresh key, so a `Map` by `id` concatenated,
 * flattened and hashed a new string per request: a sixth of a status dispatch answered from the
 * handler's ledger, in its profile. Here the first level is keyed by the invocation id (the
 * string the request's envelope holds, hashed once and then cached by V8), the attempt id is
 * compared, and a `Map` by attempt id takes over only once a second attempt of one invocation is
 * held, so a lookup stays O(1) however many attempts a caller sends.
 *
 * @module
 */

/** The two strings of an execution key. */
export interface ExecutionKeyFields {
  readonly invocationId: string;
  readonly attemptId: string;
}

/** A value that knows its execution key. */
export interface KeyedByExecution {
  readonly key: ExecutionKeyFields;
}

/**
 * @internal Values by their execution key, each value knowing its own (`value.key`): at most one
 * value per key.
 */
export class ExecutionKeyMap<V extends KeyedByExecution> {
  /** The value of an invocation's only attempt, or its attempts' values by attempt id. */
  readonly #byInvocation = new Map<string, V | Map<string, V>>();
  #size = 0;

  /** How many values it holds. */
  get size(): number {
    return this.#size;
  }

  /** The value of `key`, if held. */
  get(key: ExecutionKeyFields): V | undefined {
    const entry = this.#byInvocation.get(key.invocationId);
    if (entry === undefined) return undefined;
    if (entry instanceof Map) return entry.get(key.attemptId);
    return entry.key.attemptId === key.attemptId ? entry : undefined;
  }

  /** Holds `value` under its key, in place of the value held there before. */
  set(value: V): void {
    const { invocationId, attemptId } = value.key;
    const entry = this.#byInvocation.get(invocationId);
    if (entry === undefined) {
      this.#byInvocation.set(invocationId, value);
      this.#size++;
    } else if (entry instanceof Map) {
      if (!entry.has(attemptId)) this.#size++;
      entry.set(attemptId, value);
    } else if (entry.key.attemptId === attemptId) {
      this.#byInvocation.set(invocationId, value);
    } else {
      const attempts = new Map([[entry.key.attemptId, entry], [attemptId, value]]);
      this.#byInvocation.set(invocationId, attempts);
      this.#size++;
    }
  }

  /** Forgets the value of `key`; false when none was held. */
  delete(key: ExecutionKeyFields): boolean {
    const entry = this.#byInvocation.get(key.invocationId);
    if (entry === undefined) return false;
    if (entry instanceof Map) {
      if (!entry.delete(key.attemptId)) return false;
      if (entry.size === 0) this.#byInvocation.delete(key.invocationId);
    } else {
      if (entry.key.attemptId !== key.attemptId) return false;
      this.#byInvocation.delete(key.invocationId);
    }
    this.#size--;
    return true;
  }

  /** Every value held, in no particular order. */
  *values(): IterableIterator<V> {
    for (const entry of this.#byInvocation.values()) {
      if (entry instanceof Map) yield* entry.values();
      else yield entry;
    }
  }
}

// The bounded invocation store of the HTTP service (private to src/gateway/): the Action and
// Session invocations HTTP callers started, each with the client's ToolInvocation handle, the
// last events it delivered (for SSE replay) and, once known, its terminal result. Capacity,
// events kept per invocation and retention after the terminal result are all bounded.
import type { ToolResult } from "../endpoint/models.ts";
import type { ToolEventRecord, ToolInvocation } from "../client/client.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { OrderedMap } from "../_internal/ordered_map.ts";

/** Where a stored invocation is: running, or its terminal result status (or `lost`). */
export type InvocationPhase = "running" | ToolResult["status"] | "lost";

/** What a subscriber of an invocation's events is told. */
export interface EventSubscriber {
  /** A new event (in sequence order). */
  event(record: ToolEventRecord): void;
  /** The invocation ended (terminal result known, or the store dropped it). */
  end(): void;
}

/** What a watcher of the whole store is told: every invocation's life, of every caller. */
export type StoreChange =
  | { readonly kind: "created" | "ended" | "forgotten"; readonly entry: StoredInvocation }
  | {
    readonly kind: "event";
    readonly entry: StoredInvocation;
    readonly record: ToolEventRecord;
  };

/** The bounds of an {@linkcode InvocationStore}. */
export interface StoreLimits {
  /** How many invocations are kept (running and retained). */
  readonly capacity: number;
  /** How many of its last events one invocation keeps for replay. */
  readonly maxEventsPerInvocation: number;
  /** How long a finished invocation is kept after its terminal result, in milliseconds. */
  readonly retentionMs: number;
  /** How many event subscribers may be attached at once, over every invocation. */
  readonly maxSubscribers: number;
}

/** One invocation an HTTP caller started. */
export class StoredInvocation {
  readonly #store: InvocationStore;
  /** The kept events: `#events[#head..]`, at most `maxEventsPerInvocation`. */
  #events: ToolEventRecord[] = [];
  #head = 0;
  #subscribers = new Set<EventSubscriber>();
  #expiry: LongTimeout | undefined;
  /** The terminal result, once known. */
  result: ToolResult | undefined;
  /** Why the result could not be learned (phase `lost`). */
  failure: unknown;
  /** The last event's sequence, or -1. */
  lastSequence = -1;
  /** The last event's type, if any. */
  lastEventType: string | undefined;
  /** When the invocation ended (monotonic ms), if it did. */
  endedAtMs: number | undefined;

  constructor(
    store: InvocationStore,
    readonly handle: ToolInvocation,
    readonly callerId: string,
    readonly endpointId: string,
    readonly operation: string,
    readonly semantics: "action" | "session",
    readonly createdAtMs: number,
  ) {
    this.#store = store;
  }

  /** The invocation id (the execution key's). */
  get id(): string {
    return this.handle.key.invocationId;
  }

  /** The phase now. */
  get phase(): InvocationPhase {
    if (this.result !== undefined) return this.result.status;
    return this.endedAtMs === undefined ? "running" : "lost";
  }

  /** Whether the invocation ended (result known or lost). */
  get ended(): boolean {
    return this.endedAtMs !== undefined;
  }

  /** The sequence of the oldest event kept (the replay window starts there). */
  get firstKeptSequence(): number {
    return this.#head < this.#events.length
      ? this.#events[this.#head].sequence
      : this.lastSequence + 1;
  }

  /** The kept events after `sequence` (all kept events for -1). */
  eventsAfter(sequence: number): ToolEventRecord[] {
    const out: ToolEventRecord[] = [];
    for (let i = this.#head; i < this.#events.length; i++) {
      if (this.#events[i].sequence > sequence) out.push(this.#events[i]);
    }
    return out;
  }

  /** Attached event subscribers. */
  get subscriberCount(): number {
    return this.#subscribers.size;
  }

  /** Attaches `subscriber`; `false` when the store is at `maxSubscribers`. */
  subscribe(subscriber: EventSubscriber): boolean {
    if (!this.#store.admitSubscriber()) return false;
    this.#subscribers.add(subscriber);
    return true;
  }

  /** Detaches `subscriber` (idempotent). */
  unsubscribe(subscriber: EventSubscriber): void {
    if (this.#subscribers.delete(subscriber)) this.#store.releaseSubscriber();
  }

  /** Keeps `record` (dropping the oldest beyond the bound) and hands it to every subscriber. */
  push(record: ToolEventRecord): void {
    this.#events.push(record);
    if (this.#events.length - this.#head > this.#store.limits.maxEventsPerInvocation) {
      this.#head += 1;
      // Compact once the dropped prefix is as long as what is kept.
      if (this.#head * 2 >= this.#events.length) {
        this.#events = this.#events.slice(this.#head);
        this.#head = 0;
      }
    }
    this.lastSequence = record.sequence;
    this.lastEventType = record.event.type;
    for (const subscriber of [...this.#subscribers]) subscriber.event(record);
    this.#store.notify({ kind: "event", entry: this, record });
  }

  /** Ends the invocation: subscribers are told, and it is forgotten after `retentionMs`. */
  finish(nowMs: number, result: ToolResult | undefined, failure?: unknown): void {
    if (this.ended) return;
    this.result = result;
    this.failure = failure;
    this.endedAtMs = nowMs;
    this.#endSubscribers();
    this.#store.notify({ kind: "ended", entry: this });
    this.#expiry = setLongTimeout(() => this.#store.remove(this), this.#store.limits.retentionMs, {
      unref: true,
    });
  }

  /** Stops the retention timer and ends every subscriber (the store forgets the invocation). */
  dispose(): void {
    this.#expiry?.clear();
    this.#expiry = undefined;
    this.#endSubscribers();
  }

  #endSubscribers(): void {
    for (const subscriber of [...this.#subscribers]) {
      this.unsubscribe(subscriber);
      subscriber.end();
    }
  }
}

/**
 * The invocations of every HTTP caller, by invocation id. `reserve()` takes a slot before the
 * invoke is sent (forgetting the oldest finished invocation when full); `add()` fills it.
 */
export class InvocationStore {
  /** Oldest first, so the oldest finished one is found at once (see OrderedMap). */
  readonly #entries = new OrderedMap<string, StoredInvocation>();
  readonly #watchers = new Set<(change: StoreChange) => void>();
  #reserved = 0;
  #subscribers = 0;

  constructor(readonly limits: StoreLimits) {}

  /** Invocations kept now (running and retained). */
  get size(): number {
    return this.#entries.size;
  }

  /** Slots reserved by invokes not answered yet. */
  get reserved(): number {
    return this.#reserved;
  }

  /** Event subscribers attached now, over every invocation. */
  get subscribers(): number {
    return this.#subscribers;
  }

  /** Running invocations now. */
  get running(): number {
    let running = 0;
    for (const entry of this.#entries.values()) if (!entry.ended) running += 1;
    return running;
  }

  /**
   * Takes a slot for a new invocation; forgets the oldest finished one when the store is full.
   * `false` when every slot is running or reserved (the caller answers 503).
   */
  reserve(): boolean {
    if (this.#entries.size + this.#reserved >= this.limits.capacity) {
      const oldest = this.#entries.oldestWhere((entry) => entry.ended);
      if (oldest === undefined) return false;
      this.remove(this.#entries.get(oldest)!);
    }
    this.#reserved += 1;
    return true;
  }

  /** Gives back a slot `reserve()` took (the invoke failed). */
  release(): void {
    this.#reserved -= 1;
  }

  /** Fills a reserved slot. */
  add(entry: StoredInvocation): void {
    this.#reserved -= 1;
    this.#entries.set(entry.id, entry);
    this.notify({ kind: "created", entry });
  }

  /** The invocation `id` when `callerId` started it; another caller's is not found, alike. */
  get(id: string, callerId: string): StoredInvocation | undefined {
    const entry = this.#entries.get(id);
    return entry !== undefined && entry.callerId === callerId ? entry : undefined;
  }

  /** Whether an invocation id is taken (by any caller). */
  has(id: string): boolean {
    return this.#entries.has(id);
  }

  /** The invocations of `callerId`, oldest first. */
  list(callerId: string): StoredInvocation[] {
    return [...this.#entries.values()].filter((entry) => entry.callerId === callerId);
  }

  /** Every invocation, oldest first. */
  all(): StoredInvocation[] {
    return [...this.#entries.values()];
  }

  /** Forgets `entry` (its subscribers are ended, its timer cleared). */
  remove(entry: StoredInvocation): void {
    const kept = this.#entries.get(entry.id) === entry;
    if (kept) this.#entries.delete(entry.id);
    entry.dispose();
    if (kept) this.notify({ kind: "forgotten", entry });
  }

  /**
   * Calls `watcher` synchronously on every change of every invocation (the status feed filters
   * by caller); returns the function that detaches it.
   */
  watch(watcher: (change: StoreChange) => void): () => void {
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  /** Hands `change` to every watcher. */
  notify(change: StoreChange): void {
    for (const watcher of [...this.#watchers]) watcher(change);
  }

  /** Counts one more subscriber, unless at `maxSubscribers`. */
  admitSubscriber(): boolean {
    if (this.#subscribers >= this.limits.maxSubscribers) return false;
    this.#subscribers += 1;
    return true;
  }

  /** Counts one subscriber less. */
  releaseSubscriber(): void {
    this.#subscribers -= 1;
  }
}

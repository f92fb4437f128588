// The ordered, bounded event stream of one invocation (private to src/client/).
import { withResolvers } from "../_internal/async.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import type { ToolEvent } from "../endpoint/models.ts";

/** One event of an invocation with its sequence number. */
export interface ToolEventRecord {
  /** The event's sequence number within its execution, from 0. */
  readonly sequence: number;
  /** The event. */
  readonly event: ToolEvent;
}

const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set([
  "executor_completed",
  "executor_failed",
  "cancelled",
  "stopped",
]);

/** Whether `event` ends its execution's stream. */
export function isTerminalEvent(event: ToolEvent): boolean {
  return TERMINAL_EVENT_TYPES.has(event.type);
}

/** The lowest key of a non-empty map (a loop: spreading a large map overflows the stack). */
function lowestKey(map: ReadonlyMap<number, unknown>): number {
  let lowest = Infinity;
  for (const key of map.keys()) if (key < lowest) lowest = key;
  return lowest;
}

/** What {@linkcode EventBuffer.push} did with an event. */
export type PushOutcome = "delivered" | "held" | "duplicate" | "ignored";

/** What the buffer tells its invocation. */
export interface EventBufferHost {
  /** A gap was skipped, or a terminal event arrived: the invocation should poll its result. */
  recover(reason: "gap" | "terminal"): void;
}

/**
 * Puts events in sequence order: duplicates (a sequence already delivered or held) are dropped,
 * events after a gap are held up to `reorderWindowMs` (or until `maxBuffered` are held), then the
 * gap is skipped. At most `maxBuffered` delivered events wait for the reader; beyond that the
 * oldest is dropped and counted, so a reader that never reads holds a bounded amount.
 */
export class EventBuffer {
  readonly #host: EventBufferHost;
  readonly #maxBuffered: number;
  readonly #reorderWindowMs: number;
  readonly #held = new Map<number, ToolEvent>();
  /** Delivered events not read yet: `#ready[#head..]` (a head index: `shift()` is O(n)). */
  #ready: ToolEventRecord[] = [];
  #head = 0;
  #next = 0;
  #gapTimer: LongTimeout | undefined;
  #waiter: PromiseWithResolvers<void> | undefined;
  #ended = false;
  #error: { readonly reason: unknown } | undefined;
  /** Delivered events dropped because the reader fell `maxBuffered` behind. */
  dropped = 0;
  /** Duplicate events dropped. */
  duplicates = 0;
  /** Gaps skipped (missing sequence ranges). */
  gaps = 0;
  /** Whether a terminal event arrived (delivered or held). */
  terminalSeen = false;

  constructor(host: EventBufferHost, maxBuffered: number, reorderWindowMs: number) {
    this.#host = host;
    this.#maxBuffered = maxBuffered;
    this.#reorderWindowMs = reorderWindowMs;
  }

  /** Whether the stream ended (terminal event delivered, or {@linkcode end} called). */
  get ended(): boolean {
    return this.#ended;
  }

  /** Takes one event of the stream. */
  push(sequence: number, event: ToolEvent): PushOutcome {
    if (this.#ended) return "ignored";
    if (sequence < this.#next || this.#held.has(sequence)) {
      this.duplicates++;
      return "duplicate";
    }
    if (isTerminalEvent(event) && !this.terminalSeen) {
      this.terminalSeen = true;
      this.#host.recover("terminal");
    }
    if (sequence > this.#next) {
      this.#held.set(sequence, event);
      if (this.#held.size > this.#maxBuffered) this.#skipGap();
      else this.#gapTimer ??= setLongTimeout(() => this.#skipGap(), this.#reorderWindowMs);
      return "held";
    }
    this.#deliver(sequence, event);
    this.#drainHeld();
    return "delivered";
  }

  /** Ends the stream: held events are delivered in order (gaps skipped), then the end. */
  end(error?: { readonly reason: unknown }): void {
    if (this.#ended) return;
    if (this.#held.size > 0) {
      for (const sequence of Array.from(this.#held.keys()).sort((a, b) => a - b)) {
        if (sequence !== this.#next) this.gaps++;
        this.#deliver(sequence, this.#held.get(sequence)!);
        if (this.#ended) break;
      }
      this.#held.clear();
    }
    if (!this.#ended) this.#finish(error);
  }

  /** The next event; `undefined` at the end; throws the stream's error after its events. */
  async next(): Promise<ToolEventRecord | undefined> {
    while (true) {
      if (this.#head < this.#ready.length) return this.#take();
      if (this.#ended) {
        if (this.#error !== undefined) throw this.#error.reason;
        return undefined;
      }
      this.#waiter ??= withResolvers<void>();
      await this.#waiter.promise;
    }
  }

  #deliver(sequence: number, event: ToolEvent): void {
    this.#next = sequence + 1;
    if (this.#ready.length - this.#head >= this.#maxBuffered) {
      this.#take();
      this.dropped++;
    }
    this.#ready.push(Object.freeze({ sequence, event }));
    if (isTerminalEvent(event)) this.#finish(undefined);
    else this.#wake();
  }

  /** Takes the oldest unread event (there is one); compacts once half the array is read. */
  #take(): ToolEventRecord {
    const record = this.#ready[this.#head];
    this.#head++;
    if (this.#head === this.#ready.length) {
      this.#ready = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#ready.length) {
      this.#ready = this.#ready.slice(this.#head);
      this.#head = 0;
    }
    return record;
  }

  #drainHeld(): void {
    while (!this.#ended && this.#held.has(this.#next)) {
      const sequence = this.#next;
      const event = this.#held.get(sequence)!;
      this.#held.delete(sequence);
      this.#deliver(sequence, event);
    }
    if (this.#held.size === 0) this.#clearGapTimer();
  }

  #skipGap(): void {
    this.#clearGapTimer();
    if (this.#ended || this.#held.size === 0) return;
    this.gaps++;
    this.#next = lowestKey(this.#held);
    this.#drainHeld();
    if (this.#held.size > 0 && !this.#ended) {
      this.#gapTimer = setLongTimeout(() => this.#skipGap(), this.#reorderWindowMs);
    }
    this.#host.recover("gap");
  }

  #clearGapTimer(): void {
    this.#gapTimer?.clear();
    this.#gapTimer = undefined;
  }

  #finish(error: { readonly reason: unknown } | undefined): void {
    this.#ended = true;
    this.#error = error;
    this.#held.clear();
    this.#clearGapTimer();
    this.#wake();
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve();
  }
}

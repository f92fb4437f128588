/**
 * Per-operation counters and latency histograms of a handler: a fixed set of numbers per
 * operation, updated in O(1) without allocating, read through an immutable snapshot.
 *
 * @module
 */

/** Histogram buckets: bucket 0 holds latencies under 1 µs, bucket i those in [2^(i-1), 2^i) µs. */
export const LATENCY_BUCKETS = 32;

/** The counters of one operation, mutable inside the handler only. */
export class OperationMeter {
  admitted = 0;
  rejected = 0;
  succeeded = 0;
  failed = 0;
  cancelled = 0;
  stopped = 0;
  unknown = 0;
  /** Latency counts per log2 bucket in microseconds. */
  readonly buckets: Float64Array = new Float64Array(LATENCY_BUCKETS);

  /**
   * Counts one terminal outcome of an execution admitted at `startedMs` (`performance.now()`),
   * and its latency. A status outside the counted ones is ignored.
   */
  finish(status: string, startedMs: number): void {
    switch (status) {
      case "succeeded":
        this.succeeded++;
        break;
      case "failed":
        this.failed++;
        break;
      case "cancelled":
        this.cancelled++;
        break;
      case "stopped":
        this.stopped++;
        break;
      case "unknown":
        this.unknown++;
        break;
      default:
        return;
    }
    const micros = (performance.now() - startedMs) * 1000;
    // 32 - clz32(n) is the bit length of n: 0 -> 0, 1 -> 1, 2..3 -> 2, 4..7 -> 3...
    const bucket = micros < 1 ? 0 : 32 - Math.clz32(Math.min(micros, 0xffffffff));
    this.buckets[bucket < LATENCY_BUCKETS ? bucket : LATENCY_BUCKETS - 1]++;
  }

  /** An immutable copy of the counters. */
  snapshot(): ToolOperationMetrics {
    return Object.freeze({
      admitted: this.admitted,
      rejected: this.rejected,
      succeeded: this.succeeded,
      failed: this.failed,
      cancelled: this.cancelled,
      stopped: this.stopped,
      unknown: this.unknown,
      latency: new ToolLatencyHistogram(Array.from(this.buckets)),
    });
  }
}

/** The counters of one operation at the time of the snapshot. */
export interface ToolOperationMetrics {
  /** Invokes admitted: a Query whose provider was called, an Action or Session execution started. */
  readonly admitted: number;
  /**
   * Invokes answered with a rejection (handler closed, deadline already passed, at capacity,
   * retention full, or the provider's `ToolEndpointError`); duplicates replaying an answer are
   * not counted.
   */
  readonly rejected: number;
  /** Admitted executions that ended `succeeded`. */
  readonly succeeded: number;
  /** Admitted executions that ended `failed` (a Query whose provider threw included). */
  readonly failed: number;
  /** Admitted Action executions that ended `cancelled`. */
  readonly cancelled: number;
  /** Admitted Session executions that ended `stopped`. */
  readonly stopped: number;
  /** Admitted executions whose outcome became `unknown`. */
  readonly unknown: number;
  /** Time from admission to the terminal outcome of each counted execution. */
  readonly latency: ToolLatencyHistogram;
}

/** A snapshot of every operation's counters: see {@linkcode ToolEndpointHandler.metrics}. */
export interface ToolEndpointMetrics {
  /** The counters per declared operation name. */
  readonly operations: Readonly<Record<string, ToolOperationMetrics>>;
}

/**
 * A log2 latency histogram: `counts[i]` executions took less than `upperBoundsMs[i]`
 * milliseconds and at least the previous bound (bucket 0: under 1 µs; each next bound doubles,
 * from 2 µs up; the last bucket also holds everything longer).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolLatencyHistogram } from "@forge/tool/node";
 * const counts = new Array(32).fill(0);
 * counts[11] = 99; // 99 executions between 1.024 and 2.048 ms
 * counts[20] = 1; // one between 0.524 and 1.049 s
 * const histogram = new ToolLatencyHistogram(counts);
 * assertEquals(histogram.count, 100);
 * assertEquals(histogram.percentile(0.5), 2.048);
 * assertEquals(histogram.p99, 2.048);
 * assertEquals(histogram.percentile(1), 1048.576);
 * ```
 */
export class ToolLatencyHistogram {
  /** The exclusive upper bound of each bucket, in milliseconds. */
  static readonly upperBoundsMs: readonly number[] = Object.freeze(
    Array.from({ length: LATENCY_BUCKETS }, (_, i) => 2 ** i / 1000),
  );
  /** Executions per bucket (see {@linkcode ToolLatencyHistogram.upperBoundsMs}). */
  readonly counts: readonly number[];
  /** Executions counted. */
  readonly count: number;

  /** Wraps `LATENCY_BUCKETS` (32) bucket counts. */
  constructor(counts: readonly number[]) {
    if (!Array.isArray(counts) || counts.length !== LATENCY_BUCKETS) {
      throw new RangeError(
        `Cannot create the histogram as 'counts' must be an array of ${LATENCY_BUCKETS} numbers: ` +
          `current value is ${String(counts)}`,
      );
    }
    this.counts = Object.freeze([...counts]);
    this.count = counts.reduce((sum, n) => sum + n, 0);
    Object.freeze(this);
  }

  /** The exclusive upper bound of each bucket, in milliseconds (the same for every histogram). */
  get upperBoundsMs(): readonly number[] {
    return ToolLatencyHistogram.upperBoundsMs;
  }

  /**
   * The upper bound, in milliseconds, of the bucket holding the `q` quantile (`0 < q <= 1`): at
   * least a fraction `q` of the executions took less. `undefined` when nothing was counted.
   */
  percentile(q: number): number | undefined {
    if (!(q > 0 && q <= 1)) {
      throw new RangeError(
        `Cannot read a percentile as 'q' must be in (0, 1]: current value is ${String(q)}`,
      );
    }
    if (this.count === 0) return undefined;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (let i = 0; i < LATENCY_BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) return ToolLatencyHistogram.upperBoundsMs[i];
    }
    return ToolLatencyHistogram.upperBoundsMs[LATENCY_BUCKETS - 1];
  }

  /** The median's bucket bound in milliseconds (`percentile(0.5)`). */
  get p50(): number | undefined {
    return this.percentile(0.5);
  }

  /** The 99th percentile's bucket bound in milliseconds (`percentile(0.99)`). */
  get p99(): number | undefined {
    return this.percentile(0.99);
  }
}

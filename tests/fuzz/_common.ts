// The fuzz harness's shared machinery: budgets, the property runner with its per-input time
// bound and per-batch memory check, counterexample records, and regression files.
//
// A target is a fast-check arbitrary plus a `check` that throws on an invariant violation. The
// runner feeds it `runs` inputs in batches (each batch its own fast-check run with a seed derived
// from the budget's), times every input, and after each batch forces a garbage collection (when
// `gc` is exposed: `--v8-flags=--expose-gc`) and compares the heap with the baseline taken after
// the first batch. A failure is shrunk by fast-check and returned as a counterexample holding the
// seed, the replay path and the input itself (JSON with tagged bytes), which `saveRegression`
// writes under tests/fixtures/fuzz_regressions/ for tests/fuzz_test.ts to replay on every run.
import fc from "fast-check";
import { hex, unhex } from "../_helpers.ts";

/** How much to fuzz: inputs per target, the base seed, and an optional wall-clock cap. */
export interface Budget {
  /** Inputs (or schedules) per target, before the target's weight is applied. */
  readonly runs: number;
  /** The base seed; every batch derives its own. */
  readonly seed: number;
  /**
   * Stop feeding a target new inputs after this many milliseconds: the inputs not reached are
   * skipped, which is a success, not a failure. An input already running when the cap passes
   * runs to its end (and is checked): it is never abandoned in the background, so a run may
   * overshoot the cap by one input.
   */
  readonly timeLimitMs?: number;
  /** Inputs per batch (the heap is checked between batches), overriding the targets' own. */
  readonly batchSize?: number;
  /**
   * Whether an input slower than its time bound is a failure (`"enforce"`, the long runs of
   * `deno task fuzz` on a quiet machine) or only reported as the slowest input (`"report"`: the
   * test suite, where a shared, loaded machine makes any wall-clock threshold flaky).
   *
   * @default {"enforce"}
   */
  readonly timeBounds?: "enforce" | "report";
}

/** A counterexample: enough to replay it from the input alone or from fast-check's seed/path. */
export interface Counterexample {
  readonly target: string;
  readonly seed: number;
  readonly path: string | null;
  readonly error: string;
  /** The input, as tagged JSON (see {@linkcode toJsonable}). */
  readonly input: unknown;
}

/** What one target run did. */
export interface TargetReport {
  readonly target: string;
  /** Inputs (or schedules) fed to the target, not counting shrinking. */
  inputs: number;
  /** Batches run. */
  batches: number;
  /** The slowest input, in milliseconds. */
  slowestMs: number;
  /** The heap growth over the baseline after the last batch, in bytes; `null` without `gc`. */
  heapGrowth: number | null;
  /** Extra counters a target reports (schedules steps, outcomes seen, ...). */
  readonly counters: Record<string, number>;
  /** Counterexamples found (at most one per batch; a failing target stops at the first). */
  readonly failures: Counterexample[];
}

/** A fuzz target: an arbitrary and the invariant check of one input. */
export interface FuzzTarget<T> {
  /** Stable name (used in reports and regression file names). */
  readonly name: string;
  /** The inputs. */
  arbitrary(): fc.Arbitrary<T>;
  /** Throws when an invariant does not hold for `input`; may be async. */
  check(input: T, counters: Record<string, number>): void | Promise<void>;
  /** Whether `check` returns a promise (uses fc.asyncProperty). */
  readonly async?: boolean;
  /** Inputs per batch (memory is checked between batches; default 200). */
  readonly batchSize?: number;
  /** The per-input time bound in milliseconds (default {@linkcode INPUT_TIME_BOUND_MS}). */
  readonly timeBoundMs?: number;
  /**
   * The input's size in bytes, when it can be large: the time bound grows by
   * {@linkcode TIME_PER_MIB_MS} per MiB (linear work on megabytes is not a hang).
   */
  inputBytes?(input: T): number;
  /** Converts a stored (tagged JSON) input back; default {@linkcode fromJsonable}. */
  revive?(json: unknown): T;
}

/** A target of any input type (for lists of targets). */
// deno-lint-ignore no-explicit-any
export type AnyTarget = FuzzTarget<any>;

/** Each input must be handled within this many milliseconds (generous: the machine is shared). */
export const INPUT_TIME_BOUND_MS = 250;
/** Extra time allowed per MiB of input (see {@linkcode FuzzTarget.inputBytes}). */
export const TIME_PER_MIB_MS = 500;
/** The heap may stay this far above its baseline after a forced collection. */
export const HEAP_TOLERANCE_BYTES = 24 * 1024 * 1024;

/** Raised when one input took longer than the bound three times in a row. */
export class TimeBoundError extends Error {
  override name = "TimeBoundError";
}

/** Raised when the heap did not return to its baseline after a batch. */
export class MemoryBoundError extends Error {
  override name = "MemoryBoundError";
}

// ---------------------------------------------------------------------------------------------
// Tagged JSON: bytes, bigints and undefined survive a round trip through a regression file.

/** A JSON-safe copy of a fuzz input: `Uint8Array` → `{"$bytes": hex}`, bigint → `{"$bigint"}`. */
export function toJsonable(value: unknown): unknown {
  if (value instanceof Uint8Array) return { $bytes: hex(value) };
  if (typeof value === "bigint") return { $bigint: value.toString() };
  if (value === undefined) return { $undefined: true };
  if (typeof value === "number" && !Number.isFinite(value)) return { $number: String(value) };
  if (Object.is(value, -0)) return { $number: "-0" };
  if (Array.isArray(value)) return value.map(toJsonable);
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(value)) {
      Object.defineProperty(out, key, {
        value: toJsonable(member),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** The inverse of {@linkcode toJsonable}. */
export function fromJsonable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(fromJsonable);
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.length === 1) {
      if (typeof record.$bytes === "string") return unhex(record.$bytes);
      if (typeof record.$bigint === "string") return BigInt(record.$bigint);
      if (record.$undefined === true) return undefined;
      if (typeof record.$number === "string") {
        return record.$number === "-0" ? -0 : Number(record.$number);
      }
    }
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      Object.defineProperty(out, key, {
        value: fromJsonable(record[key]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Memory

type GcFunction = () => void;

/** The exposed `gc` (`--v8-flags=--expose-gc`), or `undefined`. */
export function exposedGc(): GcFunction | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === "function" ? gc as GcFunction : undefined;
}

/** Heap plus external (ArrayBuffer) bytes after two forced collections; `null` without gc. */
export async function settledHeap(): Promise<number | null> {
  const gc = exposedGc();
  if (gc === undefined) return null;
  // Let finished timers and promise reactions release what they hold first.
  await new Promise((resolve) => setTimeout(resolve, 0));
  gc();
  gc();
  const usage = Deno.memoryUsage();
  return usage.heapUsed + usage.external;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause === undefined ? "" : ` (cause: ${describe(error.cause)})`;
    return `${error.name}: ${error.message}${cause}`;
  }
  // A bare `null` or `"x"` in a report reads like a missing error: say what was thrown.
  if (error === null || typeof error !== "object") {
    return `non-Error thrown: ${typeof error === "string" ? JSON.stringify(error) : String(error)}`;
  }
  return `non-Error thrown: ${String(error)}`;
}

/** The message of an error, with its name and cause, for reports. */
export { describe as describeError };

// ---------------------------------------------------------------------------------------------
// The runner

function batchSeed(seed: number, batch: number): number {
  // A 32-bit mix, so neighbouring base seeds do not share batch seeds.
  let x = (seed ^ Math.imul(batch + 1, 0x9e3779b1)) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) | 0;
}

/**
 * Wraps `check` with the time bound: an input slower than the bound is retried twice, and fails
 * only when it is slow every time (a shared machine has hiccups; a hang does not go away).
 */
function timed<T>(
  target: FuzzTarget<T>,
  counters: Record<string, number>,
  report: TargetReport,
  timeBounds: "enforce" | "report",
): (input: T) => void | Promise<void> {
  if (timeBounds === "report") {
    const note = (start: number) => {
      const elapsed = performance.now() - start;
      if (elapsed > report.slowestMs) report.slowestMs = elapsed;
    };
    return target.async
      ? async (input: T) => {
        const start = performance.now();
        await target.check(input, counters);
        note(start);
      }
      : (input: T) => {
        const start = performance.now();
        target.check(input, counters) as void;
        note(start);
      };
  }
  const base = target.timeBoundMs ?? INPUT_TIME_BOUND_MS;
  const boundOf = (input: T) =>
    base + (target.inputBytes ? (target.inputBytes(input) / 1048576) * TIME_PER_MIB_MS : 0);
  const note = (elapsed: number) => {
    if (elapsed > report.slowestMs) report.slowestMs = elapsed;
  };
  if (target.async) {
    return async (input: T) => {
      const bound = boundOf(input);
      let best = Infinity;
      for (let attempt = 0; attempt < 3; attempt++) {
        const start = performance.now();
        await target.check(input, counters);
        const elapsed = performance.now() - start;
        best = Math.min(best, elapsed);
        if (best <= bound) break;
      }
      note(best);
      if (best > bound) {
        throw new TimeBoundError(`input took ${best.toFixed(1)} ms (bound ${bound} ms)`);
      }
    };
  }
  return (input: T) => {
    const bound = boundOf(input);
    let best = Infinity;
    for (let attempt = 0; attempt < 3; attempt++) {
      const start = performance.now();
      target.check(input, counters) as void;
      const elapsed = performance.now() - start;
      best = Math.min(best, elapsed);
      if (best <= bound) break;
    }
    note(best);
    if (best > bound) {
      throw new TimeBoundError(`input took ${best.toFixed(1)} ms (bound ${bound} ms)`);
    }
  };
}

/**
 * Runs one target under `budget` (the weight already applied to `budget.runs`). `baselines`
 * keeps each target's heap baseline across calls (a long run's rounds), so slow growth over many
 * rounds is caught too.
 */
export async function runTarget<T>(
  target: FuzzTarget<T>,
  budget: Budget,
  baselines?: Map<string, number>,
): Promise<TargetReport> {
  const counters: Record<string, number> = {};
  const report: TargetReport = {
    target: target.name,
    inputs: 0,
    batches: 0,
    slowestMs: 0,
    heapGrowth: null,
    counters,
    failures: [],
  };
  const runs = Math.max(1, Math.floor(budget.runs));
  const batchSize = Math.max(1, budget.batchSize ?? target.batchSize ?? 200);
  const deadline = budget.timeLimitMs === undefined
    ? Infinity
    : performance.now() + budget.timeLimitMs;
  const timedCheck = timed(target, counters, report, budget.timeBounds ?? "enforce");
  // The time cap is checked before each input, never raced against a running one (fast-check's
  // interruptAfterTimeLimit abandons the running input to the background, and reports a batch
  // it interrupted before any input passed as failed, with no error and no counterexample).
  const predicate = (input: T) => {
    if (performance.now() >= deadline) throw new fc.PreconditionFailure(true);
    return timedCheck(input);
  };
  const arbitrary = target.arbitrary();
  let baseline: number | null = baselines?.get(target.name) ?? null;
  for (let done = 0, batch = 0; done < runs; batch++) {
    const remaining = deadline - performance.now();
    if (remaining <= 0) break;
    const numRuns = Math.min(batchSize, runs - done);
    const seed = batchSeed(budget.seed, batch);
    const property = target.async
      ? fc.asyncProperty(arbitrary, predicate as (input: T) => Promise<void>)
      : fc.property(arbitrary, predicate as (input: T) => void);
    const details = await fc.check(property as fc.IAsyncProperty<[T]>, { numRuns, seed });
    report.batches++;
    report.inputs += details.numRuns;
    done += numRuns;
    const failure = counterexampleOf(target.name, details);
    if (failure !== null) {
      report.failures.push(failure);
      break;
    }
    if (details.interrupted) break;
    const heap = await settledHeap();
    if (heap === null) continue;
    if (baseline === null) {
      baseline = heap; // after the first batch: caches and compiled code are warm
      baselines?.set(target.name, heap);
      report.heapGrowth = 0;
      continue;
    }
    report.heapGrowth = heap - baseline;
    if (heap - baseline > HEAP_TOLERANCE_BYTES) {
      report.failures.push({
        target: target.name,
        seed,
        path: null,
        error: new MemoryBoundError(
          `heap ${mib(heap)} did not return to its baseline ${mib(baseline)} after batch ${batch}`,
        ).message,
        input: null,
      });
      break;
    }
  }
  return report;
}

/** The parts of fast-check's run details {@linkcode counterexampleOf} reads. */
export type CheckDetails = Pick<
  fc.RunDetails<[unknown]>,
  | "failed"
  | "interrupted"
  | "numRuns"
  | "numSkips"
  | "seed"
  | "counterexample"
  | "counterexamplePath"
  | "errorInstance"
>;

/**
 * The counterexample of one fast-check batch, or `null` when the batch holds none. fast-check
 * also reports `failed` without a counterexample: when a run was interrupted before any input
 * passed (the time cap: inputs not reached are skipped, not failed, so this is no failure), and
 * when more inputs were skipped than `maxSkipsPerRun` allows (a harness fault, reported as such;
 * no target uses pre-conditions).
 */
export function counterexampleOf(target: string, details: CheckDetails): Counterexample | null {
  if (!details.failed) return null;
  if (details.counterexample === null) {
    if (details.interrupted) return null;
    return {
      target,
      seed: details.seed,
      path: null,
      error: `fast-check failed the batch without a counterexample: ${details.numRuns} input(s) ` +
        `passed, ${details.numSkips} skipped (more than maxSkipsPerRun allows?)`,
      input: null,
    };
  }
  return {
    target,
    seed: details.seed,
    path: details.counterexamplePath,
    error: describe(details.errorInstance),
    input: toJsonable(details.counterexample[0]),
  };
}

function mib(bytes: number): string {
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/**
 * Replays one stored input through a target's check; its time is held to the bound only with
 * `timeBounds: "enforce"` (see {@linkcode Budget.timeBounds}).
 */
export async function replay<T>(
  target: FuzzTarget<T>,
  json: unknown,
  timeBounds: "enforce" | "report" = "report",
): Promise<void> {
  const input = target.revive ? target.revive(json) : fromJsonable(json) as T;
  const report: TargetReport = {
    target: target.name,
    inputs: 0,
    batches: 0,
    slowestMs: 0,
    heapGrowth: null,
    counters: {},
    failures: [],
  };
  await timed(target, report.counters, report, timeBounds)(input);
}

// ---------------------------------------------------------------------------------------------
// Regression files

/** Where failing inputs are saved, and replayed from. */
export const REGRESSION_DIR = new URL("../fixtures/fuzz_regressions/", import.meta.url);

/** Writes a counterexample as `<target>-<seed>-<n>.json`; returns the file's path. */
export async function saveRegression(example: Counterexample): Promise<string> {
  await Deno.mkdir(REGRESSION_DIR, { recursive: true });
  const seed = (example.seed >>> 0).toString(16).padStart(8, "0");
  for (let n = 0;; n++) {
    const url = new URL(`${example.target}-${seed}-${n}.json`, REGRESSION_DIR);
    try {
      await Deno.writeTextFile(url, JSON.stringify(example, null, 2) + "\n", { createNew: true });
      return url.pathname;
    } catch (error) {
      if (error instanceof Deno.errors.AlreadyExists) continue;
      throw error;
    }
  }
}

/** Every stored counterexample, with its file name. */
export async function loadRegressions(): Promise<{ file: string; example: Counterexample }[]> {
  const out: { file: string; example: Counterexample }[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(REGRESSION_DIR)];
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return out;
    throw error;
  }
  for (const entry of entries.sort((a, b) => a.name < b.name ? -1 : 1)) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    const text = await Deno.readTextFile(new URL(entry.name, REGRESSION_DIR));
    out.push({ file: entry.name, example: JSON.parse(text) as Counterexample });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Small utilities shared by the targets

/** Whether `promise` settled within a few macrotask turns. */
export async function settledSoon(promise: Promise<unknown>, turns = 3): Promise<boolean> {
  let done = false;
  promise.then(() => (done = true), () => (done = true));
  for (let i = 0; i < turns && !done; i++) await new Promise((r) => setTimeout(r, 0));
  return done;
}

/** Throws an `Error` with `message` when `condition` is false (an invariant violation). */
export function invariant(condition: unknown, message: string | (() => string)): asserts condition {
  if (!condition) throw new Error(typeof message === "string" ? message : message());
}

/** One macrotask turn. */
export function tick(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

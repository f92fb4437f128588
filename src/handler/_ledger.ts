/**
 * The execution ledger of a handler: one record per Action or Session execution it admitted or
 * observed, its explicit phase, the admission permits of each operation, the least-recently-used
 * retention bound, and the status/result transition rules.
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  isTerminalPhase,
  ToolError,
  type ToolExecutionKey,
  ToolExecutionStatus,
  ToolResult,
  validateExecutionResult,
} from "../endpoint/models.ts";
import type { InvokeResponse } from "../wire/execution_payloads.ts";
import { deepEqual } from "../_internal/json.ts";
import type { Resolvers } from "../_internal/async.ts";
import type { ExecutionEmitter } from "./_emitter.ts";
import type { DeadlineTimer } from "./_abort.ts";
import { OperationMeter } from "./_metrics.ts";
import { ExecutionKeyMap } from "../_internal/execution_map.ts";
import { type EvictionLinks, EvictionQueue, NOT_QUEUED } from "./_eviction.ts";
import { endInvocationSpan, type ToolSpan } from "../endpoint/trace.ts";

/**
 * Where an execution record stands:
 *
 * - `observed`: created by a status or result read for a key no invoke admitted here; no invoke
 *   outcome, so an invoke with its key is refused as already observed.
 * - `starting`: admitted by an invoke whose `start()` is pending; duplicates wait on `ready`. A
 *   terminal result may already be established (a terminal event or read during `start()`): the
 *   start's settlement then answers with it.
 * - `accepted`: `start()` accepted, no terminal result yet: the execution is running.
 * - `rejected`: `start()` rejected before acceptance; the rejection is the replayed outcome.
 * - `terminal`: a terminal result is established (immutable) and the invoke outcome is settled.
 *
 * Every phase but `starting` has its invoke outcome settled (`observed` has none).
 */
export type ExecutionPhase = "observed" | "starting" | "accepted" | "rejected" | "terminal";

/** One Action/Session execution known to the handler (an admitted invoke or an observation). */
export interface ExecutionRecord extends EvictionLinks {
  readonly key: ToolExecutionKey;
  readonly operation: string;
  /** True when an invoke admitted the record (false for an observation). */
  readonly invoked: boolean;
  /** The `request_id` of the invoke that admitted the execution (invoked records only). */
  readonly admittedBy: string | undefined;
  phase: ExecutionPhase;
  /** True while the record holds one of its operation's admission permits. */
  permitHeld: boolean;
  /** The invoke outcome replayed to duplicates (settled in every phase but `starting`). */
  outcome: InvokeResponse | undefined;
  /**
   * Resolved when the outcome settles: made by the first duplicate that finds the record
   * `starting` (most executions never have one), resolved by {@linkcode ExecutionLedger.settle}.
   */
  ready: Resolvers<void> | undefined;
  status: ToolExecutionStatus | undefined;
  result: ToolResult | undefined;
  /** The execution's emitter, from its start until its event progression ended. */
  emitter: ExecutionEmitter | undefined;
  readonly abort: AbortController | undefined;
  deadlineTimer: DeadlineTimer | undefined;
  /** Removes the execution's handler-close listener (set while the execution is linked). */
  unlinkLifetime: (() => void) | undefined;
  /** `performance.now()` at admission (invoked records; 0 for observations), for the latency. */
  readonly admittedAt: number;
  /** The invocation's span while it runs (with a tracer), ended when its outcome is established. */
  span: ToolSpan | undefined;
  /** True once the record may be evicted: no permit held, not starting (ledger-private). */
  evictable: boolean;
}

/** The shape of the `unknown` errors the handler converges executions with. */
export interface UnknownErrorShape {
  readonly code: string;
  readonly message: string;
  readonly retryable: false;
}

/** The conflict of a key already bound to another operation. */
export function executionConflict(): ToolProtocolError {
  return new ToolProtocolError(
    ToolErrorCodes.EXECUTION_CONFLICT,
    "execution key is already bound to a different operation",
    "operation",
  );
}

/** The retryable rejection of an invoke while its operation runs `max_concurrency` executions. */
export function atCapacity(operation: string): ToolError {
  return new ToolError({
    code: ToolErrorCodes.ENDPOINT_CAPACITY,
    message: `operation '${operation}' is at max_concurrency`,
    retryable: true,
  });
}

/** Records bounded by `maxRetained`, with the admission permits of every Action/Session operation. */
export class ExecutionLedger {
  /** The retained records (see ExecutionKeyMap: looked up by a request's fresh key, no id built). */
  readonly #records = new ExecutionKeyMap<ExecutionRecord>();
  readonly #permits = new Map<string, number>();
  readonly #meters = new Map<string, OperationMeter>();
  readonly #maxRetained: number;
  readonly #permitsChanged: () => void;
  /** The last recency stamp given. */
  #clock = 0;
  /** The evictable records, least recently used first. */
  readonly #evictionOrder = new EvictionQueue<ExecutionRecord>();

  /**
   * A ledger of at most `maxRetained` records, with a permit count for each of `operations`;
   * `permitsChanged` is called after a permit was taken or released.
   */
  constructor(operations: Iterable<string>, maxRetained: number, permitsChanged: () => void) {
    for (const operation of operations) {
      this.#permits.set(operation, 0);
      this.#meters.set(operation, new OperationMeter());
    }
    this.#maxRetained = maxRetained;
    this.#permitsChanged = permitsChanged;
  }

  /** The retention bound. */
  get maxRetained(): number {
    return this.#maxRetained;
  }

  /** Records retained. */
  get size(): number {
    return this.#records.size;
  }

  /**
   * How many records making room examined in total (the evicted ones included): what an
   * admission costs when the ledger is full, counted so a test can hold it constant.
   */
  get examined(): number {
    return this.#evictionOrder.examined;
  }

  /** Permits in use by operation. */
  get permits(): ReadonlyMap<string, number> {
    return this.#permits;
  }

  /**
   * The counters of `operation`: admissions and capacity rejections are counted here, each
   * invoked execution's terminal outcome once, when its result is first established.
   */
  meter(operation: string): OperationMeter {
    return this.#meters.get(operation)!;
  }

  /** Counts the outcome of an invoked record whose terminal result was just established. */
  #counted(record: ExecutionRecord, result: ToolResult): void {
    if (!record.invoked) return;
    this.#meters.get(record.operation)!.finish(result.status, record.admittedAt);
    endInvocationSpan(record.span, result.status);
    record.span = undefined;
  }

  /**
   * The records, least recently used first: by recency stamp, which every insertion and every
   * use sets from one counter (so the order is the one a `Map` re-inserted on each use would
   * keep). Sorted here, at shutdown and in tests, so that {@linkcode find} need not move the
   * record in the `Map` on every status, result or control request.
   */
  records(): IterableIterator<ExecutionRecord> {
    return [...this.#records.values()].sort((a, b) => a.used - b.used).values();
  }

  /** The record of `key`, if retained (its recency unchanged). */
  get(key: ToolExecutionKey): ExecutionRecord | undefined {
    return this.#records.get(key);
  }

  /**
   * The record of `key` bound to `operation`, marked most recently used; undefined when none is
   * retained, an execution conflict when the key is bound to another operation.
   */
  find(key: ToolExecutionKey, operation: string): ExecutionRecord | undefined {
    const record = this.get(key);
    if (record === undefined) return undefined;
    if (record.operation !== operation) throw executionConflict();
    this.#use(record);
    return record;
  }

  /** Stamps `record` most recently used (an evictable one moves to the eviction list's end). */
  #use(record: ExecutionRecord): void {
    record.used = ++this.#clock;
    this.#evictionOrder.used(record);
  }

  /**
   * Queues `record` for eviction once it became evictable (no permit, not starting). It is
   * retained: a record leaves the ledger only as an evicted one, which was evictable already.
   */
  #becameEvictable(record: ExecutionRecord): void {
    if (record.evictable || record.permitHeld || record.phase === "starting") return;
    record.evictable = true;
    this.#evictionOrder.add(record, record.used === this.#clock);
  }

  /**
   * Admits a new execution of `operation` under `maxConcurrency`: takes a permit and records it
   * in the `starting` phase. Returns the retryable `FORGE_ENDPOINT_CAPACITY` rejection instead
   * when every permit is in use or the ledger is full of records it may not evict.
   */
  admit(
    key: ToolExecutionKey,
    operation: string,
    maxConcurrency: number,
    requestId: string | undefined,
  ): ExecutionRecord | ToolError {
    const inUse = this.#permits.get(operation)!;
    const meter = this.#meters.get(operation)!;
    if (inUse >= maxConcurrency) {
      meter.rejected++;
      return atCapacity(operation);
    }
    if (!this.#makeRoom()) {
      meter.rejected++;
      return new ToolError({
        code: ToolErrorCodes.ENDPOINT_CAPACITY,
        message: "execution retention is full of active records",
        retryable: true,
      });
    }
    const record: ExecutionRecord = {
      key,
      operation,
      invoked: true,
      admittedBy: requestId,
      phase: "starting",
      permitHeld: true,
      outcome: undefined,
      ready: undefined,
      status: undefined,
      result: undefined,
      emitter: undefined,
      abort: new AbortController(),
      deadlineTimer: undefined,
      unlinkLifetime: undefined,
      admittedAt: performance.now(),
      span: undefined,
      used: 0,
      queued: NOT_QUEUED,
      older: undefined,
      newer: undefined,
      evictable: false,
    };
    meter.admitted++;
    this.#records.set(record);
    this.#use(record);
    this.#permits.set(operation, inUse + 1);
    this.#permitsChanged();
    return record;
  }

  /** Settles the invoke outcome of `record` (waking duplicates) and moves it to `phase`. */
  settle(
    record: ExecutionRecord,
    outcome: InvokeResponse,
    phase: "accepted" | "rejected" | "terminal",
  ): void {
    record.outcome = outcome;
    record.phase = phase;
    record.ready?.resolve();
    this.#becameEvictable(record);
  }

  /** Releases the record's permit, if it holds one. */
  releasePermit(record: ExecutionRecord): void {
    if (!record.permitHeld) return;
    record.permitHeld = false;
    const count = this.#permits.get(record.operation)! - 1;
    if (count < 0) throw new Error("Execution admission permit count became negative");
    this.#permits.set(record.operation, count);
    this.#becameEvictable(record);
    this.#permitsChanged();
  }

  /** Ends the record's links: its deadline timer and its handler-close listener. */
  unlink(record: ExecutionRecord): void {
    record.unlinkLifetime?.();
    record.unlinkLifetime = undefined;
    record.deadlineTimer?.clear();
    record.deadlineTimer = undefined;
  }

  /**
   * Establishes the `unknown` terminal state the handler decided itself (no terminal result may
   * exist yet): status and result become `unknown` with `error`, the permit is released and the
   * links end. Returns the result; the caller settles the outcome.
   */
  convergeUnknown(record: ExecutionRecord, error: UnknownErrorShape): ToolResult {
    const toolError = new ToolError(error);
    const result = new ToolResult({ status: "unknown", error: toolError });
    record.result = result;
    this.#counted(record, result);
    record.status = new ToolExecutionStatus({ phase: "unknown", error: toolError });
    this.releasePermit(record);
    this.unlink(record);
    return result;
  }

  /** Stores a non-terminal status the provider reported, after the transition check. */
  recordStatus(key: ToolExecutionKey, operation: string, status: ToolExecutionStatus): void {
    const record = this.#observationRecord(key, operation);
    checkTransition(record.status, status);
    record.status = status;
  }

  /**
   * Stores the terminal status and result the provider reported, after the consistency and
   * transition checks: the permit is released, the links end, an observation settles with the
   * result, a running acceptance becomes terminal, and with `closeEmitter` the emitter closes.
   */
  recordTerminal(
    key: ToolExecutionKey,
    operation: string,
    status: ToolExecutionStatus,
    result: ToolResult,
    closeEmitter: boolean,
  ): void {
    try {
      validateExecutionResult(status, result);
    } catch (error) {
      if (error instanceof RangeError || error instanceof TypeError) {
        throw new ToolProtocolError(ToolErrorCodes.ENDPOINT_TERMINAL_MISMATCH, error.message);
      }
      throw error;
    }
    const record = this.#observationRecord(key, operation);
    checkTransition(record.status, status);
    if (record.result !== undefined && !deepEqual(record.result, result)) {
      throw new ToolProtocolError(
        ToolErrorCodes.ENDPOINT_TERMINAL_CHANGED,
        "provider returned a different immutable terminal result",
      );
    }
    record.status = status;
    if (record.result === undefined) this.#counted(record, result);
    record.result = result;
    if (record.phase === "observed") this.settle(record, result, "terminal");
    else if (record.phase === "accepted") record.phase = "terminal";
    this.releasePermit(record);
    this.unlink(record);
    if (closeEmitter) record.emitter?.closeTerminal();
  }

  /**
   * Lets go of `emitter`, whose event progression ended: it has nothing left to do for `record`,
   * which is retained for replay long after (`maxRetained` of them), and it would keep its host's
   * closures and the execution's context alive with it (1,477 bytes a retained Action execution
   * with it, 803 without, and every record promoted with less to copy).
   */
  progressionEnded(record: ExecutionRecord, emitter: ExecutionEmitter): void {
    if (record.emitter === emitter) record.emitter = undefined;
  }

  /** Evicts least-recently-used evictable records until one more fits; false when none can go. */
  #makeRoom(): boolean {
    while (this.#records.size >= this.#maxRetained) {
      // The first evictable record in recency order, without walking past the running ones.
      const victim = this.#evictionOrder.takeOldest();
      if (victim === undefined) return false;
      this.#records.delete(victim.key);
      this.unlink(victim);
    }
    return true;
  }

  /** The record a status or result observation is stored in (created when missing). */
  #observationRecord(key: ToolExecutionKey, operation: string): ExecutionRecord {
    const existing = this.find(key, operation);
    if (existing !== undefined) return existing;
    if (!this.#makeRoom()) {
      throw new ToolProtocolError(
        ToolErrorCodes.ENDPOINT_RETENTION_FULL,
        "execution retention is full of active records",
      );
    }
    const record: ExecutionRecord = {
      key,
      operation,
      invoked: false,
      admittedBy: undefined,
      phase: "observed",
      permitHeld: false,
      outcome: undefined,
      ready: undefined,
      status: undefined,
      result: undefined,
      emitter: undefined,
      abort: undefined,
      deadlineTimer: undefined,
      unlinkLifetime: undefined,
      admittedAt: 0,
      span: undefined,
      used: 0,
      queued: NOT_QUEUED,
      older: undefined,
      newer: undefined,
      evictable: true,
    };
    this.#records.set(record);
    this.#use(record);
    this.#evictionOrder.add(record, true);
    return record;
  }
}

const FORWARD: Readonly<Record<string, ReadonlySet<string>>> = {
  accepted: new Set(["accepted", "running", "stopping"]),
  running: new Set(["running", "stopping"]),
  stopping: new Set(["stopping"]),
};

/** The lifecycle transition rule between a stored status and a newly observed one. */
function checkTransition(
  previous: ToolExecutionStatus | undefined,
  next: ToolExecutionStatus,
): void {
  if (previous === undefined) return;
  if (isTerminalPhase(previous.phase)) {
    if (!deepEqual(previous, next)) {
      throw new ToolProtocolError(
        ToolErrorCodes.ENDPOINT_TERMINAL_CHANGED,
        "provider returned a different immutable terminal status",
      );
    }
    return;
  }
  if (isTerminalPhase(next.phase) || FORWARD[previous.phase].has(next.phase)) return;
  throw new ToolProtocolError(
    ToolErrorCodes.ENDPOINT_INVALID_TRANSITION,
    `provider status changed from '${previous.phase}' to '${next.phase}'`,
  );
}

/**
 * A handler's state for health reporting: the snapshot, and the listeners told when an admission
 * permit was taken or released.
 *
 * @module
 */
import type { ToolOperationDescriptor } from "../endpoint/models.ts";
import type { ToolEndpointHandler } from "./handler.ts";
import type { ExecutionLedger } from "./_ledger.ts";
import type { ProviderCalls } from "./_calls.ts";
import type { QueryPath } from "./_query.ts";
import type { PendingSet } from "./_abort.ts";

/** A read-only snapshot of a handler's state, for health reporting. */
export interface ToolEndpointHandlerState {
  /** True once {@linkcode ToolEndpointHandler.close} was called. */
  readonly closed: boolean;
  /** Admission permits in use per Action/Session operation (admitted, not yet terminal). */
  readonly permitsInUse: Readonly<Record<string, number>>;
  /** `max_concurrency` per Action/Session operation. */
  readonly maxConcurrency: Readonly<Record<string, number>>;
  /** Query calls in progress per Query operation (at most its `max_concurrency`). */
  readonly activeQueries: Readonly<Record<string, number>>;
  /** Executions in progress: permits in use plus Query calls in progress. */
  readonly activeInvocations: number;
  /** Records in the execution ledger. */
  readonly retainedExecutions: number;
  /** The ledger's bound. */
  readonly maxRetainedExecutions: number;
  /** True when every Action/Session operation has all its permits in use. */
  readonly saturated: boolean;
}

/** The listeners of a handler's `watchState`, told once per microtask turn. */
export class StateWatchers {
  readonly #calls: ProviderCalls;
  readonly #watchers = new Set<() => void>();
  #queued = false;

  /** Listeners whose failures are logged through `calls`. */
  constructor(calls: ProviderCalls) {
    this.#calls = calls;
  }

  /** Subscribes `listener`; returns the unsubscribe. */
  watch(listener: () => void): () => void {
    if (typeof listener !== "function") {
      throw new TypeError(
        `Cannot watch the handler state as 'listener' must be a function: current value is ${
          String(listener)
        }`,
      );
    }
    const entry = () => listener();
    this.#watchers.add(entry);
    return () => void this.#watchers.delete(entry);
  }

  /** Tells every listener, once per microtask turn, outside the handler's own work. */
  changed(): void {
    if (this.#watchers.size === 0 || this.#queued) return;
    this.#queued = true;
    queueMicrotask(() => {
      this.#queued = false;
      for (const watcher of this.#watchers) {
        try {
          watcher();
        } catch (error) {
          this.#calls.log(
            "error",
            "handler.watcher_failed",
            "a watchState listener failed; it stays subscribed",
            { endpointId: this.#calls.endpointId },
            error,
          );
        }
      }
    });
  }
}

/** The state of the handler whose parts these are. */
export function stateSnapshot(
  ledger: ExecutionLedger,
  operations: ReadonlyMap<string, ToolOperationDescriptor>,
  queries: QueryPath,
  calls: ProviderCalls,
): ToolEndpointHandlerState {
  const permitsInUse: Record<string, number> = {};
  const maxConcurrency: Record<string, number> = {};
  let active = 0;
  const permits = ledger.permits;
  let saturated = permits.size > 0;
  for (const [name, count] of permits) {
    permitsInUse[name] = count;
    const maximum = operations.get(name)!.maxConcurrency;
    maxConcurrency[name] = maximum;
    active += count;
    if (count < maximum) saturated = false;
  }
  const activeQueries: Record<string, number> = {};
  for (const [name, count] of queries.active) {
    activeQueries[name] = count;
    active += count;
  }
  return Object.freeze({
    closed: calls.closed,
    permitsInUse: Object.freeze(permitsInUse),
    maxConcurrency: Object.freeze(maxConcurrency),
    activeQueries: Object.freeze(activeQueries),
    activeInvocations: active,
    retainedExecutions: ledger.size,
    maxRetainedExecutions: ledger.maxRetained,
    saturated,
  });
}

/**
 * @internal What a health check reads of a handler: `closed`, `busy` (every descriptor operation
 * has its `max_concurrency` in use: permits for Action/Session, calls in progress for Query) or
 * `ready`.
 */
export type HandlerLoad = "closed" | "busy" | "ready";

/** The parts of a handler its state is read from. */
interface StateParts {
  readonly ledger: ExecutionLedger;
  readonly operations: ReadonlyMap<string, ToolOperationDescriptor>;
  readonly queries: QueryPath;
  readonly calls: ProviderCalls;
  readonly answering: PendingSet;
}

// Each handler's parts, registered by its constructor (see handlerLoad).
const parts = new WeakMap<object, StateParts>();

/** Registers the parts of `handler` (its constructor's call). */
export function registerHandlerState(
  handler: object,
  ledger: ExecutionLedger,
  operations: ReadonlyMap<string, ToolOperationDescriptor>,
  queries: QueryPath,
  calls: ProviderCalls,
  answering: PendingSet,
): void {
  parts.set(handler, { ledger, operations, queries, calls, answering });
}

/**
 * @internal How many of `handler`'s dispatches have not settled yet (the entries close() waits
 * for); `undefined` for an object no handler constructor registered.
 */
export function answersInProgress(handler: ToolEndpointHandler): number | undefined {
  return parts.get(handler)?.answering.size;
}

/**
 * @internal The load of `handler` now, as its `state` snapshot implies it (`closed`; `busy` as
 * `endpointStateOf` decides it), without building the snapshot: a health check runs twice per
 * request, and its two snapshots (four frozen objects each) cost 0.45 µs. `undefined` for an
 * object no handler constructor registered.
 */
export function handlerLoad(handler: ToolEndpointHandler): HandlerLoad | undefined {
  const of = parts.get(handler);
  if (of === undefined) return undefined;
  if (of.calls.closed) return "closed";
  const permits = of.ledger.permits;
  const active = of.queries.active;
  for (const operation of of.operations.values()) {
    const inUse = permits.get(operation.name) ?? active.get(operation.name) ?? 0;
    if (inUse < operation.maxConcurrency) return "ready";
  }
  return "busy";
}

/**
 * The bounded executions table behind the Action and Session definitions: what each execution
 * is doing now, and its terminal result once it has one.
 *
 * @module
 */
import type {
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import { OrderedMap } from "../_internal/ordered_map.ts";

/** One execution a definition started. */
export interface Execution {
  readonly key: ToolExecutionKey;
  /** Aborts the function's signal; the handler's signal is forwarded into it. */
  readonly controller: AbortController;
  /** The current status (the same object until the phase changes). */
  status: ToolExecutionStatus;
  /** The terminal result, once the function settled. */
  result: ToolResult | undefined;
  /** The `available` answer of result(), built once with the result. */
  response: ToolResultResponse | undefined;
  /** True once a cancel (Action) or stop (Session) was accepted. */
  stopRequested: boolean;
}

/**
 * Executions by execution key id. Running executions are always kept (their number is bounded by
 * the handler's admission, `max_concurrency`); at most `maxTerminal` finished ones are kept, the
 * oldest finished one being forgotten first.
 */
export class ExecutionTable {
  readonly #maxTerminal: number;
  readonly #entries = new Map<string, Execution>();
  /** Finished executions' key ids, oldest first (see OrderedMap: a Set used as a queue is slow). */
  readonly #finished = new OrderedMap<string, true>();

  constructor(maxTerminal: number) {
    this.#maxTerminal = maxTerminal;
  }

  /** The number of executions held (running and finished). */
  get size(): number {
    return this.#entries.size;
  }

  get(keyId: string): Execution | undefined {
    return this.#entries.get(keyId);
  }

  add(keyId: string, execution: Execution): void {
    this.#entries.set(keyId, execution);
  }

  /** Records that the execution finished; forgets the oldest finished ones beyond the bound. */
  finish(keyId: string): void {
    if (!this.#finished.has(keyId)) this.#finished.set(keyId, true);
    while (this.#finished.size > this.#maxTerminal) {
      const oldest = this.#finished.oldestWhere(() => true)!;
      this.#finished.delete(oldest);
      this.#entries.delete(oldest);
    }
  }
}

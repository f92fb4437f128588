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
import { ExecutionKeyMap } from "../_internal/execution_map.ts";
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
 * Executions by execution key (see ExecutionKeyMap: a status, result or control call's fresh key
 * is looked up by its own strings, no id built). Running executions are always kept (their number
 * is bounded by the handler's admission, `max_concurrency`); at most `maxTerminal` finished ones
 * are kept, the oldest finished one being forgotten first.
 */
export class ExecutionTable {
  readonly #maxTerminal: number;
  readonly #entries = new ExecutionKeyMap<Execution>();
  /** Finished executions, oldest first (see OrderedMap: a Set used as a queue is slow). */
  readonly #finished = new OrderedMap<Execution, true>();

  constructor(maxTerminal: number) {
    this.#maxTerminal = maxTerminal;
  }

  /** The number of executions held (running and finished). */
  get size(): number {
    return this.#entries.size;
  }

  /** The execution of `key`, if held. */
  get(key: ToolExecutionKey): Execution | undefined {
    return this.#entries.get(key);
  }

  /** Holds `execution` (none of its key is held). */
  add(execution: Execution): void {
    this.#entries.set(execution);
  }

  /** Records that `execution` finished; forgets the oldest finished ones beyond the bound. */
  finish(execution: Execution): void {
    if (!this.#finished.has(execution)) this.#finished.set(execution, true);
    while (this.#finished.size > this.#maxTerminal) {
      const oldest = this.#finished.oldestWhere(() => true)!;
      this.#finished.delete(oldest);
      this.#entries.delete(oldest.key);
    }
  }
}

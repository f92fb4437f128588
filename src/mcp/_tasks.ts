// The task table of one caller: the SDK's TaskStore over Forge invocations, bounded in count and
// in how long a finished task stays.
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { Request, RequestId, Result, Task } from "@modelcontextprotocol/sdk/types.js";
import type {
  CreateTaskOptions,
  TaskStore,
} from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { OrderedMap } from "../_internal/ordered_map.ts";

const TERMINAL: ReadonlySet<Task["status"]> = new Set(["completed", "failed", "cancelled"]);
const PAGE = 100;

interface Entry {
  task: Task;
  result: Result | undefined;
  expiry: LongTimeout | undefined;
  /**
   * Sends cancel/stop with `reason` and waits (bounded) for the terminal result; set by the
   * follower.
   */
  cancel: ((reason: string) => Promise<void>) | undefined;
}

/** Settings of a {@linkcode TaskTable} (checked by the caller). */
export interface TaskTableSettings {
  readonly maxTasks: number;
  readonly retentionMs: number;
  readonly pollIntervalMs: number;
  /** Told every status change (for `notifications/tasks/status`). */
  readonly onStatus: (task: Task) => void;
}

/**
 * One caller's tasks. Ids are random UUIDs; a task of another caller is simply not in the table,
 * so the SDK answers "not found" for it. At most `maxTasks` tasks: a new one evicts the oldest
 * finished task when the table is full, and is refused when every task is still working. A
 * finished task is forgotten `ttl` ms after it finished (`ttl` = the retention, or less when the
 * client asked for less).
 */
export class TaskTable implements TaskStore {
  /** Oldest first, so the oldest finished task is found at once (see OrderedMap). */
  readonly #entries = new OrderedMap<string, Entry>();
  readonly #settings: TaskTableSettings;
  #reserved = 0;

  constructor(settings: TaskTableSettings) {
    this.#settings = settings;
  }

  /** Tasks in the table now (working and finished). */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Makes room for one task before the endpoint is asked to start anything: evicts the oldest
   * finished task if the table is full, or throws when every task is working. Returns a release
   * function for a call that then creates no task.
   */
  reserve(): () => void {
    if (this.#entries.size + this.#reserved >= this.#settings.maxTasks) {
      const oldest = this.#entries.oldestWhere((entry) => TERMINAL.has(entry.task.status));
      if (oldest !== undefined) this.#delete(oldest);
    }
    if (this.#entries.size + this.#reserved >= this.#settings.maxTasks) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `Cannot create a task as ${this.#settings.maxTasks} tasks of this caller are working ` +
          `('maxTasks'); wait for one to finish or cancel one`,
      );
    }
    this.#reserved += 1;
    let released = false;
    return () => {
      if (!released) this.#reserved -= 1;
      released = true;
    };
  }

  createTask(
    taskParams: CreateTaskOptions,
    _requestId: RequestId,
    _request: Request,
    _sessionId?: string,
  ): Promise<Task> {
    const now = new Date().toISOString();
    const asked = taskParams.ttl;
    const ttl = typeof asked === "number" && asked >= 0 && asked < this.#settings.retentionMs
      ? asked
      : this.#settings.retentionMs;
    const task: Task = {
      taskId: crypto.randomUUID(),
      status: "working",
      ttl,
      createdAt: now,
      lastUpdatedAt: now,
      pollInterval: this.#settings.pollIntervalMs,
    };
    this.#entries.set(task.taskId, {
      task,
      result: undefined,
      expiry: undefined,
      cancel: undefined,
    });
    return Promise.resolve({ ...task });
  }

  getTask(taskId: string, _sessionId?: string): Promise<Task | null> {
    const entry = this.#entries.get(taskId);
    return Promise.resolve(entry === undefined ? null : { ...entry.task });
  }

  storeTaskResult(
    taskId: string,
    status: "completed" | "failed",
    result: Result,
    _sessionId?: string,
  ): Promise<void> {
    this.finish(taskId, status, undefined, result);
    return Promise.resolve();
  }

  getTaskResult(taskId: string, _sessionId?: string): Promise<Result> {
    const entry = this.#entries.get(taskId);
    if (entry === undefined) {
      return Promise.reject(new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`));
    }
    if (entry.result === undefined) {
      return Promise.reject(
        new McpError(ErrorCode.InvalidRequest, `Task ${taskId} has no result yet`),
      );
    }
    return Promise.resolve(entry.result);
  }

  /**
   * The SDK calls this for `tasks/cancel` with `"cancelled"`: a task with a cancel hook sends
   * cancel (Action) or stop (Session) and returns once the endpoint's result ended the task (or
   * the wait bound passed, the task still working); other updates apply as given.
   */
  async updateTaskStatus(
    taskId: string,
    status: Task["status"],
    statusMessage?: string,
    _sessionId?: string,
  ): Promise<void> {
    const entry = this.#entries.get(taskId);
    if (entry === undefined || TERMINAL.has(entry.task.status)) return;
    if (status === "cancelled" && entry.cancel !== undefined) {
      await entry.cancel("cancelled through MCP tasks/cancel");
      return;
    }
    if (TERMINAL.has(status)) this.finish(taskId, status, statusMessage, entry.result ?? {});
    else this.update(taskId, status, statusMessage);
  }

  listTasks(cursor?: string, _sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    const start = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(start) || start < 0) {
      return Promise.reject(
        new Error(`invalid cursor: current value is ${JSON.stringify(cursor)}`),
      );
    }
    const all = [...this.#entries.values()].map((entry) => ({ ...entry.task }));
    const tasks = all.slice(start, start + PAGE);
    return Promise.resolve(
      start + PAGE < all.length ? { tasks, nextCursor: String(start + PAGE) } : { tasks },
    );
  }

  /** Sets the hook `tasks/cancel` (and closing the table) runs for `taskId`. */
  setCancel(taskId: string, cancel: (reason: string) => Promise<void>): void {
    const entry = this.#entries.get(taskId);
    if (entry !== undefined) entry.cancel = cancel;
  }

  /** A non-terminal update (`working` with a new `statusMessage`). */
  update(taskId: string, status: Task["status"], statusMessage: string | undefined): void {
    const entry = this.#entries.get(taskId);
    if (entry === undefined || TERMINAL.has(entry.task.status)) return;
    entry.task = this.#next(entry.task, status, statusMessage);
    this.#settings.onStatus({ ...entry.task });
  }

  /** Ends the task with its result and arms its expiry. Later updates are ignored. */
  finish(
    taskId: string,
    status: Task["status"],
    statusMessage: string | undefined,
    result: Result,
  ): void {
    const entry = this.#entries.get(taskId);
    if (entry === undefined || TERMINAL.has(entry.task.status)) return;
    entry.task = this.#next(entry.task, status, statusMessage);
    entry.result = result;
    entry.cancel = undefined;
    const ttl = entry.task.ttl;
    if (ttl !== null) {
      entry.expiry = setLongTimeout(() => this.#delete(taskId), ttl, { unref: true });
    }
    this.#settings.onStatus({ ...entry.task });
  }

  /**
   * Ends every task still working (cancel for an Action, stop for a Session, with `reason`; each
   * hook waits for the result within its bound and never throws), then clears every expiry
   * timer and forgets every task. Once the table is gone nobody can reach a task: one left
   * working would run on at the endpoint.
   */
  async close(reason: string): Promise<void> {
    const working = [...this.#entries.values()].flatMap((entry) =>
      entry.cancel === undefined || TERMINAL.has(entry.task.status) ? [] : [entry.cancel]
    );
    await Promise.all(working.map((cancel) => cancel(reason)));
    for (const id of [...this.#entries.keys()]) this.#delete(id);
  }

  #next(task: Task, status: Task["status"], statusMessage: string | undefined): Task {
    const next: Task = { ...task, status, lastUpdatedAt: new Date().toISOString() };
    if (statusMessage === undefined) delete next.statusMessage;
    else next.statusMessage = statusMessage;
    return next;
  }

  #delete(taskId: string): void {
    this.#entries.get(taskId)?.expiry?.clear();
    this.#entries.delete(taskId);
  }
}

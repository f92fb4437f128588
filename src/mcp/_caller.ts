// One caller of the gateway behind MCP: its own gateway transport (shared by one client per
// endpoint id) and its own task table.
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import type { Task } from "@modelcontextprotocol/sdk/types.js";
import { ToolEndpointClient } from "../client/client.ts";
import type { ToolClientTransport } from "../client/transport.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import type { ToolGateway } from "../gateway/gateway.ts";
import { TaskTable } from "./_tasks.ts";

/** What a caller needs from the options (checked by `createMcpServer`). */
export interface CallerSettings {
  readonly callerId: string;
  readonly maxTasks: number;
  readonly retentionMs: number;
  readonly pollIntervalMs: number;
  readonly timeoutMs: number | undefined;
  /** How long closing waits for a task start still waiting for the endpoint's answer. */
  readonly cancelWaitMs: number;
}

/**
 * One `gateway.connect()` transport fanned out to one client per endpoint id: the gateway
 * delivers a caller's answers and events with their endpoint id, so each goes to its client.
 */
class EndpointMux {
  readonly #base: ToolClientTransport;
  readonly #deliver = new Map<string, (message: ToolEnvelope) => void>();

  constructor(base: ToolClientTransport) {
    this.#base = base;
    base.connect((message) => this.#deliver.get(message.endpointId)?.(message));
  }

  forEndpoint(endpointId: string): ToolClientTransport {
    const base = this.#base;
    return {
      send: (request) => base.send(request),
      connect: (deliver) => void this.#deliver.set(endpointId, deliver),
      resolveInstance: base.resolveInstance === undefined
        ? undefined
        : (id) => base.resolveInstance!(id),
      close: () => void this.#deliver.delete(endpointId),
    };
  }

  close(): void | Promise<void> {
    this.#deliver.clear();
    return this.#base.close?.();
  }
}

/** A caller: clients by endpoint id, the task table, and the servers told of task changes. */
export class McpCaller {
  readonly settings: CallerSettings;
  readonly tasks: TaskTable;
  readonly #mux: EndpointMux;
  readonly #clients = new Map<string, ToolEndpointClient>();
  readonly #listeners = new Set<(task: Task) => void>();
  /** Task starts whose invoke has not settled (see {@linkcode trackStart}). */
  readonly #starting = new Set<Promise<unknown>>();
  #closed = false;

  constructor(gateway: ToolGateway, settings: CallerSettings) {
    this.settings = settings;
    this.#mux = new EndpointMux(gateway.connect());
    this.tasks = new TaskTable({
      maxTasks: settings.maxTasks,
      retentionMs: settings.retentionMs,
      pollIntervalMs: settings.pollIntervalMs,
      onStatus: (task) => {
        for (const listener of this.#listeners) listener(task);
      },
    });
  }

  /** Tells `listener` every task status change; returns the unsubscribe function. */
  onTaskStatus(listener: (task: Task) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /**
   * Tracks a task start until it settles: {@linkcode close} waits for it (at most
   * `cancelWaitMs`) before the clients close, so that a start the endpoint accepts meanwhile
   * can still be ended (the start checks {@linkcode closed} once its invoke answered).
   */
  trackStart<T>(start: Promise<T>): Promise<T> {
    this.#starting.add(start);
    const forget = () => void this.#starting.delete(start);
    start.then(forget, forget);
    return start;
  }

  /** True once {@linkcode close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The client of `endpointId` (one per endpoint, made on first use). */
  client(endpointId: string): ToolEndpointClient {
    if (this.#closed) throw new Error(`the MCP caller '${this.settings.callerId}' is closed`);
    let client = this.#clients.get(endpointId);
    if (client === undefined) {
      client = new ToolEndpointClient({
        transport: this.#mux.forEndpoint(endpointId),
        endpointId,
        callerId: this.settings.callerId,
        timeoutMs: this.settings.timeoutMs,
      });
      this.#clients.set(endpointId, client);
    }
    return client;
  }

  /** Closes every client and the gateway transport, and forgets every task. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#starting.size > 0) {
      let timer: LongTimeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#starting]),
        new Promise<void>((resolve) => timer = setLongTimeout(resolve, this.settings.cancelWaitMs)),
      ]);
      timer?.clear();
    }
    // The clients are still open: the endpoint is told to end what the tasks started.
    await this.tasks.close(`the MCP server of caller '${this.settings.callerId}' closed`);
    await Promise.all([...this.#clients.values()].map((client) => client.close()));
    this.#clients.clear();
    this.#listeners.clear();
    await this.#mux.close();
  }
}

// Stays whole: one event loop; reading, dispatch, the stop race and the graceful shutdown share its state.
/**
 * The Dora node runner: reads events from a {@linkcode DoraTransport}, hands every request input
 * to a request-bytes handler without waiting for it (requests run concurrently), publishes the
 * handler's responses on the response output, and shuts down gracefully on Stop.
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import type { DoraEvent, DoraTransport } from "./transport.ts";
import { logSafely, type ToolLogger, type ToolLogLevel } from "../endpoint/log.ts";
import {
  nodeSettings,
  type ToolEndpointNodeOptions,
  type ToolEndpointNodeStats,
  type ToolEndpointNodeStopReason,
  type ToolEndpointRequestHandler,
} from "./runner_options.ts";

/** What {@linkcode ToolEndpointNode.#drain}'s race returns when shutdown ends the reading. */
const STOPPED = Symbol("stopped");

/** An error for the log: its name, its code when it has one (a protocol error), its message. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === "string"
    ? `${error.name} ${code}: ${error.message}`
    : `${error.name}: ${error.message}`;
}

/**
 * Serves ToolEndpoint requests on a Dora transport: one {@linkcode ToolEndpointNode.run} loop,
 * with live {@linkcode ToolEndpointNode.stats} and a {@linkcode ToolEndpointNode.stop} for the
 * process side (signals). {@linkcode runToolEndpointNode} is the one-call form.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LoopbackDataflow, ToolEndpointNode } from "@forge/tool/dora";
 * const flow = new LoopbackDataflow();
 * const node = new ToolEndpointNode({
 *   transport: flow.transport,
 *   handle: (request, publish) => publish(request.toReversed()),
 * });
 * const done = node.run();
 * await flow.request(new Uint8Array([1, 2, 3]));
 * assertEquals((await flow.nextOutput())?.data, new Uint8Array([3, 2, 1]));
 * await flow.stop();
 * assertEquals((await done).stopReason, "stop");
 * ```
 */
export class ToolEndpointNode {
  readonly #transport: DoraTransport;
  readonly #handle: ToolEndpointRequestHandler;
  readonly #requestInputId: string;
  readonly #responseOutputId: string;
  readonly #graceMs: number;
  readonly #onShutdown: (() => Promise<void>) | undefined;
  readonly #logger: ToolLogger;
  readonly #inFlight = new Set<Promise<void>>();
  #stopRequested = false;
  #wake: ((value: "requested") => void) | null = null;
  readonly #stats: ToolEndpointNodeStats = {
    inputs: 0,
    requests: 0,
    responses: 0,
    errors: 0,
    sendFailures: 0,
    abandoned: 0,
    events: new Map(),
    lastTimestampMs: new Map(),
    stopReason: null,
  };
  #running: Promise<ToolEndpointNodeStats> | null = null;
  #pendingNext: Promise<DoraEvent | null> | null = null;

  /** Creates a node; nothing is read before {@linkcode ToolEndpointNode.run}. */
  constructor(options: ToolEndpointNodeOptions) {
    const settings = nodeSettings(options);
    this.#transport = settings.transport;
    this.#handle = settings.handle;
    this.#requestInputId = settings.requestInputId;
    this.#responseOutputId = settings.responseOutputId;
    this.#graceMs = settings.graceMs;
    this.#onShutdown = settings.onShutdown;
    this.#logger = settings.logger;
  }

  /** The live counters (the same object {@linkcode ToolEndpointNode.run} resolves with). */
  get stats(): ToolEndpointNodeStats {
    return this.#stats;
  }

  /** Handler calls currently running. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Serves until Stop, the end of the event stream or {@linkcode ToolEndpointNode.stop}, then
   * shuts down (onShutdown, in-flight requests up to the grace period, transport close) and
   * resolves with the stats. After Stop or `stop()` the node keeps reading events while
   * `onShutdown` runs, handling request inputs as before (so a closing handler answers them and
   * management responses still arrive); then it starts no new read, ends one still pending with
   * {@linkcode DoraTransport.stopReading} and handles what it returns. Every request input read
   * reaches the handler before the transport closes. Rejects, after the same shutdown, when the
   * transport fails. Calling it again returns the same promise.
   */
  run(): Promise<ToolEndpointNodeStats> {
    return this.#running ??= this.#run();
  }

  /**
   * Asks the node to stop serving, as a Stop event would. The transport's pending `nextEvent`
   * cannot be cancelled: the shutdown ends it with `stopReading` (the FFI transport returns at the
   * next input or timer tick) and handles its event before the transport closes.
   */
  stop(): void {
    this.#stopRequested = true;
    this.#wake?.("requested");
  }

  async #run(): Promise<ToolEndpointNodeStats> {
    let failure: { error: unknown } | null = null;
    try {
      this.#stats.stopReason = await this.#serve();
    } catch (error) {
      this.#stats.stopReason = "transport-error";
      this.#log(
        "error",
        "node.read_failed",
        `reading the next Dora event failed: ${describe(error)}`,
        error,
      );
      failure = { error };
    }
    const reason = this.#stats.stopReason;
    await this.#shutdown(reason === "stop" || reason === "requested");
    if (failure !== null) throw failure.error;
    return this.#stats;
  }

  async #serve(): Promise<ToolEndpointNodeStopReason> {
    for (;;) {
      if (this.#stopRequested) return "requested";
      const next = this.#transport.nextEvent();
      // One promise per event, settled by the event or by stop(), whichever comes first: racing
      // one long-lived wake-up promise would pile up reactions, and `Promise.race` with a fresh
      // one cost three promises and three reactions an event (0.37 against 0.13 µs).
      const event = await new Promise<DoraEvent | null | "requested">((resolve, reject) => {
        this.#wake = resolve;
        next.then(resolve, reject);
      });
      this.#wake = null;
      if (event === "requested") {
        // Still pending: the shutdown handles what it returns (see #drain and #finishRead).
        this.#pendingNext = next.catch((error) => {
          this.#log(
            "warn",
            "node.read_failed",
            `reading the next Dora event failed after stop(): ${describe(error)}`,
            error,
          );
          return null;
        });
        return "requested";
      }
      if (event === null) return "end-of-stream";
      if (event.type === "stop") {
        this.#count(event.type);
        return "stop";
      }
      if (event.type === "input") {
        this.#onInput(event.id, event.data, event.timestampMs);
        continue;
      }
      this.#count(event.type);
      this.#log(
        event.type === "error" ? "warn" : "info",
        "node.dora_event",
        `Dora event ${event.type} received; still serving`,
      );
    }
  }

  #count(type: Exclude<DoraEvent["type"], "input">): void {
    this.#stats.events.set(type, (this.#stats.events.get(type) ?? 0) + 1);
  }

  #onInput(id: string, data: Uint8Array, timestampMs: number): void {
    const stats = this.#stats;
    stats.inputs++;
    stats.lastTimestampMs.set(id, timestampMs);
    if (id !== this.#requestInputId) {
      this.#log("debug", "node.input_ignored", `input "${id}" (${data.length} bytes) ignored`);
      return;
    }
    stats.requests++;
    const request = stats.requests;
    let call: Promise<void>;
    try {
      call = Promise.resolve(this.#handle(data, this.#publish));
    } catch (error) {
      call = Promise.reject(error);
    }
    const tracked: Promise<void> = call.then(
      () => undefined,
      (error) => {
        stats.errors++;
        this.#log(
          "error",
          "node.request_failed",
          `request ${request} (${data.length} bytes) failed: ${describe(error)}`,
          error,
        );
      },
    ).finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
  }

  /**
   * Sends bytes on the response output the way a handler's `publish` does: a success counts in
   * {@linkcode ToolEndpointNodeStats.responses}, a failure in
   * {@linkcode ToolEndpointNodeStats.sendFailures} (logged) and rejects. For messages that are
   * not the answer to a request input: events, registrations, status reports.
   */
  publish(message: Uint8Array): Promise<void> {
    return this.#publish(message);
  }

  readonly #publish = async (response: Uint8Array): Promise<void> => {
    try {
      await this.#transport.sendOutput(this.#responseOutputId, response);
    } catch (error) {
      this.#stats.sendFailures++;
      this.#log(
        "error",
        "node.publish_failed",
        `publishing on "${this.#responseOutputId}" failed: ${describe(error)}`,
        error,
      );
      throw error;
    }
    this.#stats.responses++;
  };

  /**
   * Shuts down: runs `onShutdown`, keeps reading while it runs (after Stop or `stop()`), then
   * reads nothing more, handles the event of a read still pending, waits for the handler calls
   * and closes the transport. Every event a read returned is handled: a request input read at
   * any point reaches the handler (a closing handler answers it), never only a log line.
   */
  async #shutdown(drain: boolean): Promise<void> {
    const started = performance.now();
    const deadline = started + this.#graceMs;
    let hookSettled = false;
    let shutdownHook: Promise<void> = Promise.resolve();
    if (this.#onShutdown !== undefined) {
      try {
        shutdownHook = Promise.resolve(this.#onShutdown()).catch((error) => {
          this.#log(
            "error",
            "node.shutdown_hook_failed",
            `onShutdown failed: ${describe(error)}`,
            error,
          );
        });
      } catch (error) {
        this.#log(
          "error",
          "node.shutdown_hook_failed",
          `onShutdown failed: ${describe(error)}`,
          error,
        );
      }
    }
    shutdownHook = shutdownHook.then(() => void (hookSettled = true));
    // After Stop the streams stay open until Dora closes them: while the shutdown hook runs, the
    // node keeps reading, so a Registry's answer to the unregister arrives and a late request is
    // answered (by a handler that is closing) rather than dropped. Without a hook there is
    // nothing to wait for, and no new read is started.
    let pending = this.#pendingNext;
    this.#pendingNext = null;
    if (drain && this.#onShutdown !== undefined) {
      pending = (await this.#drain(shutdownHook, deadline, pending)).pending;
    }
    // Reading ends here; a read already issued cannot be taken back, so its event is handled.
    if (pending !== null) await this.#finishRead(pending, deadline);
    const settled = await withinDeadline(
      (async () => {
        await shutdownHook;
        while (this.#inFlight.size > 0) await Promise.all(this.#inFlight);
      })(),
      deadline,
    );
    if (!settled) {
      this.#stats.abandoned = this.#inFlight.size;
      this.#log(
        "warn",
        "node.grace_exceeded",
        `shutdown grace of ${this.#graceMs} ms over after ${
          Math.round(performance.now() - started)
        } ms: ${this.#inFlight.size} request(s) still running${
          hookSettled ? "" : ", onShutdown unsettled"
        }, closing the transport`,
      );
    }
    try {
      await this.#transport.close();
    } catch (error) {
      this.#log(
        "error",
        "node.transport_close_failed",
        `closing the Dora transport failed: ${describe(error)}`,
        error,
      );
    }
  }

  /**
   * Reads events until `stop` settles, the grace `deadline` passes or the streams end: inputs
   * are handled as while serving, other events counted. Returns the read still pending at the
   * end (wrapped, so that it is not awaited here) for {@linkcode ToolEndpointNode.#finishRead}:
   * its event is never dropped.
   */
  async #drain(
    stop: Promise<void>,
    deadline: number,
    pending: Promise<DoraEvent | null> | null,
  ): Promise<{ readonly pending: Promise<DoraEvent | null> | null }> {
    let stopped = false;
    // A fresh wake-up per read, as in #serve: racing one long-lived promise would pile up.
    let wake: ((value: typeof STOPPED) => void) | null = null;
    const end = () => {
      stopped = true;
      wake?.(STOPPED);
    };
    stop.then(end);
    const timer = setLongTimeout(end, deadline - performance.now());
    try {
      let next = pending ?? this.#nextEventOrNull();
      for (;;) {
        if (stopped) return { pending: next };
        const woken = withResolvers<typeof STOPPED>();
        wake = woken.resolve;
        const event = await Promise.race([next, woken.promise]);
        wake = null;
        if (event === STOPPED) return { pending: next };
        if (event === null) return { pending: null };
        this.#onEvent(event, "while shutting down");
        if (stopped) return { pending: null };
        next = this.#nextEventOrNull();
      }
    } finally {
      timer.clear();
    }
  }

  /**
   * Ends reading with one read still pending: asks the transport to end it
   * ({@linkcode DoraTransport.stopReading}), waits for it, and handles its event like any
   * other. A transport without `stopReading` is waited for up to the grace `deadline`; a read
   * that outlasts it is left to `close` (which waits for it), and an event it still returns is
   * handled too, though its answer may find the transport closed.
   */
  async #finishRead(pending: Promise<DoraEvent | null>, deadline: number): Promise<void> {
    const canStop = typeof this.#transport.stopReading === "function";
    if (canStop) {
      try {
        this.#transport.stopReading!();
      } catch (error) {
        this.#log(
          "warn",
          "node.read_failed",
          `ending the pending Dora event read failed: ${describe(error)}`,
          error,
        );
      }
    }
    let event: DoraEvent | null | undefined;
    const read = pending.then((value) => (event = value), () => (event = null));
    if (!canStop && !(await withinDeadline(read, deadline))) {
      read.then((late) => {
        if (late !== null) this.#onEvent(late, "as the transport closed");
      });
      return;
    }
    await read;
    if (event) this.#onEvent(event, "while shutting down");
  }

  /** Handles an event read during shutdown: an input as while serving, anything else counted. */
  #onEvent(event: DoraEvent, when: string): void {
    if (event.type === "input") {
      this.#onInput(event.id, event.data, event.timestampMs);
      return;
    }
    this.#count(event.type);
    this.#log("debug", "node.dora_event", `Dora event ${event.type} received ${when}`);
  }

  /** The transport's next event; a failed read while shutting down ends the reading (logged). */
  #nextEventOrNull(): Promise<DoraEvent | null> {
    try {
      return this.#transport.nextEvent().catch((error) => {
        this.#log(
          "warn",
          "node.read_failed",
          `reading the next Dora event while shutting down failed: ${describe(error)}`,
          error,
        );
        return null;
      });
    } catch (error) {
      this.#log(
        "warn",
        "node.read_failed",
        `reading the next Dora event while shutting down failed: ${describe(error)}`,
        error,
      );
      return Promise.resolve(null);
    }
  }

  #log(level: ToolLogLevel, event: string, message: string, error?: unknown): void {
    logSafely(
      this.#logger,
      error === undefined ? { level, event, message } : { level, event, message, error },
    );
  }
}

/**
 * Resolves `true` once `work` settles, or `false` when the monotonic `deadline` passes first.
 * A deadline already past still lets `work` settle through one timer turn (microtask answers).
 */
async function withinDeadline(work: Promise<unknown>, deadline: number): Promise<boolean> {
  let timer: LongTimeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setLongTimeout(() => resolve(false), deadline - performance.now());
  });
  try {
    return await Promise.race([work.then(() => true, () => true), late]);
  } finally {
    timer?.clear();
  }
}

/**
 * Serves ToolEndpoint requests on a Dora transport until Stop or the end of the event stream,
 * then shuts down gracefully and resolves with the stats. The one-call form of
 * {@linkcode ToolEndpointNode}.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LoopbackDataflow, runToolEndpointNode } from "@forge/tool/dora";
 * const flow = new LoopbackDataflow(); // under Dora: `transport: await openDoraNode()`
 * const running = runToolEndpointNode({
 *   transport: flow.transport,
 *   handle: async (request, publish) => await publish(request.toReversed()),
 * });
 * await flow.request(new Uint8Array([1, 2]));
 * assertEquals((await flow.nextOutput())?.data, new Uint8Array([2, 1]));
 * await flow.stop();
 * assertEquals((await running).stopReason, "stop");
 * ```
 */
export function runToolEndpointNode(
  options: ToolEndpointNodeOptions,
): Promise<ToolEndpointNodeStats> {
  return new ToolEndpointNode(options).run();
}

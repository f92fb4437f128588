/**
 * An in-process Dora dataflow: {@linkcode LoopbackDataflow} pairs a node-side
 * {@linkcode DoraTransport} (the same interface as the FFI node) with a gateway side that delivers
 * requests and reads what the node sent. For tests, demos, and running an endpoint node where no
 * Dora is installed.
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { copyBytes, newSlab } from "./_output_slab.ts";
import type { DoraEvent, DoraTransport } from "./transport.ts";
import { epochMsToNtp64, isNtp64EpochMs, ntp64ToEpochMs } from "./transport.ts";

/** An output the node sent, as the gateway side of a {@linkcode LoopbackDataflow} sees it. */
export interface LoopbackOutput {
  /** The output id. */
  readonly id: string;
  /** A copy of the bytes sent. */
  readonly data: Uint8Array;
}

/** Options of {@linkcode LoopbackDataflow}. */
export interface LoopbackDataflowOptions {
  /**
   * The input {@linkcode LoopbackDataflow.request} delivers on.
   *
   * @default {"tool_request"}
   */
  readonly requestInputId?: string;
  /**
   * The wall clock in Unix epoch milliseconds, for input timestamps.
   *
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * Faults injected on the way to the node and back, for tests of lossy carriers.
   *
   * @default {{}}
   */
  readonly faults?: LoopbackFaults;
  /**
   * How many of the latest outputs {@linkcode LoopbackDataflow.sent} keeps: beyond it the oldest
   * is dropped, so a dataflow that runs for hours (the demo, a soak, a bench) holds a bounded
   * history. A positive integer; `Number.MAX_SAFE_INTEGER` keeps every output.
   *
   * @default {1024}
   */
  readonly maxSentHistory?: number;
}

/**
 * Faults a {@linkcode LoopbackDataflow} injects, for testing what a lossy carrier does to its
 * peers. Each hook sees one message and returns what is delivered in its place, in order: `[]`
 * drops it, two copies duplicate it, another message forges it; a stateful hook that keeps a
 * message and returns it with a later one reorders them.
 */
export interface LoopbackFaults {
  /** The fate of each input (`request()` and `input()`) before the node sees it. */
  readonly input?: (id: string, data: Uint8Array) => readonly Uint8Array[];
  /**
   * The fate of each output the node sent, before the gateway side reads it (`sent` still
   * records what the node sent).
   */
  readonly output?: (output: LoopbackOutput) => readonly LoopbackOutput[];
}

/** Options of {@linkcode LoopbackDataflow.input}. */
export interface LoopbackInputOptions {
  /** The input's NTP64 timestamp (default: the clock's current time as NTP64). */
  readonly timestamp?: bigint;
}

const CREATE_LOOPBACK = "create a LoopbackDataflow";

/** A rejected promise that does not count as unhandled when nobody awaits it. */
function quietReject(error: Error): Promise<void> {
  const promise = Promise.reject(error);
  promise.catch(() => undefined);
  return promise;
}

interface QueuedEvent {
  readonly event: DoraEvent;
  readonly taken: PromiseWithResolvers<void>;
}

/**
 * An in-process dataflow with one node. The node side is {@linkcode LoopbackDataflow.transport};
 * the test or host plays the gateway: {@linkcode LoopbackDataflow.request} delivers request
 * bytes, {@linkcode LoopbackDataflow.nextOutput} (or `for await` over
 * {@linkcode LoopbackDataflow.responses}) reads what the node sent, and
 * {@linkcode LoopbackDataflow.stop} delivers Stop.
 *
 * Unlike the FFI transport, the node side may send while `nextEvent` is pending (nothing native
 * is shared). Closing the node side, or `stopReading`, ends a pending `nextEvent` with `null`;
 * events delivered but not taken by then are never read (their delivery rejects at close).
 *
 * Inputs and outputs are copied on the way, as Dora copies them into its shared memory: a copy
 * shares nothing with the bytes it was made from; a small one is a view of a 64 KiB buffer shared
 * with this dataflow's other copies (see `encodeToolEnvelopeIpc`), so copy it before you post or
 * transfer it.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { LoopbackDataflow } from "@forge/tool/dora";
 * const flow = new LoopbackDataflow();
 * const delivered = flow.request(new TextEncoder().encode("ping"));
 * const event = await flow.transport.nextEvent(); // { type: "input", id: "tool_request", ... }
 * await delivered;
 * await flow.transport.sendOutput("tool_response", new TextEncoder().encode("pong"));
 * assertEquals((await flow.nextOutput())?.id, "tool_response");
 * await flow.transport.close();
 * ```
 */
export class LoopbackDataflow {
  /** The node side: give it to the runner (or read events from it directly). */
  readonly transport: DoraTransport;
  /**
   * The latest outputs the node sent successfully, in order (kept also after they were read), at
   * most `maxSentHistory` of them.
   */
  readonly sent: LoopbackOutput[] = [];
  /** Every line the node wrote through `transport.log`. */
  readonly logs: { readonly level: string; readonly message: string }[] = [];
  readonly #requestInputId: string;
  readonly #maxSentHistory: number;
  /** Where its copies are carved from: the outputs `sent` keeps pin only buffers of its own. */
  readonly #slab = newSlab();
  readonly #now: () => number;
  readonly #faults: LoopbackFaults;
  readonly #events: QueuedEvent[] = [];
  readonly #unread: LoopbackOutput[] = [];
  readonly #outputWaiters: ((output: LoopbackOutput | null) => void)[] = [];
  readonly #failures: Error[] = [];
  readonly #closed = withResolvers<void>();
  #eventWaiter: ((event: DoraEvent | null) => void) | null = null;
  #ended = false;
  #isClosed = false;
  #readingStopped = false;

  /** Creates a dataflow with an open node side and no events yet. */
  constructor(options: LoopbackDataflowOptions = {}) {
    if (typeof options !== "object" || options === null) {
      throw new TypeError(optionMessage(CREATE_LOOPBACK, "options", "an object", options));
    }
    const inputId: unknown = options.requestInputId ?? "tool_request";
    if (typeof inputId !== "string" || inputId === "") {
      throw new TypeError(
        optionMessage(CREATE_LOOPBACK, "requestInputId", "a non-empty string", inputId),
      );
    }
    const faults: unknown = options.faults ?? {};
    if (typeof faults !== "object" || faults === null) {
      throw new TypeError(optionMessage(CREATE_LOOPBACK, "faults", "an object", faults));
    }
    this.#requestInputId = inputId;
    this.#maxSentHistory = positiveIntegerOption(
      CREATE_LOOPBACK,
      "maxSentHistory",
      options.maxSentHistory,
      1024,
    );
    this.#now = optionalFunction<() => number>(CREATE_LOOPBACK, "now", options.now) ?? Date.now;
    optionalFunction(CREATE_LOOPBACK, "faults.input", (faults as LoopbackFaults).input);
    optionalFunction(CREATE_LOOPBACK, "faults.output", (faults as LoopbackFaults).output);
    this.#faults = faults as LoopbackFaults;
    this.transport = {
      nextEvent: () => this.#nextEvent(),
      sendOutput: (id, data) => this.#sendOutput(id, data),
      log: (level, message) => {
        if (!this.#isClosed) this.logs.push({ level: String(level), message: String(message) });
      },
      stopReading: () => this.#stopReading(),
      close: () => this.#close(),
    };
  }

  /** Resolves once the node side closed its transport. */
  get closed(): Promise<void> {
    return this.#closed.promise;
  }

  /** Whether the node side closed its transport. */
  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** Events delivered but not yet taken by the node. */
  get pendingEvents(): number {
    return this.#events.length;
  }

  /**
   * Delivers `bytes` (copied) as an Input on the request input. Resolves when the node took the
   * event; rejects if the node closed before taking it.
   */
  request(bytes: Uint8Array): Promise<void> {
    return this.input(this.#requestInputId, bytes);
  }

  /**
   * Delivers an Input event on any input id (`data` is copied), with an NTP64 timestamp that the
   * node sees converted to epoch milliseconds as the FFI node converts Dora's. Resolves when the
   * node took the event; rejects if the node closed before taking it.
   */
  input(id: string, data: Uint8Array, options: LoopbackInputOptions = {}): Promise<void> {
    if (!(data instanceof Uint8Array)) {
      return Promise.reject(new TypeError("loopback input data must be a Uint8Array"));
    }
    const timestampMs = options.timestamp === undefined
      ? this.#clockMs()
      : ntp64ToEpochMs(options.timestamp);
    const inputId = String(id);
    if (this.#faults.input === undefined) {
      const copy = copyBytes(data, this.#slab);
      return this.#deliver({ type: "input", id: inputId, data: copy, timestampMs });
    }
    const fates = this.#faults.input(inputId, data.slice());
    let first: Promise<void> | undefined;
    for (const bytes of fates) {
      const delivered = this.#deliver({
        type: "input",
        id: inputId,
        data: copyBytes(bytes, this.#slab),
        timestampMs,
      });
      first ??= delivered;
    }
    // A dropped input counts as delivered: the sender cannot tell.
    return first ?? Promise.resolve();
  }

  /**
   * The clock's current millisecond, as the node sees it: the same number as
   * `ntp64ToEpochMs(epochMsToNtp64(ms))` (the NTP64 timestamp chosen maps back to it), without
   * the two BigInt conversions; a value out of NTP64's range still throws epochMsToNtp64's error.
   */
  #clockMs(): number {
    const ms = Math.floor(this.#now());
    if (!isNtp64EpochMs(ms)) epochMsToNtp64(ms);
    return ms;
  }

  /**
   * Puts an output on the gateway side as if the node had sent it (a forged, replayed or late
   * message); it is not recorded in `sent` and passes no fault hook.
   */
  injectOutput(id: string, data: Uint8Array): void {
    if (!(data instanceof Uint8Array)) {
      throw new TypeError("loopback output data must be a Uint8Array");
    }
    this.#publish(Object.freeze({ id: String(id), data: copyBytes(data, this.#slab) }));
  }

  /** Delivers Stop. Resolves when the node took it; rejects if the node closed before. */
  stop(): Promise<void> {
    return this.#deliver({ type: "stop" });
  }

  /** Delivers a non-input event (`stop`, `input-closed`, `error` or `unknown`). */
  event(type: Exclude<DoraEvent["type"], "input">): Promise<void> {
    if (type !== "stop" && type !== "input-closed" && type !== "error" && type !== "unknown") {
      return Promise.reject(new TypeError(`not a non-input Dora event type: ${String(type)}`));
    }
    return this.#deliver({ type });
  }

  /** Ends the event streams: once the delivered events were taken, `nextEvent` returns `null`. */
  end(): void {
    this.#ended = true;
    if (this.#events.length === 0) this.#wakeNode(null);
  }

  /** Makes the node's next `sendOutput` call reject with `error` (default: a generic Error). */
  failNextSend(error?: Error | string): void {
    this.#failures.push(
      error instanceof Error ? error : new Error(error ?? "loopback: injected send failure"),
    );
  }

  /** The next output the node sent; `null` once the node closed and every output was read. */
  nextOutput(): Promise<LoopbackOutput | null> {
    const output = this.#unread.shift();
    if (output !== undefined) return Promise.resolve(output);
    if (this.#isClosed) return Promise.resolve(null);
    const { promise, resolve } = withResolvers<LoopbackOutput | null>();
    this.#outputWaiters.push(resolve);
    return promise;
  }

  /** The node's outputs as an async iterable; it ends when the node closed its transport. */
  get responses(): AsyncIterable<LoopbackOutput> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<LoopbackOutput>> => {
          const output = await this.nextOutput();
          return output === null
            ? { done: true, value: undefined }
            : { done: false, value: output };
        },
      }),
    };
  }

  #deliver(event: DoraEvent): Promise<void> {
    if (this.#isClosed) {
      return quietReject(new Error(`loopback: the node closed; ${event.type} not delivered`));
    }
    if (this.#ended) {
      return quietReject(new Error(`loopback: the streams ended; ${event.type} not delivered`));
    }
    if (this.#eventWaiter !== null) {
      // Taken at once: no resolvers to keep (they cost 0.3 µs an input).
      this.#wakeNode(event);
      return Promise.resolve();
    }
    const taken = withResolvers<void>();
    // A caller may deliver without awaiting: a rejection it never looks at is not an error.
    taken.promise.catch(() => undefined);
    this.#events.push({ event, taken });
    return taken.promise;
  }

  #wakeNode(event: DoraEvent | null): void {
    const waiter = this.#eventWaiter;
    this.#eventWaiter = null;
    waiter?.(event);
  }

  #nextEvent(): Promise<DoraEvent | null> {
    if (this.#isClosed || this.#readingStopped) return Promise.resolve(null);
    if (this.#eventWaiter !== null) {
      return Promise.reject(
        new Error("nextEvent is already pending: await it before asking for the next event"),
      );
    }
    const queued = this.#events.shift();
    if (queued !== undefined) {
      queued.taken.resolve();
      return Promise.resolve(queued.event);
    }
    if (this.#ended) return Promise.resolve(null);
    const { promise, resolve } = withResolvers<DoraEvent | null>();
    this.#eventWaiter = resolve;
    return promise;
  }

  #sendOutput(id: string, data: Uint8Array): Promise<void> {
    if (this.#isClosed) {
      return Promise.reject(new Error(`cannot send output "${id}": the loopback node is closed`));
    }
    if (!(data instanceof Uint8Array)) {
      return Promise.reject(new TypeError(`output "${id}": data must be a Uint8Array`));
    }
    const failure = this.#failures.shift();
    if (failure !== undefined) {
      return Promise.reject(
        new Error(`send on output "${id}" failed: ${failure.message}`, { cause: failure }),
      );
    }
    const output: LoopbackOutput = Object.freeze({ id, data: copyBytes(data, this.#slab) });
    if (this.sent.length >= this.#maxSentHistory) this.sent.shift();
    this.sent.push(output);
    if (this.#faults.output === undefined) this.#publish(output);
    else for (const fate of this.#faults.output(output)) this.#publish(fate);
    return Promise.resolve();
  }

  #publish(output: LoopbackOutput): void {
    const waiter = this.#outputWaiters.shift();
    if (waiter !== undefined) {
      waiter(output);
    } else {
      this.#unread.push(output);
    }
  }

  /** The node reads no more: a pending read ends with `null`; queued events stay untaken. */
  #stopReading(): void {
    this.#readingStopped = true;
    this.#wakeNode(null);
  }

  #close(): Promise<void> {
    if (!this.#isClosed) {
      this.#isClosed = true;
      this.#wakeNode(null);
      for (const { event, taken } of this.#events.splice(0)) {
        taken.reject(new Error(`loopback: the node closed; ${event.type} not taken`));
      }
      for (const waiter of this.#outputWaiters.splice(0)) waiter(null);
      this.#closed.resolve();
    }
    return this.#closed.promise;
  }
}

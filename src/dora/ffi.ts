/**
 * The dora C node API through Deno FFI: {@linkcode openDoraNode} loads the shared object built from
 * dora's `libdora_node_api_c.a`, initialises the node from the environment the Dora daemon set
 * (`DORA_NODE_CONFIG`), and returns a {@linkcode DoraTransport}.
 *
 * The dora context is not synchronised, so this transport never calls into it while a
 * nonblocking `dora_next_event` is pending: outputs and log lines issued meanwhile wait in a queue
 * and go out, in order, as soon as that call returns (before the next one is issued). A node that
 * must answer promptly while no input arrives adds a `dora/timer/millis/N` input, which makes
 * `dora_next_event` return at least every N milliseconds.
 *
 * Needs `--allow-ffi` (and `--allow-env` when the library path comes from `DORA_NODE_API_LIB`).
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { optionMessage } from "../_internal/options.ts";
import type { DoraEvent, DoraTransport } from "./transport.ts";
import { ntp64ToEpochMs } from "./transport.ts";

const BASE_SYMBOLS = {
  init_dora_context_from_env: { parameters: [], result: "pointer", nonblocking: true },
  free_dora_context: { parameters: ["pointer"], result: "void", nonblocking: true },
  dora_next_event: { parameters: ["pointer"], result: "pointer", nonblocking: true },
  free_dora_event: { parameters: ["pointer"], result: "void" },
  read_dora_event_type: { parameters: ["pointer"], result: "i32" },
  read_dora_input_id: { parameters: ["pointer", "buffer", "buffer"], result: "void" },
  read_dora_input_data: { parameters: ["pointer", "buffer", "buffer"], result: "void" },
  read_dora_input_timestamp: { parameters: ["pointer"], result: "u64" },
  dora_send_output: {
    parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

const LOG_SYMBOLS = {
  dora_log: { parameters: ["pointer", "buffer", "usize", "buffer", "usize"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

const FULL_SYMBOLS = { ...BASE_SYMBOLS, ...LOG_SYMBOLS } as const;

type BaseSymbols = Deno.DynamicLibrary<typeof BASE_SYMBOLS>["symbols"];
type DoraLog = Deno.DynamicLibrary<typeof LOG_SYMBOLS>["symbols"]["dora_log"];

interface LoadedLibrary {
  readonly symbols: BaseSymbols;
  readonly doraLog: DoraLog | null;
  close(): void;
}

/** The environment variable naming the dora C node API shared object. */
export const DORA_NODE_API_LIB_ENV = "DORA_NODE_API_LIB";

const OPEN_NODE = "open a Dora node";

/** Options of {@linkcode openDoraNode}. */
export interface OpenDoraNodeOptions {
  /**
   * Path of the dora C node API shared object (`libdora_node_api_c.so`, `.dylib`, `.dll`), built
   * from the same dora version as the daemon.
   *
   * @default {Deno.env.get("DORA_NODE_API_LIB")}
   */
  readonly libraryPath?: string | URL;
}

/** The {@linkcode DoraTransport} of a real Dora node, as {@linkcode openDoraNode} returns it. */
export interface DoraNodeTransport extends DoraTransport {
  /**
   * Writes a line to the Dora log through `dora_log` (dora 1.0), or to stderr when the library
   * has no `dora_log` (dora 0.x; the daemon captures a node's stderr). Queued like an output
   * while `dora_next_event` is pending; ignored once the transport closed.
   */
  log(level: string, message: string): void;
  /**
   * Issues no `dora_next_event` after this (later `nextEvent` calls resolve `null`). A call
   * already running cannot be interrupted: it returns with the next event Dora delivers (an
   * input, a timer tick, the end of the streams), and that event is returned to its caller.
   */
  stopReading(): void;
  /** Whether the loaded library exports `dora_log`. */
  readonly hasDoraLog: boolean;
  /** Whether {@linkcode DoraTransport.close} was called. */
  readonly closed: boolean;
}

const EVENT_STOP = 0;
const EVENT_INPUT = 1;
const EVENT_INPUT_CLOSED = 2;
const EVENT_ERROR = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

type QueuedCall =
  | {
    readonly kind: "send";
    readonly id: string;
    readonly data: Uint8Array;
    readonly resolve: () => void;
    readonly reject: (error: Error) => void;
  }
  | { readonly kind: "log"; readonly level: string; readonly message: string };

/**
 * Loads the dora C node API and initialises this process as a Dora node
 * (`init_dora_context_from_env`, which reads the `DORA_NODE_CONFIG` the daemon set).
 *
 * Rejects with an `Error` when no library path is given or set in `DORA_NODE_API_LIB`, when the
 * library cannot be loaded, or when `init_dora_context_from_env` returns NULL (for example when
 * the process was not started by a Dora daemon).
 *
 * @example
 * ```ts ignore
 * import { openDoraNode } from "@forge/tool/dora";
 * const transport = await openDoraNode(); // DORA_NODE_API_LIB=./lib/libdora_node_api_c.so
 * for (let event = await transport.nextEvent(); event; event = await transport.nextEvent()) {
 *   if (event.type === "stop") break;
 *   if (event.type === "input") await transport.sendOutput("echo", event.data);
 * }
 * await transport.close();
 * ```
 */
export async function openDoraNode(options: OpenDoraNodeOptions = {}): Promise<DoraNodeTransport> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(optionMessage(OPEN_NODE, "options", "an object", options));
  }
  const path: unknown = options.libraryPath ?? Deno.env.get(DORA_NODE_API_LIB_ENV);
  if (path === undefined || path === "") {
    throw new Error(
      optionMessage(
        OPEN_NODE,
        "libraryPath",
        `the dora C node API shared object built from dora's libdora_node_api_c.a (or set ${DORA_NODE_API_LIB_ENV})`,
        path,
      ),
    );
  }
  if (typeof path !== "string" && !(path instanceof URL)) {
    throw new TypeError(optionMessage(OPEN_NODE, "libraryPath", "a string or a URL", path));
  }
  const library = loadLibrary(path);
  let context: Deno.PointerValue;
  try {
    context = await library.symbols.init_dora_context_from_env();
  } catch (error) {
    library.close();
    throw error;
  }
  if (context === null) {
    library.close();
    throw new Error(
      "init_dora_context_from_env returned NULL: this process was not started as a node of a " +
        "running Dora dataflow (DORA_NODE_CONFIG missing or invalid), or the library and the " +
        "daemon are different dora versions",
    );
  }
  return new FfiDoraTransport(library, context);
}

function loadLibrary(path: string | URL): LoadedLibrary {
  try {
    const lib = Deno.dlopen(path, FULL_SYMBOLS);
    return { symbols: lib.symbols, doraLog: lib.symbols.dora_log, close: () => lib.close() };
  } catch {
    // dora 0.x has no dora_log: retry without it (a missing library fails again below).
  }
  try {
    const lib = Deno.dlopen(path, BASE_SYMBOLS);
    return { symbols: lib.symbols, doraLog: null, close: () => lib.close() };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`cannot load the dora C node API from ${String(path)}: ${reason}`, {
      cause: error,
    });
  }
}

class FfiDoraTransport implements DoraNodeTransport {
  readonly #library: LoadedLibrary;
  readonly #symbols: BaseSymbols;
  readonly #context: Deno.PointerObject;
  readonly #pointerOut = new BigUint64Array(1);
  readonly #lengthOut = new BigUint64Array(1);
  readonly #queue: QueuedCall[] = [];
  /** The last `nextEvent` promise (settled or not), which `close` waits for. */
  #pending: Promise<DoraEvent | null> | null = null;
  /** True exactly while the native `dora_next_event` call runs on its worker thread. */
  #busy = false;
  #state: "open" | "closing" | "closed" = "open";
  #ended = false;
  #closing: Promise<void> | null = null;

  constructor(library: LoadedLibrary, context: Deno.PointerObject) {
    this.#library = library;
    this.#symbols = library.symbols;
    this.#context = context;
  }

  get hasDoraLog(): boolean {
    return this.#library.doraLog !== null;
  }

  get closed(): boolean {
    return this.#state !== "open";
  }

  nextEvent(): Promise<DoraEvent | null> {
    if (this.#state !== "open" || this.#ended) return Promise.resolve(null);
    if (this.#busy) {
      return Promise.reject(
        new Error("nextEvent is already pending: await it before asking for the next event"),
      );
    }
    this.#flush();
    const pending = this.#next();
    this.#pending = pending;
    return pending;
  }

  async #next(): Promise<DoraEvent | null> {
    let raw: Deno.PointerValue;
    this.#busy = true;
    try {
      raw = await this.#symbols.dora_next_event(this.#context);
    } finally {
      this.#busy = false;
    }
    try {
      if (raw === null) {
        this.#ended = true;
        return null;
      }
      return this.#readEvent(raw);
    } finally {
      // Outputs queued while the call was pending go out now, before the next call is issued.
      this.#flush();
    }
  }

  /** Reads an event into owned values, and frees it exactly once. */
  #readEvent(raw: Deno.PointerObject): DoraEvent {
    try {
      switch (this.#symbols.read_dora_event_type(raw)) {
        case EVENT_INPUT: {
          const id = decoder.decode(this.#copyOut(this.#symbols.read_dora_input_id, raw));
          const data = this.#copyOut(this.#symbols.read_dora_input_data, raw);
          const timestamp = this.#symbols.read_dora_input_timestamp(raw);
          return { type: "input", id, data, timestampMs: ntp64ToEpochMs(BigInt(timestamp)) };
        }
        case EVENT_STOP:
          return { type: "stop" };
        case EVENT_INPUT_CLOSED:
          return { type: "input-closed" };
        case EVENT_ERROR:
          return { type: "error" };
        default:
          return { type: "unknown" };
      }
    } finally {
      this.#symbols.free_dora_event(raw);
    }
  }

  /** Copies the borrowed `(pointer, length)` a `read_dora_input_*` call writes. */
  #copyOut(
    read: (event: Deno.PointerObject, ptr: BufferSource, len: BufferSource) => void,
    raw: Deno.PointerObject,
  ): Uint8Array {
    this.#pointerOut[0] = 0n;
    this.#lengthOut[0] = 0n;
    read(raw, this.#pointerOut, this.#lengthOut);
    const length = this.#lengthOut[0];
    const pointer = Deno.UnsafePointer.create(this.#pointerOut[0]);
    if (pointer === null || length === 0n) return new Uint8Array(0);
    const copy = new Uint8Array(Number(length));
    Deno.UnsafePointerView.copyInto(pointer, copy);
    return copy;
  }

  sendOutput(id: string, data: Uint8Array): Promise<void> {
    if (typeof id !== "string") {
      return Promise.reject(new TypeError("an output id is a string"));
    }
    if (!(data instanceof Uint8Array)) {
      return Promise.reject(new TypeError(`output "${id}": data must be a Uint8Array`));
    }
    if (this.#state === "closed") {
      return Promise.reject(
        new Error(`cannot send output "${id}": the dora node transport is closed`),
      );
    }
    if (this.#busy) {
      const { promise, resolve, reject } = withResolvers<void>();
      this.#queue.push({ kind: "send", id, data, resolve, reject });
      return promise;
    }
    try {
      this.#send(id, data);
      return Promise.resolve();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  log(level: string, message: string): void {
    if (this.#state === "closed") return;
    if (this.#busy) {
      this.#queue.push({ kind: "log", level: String(level), message: String(message) });
      return;
    }
    this.#log(String(level), String(message));
  }

  stopReading(): void {
    this.#ended = true;
  }

  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    if (this.#state === "open") this.#state = "closing";
    try {
      // A pending nonblocking call cannot be cancelled, and closing the library under it crashes
      // the process: wait for it (its event is still read, freed and returned to its caller).
      if (this.#pending !== null) await this.#pending.catch(() => undefined);
      this.#flush();
    } finally {
      this.#state = "closed";
      try {
        await this.#symbols.free_dora_context(this.#context);
      } finally {
        this.#library.close();
      }
    }
  }

  #send(id: string, data: Uint8Array): void {
    const idBytes = encoder.encode(id);
    const status = this.#symbols.dora_send_output(
      this.#context,
      idBytes,
      BigInt(idBytes.length),
      data,
      BigInt(data.length),
    );
    if (status !== 0) {
      throw new Error(`dora_send_output failed for output "${id}" (status ${status})`);
    }
  }

  #log(level: string, message: string): void {
    const doraLog = this.#library.doraLog;
    if (doraLog !== null) {
      const levelBytes = encoder.encode(level);
      const messageBytes = encoder.encode(message);
      const status = doraLog(
        this.#context,
        levelBytes,
        BigInt(levelBytes.length),
        messageBytes,
        BigInt(messageBytes.length),
      );
      if (status === 0) return;
    }
    console.error(`[${level}] ${message}`);
  }

  /** Issues the queued sends and log lines in order; each send settles its own promise. */
  #flush(): void {
    while (this.#queue.length > 0 && !this.#busy) {
      const call = this.#queue.shift()!;
      if (call.kind === "log") {
        this.#log(call.level, call.message);
        continue;
      }
      try {
        this.#send(call.id, call.data);
        call.resolve();
      } catch (error) {
        call.reject(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }
}

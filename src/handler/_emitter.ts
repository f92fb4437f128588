/**
 * The execution-bound event emitter handed to `start()`, and the FIFO lock it publishes under.
 *
 * @module
 */
import type { TerminalExecutionPhase } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { type ToolContext, ToolEvent } from "../endpoint/models.ts";
import type { ToolEventEmitter } from "../endpoint/spi.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeEventEnvelope } from "../wire/factories.ts";

/** Publishes one `tool.event` envelope; the handler awaits it in sequence order. */
export type ToolEventSink = (event: ToolEnvelope) => void | PromiseLike<void>;

/** A first-in first-out async lock. */
export class FifoLock {
  #tail: Promise<void> = Promise.resolve();

  /** Waits for every earlier holder, then returns the release function. */
  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const previous = this.#tail;
    this.#tail = previous.then(() => held);
    return previous.then(() => release);
  }
}

/** The terminal event types and the execution phase each establishes. */
export const TERMINAL_EVENT_PHASE: Readonly<Record<string, TerminalExecutionPhase>> = Object
  .freeze({
    executor_completed: "completed",
    executor_failed: "failed",
    cancelled: "cancelled",
    stopped: "stopped",
  });

/** What the emitter needs from the handler: the terminal barrier for its execution. */
export interface EmitterHost {
  /**
   * Establishes the terminal status and result of the execution for a terminal event (the
   * provider's authoritative result must be available); throws when it cannot.
   */
  establishTerminalForEvent(phase: TerminalExecutionPhase): Promise<void>;
}

/**
 * The emitter of one admitted execution. Events are numbered from 0; before acceptance they are
 * buffered (at most `maxEarlyEvents`), after it each is published through the sink while the
 * lock is held, so concurrent emits publish in sequence order.
 */
export class ExecutionEmitter implements ToolEventEmitter {
  readonly #host: EmitterHost;
  readonly #context: ToolContext;
  readonly #endpointInstanceId: string;
  readonly #maxEarlyEvents: number;
  readonly #sink: ToolEventSink | undefined;
  readonly #lock = new FifoLock();
  #buffer: ToolEnvelope[] = [];
  #nextSequence = 0;
  #accepted = false;
  #closed = false;
  #terminalPending = false;
  /** Set when the early buffer overflowed: the start converges to `unknown` whatever it returns. */
  overflowed = false;

  constructor(
    host: EmitterHost,
    context: ToolContext,
    endpointInstanceId: string,
    maxEarlyEvents: number,
    sink: ToolEventSink | undefined,
  ) {
    this.#host = host;
    this.#context = context;
    this.#endpointInstanceId = endpointInstanceId;
    this.#maxEarlyEvents = maxEarlyEvents;
    this.#sink = sink;
  }

  /** Emits one event (see {@linkcode ToolEventEmitter.emit}). */
  async emit(event: ToolEvent): Promise<void> {
    if (!(event instanceof ToolEvent)) throw new TypeError("event must be a ToolEvent");
    const phase = Object.hasOwn(TERMINAL_EVENT_PHASE, event.type)
      ? TERMINAL_EVENT_PHASE[event.type]
      : undefined;
    let release = await this.#lock.acquire();
    try {
      if (this.#closed || this.#terminalPending) {
        throw new ToolProtocolError(
          ToolErrorCodes.ENDPOINT_EVENT_AFTER_TERMINAL,
          "an event was emitted after terminal event progression closed",
        );
      }
      if (phase !== undefined) this.#terminalPending = true;
    } finally {
      release();
    }
    if (phase !== undefined) {
      try {
        await this.#host.establishTerminalForEvent(phase);
      } catch (error) {
        this.#terminalPending = false;
        throw error;
      }
    }
    release = await this.#lock.acquire();
    try {
      if (!this.#accepted && this.#buffer.length >= this.#maxEarlyEvents) {
        this.#terminalPending = false;
        this.overflowed = true;
        throw new ToolProtocolError(
          ToolErrorCodes.ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW,
          `Tool endpoint emitted more than ${this.#maxEarlyEvents} events before acceptance`,
        );
      }
      const envelope = makeEventEnvelope(event, this.#context, {
        endpointInstanceId: this.#endpointInstanceId,
        sequence: this.#nextSequence,
      });
      this.#nextSequence++;
      if (phase !== undefined) {
        this.#closed = true;
        this.#terminalPending = false;
      }
      if (!this.#accepted) {
        this.#buffer.push(envelope);
        return;
      }
      if (this.#sink === undefined) {
        throw new Error(
          "Tool endpoint emitted after acceptance without an asynchronous event sink: pass { eventSink } to dispatch()",
        );
      }
      await this.#sink(envelope);
    } finally {
      release();
    }
  }

  /** Marks the execution accepted and hands back the buffered early events, in order. */
  accept(): ToolEnvelope[] {
    this.#accepted = true;
    const early = this.#buffer;
    this.#buffer = [];
    return early;
  }

  /** Closes the emitter after a failed start; buffered events are dropped. */
  reject(): void {
    this.#closed = true;
    this.#buffer = [];
  }

  /** Closes the emitter once a terminal status or result is established elsewhere. */
  closeTerminal(): void {
    this.#closed = true;
  }
}

/**
 * The execution-bound event emitter handed to `start()`.
 *
 * @module
 */
import { FifoLock, type Resolvers, SETTLED, withResolvers } from "../_internal/async.ts";
import type { TerminalExecutionPhase } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { type ToolContext, ToolEvent } from "../endpoint/models.ts";
import type { ToolEventEmitter } from "../endpoint/spi.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeEventEnvelope } from "../wire/factories.ts";
import { terminalPhaseOf } from "./unknown_event.ts";

/** What {@linkcode ExecutionEmitter.accept} hands back when no event came before acceptance. */
const NO_EVENTS: readonly ToolEnvelope[] = Object.freeze([]);

/** Publishes one `tool.event` envelope; the handler awaits it in sequence order. */
export type ToolEventSink = (event: ToolEnvelope) => void | PromiseLike<void>;

/** What the emitter needs from the handler: the terminal barrier for its execution. */
export interface EmitterHost {
  /**
   * Establishes the terminal status and result of the execution for a terminal event (the
   * provider's authoritative result must be available); throws when it cannot.
   */
  establishTerminalForEvent(phase: TerminalExecutionPhase): Promise<void>;
  /** Reports an event refused or a publication failed, for the handler's logger. */
  report(level: "warn" | "error", event: string, message: string, error?: unknown): void;
  /** Called once, when event progression ended: the emitter has nothing left to do. */
  ended(): void;
}

/**
 * The emitter of one admitted execution. Events are numbered from 0; before acceptance they are
 * buffered (at most `maxEarlyEvents`), after it each is published through the sink while the
 * lock is held, so concurrent emits publish in sequence order. At most `maxPendingEvents` emit
 * calls may be in progress at once (a provider that does not await `emit()` queues them on the
 * lock): one more rejects at once with `FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE`, before it is
 * numbered, so the published sequence keeps no gap.
 */
export class ExecutionEmitter implements ToolEventEmitter {
  readonly #host: EmitterHost;
  readonly #context: ToolContext;
  readonly #endpointInstanceId: string;
  readonly #maxEarlyEvents: number;
  readonly #maxPendingEvents: number;
  readonly #sink: ToolEventSink | undefined;
  readonly #lock = new FifoLock();
  /** The early events (before acceptance), made by the first one: most executions emit none early. */
  #buffer: ToolEnvelope[] | undefined;
  #nextSequence = 0;
  #accepted = false;
  #closed = false;
  #terminalPending = false;
  /** Set when the handler ended the execution itself (shutdown, undelivered acceptance). */
  #converged = false;
  /** Set once a terminal event got its sequence number. */
  #terminalSent = false;
  #rejected = false;
  /**
   * Resolves once event progression ended (see {@linkcode ExecutionEmitter.finished}): made when
   * first asked for before the end (close() asks for the unfinished executions' only).
   */
  #finished: Resolvers<void> | undefined;
  #isFinished = false;
  /** emit() calls in progress: waiting for the lock, the terminal barrier or the sink. */
  #pending = 0;
  /** Set when the early buffer overflowed: the start converges to `unknown` whatever it returns. */
  overflowed = false;

  constructor(
    host: EmitterHost,
    context: ToolContext,
    endpointInstanceId: string,
    maxEarlyEvents: number,
    maxPendingEvents: number,
    sink: ToolEventSink | undefined,
  ) {
    this.#host = host;
    this.#context = context;
    this.#endpointInstanceId = endpointInstanceId;
    this.#maxEarlyEvents = maxEarlyEvents;
    this.#maxPendingEvents = maxPendingEvents;
    this.#sink = sink;
  }

  /** Emits one event (see {@linkcode ToolEventEmitter.emit}). */
  async emit(event: ToolEvent): Promise<void> {
    if (!(event instanceof ToolEvent)) throw new TypeError("event must be a ToolEvent");
    if (this.#pending >= this.#maxPendingEvents) {
      this.#host.report(
        "warn",
        "event.pending_overflow",
        `a ${event.type} event was refused: ${this.#maxPendingEvents} events wait to be published`,
      );
      throw new ToolProtocolError(
        ToolErrorCodes.ENDPOINT_EVENT_SINK_UNAVAILABLE,
        `Tool endpoint has ${this.#maxPendingEvents} events waiting to be published; ` +
          "await emit() before emitting more",
      );
    }
    this.#pending++;
    try {
      await this.#emit(event);
    } finally {
      this.#pending--;
    }
  }

  async #emit(event: ToolEvent): Promise<void> {
    const phase = terminalPhaseOf(event);
    let release = await this.#lock.acquire();
    try {
      if (this.#closed || this.#terminalPending) throw this.#afterTerminal(event);
      if (phase !== undefined) this.#terminalPending = true;
    } finally {
      release();
    }
    if (phase !== undefined) {
      try {
        await this.#host.establishTerminalForEvent(phase);
      } catch (error) {
        this.#host.report(
          "error",
          "event.terminal_failed",
          `the ${event.type} event's terminal barrier failed: the event was refused`,
          error,
        );
        this.#terminalPending = false;
        if (this.#closed) this.#finish();
        throw error;
      }
    }
    release = await this.#lock.acquire();
    let publishing = false;
    try {
      if (this.#converged) {
        // The handler ended the execution while this event waited: it has its terminal event.
        this.#terminalPending = false;
        throw this.#afterTerminal(event);
      }
      if (!this.#accepted && (this.#buffer?.length ?? 0) >= this.#maxEarlyEvents) {
        this.#terminalPending = false;
        this.overflowed = true;
        this.#host.report(
          "warn",
          "event.early_overflow",
          `a ${event.type} event was refused: more than ${this.#maxEarlyEvents} events before ` +
            "acceptance; the start converges to unknown",
        );
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
        this.#terminalSent = true;
        publishing = true;
      }
      if (!this.#accepted) {
        // An early terminal event: published by the caller of dispatch, with the response.
        (this.#buffer ??= []).push(envelope);
        return;
      }
      if (this.#sink === undefined) {
        throw new Error(
          "Tool endpoint emitted after acceptance without an asynchronous event sink: pass { eventSink } to dispatch()",
        );
      }
      await this.#publish(this.#sink, envelope);
    } finally {
      release();
      if (publishing && (this.#accepted || this.#rejected)) this.#finish();
    }
  }

  /**
   * Resolves once the execution's event progression ended: its terminal event was handed to the
   * sink and the sink settled, or the emitter closed without one (a failed start, a terminal
   * status observed through status or result, a convergence). Never rejects.
   */
  get finished(): Promise<void> {
    if (this.#isFinished) return SETTLED;
    return (this.#finished ??= withResolvers<void>()).promise;
  }

  /** Whether {@linkcode ExecutionEmitter.finished} has resolved. */
  get isFinished(): boolean {
    return this.#isFinished;
  }

  #finish(): void {
    if (this.#isFinished) return;
    this.#isFinished = true;
    this.#finished?.resolve();
    this.#host.ended();
  }

  /**
   * Marks the execution accepted and hands back the buffered early events, in order. When they
   * hold the terminal event, progression ends here: publishing them is the caller's part.
   */
  accept(): readonly ToolEnvelope[] {
    this.#accepted = true;
    const early = this.#buffer ?? NO_EVENTS;
    this.#buffer = undefined;
    if (this.#closed && !this.#terminalPending) this.#finish();
    return early;
  }

  /** Closes the emitter after a failed start; buffered events are dropped. */
  reject(): void {
    this.#rejected = true;
    this.#closed = true;
    this.#buffer = undefined;
    if (!this.#terminalPending) this.#finish();
  }

  /**
   * Closes the emitter once a terminal status or result is established elsewhere. A terminal
   * event already past its barrier is still published.
   */
  closeTerminal(): void {
    this.#closed = true;
    if (!this.#terminalPending) this.#finish();
  }

  /**
   * Ends progression for an execution the handler ended itself, without a provider event: every
   * later (or still waiting) emit fails with `FORGE_ENDPOINT_EVENT_AFTER_TERMINAL`, buffered
   * events are dropped, and, when `event` is given and the execution was accepted, that event is
   * published as the terminal one, in sequence after every event already published. Resolves
   * once it was published (rejects when the sink failed); without `event` nothing is published.
   */
  async converge(event?: ToolEvent): Promise<void> {
    this.#converged = true;
    this.#closed = true;
    this.#buffer = undefined;
    if (event === undefined || !this.#accepted || this.#sink === undefined) {
      this.#finish();
      return;
    }
    const release = await this.#lock.acquire();
    try {
      // A provider's terminal event got there first: it stays the only one.
      if (this.#terminalSent) return;
      this.#terminalSent = true;
      const envelope = makeEventEnvelope(event, this.#context, {
        endpointInstanceId: this.#endpointInstanceId,
        sequence: this.#nextSequence,
      });
      this.#nextSequence++;
      await this.#publish(this.#sink, envelope);
    } finally {
      release();
      this.#finish();
    }
  }

  /** Hands one envelope to the sink; a failure is reported, then raised to the emitter. */
  async #publish(sink: ToolEventSink, envelope: ToolEnvelope): Promise<void> {
    try {
      await sink(envelope);
    } catch (error) {
      this.#host.report(
        "error",
        "event.sink_failed",
        `publishing event ${envelope.sequence} (${String(envelope.payload.type)}) failed`,
        error,
      );
      throw error;
    }
  }

  #afterTerminal(event: ToolEvent): ToolProtocolError {
    this.#host.report(
      "warn",
      "event.after_terminal",
      `a ${event.type} event was refused: the execution's event progression already ended`,
    );
    return afterTerminal();
  }
}

function afterTerminal(): ToolProtocolError {
  return new ToolProtocolError(
    ToolErrorCodes.ENDPOINT_EVENT_AFTER_TERMINAL,
    "an event was emitted after terminal event progression closed",
  );
}

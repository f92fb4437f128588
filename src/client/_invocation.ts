// Kept whole: one class over one state (the handle, its control and terminal); the watch is split off.
/**
 * The invocation handle: the implementation of {@linkcode ToolInvocation} (acceptance, admission
 * recovery, status, result, cancel/stop, abort and dispose, release) over the client's exchange
 * table, hosting its event buffer; the result watch is its base class (`_watch.ts`).
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import type { ToolControlCommand, ToolSemantics } from "../endpoint/constants.ts";
import {
  type ToolAccepted,
  type ToolContext,
  type ToolControlResponse,
  type ToolEvent,
  type ToolExecutionKey,
  type ToolExecutionStatus,
  ToolResult,
  type ToolResultResponse,
} from "../endpoint/models.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import {
  makeControlRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
} from "../wire/factories.ts";
import {
  controlResponseFromPayload,
  resultResponseFromPayload,
  statusResponseFromPayload,
} from "../wire/execution_payloads.ts";
import { optionMessage } from "../_internal/options.ts";
import {
  ToolCallError,
  ToolClientError,
  ToolClientErrorCodes,
  type ToolClientErrorContext,
  type ToolClientExchange,
} from "./errors.ts";
import {
  EventBuffer,
  type EventBufferHost,
  type PushOutcome,
  type ToolEventRecord,
} from "./_events.ts";
import type { Config } from "./_config.ts";
import type { ExchangeSpec } from "./_exchanges.ts";
import { abortReason, type Answer, answerOf, reasonOf, unwrap } from "./_failure.ts";
import { ResultWatch } from "./_watch.ts";
import type { ToolInvocation } from "./invocation.ts";

/** What invocations use of the client. */
export interface ClientCore {
  config(): Config;
  exchange<T>(spec: ExchangeSpec<T>): Promise<T>;
  forget(invocation: Invocation): void;
  /** Marks a settled invocation whose stream stays open a while (it gives way at the limit). */
  linger(invocation: Invocation): void;
  /** Keeps background work (a control an abort sent) that `close()` lets finish. */
  track(work: Promise<void>): void;
}

/** The control command that ends an execution of `semantics`. */
function endCommand(semantics: "action" | "session"): ToolControlCommand {
  return semantics === "action" ? "cancel" : "stop";
}

/** The implementation of {@linkcode ToolInvocation}. */
export class Invocation extends ResultWatch implements ToolInvocation, EventBufferHost {
  readonly key: ToolExecutionKey;
  readonly context: ToolContext;
  readonly request: ToolEnvelope;
  readonly endpointInstanceId: string | undefined;
  acceptance: ToolAccepted | ToolResult | undefined = undefined;
  semantics: "action" | "session" | undefined;
  readonly #core: ClientCore;
  readonly #timeoutMs: number;
  readonly #buffer: EventBuffer;
  #outcome = withResolvers<ToolResult>();
  readonly #signal: AbortSignal | undefined;
  #unlinkSignal: (() => void) | undefined;
  #terminal: ToolResult | undefined;
  #ended = false;
  #controlSent = false;
  #tailTimer: LongTimeout | undefined;
  /** The instance events must come from: the addressed one, else the first event's. */
  #eventInstanceId: string | undefined;

  constructor(
    core: ClientCore,
    context: ToolContext,
    request: ToolEnvelope,
    semantics: ToolSemantics | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ) {
    super();
    const config = core.config();
    this.#core = core;
    this.key = context.executionKey;
    this.context = context;
    this.request = request;
    this.endpointInstanceId = request.endpointInstanceId;
    this.#eventInstanceId = request.endpointInstanceId;
    this.semantics = semantics === "query" ? undefined : semantics;
    this.#timeoutMs = timeoutMs;
    this.#buffer = new EventBuffer(this, config.maxBufferedEvents, config.reorderWindowMs);
    this.#signal = signal;
    // Nobody may be waiting when the outcome fails: that is not an unhandled rejection.
    this.#outcome.promise.catch(() => undefined);
  }

  get droppedEvents(): number {
    return this.#buffer.dropped;
  }

  get eventGaps(): number {
    return this.#buffer.gaps;
  }

  get events(): AsyncIterable<ToolEventRecord> {
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<ToolEventRecord>> => {
          this.watch();
          const record = await this.#buffer.next();
          return record === undefined
            ? { done: true, value: undefined }
            : { done: false, value: record };
        },
      }),
    };
  }

  // --- called by the client ------------------------------------------------------------------

  /** The invoke was answered: an acceptance or an initial terminal result. */
  accept(outcome: ToolAccepted | ToolResult): void {
    this.acceptance = outcome;
    if (outcome instanceof ToolResult) {
      this.#settleTerminal(outcome);
      return;
    }
    this.#linkSignal();
  }

  /** The invoke went unanswered: learn from the result whether the execution was admitted. */
  async recoverAdmission(timeout: ToolClientError): Promise<ToolInvocation> {
    let answer: Answer<ToolResultResponse>;
    try {
      answer = await this.resultRequest();
    } catch (error) {
      this.release(error);
      const closed = error instanceof ToolClientError &&
        error.code === ToolClientErrorCodes.CLOSED;
      throw new ToolClientError(
        closed
          ? "the client was closed while the unanswered invoke's admission was looked up"
          : `the invoke got no answer and its admission could not be learned: ${reasonOf(error)}`,
        {
          code: closed ? ToolClientErrorCodes.CLOSED : ToolClientErrorCodes.TIMEOUT,
          exchange: "invoke",
          invocationId: this.key.invocationId,
          attemptId: this.key.attemptId,
          attempts: timeout.attempts,
          outcome: "unknown",
          cause: error,
        },
      );
    }
    const response = "error" in answer ? undefined : answer.ok;
    if (response === undefined || response.status === "not_found") {
      this.release(undefined);
      throw new ToolClientError(
        "error" in answer
          ? `the invoke got no answer and the result request asking its admission was answered ` +
            `${answer.error.code}: ${answer.error.message}`
          : "the invoke got no answer and the endpoint did not know the execution when asked",
        {
          code: ToolClientErrorCodes.TIMEOUT,
          exchange: "invoke",
          invocationId: this.key.invocationId,
          attemptId: this.key.attemptId,
          attempts: timeout.attempts,
          outcome: response === undefined ? "unknown" : "not_admitted",
          cause: "error" in answer
            ? new ToolCallError(answer.error, "error", this.about("result"))
            : timeout,
        },
      );
    }
    if (response.result !== undefined) this.#settleTerminal(response.result);
    else this.#linkSignal();
    return this;
  }

  /**
   * Whether an event of `endpointInstanceId` belongs to this execution. An invoke sent without an
   * instance (a gateway that fills it in, such as a Dora caller of a ToolGateway node) learns it
   * from the first event: events carry the instance that runs the execution, and one execution
   * has one.
   */
  fromInstance(endpointInstanceId: string | undefined): boolean {
    if (endpointInstanceId === undefined) return false;
    this.#eventInstanceId ??= endpointInstanceId;
    return endpointInstanceId === this.#eventInstanceId;
  }

  pushEvent(sequence: number, event: ToolEvent): PushOutcome {
    const outcome = this.#buffer.push(sequence, event);
    if (outcome === "delivered") this.wake("event");
    if (this.#buffer.ended) this.endStream();
    return outcome;
  }

  /** The abort signal fired: send the ending control in the background and end the waits. */
  abort(reason: unknown): void {
    if (!this.#over() && !this.#controlSent) {
      this.#controlSent = true;
      this.#endInBackground("the caller aborted the invocation");
    }
    this.release(reason);
  }

  /**
   * Ends an execution nobody holds a handle to (a `query()` answered with an acceptance): sends
   * the ending control and returns its answer; `close()` lets it finish.
   */
  terminate(reason: string): Promise<ToolControlResponse> {
    this.#controlSent = true;
    const ending = this.#end(reason);
    this.#core.track(ending.then(() => undefined, () => undefined));
    return ending;
  }

  /**
   * The abort signal fired while the invoke waited for its answer: whether the execution was
   * admitted is unknown (the invoke may be lost, or still on its way), so the ending control is
   * sent only after a result request shows it pending; `not_found` sends nothing.
   */
  abortUnanswered(reason: unknown): void {
    if (!this.#controlSent) {
      this.#controlSent = true;
      this.#core.track(
        this.#endIfAdmitted("the caller aborted the invocation").then(
          undefined,
          (error) => this.#core.config().onError(error, this.key),
        ),
      );
    }
    this.release(reason);
  }

  async #endIfAdmitted(reason: string): Promise<void> {
    const response = unwrap(await this.resultRequest(), this.about("result"));
    if (response.status === "pending") await this.#end(reason);
  }

  /** Stops routing events and ends every wait (with `error`, when given). */
  release(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#unlinkSignal?.();
    this.#tailTimer?.clear();
    this.#tailTimer = undefined;
    this.#core.forget(this);
    const failure = error ?? new ToolClientError("the invocation was released", {
      code: ToolClientErrorCodes.CLOSED,
      invocationId: this.key.invocationId,
      attemptId: this.key.attemptId,
    });
    this.#buffer.end(this.#terminal === undefined ? { reason: failure } : undefined);
    if (this.#terminal === undefined) this.#outcome.reject(failure);
    this.wake("stopped");
  }

  // --- EventBufferHost ------------------------------------------------------------------------

  recover(reason: "gap" | "terminal"): void {
    // A skipped gap may have delivered the terminal event: the stream is over, so the handle
    // stops being routed (and counted against maxOpenInvocations) as when it arrives in order.
    if (this.#buffer.ended) this.endStream();
    this.wake(reason);
  }

  // --- ToolInvocation -------------------------------------------------------------------------

  async status(): Promise<ToolExecutionStatus> {
    return unwrap(
      await this.#core.exchange({
        ...this.#requestSpec("status", makeStatusRequestEnvelope(this.context, this.#ids())),
        parse: (message) => answerOf(message, statusResponseFromPayload),
      }),
      this.about("status"),
    );
  }

  result(): Promise<ToolResult> {
    if (this.#terminal !== undefined) return Promise.resolve(this.#terminal);
    // The first look is at once: an execution may already be over without a terminal event.
    this.wake("poll");
    this.watch();
    return this.#outcome.promise;
  }

  cancel(reason?: string): Promise<ToolControlResponse> {
    return this.#control("cancel", reason);
  }

  stop(reason?: string): Promise<ToolControlResponse> {
    return this.#control("stop", reason);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#over() && !this.#ended && !this.#controlSent) {
      this.#controlSent = true;
      try {
        await this.#end("the caller disposed the invocation");
      } catch (error) {
        this.#core.config().onError(error, this.key);
      }
    }
    this.release(undefined);
  }

  // --- internals ------------------------------------------------------------------------------

  /** Whether the execution is known to be over: its terminal result or terminal event came. */
  #over(): boolean {
    return this.#terminal !== undefined || this.#buffer.terminalSeen;
  }

  /** The fields of an error about an exchange of this invocation. */
  protected about(exchange: ToolClientExchange): ToolClientErrorContext {
    return {
      exchange,
      invocationId: this.key.invocationId,
      attemptId: this.key.attemptId,
      attempts: 1,
    };
  }

  #ids(): { requestId: string; endpointInstanceId: string | undefined } {
    return {
      requestId: this.#core.config().generateId(),
      endpointInstanceId: this.endpointInstanceId,
    };
  }

  #requestSpec(name: ToolClientExchange, request: ToolEnvelope) {
    return {
      name,
      request,
      maxAttempts: this.#core.config().maxAttempts,
      timeoutMs: this.#timeoutMs,
      signal: undefined,
      timeoutOutcome: undefined,
    } as const;
  }

  protected resultRequest(): Promise<Answer<ToolResultResponse>> {
    return this.#core.exchange({
      ...this.#requestSpec("result", makeResultRequestEnvelope(this.context, this.#ids())),
      parse: (message) => answerOf(message, resultResponseFromPayload),
    });
  }

  async #control(command: ToolControlCommand, reason?: string): Promise<ToolControlResponse> {
    if (reason !== undefined && typeof reason !== "string") {
      throw new TypeError(
        optionMessage(command, "reason", "a string", reason),
      );
    }
    const response = unwrap(
      await this.#core.exchange({
        ...this.#requestSpec(
          "control",
          makeControlRequestEnvelope(command, this.context, { ...this.#ids(), reason }),
        ),
        parse: (message) => answerOf(message, controlResponseFromPayload),
      }),
      this.about("control"),
    );
    if (response.status !== "unsupported" && this.semantics === undefined) {
      this.semantics = command === "cancel" ? "action" : "session";
    }
    return response;
  }

  /** Sends the control that ends the execution (learning `cancel` vs `stop` when unknown). */
  async #end(reason: string): Promise<ToolControlResponse> {
    if (this.semantics !== undefined) {
      return await this.#control(endCommand(this.semantics), reason);
    }
    const cancel = await this.#control("cancel", reason);
    return cancel.status === "unsupported" ? await this.#control("stop", reason) : cancel;
  }

  #endInBackground(reason: string): void {
    this.#core.track(
      this.#end(reason).then(
        () => undefined,
        (error) => this.#core.config().onError(error, this.key),
      ),
    );
  }

  #linkSignal(): void {
    const signal = this.#signal;
    if (signal === undefined || this.#ended) return;
    if (signal.aborted) {
      this.abort(abortReason(signal));
      return;
    }
    const onAbort = () => this.abort(abortReason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    this.#unlinkSignal = () => signal.removeEventListener("abort", onAbort);
  }

  #settleTerminal(result: ToolResult): void {
    if (this.#terminal !== undefined || this.#ended) return;
    this.#terminal = result;
    this.#unlinkSignal?.();
    this.#unlinkSignal = undefined;
    this.#outcome.resolve(result);
    this.wake("stopped");
    if (this.#buffer.ended) {
      this.#core.forget(this);
      return;
    }
    // The result came from a poll or the invoke answer while events may still be on their way
    // (a carrier publishes a response before the events that follow it): the stream stays open
    // one reorder window for them, then ends (held events delivered, gaps skipped).
    this.#tailTimer = setLongTimeout(() => this.endStream(), this.#core.config().reorderWindowMs);
    this.#core.linger(this);
  }

  /** Ends the event stream (held events delivered, gaps skipped) and stops routing events. */
  endStream(): void {
    this.#tailTimer?.clear();
    this.#tailTimer = undefined;
    this.#buffer.end(undefined);
    this.#core.forget(this);
  }

  // --- ResultWatch ----------------------------------------------------------------------------

  protected watchOver(): boolean {
    return this.#terminal !== undefined || this.#ended;
  }

  protected terminalEventSeen(): boolean {
    return this.#buffer.terminalSeen;
  }

  protected pollIntervals(): { pollIntervalMs: number; maxPollIntervalMs: number } {
    return this.#core.config();
  }

  protected pollRefused(error: ToolCallError): void {
    const waiting = this.#outcome;
    this.#outcome = withResolvers<ToolResult>();
    this.#outcome.promise.catch(() => undefined);
    waiting.reject(error);
  }

  protected polledTerminal(result: ToolResult): void {
    this.#settleTerminal(result);
  }

  protected watchFailed(error: unknown): void {
    this.release(error);
  }
}

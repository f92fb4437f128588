/**
 * The lifecycle of Action and Session executions: start, duplicate replay, the `unknown`
 * convergences, the terminal barrier of terminal events, and the status, result and control
 * requests, over the handler's {@linkcode ExecutionLedger}.
 *
 * @module
 */
import type { TerminalExecutionPhase, ToolControlCommand } from "../endpoint/constants.ts";
import { ToolEndpointError, ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  isTerminalPhase,
  ToolAccepted,
  ToolControlResponse,
  ToolError,
  type ToolEvent,
  type ToolExecutionKey,
  ToolExecutionStatus,
  type ToolOperationDescriptor,
  type ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import type { ActionToolEndpoint, SessionToolEndpoint, ToolCallOptions } from "../endpoint/spi.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeInvokeResponseEnvelope } from "../wire/factories.ts";
import type { InvokeRequestParts } from "../wire/invoke_request.ts";
import type { ControlRequest } from "../wire/execution_payloads.ts";
import { ExecutionEmitter, type ToolEventSink } from "./_emitter.ts";
import { unknownOutcomeEvent } from "./unknown_event.ts";
import type { ExecutionLedger, ExecutionRecord, UnknownErrorShape } from "./_ledger.ts";
import { raceAbort } from "./_abort.ts";
import type { ProviderCalls } from "./_calls.ts";
import type { ToolLogIds } from "../endpoint/log.ts";
import { endInvocationSpan, startInvocationSpan } from "../endpoint/trace.ts";
import { showValue } from "../_internal/repr.ts";
import { EMPTY_OBJECT } from "../_internal/json.ts";
import { andThen, SETTLED, withResolvers } from "../_internal/async.ts";

const UNKNOWN_START_ERROR = {
  code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
  message: "Start failed after dispatch; the execution outcome cannot be recovered",
  retryable: false,
} as const;

/** Why an accepted execution still running when close()'s grace ran out ended as `unknown`. */
const SHUTDOWN_UNKNOWN_ERROR = {
  code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
  message:
    "the endpoint shut down before the execution reached a terminal state; its outcome cannot be recovered",
  retryable: false,
} as const;

/** Why an execution whose acceptance never reached the caller ended as `unknown`. */
const UNDELIVERED_UNKNOWN_ERROR = {
  code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
  message:
    "the invoke response could not be published; the execution was aborted and its outcome cannot be recovered",
  retryable: false,
} as const;

/**
 * Why the provider's signal aborts when a control is accepted: one frozen `AbortError` per
 * command, shared by every execution (as `ABANDONED` in `_calls.ts` is). Constructing a `DOMException`
 * captures a stack trace, about 2.5 µs of CPU, a third of the cost of the whole control dispatch
 * in the Session round's profile; the reason's name and message are all a provider can rely on.
 */
const CONTROL_ACCEPTED: Readonly<Record<ToolControlCommand, DOMException>> = Object.freeze({
  cancel: Object.freeze(new DOMException("a cancel control was accepted", "AbortError")),
  stop: Object.freeze(new DOMException("a stop control was accepted", "AbortError")),
});

/**
 * The status of an execution accepted without details (`new ToolAccepted()`), shared: a status is
 * an immutable value, and one per acceptance was a model construction in every Action round.
 */
const ACCEPTED_STATUS = new ToolExecutionStatus({ phase: "accepted" });

/** Starts, replays, observes, controls and ends the executions of one handler. */
export class ExecutionLifecycle {
  readonly #ledger: ExecutionLedger;
  readonly #host: ProviderCalls;

  /** The lifecycle of the executions recorded in `ledger`, calling providers through `host`. */
  constructor(ledger: ExecutionLedger, host: ProviderCalls) {
    this.#ledger = ledger;
    this.#host = host;
  }

  // -------------------------------------------------------------------------------------------
  // Start and replay

  /**
   * Handles an Action or Session invoke: replays the outcome of a known key, or admits a new
   * execution and calls `start()`. Returns the response, then the events emitted before
   * acceptance.
   */
  async start(
    request: ToolEnvelope,
    operation: ToolOperationDescriptor,
    { request: toolRequest, context }: InvokeRequestParts,
    eventSink: ToolEventSink | undefined,
    callerSignal: AbortSignal | undefined,
  ): Promise<readonly ToolEnvelope[]> {
    const key = context.executionKey;
    const known = this.#ledger.find(key, operation.name);
    if (known !== undefined) {
      if (known.phase === "observed") {
        return [
          makeInvokeResponseEnvelope(
            new ToolError({
              code: ToolErrorCodes.ENDPOINT_EXECUTION_ALREADY_OBSERVED,
              message: "execution key has existing provider state but no replayable invoke outcome",
              retryable: false,
            }),
            request,
          ),
        ];
      }
      return [await this.#replay(known, request, callerSignal)];
    }
    const refusal = this.#host.admissionRefusal(context);
    if (refusal !== undefined) {
      this.#ledger.meter(operation.name).rejected++;
      return [makeInvokeResponseEnvelope(refusal, request)];
    }
    const execution = this.#ledger.admit(
      key,
      operation.name,
      operation.maxConcurrency,
      request.requestId,
    );
    if (execution instanceof ToolError) return [makeInvokeResponseEnvelope(execution, request)];
    const host = this.#host;
    if (host.tracer !== undefined) {
      execution.span = startInvocationSpan(host.tracer, this.#idsOf(execution));
    }
    const unlink = host.linkSignals(execution.abort!, context, execution);
    const emitter = new ExecutionEmitter(
      {
        establishTerminalForEvent: (phase) => this.#terminalForEvent(execution, phase),
        report: (level, event, message, error) =>
          host.log(level, event, message, this.#idsOf(execution), error),
        ended: () => this.#ledger.progressionEnded(execution, emitter),
      },
      context,
      host.endpointInstanceId,
      host.maxEarlyEvents,
      host.maxPendingEvents,
      eventSink,
    );
    execution.emitter = emitter;
    const provider = host.provider(operation.name) as ActionToolEndpoint | SessionToolEndpoint;
    let accepted: unknown;
    try {
      const start = host.call(() =>
        provider.start(toolRequest, context, emitter, { signal: execution.abort!.signal })
      );
      accepted = await (callerSignal === undefined
        ? start
        : raceAbort(start, host.callerFanout(callerSignal)));
      if (!(accepted instanceof ToolAccepted)) {
        throw new TypeError(
          `Tool endpoint start() must return a ToolAccepted: current value is ${
            showValue(accepted)
          }`,
        );
      }
      if (emitter.overflowed) {
        throw new ToolProtocolError(
          ToolErrorCodes.ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW,
          `Tool endpoint emitted more than ${host.maxEarlyEvents} events before acceptance`,
        );
      }
    } catch (error) {
      if (callerSignal?.aborted && error === callerSignal.reason) {
        host.log(
          "warn",
          "execution.caller_aborted",
          "the dispatch was abandoned while start() ran; the execution converged to unknown",
          this.#idsOf(execution),
        );
        this.#convergeStartUnknown(execution);
        execution.abort!.abort(callerSignal.reason);
        unlink();
        throw error;
      }
      if (error instanceof ToolEndpointError) {
        emitter.reject();
        if (execution.result !== undefined) {
          this.#ledger.settle(execution, execution.result, "terminal");
        } else {
          // A provider's rejection is an answer, not a failure: counted, not logged.
          this.#ledger.meter(operation.name).rejected++;
          endInvocationSpan(execution.span, "rejected");
          execution.span = undefined;
          this.#ledger.releasePermit(execution);
          this.#ledger.unlink(execution);
          this.#ledger.settle(execution, error.error, "rejected");
        }
      } else {
        host.log(
          "error",
          "provider.start_failed",
          "start() failed after dispatch; the execution converged to unknown",
          this.#idsOf(execution),
          error,
        );
        this.#convergeStartUnknown(execution);
      }
      unlink();
      return [makeInvokeResponseEnvelope(execution.outcome!, request)];
    }
    if (execution.result !== undefined) {
      this.#ledger.settle(execution, execution.result, "terminal");
    } else {
      if (execution.status === undefined) {
        execution.status = accepted.details === EMPTY_OBJECT
          ? ACCEPTED_STATUS
          : new ToolExecutionStatus({ phase: "accepted", details: accepted.details });
      }
      this.#ledger.settle(execution, accepted, "accepted");
    }
    const early = emitter.accept();
    const response = makeInvokeResponseEnvelope(execution.outcome!, request);
    return early.length === 0 ? [response] : [response, ...early];
  }

  async #replay(
    record: ExecutionRecord,
    request: ToolEnvelope,
    signal: AbortSignal | undefined,
  ): Promise<ToolEnvelope> {
    if (record.phase === "starting") {
      const ready = (record.ready ??= withResolvers<void>()).promise;
      await (signal === undefined ? ready : raceAbort(ready, this.#host.callerFanout(signal)));
    }
    if (record.outcome === undefined) {
      throw new Error("Execution record became ready without an outcome");
    }
    return makeInvokeResponseEnvelope(record.outcome, request);
  }

  /** The unknown convergence of a start that failed after dispatch; never retried. */
  #convergeStartUnknown(record: ExecutionRecord): void {
    record.emitter?.reject();
    if (record.result !== undefined) {
      // A terminal result established during start() survives a later failure.
      this.#ledger.settle(record, record.result, "terminal");
      return;
    }
    const result = this.#ledger.convergeUnknown(record, UNKNOWN_START_ERROR);
    this.#ledger.settle(record, result, "terminal");
  }

  // -------------------------------------------------------------------------------------------
  // Ending executions the handler gives up on

  /**
   * Ends the execution `request_id` admitted under `key` when its acceptance is its outcome (see
   * `ToolEndpointHandler.abandonInvoke`); false, changing nothing, for any other record.
   */
  abandon(key: ToolExecutionKey, operation: string, requestId: string | undefined): boolean {
    const record = this.#ledger.get(key);
    if (
      record === undefined || record.operation !== operation || !record.invoked ||
      record.admittedBy !== requestId || !(record.outcome instanceof ToolAccepted)
    ) return false;
    record.abort?.abort(
      new DOMException("the invoke response could not be published", "AbortError"),
    );
    void this.#convergeAccepted(record, UNDELIVERED_UNKNOWN_ERROR, false);
    this.#ledger.settle(record, record.result!, "terminal");
    return true;
  }

  /** Admitted executions whose event progression has not ended (at most the ledger's bound). */
  unfinishedExecutions(): ExecutionRecord[] {
    const executions: ExecutionRecord[] = [];
    for (const record of this.#ledger.records()) {
      if (record.invoked && record.emitter !== undefined && !record.emitter.isFinished) {
        executions.push(record);
      }
    }
    return executions;
  }

  /**
   * Ends an execution close()'s grace left unfinished: a running acceptance converges to
   * `unknown` and publishes its terminal event; any other waits for its own progression. Resolves
   * once that happened (never rejects).
   */
  shutDown(record: ExecutionRecord): Promise<unknown> {
    return record.phase === "accepted"
      ? this.#convergeAccepted(record, SHUTDOWN_UNKNOWN_ERROR, true)
      : record.emitter?.finished ?? SETTLED;
  }

  /**
   * Ends an accepted execution the handler gives up on: unless a terminal result exists, status
   * and result become `unknown` with `error` and the permit is released; then the emitter closes,
   * publishing the `unknown` terminal event when `publish` is set. Resolves once that event was
   * published; a failed publication is swallowed here (close() bounds the wait; the sink's owner
   * reports it).
   */
  async #convergeAccepted(
    record: ExecutionRecord,
    error: UnknownErrorShape,
    publish: boolean,
  ): Promise<void> {
    let event: ToolEvent | undefined;
    if (record.result === undefined) {
      this.#host.log("warn", "execution.unknown", error.message, this.#idsOf(record));
      const result = this.#ledger.convergeUnknown(record, error);
      record.phase = "terminal";
      if (publish) {
        event = unknownOutcomeEvent(result);
      }
    }
    try {
      // A terminal record whose progression ended no longer holds its emitter: nothing to end.
      await record.emitter?.converge(event);
    } catch {
      // Reported as event.sink_failed by the emitter; close() only bounds the wait.
    }
  }

  /** The identifier fields of records about one execution. */
  #idsOf(record: ExecutionRecord): ToolLogIds {
    return {
      endpointId: this.#host.endpointId,
      operation: record.operation,
      invocationId: record.key.invocationId,
      attemptId: record.key.attemptId,
      requestId: record.admittedBy,
    };
  }

  // -------------------------------------------------------------------------------------------
  // The provider's authoritative state

  // Each helper returns the provider's synchronous answer as it is, or the provider call's own
  // promise (no async wrapper), so a caller goes on at once or after its one `await`: a terminal
  // event releases its permit before a following invoke is admitted.

  /** Asks the provider for the result of `key`: check the answer with `resultResponse`. */
  #askResult(key: ToolExecutionKey, operation: string): unknown {
    const provider = this.#host.provider(operation) as ActionToolEndpoint | SessionToolEndpoint;
    return this.#host.callNow(() => provider.result(key, this.#host.callOptions()));
  }

  /** Asks the provider for the status of `key`: check the answer with `executionStatus`. */
  #askStatus(key: ToolExecutionKey, operation: string): unknown {
    const provider = this.#host.provider(operation) as ActionToolEndpoint | SessionToolEndpoint;
    return this.#host.callNow(() => provider.status(key, this.#host.callOptions()));
  }

  async #terminalForEvent(record: ExecutionRecord, phase: TerminalExecutionPhase): Promise<void> {
    const result = authoritativeResult(
      await this.#askResult(record.key, record.operation),
      "emitted a terminal event",
    );
    const status = new ToolExecutionStatus(
      phase === "failed" || phase === "unknown"
        ? { phase, error: result.error! }
        : { phase } as ConstructorParameters<typeof ToolExecutionStatus>[0],
    );
    if (this.#ledger.get(record.key) === undefined) {
      throw new Error("Tool event has no execution record");
    }
    this.#ledger.recordTerminal(record.key, record.operation, status, result, false);
  }

  // -------------------------------------------------------------------------------------------
  // Status, result, control

  /**
   * Answers a status request: the retained terminal status, else the provider's. What is known
   * synchronously (a retained status, a provider's synchronous answers) is returned as it is, not
   * as a promise: each `await` of a settled promise was a microtask turn of the dispatch.
   */
  status(
    key: ToolExecutionKey,
    operation: ToolOperationDescriptor,
  ): ToolExecutionStatus | Promise<ToolExecutionStatus> {
    const cached = this.#ledger.get(key)?.status;
    if (cached !== undefined && isTerminalPhase(cached.phase)) return cached;
    return andThen(
      this.#askStatus(key, operation.name),
      (answer) => this.#statusAnswered(key, operation.name, executionStatus(answer)),
    );
  }

  /** Records the provider's `status`; a terminal one with its authoritative result. */
  #statusAnswered(
    key: ToolExecutionKey,
    operation: string,
    status: ToolExecutionStatus,
  ): ToolExecutionStatus | Promise<ToolExecutionStatus> {
    if (!isTerminalPhase(status.phase)) {
      this.#ledger.recordStatus(key, operation, status);
      return status;
    }
    return andThen(this.#askResult(key, operation), (answer) => {
      const result = authoritativeResult(answer, "exposed a terminal phase");
      this.#ledger.recordTerminal(key, operation, status, result, true);
      return status;
    });
  }

  /**
   * Answers a result request: the retained terminal result, else the provider's (as it is when
   * known synchronously, see `status`).
   */
  result(
    key: ToolExecutionKey,
    operation: ToolOperationDescriptor,
  ): ToolResultResponse | Promise<ToolResultResponse> {
    const retained = this.#ledger.get(key)?.result;
    if (retained !== undefined) {
      return new ToolResultResponse({ status: "available", result: retained });
    }
    return andThen(this.#askResult(key, operation.name), (answer) => {
      const response = resultResponse(answer);
      if (response.status !== "available" || response.result === undefined) return response;
      const result = response.result;
      return andThen(this.#askStatus(key, operation.name), (status) => {
        this.#ledger.recordTerminal(key, operation.name, executionStatus(status), result, true);
        return response;
      });
    });
  }

  /**
   * Answers a control request; an accepted control aborts the execution's signal. A provider's
   * synchronous answer is returned as it is (see `status`).
   */
  control(
    { command, reason }: ControlRequest,
    key: ToolExecutionKey,
    operation: ToolOperationDescriptor,
  ): ToolControlResponse | Promise<ToolControlResponse> {
    const method = controlMethod(command, operation);
    if (method === undefined) {
      return this.#controlAnswered(
        new ToolControlResponse({ command, status: "unsupported" }),
        command,
        key,
      );
    }
    const provider = this.#host.provider(operation.name) as unknown as Record<
      string,
      (key: ToolExecutionKey, reason: string | undefined, options: ToolCallOptions) => unknown
    >;
    return andThen(
      this.#host.callNow(() => provider[method](key, reason, this.#host.callOptions())),
      (response) => {
        if (!(response instanceof ToolControlResponse)) {
          throw new TypeError(
            `Tool endpoint ${method}() must return a ToolControlResponse: current value is ${
              showValue(response)
            }`,
          );
        }
        return this.#controlAnswered(response, command, key);
      },
    );
  }

  /** Checks the provider's control response against `command`; an acceptance aborts. */
  #controlAnswered(
    control: ToolControlResponse,
    command: ToolControlCommand,
    key: ToolExecutionKey,
  ): ToolControlResponse {
    if (control.command !== command) {
      throw new ToolProtocolError(
        ToolErrorCodes.CORRELATION_MISMATCH,
        "provider control response command does not match request",
        "payload.response.command",
      );
    }
    if (control.status === "accepted") {
      const record = this.#ledger.get(key);
      record?.abort?.abort(CONTROL_ACCEPTED[command]);
    }
    return control;
  }
}

/** The provider's answer to `result()`, checked. */
function resultResponse(answer: unknown): ToolResultResponse {
  if (!(answer instanceof ToolResultResponse)) {
    throw new TypeError("Tool endpoint result() must return a ToolResultResponse");
  }
  return answer;
}

/** The provider's answer to `status()`, checked. */
function executionStatus(answer: unknown): ToolExecutionStatus {
  if (!(answer instanceof ToolExecutionStatus)) {
    throw new TypeError("Tool endpoint status() must return a ToolExecutionStatus");
  }
  return answer;
}

/**
 * The authoritative result in the provider's answer to `result()`, which a terminal phase or a
 * terminal event requires: when none is available, `FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE`
 * with "provider <what> before its authoritative result".
 */
function authoritativeResult(answer: unknown, what: string): ToolResult {
  const response = resultResponse(answer);
  if (response.status !== "available" || response.result === undefined) {
    throw new ToolProtocolError(
      ToolErrorCodes.ENDPOINT_TERMINAL_RESULT_UNAVAILABLE,
      `provider ${what} before its authoritative result`,
    );
  }
  return response.result;
}

function controlMethod(
  command: ToolControlCommand,
  operation: ToolOperationDescriptor,
): "cancel" | "stop" | undefined {
  if (command === "cancel" && operation.semantics === "action") return "cancel";
  if (command === "stop" && operation.semantics === "session") return "stop";
  return undefined;
}

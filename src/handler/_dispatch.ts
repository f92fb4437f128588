/**
 * Answering one execution request whose route is trusted: its typed validation (an invalid
 * payload is a correlated `tool.error`), then the Query path or the Action/Session lifecycle, and
 * the answer or log record of a status, result or control request that failed.
 *
 * @module
 */
import { ToolEndpointError, ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { ToolError, type ToolOperationDescriptor } from "../endpoint/models.ts";
import { executionKeyOf, type ToolEnvelope } from "../wire/envelope.ts";
import {
  makeControlResponseEnvelope,
  makeErrorResponseEnvelope,
  makeResultResponseEnvelope,
  makeStatusResponseEnvelope,
} from "../wire/factories.ts";
import { invokeRequestFromEnvelope, type InvokeRequestParts } from "../wire/invoke_request.ts";
import { checkTypedEnvelope } from "../wire/validate.ts";
import { type ControlRequest, controlRequestOf } from "../wire/execution_payloads.ts";
import { logIdsOf } from "../endpoint/log.ts";
import type { ToolEventSink } from "./_emitter.ts";
import type { ExecutionLifecycle } from "./_lifecycle.ts";
import type { ProviderCalls } from "./_calls.ts";
import type { QueryPath } from "./_query.ts";
import type { Pending, PendingSet } from "./_abort.ts";

/**
 * Provider failures answered as a protocol error that are the provider's fault (a changed
 * terminal record, a backward transition...), logged as such; the other protocol errors of a
 * status, result or control request (a key bound to another operation, a full ledger, a call
 * abandoned at close) are the caller's or the handler's.
 */
const PROVIDER_FAULTS: ReadonlySet<string> = new Set([
  ToolErrorCodes.ENDPOINT_TERMINAL_CHANGED,
  ToolErrorCodes.ENDPOINT_TERMINAL_MISMATCH,
  ToolErrorCodes.ENDPOINT_TERMINAL_RESULT_UNAVAILABLE,
  ToolErrorCodes.ENDPOINT_INVALID_TRANSITION,
  ToolErrorCodes.CORRELATION_MISMATCH,
]);

/** The record event of a failed status, result or control request. */
const REQUEST_FAILED_EVENT: Readonly<Record<string, string>> = {
  "tool.status.request": "provider.status_failed",
  "tool.result.request": "provider.result_failed",
  "tool.control.request": "provider.control_failed",
};

function protocolErrorResponse(error: ToolProtocolError, request: ToolEnvelope): ToolEnvelope {
  return makeErrorResponseEnvelope(
    new ToolError({
      code: error.code,
      message: error.message,
      retryable: false,
      details: error.path === undefined ? {} : { path: error.path },
    }),
    request,
  );
}

/** Options of {@linkcode ToolEndpointHandler.dispatch}. */
export interface DispatchOptions {
  /** Publishes events emitted after acceptance (required for late Action/Session events). */
  readonly eventSink?: ToolEventSink;
  /**
   * Abandons the dispatch: when it aborts while `start()` is pending, the execution converges to
   * `unknown` (waking duplicates), the provider's signal aborts, and the dispatch rejects with
   * the signal's reason.
   */
  readonly signal?: AbortSignal;
}

/** The answering of one handler's execution requests. */
export class RequestAnswers {
  readonly #operations: ReadonlyMap<string, ToolOperationDescriptor>;
  readonly #validateRoute: (request: ToolEnvelope) => void;
  readonly #queries: QueryPath;
  readonly #lifecycle: ExecutionLifecycle;
  readonly #calls: ProviderCalls;
  readonly #answering: PendingSet;

  /**
   * Answers through these parts; `validateRoute` checks the route of an untrusted request;
   * `answering` holds an entry for each answer in progress (close() waits for them).
   */
  constructor(
    operations: ReadonlyMap<string, ToolOperationDescriptor>,
    validateRoute: (request: ToolEnvelope) => void,
    queries: QueryPath,
    lifecycle: ExecutionLifecycle,
    calls: ProviderCalls,
    answering: PendingSet,
  ) {
    this.#operations = operations;
    this.#validateRoute = validateRoute;
    this.#queries = queries;
    this.#lifecycle = lifecycle;
    this.#calls = calls;
    this.#answering = answering;
  }

  /**
   * Answers `request` (see the handler's dispatch); `routed`: its route was checked. `entry`, the
   * answer's entry in `answering`, leaves it when the answer is settled, whichever way.
   */
  async answer(
    request: ToolEnvelope,
    options: DispatchOptions,
    routed: boolean,
    entry: Pending,
  ): Promise<readonly ToolEnvelope[]> {
    try {
      if (!routed) this.#validateRoute(request);
      // The typed validation, once: an invoke request's models are built in the same pass, a
      // control request's command read in it (the checks and errors of its validator), and a
      // status or result request a Wire factory built and validated is not checked again.
      let parts: InvokeRequestParts | undefined;
      let control: ControlRequest | undefined;
      try {
        if (request.messageType === "tool.invoke.request") {
          parts = invokeRequestFromEnvelope(request);
        } else if (request.messageType === "tool.control.request") {
          control = controlRequestOf(request);
        } else checkTypedEnvelope(request);
      } catch (error) {
        if (error instanceof ToolProtocolError) return [protocolErrorResponse(error, request)];
        throw error;
      }
      const operation = this.#operations.get(request.operation!)!;
      if (parts !== undefined) {
        return operation.semantics === "query"
          ? [await this.#queries.invoke(request, operation, parts)]
          : await this.#lifecycle.start(
            request,
            operation,
            parts,
            options.eventSink,
            options.signal,
          );
      }
      if (operation.semantics === "query") {
        throw new ToolProtocolError(
          ToolErrorCodes.UNSUPPORTED_OPERATION,
          "Query operations do not support status, result, or control requests",
          "operation",
        );
      }
      const key = executionKeyOf(request);
      try {
        switch (request.messageType) {
          case "tool.status.request": {
            // An answer known synchronously comes as it is: no await, no microtask turn.
            const status = this.#lifecycle.status(key, operation);
            return [
              makeStatusResponseEnvelope(
                status instanceof Promise ? await status : status,
                request,
              ),
            ];
          }
          case "tool.result.request": {
            const result = this.#lifecycle.result(key, operation);
            return [
              makeResultResponseEnvelope(
                result instanceof Promise ? await result : result,
                request,
              ),
            ];
          }
          default: {
            const response = this.#lifecycle.control(control!, key, operation);
            return [
              makeControlResponseEnvelope(
                response instanceof Promise ? await response : response,
                request,
              ),
            ];
          }
        }
      } catch (error) {
        if (error instanceof ToolEndpointError) {
          return [makeErrorResponseEnvelope(error.error, request)];
        }
        const isProtocol = error instanceof ToolProtocolError;
        if (!isProtocol || PROVIDER_FAULTS.has(error.code)) {
          this.#calls.log(
            "error",
            REQUEST_FAILED_EVENT[request.messageType],
            `answering ${request.messageType} failed through the provider: ${
              isProtocol ? "it is answered with a protocol error" : "it is not answered"
            }`,
            logIdsOf(request),
            error,
          );
        }
        if (isProtocol) return [protocolErrorResponse(error, request)];
        throw error;
      }
    } finally {
      this.#answering.leave(entry);
    }
  }
}

/**
 * The Query path of a handler: admission against `max_concurrency`, the provider call, deadline
 * enforcement on its answer, and the per-operation counters. Queries are not deduplicated and not
 * retained (the Action/Session lifecycle is in `_lifecycle.ts`).
 *
 * @module
 */
import { ToolEndpointError, ToolErrorCodes } from "../endpoint/errors.ts";
import { ToolError, type ToolOperationDescriptor, ToolResult } from "../endpoint/models.ts";
import type { QueryToolEndpoint } from "../endpoint/spi.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeInvokeResponseEnvelope } from "../wire/factories.ts";
import type { InvokeRequestParts } from "../wire/invoke_request.ts";
import { showValue } from "../_internal/repr.ts";
import { logIdsOf } from "../endpoint/log.ts";
import { endInvocationSpan, startInvocationSpan } from "../endpoint/trace.ts";
import { atCapacity } from "./_ledger.ts";
import { OperationMeter } from "./_metrics.ts";
import { ABANDONED, type ProviderCalls, rejection } from "./_calls.ts";

/** The failure of a Query that ended (threw or answered `succeeded`) after its deadline. */
const QUERY_DEADLINE_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_DEADLINE_EXCEEDED,
  message: "deadline_ms passed before the query finished",
  retryable: false,
});

/** The Query operations of one handler. */
export class QueryPath {
  readonly #calls: ProviderCalls;
  /** The counters of Query operations (the ledger keeps those of Actions and Sessions). */
  readonly #meters = new Map<string, OperationMeter>();
  readonly #active = new Map<string, number>();

  /** The Query operations among `operations`, calling providers through `calls`. */
  constructor(operations: readonly ToolOperationDescriptor[], calls: ProviderCalls) {
    this.#calls = calls;
    for (const operation of operations) {
      if (operation.semantics === "query") {
        this.#active.set(operation.name, 0);
        this.#meters.set(operation.name, new OperationMeter());
      }
    }
  }

  /** The counters of a Query operation. */
  meter(name: string): OperationMeter {
    return this.#meters.get(name)!;
  }

  /** Query calls in progress per Query operation, in descriptor order. */
  get active(): ReadonlyMap<string, number> {
    return this.#active;
  }

  /** Handles a Query invoke and returns its correlated response. */
  async invoke(
    request: ToolEnvelope,
    operation: ToolOperationDescriptor,
    { request: toolRequest, context }: InvokeRequestParts,
  ): Promise<ToolEnvelope> {
    const meter = this.#meters.get(operation.name)!;
    const refusal = this.#calls.admissionRefusal(context);
    if (refusal !== undefined) {
      meter.rejected++;
      return makeInvokeResponseEnvelope(refusal, request);
    }
    // Beyond the reference, which runs every Query at once: a Query holds one of the operation's
    // max_concurrency slots while its provider call is in progress.
    if (this.#active.get(operation.name)! >= operation.maxConcurrency) {
      meter.rejected++;
      return makeInvokeResponseEnvelope(atCapacity(operation.name), request);
    }
    meter.admitted++;
    const admittedAt = performance.now();
    const tracer = this.#calls.tracer;
    const span = tracer === undefined ? undefined : startInvocationSpan(tracer, logIdsOf(request));
    const provider = this.#calls.provider(operation.name) as QueryToolEndpoint;
    const controller = new AbortController();
    const unlink = this.#calls.linkSignals(controller, context);
    this.#active.set(operation.name, this.#active.get(operation.name)! + 1);
    const call = this.#calls.call(() =>
      provider.query(toolRequest, context, { signal: controller.signal })
    );
    let result: unknown;
    try {
      result = await call;
    } catch (error) {
      if (error instanceof ToolEndpointError) {
        // A provider's rejection is an answer, not a failure: counted, not logged.
        meter.rejected++;
        endInvocationSpan(span, "rejected");
        return makeInvokeResponseEnvelope(error.error, request);
      }
      if (error === ABANDONED) {
        meter.finish("unknown", admittedAt);
        endInvocationSpan(span, "unknown");
        // The query may have had effects: its outcome is unknown, not a rejection.
        return makeInvokeResponseEnvelope(
          new ToolResult({
            status: "unknown",
            error: rejection(
              ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
              "the endpoint handler closed before the query finished",
              false,
            ),
          }),
          request,
        );
      }
      if (controller.signal.aborted && this.#calls.deadlinePassed(context)) {
        meter.finish("failed", admittedAt);
        endInvocationSpan(span, "failed");
        return makeInvokeResponseEnvelope(
          new ToolResult({ status: "failed", error: QUERY_DEADLINE_ERROR }),
          request,
        );
      }
      meter.finish("failed", admittedAt);
      endInvocationSpan(span, "failed");
      this.#calls.log(
        "error",
        "provider.query_failed",
        "query() failed; the request is not answered",
        logIdsOf(request),
        error,
      );
      throw error;
    } finally {
      unlink();
      this.#active.set(operation.name, this.#active.get(operation.name)! - 1);
    }
    if (!(result instanceof ToolResult)) {
      const error = new TypeError(
        `QueryToolEndpoint.query() must return a ToolResult: current value is ${showValue(result)}`,
      );
      meter.finish("failed", admittedAt);
      endInvocationSpan(span, "failed");
      this.#calls.log(
        "error",
        "provider.query_failed",
        "query() returned no ToolResult; the request is not answered",
        logIdsOf(request),
        error,
      );
      throw error;
    }
    let answer: ToolResult = result;
    if (
      result.status === "succeeded" && this.#calls.enforceDeadlines &&
      this.#calls.deadlinePassed(context)
    ) {
      // As when it throws once its signal aborted at the deadline: an answer after the deadline
      // is no success, whether or not the provider looked at its signal.
      this.#calls.log(
        "warn",
        "provider.deadline_exceeded",
        `query() answered succeeded after deadline_ms ${context.deadlineMs} passed: ` +
          "answered failed with FORGE_ENDPOINT_DEADLINE_EXCEEDED, its outputs kept",
        logIdsOf(request),
      );
      answer = new ToolResult({
        status: "failed",
        error: QUERY_DEADLINE_ERROR,
        outputs: result.outputs,
      });
    }
    meter.finish(answer.status, admittedAt);
    endInvocationSpan(span, answer.status);
    return makeInvokeResponseEnvelope(answer, request);
  }
}

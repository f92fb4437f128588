/**
 * The answers the gateway makes on behalf of a provider that cannot answer (no instance,
 * capacity, replaced instance), their delivery to callers, and the router's log records.
 *
 * @module
 */
import { ToolErrorCodes } from "../endpoint/errors.ts";
import {
  ToolControlResponse,
  ToolError,
  ToolExecutionStatus,
  ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import { logSafely, type ToolLogger, type ToolLogLevel } from "../endpoint/log.ts";
import type { EndpointRegistryRecord } from "../node/registry_records.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import {
  makeControlResponseEnvelope,
  makeErrorResponseEnvelope,
  makeInvokeResponseEnvelope,
  makeResultResponseEnvelope,
  makeStatusResponseEnvelope,
} from "../wire/factories.ts";
import { controlRequestFromPayload } from "../wire/execution_payloads.ts";
import { type Caller, describe, type GatewayCounters, type PendingExchange } from "./_records.ts";

/** The retryable (by default) `FORGE_ENDPOINT_UNAVAILABLE` error for `endpointId`. */
export function unavailableError(
  endpointId: string,
  message?: string,
  retryable = true,
): ToolError {
  return new ToolError({
    code: ToolErrorCodes.ENDPOINT_UNAVAILABLE,
    message: message ?? `endpoint '${endpointId}' has no current instance`,
    retryable,
    details: { endpoint_id: endpointId },
  });
}

/** The `FORGE_ENDPOINT_OUTCOME_UNKNOWN` error of an execution whose instance was replaced. */
export function replacedError(instanceId: string, current: EndpointRegistryRecord): ToolError {
  return new ToolError({
    code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
    message: `endpoint instance '${instanceId}' of '${current.endpointId}' was replaced by ` +
      `'${current.endpointInstanceId}'; the outcome of the execution cannot be recovered`,
    retryable: false,
    details: {
      endpoint_instance_id: instanceId,
      current_endpoint_instance_id: current.endpointInstanceId,
    },
  });
}

/**
 * What an endpoint answers for an execution key it does not know (the `defineEndpoint`
 * providers' answer, `FORGE_ENDPOINT_EXECUTION_NOT_FOUND`): the gateway answers a stranger the
 * same, so a caller cannot learn that another caller's key exists.
 */
export const NOT_FOUND_ERROR: ToolError = new ToolError({
  code: ToolErrorCodes.ENDPOINT_EXECUTION_NOT_FOUND,
  message: "no execution with this key is known here: it was never started or it was forgotten",
  retryable: false,
});

/** The rejection of an invoke that reuses another caller's execution key. */
export const OWNED_ERROR: ToolError = new ToolError({
  code: ToolErrorCodes.DEDUP_CONFLICT,
  message: "the execution key is already in use by another caller",
  retryable: false,
});

/** Delivers answers and events to callers, counts them, and logs what the router drops. */
export class GatewayAnswers {
  readonly #logger: ToolLogger;
  readonly #stats: GatewayCounters;

  constructor(logger: ToolLogger, stats: GatewayCounters) {
    this.#logger = logger;
    this.#stats = stats;
  }

  /** Answers `request` with a `FORGE_ENDPOINT_UNAVAILABLE` error (counted `unavailable`). */
  unavailable(caller: Caller, request: ToolEnvelope, message: string, retryable = true): void {
    this.#stats.unavailable += 1;
    this.#reject(ToolErrorCodes.ENDPOINT_UNAVAILABLE);
    this.deliver(
      caller,
      makeErrorResponseEnvelope(unavailableError(request.endpointId, message, retryable), request),
    );
  }

  /** The `unknown` outcome in the answer type of `request`. */
  unknown(caller: Caller, request: ToolEnvelope, error: ToolError): void {
    this.#stats.unknown += 1;
    this.#reject(error.code);
    const result = new ToolResult({ status: "unknown", error });
    let answer: ToolEnvelope;
    switch (request.messageType) {
      case "tool.invoke.request":
        answer = makeInvokeResponseEnvelope(result, request);
        break;
      case "tool.status.request":
        answer = makeStatusResponseEnvelope(
          new ToolExecutionStatus({ phase: "unknown", error }),
          request,
        );
        break;
      case "tool.result.request":
        answer = makeResultResponseEnvelope(
          new ToolResultResponse({ status: "available", result }),
          request,
        );
        break;
      default:
        // The execution is terminal (unknown) when the command arrives.
        answer = makeControlResponseEnvelope(
          new ToolControlResponse({
            command: controlRequestFromPayload(request.payload).command,
            status: "terminal",
          }),
          request,
        );
    }
    this.deliver(caller, answer);
  }

  /**
   * Answers a status, result or control request as an endpoint answers one for a key it does not
   * know (status: `tool.error`; result: `not_found`; control: `rejected`), counted `refused`.
   */
  notFound(caller: Caller, request: ToolEnvelope): void {
    this.#stats.refused += 1;
    this.#reject(NOT_FOUND_ERROR.code);
    let answer: ToolEnvelope;
    switch (request.messageType) {
      case "tool.result.request":
        answer = makeResultResponseEnvelope(
          new ToolResultResponse({ status: "not_found" }),
          request,
        );
        break;
      case "tool.control.request":
        answer = makeControlResponseEnvelope(
          new ToolControlResponse({
            command: controlRequestFromPayload(request.payload).command,
            status: "rejected",
            error: NOT_FOUND_ERROR,
          }),
          request,
        );
        break;
      default:
        answer = makeErrorResponseEnvelope(NOT_FOUND_ERROR, request);
    }
    this.deliver(caller, answer);
  }

  /** Rejects an invoke that reuses another caller's execution key (counted `refused`). */
  owned(caller: Caller, request: ToolEnvelope): void {
    this.#stats.refused += 1;
    this.#reject(OWNED_ERROR.code);
    this.deliver(
      caller,
      makeInvokeResponseEnvelope(OWNED_ERROR, request),
    );
  }

  /** Answers `request` with a retryable `FORGE_ENDPOINT_CAPACITY` error. */
  capacity(
    caller: Caller,
    request: ToolEnvelope,
    message: string,
    details: Record<string, unknown>,
  ): void {
    this.#stats.unavailable += 1;
    this.#reject(ToolErrorCodes.ENDPOINT_CAPACITY);
    this.deliver(
      caller,
      makeErrorResponseEnvelope(
        new ToolError({
          code: ToolErrorCodes.ENDPOINT_CAPACITY,
          message,
          retryable: true,
          details,
        }),
        request,
      ),
    );
  }

  /** How many answers the gateway made itself, by error code. */
  readonly rejections = new Map<string, number>();

  #reject(code: string): void {
    this.rejections.set(code, (this.rejections.get(code) ?? 0) + 1);
  }

  /** Hands `message` to `caller`; a caller gone or a throwing callback is logged, never thrown. */
  deliver(caller: Caller, message: ToolEnvelope): void {
    if (caller.closed || caller.deliver === undefined) {
      this.log(
        "debug",
        "gateway.caller_gone",
        `${describe(message)} dropped: its caller is not connected`,
      );
      return;
    }
    try {
      caller.deliver(message);
    } catch (error) {
      this.log(
        "error",
        "gateway.deliver_failed",
        `a caller's deliver callback threw on ${describe(message)}: ${error}`,
        error,
      );
    }
  }

  log(level: ToolLogLevel, event: string, message: string, error?: unknown): void {
    logSafely(
      this.#logger,
      error === undefined ? { level, event, message } : { level, event, message, error },
    );
  }

  /** Logs an exchange forgotten after `timeoutMs` without an answer (`gateway.no_answer`). */
  noAnswer(exchange: PendingExchange, timeoutMs: number): void {
    this.log(
      "warn",
      "gateway.no_answer",
      `no answer within ${timeoutMs} ms on route '${exchange.routeId}' to ${
        describe(exchange.request)
      }; the exchange is forgotten`,
    );
  }

  /** Counts a dropped provider message and logs it (`gateway.dropped`). */
  drop(message: string): void {
    this.#stats.dropped += 1;
    this.log("warn", "gateway.dropped", `dropped: ${message}`);
  }
}

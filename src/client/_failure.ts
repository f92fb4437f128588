/**
 * The client's failure model in one place: how an answer (`tool.error`, a rejection) and a
 * transport's or resolver's failure become a {@linkcode ToolClientError} or
 * {@linkcode ToolCallError} with the call's exchange, execution ids and outcome.
 *
 * @module
 */
import { formatThrown } from "../endpoint/log.ts";
import type { ToolSemantics } from "../endpoint/constants.ts";
import type { ToolError } from "../endpoint/models.ts";
import { ToolEndpointError, ToolProtocolError } from "../endpoint/errors.ts";
import { builtAnswerOf, type ToolEnvelope } from "../wire/envelope.ts";
import { errorFromPayload } from "../wire/execution_payloads.ts";
import {
  ToolCallError,
  ToolClientError,
  type ToolClientErrorCode,
  ToolClientErrorCodes,
  type ToolClientErrorContext,
  type ToolClientExchange,
  type ToolClientOutcome,
} from "./errors.ts";

/** An exchange's answer: the decoded payload, or the `tool.error` the endpoint sent. */
export type Answer<T> = { readonly ok: T } | { readonly error: ToolError };

/**
 * `response` decoded: its `tool.error`, else its payload through `decode`. A response a Wire
 * factory built from a model its constructor built (in process) answers with that model, which is
 * what `decode` would build again; the exchange checked the response's type against its request.
 */
export function answerOf<T>(response: ToolEnvelope, decode: (payload: unknown) => T): Answer<T> {
  const built = builtAnswerOf(response);
  if (built !== undefined) {
    return response.messageType === "tool.error"
      ? { error: built as ToolError }
      : { ok: built as T };
  }
  return response.messageType === "tool.error"
    ? { error: errorFromPayload(response.payload) }
    : { ok: decode(response.payload) };
}

/** The exchange and execution of a request, for the errors about it. */
export function contextOf(
  exchange: ToolClientExchange,
  request: ToolEnvelope,
): ToolClientErrorContext {
  return {
    exchange,
    invocationId: request.invocationId,
    attemptId: request.attemptId,
    attempts: 1,
  };
}

/** The answer's value, or its `tool.error` thrown as a {@linkcode ToolCallError}. */
export function unwrap<T>(answer: Answer<T>, context: ToolClientErrorContext): T {
  if ("error" in answer) throw new ToolCallError(answer.error, "error", context);
  return answer.ok;
}

/** The reason a thrown value gives, on one line, for an error message. */
export function reasonOf(error: unknown): string {
  if (error instanceof ToolProtocolError) return error.toString();
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return formatThrown(error);
}

/**
 * `error` (of the client's family, from a transport or a resolver) with the call's exchange and
 * execution fields; its code, message, retryable and outcome are kept.
 */
export function inContext(
  error: ToolClientError,
  context: ToolClientErrorContext,
): ToolClientError {
  const outcome = "outcome" in context ? context.outcome : error.outcome;
  if (error instanceof ToolCallError) {
    return new ToolCallError(error.error, error.kind, { ...context, outcome, cause: error.cause });
  }
  return new ToolClientError(error.message.slice(error.code.length + 2), {
    ...context,
    code: error.code as ToolClientErrorCode,
    retryable: error.retryable,
    outcome,
    cause: error.cause,
  });
}

/** What an aborted call rejects with: the signal's reason, else an `AbortError`. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException("The call was aborted", "AbortError");
}

/** The error of `query()` on an Action or Session, or `invoke()` on a Query (nothing sent). */
export function wrongSemantics(
  operation: string,
  endpointId: string,
  semantics: ToolSemantics,
  use: string,
): ToolClientError {
  const article = semantics === "action" ? "an" : "a";
  return new ToolClientError(
    `operation '${operation}' of '${endpointId}' is ${article} ${semantics}: use ${use}`,
    { code: ToolClientErrorCodes.WRONG_SEMANTICS, exchange: "invoke", outcome: "not_sent" },
  );
}

/**
 * The error a failed `send` of attempt `attempt` rejects its exchange with. `aboutFate`: the
 * exchange is an invoke, whose failure says what became of the execution (`outcome`).
 */
export function sendFailure(
  name: ToolClientExchange,
  error: unknown,
  context: ToolClientErrorContext & { readonly attempts: number },
  aboutFate: boolean,
): ToolClientError {
  const attempt = context.attempts;
  if (error instanceof ToolClientError) {
    // The transport knows more (an in-process handler refused or failed the request).
    const outcome: ToolClientOutcome | undefined = !aboutFate
      ? undefined
      : attempt > 1 && error.outcome !== "unknown"
      ? "unknown"
      : error.outcome;
    return inContext(error, { ...context, outcome });
  }
  return new ToolClientError(`the ${name} request could not be sent: ${reasonOf(error)}`, {
    ...context,
    code: ToolClientErrorCodes.SEND_FAILED,
    outcome: !aboutFate ? undefined : attempt === 1 ? "not_sent" : "unknown",
    cause: error,
  });
}

/**
 * The error an invoke rejects with when the transport could not name the endpoint's instance
 * (a gateway without one), or the `descriptor` function failed (`what` says which): nothing was
 * sent.
 */
export function resolveFailure(
  error: unknown,
  notSent: ToolClientErrorContext,
  endpointId: string,
  what = "endpoint instance",
): ToolClientError {
  if (error instanceof ToolClientError) return inContext(error, notSent);
  if (error instanceof ToolEndpointError) {
    return new ToolCallError(error.error, "error", { ...notSent, cause: error });
  }
  return new ToolClientError(
    `the ${what} of '${endpointId}' could not be resolved: ${reasonOf(error)}`,
    { ...notSent, code: ToolClientErrorCodes.SEND_FAILED, cause: error },
  );
}

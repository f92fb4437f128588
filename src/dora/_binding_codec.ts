/**
 * How the Dora binding writes its answers: the output codec of each entry point (Arrow record
 * batches or IPC bytes, with its sink) and the correlated `tool.error` fallbacks that answer a
 * trusted request whose response cannot be sent. Private to `src/dora/`.
 *
 * @module
 */
import { ToolErrorCodes, type ToolProtocolError } from "../endpoint/errors.ts";
import { ToolError } from "../endpoint/models.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeErrorResponseEnvelope } from "../wire/factories.ts";

/** The message of a `binding.dispatch_failed` record. */
export const DISPATCH_FAILED =
  "the handler failed on a trusted request; it is answered FORGE_ENDPOINT_INTERNAL";

/** The message of a `tool.error` for a message beyond the configured size limit. */
export const SIZE_LIMIT_MESSAGE = "ToolEndpoint message exceeds the configured size limit";

/** How one entry point writes its messages: as Arrow record batches or as IPC bytes. */
export interface OutputCodec<T> {
  readonly encode: (envelope: ToolEnvelope, options: { maxMessageBytes: number }) => T;
  readonly sink: ((message: T) => void | PromiseLike<void>) | undefined;
}

/**
 * The correlated `tool.error` answering `request` for a protocol error: the error's code, with
 * the size limits in `details` when the message was too large.
 */
export function correlatedProtocolError(
  error: ToolProtocolError,
  request: ToolEnvelope,
  maxMessageBytes: number,
  maxRequestBytes?: number,
): ToolEnvelope {
  const details: Record<string, number> = {};
  let message = "ToolEndpoint response violates the Wire protocol";
  if (error.code === ToolErrorCodes.MESSAGE_TOO_LARGE) {
    message = SIZE_LIMIT_MESSAGE;
    details.max_message_bytes = maxMessageBytes;
    if (maxRequestBytes !== undefined) details.max_request_bytes = maxRequestBytes;
  }
  return makeErrorResponseEnvelope(
    new ToolError({ code: error.code, message, retryable: false, details }),
    request,
  );
}

/** The correlated `FORGE_ENDPOINT_INTERNAL` answering `request` when the endpoint failed. */
export function correlatedInternalError(request: ToolEnvelope): ToolEnvelope {
  return makeErrorResponseEnvelope(
    new ToolError({
      code: ToolErrorCodes.ENDPOINT_INTERNAL,
      message: "endpoint failed to produce a valid response",
      retryable: false,
    }),
    request,
  );
}

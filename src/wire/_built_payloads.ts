/**
 * @internal The response payloads, and the invoke request payload, of models their own
 * constructors built, as canonical values: each function returns exactly the payload the matching
 * `*ToPayload` adapter returns once the envelope has copied it (same members, keys inserted in
 * code point order, the same canonical facts on the root), or `undefined` when a model is not
 * marked (`isBuiltModel`, `isBuiltRequestModel`) or one of its
 * JSON fields is not a canonical value within the depth bound; the factories then take today's
 * path (copy and typed validation). A marked model passed its constructor's checks, which are the
 * typed validation's (the validators rebuild the same models), and its JSON fields are canonical,
 * so the envelope adopts the payload without copying it again and needs no typed validation.
 *
 * @module
 */
import { MAX_JSON_DEPTH } from "../endpoint/constants.ts";
import {
  canonicalHeight,
  canonicalNeedsWriter,
  EMPTY_OBJECT,
  type JsonObject,
  sealCanonical,
} from "../_internal/json.ts";
import {
  isBuiltModel,
  ToolAccepted,
  type ToolControlResponse,
  ToolError,
  type ToolExecutionStatus,
  ToolResult,
  type ToolResultResponse,
} from "../endpoint/outcomes.ts";
import type { InvokeResponse } from "./execution_payloads.ts";
import { isBuiltRequestModel, ToolContext, ToolRequest } from "../endpoint/execution.ts";

/** The facts of the object built last (its height) and of the whole payload so far (its flag). */
interface Facts {
  height: number;
  flag: number;
}

/** The height of a model's JSON field placed at `depth`, or -1 when it must be copied. */
function jsonHeight(value: JsonObject, depth: number, f: Facts): number {
  if (value === EMPTY_OBJECT) return 0;
  const h = canonicalHeight(value);
  if (h === undefined || depth + h > MAX_JSON_DEPTH) return -1;
  if (canonicalNeedsWriter(value)) f.flag = 1;
  return h;
}

/** `{code, details, message, retryable}` of a marked error at `depth`; sets `f.height`. */
function errorObject(error: unknown, depth: number, f: Facts): JsonObject | undefined {
  if (!(error instanceof ToolError) || !isBuiltModel.error(error)) return undefined;
  const h = jsonHeight(error.details, depth + 1, f);
  if (h < 0) return undefined;
  f.height = h + 1;
  return Object.freeze({
    code: error.code,
    details: error.details,
    message: error.message,
    retryable: error.retryable,
  });
}

/** `{error?, outputs, status}` of a marked result at `depth`; sets `f.height`. */
function resultObject(result: unknown, depth: number, f: Facts): JsonObject | undefined {
  if (!(result instanceof ToolResult) || !isBuiltModel.result(result)) return undefined;
  const h = jsonHeight(result.outputs, depth + 1, f);
  if (h < 0) return undefined;
  if (result.error === undefined) {
    f.height = h + 1;
    return Object.freeze({ outputs: result.outputs, status: result.status });
  }
  const error = errorObject(result.error, depth + 1, f);
  if (error === undefined) return undefined;
  f.height = Math.max(h, f.height) + 1;
  return Object.freeze({ error, outputs: result.outputs, status: result.status });
}

/**
 * The payload of an acceptance without details (`new ToolAccepted()`, most Action and Session
 * starts), shared: a canonical payload is an immutable value, and building and sealing one per
 * acceptance was about 2% of an Action round's samples (sealing it, most of that).
 */
const ACCEPTED_WITHOUT_DETAILS: JsonObject = sealCanonical(
  { accepted: Object.freeze({ details: EMPTY_OBJECT }), outcome: "accepted" },
  2,
  0,
);

/** The canonical `tool.invoke.response` payload of a marked model, or `undefined`. */
export function builtInvokeResponsePayload(response: InvokeResponse): JsonObject | undefined {
  const f: Facts = { height: 0, flag: 0 };
  if (response instanceof ToolResult) {
    const result = resultObject(response, 1, f);
    if (result === undefined) return undefined;
    return sealCanonical({ outcome: "completed", result }, f.height + 1, f.flag);
  }
  if (response instanceof ToolAccepted) {
    if (!isBuiltModel.accepted(response)) return undefined;
    if (response.details === EMPTY_OBJECT) return ACCEPTED_WITHOUT_DETAILS;
    const h = jsonHeight(response.details, 2, f);
    if (h < 0) return undefined;
    const accepted = Object.freeze({ details: response.details });
    return sealCanonical({ accepted, outcome: "accepted" }, h + 2, f.flag);
  }
  if (response instanceof ToolError) {
    const error = errorObject(response, 1, f);
    if (error === undefined) return undefined;
    return sealCanonical({ error, outcome: "rejected" }, f.height + 1, f.flag);
  }
  return undefined;
}

/** `{details, error?, phase}` of a marked status at `depth`; sets `f.height`. */
function statusObject(
  status: ToolExecutionStatus,
  depth: number,
  f: Facts,
): JsonObject | undefined {
  if (!isBuiltModel.executionStatus(status)) return undefined;
  const h = jsonHeight(status.details, depth + 1, f);
  if (h < 0) return undefined;
  if (status.error === undefined) {
    f.height = h + 1;
    return Object.freeze({ details: status.details, phase: status.phase });
  }
  const error = errorObject(status.error, depth + 1, f);
  if (error === undefined) return undefined;
  f.height = Math.max(h, f.height) + 1;
  return Object.freeze({ details: status.details, error, phase: status.phase });
}

/** The canonical `tool.status.response` payload of a marked status, or `undefined`. */
export function builtStatusResponsePayload(status: ToolExecutionStatus): JsonObject | undefined {
  const f: Facts = { height: 0, flag: 0 };
  if (typeof status !== "object" || status === null) return undefined;
  const inner = statusObject(status, 1, f);
  if (inner === undefined) return undefined;
  return sealCanonical({ status: inner }, f.height + 1, f.flag);
}

/** The canonical `tool.result.response` payload of a marked response, or `undefined`. */
export function builtResultResponsePayload(
  response: ToolResultResponse,
): JsonObject | undefined {
  const f: Facts = { height: 0, flag: 0 };
  if (typeof response !== "object" || response === null) return undefined;
  if (!isBuiltModel.resultResponse(response)) return undefined;
  if (response.result === undefined) {
    return sealCanonical({ status: response.status }, 1, 0);
  }
  const result = resultObject(response.result, 1, f);
  if (result === undefined) return undefined;
  return sealCanonical({ result, status: response.status }, f.height + 1, f.flag);
}

/** The canonical `tool.control.response` payload of a marked response, or `undefined`. */
export function builtControlResponsePayload(
  response: ToolControlResponse,
): JsonObject | undefined {
  const f: Facts = { height: 0, flag: 0 };
  if (typeof response !== "object" || response === null) return undefined;
  if (!isBuiltModel.controlResponse(response)) return undefined;
  const h = jsonHeight(response.details, 2, f);
  if (h < 0) return undefined;
  let inner: JsonObject;
  if (response.error === undefined) {
    f.height = h + 1;
    inner = Object.freeze({
      command: response.command,
      details: response.details,
      status: response.status,
    });
  } else {
    const error = errorObject(response.error, 2, f);
    if (error === undefined) return undefined;
    f.height = Math.max(h, f.height) + 1;
    inner = Object.freeze({
      command: response.command,
      details: response.details,
      error,
      status: response.status,
    });
  }
  return sealCanonical({ response: inner }, f.height + 1, f.flag);
}

/** The canonical `tool.error` payload of a marked error, or `undefined`. */
export function builtErrorPayload(error: ToolError): JsonObject | undefined {
  const f: Facts = { height: 0, flag: 0 };
  const inner = errorObject(error, 1, f);
  if (inner === undefined) return undefined;
  return sealCanonical({ error: inner }, f.height + 1, f.flag);
}

/**
 * The canonical `tool.invoke.request` payload of a marked request and context, or `undefined`:
 * `{arguments, context: {caller_id?, deadline_ms?, implementation_id, metadata, tool_id}}`, what
 * `invokeRequestToPayload` returns once the envelope copied it. Copying it cost 12% of an
 * in-process client Query's samples, and its typed validation (which rebuilds the same models)
 * more again.
 */
export function builtInvokeRequestPayload(
  request: ToolRequest,
  context: ToolContext,
): JsonObject | undefined {
  if (!(request instanceof ToolRequest) || !isBuiltRequestModel.request(request)) return undefined;
  if (!(context instanceof ToolContext) || !isBuiltRequestModel.context(context)) return undefined;
  const f: Facts = { height: 0, flag: 0 };
  const argumentsHeight = jsonHeight(request.arguments, 1, f);
  if (argumentsHeight < 0) return undefined;
  const metadataHeight = jsonHeight(context.metadata, 2, f);
  if (metadataHeight < 0) return undefined;
  // Keys in code point order; deadline_ms is a safe integer (never -0), so it needs no writer.
  const inner: Record<string, unknown> = {};
  if (context.callerId !== undefined) inner.caller_id = context.callerId;
  if (context.deadlineMs !== undefined) inner.deadline_ms = context.deadlineMs;
  inner.implementation_id = context.implementationId;
  inner.metadata = context.metadata;
  inner.tool_id = context.toolId;
  return sealCanonical(
    { arguments: request.arguments, context: Object.freeze(inner) },
    Math.max(argumentsHeight, metadataHeight + 1) + 1,
    f.flag,
  );
}

/**
 * The payloads of the execution messages other than `tool.invoke.request`: the invoke, status,
 * result and control responses, the control request, `tool.error` and `tool.event`.
 *
 * @module
 */
import { TOOL_CONTROL_COMMAND_VALUES, type ToolControlCommand } from "../endpoint/constants.ts";
import { copyJson, type JsonObject } from "../_internal/json.ts";
import { isBlank } from "../_internal/text.ts";
import {
  ToolAccepted,
  ToolControlResponse,
  ToolError,
  ToolEvent,
  type ToolExecutionStatus,
  ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import { type ToolEnvelope, wireFaults } from "./envelope.ts";
import {
  closedFields,
  construct,
  has,
  invalidPayload,
  jsonField,
  objectAt,
  payloadOf,
  rootObject,
} from "./_payload_rules.ts";
import {
  executionStatusToPayload,
  readExecutionStatus,
  readToolError,
  readToolResult,
  toolErrorToPayload,
  toolResultToPayload,
} from "./outcome_payloads.ts";

/** What a `tool.invoke.response` answers: a terminal result, an acceptance, or a rejection. */
export type InvokeResponse = ToolResult | ToolAccepted | ToolError;

/**
 * The payload of `tool.invoke.response`: `{outcome: "completed", result}` for a
 * {@linkcode ToolResult}, `{outcome: "accepted", accepted: {details}}` for a
 * {@linkcode ToolAccepted}, `{outcome: "rejected", error}` for a {@linkcode ToolError}.
 */
export function invokeResponseToPayload(response: InvokeResponse): JsonObject {
  if (response instanceof ToolResult) {
    return { outcome: "completed", result: toolResultToPayload(response) };
  }
  if (response instanceof ToolAccepted) {
    return { outcome: "accepted", accepted: { details: response.details } };
  }
  if (response instanceof ToolError) {
    return { outcome: "rejected", error: toolErrorToPayload(response) };
  }
  throw new TypeError("response must be a ToolResult, ToolAccepted, or ToolError");
}

/** Decodes the payload of `tool.invoke.response`. */
export function invokeResponseFromPayload(payload: unknown): InvokeResponse {
  return readInvokeResponse(rootObject(payload, "payload"), true);
}

export function readInvokeResponse(
  object: Record<string, unknown>,
  adopt: boolean,
): InvokeResponse {
  switch (object.outcome) {
    case "completed":
      closedFields(object, "payload", ["outcome", "result"]);
      return readToolResult(object.result, "payload.result", adopt);
    case "accepted": {
      closedFields(object, "payload", ["outcome", "accepted"]);
      const accepted = objectAt(object.accepted, "payload.accepted");
      closedFields(accepted, "payload.accepted", ["details"]);
      const details = jsonField(objectAt(accepted.details, "payload.accepted.details"), adopt);
      return construct("payload.accepted", () => new ToolAccepted({ details }));
    }
    case "rejected":
      closedFields(object, "payload", ["outcome", "error"]);
      return readToolError(object.error, "payload.error", adopt);
    default:
      throw invalidPayload("outcome must be completed, accepted, or rejected", "payload.outcome");
  }
}

// ---------------------------------------------------------------------------------------------
// Status, result, error, control, event

/** The payload of `tool.status.response`: `{status}`. */
export function statusResponseToPayload(status: ToolExecutionStatus): JsonObject {
  return { status: executionStatusToPayload(status) };
}

/** Decodes the payload of `tool.status.response`. */
export function statusResponseFromPayload(payload: unknown): ToolExecutionStatus {
  return readStatusResponse(rootObject(payload, "payload"), true);
}

export function readStatusResponse(
  object: Record<string, unknown>,
  adopt: boolean,
): ToolExecutionStatus {
  closedFields(object, "payload", ["status"]);
  return readExecutionStatus(object.status, "payload.status", adopt);
}

/** The payload of `tool.result.response`: `{status}` and `result` when available. */
export function resultResponseToPayload(response: ToolResultResponse): JsonObject {
  if (!(response instanceof ToolResultResponse)) {
    throw new TypeError("response must be a ToolResultResponse");
  }
  return response.result === undefined
    ? { status: response.status }
    : { status: response.status, result: toolResultToPayload(response.result) };
}

/** Decodes the payload of `tool.result.response`. */
export function resultResponseFromPayload(payload: unknown): ToolResultResponse {
  return readResultResponse(rootObject(payload, "payload"), true);
}

export function readResultResponse(
  object: Record<string, unknown>,
  adopt: boolean,
): ToolResultResponse {
  closedFields(object, "payload", ["status"], ["result"]);
  const result = has(object, "result")
    ? readToolResult(object.result, "payload.result", adopt)
    : undefined;
  return construct(
    "payload",
    () =>
      new ToolResultResponse(
        { status: object.status, result } as ConstructorParameters<
          typeof ToolResultResponse
        >[0],
      ),
  );
}

/** The payload of `tool.error`: `{error}`. */
export function errorToPayload(error: ToolError): JsonObject {
  return { error: toolErrorToPayload(error) };
}

/** Decodes the payload of `tool.error`. */
export function errorFromPayload(payload: unknown): ToolError {
  return readErrorPayload(rootObject(payload, "payload"), true);
}

export function readErrorPayload(object: Record<string, unknown>, adopt: boolean): ToolError {
  closedFields(object, "payload", ["error"]);
  return readToolError(object.error, "payload.error", adopt);
}

/** The command and optional reason of a `tool.control.request`. */
export interface ControlRequest {
  /** `cancel` (Action) or `stop` (Session). */
  readonly command: ToolControlCommand;
  /** Why, when the caller said. */
  readonly reason: string | undefined;
}

function isControlCommand(value: unknown): value is ToolControlCommand {
  return (TOOL_CONTROL_COMMAND_VALUES as readonly unknown[]).includes(value);
}

/** The payload of `tool.control.request`: `{command}` and `reason` when given. */
export function controlRequestToPayload(command: ToolControlCommand, reason?: string): JsonObject {
  if (!isControlCommand(command)) {
    throw new RangeError(`unsupported tool control command: '${String(command)}'`);
  }
  if (reason === undefined || reason === null) return { command };
  if (typeof reason !== "string" || isBlank(reason)) {
    throw new RangeError("reason must be a non-empty string when provided");
  }
  return copyJson({ command, reason }, "payload", wireFaults) as JsonObject;
}

/** Decodes the payload of `tool.control.request`. */
export function controlRequestFromPayload(payload: unknown): ControlRequest {
  return readControlRequest(rootObject(payload, "payload"));
}

/**
 * @internal The command and reason of a `tool.control.request` envelope, read with the checks and
 * errors of its typed validation ({@linkcode validateMessageEnvelope}): the handler validates and
 * reads a control request in this one pass.
 */
export function controlRequestOf(envelope: ToolEnvelope): ControlRequest {
  return readControlRequest(payloadOf(envelope));
}

export function readControlRequest(object: Record<string, unknown>): ControlRequest {
  closedFields(object, "payload", ["command"], ["reason"]);
  const command = object.command;
  if (!isControlCommand(command)) {
    throw invalidPayload("command must be cancel or stop", "payload.command");
  }
  const reason = object.reason;
  if (reason === undefined || reason === null) return { command, reason: undefined };
  if (typeof reason !== "string" || isBlank(reason)) {
    throw invalidPayload("must be a non-empty string", "payload.reason");
  }
  return { command, reason };
}

/** The payload of `tool.control.response`: `{response: {command, status, details, error?}}`. */
export function controlResponseToPayload(response: ToolControlResponse): JsonObject {
  if (!(response instanceof ToolControlResponse)) {
    throw new TypeError("response must be a ToolControlResponse");
  }
  const inner: Record<string, unknown> = {
    command: response.command,
    status: response.status,
    details: response.details,
  };
  if (response.error !== undefined) inner.error = toolErrorToPayload(response.error);
  return { response: inner as JsonObject };
}

/** Decodes the payload of `tool.control.response`. */
export function controlResponseFromPayload(payload: unknown): ToolControlResponse {
  return readControlResponse(rootObject(payload, "payload"), true);
}

export function readControlResponse(
  object: Record<string, unknown>,
  adopt: boolean,
): ToolControlResponse {
  closedFields(object, "payload", ["response"]);
  const inner = objectAt(object.response, "payload.response");
  closedFields(inner, "payload.response", ["command", "status", "details"], ["error"]);
  const error = has(inner, "error")
    ? readToolError(inner.error, "payload.response.error", adopt)
    : undefined;
  const details = jsonField(objectAt(inner.details, "payload.response.details"), adopt);
  return construct("payload.response", () =>
    new ToolControlResponse(
      { command: inner.command, status: inner.status, error, details } as ConstructorParameters<
        typeof ToolControlResponse
      >[0],
    ));
}

/** The payload of `tool.event`: `{type, data}` (the sequence lives in the envelope). */
export function eventToPayload(event: ToolEvent): JsonObject {
  if (!(event instanceof ToolEvent)) throw new TypeError("event must be a ToolEvent");
  return { type: event.type, data: event.data };
}

/** Decodes the payload of `tool.event`. */
export function eventFromPayload(payload: unknown): ToolEvent {
  return readEvent(rootObject(payload, "payload"), true);
}

export function readEvent(object: Record<string, unknown>, adopt: boolean): ToolEvent {
  closedFields(object, "payload", ["type", "data"]);
  const data = jsonField(objectAt(object.data, "payload.data"), adopt);
  return construct(
    "payload",
    () => new ToolEvent({ type: object.type, data } as ConstructorParameters<typeof ToolEvent>[0]),
  );
}

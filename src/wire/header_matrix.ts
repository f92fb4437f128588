/**
 * The header matrix of `forge.tool.endpoint/v1alpha1`: which envelope headers each message type
 * requires, forbids or allows. The one table the envelope constructor, the envelope decoder's
 * field checks and the Arrow carrier's rules all read; with the checks of one header by its row
 * (the constructor's, also run for a gateway's re-addressed copy) and the request/response
 * pairing of the message types.
 *
 * | message type | request_id | invocation/attempt/operation | endpoint_instance_id | sequence |
 * |---|---|---|---|---|
 * | endpoint.register / unregister / registry.response | required | forbidden | required | forbidden |
 * | endpoint.status | forbidden | forbidden | required | forbidden |
 * | tool.event | forbidden | required | optional | required |
 * | other tool.* | required | required | optional | forbidden |
 *
 * @module
 */
import type { ToolMessageType } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { hasLoneSurrogate, isBlank } from "../_internal/text.ts";

/** @internal Whether a message type must carry a header, must omit it, or may carry it. */
export type HeaderRule = "required" | "forbidden" | "optional";

/** @internal One row of the header matrix. */
export interface HeaderRow {
  /** `endpoint` for the `endpoint.*` management messages, `tool` for the `tool.*` ones. */
  readonly family: "endpoint" | "tool";
  /** The exchange identity `request_id`. */
  readonly requestId: HeaderRule;
  /** The execution headers `invocation_id`, `attempt_id` and `operation`, which go together. */
  readonly execution: HeaderRule;
  /** The provider instance `endpoint_instance_id`. */
  readonly endpointInstanceId: HeaderRule;
  /** The event `sequence`. */
  readonly sequence: HeaderRule;
}

const MANAGEMENT_EXCHANGE: HeaderRow = Object.freeze({
  family: "endpoint",
  requestId: "required",
  execution: "forbidden",
  endpointInstanceId: "required",
  sequence: "forbidden",
});
const MANAGEMENT_STATUS: HeaderRow = Object.freeze({
  family: "endpoint",
  requestId: "forbidden",
  execution: "forbidden",
  endpointInstanceId: "required",
  sequence: "forbidden",
});
const TOOL_EXCHANGE: HeaderRow = Object.freeze({
  family: "tool",
  requestId: "required",
  execution: "required",
  endpointInstanceId: "optional",
  sequence: "forbidden",
});
const TOOL_EVENT: HeaderRow = Object.freeze({
  family: "tool",
  requestId: "forbidden",
  execution: "required",
  endpointInstanceId: "optional",
  sequence: "required",
});

/** @internal The header rules of every message type. */
export const HEADER_MATRIX: Readonly<Record<ToolMessageType, HeaderRow>> = Object.freeze({
  "endpoint.register": MANAGEMENT_EXCHANGE,
  "endpoint.unregister": MANAGEMENT_EXCHANGE,
  "endpoint.registry.response": MANAGEMENT_EXCHANGE,
  "endpoint.status": MANAGEMENT_STATUS,
  "tool.invoke.request": TOOL_EXCHANGE,
  "tool.invoke.response": TOOL_EXCHANGE,
  "tool.status.request": TOOL_EXCHANGE,
  "tool.status.response": TOOL_EXCHANGE,
  "tool.result.request": TOOL_EXCHANGE,
  "tool.result.response": TOOL_EXCHANGE,
  "tool.control.request": TOOL_EXCHANGE,
  "tool.control.response": TOOL_EXCHANGE,
  "tool.event": TOOL_EVENT,
  "tool.error": TOOL_EXCHANGE,
});

/**
 * @internal The row of a message type that may not be one of the 14 (the decoder checks the
 * envelope's fields before its type): the matrix row of a known type, else the row of its family
 * by prefix (`tool.` or management), which is all the field checks ask of it.
 */
export function headerRowOf(messageType: unknown): HeaderRow {
  if (typeof messageType === "string" && Object.hasOwn(HEADER_MATRIX, messageType)) {
    return HEADER_MATRIX[messageType as ToolMessageType];
  }
  return typeof messageType === "string" && messageType.startsWith("tool.")
    ? TOOL_EXCHANGE
    : MANAGEMENT_EXCHANGE;
}

// ---------------------------------------------------------------------------------------------
// The checks of one header by its row (the envelope constructor's), and the message type pairings

/** @internal An `INVALID_MESSAGE` error at an envelope field. */
export function invalidMessage(message: string, path: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_MESSAGE, message, path);
}

/** @internal True for an absent header (`undefined` or `null`). */
export function absent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/**
 * @internal Checks an envelope string header: a non-blank string of Unicode scalar values.
 * `scalar` says the string is already known to hold no lone surrogate.
 */
export function checkHeader(value: unknown, field: string, scalar: boolean): string {
  if (typeof value !== "string" || isBlank(value)) {
    throw invalidMessage("must be a non-empty string", field);
  }
  if (!scalar && hasLoneSurrogate(value)) {
    throw invalidMessage("must contain only valid Unicode scalar values", field);
  }
  return value;
}

/**
 * @internal The `endpoint_instance_id` rule of a row: valid when present, present where
 * required.
 */
export function checkInstanceId(
  row: HeaderRow,
  value: unknown,
  scalar: boolean,
): string | undefined {
  if (!absent(value)) return checkHeader(value, "endpoint_instance_id", scalar);
  if (row.endpointInstanceId === "required") {
    throw invalidMessage(
      "must be present for endpoint management messages",
      "endpoint_instance_id",
    );
  }
  return undefined;
}

/**
 * @internal The `request_id` rule of a row: present and valid where required, absent where
 * forbidden (the message names the one type of each family that forbids it).
 */
export function checkRequestId(row: HeaderRow, requestId: unknown, scalar: boolean): void {
  if (row.requestId === "required") {
    checkHeader(requestId, "request_id", scalar);
  } else if (!absent(requestId)) {
    throw invalidMessage(
      row.family === "tool"
        ? "must be omitted for tool.event"
        : "must be omitted for unsolicited endpoint.status",
      "request_id",
    );
  }
}

const RESPONSE_OF: Readonly<Record<string, ToolMessageType>> = {
  "tool.invoke.request": "tool.invoke.response",
  "tool.status.request": "tool.status.response",
  "tool.result.request": "tool.result.response",
  "tool.control.request": "tool.control.response",
};

/**
 * @internal The response type paired with an execution request type, or `undefined` for other
 * types.
 */
export function pairedResponseType(messageType: string): ToolMessageType | undefined {
  return Object.hasOwn(RESPONSE_OF, messageType) ? RESPONSE_OF[messageType] : undefined;
}

/**
 * @internal The Registry operation a management request asks for, or `undefined` for other
 * types.
 */
export function registryOperationOf(messageType: string): "register" | "unregister" | undefined {
  return messageType === "endpoint.register"
    ? "register"
    : messageType === "endpoint.unregister"
    ? "unregister"
    : undefined;
}

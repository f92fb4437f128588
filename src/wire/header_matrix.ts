/**
 * The header matrix of `forge.tool.endpoint/v1alpha1`: which envelope headers each message type
 * requires, forbids or allows. The one table the envelope constructor, the envelope decoder's
 * field checks and the Arrow carrier's rules all read.
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

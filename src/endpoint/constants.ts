/**
 * Protocol constants and the string-literal types of the ToolEndpoint contracts.
 *
 * @module
 */

/** The logical Wire protocol this package implements. */
export const TOOL_ENDPOINT_PROTOCOL = "forge.tool.endpoint/v1alpha1";
/** The largest integer every JSON peer represents exactly: 2^53 − 1. */
export const MAX_SAFE_JSON_INTEGER = 9007199254740991;
/** The deepest JSON nesting a payload may have (the payload itself is depth 0). */
export const MAX_JSON_DEPTH = 64;
/** The default limit of an encoded envelope, in bytes (1 MiB). */
export const DEFAULT_MAX_MESSAGE_BYTES = 1048576;

/** The 14 message types of `forge.tool.endpoint/v1alpha1`. */
export type ToolMessageType =
  | "endpoint.register"
  | "endpoint.unregister"
  | "endpoint.registry.response"
  | "endpoint.status"
  | "tool.invoke.request"
  | "tool.invoke.response"
  | "tool.status.request"
  | "tool.status.response"
  | "tool.result.request"
  | "tool.result.response"
  | "tool.control.request"
  | "tool.control.response"
  | "tool.event"
  | "tool.error";

/** Every {@linkcode ToolMessageType}, as a read-only set. */
export const TOOL_MESSAGE_TYPES: ReadonlySet<ToolMessageType> = Object.freeze(
  new Set<ToolMessageType>([
    "endpoint.register",
    "endpoint.unregister",
    "endpoint.registry.response",
    "endpoint.status",
    "tool.invoke.request",
    "tool.invoke.response",
    "tool.status.request",
    "tool.status.response",
    "tool.result.request",
    "tool.result.response",
    "tool.control.request",
    "tool.control.response",
    "tool.event",
    "tool.error",
  ]),
);

/** How an operation executes: one terminal result, a controllable action, or a session. */
export type ToolSemantics = "query" | "action" | "session";
/** An endpoint's health state. */
export type EndpointState = "ready" | "busy" | "degraded" | "unavailable";
/** The lifecycle phase of an Action or Session execution. */
export type ExecutionPhase =
  | "accepted"
  | "running"
  | "stopping"
  | "completed"
  | "failed"
  | "cancelled"
  | "stopped"
  | "unknown";
/** The terminal phases of {@linkcode ExecutionPhase}. */
export type TerminalExecutionPhase = "completed" | "failed" | "cancelled" | "stopped" | "unknown";
/** The type of a {@linkcode ToolEvent}. */
export type ToolEventType =
  | "progress"
  | "heartbeat"
  | "executor_completed"
  | "executor_failed"
  | "cancelled"
  | "stopped";
/** The status of a terminal {@linkcode ToolResult}. */
export type ToolResultStatus = "succeeded" | "failed" | "cancelled" | "stopped" | "unknown";
/** The answer to a result lookup. */
export type ToolResultResponseStatus = "pending" | "available" | "not_found";
/** A control command: `cancel` reaches an Action, `stop` a Session. */
export type ToolControlCommand = "cancel" | "stop";
/** The answer to a control request. */
export type ToolControlStatus = "accepted" | "rejected" | "terminal" | "unsupported";
/** The Registry operation a registry response answers. */
export type EndpointRegistryOperation = "register" | "unregister";
/** Whether the Registry accepted a registration request. */
export type EndpointRegistryResponseStatus = "accepted" | "rejected";

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

// Every literal set of the contracts is declared once below, as an `as const` array (frozen right
// after, so the declaration keeps its literal type); its type and any runtime set derive from it.

/** The 14 message types of `forge.tool.endpoint/v1alpha1`, in the protocol's order. */
export const TOOL_MESSAGE_TYPE_VALUES = [
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
] as const;
Object.freeze(TOOL_MESSAGE_TYPE_VALUES);
/** One of the 14 message types of `forge.tool.endpoint/v1alpha1`. */
export type ToolMessageType = typeof TOOL_MESSAGE_TYPE_VALUES[number];

/** Every {@linkcode ToolMessageType}, as a read-only set. */
export const TOOL_MESSAGE_TYPES: ReadonlySet<ToolMessageType> = Object.freeze(
  new Set<ToolMessageType>(TOOL_MESSAGE_TYPE_VALUES),
);

/** Every {@linkcode ToolSemantics}. */
export const TOOL_SEMANTICS_VALUES = ["query", "action", "session"] as const;
Object.freeze(TOOL_SEMANTICS_VALUES);
/** How an operation executes: one terminal result, a controllable action, or a session. */
export type ToolSemantics = typeof TOOL_SEMANTICS_VALUES[number];

/** Every {@linkcode EndpointState}. */
export const ENDPOINT_STATE_VALUES = ["ready", "busy", "degraded", "unavailable"] as const;
Object.freeze(ENDPOINT_STATE_VALUES);
/** An endpoint's health state. */
export type EndpointState = typeof ENDPOINT_STATE_VALUES[number];

/** Every {@linkcode TerminalExecutionPhase}. */
export const TERMINAL_EXECUTION_PHASE_VALUES = [
  "completed",
  "failed",
  "cancelled",
  "stopped",
  "unknown",
] as const;
Object.freeze(TERMINAL_EXECUTION_PHASE_VALUES);
/** The terminal phases of {@linkcode ExecutionPhase}. */
export type TerminalExecutionPhase = typeof TERMINAL_EXECUTION_PHASE_VALUES[number];

/** Every {@linkcode ExecutionPhase}: the active phases, then the terminal ones. */
export const EXECUTION_PHASE_VALUES = [
  "accepted",
  "running",
  "stopping",
  ...TERMINAL_EXECUTION_PHASE_VALUES,
] as const;
Object.freeze(EXECUTION_PHASE_VALUES);
/** The lifecycle phase of an Action or Session execution. */
export type ExecutionPhase = typeof EXECUTION_PHASE_VALUES[number];

/** Every {@linkcode ToolEventType}. */
export const TOOL_EVENT_TYPE_VALUES = [
  "progress",
  "heartbeat",
  "executor_completed",
  "executor_failed",
  "cancelled",
  "stopped",
] as const;
Object.freeze(TOOL_EVENT_TYPE_VALUES);
/** The type of a {@linkcode ToolEvent}. */
export type ToolEventType = typeof TOOL_EVENT_TYPE_VALUES[number];

/** Every {@linkcode ToolResultStatus}. */
export const TOOL_RESULT_STATUS_VALUES = [
  "succeeded",
  "failed",
  "cancelled",
  "stopped",
  "unknown",
] as const;
Object.freeze(TOOL_RESULT_STATUS_VALUES);
/** The status of a terminal {@linkcode ToolResult}. */
export type ToolResultStatus = typeof TOOL_RESULT_STATUS_VALUES[number];

/** Every {@linkcode ToolResultResponseStatus}. */
export const TOOL_RESULT_RESPONSE_STATUS_VALUES = ["pending", "available", "not_found"] as const;
Object.freeze(TOOL_RESULT_RESPONSE_STATUS_VALUES);
/** The answer to a result lookup. */
export type ToolResultResponseStatus = typeof TOOL_RESULT_RESPONSE_STATUS_VALUES[number];

/** Every {@linkcode ToolControlCommand}. */
export const TOOL_CONTROL_COMMAND_VALUES = ["cancel", "stop"] as const;
Object.freeze(TOOL_CONTROL_COMMAND_VALUES);
/** A control command: `cancel` reaches an Action, `stop` a Session. */
export type ToolControlCommand = typeof TOOL_CONTROL_COMMAND_VALUES[number];

/** Every {@linkcode ToolControlStatus}. */
export const TOOL_CONTROL_STATUS_VALUES = [
  "accepted",
  "rejected",
  "terminal",
  "unsupported",
] as const;
Object.freeze(TOOL_CONTROL_STATUS_VALUES);
/** The answer to a control request. */
export type ToolControlStatus = typeof TOOL_CONTROL_STATUS_VALUES[number];

/** Every {@linkcode EndpointRegistryOperation}. */
export const ENDPOINT_REGISTRY_OPERATION_VALUES = ["register", "unregister"] as const;
Object.freeze(ENDPOINT_REGISTRY_OPERATION_VALUES);
/** The Registry operation a registry response answers. */
export type EndpointRegistryOperation = typeof ENDPOINT_REGISTRY_OPERATION_VALUES[number];

/** Every {@linkcode EndpointRegistryResponseStatus}. */
export const ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES = ["accepted", "rejected"] as const;
Object.freeze(ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES);
/** Whether the Registry accepted a registration request. */
export type EndpointRegistryResponseStatus =
  typeof ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES[number];

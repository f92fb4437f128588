/**
 * The logical Wire of `forge.tool.endpoint/v1alpha1`, for code that builds, reads or carries
 * envelopes itself (transports, gateways, tests, tools): the envelope and its strict JSON codec,
 * the message factories, the payload adapters and validators, request/response correlation, the
 * protocol constants and literal sets, the models' init shapes and {@link ToolProtocolError}.
 *
 * Providers and callers do not need this entry: `@forge/tool` holds the define* functions, the
 * handler and the client. Like `@forge/tool`, this entry imports no npm package and no FFI.
 *
 * Besides the Wire, this entry is the documented home of the types that `@forge/tool`'s own
 * signatures name but that entry does not list (it stays at about 60 names): the JSON value
 * parts (`JsonArray`, `JsonPrimitive`) and the code tables (`ToolErrorCodeTable`,
 * `ToolClientErrorCodeTable`); the client error's parts (`ToolClientErrorInit`,
 * `ToolClientErrorContext`, `ToolClientExchange`); the define* helper types (`ArgumentsOf`,
 * `OutputsOf`, `QueryFunction`, `ExecutionFunction`, `ImplementOptions`, ...); the schema types
 * (Standard Schema v1, `JsonSchemaType`, `JsonSchemaValidator`); the SPI's
 * `Awaitable`; `DispatchOptions`; and the typed client's types (`ToolOperations`,
 * `TypedToolResult`, ...). Import them from here to annotate code written against those
 * signatures; each keeps its doc comment where it is declared.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolContext, ToolExecutionKey, ToolRequest } from "@forge/tool";
 * import {
 *   decodeEnvelope,
 *   encodeEnvelope,
 *   invokeRequestFromEnvelope,
 *   makeInvokeRequestEnvelope,
 * } from "@forge/tool/wire";
 * const context = new ToolContext({
 *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
 *   toolId: "forge.tool.position",
 *   implementationId: "arm",
 *   endpointId: "robot.arm",
 *   operation: "position",
 * });
 * const request = new ToolRequest({ arguments: { joint: 3 } });
 * const bytes = encodeEnvelope(
 *   makeInvokeRequestEnvelope(request, context, {
 *     requestId: "request-1",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * const parts = invokeRequestFromEnvelope(decodeEnvelope(bytes));
 * assertEquals(
 *   [parts.context.operation, parts.request.arguments],
 *   ["position", { joint: 3 }],
 * );
 * ```
 *
 * @module
 */
export { ToolEnvelope, type ToolEnvelopeInit } from "./src/wire/envelope.ts";
export {
  type CodecOptions,
  decodeEnvelope,
  encodedEnvelopeSize,
  encodeEnvelope,
} from "./src/wire/codec.ts";
export {
  type ControlRequestOptions,
  type EndpointStatusOptions,
  type EventEnvelopeOptions,
  type ExecutionRequestOptions,
  makeControlRequestEnvelope,
  makeControlResponseEnvelope,
  makeEndpointRegistryResponseEnvelope,
  makeEndpointStatusEnvelope,
  makeErrorEnvelope,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  makeUnregisterEnvelope,
  type ManagementRequestOptions,
  type UnregisterOptions,
} from "./src/wire/factories.ts";
export {
  executionStatusFromPayload,
  executionStatusToPayload,
  toolErrorFromPayload,
  toolErrorToPayload,
  toolResultFromPayload,
  toolResultToPayload,
} from "./src/wire/outcome_payloads.ts";
export {
  invokeRequestFromEnvelope,
  type InvokeRequestParts,
  invokeRequestToPayload,
  toolContextToPayload,
} from "./src/wire/invoke_request.ts";
export {
  type ControlRequest,
  controlRequestFromPayload,
  controlRequestToPayload,
  controlResponseFromPayload,
  controlResponseToPayload,
  errorFromPayload,
  errorToPayload,
  eventFromPayload,
  eventToPayload,
  type InvokeResponse,
  invokeResponseFromPayload,
  invokeResponseToPayload,
  resultResponseFromPayload,
  resultResponseToPayload,
  statusResponseFromPayload,
  statusResponseToPayload,
} from "./src/wire/execution_payloads.ts";
export {
  endpointDescriptorFromPayload,
  endpointDescriptorToPayload,
  endpointRegistryResponseFromPayload,
  endpointRegistryResponseToPayload,
  endpointStatusFromEnvelope,
  endpointStatusToPayload,
  validateRegistrationEnvelope,
} from "./src/wire/management_payloads.ts";
export { validateMessageEnvelope } from "./src/wire/validate.ts";
export {
  validateManagementResponseCorrelation,
  validateResponseCorrelation,
} from "./src/wire/correlation.ts";
export {
  DEFAULT_MAX_MESSAGE_BYTES,
  ENDPOINT_REGISTRY_OPERATION_VALUES,
  ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES,
  ENDPOINT_STATE_VALUES,
  type EndpointRegistryOperation,
  type EndpointRegistryResponseStatus,
  type EndpointState,
  EXECUTION_PHASE_VALUES,
  type ExecutionPhase,
  MAX_JSON_DEPTH,
  MAX_SAFE_JSON_INTEGER,
  TERMINAL_EXECUTION_PHASE_VALUES,
  type TerminalExecutionPhase,
  TOOL_CONTROL_COMMAND_VALUES,
  TOOL_CONTROL_STATUS_VALUES,
  TOOL_ENDPOINT_PROTOCOL,
  TOOL_EVENT_TYPE_VALUES,
  TOOL_MESSAGE_TYPE_VALUES,
  TOOL_MESSAGE_TYPES,
  TOOL_RESULT_RESPONSE_STATUS_VALUES,
  TOOL_RESULT_STATUS_VALUES,
  TOOL_SEMANTICS_VALUES,
  type ToolControlCommand,
  type ToolControlStatus,
  type ToolEventType,
  type ToolMessageType,
  type ToolResultResponseStatus,
  type ToolResultStatus,
  type ToolSemantics,
} from "./src/endpoint/constants.ts";
export {
  EndpointRegistryResponse,
  type EndpointRegistryResponseInit,
  EndpointStatus,
  type EndpointStatusInit,
} from "./src/endpoint/management.ts";
export type {
  ToolEndpointDescriptorInit,
  ToolOperationDescriptorInit,
} from "./src/endpoint/descriptors.ts";
export type {
  ToolContextInit,
  ToolExecutionKeyInit,
  ToolRequestInit,
} from "./src/endpoint/execution.ts";
export {
  isTerminalPhase,
  TERMINAL_RESULT_STATUS,
  type ToolAcceptedInit,
  type ToolControlResponseInit,
  type ToolErrorInit,
  type ToolEventInit,
  type ToolExecutionStatusInit,
  type ToolResultInit,
  type ToolResultResponseInit,
} from "./src/endpoint/outcomes.ts";
// The JSON value parts and the protocol code table named by the models and ToolErrorCodes.
export type { JsonArray, JsonPrimitive } from "./src/_internal/json.ts";
export { type ToolErrorCodeTable, ToolProtocolError } from "./src/endpoint/errors.ts";
// Types named by @forge/tool signatures: the client error.
export type {
  ToolClientErrorCodeTable,
  ToolClientErrorContext,
  ToolClientErrorInit,
  ToolClientExchange,
} from "./src/client/errors.ts";
// Types named by @forge/tool signatures: the define* functions.
export type {
  AnyOperationDefinition,
  ArgumentsOf,
  CallArgumentsOf,
  ExecutionFunction,
  ImplementOptions,
  OutputsOf,
  QueryFunction,
  ToolOutputs,
} from "./src/provider/types.ts";
export type { DefinedHandlerOptions } from "./src/provider/endpoint.ts";
// Types named by @forge/tool signatures: argument and output schemas.
export {
  type InferSchemaOutput,
  type JsonSchemaType,
  type JsonSchemaValidator,
  type StandardSchemaV1Issue,
  type StandardSchemaV1PathSegment,
  type StandardSchemaV1Props,
  type StandardSchemaV1Result,
} from "./src/provider/schema.ts";
// Types named by @forge/tool signatures: the provider SPI and the handler.
export type { Awaitable } from "./src/endpoint/spi.ts";
export type { DispatchOptions } from "./src/handler/handler.ts";
// Types named by @forge/tool signatures: the typed client.
export type {
  InvokeOperationName,
  OperationArguments,
  OperationOutputs,
  QueryOperationName,
  ToolOperations,
  TypedCallArguments,
  TypedToolEndpointClientOptions,
  TypedToolInvocation,
  TypedToolResult,
} from "./src/client/client.ts";

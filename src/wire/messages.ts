/**
 * The typed payloads of the 14 message types: closed schemas, conditional fields, and the
 * `…ToPayload` / `…FromPayload` adapters between payload JSON and the models.
 *
 * Decoders report every violation as `FORGE_PROTOCOL_INVALID_PAYLOAD` at the failing path
 * (`payload.result.outputs`, `payload.descriptor.operations[0]`, …), with the model's own
 * validation message when a model rejects a value.
 *
 * @module
 */
import {
  TOOL_CONTROL_COMMAND_VALUES,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolControlCommand,
  type ToolMessageType,
} from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  adoptJsonObject,
  canonicalHeight,
  compareCodePoints,
  copyJson,
  isFloatMember,
  isMapping,
  isPlainObject,
  type JsonObject,
} from "../_internal/json.ts";
import { pyRepr } from "../_internal/repr.ts";
import { isBlank } from "../_internal/text.ts";
import {
  EndpointRegistryResponse,
  EndpointStatus,
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import {
  envelopeFromFactory,
  isFactoryTyped,
  ToolEnvelope,
  type ToolEnvelopeInit,
  wireFaults,
} from "./envelope.ts";
import { checkToolContextFields, wireMessageOf } from "../_internal/fields.ts";

// ---------------------------------------------------------------------------------------------
// Primitives

function invalidPayload(message: string, path: string): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.INVALID_PAYLOAD, message, path);
}

/**
 * Normalizes a raw value with the Wire's JSON rules. The result is canonical (deeply frozen, see
 * `copyJson`), so the models built from it may adopt its members.
 */
function normalized(value: unknown, path: string): unknown {
  return copyJson(value, path, wireFaults);
}

/**
 * The value of an integer field. A member decoded from a float token with an integral value
 * (`2.0`) reads as `NaN`, which every integer check refuses with the message it gives any
 * non-integer, as the reference refuses a float there.
 */
function integerMember(object: Record<string, unknown>, key: string): unknown {
  return isFloatMember(object, key) ? NaN : object[key];
}

/** The value at `path` as an object, or `"must be an object"`. */
function objectAt(value: unknown, path: string): Record<string, unknown> {
  if (!isPlainObject(value)) throw invalidPayload("must be an object", path);
  return value;
}

/** Normalizes then requires an object: the entry of every public decoder. */
function rootObject(value: unknown, path: string): Record<string, unknown> {
  return objectAt(normalized(value, path), path);
}

/**
 * A JSON-object field handed to a model. With `adopt` the model takes it as it is (see
 * `adoptJsonObject`): for members of a canonical value, which are deeply frozen already, and for
 * the validation of an envelope, whose payload the Wire checked and whose models are thrown away.
 * Without it the model copies the value.
 */
function jsonField(value: Record<string, unknown>, adopt: boolean): JsonObject {
  return adopt ? adoptJsonObject(value) : value as JsonObject;
}

/** True when an envelope's payload is canonical, so the models built from it may adopt it. */
function isCanonicalPayload(envelope: ToolEnvelope): boolean {
  return canonicalHeight(envelope.payload) !== undefined;
}

/** Checks an object's field set: unknown fields first, then missing ones. */
function closedFields(
  object: Record<string, unknown>,
  path: string,
  required: readonly string[],
  optional: readonly string[] = [],
): void {
  // Common case first, without allocating: every key (distinct by construction) is known and
  // every required one is among them.
  let requiredSeen = 0;
  let allKnown = true;
  keys: for (const key in object) {
    for (let i = 0; i < required.length; i++) {
      if (required[i] === key) {
        requiredSeen++;
        continue keys;
      }
    }
    for (let i = 0; i < optional.length; i++) if (optional[i] === key) continue keys;
    allKnown = false;
    break;
  }
  if (allKnown && requiredSeen === required.length) return;
  const unknown: string[] = [];
  for (const key of Object.keys(object)) {
    if (!required.includes(key) && !optional.includes(key)) unknown.push(key);
  }
  const missing = required.filter((key) => !(key in object));
  if (unknown.length === 0 && missing.length === 0) return;
  const parts: string[] = [];
  if (unknown.length > 0) {
    parts.push(`unknown fields: ${unknown.sort(compareCodePoints).join(", ")}`);
  }
  if (missing.length > 0) {
    parts.push(`missing fields: ${missing.sort(compareCodePoints).join(", ")}`);
  }
  throw invalidPayload(parts.join("; "), path);
}

/** Builds a model, turning its `TypeError`/`RangeError` into `INVALID_PAYLOAD` at `path`. */
function construct<T>(path: string, build: () => T): T {
  try {
    return build();
  } catch (error) {
    throw modelError(error, path);
  }
}

/** A model's `TypeError`/`RangeError` as `INVALID_PAYLOAD` at `path`; anything else as it is. */
function modelError(error: unknown, path: string): unknown {
  return error instanceof TypeError || error instanceof RangeError
    ? invalidPayload(wireMessageOf(error), path)
    : error;
}

function has(object: Record<string, unknown>, key: string): boolean {
  return Object.hasOwn(object, key);
}

// ---------------------------------------------------------------------------------------------
// ToolError, ToolResult, ToolExecutionStatus (shared parts)

/** The payload form of a {@linkcode ToolError}: `{code, message, retryable, details}`. */
export function toolErrorToPayload(error: ToolError): JsonObject {
  if (!(error instanceof ToolError)) throw new TypeError("error must be a ToolError");
  return {
    code: error.code,
    message: error.message,
    retryable: error.retryable,
    details: error.details,
  };
}

function readToolError(value: unknown, path: string, adopt: boolean): ToolError {
  const object = objectAt(value, path);
  closedFields(object, path, ["code", "message", "retryable", "details"]);
  const details = objectAt(object.details, `${path}.details`);
  return construct(path, () =>
    new ToolError({
      code: object.code as string,
      message: object.message as string,
      retryable: object.retryable as boolean,
      details: jsonField(details, adopt),
    }));
}

/** Decodes a {@linkcode ToolError} object found at `path` (default `payload.error`). */
export function toolErrorFromPayload(value: unknown, path = "payload.error"): ToolError {
  return readToolError(normalized(value, path), path, true);
}

/** The payload form of a {@linkcode ToolResult}: `{status, outputs}` and `error` when failed. */
export function toolResultToPayload(result: ToolResult): JsonObject {
  if (!(result instanceof ToolResult)) throw new TypeError("result must be a ToolResult");
  return result.error === undefined
    ? { status: result.status, outputs: result.outputs }
    : { status: result.status, outputs: result.outputs, error: toolErrorToPayload(result.error) };
}

function readToolResult(value: unknown, path: string, adopt: boolean): ToolResult {
  const object = objectAt(value, path);
  closedFields(object, path, ["status", "outputs"], ["error"]);
  const error = has(object, "error")
    ? readToolError(object.error, `${path}.error`, adopt)
    : undefined;
  const outputs = jsonField(objectAt(object.outputs, `${path}.outputs`), adopt);
  return construct(
    path,
    () =>
      new ToolResult(
        { status: object.status, outputs, error } as ConstructorParameters<
          typeof ToolResult
        >[0],
      ),
  );
}

/** Decodes a {@linkcode ToolResult} object found at `path` (default `payload.result`). */
export function toolResultFromPayload(value: unknown, path = "payload.result"): ToolResult {
  return readToolResult(normalized(value, path), path, true);
}

/** The payload form of a {@linkcode ToolExecutionStatus}: `{phase, details}` and `error`. */
export function executionStatusToPayload(status: ToolExecutionStatus): JsonObject {
  if (!(status instanceof ToolExecutionStatus)) {
    throw new TypeError("status must be a ToolExecutionStatus");
  }
  return status.error === undefined
    ? { phase: status.phase, details: status.details }
    : { phase: status.phase, details: status.details, error: toolErrorToPayload(status.error) };
}

function readExecutionStatus(value: unknown, path: string, adopt: boolean): ToolExecutionStatus {
  const object = objectAt(value, path);
  closedFields(object, path, ["phase", "details"], ["error"]);
  const error = has(object, "error")
    ? readToolError(object.error, `${path}.error`, adopt)
    : undefined;
  const details = jsonField(objectAt(object.details, `${path}.details`), adopt);
  return construct(
    path,
    () =>
      new ToolExecutionStatus(
        { phase: object.phase, details, error } as ConstructorParameters<
          typeof ToolExecutionStatus
        >[0],
      ),
  );
}

/** Decodes a {@linkcode ToolExecutionStatus} object found at `path` (default `payload.status`). */
export function executionStatusFromPayload(
  value: unknown,
  path = "payload.status",
): ToolExecutionStatus {
  return readExecutionStatus(normalized(value, path), path, true);
}

// ---------------------------------------------------------------------------------------------
// tool.invoke.request

/**
 * The payload form of a {@linkcode ToolContext}: `tool_id`, `implementation_id`, `metadata`, and
 * `caller_id` / `deadline_ms` when present. The execution identity, endpoint and operation
 * travel in the envelope headers, never here.
 */
export function toolContextToPayload(context: ToolContext): JsonObject {
  if (!(context instanceof ToolContext)) throw new TypeError("context must be a ToolContext");
  const out: Record<string, unknown> = {
    tool_id: context.toolId,
    implementation_id: context.implementationId,
    metadata: context.metadata,
  };
  if (context.callerId !== undefined) out.caller_id = context.callerId;
  if (context.deadlineMs !== undefined) out.deadline_ms = context.deadlineMs;
  return out as JsonObject;
}

/** The payload of `tool.invoke.request`: `{arguments, context}`. */
export function invokeRequestToPayload(request: ToolRequest, context: ToolContext): JsonObject {
  if (!(request instanceof ToolRequest)) throw new TypeError("request must be a ToolRequest");
  return { arguments: request.arguments, context: toolContextToPayload(context) };
}

/** The request and context an invoke request carries. */
export interface InvokeRequestParts {
  /** The tool arguments. */
  readonly request: ToolRequest;
  /** The context, with the execution identity taken from the envelope headers. */
  readonly context: ToolContext;
}

/** Decodes the {@linkcode ToolRequest} and {@linkcode ToolContext} of a `tool.invoke.request`. */
export function invokeRequestFromEnvelope(envelope: ToolEnvelope): InvokeRequestParts {
  if (!(envelope instanceof ToolEnvelope) || envelope.messageType !== "tool.invoke.request") {
    throw new RangeError("envelope must be tool.invoke.request");
  }
  // An envelope's payload is already normalized: canonical (frozen) payloads are shared, others
  // are copied by the models.
  const payload = objectAt(envelope.payload, "payload");
  return readInvokeRequest(envelope, payload, isCanonicalPayload(envelope))!;
}

/**
 * @internal The members of an invoke request's payload that passed its closed schemas (see
 * {@linkcode checkInvokeRequestEnvelope}).
 */
export interface InvokeRequestFields {
  readonly args: Record<string, unknown>;
  readonly context: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
  readonly callerId: unknown;
  readonly deadlineMs: unknown;
}

/** The closed schemas of an invoke request's payload, and the members they let through. */
function invokeRequestFields(payload: Record<string, unknown>): InvokeRequestFields {
  closedFields(payload, "payload", INVOKE_REQUEST_FIELDS);
  const args = objectAt(payload.arguments, "payload.arguments");
  const context = objectAt(payload.context, "payload.context");
  closedFields(context, "payload.context", CONTEXT_FIELDS, CONTEXT_OPTIONAL_FIELDS);
  const metadata = objectAt(context.metadata, "payload.context.metadata");
  const callerId = context.caller_id ?? undefined;
  const deadlineMs = integerMember(context, "deadline_ms") ?? undefined;
  return { args, context, metadata, callerId, deadlineMs };
}

/**
 * The models' checks of an invoke request without building the models. The execution key's
 * fields, endpoint_id and operation are envelope headers, checked alike; the arguments and
 * metadata are plain objects of a checked payload.
 */
function checkInvokeRequestFields(envelope: ToolEnvelope, fields: InvokeRequestFields): void {
  try {
    checkToolContextFields(
      fields.context.tool_id,
      fields.context.implementation_id,
      envelope.endpointId,
      envelope.operation,
      fields.callerId,
      fields.deadlineMs,
    );
  } catch (error) {
    throw modelError(error, "payload.context");
  }
}

/** Builds the models of an invoke request from its checked fields, with `adopt` (see jsonField). */
function buildInvokeRequest(
  envelope: ToolEnvelope,
  fields: InvokeRequestFields,
  adopt: boolean,
): InvokeRequestParts {
  const { args, context, metadata, callerId, deadlineMs } = fields;
  const request = construct(
    "payload.arguments",
    () => new ToolRequest({ arguments: jsonField(args, adopt) }),
  );
  const toolContext = construct("payload.context", () =>
    new ToolContext({
      executionKey: new ToolExecutionKey({
        invocationId: envelope.invocationId!,
        attemptId: envelope.attemptId!,
      }),
      toolId: context.tool_id as string,
      implementationId: context.implementation_id as string,
      endpointId: envelope.endpointId,
      operation: envelope.operation!,
      callerId: callerId as string | undefined,
      deadlineMs: deadlineMs as number | undefined,
      metadata: jsonField(metadata, adopt),
    }));
  return { request, context: toolContext };
}

/**
 * Reads an invoke request's payload: the closed schemas, then the models' checks, building the
 * models with `adopt` (see {@linkcode jsonField}). With `build` false (validation of an envelope,
 * whose headers and payload JSON are already checked) the checks run without building the
 * models, which would only be thrown away.
 */
function readInvokeRequest(
  envelope: ToolEnvelope,
  payload: Record<string, unknown>,
  adopt: boolean,
  build = true,
): InvokeRequestParts | undefined {
  const fields = invokeRequestFields(payload);
  if (!build) {
    checkInvokeRequestFields(envelope, fields);
    return undefined;
  }
  return buildInvokeRequest(envelope, fields, adopt);
}

/**
 * @internal {@linkcode validateMessageEnvelope} of a `tool.invoke.request` envelope, with its
 * errors, returning the checked fields so that {@linkcode invokeRequestFromFields} builds the
 * models without reading the payload again.
 */
export function checkInvokeRequestEnvelope(envelope: ToolEnvelope): InvokeRequestFields {
  if (!(envelope instanceof ToolEnvelope)) throw new TypeError("envelope must be a ToolEnvelope");
  if (envelope.messageType !== "tool.invoke.request") {
    throw new RangeError("envelope must be tool.invoke.request");
  }
  const fields = invokeRequestFields(payloadOf(envelope));
  checkInvokeRequestFields(envelope, fields);
  return fields;
}

/**
 * @internal {@linkcode invokeRequestFromEnvelope} of an envelope whose fields
 * {@linkcode checkInvokeRequestEnvelope} returned: the same models, with the same errors.
 */
export function invokeRequestFromFields(
  envelope: ToolEnvelope,
  fields: InvokeRequestFields,
): InvokeRequestParts {
  return buildInvokeRequest(envelope, fields, isCanonicalPayload(envelope));
}

const INVOKE_REQUEST_FIELDS = ["arguments", "context"];
const CONTEXT_FIELDS = ["tool_id", "implementation_id", "metadata"];
const CONTEXT_OPTIONAL_FIELDS = ["caller_id", "deadline_ms"];

// ---------------------------------------------------------------------------------------------
// tool.invoke.response

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

function readInvokeResponse(object: Record<string, unknown>, adopt: boolean): InvokeResponse {
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

function readStatusResponse(object: Record<string, unknown>, adopt: boolean): ToolExecutionStatus {
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

function readResultResponse(object: Record<string, unknown>, adopt: boolean): ToolResultResponse {
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

function readErrorPayload(object: Record<string, unknown>, adopt: boolean): ToolError {
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

function readControlRequest(object: Record<string, unknown>): ControlRequest {
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

function readControlResponse(
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

function readEvent(object: Record<string, unknown>, adopt: boolean): ToolEvent {
  closedFields(object, "payload", ["type", "data"]);
  const data = jsonField(objectAt(object.data, "payload.data"), adopt);
  return construct(
    "payload",
    () => new ToolEvent({ type: object.type, data } as ConstructorParameters<typeof ToolEvent>[0]),
  );
}

// ---------------------------------------------------------------------------------------------
// Management messages

/** The payload of `endpoint.status`: `{status: {state, active_invocations, details}}`. */
export function endpointStatusToPayload(status: EndpointStatus): JsonObject {
  if (!(status instanceof EndpointStatus)) throw new TypeError("status must be an EndpointStatus");
  return {
    status: {
      state: status.state,
      active_invocations: status.activeInvocations,
      details: status.details,
    },
  };
}

/** Decodes the {@linkcode EndpointStatus} of an `endpoint.status` (endpoint from the header). */
export function endpointStatusFromEnvelope(envelope: ToolEnvelope): EndpointStatus {
  if (!(envelope instanceof ToolEnvelope) || envelope.messageType !== "endpoint.status") {
    throw new RangeError("envelope must be endpoint.status");
  }
  return readEndpointStatus(envelope, isCanonicalPayload(envelope));
}

function readEndpointStatus(envelope: ToolEnvelope, adopt: boolean): EndpointStatus {
  const object = objectAt(envelope.payload, "payload");
  closedFields(object, "payload", ["status"]);
  const inner = objectAt(object.status, "payload.status");
  closedFields(inner, "payload.status", ["state", "active_invocations", "details"]);
  const details = jsonField(objectAt(inner.details, "payload.status.details"), adopt);
  return construct("payload.status", () =>
    new EndpointStatus(
      {
        endpointId: envelope.endpointId,
        state: inner.state,
        activeInvocations: integerMember(inner, "active_invocations"),
        details,
      } as ConstructorParameters<typeof EndpointStatus>[0],
    ));
}

/**
 * The payload of `endpoint.registry.response`: `operation`, `status`, `registry_revision`, and
 * `lease_ttl_ms` / `error` only when present.
 */
export function endpointRegistryResponseToPayload(response: EndpointRegistryResponse): JsonObject {
  if (!(response instanceof EndpointRegistryResponse)) {
    throw new TypeError("response must be an EndpointRegistryResponse");
  }
  const out: Record<string, unknown> = {
    operation: response.operation,
    status: response.status,
    registry_revision: response.registryRevision,
  };
  if (response.leaseTtlMs !== undefined) out.lease_ttl_ms = response.leaseTtlMs;
  if (response.error !== undefined) out.error = toolErrorToPayload(response.error);
  return out as JsonObject;
}

/** Decodes the payload of `endpoint.registry.response`. */
export function endpointRegistryResponseFromPayload(payload: unknown): EndpointRegistryResponse {
  return readRegistryResponse(rootObject(payload, "payload"), true);
}

function readRegistryResponse(
  object: Record<string, unknown>,
  adopt: boolean,
): EndpointRegistryResponse {
  closedFields(
    object,
    "payload",
    ["operation", "status", "registry_revision"],
    ["lease_ttl_ms", "error"],
  );
  for (const field of ["lease_ttl_ms", "error"]) {
    if (has(object, field) && object[field] === null) {
      throw invalidPayload("must be omitted rather than null", `payload.${field}`);
    }
  }
  const error = has(object, "error")
    ? readToolError(object.error, "payload.error", adopt)
    : undefined;
  return construct("payload", () =>
    new EndpointRegistryResponse(
      {
        operation: object.operation,
        status: object.status,
        registryRevision: integerMember(object, "registry_revision"),
        leaseTtlMs: integerMember(object, "lease_ttl_ms"),
        error,
      } as ConstructorParameters<typeof EndpointRegistryResponse>[0],
    ));
}

/**
 * The payload of `endpoint.register`: `{descriptor: {protocol_version, endpoint_id, operations}}`
 * with all six fields of every operation.
 */
export function endpointDescriptorToPayload(descriptor: ToolEndpointDescriptor): JsonObject {
  if (!(descriptor instanceof ToolEndpointDescriptor)) {
    throw new TypeError("descriptor must be a ToolEndpointDescriptor");
  }
  if (descriptor.protocolVersion !== TOOL_ENDPOINT_PROTOCOL) {
    throw unsupportedDescriptorVersion(descriptor.protocolVersion);
  }
  return {
    descriptor: {
      protocol_version: descriptor.protocolVersion,
      endpoint_id: descriptor.endpointId,
      operations: descriptor.operations.map((operation) => ({
        name: operation.name,
        semantics: operation.semantics,
        cancellable: operation.cancellable,
        stoppable: operation.stoppable,
        status_supported: operation.statusSupported,
        max_concurrency: operation.maxConcurrency,
      })),
    },
  };
}

function unsupportedDescriptorVersion(found: unknown): ToolProtocolError {
  return new ToolProtocolError(
    ToolErrorCodes.UNSUPPORTED_VERSION,
    `expected '${TOOL_ENDPOINT_PROTOCOL}', found ${pyRepr(found)}`,
    "payload.descriptor.protocol_version",
  );
}

const OPERATION_FIELDS = [
  "name",
  "semantics",
  "cancellable",
  "stoppable",
  "status_supported",
  "max_concurrency",
] as const;

/** Decodes the payload of `endpoint.register` into a {@linkcode ToolEndpointDescriptor}. */
export function endpointDescriptorFromPayload(payload: unknown): ToolEndpointDescriptor {
  if (!isMapping(payload)) {
    throw invalidPayload("registration payload must be an object", "payload");
  }
  if (payload instanceof Map) {
    for (const key of payload.keys()) {
      if (typeof key !== "string") throw invalidPayload("object keys must be strings", "payload");
    }
    payload = Object.fromEntries(payload);
  }
  const object = payload as Record<string, unknown>;
  closedFields(object, "payload", ["descriptor"]);
  const descriptor = objectAt(object.descriptor, "payload.descriptor");
  closedFields(descriptor, "payload.descriptor", ["protocol_version", "endpoint_id", "operations"]);
  if (descriptor.protocol_version !== TOOL_ENDPOINT_PROTOCOL) {
    throw unsupportedDescriptorVersion(descriptor.protocol_version);
  }
  const operations = descriptor.operations;
  if (!Array.isArray(operations)) {
    throw invalidPayload("must be an array", "payload.descriptor.operations");
  }
  const parsed = operations.map((value, index) => {
    const path = `payload.descriptor.operations[${index}]`;
    const operation = objectAt(value, path);
    closedFields(operation, path, OPERATION_FIELDS);
    return construct(path, () =>
      new ToolOperationDescriptor(
        {
          name: operation.name,
          semantics: operation.semantics,
          cancellable: operation.cancellable,
          stoppable: operation.stoppable,
          statusSupported: operation.status_supported,
          maxConcurrency: integerMember(operation, "max_concurrency"),
        } as ConstructorParameters<typeof ToolOperationDescriptor>[0],
      ));
  });
  return construct("payload.descriptor", () =>
    new ToolEndpointDescriptor({
      protocolVersion: descriptor.protocol_version as string,
      endpointId: descriptor.endpoint_id as string,
      operations: parsed,
    }));
}

/**
 * Checks an `endpoint.register` envelope and returns its descriptor: the descriptor's
 * `endpoint_id` must equal the envelope's.
 */
export function validateRegistrationEnvelope(envelope: ToolEnvelope): ToolEndpointDescriptor {
  if (!(envelope instanceof ToolEnvelope)) throw new TypeError("envelope must be a ToolEnvelope");
  if (envelope.messageType !== "endpoint.register") {
    throw new ToolProtocolError(
      ToolErrorCodes.INVALID_MESSAGE,
      "expected endpoint.register",
      "message_type",
    );
  }
  const descriptor = endpointDescriptorFromPayload(envelope.payload);
  if (descriptor.endpointId !== envelope.endpointId) {
    throw invalidPayload(
      "descriptor endpoint_id must match envelope endpoint_id",
      "payload.descriptor.endpoint_id",
    );
  }
  return descriptor;
}

function emptyPayload(payload: JsonObject): void {
  closedFields(payload as Record<string, unknown>, "payload", []);
}

/** The envelope's payload, which its constructor checked, as an object. */
function payloadOf(envelope: ToolEnvelope): Record<string, unknown> {
  return objectAt(envelope.payload, "payload");
}

// The typed validation of each message type. The payload was checked when the envelope was built,
// so the readers adopt its members (`adopt` true): the models they build only validate and are
// thrown away.
const VALIDATORS: Readonly<Record<ToolMessageType, (envelope: ToolEnvelope) => unknown>> = {
  "endpoint.register": validateRegistrationEnvelope,
  "endpoint.unregister": (envelope) => emptyPayload(envelope.payload),
  "endpoint.registry.response": (envelope) => readRegistryResponse(payloadOf(envelope), true),
  "endpoint.status": (envelope) => readEndpointStatus(envelope, true),
  "tool.invoke.request": (envelope) =>
    readInvokeRequest(envelope, payloadOf(envelope), true, false),
  "tool.invoke.response": (envelope) => readInvokeResponse(payloadOf(envelope), true),
  "tool.status.request": (envelope) => emptyPayload(envelope.payload),
  "tool.status.response": (envelope) => readStatusResponse(payloadOf(envelope), true),
  "tool.result.request": (envelope) => emptyPayload(envelope.payload),
  "tool.result.response": (envelope) => readResultResponse(payloadOf(envelope), true),
  "tool.control.request": (envelope) => readControlRequest(payloadOf(envelope)),
  "tool.control.response": (envelope) => readControlResponse(payloadOf(envelope), true),
  "tool.event": (envelope) => readEvent(payloadOf(envelope), true),
  "tool.error": (envelope) => readErrorPayload(payloadOf(envelope), true),
};

/**
 * @internal Builds and validates an envelope for a Wire factory (src/wire/factories.ts), marked
 * so that {@linkcode checkTypedEnvelope} skips it: a factory's envelope is immutable (frozen
 * headers, a deeply frozen payload copy), so its validation cannot change afterwards.
 */
export function typedFactoryEnvelope(init: ToolEnvelopeInit): ToolEnvelope {
  return envelopeFromFactory(init, validateMessageEnvelope);
}

/**
 * @internal {@linkcode validateMessageEnvelope} at an encoder: skipped for an envelope a factory
 * validated ({@linkcode typedFactoryEnvelope}), with the same errors for any other.
 */
export function checkTypedEnvelope(envelope: ToolEnvelope): void {
  if (!isFactoryTyped(envelope)) validateMessageEnvelope(envelope);
}

/**
 * Checks the typed payload of an envelope against its message type's closed schema; throws a
 * {@linkcode ToolProtocolError} (`FORGE_PROTOCOL_INVALID_PAYLOAD`, or
 * `FORGE_PROTOCOL_UNSUPPORTED_VERSION` for a descriptor of another protocol).
 */
export function validateMessageEnvelope(envelope: ToolEnvelope): void {
  if (!(envelope instanceof ToolEnvelope)) throw new TypeError("envelope must be a ToolEnvelope");
  VALIDATORS[envelope.messageType](envelope);
}

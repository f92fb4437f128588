/**
 * Factories for every message: each returns a fully validated envelope (header matrix and typed
 * payload). Request and event factories take the execution identity, endpoint and operation from
 * the {@linkcode ToolContext}; response factories copy the correlation identities of the request
 * they answer.
 *
 * @module
 */
import type { ToolControlCommand, ToolMessageType } from "../endpoint/constants.ts";
import {
  type EndpointRegistryResponse,
  type EndpointStatus,
  ToolContext,
  type ToolControlResponse,
  type ToolEndpointDescriptor,
  type ToolError,
  type ToolEvent,
  type ToolExecutionStatus,
  type ToolRequest,
  type ToolResultResponse,
} from "../endpoint/models.ts";
import type { JsonObject } from "../_internal/json.ts";
import { envelopeAnswering, ToolEnvelope } from "./envelope.ts";
import { pairedResponseType, registryOperationOf } from "./header_matrix.ts";
import {
  builtControlResponsePayload,
  builtErrorPayload,
  builtInvokeRequestPayload,
  builtInvokeResponsePayload,
  builtResultResponsePayload,
  builtStatusResponsePayload,
} from "./_built_payloads.ts";
import { type InvokeRequestParts, invokeRequestToPayload } from "./invoke_request.ts";
import {
  controlRequestToPayload,
  controlResponseToPayload,
  errorToPayload,
  eventToPayload,
  type InvokeResponse,
  invokeResponseToPayload,
  resultResponseToPayload,
  statusResponseToPayload,
} from "./execution_payloads.ts";
import {
  endpointDescriptorToPayload,
  endpointRegistryResponseToPayload,
  endpointStatusToPayload,
} from "./management_payloads.ts";
import { builtFactoryEnvelope, typedFactoryEnvelope } from "./validate.ts";
import { validateManagementResponseCorrelation } from "./correlation.ts";

function requireContext(context: ToolContext): ToolContext {
  if (!(context instanceof ToolContext)) throw new TypeError("context must be a ToolContext");
  return context;
}

/**
 * An execution request of `context`; `built`: the models `payload` was built from
 * (`_built_payloads.ts`), which needs no typed validation.
 */
function executionRequest(
  messageType: ToolMessageType,
  context: ToolContext,
  payload: JsonObject,
  requestId: string,
  endpointInstanceId: string | undefined,
  built?: InvokeRequestParts,
): ToolEnvelope {
  const init = {
    messageType,
    requestId,
    invocationId: context.invocationId,
    attemptId: context.attemptId,
    endpointId: context.endpointId,
    endpointInstanceId,
    operation: context.operation,
    payload,
  };
  return built === undefined ? typedFactoryEnvelope(init) : builtFactoryEnvelope(init, built);
}

/** The exchange identity of an execution request. */
export interface ExecutionRequestOptions {
  /** The request's exchange identity. */
  readonly requestId: string;
  /** The provider instance; `undefined` before the Gateway resolved one. */
  readonly endpointInstanceId: string | undefined;
}

/**
 * A `tool.invoke.request` for `request` under `context`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolContext, ToolExecutionKey, ToolRequest } from "@forge/tool";
 * import { makeInvokeRequestEnvelope } from "@forge/tool/wire";
 * const context = new ToolContext({
 *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
 *   toolId: "forge.tool.detect",
 *   implementationId: "yolo",
 *   endpointId: "vision.yolo",
 *   operation: "detect",
 * });
 * const request = makeInvokeRequestEnvelope(new ToolRequest({ arguments: { class: "cube" } }), context, {
 *   requestId: "request-1",
 *   endpointInstanceId: "instance-1",
 * });
 * assertEquals(request.messageType, "tool.invoke.request");
 * ```
 */
export function makeInvokeRequestEnvelope(
  request: ToolRequest,
  context: ToolContext,
  options: ExecutionRequestOptions,
): ToolEnvelope {
  requireContext(context);
  const built = builtInvokeRequestPayload(request, context);
  return executionRequest(
    "tool.invoke.request",
    context,
    built ?? invokeRequestToPayload(request, context),
    options.requestId,
    options.endpointInstanceId,
    built === undefined ? undefined : { request, context },
  );
}

/** A `tool.status.request` for the execution of `context`. */
export function makeStatusRequestEnvelope(
  context: ToolContext,
  options: ExecutionRequestOptions,
): ToolEnvelope {
  requireContext(context);
  return executionRequest(
    "tool.status.request",
    context,
    {},
    options.requestId,
    options.endpointInstanceId,
  );
}

/** A `tool.result.request` for the execution of `context`. */
export function makeResultRequestEnvelope(
  context: ToolContext,
  options: ExecutionRequestOptions,
): ToolEnvelope {
  requireContext(context);
  return executionRequest(
    "tool.result.request",
    context,
    {},
    options.requestId,
    options.endpointInstanceId,
  );
}

/** Options of {@linkcode makeControlRequestEnvelope}. */
export interface ControlRequestOptions extends ExecutionRequestOptions {
  /** Why the caller asks, when it says. */
  readonly reason?: string;
}

/** A `tool.control.request` (`cancel` for an Action, `stop` for a Session). */
export function makeControlRequestEnvelope(
  command: ToolControlCommand,
  context: ToolContext,
  options: ControlRequestOptions,
): ToolEnvelope {
  requireContext(context);
  return executionRequest(
    "tool.control.request",
    context,
    controlRequestToPayload(command, options.reason),
    options.requestId,
    options.endpointInstanceId,
  );
}

/** Options of {@linkcode makeEventEnvelope}. */
export interface EventEnvelopeOptions {
  /** The provider instance that emits the event. */
  readonly endpointInstanceId: string | undefined;
  /** The event's sequence number within its execution, from 0. */
  readonly sequence: number;
}

/** A `tool.event` of the execution of `context` (no request id). */
export function makeEventEnvelope(
  event: ToolEvent,
  context: ToolContext,
  options: EventEnvelopeOptions,
): ToolEnvelope {
  requireContext(context);
  const payload = eventToPayload(event);
  return typedFactoryEnvelope({
    messageType: "tool.event",
    invocationId: context.invocationId,
    attemptId: context.attemptId,
    endpointId: context.endpointId,
    endpointInstanceId: options.endpointInstanceId,
    operation: context.operation,
    sequence: options.sequence,
    payload,
  });
}

/** A `tool.error` about the execution of `context`. */
export function makeErrorEnvelope(
  error: ToolError,
  context: ToolContext,
  options: ExecutionRequestOptions,
): ToolEnvelope {
  requireContext(context);
  return executionRequest(
    "tool.error",
    context,
    errorToPayload(error),
    options.requestId,
    options.endpointInstanceId,
  );
}

/**
 * The response to `request`. `built`: the marked model whose canonical payload `payload` is
 * (adopted as it is, without the typed validation: the model's constructor already ran every check
 * the validators would run again, and the envelope keeps the model for its reader); otherwise the
 * envelope copies and validates.
 */
function correlatedResponse(
  messageType: ToolMessageType,
  payload: JsonObject,
  request: ToolEnvelope,
  built?: object,
): ToolEnvelope {
  if (built !== undefined) {
    // The request's headers were checked when it was built: the answer takes them as they are.
    const answer = envelopeAnswering(request, messageType, payload, built);
    if (answer !== undefined) return answer;
  }
  const init = {
    messageType,
    requestId: request.requestId,
    invocationId: request.invocationId,
    attemptId: request.attemptId,
    endpointId: request.endpointId,
    endpointInstanceId: request.endpointInstanceId,
    operation: request.operation,
    payload,
  };
  return built !== undefined ? builtFactoryEnvelope(init, built) : typedFactoryEnvelope(init);
}

function requireRequest(request: ToolEnvelope, responseType: ToolMessageType): void {
  if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
  if (pairedResponseType(request.messageType) !== responseType) {
    const requestType = responseType.replace(/\.response$/, ".request");
    throw new RangeError(`${responseType} requires a ${requestType} envelope`);
  }
}

/** The `tool.invoke.response` answering `request` (a result, an acceptance or a rejection). */
export function makeInvokeResponseEnvelope(
  response: InvokeResponse,
  request: ToolEnvelope,
): ToolEnvelope {
  const built = builtInvokeResponsePayload(response);
  // Without a built payload, the adapter's type errors come before the request's.
  const payload = built === undefined ? invokeResponseToPayload(response) : built;
  requireRequest(request, "tool.invoke.response");
  return correlatedResponse(
    "tool.invoke.response",
    payload,
    request,
    built === undefined ? undefined : response,
  );
}

/** The `tool.status.response` answering `request`. */
export function makeStatusResponseEnvelope(
  status: ToolExecutionStatus,
  request: ToolEnvelope,
): ToolEnvelope {
  const built = builtStatusResponsePayload(status);
  // Without a built payload, the adapter's type errors come before the request's.
  const payload = built === undefined ? statusResponseToPayload(status) : built;
  requireRequest(request, "tool.status.response");
  return correlatedResponse(
    "tool.status.response",
    payload,
    request,
    built === undefined ? undefined : status,
  );
}

/** The `tool.result.response` answering `request`. */
export function makeResultResponseEnvelope(
  response: ToolResultResponse,
  request: ToolEnvelope,
): ToolEnvelope {
  const built = builtResultResponsePayload(response);
  // Without a built payload, the adapter's type errors come before the request's.
  const payload = built === undefined ? resultResponseToPayload(response) : built;
  requireRequest(request, "tool.result.response");
  return correlatedResponse(
    "tool.result.response",
    payload,
    request,
    built === undefined ? undefined : response,
  );
}

/** The `tool.control.response` answering `request`. */
export function makeControlResponseEnvelope(
  response: ToolControlResponse,
  request: ToolEnvelope,
): ToolEnvelope {
  const built = builtControlResponsePayload(response);
  // Without a built payload, the adapter's type errors come before the request's.
  const payload = built === undefined ? controlResponseToPayload(response) : built;
  requireRequest(request, "tool.control.response");
  return correlatedResponse(
    "tool.control.response",
    payload,
    request,
    built === undefined ? undefined : response,
  );
}

/**
 * The correlated `tool.error` answering any execution request. Needs only the request's generic
 * envelope, so it also answers a request whose typed payload is invalid.
 */
export function makeErrorResponseEnvelope(error: ToolError, request: ToolEnvelope): ToolEnvelope {
  const built = builtErrorPayload(error);
  const payload = built === undefined ? errorToPayload(error) : built;
  if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
  if (pairedResponseType(request.messageType) === undefined) {
    throw new RangeError("request envelope has no paired error response");
  }
  return correlatedResponse(
    "tool.error",
    payload,
    request,
    built === undefined ? undefined : error,
  );
}

/** The identity of a management request. */
export interface ManagementRequestOptions {
  /** This process's provider instance. */
  readonly endpointInstanceId: string;
  /** The exchange identity. */
  readonly requestId: string;
}

/** An `endpoint.register` announcing `descriptor` (announce, upsert and lease renewal). */
export function makeRegistrationEnvelope(
  descriptor: ToolEndpointDescriptor,
  options: ManagementRequestOptions,
): ToolEnvelope {
  const payload = endpointDescriptorToPayload(descriptor);
  return typedFactoryEnvelope({
    messageType: "endpoint.register",
    requestId: options.requestId,
    endpointId: descriptor.endpointId,
    endpointInstanceId: options.endpointInstanceId,
    payload,
  });
}

/** Options of {@linkcode makeUnregisterEnvelope}. */
export interface UnregisterOptions extends ManagementRequestOptions {
  /** The endpoint whose availability ends. */
  readonly endpointId: string;
}

/** An `endpoint.unregister` (empty payload). */
export function makeUnregisterEnvelope(options: UnregisterOptions): ToolEnvelope {
  return typedFactoryEnvelope({
    messageType: "endpoint.unregister",
    requestId: options.requestId,
    endpointId: options.endpointId,
    endpointInstanceId: options.endpointInstanceId,
  });
}

/**
 * The `endpoint.registry.response` answering an `endpoint.register` or `endpoint.unregister`;
 * the response's operation must match the request.
 */
export function makeEndpointRegistryResponseEnvelope(
  response: EndpointRegistryResponse,
  request: ToolEnvelope,
): ToolEnvelope {
  const payload = endpointRegistryResponseToPayload(response);
  if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
  const operation = registryOperationOf(request.messageType);
  if (operation === undefined) {
    throw new RangeError("request envelope has no paired Registry response");
  }
  if (response.operation !== operation) {
    throw new RangeError(`${request.messageType} requires Registry operation '${operation}'`);
  }
  const envelope = typedFactoryEnvelope({
    messageType: "endpoint.registry.response",
    requestId: request.requestId,
    endpointId: request.endpointId,
    endpointInstanceId: request.endpointInstanceId,
    payload,
  });
  validateManagementResponseCorrelation(request, envelope);
  return envelope;
}

/** Options of {@linkcode makeEndpointStatusEnvelope}. */
export interface EndpointStatusOptions {
  /** This process's provider instance. */
  readonly endpointInstanceId: string;
}

/** An unsolicited `endpoint.status` health snapshot (no request id). */
export function makeEndpointStatusEnvelope(
  status: EndpointStatus,
  options: EndpointStatusOptions,
): ToolEnvelope {
  const payload = endpointStatusToPayload(status);
  return typedFactoryEnvelope({
    messageType: "endpoint.status",
    endpointId: status.endpointId,
    endpointInstanceId: options.endpointInstanceId,
    payload,
  });
}

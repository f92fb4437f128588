/**
 * Correlation checks: does a response answer its request, on the same route and identities?
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { ToolEnvelope } from "./envelope.ts";
import { pairedResponseType, registryOperationOf } from "./header_matrix.ts";
import { controlRequestFromPayload, controlResponseFromPayload } from "./execution_payloads.ts";
import { endpointRegistryResponseFromPayload } from "./management_payloads.ts";

function mismatch(path: string, message = "response does not match request"): ToolProtocolError {
  return new ToolProtocolError(ToolErrorCodes.CORRELATION_MISMATCH, message, path);
}

/**
 * Checks that `response` answers the execution request `request`: the paired response type or
 * `tool.error`, the same request, invocation, attempt, endpoint, instance (absent matches only
 * absent) and operation, and for control the same command. Violations are
 * `FORGE_PROTOCOL_CORRELATION_MISMATCH` with the mismatching field as path.
 */
export function validateResponseCorrelation(request: ToolEnvelope, response: ToolEnvelope): void {
  const paired = pairedResponseType(request.messageType);
  if (paired === undefined) throw new RangeError("request envelope has no paired response type");
  if (response.messageType !== paired && response.messageType !== "tool.error") {
    throw mismatch("message_type");
  }
  // Field by field, the first mismatch being the path reported: named reads stay monomorphic,
  // where a loop over the field names made each read a keyed, megamorphic one.
  if (request.requestId !== response.requestId) throw mismatch("request_id");
  if (request.invocationId !== response.invocationId) throw mismatch("invocation_id");
  if (request.attemptId !== response.attemptId) throw mismatch("attempt_id");
  if (request.endpointId !== response.endpointId) throw mismatch("endpoint_id");
  if (request.endpointInstanceId !== response.endpointInstanceId) {
    throw mismatch("endpoint_instance_id");
  }
  if (request.operation !== response.operation) throw mismatch("operation");
  if (response.messageType === "tool.control.response") {
    const { command } = controlRequestFromPayload(request.payload);
    if (controlResponseFromPayload(response.payload).command !== command) {
      throw mismatch("payload.response.command");
    }
  }
}

const MANAGEMENT_IDENTITY = [
  ["request_id", "requestId"],
  ["endpoint_id", "endpointId"],
  ["endpoint_instance_id", "endpointInstanceId"],
] as const;

/**
 * Checks that an `endpoint.registry.response` answers an `endpoint.register` or
 * `endpoint.unregister`: same request, endpoint and instance, and the matching operation.
 */
export function validateManagementResponseCorrelation(
  request: ToolEnvelope,
  response: ToolEnvelope,
): void {
  if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
  if (!(response instanceof ToolEnvelope)) throw new TypeError("response must be a ToolEnvelope");
  const operation = registryOperationOf(request.messageType);
  if (operation === undefined) {
    throw new RangeError("request envelope has no paired Registry response type");
  }
  if (response.messageType !== "endpoint.registry.response") throw mismatch("message_type");
  for (const [path, field] of MANAGEMENT_IDENTITY) {
    if (request[field] !== response[field]) throw mismatch(path);
  }
  if (endpointRegistryResponseFromPayload(response.payload).operation !== operation) {
    throw mismatch("payload.operation");
  }
}

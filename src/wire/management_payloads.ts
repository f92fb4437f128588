/**
 * The payloads of the management messages: `endpoint.status`, `endpoint.registry.response` and
 * the descriptor of `endpoint.register`.
 *
 * @module
 */
import { TOOL_ENDPOINT_PROTOCOL } from "../endpoint/constants.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { isMapping, type JsonObject } from "../_internal/json.ts";
import { pyRepr } from "../_internal/repr.ts";
import {
  EndpointRegistryResponse,
  EndpointStatus,
  ToolEndpointDescriptor,
  ToolOperationDescriptor,
} from "../endpoint/models.ts";
import { ToolEnvelope } from "./envelope.ts";
import {
  closedFields,
  construct,
  has,
  integerMember,
  invalidPayload,
  isCanonicalPayload,
  jsonField,
  objectAt,
  rootObject,
} from "./_payload_rules.ts";
import { readToolError, toolErrorToPayload } from "./outcome_payloads.ts";

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

export function readEndpointStatus(envelope: ToolEnvelope, adopt: boolean): EndpointStatus {
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

export function readRegistryResponse(
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

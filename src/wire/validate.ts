/**
 * The typed validation of an envelope: the closed schema of each message type's payload, and
 * the factories' path that validates once, when the envelope is built.
 *
 * @module
 */
import type { ToolMessageType } from "../endpoint/constants.ts";
import type { JsonObject } from "../_internal/json.ts";
import {
  envelopeFromFactory,
  isFactoryTyped,
  ToolEnvelope,
  type ToolEnvelopeInit,
} from "./envelope.ts";
import { closedFields, payloadOf } from "./_payload_rules.ts";
import { readInvokeRequest } from "./invoke_request.ts";
import {
  controlRequestOf,
  readControlResponse,
  readErrorPayload,
  readEvent,
  readInvokeResponse,
  readResultResponse,
  readStatusResponse,
} from "./execution_payloads.ts";
import {
  readEndpointStatus,
  readRegistryResponse,
  validateRegistrationEnvelope,
} from "./management_payloads.ts";

function emptyPayload(payload: JsonObject): void {
  closedFields(payload as Record<string, unknown>, "payload", []);
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
  "tool.control.request": (envelope) => controlRequestOf(envelope),
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

/** What a built payload's envelope runs in place of the typed validation: nothing. */
function builtPayloadChecked(_envelope: ToolEnvelope): void {}

/**
 * @internal Builds an envelope for a Wire factory whose payload `_built_payloads.ts` built from
 * `source`, models their own constructors built (an invoke request's request and context, a
 * response's answer), marked as {@linkcode typedFactoryEnvelope} marks its own: the typed
 * validation would only rebuild and check those models again. The constructor still checks every
 * header; the envelope keeps `source` for its reader.
 */
export function builtFactoryEnvelope(init: ToolEnvelopeInit, source: object): ToolEnvelope {
  return envelopeFromFactory(init, builtPayloadChecked, source);
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

/**
 * Route trust: which requests a handler answers at all. A request for another endpoint or
 * instance, an undeclared operation, or a message that is no execution request is raised, never
 * answered.
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import type { ToolOperationDescriptor } from "../endpoint/models.ts";
import { pairedResponseType } from "../wire/header_matrix.ts";
import { pyRepr } from "../_internal/repr.ts";

/**
 * The route headers of a request, what {@linkcode ToolEndpointHandler.validateRequestRoute}
 * checks: every {@linkcode ToolEnvelope} has them, and a transport can read them from a carrier
 * before it parses the payload.
 */
export interface ToolRequestRoute {
  /** The message type: one of the four execution request types. */
  readonly messageType: string;
  /** The logical endpoint. */
  readonly endpointId: string;
  /** The provider instance (absent before provider routing, which this handler refuses). */
  readonly endpointInstanceId: string | undefined;
  /** The operation. */
  readonly operation: string | undefined;
}

/** True for the four execution request types (those with a paired response). */
export function isExecutionRequestType(messageType: string): boolean {
  return pairedResponseType(messageType) !== undefined;
}

/** The refusal of a message that is no execution request where only requests are accepted. */
export function notARequest(messageType: string): ToolProtocolError {
  return new ToolProtocolError(
    ToolErrorCodes.UNKNOWN_MESSAGE_TYPE,
    `request envelope must be an execution request, found ${pyRepr(messageType)}`,
    "message_type",
  );
}

/** Raises the first way `route` is not one the handler of `endpointId` and `instanceId` trusts. */
export function checkRoute(
  route: ToolRequestRoute,
  endpointId: string,
  endpointInstanceId: string,
  operations: ReadonlyMap<string, ToolOperationDescriptor>,
): void {
  if (!isExecutionRequestType(route.messageType)) throw notARequest(route.messageType);
  if (route.endpointId !== endpointId) {
    throw new ToolProtocolError(
      ToolErrorCodes.ROUTE_MISMATCH,
      `request targets endpoint ${pyRepr(route.endpointId)}, expected ${pyRepr(endpointId)}`,
      "endpoint_id",
    );
  }
  if (route.endpointInstanceId !== endpointInstanceId) {
    throw new ToolProtocolError(
      ToolErrorCodes.ROUTE_MISMATCH,
      `request targets endpoint instance ${pyRepr(route.endpointInstanceId)}, expected ${
        pyRepr(endpointInstanceId)
      }`,
      "endpoint_instance_id",
    );
  }
  if (route.operation === undefined || !operations.has(route.operation)) {
    throw new ToolProtocolError(
      ToolErrorCodes.UNKNOWN_OPERATION,
      `endpoint does not declare operation ${pyRepr(route.operation)}`,
      "operation",
    );
  }
}

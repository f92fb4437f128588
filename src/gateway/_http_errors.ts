// The JSON bodies and HTTP statuses of the Gateway Tool API (private to src/gateway/): the
// Forge Gateway's `{ ok, data }` / `{ ok: false, msg, error }` shapes, and the one table that
// maps a ToolError code (the endpoint's, the router's, or the service's own) to a status.
import { ToolError } from "../endpoint/models.ts";
import { ToolCallError, ToolClientError } from "../client/errors.ts";
import { toolErrorToPayload } from "../wire/outcome_payloads.ts";

/** The service's own error codes (Forge Gateway 1.0.2 names, and two of this package). */
export const HttpErrorCodes = {
  ENDPOINT_UNKNOWN: "FORGE_TOOL_ENDPOINT_UNKNOWN",
  OPERATION_NOT_FOUND: "FORGE_TOOL_OPERATION_NOT_FOUND",
  INVOCATION_NOT_FOUND: "FORGE_TOOL_INVOCATION_NOT_FOUND",
  REQUEST_CONFLICT: "FORGE_TOOL_REQUEST_CONFLICT",
  INVOKE_TIMEOUT: "FORGE_TOOL_INVOKE_TIMEOUT",
  GATEWAY_BUSY: "FORGE_TOOL_GATEWAY_BUSY",
  GATEWAY_UNAVAILABLE: "FORGE_TOOL_GATEWAY_UNAVAILABLE",
  QUERY_NON_TERMINAL_RESPONSE: "FORGE_TOOL_QUERY_NON_TERMINAL_RESPONSE",
  BAD_REQUEST: "FORGE_TOOL_BAD_REQUEST",
  UNAUTHORIZED: "FORGE_TOOL_UNAUTHORIZED",
  ROUTE_NOT_FOUND: "FORGE_TOOL_ROUTE_NOT_FOUND",
  METHOD_NOT_ALLOWED: "FORGE_TOOL_METHOD_NOT_ALLOWED",
  BODY_TOO_LARGE: "FORGE_TOOL_BODY_TOO_LARGE",
  BODY_TIMEOUT: "FORGE_TOOL_BODY_TIMEOUT",
  EVENTS_EXPIRED: "FORGE_TOOL_EVENTS_EXPIRED",
  GATEWAY_FAILED: "FORGE_TOOL_GATEWAY_FAILED",
} as const;

/**
 * The HTTP status of a ToolError code. Forge Gateway's table, with this package's Wire codes
 * mapped to the same statuses (docs/gateway.md shows it); any other code is a provider's
 * rejection, 422.
 */
const STATUS_OF_CODE: ReadonlyMap<string, number> = new Map([
  [HttpErrorCodes.BAD_REQUEST, 400],
  [HttpErrorCodes.UNAUTHORIZED, 401],
  [HttpErrorCodes.ENDPOINT_UNKNOWN, 404],
  [HttpErrorCodes.OPERATION_NOT_FOUND, 404],
  [HttpErrorCodes.INVOCATION_NOT_FOUND, 404],
  [HttpErrorCodes.ROUTE_NOT_FOUND, 404],
  ["FORGE_PROTOCOL_UNKNOWN_OPERATION", 404],
  ["FORGE_ENDPOINT_EXECUTION_NOT_FOUND", 404],
  [HttpErrorCodes.METHOD_NOT_ALLOWED, 405],
  [HttpErrorCodes.BODY_TIMEOUT, 408],
  [HttpErrorCodes.REQUEST_CONFLICT, 409],
  ["FORGE_PROTOCOL_EXECUTION_CONFLICT", 409],
  ["FORGE_PROTOCOL_DEDUP_CONFLICT", 409],
  ["FORGE_PROTOCOL_DUPLICATE_KEY", 409],
  [HttpErrorCodes.EVENTS_EXPIRED, 410],
  [HttpErrorCodes.BODY_TOO_LARGE, 413],
  [HttpErrorCodes.GATEWAY_FAILED, 500],
  [HttpErrorCodes.QUERY_NON_TERMINAL_RESPONSE, 502],
  ["FORGE_ENDPOINT_OUTCOME_UNKNOWN", 502],
  [HttpErrorCodes.GATEWAY_BUSY, 503],
  [HttpErrorCodes.GATEWAY_UNAVAILABLE, 503],
  ["FORGE_TOOL_ENDPOINT_UNAVAILABLE", 503],
  ["FORGE_TOOL_TRANSPORT_UNAVAILABLE", 503],
  ["FORGE_ENDPOINT_UNAVAILABLE", 503],
  ["FORGE_ENDPOINT_CAPACITY", 503],
  ["FORGE_ENDPOINT_BUSY", 503],
  [HttpErrorCodes.INVOKE_TIMEOUT, 504],
  ["FORGE_ENDPOINT_DEADLINE_EXCEEDED", 504],
]);

/** The HTTP status of a ToolError `code` (422 for a code the table does not name). */
export function statusForCode(code: string): number {
  return STATUS_OF_CODE.get(code) ?? 422;
}

/** Every code the table names, with its status (for the docs test). */
export function statusTable(): ReadonlyMap<string, number> {
  return STATUS_OF_CODE;
}

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

/** A JSON response. */
export function jsonResponse(status: number, body: unknown, headers: HeadersInit = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { ...JSON_HEADERS, ...headers },
  });
}

/** `{ ok: true, data }` with `status` (200 unless told). */
export function okResponse(data: unknown, status = 200, headers: HeadersInit = {}): Response {
  return jsonResponse(status, { ok: true, data }, headers);
}

/** `{ ok: false, msg, error }` for `error`, with the status its code maps to (or `status`). */
export function errorResponse(error: ToolError, status?: number, headers?: HeadersInit): Response {
  return jsonResponse(
    status ?? statusForCode(error.code),
    { ok: false, msg: error.message, error: toolErrorToPayload(error) },
    headers,
  );
}

/** A service error with code `code`, `message` and `details`. */
export function serviceError(
  code: string,
  message: string,
  retryable = false,
  details: Record<string, unknown> = {},
): Response {
  return errorResponse(new ToolError({ code, message, retryable, details }));
}

/**
 * The response for what a client call threw: a {@linkcode ToolCallError} keeps the endpoint's
 * (or router's) ToolError unchanged; a {@linkcode ToolClientError} becomes the service's code
 * (a timeout or deadline 504, overload 503, a Query answered as an Action 502), with the client
 * code and outcome in `details`.
 */
export function callFailure(error: unknown): Response {
  if (error instanceof ToolCallError) return errorResponse(error.error);
  if (error instanceof ToolClientError) {
    const details = { client_code: error.code, outcome: error.outcome ?? null };
    switch (error.code) {
      case "FORGE_CLIENT_TIMEOUT":
      case "FORGE_CLIENT_DEADLINE_EXCEEDED":
        return serviceError(HttpErrorCodes.INVOKE_TIMEOUT, error.message, true, details);
      case "FORGE_CLIENT_OVERLOADED":
        return serviceError(HttpErrorCodes.GATEWAY_BUSY, error.message, true, details);
      case "FORGE_CLIENT_CLOSED":
        return serviceError(HttpErrorCodes.GATEWAY_UNAVAILABLE, error.message, true, details);
      case "FORGE_CLIENT_UNEXPECTED_RESPONSE":
        return serviceError(
          HttpErrorCodes.QUERY_NON_TERMINAL_RESPONSE,
          error.message,
          false,
          details,
        );
      default:
        return serviceError(HttpErrorCodes.GATEWAY_FAILED, error.message, error.retryable, details);
    }
  }
  return serviceError(HttpErrorCodes.GATEWAY_FAILED, `the gateway failed: ${error}`);
}

/** 400 with `message`, in Forge's shape plus a ToolError. */
export function badRequest(message: string): Response {
  return serviceError(HttpErrorCodes.BAD_REQUEST, message);
}

/** 404 for an endpoint no route serves. */
export function endpointUnknown(endpointId: string): Response {
  return serviceError(
    HttpErrorCodes.ENDPOINT_UNKNOWN,
    `endpoint '${endpointId}' is not served by this gateway; GET /tools lists the endpoints`,
    false,
    { endpoint_id: endpointId },
  );
}

/** 404 for an unknown invocation id, or another caller's. */
export function invocationNotFound(id: string): Response {
  // The same body for an unknown id and another caller's invocation.
  return serviceError(
    HttpErrorCodes.INVOCATION_NOT_FOUND,
    `invocation '${id}' not found (unknown, forgotten after its retention, or another caller's); ` +
      `GET /invocations lists yours`,
    false,
    { invocation_id: id },
  );
}

/** 401 with the Bearer challenge. */
export function unauthorized(): Response {
  return errorResponse(
    new ToolError({
      code: HttpErrorCodes.UNAUTHORIZED,
      message: "missing or unknown bearer token: send 'Authorization: Bearer <token>' with a " +
        "configured token",
      retryable: false,
      details: {},
    }),
    401,
    { "www-authenticate": 'Bearer realm="forge-gateway"' },
  );
}

/**
 * Errors of the ToolEndpoint contracts and the Wire, with the reference's code catalogue.
 *
 * A leaf module: it imports nothing at run time (the one type-only import names the parameter
 * type of {@linkcode ToolEndpointError}), so every other module can depend on it.
 *
 * @module
 */
import type { ToolError } from "./models.ts";

/** The shape of {@linkcode ToolErrorCodes}: one read-only member per code. */
export interface ToolErrorCodeTable {
  /** `FORGE_PROTOCOL_UNSUPPORTED_VERSION` */
  readonly UNSUPPORTED_VERSION: "FORGE_PROTOCOL_UNSUPPORTED_VERSION";
  /** `FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE` */
  readonly UNKNOWN_MESSAGE_TYPE: "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE";
  /** `FORGE_PROTOCOL_INVALID_MESSAGE` */
  readonly INVALID_MESSAGE: "FORGE_PROTOCOL_INVALID_MESSAGE";
  /** `FORGE_PROTOCOL_INVALID_PAYLOAD` */
  readonly INVALID_PAYLOAD: "FORGE_PROTOCOL_INVALID_PAYLOAD";
  /** `FORGE_PROTOCOL_INVALID_JSON` */
  readonly INVALID_JSON: "FORGE_PROTOCOL_INVALID_JSON";
  /** `FORGE_PROTOCOL_DUPLICATE_KEY` */
  readonly DUPLICATE_KEY: "FORGE_PROTOCOL_DUPLICATE_KEY";
  /** `FORGE_PROTOCOL_MESSAGE_TOO_LARGE` */
  readonly MESSAGE_TOO_LARGE: "FORGE_PROTOCOL_MESSAGE_TOO_LARGE";
  /** `FORGE_PROTOCOL_CORRELATION_MISMATCH` */
  readonly CORRELATION_MISMATCH: "FORGE_PROTOCOL_CORRELATION_MISMATCH";
  /** `FORGE_PROTOCOL_ROUTE_MISMATCH` */
  readonly ROUTE_MISMATCH: "FORGE_PROTOCOL_ROUTE_MISMATCH";
  /** `FORGE_PROTOCOL_UNKNOWN_OPERATION` */
  readonly UNKNOWN_OPERATION: "FORGE_PROTOCOL_UNKNOWN_OPERATION";
  /** `FORGE_PROTOCOL_UNSUPPORTED_OPERATION` */
  readonly UNSUPPORTED_OPERATION: "FORGE_PROTOCOL_UNSUPPORTED_OPERATION";
  /** `FORGE_PROTOCOL_EXECUTION_CONFLICT` */
  readonly EXECUTION_CONFLICT: "FORGE_PROTOCOL_EXECUTION_CONFLICT";
  /** `FORGE_PROTOCOL_DEDUP_CONFLICT` */
  readonly DEDUP_CONFLICT: "FORGE_PROTOCOL_DEDUP_CONFLICT";
  /** `FORGE_ENDPOINT_CAPACITY` */
  readonly ENDPOINT_CAPACITY: "FORGE_ENDPOINT_CAPACITY";
  /** `FORGE_ENDPOINT_EXECUTION_ALREADY_OBSERVED` */
  readonly ENDPOINT_EXECUTION_ALREADY_OBSERVED: "FORGE_ENDPOINT_EXECUTION_ALREADY_OBSERVED";
  /** `FORGE_ENDPOINT_OUTCOME_UNKNOWN` */
  readonly ENDPOINT_OUTCOME_UNKNOWN: "FORGE_ENDPOINT_OUTCOME_UNKNOWN";
  /** `FORGE_ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW` */
  readonly ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW: "FORGE_ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW";
  /** `FORGE_ENDPOINT_EVENT_AFTER_TERMINAL` */
  readonly ENDPOINT_EVENT_AFTER_TERMINAL: "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL";
  /** `FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE` */
  readonly ENDPOINT_TERMINAL_RESULT_UNAVAILABLE: "FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE";
  /** `FORGE_ENDPOINT_TERMINAL_MISMATCH` */
  readonly ENDPOINT_TERMINAL_MISMATCH: "FORGE_ENDPOINT_TERMINAL_MISMATCH";
  /** `FORGE_ENDPOINT_TERMINAL_CHANGED` */
  readonly ENDPOINT_TERMINAL_CHANGED: "FORGE_ENDPOINT_TERMINAL_CHANGED";
  /** `FORGE_ENDPOINT_INVALID_TRANSITION` */
  readonly ENDPOINT_INVALID_TRANSITION: "FORGE_ENDPOINT_INVALID_TRANSITION";
  /** `FORGE_ENDPOINT_RETENTION_FULL` */
  readonly ENDPOINT_RETENTION_FULL: "FORGE_ENDPOINT_RETENTION_FULL";
  /** `FORGE_ENDPOINT_INTERNAL` */
  readonly ENDPOINT_INTERNAL: "FORGE_ENDPOINT_INTERNAL";
  /** `FORGE_ENDPOINT_DEADLINE_EXCEEDED` */
  readonly ENDPOINT_DEADLINE_EXCEEDED: "FORGE_ENDPOINT_DEADLINE_EXCEEDED";
  /** `FORGE_ENDPOINT_UNAVAILABLE` */
  readonly ENDPOINT_UNAVAILABLE: "FORGE_ENDPOINT_UNAVAILABLE";
  /** `FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE` */
  readonly ENDPOINT_EVENT_SINK_UNAVAILABLE: "FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE";
  /** `FORGE_ENDPOINT_INVALID_ARGUMENTS` */
  readonly ENDPOINT_INVALID_ARGUMENTS: "FORGE_ENDPOINT_INVALID_ARGUMENTS";
  /** `FORGE_ENDPOINT_EXECUTION_NOT_FOUND` */
  readonly ENDPOINT_EXECUTION_NOT_FOUND: "FORGE_ENDPOINT_EXECUTION_NOT_FOUND";
  /**
   * `FORGE_ENDPOINT_INVALID_OUTPUTS`: a definition's function returned outputs its declared
   * `outputs` schema rejects (the result is `failed`, not retryable; the issues are logged).
   */
  readonly ENDPOINT_INVALID_OUTPUTS: "FORGE_ENDPOINT_INVALID_OUTPUTS";
}

/**
 * Every error code this package raises or answers with. `FORGE_PROTOCOL_*` codes describe Wire
 * violations; `FORGE_ENDPOINT_*` codes describe the endpoint's own outcomes. The names and strings
 * are those of the reference Python package; the last six endpoint codes are this package's
 * additions: deadline enforcement and shutdown (`DEADLINE_EXCEEDED`, `UNAVAILABLE`,
 * `EVENT_SINK_UNAVAILABLE`), and the provider definitions' argument validation, unknown
 * execution keys and output validation (`INVALID_ARGUMENTS`, `EXECUTION_NOT_FOUND`,
 * `INVALID_OUTPUTS`).
 */
export const ToolErrorCodes: ToolErrorCodeTable = Object.freeze(
  {
    UNSUPPORTED_VERSION: "FORGE_PROTOCOL_UNSUPPORTED_VERSION",
    UNKNOWN_MESSAGE_TYPE: "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE",
    INVALID_MESSAGE: "FORGE_PROTOCOL_INVALID_MESSAGE",
    INVALID_PAYLOAD: "FORGE_PROTOCOL_INVALID_PAYLOAD",
    INVALID_JSON: "FORGE_PROTOCOL_INVALID_JSON",
    DUPLICATE_KEY: "FORGE_PROTOCOL_DUPLICATE_KEY",
    MESSAGE_TOO_LARGE: "FORGE_PROTOCOL_MESSAGE_TOO_LARGE",
    CORRELATION_MISMATCH: "FORGE_PROTOCOL_CORRELATION_MISMATCH",
    ROUTE_MISMATCH: "FORGE_PROTOCOL_ROUTE_MISMATCH",
    UNKNOWN_OPERATION: "FORGE_PROTOCOL_UNKNOWN_OPERATION",
    UNSUPPORTED_OPERATION: "FORGE_PROTOCOL_UNSUPPORTED_OPERATION",
    EXECUTION_CONFLICT: "FORGE_PROTOCOL_EXECUTION_CONFLICT",
    DEDUP_CONFLICT: "FORGE_PROTOCOL_DEDUP_CONFLICT",
    ENDPOINT_CAPACITY: "FORGE_ENDPOINT_CAPACITY",
    ENDPOINT_EXECUTION_ALREADY_OBSERVED: "FORGE_ENDPOINT_EXECUTION_ALREADY_OBSERVED",
    ENDPOINT_OUTCOME_UNKNOWN: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW: "FORGE_ENDPOINT_EARLY_EVENT_BUFFER_OVERFLOW",
    ENDPOINT_EVENT_AFTER_TERMINAL: "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL",
    ENDPOINT_TERMINAL_RESULT_UNAVAILABLE: "FORGE_ENDPOINT_TERMINAL_RESULT_UNAVAILABLE",
    ENDPOINT_TERMINAL_MISMATCH: "FORGE_ENDPOINT_TERMINAL_MISMATCH",
    ENDPOINT_TERMINAL_CHANGED: "FORGE_ENDPOINT_TERMINAL_CHANGED",
    ENDPOINT_INVALID_TRANSITION: "FORGE_ENDPOINT_INVALID_TRANSITION",
    ENDPOINT_RETENTION_FULL: "FORGE_ENDPOINT_RETENTION_FULL",
    ENDPOINT_INTERNAL: "FORGE_ENDPOINT_INTERNAL",
    ENDPOINT_DEADLINE_EXCEEDED: "FORGE_ENDPOINT_DEADLINE_EXCEEDED",
    ENDPOINT_UNAVAILABLE: "FORGE_ENDPOINT_UNAVAILABLE",
    ENDPOINT_EVENT_SINK_UNAVAILABLE: "FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE",
    ENDPOINT_INVALID_ARGUMENTS: "FORGE_ENDPOINT_INVALID_ARGUMENTS",
    ENDPOINT_EXECUTION_NOT_FOUND: "FORGE_ENDPOINT_EXECUTION_NOT_FOUND",
    ENDPOINT_INVALID_OUTPUTS: "FORGE_ENDPOINT_INVALID_OUTPUTS",
  } as const,
);

/** One of the error code strings of {@linkcode ToolErrorCodes}. */
export type ToolErrorCode = typeof ToolErrorCodes[keyof typeof ToolErrorCodes];

/**
 * A violation of the Wire protocol: a malformed message, an invalid payload, a correlation or
 * route mismatch, or a lifecycle rule a provider broke.
 *
 * `message` is the bare description (as the reference's `.message`); `toString()` gives
 * `"<code>: <message>"` followed by the path when there is one.
 *
 * @example
 * ```ts
 * import { assertEquals, assertInstanceOf, assertThrows } from "@std/assert";
 * import { decodeEnvelope, ToolProtocolError } from "@forge/tool/wire";
 * const error = assertThrows(() => decodeEnvelope("[]"));
 * assertInstanceOf(error, ToolProtocolError);
 * assertEquals(error.code, "FORGE_PROTOCOL_INVALID_MESSAGE");
 * ```
 */
export class ToolProtocolError extends Error {
  /** The error code, for example `"FORGE_PROTOCOL_DUPLICATE_KEY"`. */
  readonly code: string;
  /** Where the violation is: an envelope field, a payload path, or `"line L column C"`. */
  readonly path: string | undefined;

  /** Creates a protocol error. */
  constructor(code: string, message: string, path?: string) {
    super(message);
    this.name = "ToolProtocolError";
    this.code = code;
    this.path = path;
  }

  /** `"<code>: <message>"`, with `" (at <path>)"` appended when the error has a path. */
  override toString(): string {
    return `${this.code}: ${this.message}${this.path === undefined ? "" : ` (at ${this.path})`}`;
  }
}

/**
 * A provider's structured rejection before any work or side effect began. Throw it from
 * `query()` or `start()` to answer `outcome: "rejected"`, or from `status()`, `result()`,
 * `cancel()` and `stop()` to answer a correlated `tool.error`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEndpointError, ToolError } from "@forge/tool";
 * const error = new ToolEndpointError(
 *   new ToolError({ code: "FORGE_ENDPOINT_BUSY", message: "endpoint concurrency limit reached" }),
 * );
 * assertEquals(error.message, "FORGE_ENDPOINT_BUSY: endpoint concurrency limit reached");
 * assertEquals([error.code, error.retryable], ["FORGE_ENDPOINT_BUSY", false]);
 * ```
 */
export class ToolEndpointError extends Error {
  /** The structured error the endpoint answers with. */
  readonly error: ToolError;

  /** Wraps a {@linkcode ToolError}; anything else is a `TypeError`. */
  constructor(error: ToolError) {
    if (!isToolError(error)) throw new TypeError("error must be a ToolError");
    super(`${error.code}: ${error.message}`);
    this.name = "ToolEndpointError";
    this.error = error;
  }

  /** The structured error's code. */
  get code(): string {
    return this.error.code;
  }

  /** Whether the structured error says retrying may succeed. */
  get retryable(): boolean {
    return this.error.retryable;
  }
}

/**
 * @internal The brand of a genuine `ToolError`: `models.ts` defines it on `ToolError.prototype`,
 * so `ToolEndpointError` can tell a ToolError from a look-alike without importing the models.
 */
export const TOOL_ERROR_BRAND: unique symbol = Symbol("forge.tool.ToolError");

function isToolError(value: unknown): value is ToolError {
  return typeof value === "object" && value !== null &&
    (value as { [TOOL_ERROR_BRAND]?: unknown })[TOOL_ERROR_BRAND] === true;
}

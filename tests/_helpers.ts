// Shared helpers of the Wire test suites (not a test file itself).
import { AssertionError, assertStrictEquals } from "@std/assert";
import {
  TOOL_ENDPOINT_PROTOCOL,
  ToolContext,
  ToolEnvelope,
  type ToolEnvelopeInit,
  ToolExecutionKey,
  ToolProtocolError,
} from "../mod.ts";

/** The Wire protocol string. */
export const PROTOCOL = TOOL_ENDPOINT_PROTOCOL;
/** 2^53 − 1. */
export const MAX = 9007199254740991;

/** The `FORGE_PROTOCOL_*` codes, spelled out so a renamed constant cannot hide a change. */
export const CODES = {
  UNSUPPORTED_VERSION: "FORGE_PROTOCOL_UNSUPPORTED_VERSION",
  UNKNOWN_MESSAGE_TYPE: "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE",
  INVALID_MESSAGE: "FORGE_PROTOCOL_INVALID_MESSAGE",
  INVALID_PAYLOAD: "FORGE_PROTOCOL_INVALID_PAYLOAD",
  INVALID_JSON: "FORGE_PROTOCOL_INVALID_JSON",
  DUPLICATE_KEY: "FORGE_PROTOCOL_DUPLICATE_KEY",
  MESSAGE_TOO_LARGE: "FORGE_PROTOCOL_MESSAGE_TOO_LARGE",
  CORRELATION_MISMATCH: "FORGE_PROTOCOL_CORRELATION_MISMATCH",
} as const;

/** What to check of a thrown {@linkcode ToolProtocolError} beyond its code. */
export interface ProtocolErrorExpectation {
  /** The exact path; `null` means the error must have no path; omitted means not checked. */
  readonly path?: string | null;
  /** The exact bare message. */
  readonly message?: string;
  /** A fragment the message must contain. */
  readonly includes?: string;
}

/**
 * Runs `fn`, expects a {@linkcode ToolProtocolError} with exactly `code`, and checks the
 * expectation (`path` as a string is shorthand for `{ path }`). Returns the error.
 */
export function assertProtocolError(
  fn: () => unknown,
  code: string,
  expected: string | ProtocolErrorExpectation = {},
): ToolProtocolError {
  const expectation = typeof expected === "string" ? { path: expected } : expected;
  let error: unknown;
  try {
    fn();
  } catch (caught) {
    error = caught;
  }
  if (error === undefined) throw new AssertionError(`expected ${code} to be thrown`);
  if (!(error instanceof ToolProtocolError)) {
    const name = error instanceof Error ? error.constructor.name : typeof error;
    const message = error instanceof Error ? error.message : String(error);
    throw new AssertionError(`expected ToolProtocolError ${code}, got ${name}: ${message}`);
  }
  const where = `${error.code}: ${error.message} (path ${String(error.path)})`;
  assertStrictEquals(error.code, code, `code of ${where}`);
  if (expectation.path !== undefined) {
    assertStrictEquals(error.path, expectation.path ?? undefined, `path of ${where}`);
  }
  if (expectation.message !== undefined) {
    assertStrictEquals(error.message, expectation.message, `message of ${where}`);
  }
  if (expectation.includes !== undefined && !error.message.includes(expectation.includes)) {
    throw new AssertionError(`expected the message of ${where} to include ${expectation.includes}`);
  }
  return error;
}

/** UTF-8 text of bytes. */
export function text(bytes: Uint8Array): string {
  return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
}

/** UTF-8 bytes of text. */
export function bytes(value: string): Uint8Array {
  return new TextEncoder().encode(value);
}

/** The init object of an existing envelope (camelCase), for building a modified copy. */
export function envelopeInit(envelope: ToolEnvelope): ToolEnvelopeInit {
  return {
    protocol: envelope.protocol,
    messageType: envelope.messageType,
    payload: envelope.payload,
    requestId: envelope.requestId,
    invocationId: envelope.invocationId,
    attemptId: envelope.attemptId,
    endpointId: envelope.endpointId,
    endpointInstanceId: envelope.endpointInstanceId,
    operation: envelope.operation,
    sequence: envelope.sequence,
  };
}

/** A copy of `envelope` with some fields replaced (Python's `dataclasses.replace`). */
export function replaceEnvelope(
  envelope: ToolEnvelope,
  changes: Partial<Record<keyof ToolEnvelopeInit, unknown>>,
): ToolEnvelope {
  return new ToolEnvelope({ ...envelopeInit(envelope), ...changes } as ToolEnvelopeInit);
}

/** The context `ctx(endpoint, operation)` of the reference tests, with optional changes. */
export function context(
  endpointId = "vision.yolo",
  operation = "detect",
  extra: {
    attemptId?: string;
    invocationId?: string;
    toolId?: string;
    implementationId?: string;
    callerId?: string;
    deadlineMs?: number;
    metadata?: object;
  } = {},
): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({
      invocationId: extra.invocationId ?? "invocation-1",
      attemptId: extra.attemptId ?? "attempt-1",
    }),
    toolId: extra.toolId ?? "forge.tool.detect",
    implementationId: extra.implementationId ?? "yolo",
    endpointId,
    operation,
    callerId: extra.callerId,
    deadlineMs: extra.deadlineMs,
    metadata: extra.metadata ?? {},
  });
}

/**
 * JSON text of a Wire object with sorted keys and `payloadJson` spliced in raw (so tests can
 * write payloads holding tokens `JSON.stringify` cannot produce, such as `NaN` or `1e999`).
 */
export function wireText(headers: Record<string, unknown>, payloadJson = "{}"): string {
  const keys = Object.keys({ ...headers, payload: 0 }).sort();
  const parts = keys.map((key) =>
    `${JSON.stringify(key)}:${key === "payload" ? payloadJson : JSON.stringify(headers[key])}`
  );
  return `{${parts.join(",")}}`;
}

/** Headers of a valid `endpoint.unregister` (payload must be `{}` for the typed check). */
export const UNREGISTER_HEADERS = Object.freeze({
  protocol: PROTOCOL,
  message_type: "endpoint.unregister",
  request_id: "unregister-1",
  endpoint_id: "vision.yolo",
  endpoint_instance_id: "endpoint-instance-1",
});

/** Headers of a valid `tool.event` (payload `{"type": …, "data": {…}}`). */
export const EVENT_HEADERS = Object.freeze({
  protocol: PROTOCOL,
  message_type: "tool.event",
  invocation_id: "invocation-1",
  attempt_id: "attempt-1",
  endpoint_id: "vision.yolo",
  endpoint_instance_id: "instance-1",
  operation: "detect",
  sequence: 0,
});

/** A `tool.event` Wire text whose `data` is the raw JSON `dataJson`. */
export function eventText(dataJson: string): string {
  return wireText(EVENT_HEADERS, `{"data":${dataJson},"type":"progress"}`);
}

/** An `endpoint.unregister` Wire text with the raw payload JSON. */
export function unregisterText(payloadJson = "{}"): string {
  return wireText(UNREGISTER_HEADERS, payloadJson);
}

/** True when `python3` runs here and imports pyarrow (tests that need it are skipped otherwise). */
export function hasPyarrow(): boolean {
  try {
    return new Deno.Command("python3", { args: ["-c", "import pyarrow"], stderr: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

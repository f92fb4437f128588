// Shared fixtures of the test suites (not a test file itself): Wire constants and assertions,
// bytes helpers, the "cell" endpoint descriptor, and a deterministic clock.
import { AssertionError, assertStrictEquals } from "@std/assert";
import {
  ToolContext,
  ToolEndpointDescriptor,
  ToolExecutionKey,
  type ToolLogger,
  type ToolLogRecord,
  ToolOperationDescriptor,
} from "../mod.ts";
import {
  TOOL_ENDPOINT_PROTOCOL,
  ToolEnvelope,
  type ToolEnvelopeInit,
  ToolProtocolError,
} from "../wire.ts";
import type { NodeClock } from "../node.ts";

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

// ---------------------------------------------------------------------------------------------
// Bytes

/** Lower-case hex of bytes. */
export function hex(bytes: Uint8Array): string {
  let out = "";
  for (const b of bytes) out += b.toString(16).padStart(2, "0");
  return out;
}

/** Bytes of hex text (either case); `"-"` stands for no bytes. */
export function unhex(text: string): Uint8Array {
  if (text === "-") return new Uint8Array(0);
  const out = new Uint8Array(text.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** The concatenation of byte arrays (or arrays of byte values). */
export function concat(...parts: (Uint8Array | readonly number[])[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The "cell" endpoint: a Query, a cancellable Action and a stoppable Session

/** What {@linkcode cellDescriptor} declares; an operation whose name is `null` is left out. */
export interface CellOptions {
  /** The endpoint id (default `"robot.cell"`). */
  readonly endpointId?: string;
  /** The Query's name (default `"detect"`). */
  readonly query?: string | null;
  /** The Action's name (default `"move"`). */
  readonly action?: string | null;
  /** The Session's name (default `"serve"`). */
  readonly session?: string | null;
  /** The Action's and the Session's `max_concurrency` (default 1). */
  readonly maxConcurrency?: number;
  /** The Query's `max_concurrency` (default 1). */
  readonly queryConcurrency?: number;
}

/**
 * The descriptor most suites serve: a Query, an Action that is cancellable and a Session that is
 * stoppable, both with status, in that order.
 */
export function cellDescriptor(options: CellOptions = {}): ToolEndpointDescriptor {
  const {
    endpointId = "robot.cell",
    query = "detect",
    action = "move",
    session = "serve",
    maxConcurrency = 1,
    queryConcurrency = 1,
  } = options;
  const operations: ToolOperationDescriptor[] = [];
  if (query !== null) {
    operations.push(
      new ToolOperationDescriptor({
        name: query,
        semantics: "query",
        maxConcurrency: queryConcurrency,
      }),
    );
  }
  if (action !== null) {
    operations.push(
      new ToolOperationDescriptor({
        name: action,
        semantics: "action",
        cancellable: true,
        statusSupported: true,
        maxConcurrency,
      }),
    );
  }
  if (session !== null) {
    operations.push(
      new ToolOperationDescriptor({
        name: session,
        semantics: "session",
        stoppable: true,
        statusSupported: true,
        maxConcurrency,
      }),
    );
  }
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId,
    operations,
  });
}

// ---------------------------------------------------------------------------------------------
// A deterministic clock

/** A monotonic {@linkcode NodeClock} whose timers fire only when a test calls `advance(ms)`. */
export class FakeClock implements NodeClock {
  #now = 0;
  #next = 0;
  readonly #timers = new Map<number, { at: number; callback: () => void }>();

  now(): number {
    return this.#now;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = ++this.#next;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }

  /** Timers still pending. */
  get pending(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in (time, creation) order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let due: [number, { at: number; callback: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (due === undefined || entry[1].at < due[1].at)) due = entry;
      }
      if (due === undefined) break;
      this.#timers.delete(due[0]);
      this.#now = due[1].at;
      due[1].callback();
    }
    this.#now = target;
  }
}

/**
 * A logger that drops every record: for code under test whose failures a test provokes on
 * purpose, so a passing run prints nothing from it.
 */
export const silentLogger: ToolLogger = () => {};

/** A logger that keeps every record, for a test to assert on (`events()` lists `level event`). */
export function recordingLogger(): {
  readonly records: ToolLogRecord[];
  readonly logger: ToolLogger;
  events(): string[];
} {
  const records: ToolLogRecord[] = [];
  return {
    records,
    logger: (record) => records.push(record),
    events: () => records.map((record) => `${record.level} ${record.event}`),
  };
}

/**
 * Runs `script` in a Deno subprocess with `--v8-flags=--expose-gc` (so it can measure the heap or
 * what stays reachable after a full collection) and the given permission flags, and returns the
 * JSON value its last stdout line holds; a failed run fails the test with its stderr.
 */
export async function runWithGc(
  script: URL,
  permissions: readonly string[],
  args: readonly string[] = [],
): Promise<unknown> {
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--v8-flags=--expose-gc", ...permissions, script.pathname, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!success) {
    throw new AssertionError(`${script.pathname} failed:\n${new TextDecoder().decode(stderr)}`);
  }
  return JSON.parse(new TextDecoder().decode(stdout).trim().split("\n").at(-1)!);
}

/**
 * The logger type every part of the package reports through: one structured record per event,
 * carrying the execution key when there is one, so a provider failure is never silent and can
 * be traced to the invocation that caused it.
 *
 * @module
 */

/** How severe a {@linkcode ToolLogRecord} is. */
export type ToolLogLevel = "debug" | "info" | "warn" | "error";

/**
 * One structured log record. `event` is a stable dotted name a program can match on (for example
 * `"provider.failed"` or `"event.late"`); `message` is for people. The identifier fields are set
 * when the record concerns one endpoint, operation, execution or request.
 */
export interface ToolLogRecord {
  /** How severe the record is. */
  readonly level: ToolLogLevel;
  /** A stable dotted name, for example `"provider.failed"`. */
  readonly event: string;
  /** A human-readable description. */
  readonly message: string;
  /** The endpoint the record concerns. */
  readonly endpointId?: string;
  /** The operation the record concerns. */
  readonly operation?: string;
  /** The invocation id of the execution key the record concerns. */
  readonly invocationId?: string;
  /** The attempt id of the execution key the record concerns. */
  readonly attemptId?: string;
  /** The Wire request id the record concerns. */
  readonly requestId?: string;
  /** The cause, as thrown (an `Error` or any other value). */
  readonly error?: unknown;
}

/**
 * Receives log records. It must not throw; callers ignore what it returns. Pass your own to
 * route records to a structured logging system, or `() => {}` to silence them.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import type { ToolLogger, ToolLogRecord } from "@forge/tool";
 * const records: ToolLogRecord[] = [];
 * const logger: ToolLogger = (record) => records.push(record);
 * logger({ level: "warn", event: "event.late", message: "an event came after the terminal one" });
 * assertEquals(records[0].event, "event.late");
 * ```
 */
export type ToolLogger = (record: ToolLogRecord) => void;

const CONSOLE_METHODS = {
  debug: "debug",
  info: "info",
  warn: "warn",
  error: "error",
} as const satisfies Record<ToolLogLevel, keyof Console>;

/**
 * The default {@linkcode ToolLogger}: writes each record to the console method of its level
 * (`console.error`, `console.warn`, `console.info`, `console.debug`) as one line
 * `"[event] message (endpoint=…, operation=…, invocation=…, attempt=…, request=…)"`, followed by
 * the error when the record has one.
 */
export const consoleLogger: ToolLogger = (record: ToolLogRecord): void => {
  const ids: string[] = [];
  if (record.endpointId !== undefined) ids.push(`endpoint=${record.endpointId}`);
  if (record.operation !== undefined) ids.push(`operation=${record.operation}`);
  if (record.invocationId !== undefined) ids.push(`invocation=${record.invocationId}`);
  if (record.attemptId !== undefined) ids.push(`attempt=${record.attemptId}`);
  if (record.requestId !== undefined) ids.push(`request=${record.requestId}`);
  const line = `[${record.event}] ${record.message}${
    ids.length === 0 ? "" : ` (${ids.join(", ")})`
  }`;
  const method = CONSOLE_METHODS[record.level] ?? "error";
  if (record.error === undefined) console[method](line);
  else console[method](line, record.error);
};

/**
 * Hands `record` to `logger`. A logger must not throw; one that does cannot report itself, so the
 * console gets the record and a `logger.failed` record with the throw. Internal: every part of the
 * package logs through this, so a broken logger never breaks the caller.
 */
export function logSafely(logger: ToolLogger, record: ToolLogRecord): void {
  try {
    logger(record);
  } catch (error) {
    consoleLogger(record);
    consoleLogger({ level: "error", event: "logger.failed", message: "the logger threw", error });
  }
}

/** The identifier fields of a {@linkcode ToolLogRecord}, read from anything that has them. */
export type ToolLogIds = Pick<
  ToolLogRecord,
  "endpointId" | "operation" | "invocationId" | "attemptId" | "requestId"
>;

/**
 * The identifier fields of a record concerning one message (a `ToolEnvelope` has them all).
 * Internal.
 */
export function logIdsOf(source: {
  readonly endpointId?: string;
  readonly operation?: string;
  readonly invocationId?: string;
  readonly attemptId?: string;
  readonly requestId?: string;
}): ToolLogIds {
  return {
    endpointId: source.endpointId,
    operation: source.operation,
    invocationId: source.invocationId,
    attemptId: source.attemptId,
    requestId: source.requestId,
  };
}

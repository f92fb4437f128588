/**
 * The logger type every part of the package reports through: one structured record per event,
 * carrying the execution key when there is one, so a provider failure is never silent and can
 * be traced to the invocation that caused it.
 *
 * @module
 */
import { optionMessage } from "../_internal/options.ts";

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
 * (`console.error`, `console.warn`, `console.info`, `console.debug`) as one string: the line
 * `"[event] message (endpoint=…, operation=…, invocation=…, attempt=…, request=…)"`, followed,
 * when the record has an error, by the error as text (its stack, its cause chain, the members of
 * an `AggregateError`; a thrown value that is not an `Error` by a safe description). It never
 * hands an object to the console: Deno forwards console calls to the V8 inspector, which keeps
 * their arguments alive, and with them everything an error's stack frames reach.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { consoleLogger } from "@forge/tool";
 * const lines: unknown[][] = [];
 * const original = console.warn;
 * console.warn = (...args: unknown[]) => lines.push(args);
 * try {
 *   consoleLogger({ level: "warn", event: "event.late", message: "dropped", requestId: "r-1" });
 * } finally {
 *   console.warn = original;
 * }
 * assertEquals(lines, [["[event.late] dropped (request=r-1)"]]);
 * ```
 */
export const consoleLogger: ToolLogger = (record: ToolLogRecord): void => {
  const method = CONSOLE_METHODS[record.level] ?? "error";
  console[method](formatRecord(record));
};

/**
 * A record as the text {@linkcode consoleLogger} writes: the line
 * `"[event] message (endpoint=…, operation=…, invocation=…, attempt=…, request=…)"`, then the
 * error as {@linkcode formatThrown} gives it, when the record has one. Internal: the one format of
 * the default logger and {@linkcode lineLogger}.
 */
export function formatRecord(record: ToolLogRecord): string {
  const ids: string[] = [];
  if (record.endpointId !== undefined) ids.push(`endpoint=${record.endpointId}`);
  if (record.operation !== undefined) ids.push(`operation=${record.operation}`);
  if (record.invocationId !== undefined) ids.push(`invocation=${record.invocationId}`);
  if (record.attemptId !== undefined) ids.push(`attempt=${record.attemptId}`);
  if (record.requestId !== undefined) ids.push(`request=${record.requestId}`);
  const line = `[${record.event}] ${record.message}${
    ids.length === 0 ? "" : ` (${ids.join(", ")})`
  }`;
  return record.error === undefined ? line : `${line} ${formatThrown(record.error)}`;
}

/**
 * A {@linkcode ToolLogger} over a line logger: each record is handed to `write` as its level and
 * the text {@linkcode consoleLogger} would write (`"[event] message (ids…)"`, then the error).
 * For a program whose logging takes `(level, message)` lines, such as a Dora node's log.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { lineLogger } from "@forge/tool";
 * const lines: string[] = [];
 * const logger = lineLogger((level, message) => lines.push(`${level}: ${message}`));
 * logger({ level: "warn", event: "event.late", message: "dropped", requestId: "r-1" });
 * assertEquals(lines, ["warn: [event.late] dropped (request=r-1)"]);
 * ```
 */
export function lineLogger(write: (level: ToolLogLevel, message: string) => void): ToolLogger {
  if (typeof write !== "function") {
    throw new TypeError(optionMessage("create a line logger", "write", "a function", write));
  }
  return (record) => write(record.level, formatRecord(record));
}

/**
 * `logger` for `warn` and `error` records only; `debug` and `info` are dropped. Internal: the
 * default of the parts whose debug records are too many for a console (runner, gateway).
 */
export function warningsAndErrors(logger: ToolLogger): ToolLogger {
  return (record) => {
    if (record.level === "warn" || record.level === "error") logger(record);
  };
}

/** How deep {@linkcode formatThrown} follows causes and `AggregateError` members. */
const MAX_FORMAT_DEPTH = 8;
/** The longest description {@linkcode formatThrown} gives of a value that is not an `Error`. */
const MAX_REPR_LENGTH = 2000;
/** How deep {@linkcode formatThrown} describes objects nested in a value that is not an `Error`. */
const MAX_REPR_DEPTH = 4;

/**
 * A thrown value as text, for a log line: an `Error` by its stack (or `Name: message`), then its
 * own enumerable fields (`code`, `path`, …), the members of an `AggregateError` and the `cause`
 * chain, each indented under it; any other value by a safe description (a string as JSON, an
 * object as JSON when it has one, else its tag). Never throws, even for a hostile value (throwing
 * getters, proxies, cycles). Internal: what the default loggers write instead of the live value.
 */
export function formatThrown(value: unknown): string {
  return formatAt(value, 0, new Set());
}

function formatAt(value: unknown, depth: number, seen: Set<unknown>): string {
  if (!isErrorLike(value)) return reprValue(value);
  if (seen.has(value)) return "[Circular]";
  if (depth >= MAX_FORMAT_DEPTH) return "[...]";
  seen.add(value);
  let text = headOf(value);
  const fields = ownFields(value);
  if (fields !== "") text += ` ${fields}`;
  const members = read(value, "errors");
  if (Array.isArray(members) && isAggregate(value)) {
    members.forEach((member, index) => {
      text += `\n${indent(`[errors][${index}]: ${formatAt(member, depth + 1, seen)}`)}`;
    });
  }
  const cause = read(value, "cause");
  if (cause !== undefined || hasOwn(value, "cause")) {
    text += `\n${indent(`[cause]: ${formatAt(cause, depth + 1, seen)}`)}`;
  }
  return text;
}

function isErrorLike(value: unknown): value is object {
  try {
    return value instanceof Error ||
      (typeof value === "object" && value !== null &&
        Object.prototype.toString.call(value) === "[object Error]");
  } catch {
    return false;
  }
}

function isAggregate(value: object): boolean {
  try {
    return value instanceof AggregateError || read(value, "name") === "AggregateError";
  } catch {
    return false;
  }
}

/** The stack when it is text naming the error, else `Name: message`. */
function headOf(error: object): string {
  const name = textOf(read(error, "name"), "Error");
  const message = textOf(read(error, "message"), "");
  const summary = message === "" ? name : `${name}: ${message}`;
  const stack = read(error, "stack");
  if (typeof stack === "string" && stack !== "") {
    // V8 starts the stack with the summary; other runtimes give the frames only.
    return stack.includes(message) ? stack : `${summary}\n${stack}`;
  }
  return summary;
}

/** The error's own enumerable fields other than those shown otherwise, as JSON (or ""). */
function ownFields(error: object): string {
  try {
    const keys = Object.keys(error).filter((key) =>
      key !== "stack" && key !== "message" && key !== "cause" && key !== "errors"
    );
    if (keys.length === 0) return "";
    const fields: Record<string, unknown> = {};
    for (const key of keys) fields[key] = read(error, key);
    return reprValue(fields);
  } catch {
    return "";
  }
}

/**
 * A safe description of a value that is not an `Error`: JSON-like text of at most
 * `MAX_REPR_LENGTH` characters, written without ever serializing more than that (a value can be
 * huge), nested objects to `MAX_REPR_DEPTH` levels, cycles as `[Circular]`.
 */
function reprValue(value: unknown): string {
  const out: string[] = [];
  let length = 0;
  const ancestors = new Set<unknown>();
  const write = (text: string): boolean => {
    if (length >= MAX_REPR_LENGTH) return false;
    out.push(text);
    length += text.length;
    return length < MAX_REPR_LENGTH;
  };
  const visit = (member: unknown, depth: number): boolean => {
    switch (typeof member) {
      case "string":
        return write(
          JSON.stringify(
            member.length > MAX_REPR_LENGTH ? member.slice(0, MAX_REPR_LENGTH) : member,
          ),
        );
      case "function":
        return write(`[Function ${textOf(read(member, "name"), "(anonymous)") || "(anonymous)"}]`);
      case "bigint":
        return write(`${member}n`);
      case "symbol":
        return write(member.toString());
      case "object":
        break;
      default:
        // number, boolean, undefined
        return write(String(member));
    }
    if (member === null) return write("null");
    if (ancestors.has(member)) return write("[Circular]");
    if (depth > 0 && isErrorLike(member)) return write(headOf(member).split("\n")[0]);
    if (depth >= MAX_REPR_DEPTH) return write(Array.isArray(member) ? "[Array]" : tagOf(member));
    ancestors.add(member);
    try {
      if (Array.isArray(member)) {
        if (!write("[")) return false;
        for (let i = 0; i < member.length; i++) {
          if (i > 0 && !write(", ")) return false;
          if (!visit(read(member, String(i)), depth + 1)) return false;
        }
        return write("]");
      }
      const keys = Object.keys(member);
      const tag = tagOf(member);
      if (!write(tag === "[object Object]" ? "{" : `${tag} {`)) return false;
      for (let i = 0; i < keys.length; i++) {
        if (i > 0 && !write(", ")) return false;
        if (!write(`${JSON.stringify(keys[i])}: `) || !visit(read(member, keys[i]), depth + 1)) {
          return false;
        }
      }
      return write("}");
    } finally {
      ancestors.delete(member);
    }
  };
  try {
    visit(value, 0);
  } catch {
    // A proxy whose traps throw: what was written so far stands.
    out.push("[unprintable value]");
  }
  const text = out.join("");
  return text.length <= MAX_REPR_LENGTH ? text : `${text.slice(0, MAX_REPR_LENGTH)}…`;
}

/** An object's class as `[object Name]`, or `[object]` when even that throws. */
function tagOf(value: object): string {
  try {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    if (typeof name === "string" && name !== "" && name !== "Object") return name;
    return Object.prototype.toString.call(value);
  } catch {
    return "[object]";
  }
}

function indent(text: string): string {
  return `  ${text.replaceAll("\n", "\n  ")}`;
}

function textOf(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}

/** `object[key]`, or undefined when reading it throws. */
function read(object: unknown, key: string): unknown {
  try {
    return (object as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function hasOwn(object: object, key: string): boolean {
  try {
    return Object.hasOwn(object, key);
  } catch {
    return false;
  }
}

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

/**
 * What an execution answers: errors, results, acceptance, control answers, events and
 * execution status (reference b.7 – b.11, b.13, b.14).
 *
 * @module
 */
import type {
  ExecutionPhase,
  TerminalExecutionPhase,
  ToolControlCommand,
  ToolControlStatus,
  ToolEventType,
  ToolResultResponseStatus,
  ToolResultStatus,
} from "./constants.ts";
import { TOOL_ERROR_BRAND } from "./errors.ts";
import type { JsonObject } from "../_internal/json.ts";
import { fieldError, requireNonEmpty } from "../_internal/fields.ts";

import {
  CONTROL_COMMANDS,
  CONTROL_STATUSES,
  EXECUTION_PHASES,
  jsonField,
  requireBool,
  requireInit,
  requireMember,
  requireOptionalError,
  RESULT_RESPONSE_STATUSES,
  TOOL_EVENT_TYPES,
  TOOL_RESULT_STATUSES,
} from "./_model_rules.ts";

// Which models their own constructors built (not a subclass, not Object.create(prototype), not a
// look-alike): a private field each class sets in its constructor, read through this table, whose
// readers the classes' static blocks install when this module is evaluated. The Wire's response
// factories take such a model's fields as already validated (src/wire/_built_payloads.ts).
const builtReaders = {
  error: (_value: object): boolean => false,
  result: (_value: object): boolean => false,
  resultResponse: (_value: object): boolean => false,
  accepted: (_value: object): boolean => false,
  controlResponse: (_value: object): boolean => false,
  executionStatus: (_value: object): boolean => false,
};

/**
 * @internal True when `value` is a model its own class's constructor built (a subclass instance,
 * an `Object.create(prototype)` object or a look-alike is not). Exported from no entry point.
 */
export const isBuiltModel: Readonly<typeof builtReaders> = builtReaders;

/** The init object of a {@linkcode ToolError}. */
export interface ToolErrorInit {
  /** A stable machine-readable code, for example `"FORGE_ENDPOINT_CAPACITY"`. */
  code: string;
  /** A human-readable description. */
  message: string;
  /** Whether retrying may succeed (default `false`). */
  retryable?: boolean;
  /** Structured JSON details (copied and frozen). */
  details?: object;
}

/**
 * A structured error returned by an endpoint execution or carried by a rejection.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolError } from "@forge/tool";
 * const busy = new ToolError({
 *   code: "FORGE_ENDPOINT_BUSY",
 *   message: "endpoint concurrency limit reached",
 *   retryable: true,
 * });
 * assertEquals(busy.details, {});
 * ```
 */
export class ToolError {
  /** A stable machine-readable code. */
  readonly code: string;
  /** A human-readable description. */
  readonly message: string;
  /** Whether retrying may succeed. */
  readonly retryable: boolean;
  /** Structured JSON details (deeply frozen). */
  readonly details: JsonObject;

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.error = (value) => #built in value && (value as ToolError).#built;
  }

  /** Validates and freezes an error. Check order: `code`, `message`, `retryable`, `details`. */
  constructor(init: ToolErrorInit) {
    requireInit(init, "ToolError");
    const code = requireNonEmpty(init.code, "code");
    const message = requireNonEmpty(init.message, "message");
    const retryable = requireBool(init.retryable, "retryable");
    const details = jsonField(init.details, "details");
    this.code = code;
    this.message = message;
    this.retryable = retryable;
    this.details = details;
    this.#built = new.target === ToolError;
    Object.freeze(this);
  }
}

// The brand ToolEndpointError checks (errors.ts stays free of imports from this module).
Object.defineProperty(ToolError.prototype, TOOL_ERROR_BRAND, { value: true });

/** The init object of a {@linkcode ToolResult}: `failed` and `unknown` need an error, others none. */
export type ToolResultInit =
  | {
    /** A status that carries no error. */
    status: "succeeded" | "cancelled" | "stopped";
    /** The JSON outputs (copied and frozen; default `{}`). */
    outputs?: object;
    /** Never present for these statuses. */
    error?: undefined;
  }
  | {
    /** A status that requires an error. */
    status: "failed" | "unknown";
    /** The JSON outputs (copied and frozen; default `{}`). */
    outputs?: object;
    /** Why the execution failed or why its outcome is unknown. */
    error: ToolError;
  };

/**
 * The authoritative terminal result of a Query or of an accepted execution.
 *
 * `unknown` means the final outcome cannot be recovered; it never means that a result lookup is
 * merely pending or not found (see {@linkcode ToolResultResponse}).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolResult } from "@forge/tool";
 * const result = new ToolResult({ status: "succeeded", outputs: { objects: [] } });
 * assertEquals(result.error, undefined);
 * ```
 */
export class ToolResult {
  // Nominal typing: a plain object literal is not a ToolResult (type only, no run-time field).
  declare private readonly _toolResultBrand: never;
  /** The terminal status. */
  readonly status: ToolResultStatus;
  /** The JSON outputs (deeply frozen). */
  readonly outputs: JsonObject;
  /** The error of a `failed` or `unknown` result; `undefined` otherwise. */
  readonly error: ToolError | undefined;

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.result = (value) => #built in value && (value as ToolResult).#built;
  }

  /**
   * Validates and freezes a result. Check order: `status`, error presence for the status, error
   * type, `outputs`.
   */
  constructor(init: ToolResultInit) {
    requireInit(init, "ToolResult");
    const status = requireMember<ToolResultStatus>(
      init.status,
      TOOL_RESULT_STATUSES,
      "tool result status",
    );
    const error: unknown = init.error;
    const requiresError = status === "failed" || status === "unknown";
    if (requiresError && error === undefined) {
      throw fieldError(RangeError, `a ${status} tool result must contain an error`);
    }
    if (!requiresError && error !== undefined) {
      throw fieldError(RangeError, `a ${status} tool result must not contain an error`);
    }
    requireOptionalError(error);
    const outputs = jsonField(init.outputs, "outputs");
    this.status = status;
    this.outputs = outputs;
    this.error = error as ToolError | undefined;
    this.#built = new.target === ToolResult;
    Object.freeze(this);
  }
}

/** The init object of a {@linkcode ToolResultResponse}: only `available` carries a result. */
export type ToolResultResponseInit =
  | {
    /** The result is not available yet, or the execution key is unknown. */
    status: "pending" | "not_found";
    /** Never present for these statuses. */
    result?: undefined;
  }
  | {
    /** The terminal result is available. */
    status: "available";
    /** The terminal result. */
    result: ToolResult;
  };

/**
 * The answer to a result lookup for an active, terminal or unknown execution key: `pending`,
 * `available` (with the {@linkcode ToolResult}), or `not_found`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolResult, ToolResultResponse } from "@forge/tool";
 * const pending = new ToolResultResponse({ status: "pending" });
 * const done = new ToolResultResponse({
 *   status: "available",
 *   result: new ToolResult({ status: "succeeded" }),
 * });
 * assertEquals([pending.result, done.result?.status], [undefined, "succeeded"]);
 * ```
 */
export class ToolResultResponse {
  // Nominal typing: a plain object literal is not a ToolResultResponse (type only, no run-time field).
  declare private readonly _toolResultResponseBrand: never;
  /** Whether the result is pending, available or not found. */
  readonly status: ToolResultResponseStatus;
  /** The result when `available`; `undefined` otherwise. */
  readonly result: ToolResult | undefined;

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.resultResponse = (value) =>
      #built in value && (value as ToolResultResponse).#built;
  }

  /** Validates and freezes a result lookup answer. */
  constructor(init: ToolResultResponseInit) {
    requireInit(init, "ToolResultResponse");
    const status = requireMember<ToolResultResponseStatus>(
      init.status,
      RESULT_RESPONSE_STATUSES,
      "result response status",
    );
    const result: unknown = init.result;
    if (status === "available" && result === undefined) {
      throw fieldError(RangeError, "an available result response must contain a result");
    }
    if (status !== "available" && result !== undefined) {
      throw fieldError(RangeError, "only an available result response may contain a result");
    }
    if (result !== undefined && !(result instanceof ToolResult)) {
      throw fieldError(TypeError, "result must be a ToolResult or undefined");
    }
    this.status = status;
    this.result = result as ToolResult | undefined;
    this.#built = new.target === ToolResultResponse;
    Object.freeze(this);
  }
}

// ---------------------------------------------------------------------------------------------
// Acceptance, control, events, endpoint status (b.10 – b.14)

/** The init object of a {@linkcode ToolAccepted}. */
export interface ToolAcceptedInit {
  /** Structured JSON details (copied and frozen; default `{}`). */
  details?: object;
}

/**
 * The acknowledgement that an Action or Session was admitted for execution.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolAccepted } from "@forge/tool";
 * assertEquals(new ToolAccepted({ details: { queue: "default" } }).details.queue, "default");
 * ```
 */
export class ToolAccepted {
  // Nominal typing: a plain object literal is not a ToolAccepted (type only, no run-time field).
  declare private readonly _toolAcceptedBrand: never;
  /** Structured JSON details (deeply frozen). */
  readonly details: JsonObject;

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.accepted = (value) => #built in value && (value as ToolAccepted).#built;
  }

  /** Validates, copies and freezes the details; the init object may be omitted. */
  constructor(init: ToolAcceptedInit = {}) {
    requireInit(init, "ToolAccepted");
    this.details = jsonField(init.details, "details");
    this.#built = new.target === ToolAccepted;
    Object.freeze(this);
  }
}

/** The init object of a {@linkcode ToolControlResponse}: only `rejected` carries an error. */
export type ToolControlResponseInit =
  | {
    /** The command answered. */
    command: ToolControlCommand;
    /** A status that carries no error. */
    status: "accepted" | "terminal" | "unsupported";
    /** Never present for these statuses. */
    error?: undefined;
    /** Structured JSON details (copied and frozen; default `{}`). */
    details?: object;
  }
  | {
    /** The command answered. */
    command: ToolControlCommand;
    /** The control request was refused. */
    status: "rejected";
    /** Why it was refused. */
    error: ToolError;
    /** Structured JSON details (copied and frozen; default `{}`). */
    details?: object;
  };

/**
 * The immediate answer to a `cancel` or `stop` request.
 *
 * `accepted` means only that the control request was admitted; the caller must observe status
 * or result to learn whether the execution has terminated. `terminal` means the execution was
 * already terminal before the control request. `unsupported` answers a command the operation
 * does not support; `rejected` carries the error.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolControlResponse } from "@forge/tool";
 * const ack = new ToolControlResponse({ command: "cancel", status: "accepted" });
 * assertEquals(ack.error, undefined);
 * ```
 */
export class ToolControlResponse {
  // Nominal typing: a plain object literal is not a ToolControlResponse (type only, no run-time field).
  declare private readonly _toolControlResponseBrand: never;
  /** The command answered. */
  readonly command: ToolControlCommand;
  /** How the control request was answered. */
  readonly status: ToolControlStatus;
  /** The error of a `rejected` answer; `undefined` otherwise. */
  readonly error: ToolError | undefined;
  /** Structured JSON details (deeply frozen). */
  readonly details: JsonObject;

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.controlResponse = (value) =>
      #built in value && (value as ToolControlResponse).#built;
  }

  /**
   * Validates and freezes a control answer. Check order: `command`, `status`, error presence,
   * error type, `details`.
   */
  constructor(init: ToolControlResponseInit) {
    requireInit(init, "ToolControlResponse");
    const command = requireMember<ToolControlCommand>(
      init.command,
      CONTROL_COMMANDS,
      "tool control command",
    );
    const status = requireMember<ToolControlStatus>(
      init.status,
      CONTROL_STATUSES,
      "tool control status",
    );
    const error: unknown = init.error;
    if (status === "rejected" && error === undefined) {
      throw fieldError(RangeError, "a rejected control response must contain an error");
    }
    if (status !== "rejected" && error !== undefined) {
      throw fieldError(RangeError, "only a rejected control response may contain an error");
    }
    requireOptionalError(error);
    const details = jsonField(init.details, "details");
    this.command = command;
    this.status = status;
    this.error = error as ToolError | undefined;
    this.details = details;
    this.#built = new.target === ToolControlResponse;
    Object.freeze(this);
  }
}

/** The init object of a {@linkcode ToolEvent}. */
export interface ToolEventInit {
  /** The event type. */
  type: ToolEventType;
  /** The JSON event data (copied and frozen; default `{}`). */
  data?: object;
}

/**
 * A low-rate event emitted through an execution-bound emitter. Type-specific data schemas are
 * not defined by the protocol.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEvent } from "@forge/tool";
 * const progress = new ToolEvent({ type: "progress", data: { fraction: 0.5 } });
 * assertEquals(progress.data.fraction, 0.5);
 * ```
 */
export class ToolEvent {
  // Nominal typing: a plain object literal is not a ToolEvent (type only, no run-time field).
  declare private readonly _toolEventBrand: never;
  /** The event type. */
  readonly type: ToolEventType;
  /** The JSON event data (deeply frozen). */
  readonly data: JsonObject;

  /** Validates and freezes an event: `type`, then `data`. */
  constructor(init: ToolEventInit) {
    requireInit(init, "ToolEvent");
    const type = requireMember<ToolEventType>(init.type, TOOL_EVENT_TYPES, "tool event type");
    const data = jsonField(init.data, "data");
    this.type = type;
    this.data = data;
    Object.freeze(this);
  }
}

/**
 * Each terminal execution phase and the result status it requires: completed -> succeeded,
 * failed -> failed, cancelled -> cancelled, stopped -> stopped, unknown -> unknown.
 */
export const TERMINAL_RESULT_STATUS: Readonly<Record<TerminalExecutionPhase, ToolResultStatus>> =
  Object.freeze({
    completed: "succeeded",
    failed: "failed",
    cancelled: "cancelled",
    stopped: "stopped",
    unknown: "unknown",
  });

/** True when `phase` is a terminal execution phase (completed, failed, cancelled, stopped, unknown). */
export function isTerminalPhase(phase: string): phase is TerminalExecutionPhase {
  return typeof phase === "string" && Object.hasOwn(TERMINAL_RESULT_STATUS, phase);
}

/** The init object of a {@linkcode ToolExecutionStatus}: `failed` and `unknown` need an error. */
export type ToolExecutionStatusInit =
  | {
    /** A phase that carries no error. */
    phase: Exclude<ExecutionPhase, "failed" | "unknown">;
    /** Never present for these phases. */
    error?: undefined;
    /** Structured JSON details (copied and frozen; default `{}`). */
    details?: object;
  }
  | {
    /** A phase that requires an error. */
    phase: "failed" | "unknown";
    /** Why the execution failed or why its outcome is unknown. */
    error: ToolError;
    /** Structured JSON details (copied and frozen; default `{}`). */
    details?: object;
  };

/**
 * The executor-side status of one accepted attempt.
 *
 * `completed` means the endpoint's executor considers its work done; the Tool Runtime still owns
 * the final CompletionSpec evaluation. `failed` and `unknown` carry an error.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolExecutionStatus } from "@forge/tool";
 * const running = new ToolExecutionStatus({ phase: "running" });
 * assertEquals(running.terminal, false);
 * ```
 */
export class ToolExecutionStatus {
  // Nominal typing: a plain object literal is not a ToolExecutionStatus (type only, no run-time field).
  declare private readonly _toolExecutionStatusBrand: never;
  /** The lifecycle phase. */
  readonly phase: ExecutionPhase;
  /** The error of a `failed` or `unknown` phase; `undefined` otherwise. */
  readonly error: ToolError | undefined;
  /** Structured JSON details (deeply frozen). */
  readonly details: JsonObject;

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.executionStatus = (value) =>
      #built in value && (value as ToolExecutionStatus).#built;
  }

  /**
   * Validates and freezes an execution status. Check order: `phase`, error presence, error
   * type, `details`.
   */
  constructor(init: ToolExecutionStatusInit) {
    requireInit(init, "ToolExecutionStatus");
    const phase = requireMember<ExecutionPhase>(init.phase, EXECUTION_PHASES, "execution phase");
    const error: unknown = init.error;
    const requiresError = phase === "failed" || phase === "unknown";
    if (requiresError && error === undefined) {
      throw fieldError(RangeError, `a ${phase} execution status must contain an error`);
    }
    if (!requiresError && error !== undefined) {
      throw fieldError(
        RangeError,
        "only a failed or unknown execution status may contain an error",
      );
    }
    requireOptionalError(error);
    const details = jsonField(init.details, "details");
    this.phase = phase;
    this.error = error as ToolError | undefined;
    this.details = details;
    this.#built = new.target === ToolExecutionStatus;
    Object.freeze(this);
  }

  /** True when the phase is terminal (completed, failed, cancelled, stopped or unknown). */
  get terminal(): boolean {
    return isTerminalPhase(this.phase);
  }
}

/**
 * Checks that a terminal status and a result agree: the phase must be terminal and the result
 * status must be the one {@linkcode TERMINAL_RESULT_STATUS} maps it to. Throws `TypeError` for
 * wrong argument types and `RangeError` for a disagreement.
 * Internal (exported from no entry point): the handler and the definitions use it.
 */
export function validateExecutionResult(status: ToolExecutionStatus, result: ToolResult): void {
  if (!(status instanceof ToolExecutionStatus)) {
    throw fieldError(TypeError, "status must be a ToolExecutionStatus");
  }
  if (!(result instanceof ToolResult)) throw fieldError(TypeError, "result must be a ToolResult");
  const phase = status.phase;
  if (!isTerminalPhase(phase)) {
    throw fieldError(RangeError, `execution phase '${phase}' is not terminal`);
  }
  const expected = TERMINAL_RESULT_STATUS[phase];
  if (result.status !== expected) {
    throw fieldError(RangeError, `execution phase '${phase}' requires result status '${expected}'`);
  }
}

/**
 * The validated, immutable values of the ToolEndpoint contracts: operation and endpoint
 * descriptors, the execution key and context, requests, results, control and status answers,
 * events and Registry decisions.
 *
 * Every model is a class with an init-object constructor that validates each field (plain
 * JavaScript callers exist, so the checks run even where the types already forbid a value),
 * copies JSON-valued fields into deeply frozen plain objects, and freezes the instance. A wrong
 * type is a `TypeError`, a wrong value a `RangeError`, with the reference package's messages and
 * its snake_case field names.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolError, ToolResult } from "@forge/tool";
 * const ok = new ToolResult({ status: "succeeded", outputs: { objects: [] } });
 * const failed = new ToolResult({
 *   status: "failed",
 *   error: new ToolError({ code: "EXECUTOR_FAILED", message: "camera offline" }),
 * });
 * assertEquals([ok.status, failed.error?.code], ["succeeded", "EXECUTOR_FAILED"]);
 * ```
 *
 * @module
 */
import {
  ENDPOINT_REGISTRY_OPERATION_VALUES,
  ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES,
  ENDPOINT_STATE_VALUES,
  type EndpointRegistryOperation,
  type EndpointRegistryResponseStatus,
  type EndpointState,
  EXECUTION_PHASE_VALUES,
  type ExecutionPhase,
  MAX_SAFE_JSON_INTEGER,
  type TerminalExecutionPhase,
  TOOL_CONTROL_COMMAND_VALUES,
  TOOL_CONTROL_STATUS_VALUES,
  TOOL_EVENT_TYPE_VALUES,
  TOOL_RESULT_RESPONSE_STATUS_VALUES,
  TOOL_RESULT_STATUS_VALUES,
  TOOL_SEMANTICS_VALUES,
  type ToolControlCommand,
  type ToolControlStatus,
  type ToolEventType,
  type ToolResultResponseStatus,
  type ToolResultStatus,
  type ToolSemantics,
} from "./constants.ts";
import { TOOL_ERROR_BRAND } from "./errors.ts";
import { copyJsonObject, EMPTY_OBJECT, type JsonObject } from "../_internal/json.ts";
import {
  checkToolContextFields,
  fieldError,
  isIntegerIn,
  requireNonEmpty,
} from "../_internal/fields.ts";

// The literal and JSON types the models' public shapes use, re-exported so this module's
// documentation is self-contained.
export type {
  EndpointRegistryOperation,
  EndpointRegistryResponseStatus,
  EndpointState,
  ExecutionPhase,
  TerminalExecutionPhase,
  ToolControlCommand,
  ToolControlStatus,
  ToolEventType,
  ToolResultResponseStatus,
  ToolResultStatus,
  ToolSemantics,
} from "./constants.ts";
export type { JsonArray, JsonObject, JsonPrimitive, JsonValue } from "../_internal/json.ts";

// ---------------------------------------------------------------------------------------------
// Shared validation helpers (reference section b.1)

// The runtime sets of the literal types, derived from their one declaration in constants.ts.
const TOOL_SEMANTICS: ReadonlySet<string> = new Set(TOOL_SEMANTICS_VALUES);
const ENDPOINT_STATES: ReadonlySet<string> = new Set(ENDPOINT_STATE_VALUES);
const EXECUTION_PHASES: ReadonlySet<string> = new Set(EXECUTION_PHASE_VALUES);
const TOOL_EVENT_TYPES: ReadonlySet<string> = new Set(TOOL_EVENT_TYPE_VALUES);
const TOOL_RESULT_STATUSES: ReadonlySet<string> = new Set(TOOL_RESULT_STATUS_VALUES);
const RESULT_RESPONSE_STATUSES: ReadonlySet<string> = new Set(TOOL_RESULT_RESPONSE_STATUS_VALUES);
const CONTROL_COMMANDS: ReadonlySet<string> = new Set(TOOL_CONTROL_COMMAND_VALUES);
const CONTROL_STATUSES: ReadonlySet<string> = new Set(TOOL_CONTROL_STATUS_VALUES);
const REGISTRY_OPERATIONS: ReadonlySet<string> = new Set(ENDPOINT_REGISTRY_OPERATION_VALUES);
const REGISTRY_RESPONSE_STATUSES: ReadonlySet<string> = new Set(
  ENDPOINT_REGISTRY_RESPONSE_STATUS_VALUES,
);

/** Python `repr()` style for the value named in an "unsupported ..." message. */
function repr(value: unknown): string {
  if (typeof value === "string") return `'${value}'`;
  try {
    return String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** The init object itself must be an object (a missing init is a `TypeError`). */
function requireInit<T>(init: T, model: string): T {
  if (typeof init !== "object" || init === null) {
    throw fieldError(TypeError, `${model} requires an init object`);
  }
  return init;
}

/** A member of a string-literal set, else `RangeError("unsupported <what>: '<value>'")`. */
function requireMember<T extends string>(
  value: unknown,
  members: ReadonlySet<string>,
  what: string,
): T {
  if (typeof value !== "string" || !members.has(value)) {
    throw fieldError(RangeError, `unsupported ${what}: ${repr(value)}`);
  }
  return value as T;
}

/** A real boolean (absent means `false`), else `TypeError("<field> must be a bool")`. */
function requireBool(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw fieldError(TypeError, `${field} must be a bool`);
  return value;
}

/** A mapping field: absent -> the frozen empty object, else the bounded deep-frozen copy. */
function jsonField(value: unknown, field: string): JsonObject {
  return value === undefined ? EMPTY_OBJECT : copyJsonObject(value, field);
}

/** An optional ToolError: absent, or a ToolError, else `TypeError`. */
function requireOptionalError(value: unknown): void {
  if (value !== undefined && !(value instanceof ToolError)) {
    throw fieldError(TypeError, "error must be a ToolError or undefined");
  }
}

// ---------------------------------------------------------------------------------------------
// Descriptors (b.2, b.3)

/** The init object of a {@linkcode ToolOperationDescriptor}. */
export interface ToolOperationDescriptorInit {
  /** The operation name, unique within its endpoint. */
  name: string;
  /** How the operation executes: `query`, `action` or `session`. */
  semantics: ToolSemantics;
  /** Whether an Action accepts `cancel` (default `false`; never for query or session). */
  cancellable?: boolean;
  /** Whether a Session accepts `stop` (default `false`; never for query or action). */
  stoppable?: boolean;
  /** Whether `status` is served (default `false`; required for action and session). */
  statusSupported?: boolean;
  /** How many executions may run at once, in `[1, 2^53 − 1]` (default 1). */
  maxConcurrency?: number;
}

/**
 * One operation a ToolEndpoint exposes, with its semantics and capabilities.
 *
 * The capability matrix is enforced: a `query` supports neither control nor status; an `action`
 * must support status and must not be stoppable; a `session` must support status and must not be
 * cancellable. Because `statusSupported` defaults to `false`, Action and Session descriptors must
 * pass `statusSupported: true`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolOperationDescriptor } from "@forge/tool";
 * const move = new ToolOperationDescriptor({
 *   name: "move",
 *   semantics: "action",
 *   cancellable: true,
 *   statusSupported: true,
 * });
 * assertEquals(move.maxConcurrency, 1);
 * ```
 */
export class ToolOperationDescriptor {
  /** The operation name. */
  readonly name: string;
  /** How the operation executes. */
  readonly semantics: ToolSemantics;
  /** Whether the operation accepts `cancel`. */
  readonly cancellable: boolean;
  /** Whether the operation accepts `stop`. */
  readonly stoppable: boolean;
  /** Whether the operation serves `status`. */
  readonly statusSupported: boolean;
  /** How many executions of this operation may run at once. */
  readonly maxConcurrency: number;

  /**
   * Validates and freezes an operation descriptor. Check order: `name`, `semantics`, the three
   * flags, the capability matrix, `max_concurrency`.
   */
  constructor(init: ToolOperationDescriptorInit) {
    requireInit(init, "ToolOperationDescriptor");
    const name = requireNonEmpty(init.name, "name");
    const semantics = requireMember<ToolSemantics>(
      init.semantics,
      TOOL_SEMANTICS,
      "tool semantics",
    );
    const cancellable = requireBool(init.cancellable, "cancellable");
    const stoppable = requireBool(init.stoppable, "stoppable");
    const statusSupported = requireBool(init.statusSupported, "status_supported");
    if (semantics === "query" && (cancellable || stoppable || statusSupported)) {
      throw fieldError(RangeError, "query operations do not support control or status");
    }
    if (semantics === "action") {
      if (stoppable) throw fieldError(RangeError, "action operations must not be stoppable");
      if (!statusSupported) throw fieldError(RangeError, "action operations must support status");
    }
    if (semantics === "session") {
      if (cancellable) throw fieldError(RangeError, "session operations must not be cancellable");
      if (!statusSupported) throw fieldError(RangeError, "session operations must support status");
    }
    const maxConcurrency = init.maxConcurrency === undefined ? 1 : init.maxConcurrency;
    if (!isIntegerIn(maxConcurrency, 1)) {
      throw fieldError(RangeError, `max_concurrency must be in [1, ${MAX_SAFE_JSON_INTEGER}]`);
    }
    this.name = name;
    this.semantics = semantics;
    this.cancellable = cancellable;
    this.stoppable = stoppable;
    this.statusSupported = statusSupported;
    this.maxConcurrency = maxConcurrency;
    Object.freeze(this);
  }
}

/** The init object of a {@linkcode ToolEndpointDescriptor}. */
export interface ToolEndpointDescriptorInit {
  /** The protocol version the endpoint speaks (compared with the constant by the handler). */
  protocolVersion: string;
  /** The stable logical endpoint ID. */
  endpointId: string;
  /** The operations, at least one, with unique names. */
  operations: Iterable<ToolOperationDescriptor>;
}

/**
 * The operations registered under one stable logical endpoint ID.
 *
 * `protocolVersion` is only checked to be a non-empty string here; the handler and the
 * descriptor payload codec compare it with `TOOL_ENDPOINT_PROTOCOL`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEndpointDescriptor, ToolOperationDescriptor } from "@forge/tool";
 * const descriptor = new ToolEndpointDescriptor({
 *   protocolVersion: "forge.tool.endpoint/v1alpha1",
 *   endpointId: "vision.yolo",
 *   operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 * });
 * assertEquals(descriptor.operation("detect")?.semantics, "query");
 * ```
 */
export class ToolEndpointDescriptor {
  /** The protocol version the endpoint speaks. */
  readonly protocolVersion: string;
  /** The stable logical endpoint ID. */
  readonly endpointId: string;
  /** The operations, in the given order (a frozen array). */
  readonly operations: readonly ToolOperationDescriptor[];
  readonly #byName: ReadonlyMap<string, ToolOperationDescriptor>;

  /**
   * Validates and freezes an endpoint descriptor. Check order: `protocol_version`,
   * `endpoint_id`, operations non-empty, operation types, unique names.
   */
  constructor(init: ToolEndpointDescriptorInit) {
    requireInit(init, "ToolEndpointDescriptor");
    const protocolVersion = requireNonEmpty(init.protocolVersion, "protocol_version");
    const endpointId = requireNonEmpty(init.endpointId, "endpoint_id");
    const source: unknown = init.operations;
    if (
      source === null || source === undefined ||
      typeof (source as { [Symbol.iterator]?: unknown })[Symbol.iterator] !== "function"
    ) {
      throw fieldError(TypeError, "operations must contain ToolOperationDescriptor values");
    }
    const operations: unknown[] = [...(source as Iterable<unknown>)];
    if (operations.length === 0) throw fieldError(RangeError, "operations must not be empty");
    if (!operations.every((operation) => operation instanceof ToolOperationDescriptor)) {
      throw fieldError(TypeError, "operations must contain ToolOperationDescriptor values");
    }
    const byName = new Map<string, ToolOperationDescriptor>();
    for (const operation of operations as ToolOperationDescriptor[]) {
      if (byName.has(operation.name)) {
        throw fieldError(RangeError, "operation names must be unique within an endpoint");
      }
      byName.set(operation.name, operation);
    }
    this.protocolVersion = protocolVersion;
    this.endpointId = endpointId;
    this.operations = Object.freeze(operations as ToolOperationDescriptor[]);
    this.#byName = byName;
    Object.freeze(this);
  }

  /** The operation named `name`, or `undefined` when the endpoint has none by that name. */
  operation(name: string): ToolOperationDescriptor | undefined {
    return this.#byName.get(name);
  }
}

// ---------------------------------------------------------------------------------------------
// Execution identity and context (b.4, b.5)

/** The init object of a {@linkcode ToolExecutionKey}. */
export interface ToolExecutionKeyInit {
  /** The Runtime's invocation ID. */
  invocationId: string;
  /** The implementation attempt within the invocation. */
  attemptId: string;
}

/**
 * The Runtime identity of one implementation attempt within an invocation: the key of every
 * status, result, control and event exchange. Two keys are the same execution when
 * {@linkcode ToolExecutionKey.equals} holds; {@linkcode ToolExecutionKey.id} is an injective
 * string form usable as a `Map` key.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolExecutionKey } from "@forge/tool";
 * const a = new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" });
 * const b = new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" });
 * assertEquals([a.equals(b), a.id === b.id], [true, true]);
 * ```
 */
export class ToolExecutionKey {
  /** The Runtime's invocation ID. */
  readonly invocationId: string;
  /** The implementation attempt within the invocation. */
  readonly attemptId: string;
  // Built on first use (private fields stay writable on a frozen object): decoding a request
  // validates a key without ever needing its identity string.
  #id: string | undefined;

  /** Validates and freezes a key: `invocation_id`, then `attempt_id`, both non-empty. */
  constructor(init: ToolExecutionKeyInit) {
    requireInit(init, "ToolExecutionKey");
    const invocationId = requireNonEmpty(init.invocationId, "invocation_id");
    const attemptId = requireNonEmpty(init.attemptId, "attempt_id");
    this.invocationId = invocationId;
    this.attemptId = attemptId;
    this.#id = undefined;
    Object.freeze(this);
  }

  /**
   * An injective string identity of the key (distinct keys never share it), for use as a `Map`
   * key: the invocation ID's length, a colon, the invocation ID, then the attempt ID.
   */
  get id(): string {
    return this.#id ??= `${this.invocationId.length}:${this.invocationId}${this.attemptId}`;
  }

  /** True when `other` is a key of the same invocation and attempt. */
  equals(other: ToolExecutionKey): boolean {
    return other instanceof ToolExecutionKey && other.invocationId === this.invocationId &&
      other.attemptId === this.attemptId;
  }
}

/** The init object of a {@linkcode ToolContext}. */
export interface ToolContextInit {
  /** The execution this context belongs to. */
  executionKey: ToolExecutionKey;
  /** The Runtime's tool ID. */
  toolId: string;
  /** The implementation selected for the tool. */
  implementationId: string;
  /** The logical endpoint the request is routed to. */
  endpointId: string;
  /** The operation invoked. */
  operation: string;
  /** Who invoked the tool, when known. */
  callerId?: string;
  /** The absolute deadline as Unix epoch milliseconds, in `[0, 2^53 − 1]`. */
  deadlineMs?: number;
  /** Free-form JSON metadata (copied and frozen). */
  metadata?: object;
}

/**
 * The Runtime context of one Tool execution attempt.
 *
 * `deadlineMs` (`deadline_ms` on the Wire) is an absolute Unix epoch time in milliseconds, not a
 * duration relative to request receipt; it is execution data, not an observation timestamp.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolContext, ToolExecutionKey } from "@forge/tool";
 * const context = new ToolContext({
 *   executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
 *   toolId: "forge.tool.detect",
 *   implementationId: "yolo",
 *   endpointId: "vision.yolo",
 *   operation: "detect",
 *   deadlineMs: Date.now() + 5_000,
 * });
 * assertEquals(context.invocationId, "invocation-1");
 * ```
 */
export class ToolContext {
  /** The execution this context belongs to. */
  readonly executionKey: ToolExecutionKey;
  /** The Runtime's tool ID. */
  readonly toolId: string;
  /** The implementation selected for the tool. */
  readonly implementationId: string;
  /** The logical endpoint the request is routed to. */
  readonly endpointId: string;
  /** The operation invoked. */
  readonly operation: string;
  /** Who invoked the tool, or `undefined`. */
  readonly callerId: string | undefined;
  /** The absolute Unix epoch deadline in milliseconds, or `undefined`. */
  readonly deadlineMs: number | undefined;
  /** Free-form JSON metadata (deeply frozen). */
  readonly metadata: JsonObject;

  /**
   * Validates and freezes a context. Check order: `execution_key`, `tool_id`,
   * `implementation_id`, `endpoint_id`, `operation`, `caller_id`, `deadline_ms`, `metadata`.
   */
  constructor(init: ToolContextInit) {
    requireInit(init, "ToolContext");
    const executionKey: unknown = init.executionKey;
    if (!(executionKey instanceof ToolExecutionKey)) {
      throw fieldError(TypeError, "execution_key must be a ToolExecutionKey");
    }
    const toolId: unknown = init.toolId;
    const implementationId: unknown = init.implementationId;
    const endpointId: unknown = init.endpointId;
    const operation: unknown = init.operation;
    const callerId: unknown = init.callerId;
    const deadlineMs: unknown = init.deadlineMs;
    checkToolContextFields(toolId, implementationId, endpointId, operation, callerId, deadlineMs);
    const metadata = jsonField(init.metadata, "metadata");
    this.executionKey = executionKey;
    this.toolId = toolId as string;
    this.implementationId = implementationId as string;
    this.endpointId = endpointId as string;
    this.operation = operation as string;
    this.callerId = callerId as string | undefined;
    this.deadlineMs = deadlineMs === undefined ? undefined : (deadlineMs as number) + 0; // -0 -> 0
    this.metadata = metadata;
    Object.freeze(this);
  }

  /** The invocation component of {@linkcode ToolContext.executionKey}. */
  get invocationId(): string {
    return this.executionKey.invocationId;
  }

  /** The attempt component of {@linkcode ToolContext.executionKey}. */
  get attemptId(): string {
    return this.executionKey.attemptId;
  }
}

// ---------------------------------------------------------------------------------------------
// Request, error, result (b.6, b.7, b.8, b.9)

/** The init object of a {@linkcode ToolRequest}. */
export interface ToolRequestInit {
  /** The JSON arguments (a plain object or a `Map` with string keys; copied and frozen). */
  arguments: object;
}

/**
 * The JSON arguments supplied to a ToolEndpoint operation. The arguments are a bounded,
 * deeply frozen copy: later changes to the caller's object change nothing.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolRequest } from "@forge/tool";
 * const request = new ToolRequest({ arguments: { class: "cube" } });
 * assertEquals(request.arguments.class, "cube");
 * ```
 */
export class ToolRequest {
  /** The JSON arguments (deeply frozen). */
  readonly arguments: JsonObject;

  /** Validates, copies and freezes the arguments (required). */
  constructor(init: ToolRequestInit) {
    requireInit(init, "ToolRequest");
    this.arguments = copyJsonObject(init.arguments, "arguments");
    Object.freeze(this);
  }
}

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

  /** Validates, copies and freezes the details; the init object may be omitted. */
  constructor(init: ToolAcceptedInit = {}) {
    requireInit(init, "ToolAccepted");
    this.details = jsonField(init.details, "details");
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

/** The init object of an {@linkcode EndpointStatus}. */
export interface EndpointStatusInit {
  /** The logical endpoint ID. */
  endpointId: string;
  /** The endpoint's health state. */
  state: EndpointState;
  /** Executions currently active, in `[0, 2^53 − 1]` (default 0). */
  activeInvocations?: number;
  /** Structured JSON details (copied and frozen; default `{}`). */
  details?: object;
}

/**
 * The current health and aggregate concurrency usage of an endpoint.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EndpointStatus } from "@forge/tool";
 * const status = new EndpointStatus({ endpointId: "robot.arm", state: "ready" });
 * assertEquals(status.activeInvocations, 0);
 * ```
 */
export class EndpointStatus {
  /** The logical endpoint ID. */
  readonly endpointId: string;
  /** The endpoint's health state. */
  readonly state: EndpointState;
  /** Executions currently active. */
  readonly activeInvocations: number;
  /** Structured JSON details (deeply frozen). */
  readonly details: JsonObject;

  /**
   * Validates and freezes an endpoint status. Check order: `endpoint_id`, `state`,
   * `active_invocations`, `details`.
   */
  constructor(init: EndpointStatusInit) {
    requireInit(init, "EndpointStatus");
    const endpointId = requireNonEmpty(init.endpointId, "endpoint_id");
    const state = requireMember<EndpointState>(init.state, ENDPOINT_STATES, "endpoint state");
    const activeInvocations = init.activeInvocations === undefined ? 0 : init.activeInvocations;
    if (!isIntegerIn(activeInvocations, 0)) {
      throw fieldError(RangeError, `active_invocations must be in [0, ${MAX_SAFE_JSON_INTEGER}]`);
    }
    const details = jsonField(init.details, "details");
    this.endpointId = endpointId;
    this.state = state;
    this.activeInvocations = activeInvocations + 0; // -0 -> 0
    this.details = details;
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
 *
 * @example
 * ```ts
 * import { assertThrows } from "@std/assert";
 * import { ToolExecutionStatus, ToolResult, validateExecutionResult } from "@forge/tool";
 * validateExecutionResult(
 *   new ToolExecutionStatus({ phase: "completed" }),
 *   new ToolResult({ status: "succeeded" }),
 * );
 * assertThrows(
 *   () =>
 *     validateExecutionResult(
 *       new ToolExecutionStatus({ phase: "cancelled" }),
 *       new ToolResult({ status: "succeeded" }),
 *     ),
 *   RangeError,
 * );
 * ```
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

// ---------------------------------------------------------------------------------------------
// Registry decision (b.15)

/** The init object of an {@linkcode EndpointRegistryResponse}. */
export interface EndpointRegistryResponseInit {
  /** The Registry operation answered. */
  operation: EndpointRegistryOperation;
  /** Whether the Registry accepted the request. */
  status: EndpointRegistryResponseStatus;
  /** The Registry revision, in `[0, 2^53 − 1]`. */
  registryRevision: number;
  /** The lease duration in milliseconds: required for an accepted register, else absent. */
  leaseTtlMs?: number;
  /** The error of a rejected response (required there, absent otherwise). */
  error?: ToolError;
}

/**
 * The Registry's decision on one endpoint-management request.
 *
 * `leaseTtlMs` (`lease_ttl_ms` on the Wire) is a lease duration in milliseconds, not an
 * observation timestamp or an absolute time. An accepted `register` carries it; an accepted
 * `unregister` and every rejection do not. A rejection carries an error; an acceptance does not.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EndpointRegistryResponse } from "@forge/tool";
 * const lease = new EndpointRegistryResponse({
 *   operation: "register",
 *   status: "accepted",
 *   registryRevision: 7,
 *   leaseTtlMs: 30_000,
 * });
 * assertEquals(lease.leaseTtlMs, 30000);
 * ```
 */
export class EndpointRegistryResponse {
  /** The Registry operation answered. */
  readonly operation: EndpointRegistryOperation;
  /** Whether the Registry accepted the request. */
  readonly status: EndpointRegistryResponseStatus;
  /** The Registry revision. */
  readonly registryRevision: number;
  /** The lease duration in milliseconds, or `undefined`. */
  readonly leaseTtlMs: number | undefined;
  /** The error of a rejected response, or `undefined`. */
  readonly error: ToolError | undefined;

  /**
   * Validates and freezes a Registry decision. Check order: `operation`, `status`,
   * `registry_revision`, `lease_ttl_ms`, error type, then the status rules.
   */
  constructor(init: EndpointRegistryResponseInit) {
    requireInit(init, "EndpointRegistryResponse");
    const operation = requireMember<EndpointRegistryOperation>(
      init.operation,
      REGISTRY_OPERATIONS,
      "endpoint registry operation",
    );
    const status = requireMember<EndpointRegistryResponseStatus>(
      init.status,
      REGISTRY_RESPONSE_STATUSES,
      "endpoint registry response status",
    );
    const registryRevision: unknown = init.registryRevision;
    if (!isIntegerIn(registryRevision, 0)) {
      throw fieldError(RangeError, `registry_revision must be in [0, ${MAX_SAFE_JSON_INTEGER}]`);
    }
    const leaseTtlMs: unknown = init.leaseTtlMs;
    if (leaseTtlMs !== undefined && !isIntegerIn(leaseTtlMs, 1)) {
      throw fieldError(
        RangeError,
        `lease_ttl_ms must be in [1, ${MAX_SAFE_JSON_INTEGER}] when provided`,
      );
    }
    const error: unknown = init.error;
    requireOptionalError(error);
    if (status === "rejected") {
      if (leaseTtlMs !== undefined) {
        throw fieldError(RangeError, "a rejected registry response must not contain lease_ttl_ms");
      }
      if (error === undefined) {
        throw fieldError(RangeError, "a rejected registry response must contain an error");
      }
    } else {
      if (error !== undefined) {
        throw fieldError(RangeError, "an accepted registry response must not contain an error");
      }
      if (operation === "register") {
        if (leaseTtlMs === undefined) {
          throw fieldError(RangeError, "an accepted register response must contain lease_ttl_ms");
        }
      } else if (leaseTtlMs !== undefined) {
        throw fieldError(
          RangeError,
          "an accepted unregister response must not contain lease_ttl_ms",
        );
      }
    }
    this.operation = operation;
    this.status = status;
    this.registryRevision = registryRevision + 0; // -0 -> 0
    this.leaseTtlMs = leaseTtlMs as number | undefined;
    this.error = error as ToolError | undefined;
    Object.freeze(this);
  }
}

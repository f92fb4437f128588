/**
 * The execution identity and context, and the request (reference b.4 – b.6).
 *
 * @module
 */
import { copyJsonObject, type JsonObject } from "../_internal/json.ts";
import { checkToolContextFields, fieldError, requireNonEmpty } from "../_internal/fields.ts";
import { pairKey } from "../_internal/text.ts";

import { jsonField, requireInit } from "./_model_rules.ts";

// Which requests and contexts their own constructors built (not a subclass, not
// Object.create(prototype), not a look-alike): a private field each class sets in its constructor,
// read through this table, whose readers the classes' static blocks install when this module is
// evaluated. The Wire's invoke request factory takes such models' fields as already validated
// (src/wire/_built_payloads.ts), as the response factories do with outcomes.ts's models.
const builtReaders = {
  request: (_value: object): boolean => false,
  context: (_value: object): boolean => false,
};

/**
 * @internal True when `value` is a {@linkcode ToolRequest} or {@linkcode ToolContext} its own
 * class's constructor built. Exported from no entry point.
 */
export const isBuiltRequestModel: Readonly<typeof builtReaders> = builtReaders;

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
  constructor(init: ToolExecutionKeyInit);
  constructor(init: ToolExecutionKeyInit, checked?: unknown) {
    if (checked === CHECKED_KEY_FIELDS) {
      this.invocationId = init.invocationId;
      this.attemptId = init.attemptId;
    } else {
      requireInit(init, "ToolExecutionKey");
      const invocationId = requireNonEmpty(init.invocationId, "invocation_id");
      const attemptId = requireNonEmpty(init.attemptId, "attempt_id");
      this.invocationId = invocationId;
      this.attemptId = attemptId;
    }
    this.#id = undefined;
    Object.freeze(this);
  }

  /**
   * An injective string identity of the key (distinct keys never share it), for use as a `Map`
   * key: the invocation ID's length, a colon, the invocation ID, then the attempt ID.
   */
  get id(): string {
    return this.#id ??= pairKey(this.invocationId, this.attemptId);
  }

  /** True when `other` is a key of the same invocation and attempt. */
  equals(other: ToolExecutionKey): boolean {
    return other instanceof ToolExecutionKey && other.invocationId === this.invocationId &&
      other.attemptId === this.attemptId;
  }
}

/** The module-private token of {@linkcode executionKeyOfCheckedFields}. */
const CHECKED_KEY_FIELDS: unique symbol = Symbol("checked execution key fields");

/**
 * @internal The key of two strings that already passed the key's own checks: the `invocation_id`
 * and `attempt_id` headers of an envelope its constructor built, which it checks by the same rules
 * (non-blank, no lone surrogate); see `executionKeyOf` in src/wire/envelope.ts, the one caller.
 * Checking them a second time was about 5% of a Query dispatch's samples and 3% of an Action
 * round's.
 */
export function executionKeyOfCheckedFields(
  invocationId: string,
  attemptId: string,
): ToolExecutionKey {
  return new (ToolExecutionKey as new (
    init: ToolExecutionKeyInit,
    checked: typeof CHECKED_KEY_FIELDS,
  ) => ToolExecutionKey)({ invocationId, attemptId }, CHECKED_KEY_FIELDS);
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

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.context = (value) => #built in value && (value as ToolContext).#built;
  }

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
    this.#built = new.target === ToolContext;
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

  // Set by the constructor when it built this object itself (see builtReaders).
  #built = false;

  static {
    builtReaders.request = (value) => #built in value && (value as ToolRequest).#built;
  }

  /** Validates, copies and freezes the arguments (required). */
  constructor(init: ToolRequestInit) {
    requireInit(init, "ToolRequest");
    this.arguments = copyJsonObject(init.arguments, "arguments");
    this.#built = new.target === ToolRequest;
    Object.freeze(this);
  }
}

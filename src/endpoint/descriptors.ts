/**
 * The operation and endpoint descriptors (reference b.2, b.3).
 *
 * @module
 */
import { MAX_SAFE_JSON_INTEGER, type ToolSemantics } from "./constants.ts";
import { fieldError, isIntegerIn, requireNonEmpty } from "../_internal/fields.ts";

import { requireBool, requireInit, requireMember, TOOL_SEMANTICS } from "./_model_rules.ts";

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

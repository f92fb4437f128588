/**
 * The options of a handler and their checks: what the constructor and close() accept, in the
 * order they are checked, each error showing the value received.
 *
 * @module
 */
import { TOOL_ENDPOINT_PROTOCOL } from "../endpoint/constants.ts";
import { hasLoneSurrogate, isStripBlank } from "../_internal/text.ts";
import { ToolEndpointDescriptor } from "../endpoint/models.ts";
import type { ToolEndpointImplementation } from "../endpoint/spi.ts";
import { optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { consoleLogger, type ToolLogger } from "../endpoint/log.ts";
import type { ToolTracer } from "../endpoint/trace.ts";

/** Options of {@linkcode ToolEndpointHandler}. */
export interface ToolEndpointHandlerOptions {
  /** This process's provider instance: requests for another instance are refused. */
  readonly endpointInstanceId: string;
  /** One implementation per declared operation, by operation name (a record or a `Map`). */
  readonly operations:
    | Readonly<Record<string, ToolEndpointImplementation>>
    | ReadonlyMap<string, ToolEndpointImplementation>;
  /** Events an execution may emit before it is accepted (default 32). */
  readonly maxEarlyEvents?: number;
  /**
   * Events of one execution that may wait to be published at once, that is `emit()` calls in
   * progress (default 1024). A provider that does not await `emit()` queues its events; one more
   * than this rejects at once with a {@linkcode ToolProtocolError} whose code is
   * `FORGE_ENDPOINT_EVENT_SINK_UNAVAILABLE`, is not numbered and is not published.
   * @default {1024}
   */
  readonly maxPendingEvents?: number;
  /** Action and Session executions retained for duplicate suppression (default 1024). */
  readonly maxRetainedExecutions?: number;
  /**
   * Enforce `deadline_ms`: an invoke whose deadline has passed is rejected with
   * `FORGE_ENDPOINT_DEADLINE_EXCEEDED` before the provider is called, the provider's signal
   * aborts (a `TimeoutError`) when the deadline passes during the work, and a Query that answers
   * `succeeded` once its deadline passed is answered `failed` with
   * `FORGE_ENDPOINT_DEADLINE_EXCEEDED` (its outputs kept). This differs from the reference, which
   * validates `deadline_ms` but does not enforce it; `false` restores that.
   *
   * @default {true}
   */
  readonly enforceDeadlines?: boolean;
  /** The wall clock in Unix epoch milliseconds, for deadlines (default `Date.now`). */
  readonly now?: () => number;
  /**
   * Where every provider failure and every handler event is reported, one structured record
   * each (see docs/observability.md for the event names). The binding, the node runner and the
   * node lifecycle built on this handler report to it too unless given their own.
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
  /**
   * Starts one span per admitted invocation, ended with its outcome (see
   * {@linkcode ToolTracer}); {@linkcode denoTracer} gives Deno's built-in OpenTelemetry tracer
   * when it is enabled. Without it nothing is traced and nothing is allocated for tracing.
   */
  readonly tracer?: ToolTracer;
}

/** Options of {@linkcode ToolEndpointHandler.close}. */
export interface CloseOptions {
  /**
   * How long to wait, in milliseconds, for in-flight provider calls to settle and for every
   * admitted execution to end and publish its terminal event, before the rest converges to
   * `unknown`; publishing those events and the remaining answers gets as long again. A
   * non-negative finite number (`0`: no grace, what is still running converges at once);
   * anything else rejects with a `RangeError` showing the value.
   *
   * @default {5000}
   */
  readonly graceMs?: number;
}

/** The checked options of a handler, with their defaults applied. */
export interface HandlerSettings {
  readonly descriptor: ToolEndpointDescriptor;
  readonly endpointInstanceId: string;
  /** One implementation per declared operation, by name. */
  readonly implementations: ReadonlyMap<string, ToolEndpointImplementation>;
  readonly maxEarlyEvents: number;
  readonly maxRetained: number;
  readonly maxPendingEvents: number;
  readonly logger: ToolLogger;
  readonly tracer: ToolTracer | undefined;
  readonly enforceDeadlines: boolean;
  readonly now: () => number;
}

const REQUIRED_METHODS: Readonly<Record<string, readonly string[]>> = {
  query: ["query"],
  action: ["start", "cancel", "status", "result"],
  session: ["start", "stop", "status", "result"],
};

const CREATE_HANDLER = "create the handler";

/**
 * Checks, in order: the descriptor, its protocol version, the operations mapping,
 * `maxEarlyEvents`, `maxRetainedExecutions`, `maxPendingEvents`, the exact operation mapping, the
 * methods each semantics requires, `endpointInstanceId`, `logger`, `tracer` and
 * `enforceDeadlines`.
 */
export function handlerSettings(
  descriptor: ToolEndpointDescriptor,
  options: ToolEndpointHandlerOptions,
): HandlerSettings {
  if (!(descriptor instanceof ToolEndpointDescriptor)) {
    throw new TypeError(
      optionMessage(CREATE_HANDLER, "descriptor", "a ToolEndpointDescriptor", descriptor),
    );
  }
  if (descriptor.protocolVersion !== TOOL_ENDPOINT_PROTOCOL) {
    throw new RangeError(
      optionMessage(
        CREATE_HANDLER,
        "descriptor.protocolVersion",
        `'${TOOL_ENDPOINT_PROTOCOL}'`,
        descriptor.protocolVersion,
      ),
    );
  }
  if (typeof options !== "object" || options === null) {
    throw new TypeError(optionMessage(CREATE_HANDLER, "options", "an object", options));
  }
  const operations: unknown = options.operations;
  const isMap = operations instanceof Map;
  if (
    !isMap &&
    (typeof operations !== "object" || operations === null || Array.isArray(operations))
  ) {
    throw new TypeError(optionMessage(CREATE_HANDLER, "operations", "a mapping", operations));
  }
  const maxEarlyEvents = positiveIntegerOption(
    CREATE_HANDLER,
    "maxEarlyEvents",
    options.maxEarlyEvents ?? undefined,
    32,
  );
  const maxRetained = positiveIntegerOption(
    CREATE_HANDLER,
    "maxRetainedExecutions",
    options.maxRetainedExecutions ?? undefined,
    1024,
  );
  const maxPendingEvents = positiveIntegerOption(
    CREATE_HANDLER,
    "maxPendingEvents",
    options.maxPendingEvents ?? undefined,
    1024,
  );
  const implementations = new Map<string, ToolEndpointImplementation>();
  const entries = isMap
    ? [...(operations as Map<unknown, ToolEndpointImplementation>)]
    : Object.entries(operations as Record<string, ToolEndpointImplementation>);
  for (const [name, implementation] of entries) {
    if (typeof name !== "string") {
      throw new TypeError("operation implementation names must be strings");
    }
    implementations.set(name, implementation);
  }
  const declared = descriptor.operations.map((operation) => operation.name);
  const missing = declared.filter((name) => !implementations.has(name)).sort();
  const undeclared = [...implementations.keys()].filter((name) => !declared.includes(name))
    .sort();
  if (missing.length > 0 || undeclared.length > 0) {
    const parts: string[] = [];
    if (missing.length > 0) parts.push(`missing implementations: ${missing.join(", ")}`);
    if (undeclared.length > 0) parts.push(`undeclared implementations: ${undeclared.join(", ")}`);
    throw new RangeError(`operation mapping does not match descriptor: ${parts.join("; ")}`);
  }
  for (const operation of descriptor.operations) {
    const implementation = implementations.get(operation.name) as unknown as Record<
      string,
      unknown
    >;
    for (const method of REQUIRED_METHODS[operation.semantics]) {
      if (
        typeof implementation !== "object" && typeof implementation !== "function" ||
        implementation === null || typeof implementation[method] !== "function"
      ) {
        throw new TypeError(
          `operation '${operation.name}' with ${operation.semantics} semantics requires a callable ${method}() method`,
        );
      }
    }
  }
  const instance: unknown = options.endpointInstanceId;
  if (typeof instance !== "string" || isStripBlank(instance)) {
    throw new RangeError(
      optionMessage(CREATE_HANDLER, "endpointInstanceId", "a non-empty string", instance),
    );
  }
  if (hasLoneSurrogate(instance)) {
    throw new RangeError(
      "Cannot create the handler as 'endpointInstanceId' must contain valid Unicode scalar " +
        `values: current value is ${JSON.stringify(instance)}`,
    );
  }
  const logger: unknown = options.logger;
  if (logger !== undefined && typeof logger !== "function") {
    throw new TypeError(optionMessage(CREATE_HANDLER, "logger", "a function", logger));
  }
  const tracer: unknown = options.tracer;
  if (
    tracer !== undefined &&
    (typeof tracer !== "object" || tracer === null ||
      typeof (tracer as ToolTracer).startSpan !== "function")
  ) {
    throw new TypeError(
      optionMessage(CREATE_HANDLER, "tracer", "an object with a startSpan() method", tracer),
    );
  }
  const enforceDeadlines: unknown = options.enforceDeadlines;
  if (enforceDeadlines !== undefined && typeof enforceDeadlines !== "boolean") {
    throw new TypeError(
      optionMessage(CREATE_HANDLER, "enforceDeadlines", "a boolean", enforceDeadlines),
    );
  }
  return {
    descriptor,
    endpointInstanceId: instance,
    implementations,
    maxEarlyEvents,
    maxRetained,
    maxPendingEvents,
    logger: (logger as ToolLogger | undefined) ?? consoleLogger,
    tracer: tracer as ToolTracer | undefined,
    enforceDeadlines: enforceDeadlines ?? true,
    now: options.now ?? Date.now,
  };
}

/** `CloseOptions.graceMs`: 5000 when absent, else a non-negative finite number. */
export function graceOption(value: unknown): number {
  if (value === undefined || value === null) return 5000;
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new RangeError(
      optionMessage("close the handler", "graceMs", "a non-negative finite number", value),
    );
  }
  return value;
}

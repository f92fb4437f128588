/**
 * The public types of the one-function provider definitions: argument and output schema types,
 * what a definition's function receives and returns, the definition options, and
 * {@linkcode ToolOperationDefinition} (the value `defineQuery`, `defineAction` and
 * `defineSession` return).
 *
 * @module
 */
import type { JsonObject } from "../_internal/json.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import type { ToolContext, ToolOperationDescriptor, ToolRequest } from "../endpoint/models.ts";
import type {
  ActionToolEndpoint,
  Awaitable,
  QueryToolEndpoint,
  SessionToolEndpoint,
} from "../endpoint/spi.ts";
import type { InferSchemaOutput, JsonSchema, StandardSchemaV1 } from "./schema.ts";

/** An argument schema: any Standard Schema v1 object, or a JSON Schema of the supported subset. */
export type ArgumentSchema = StandardSchemaV1 | JsonSchema;

/** The arguments type a definition's function receives for the schema `S`. */
export type ArgumentsOf<S> = S extends StandardSchemaV1 ? InferSchemaOutput<S> : JsonObject;

/**
 * The arguments type a caller sends for the schema `S`: the schema's input type (before
 * defaults and transforms), or its validated type when the input type is `unknown` (a
 * `jsonSchema()`).
 */
export type CallArgumentsOf<S> = S extends StandardSchemaV1
  ? unknown extends NonNullable<S["~standard"]["types"]>["input"] ? InferSchemaOutput<S>
  : NonNullable<S["~standard"]["types"]>["input"]
  : JsonObject;

/**
 * What a definition's function returns: the outputs, a JSON object (copied), or nothing for `{}`.
 */
export type ToolOutputs = object | undefined | void;

/**
 * The outputs type of a succeeded result for a function returning `R` (awaited): `R` itself, or
 * an empty object for a function that returns nothing.
 */
export type OutputsOf<R> = [Exclude<Awaited<R>, undefined | void>] extends [never]
  ? Record<string, never>
  : Exclude<Awaited<R>, undefined | void>;

/** What a Query function receives besides its arguments. */
export interface QueryCallContext {
  /**
   * Aborts when the work should end: at the deadline (when the handler enforces deadlines),
   * when the handler closes, and for an Action or Session when a cancel or stop is accepted.
   */
  readonly signal: AbortSignal;
  /** The execution context of the invoke (key, tool, endpoint, deadline, metadata). */
  readonly context: ToolContext;
  /** The request as received (its `arguments` before validation). */
  readonly request: ToolRequest;
}

/** What an Action or Session function receives besides its arguments. */
export interface ExecutionCallContext extends QueryCallContext {
  /**
   * Emits a non-terminal event (terminal events are the helper's). Resolves `true` once the event
   * is buffered or published, `false` when it was refused or could not be published (logged);
   * rejects only for a wrong `type` or non-JSON `data` (a `TypeError`).
   */
  emit(type: "progress" | "heartbeat", data?: object): Promise<boolean>;
  /** `emit("progress", data)`. */
  progress(data?: object): Promise<boolean>;
}

/** The function of a Query definition (`O`: what it returns). */
export type QueryFunction<A, O extends ToolOutputs = ToolOutputs> = (
  args: A,
  call: QueryCallContext,
) => Awaitable<O>;

/** The function of an Action or Session definition (`O`: what it returns). */
export type ExecutionFunction<A, O extends ToolOutputs = ToolOutputs> = (
  args: A,
  call: ExecutionCallContext,
) => Awaitable<O>;

/** Options every definition takes. */
export interface DefinitionOptions<S extends ArgumentSchema> {
  /**
   * What the operation does, for people and agents (the MCP server's tool description). The Wire
   * descriptor has no place for it: it stays on the definition
   * ({@linkcode ToolOperationDefinition.description}).
   *
   * @default {none}
   */
  readonly description?: string;
  /**
   * Validates the invoke's arguments before the function runs.
   *
   * @default {none: any object}
   */
  readonly arguments?: S;
  /**
   * Checks the outputs a function returns (its signal not aborted) before the result is sent: a
   * Standard Schema or a JSON Schema. Outputs it rejects make the result `failed` with
   * `FORGE_ENDPOINT_INVALID_OUTPUTS` (not retryable, a fixed message; the issues are logged,
   * `provider.invalid_outputs`); a validator that throws makes it `failed` with
   * `FORGE_ENDPOINT_INTERNAL`. The outputs are checked, not transformed: the function's return
   * is sent as it is.
   *
   * @default {none: any JSON object}
   */
  readonly outputs?: ArgumentSchema;
  /**
   * How many executions may run at once (`max_concurrency`), a positive integer.
   *
   * @default {1}
   */
  readonly maxConcurrency?: number;
}

/** Options of {@linkcode defineAction}. */
export interface ActionDefinitionOptions<S extends ArgumentSchema> extends DefinitionOptions<S> {
  /**
   * Whether a `cancel` is accepted (it aborts the function's signal); when false it answers
   * `unsupported`.
   *
   * @default {true}
   */
  readonly cancellable?: boolean;
}

/** Options of {@linkcode defineSession}. */
export interface SessionDefinitionOptions<S extends ArgumentSchema> extends DefinitionOptions<S> {
  /**
   * Whether a `stop` is accepted (it aborts the function's signal); when false it answers
   * `unsupported`.
   *
   * @default {true}
   */
  readonly stoppable?: boolean;
}

/** Options of {@linkcode ToolOperationDefinition.implement}. */
export interface ImplementOptions {
  /** The operation's name in its endpoint (for log records). */
  readonly name: string;
  /** The endpoint's id (for log records). */
  readonly endpointId?: string;
  /**
   * Where failures are reported.
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
  /**
   * Finished executions kept for status and result (Action and Session), a positive integer.
   *
   * @default {1024}
   */
  readonly maxRetainedExecutions?: number;
  /**
   * Receives the background work of each Action or Session execution as it starts (the function,
   * then its terminal event); the promise never rejects. The handler's `close()` aborts the
   * functions' signals but does not wait for this work: collect it to wait at shutdown.
   */
  readonly track?: (work: Promise<void>) => void;
}

/**
 * A Query, Action or Session definition: an operation without a name yet. `A` is the arguments
 * type a caller sends and `O` the outputs type of its succeeded result (both type-only,
 * for the typed client of `ToolEndpointClient.for`).
 */
export interface ToolOperationDefinition<
  S extends "query" | "action" | "session" = "query" | "action" | "session",
  A = JsonObject,
  O = JsonObject,
> {
  /** The operation's semantics. */
  readonly semantics: S;
  /** The `description` option, or `undefined` when none was given. */
  readonly description: string | undefined;
  /**
   * The JSON Schema of the arguments, a frozen copy, or `undefined`: the schema of a
   * `jsonSchema()` validator or a plain JSON Schema as given; for another Standard Schema, what
   * its `~standard.jsonSchema.input({ target: "draft-2020-12" })` returns (the Standard JSON
   * Schema extension, implemented by zod ≥ 4.2 for example). `undefined` without `arguments`,
   * for a Standard Schema without that extension (zod 3, and zod 3.25's `zod/v4` schemas, whose
   * JSON Schema only `z.toJSONSchema` gives), and when its converter throws.
   */
  readonly argumentsJsonSchema: JsonObject | undefined;
  /**
   * The JSON Schema of a succeeded result's outputs, read from `outputs` as
   * {@linkcode ToolOperationDefinition.argumentsJsonSchema} is from `arguments` (the schema's
   * input side: outputs are checked, not transformed).
   */
  readonly outputsJsonSchema: JsonObject | undefined;
  /**
   * Type-only, never present at run time: the caller's arguments (`A`) and succeeded outputs (`O`) types,
   * which a typed client reads.
   */
  readonly types?: { readonly arguments: A; readonly outputs: O };
  /** The operation's descriptor under `name`. */
  operationDescriptor(name: string): ToolOperationDescriptor;
  /**
   * A fresh provider of the SPI for this definition (its own executions table), for a handler
   * built by hand; {@linkcode defineEndpoint} calls it for you.
   */
  implement(options: ImplementOptions): S extends "query" ? QueryToolEndpoint
    : S extends "action" ? ActionToolEndpoint
    : SessionToolEndpoint;
}

/** Any operation definition, whatever its argument and output types. */
export type AnyOperationDefinition = ToolOperationDefinition<
  "query" | "action" | "session",
  unknown,
  unknown
>;

/**
 * One-function provider definitions: {@linkcode defineQuery}, {@linkcode defineAction} and
 * {@linkcode defineSession} turn one async function into a provider of the SPI, and
 * {@linkcode defineEndpoint} derives the endpoint descriptor from them and builds the handler.
 *
 * ## What the helpers do
 *
 * - Arguments are validated before the function runs (a Standard Schema or a JSON Schema, see
 *   `arguments`); invalid ones are rejected (`outcome: "rejected"`) with
 *   `FORGE_ENDPOINT_INVALID_ARGUMENTS`, not retryable, `details.issues` listing each issue as
 *   `{ path, message }` (`path` is an array of keys and indexes).
 * - An Action or Session `start()` admits at once (`ToolAccepted`) and runs the function in the
 *   background; the function gets `signal`, `emit(type, data)`, `progress(data)`, the
 *   `ToolContext` and the `ToolRequest`. If the function settles before the handler finished
 *   processing the start, the invoke answers with the terminal result directly (the handler's
 *   rule for a result established during `start()`), followed by the terminal event.
 * - The outcome, once the function settles, follows why its signal aborted, whatever the
 *   function then did (returning what it has, or throwing the abort):
 *
 *   | the function                                                           | result status (phase)                                               |
 *   | ---------------------------------------------------------------------- | ------------------------------------------------------------------- |
 *   | returns outputs, its signal not aborted                                | `succeeded` (`completed`)                                           |
 *   | returns, or throws, after an accepted cancel                           | `cancelled`, with what it returned (`{}` if it throws)              |
 *   | returns, or throws, after an accepted stop                             | `stopped`, with what it returned (`{}` if it throws)                |
 *   | returns, or throws, after the deadline aborted its signal              | `failed`, `FORGE_ENDPOINT_DEADLINE_EXCEEDED`, with what it returned |
 *   | returns, or throws, after a close or an abandoned invoke aborted it    | `unknown`, `FORGE_ENDPOINT_OUTCOME_UNKNOWN`, with what it returned  |
 *   | an Action/Session throws a `ToolEndpointError` (whatever aborted it)   | `failed` with that error                                            |
 *   | throws anything else, or returns a non-JSON-object (not aborted)       | `failed`, `FORGE_ENDPOINT_INTERNAL`                                 |
 *   | returns outputs its declared `outputs` schema rejects (not aborted)    | `failed`, `FORGE_ENDPOINT_INVALID_OUTPUTS`                          |
 *
 *   A Query function that throws a `ToolEndpointError` rejects the invoke with that error
 *   (`outcome: "rejected"`, whatever aborted its signal), exactly as an SPI `query()` throwing
 *   it: a `ToolEndpointError` is the provider's word that nothing was done, and a caller sees the
 *   same answer whichever way the provider is written (a `ToolCallError` of kind
 *   `"rejected"`). An Action or Session function runs after the invoke was accepted, so its
 *   `ToolEndpointError` can only be the `failed` result's error.
 *
 *   The first abort decides: a cancel or stop accepted after the deadline or a close aborted the
 *   signal is answered `accepted` but does not change the outcome. Outputs that are not a JSON
 *   object are dropped (logged, `provider.invalid_outputs`); after a deadline or another abort
 *   the outcome stays that abort's. A Query answers the same results (without the cancel and
 *   stop rows). Every failed or unknown outcome is logged through the {@linkcode ToolLogger} with
 *   the execution key (`provider.failed`, `provider.aborted`); an internal failure's cause is
 *   logged, never sent (its message is a fixed, safe text).
 * - The handler's `close()` aborts the functions' signals but does not wait for them (they are
 *   not provider calls); {@linkcode ToolEndpointDefinition.idle} does.
 * - Then the terminal event (`executor_completed`, `executor_failed`, `cancelled`, `stopped`;
 *   for `unknown`, `executor_failed` with data `{"phase": "unknown", "result": …}`, as the
 *   handler publishes for an outcome it converged itself) is emitted; the result is recorded first, so the handler's terminal
 *   barrier holds. A failure to emit is logged, never thrown into the function.
 *
 * ## Unknown and forgotten executions
 *
 * Each Action and Session operation keeps every running execution and the last
 * `maxRetainedExecutions` finished ones (default 1024, the handler's ledger bound; an endpoint
 * built by {@linkcode defineEndpoint} uses the same value for both). The oldest finished
 * execution is forgotten first. For a key it never saw, or has forgotten, an operation answers:
 * `status` with a `tool.error` `FORGE_ENDPOINT_EXECUTION_NOT_FOUND` (not retryable), `result`
 * with `not_found`, `cancel`/`stop` with `rejected` and the same error. The handler keeps its own
 * copy of every terminal result it observed while its ledger retains the record, so a caller
 * sees `not_found` only after both forgot it; a repeated invoke of a key both forgot runs the
 * function again. A repeated invoke of a key only the handler forgot replays the retained result
 * (the invoke answers with it, followed by its terminal event) without running the function.
 *
 * @module
 */
import { ToolEndpointError, ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import type { JsonObject } from "../_internal/json.ts";
import { optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { consoleLogger, logSafely as report, type ToolLogger } from "../endpoint/log.ts";
import {
  ToolAccepted,
  type ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolError,
  ToolEvent,
  type ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  type ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../endpoint/models.ts";
import type {
  ActionToolEndpoint,
  Awaitable,
  QueryToolEndpoint,
  SessionToolEndpoint,
  ToolCallOptions,
  ToolEndpointImplementation,
  ToolEventEmitter,
} from "../endpoint/spi.ts";
import { TOOL_ENDPOINT_PROTOCOL } from "../endpoint/constants.ts";
import { ToolEndpointHandler, type ToolEndpointHandlerOptions } from "../handler/handler.ts";
import { unknownOutcomeEvent } from "../handler/unknown_event.ts";
import { type Execution, ExecutionTable } from "./_executions.ts";
import {
  type InferSchemaOutput,
  isStandardSchema,
  type JsonSchema,
  jsonSchema,
  type StandardSchemaV1,
  type StandardSchemaV1Issue,
  type StandardSchemaV1Result,
} from "./schema.ts";

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

const RUNNING = new ToolExecutionStatus({ phase: "running" });
const STOPPING = new ToolExecutionStatus({ phase: "stopping" });
const ACCEPTED = new ToolAccepted();
const PENDING = new ToolResultResponse({ status: "pending" });
const NOT_FOUND = new ToolResultResponse({ status: "not_found" });
const NOT_FOUND_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_EXECUTION_NOT_FOUND,
  message: "no execution with this key is known here: it was never started or it was forgotten",
  retryable: false,
});
const INTERNAL_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the provider function failed",
  retryable: false,
});
const INVALID_OUTPUTS_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the provider function returned outputs that are not a JSON object",
  retryable: false,
});
const OUTPUTS_VALIDATOR_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the outputs validator failed",
  retryable: false,
});
const VALIDATOR_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_INTERNAL,
  message: "the argument validator failed",
  retryable: false,
});
const DEADLINE_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_DEADLINE_EXCEEDED,
  message: "deadline_ms passed before the provider function finished",
  retryable: false,
});
const ABORTED_ERROR = new ToolError({
  code: ToolErrorCodes.ENDPOINT_OUTCOME_UNKNOWN,
  message: "the execution was aborted (handler closed or invoke abandoned) before it finished",
  retryable: false,
});
const TERMINAL_EVENT: Readonly<
  Record<
    Exclude<ToolResult["status"], "unknown">,
    "executor_completed" | "executor_failed" | "cancelled" | "stopped"
  >
> = {
  succeeded: "executor_completed",
  failed: "executor_failed",
  cancelled: "cancelled",
  stopped: "stopped",
};
/** Issues listed in `details.issues` at most (the message gives the total). */
const MAX_LISTED_ISSUES = 100;

function optionError(what: string, option: string, requirement: string, value: unknown): TypeError {
  return new TypeError(optionMessage(what, option, requirement, value));
}

function booleanOption(value: unknown, fallback: boolean, what: string, option: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== "boolean") throw optionError(what, option, "a boolean", value);
  return value;
}

function keyFields(context: ToolContext) {
  return {
    endpointId: context.endpointId,
    operation: context.operation,
    invocationId: context.executionKey.invocationId,
    attemptId: context.executionKey.attemptId,
  };
}

function issuePath(issue: StandardSchemaV1Issue): (string | number)[] {
  const path: (string | number)[] = [];
  for (const segment of issue.path ?? []) {
    const key = typeof segment === "object" && segment !== null ? segment.key : segment;
    path.push(typeof key === "number" ? key : String(key));
  }
  return path;
}

function invalidArguments(issues: ReadonlyArray<StandardSchemaV1Issue>): ToolEndpointError {
  const count = issues.length === 1 ? "1 issue" : `${issues.length} issues`;
  try {
    const listed = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => ({
      path: issuePath(issue),
      message: String(issue.message),
    }));
    const first = listed[0];
    const where = first === undefined || first.path.length === 0 ? "" : `${first.path.join(".")}: `;
    return new ToolEndpointError(
      new ToolError({
        code: ToolErrorCodes.ENDPOINT_INVALID_ARGUMENTS,
        message: `arguments are invalid (${count}): ${where}${first?.message ?? "rejected"}`,
        retryable: false,
        details: { issues: listed },
      }),
    );
  } catch {
    // An issue that is not representable as JSON text (a lone surrogate, a throwing toString)
    // still rejects the arguments, without the list.
    return new ToolEndpointError(
      new ToolError({
        code: ToolErrorCodes.ENDPOINT_INVALID_ARGUMENTS,
        message: `arguments are invalid (${count})`,
        retryable: false,
      }),
    );
  }
}

/**
 * The validation step of one definition: the validated arguments, synchronously when the schema
 * answers synchronously. Throws a `ToolEndpointError` (rejected before execution).
 */
type Validate<A> = (
  request: ToolRequest,
  context: ToolContext,
  logger: ToolLogger,
) => A | Promise<A>;

function validatorOf<A>(schema: ArgumentSchema | undefined, what: string): Validate<A> {
  if (schema === undefined) return (request) => request.arguments as A;
  let standard: StandardSchemaV1;
  if (isStandardSchema(schema)) standard = schema;
  else if (typeof schema === "object" && schema !== null) standard = jsonSchema(schema);
  else {
    throw optionError(what, "arguments", "a Standard Schema or a JSON Schema", schema);
  }
  const validate = standard["~standard"].validate;
  const failed = (context: ToolContext, logger: ToolLogger, error: unknown): never => {
    report(logger, {
      level: "error",
      event: "arguments.validator_failed",
      message: "the argument validator threw",
      ...keyFields(context),
      error,
    });
    throw new ToolEndpointError(VALIDATOR_ERROR);
  };
  const settle = (result: StandardSchemaV1Result<unknown>): A => {
    if (typeof result !== "object" || result === null) {
      throw new TypeError(`a Standard Schema validate() returned ${String(result)}`);
    }
    if (result.issues === undefined) return result.value as A;
    if (!Array.isArray(result.issues)) {
      throw new TypeError("a Standard Schema validate() returned issues that are not an array");
    }
    throw invalidArguments(result.issues);
  };
  const checked = (context: ToolContext, logger: ToolLogger, result: unknown): A => {
    try {
      return settle(result as StandardSchemaV1Result<unknown>);
    } catch (error) {
      if (error instanceof ToolEndpointError) throw error;
      return failed(context, logger, error);
    }
  };
  return (request, context, logger) => {
    let result: ReturnType<typeof validate>;
    try {
      result = validate(request.arguments);
    } catch (error) {
      return failed(context, logger, error);
    }
    if (result instanceof Promise) {
      return result.then(
        (value) => checked(context, logger, value),
        (error) => failed(context, logger, error),
      );
    }
    return checked(context, logger, result);
  };
}

/** Checks returned outputs: the error to fail with, or `undefined` when they are valid. */
type CheckOutputs = (
  value: unknown,
  context: ToolContext,
  logger: ToolLogger,
) => Promise<ToolError | undefined>;

function outputsCheckOf(schema: unknown, what: string): CheckOutputs | undefined {
  if (schema === undefined) return undefined;
  let standard: StandardSchemaV1;
  if (isStandardSchema(schema)) standard = schema;
  else if (typeof schema === "object" && schema !== null) {
    standard = jsonSchema(schema as JsonSchema);
  } else {
    throw optionError(what, "outputs", "a Standard Schema or a JSON Schema", schema);
  }
  const validate = standard["~standard"].validate;
  return async (value, context, logger) => {
    let issues: ReadonlyArray<StandardSchemaV1Issue>;
    try {
      const result = await validate(value ?? {});
      if (typeof result !== "object" || result === null) {
        throw new TypeError(`a Standard Schema validate() returned ${String(result)}`);
      }
      if (result.issues === undefined) return undefined;
      if (!Array.isArray(result.issues)) {
        throw new TypeError("a Standard Schema validate() returned issues that are not an array");
      }
      issues = result.issues;
    } catch (error) {
      report(logger, {
        level: "error",
        event: "outputs.validator_failed",
        message: "the outputs validator threw",
        ...keyFields(context),
        error,
      });
      return OUTPUTS_VALIDATOR_ERROR;
    }
    const count = issues.length === 1 ? "1 issue" : `${issues.length} issues`;
    const error = new ToolError({
      code: ToolErrorCodes.ENDPOINT_INVALID_OUTPUTS,
      message: `the provider function returned outputs its outputs schema rejects (${count})`,
      retryable: false,
    });
    let listed: string;
    try {
      listed = issues.slice(0, MAX_LISTED_ISSUES).map((issue) => {
        const path = issuePath(issue);
        return `${path.length === 0 ? "" : `${path.join(".")}: `}${String(issue.message)}`;
      }).join("; ");
    } catch {
      listed = "(issues not representable as text)";
    }
    report(logger, {
      level: "error",
      event: "provider.invalid_outputs",
      message: `${error.code}: ${error.message}: ${listed}`,
      ...keyFields(context),
    });
    return error;
  };
}

function isAbort(error: unknown, signal: AbortSignal): boolean {
  return error === signal.reason ||
    (error instanceof DOMException && error.name === "AbortError");
}

/** Why a function's signal aborted, which decides its outcome (see the module documentation). */
type AbortCause = "stop" | "deadline" | "aborted" | undefined;

function abortCause(
  signal: AbortSignal,
  stopStatus: "cancelled" | "stopped" | undefined,
): AbortCause {
  if (!signal.aborted) return undefined;
  if (stopStatus !== undefined) return "stop";
  return isTimeout(signal.reason) ? "deadline" : "aborted";
}

/**
 * The terminal result of a settled function (see the module documentation's table), logging
 * every failed or unknown outcome with the execution key. The outcome follows why the signal
 * aborted, whatever the function then did: returning after the deadline or after a close is not
 * a success.
 */
function outcomeOf(
  fulfilled: boolean,
  value: unknown,
  stopStatus: "cancelled" | "stopped" | undefined,
  signal: AbortSignal,
  context: ToolContext,
  logger: ToolLogger,
): ToolResult {
  const cause = abortCause(signal, stopStatus);
  if (fulfilled) {
    let outputs: ToolResult["outputs"] | undefined;
    try {
      outputs = new ToolResult({
        status: "succeeded",
        outputs: (value ?? undefined) as object | undefined,
      }).outputs;
    } catch (error) {
      report(logger, {
        level: "error",
        event: "provider.invalid_outputs",
        message: INVALID_OUTPUTS_ERROR.message,
        ...keyFields(context),
        error,
      });
      // Outputs that are no JSON object are dropped; an abort still decides the outcome.
      if (cause === undefined || cause === "stop") {
        return new ToolResult({ status: "failed", error: INVALID_OUTPUTS_ERROR });
      }
    }
    if (cause === undefined) return new ToolResult({ status: "succeeded", outputs });
    if (cause === "stop") return new ToolResult({ status: stopStatus!, outputs });
    return aborted(cause, outputs, undefined, context, logger);
  }
  if (value instanceof ToolEndpointError) {
    // The function's own word: a failure it reports explicitly, whatever aborted its signal.
    report(logger, {
      level: "info",
      event: "provider.failed",
      message: `${value.error.code}: ${value.error.message}`,
      ...keyFields(context),
      error: value,
    });
    return new ToolResult({ status: "failed", error: value.error });
  }
  if (cause === "stop") {
    if (!isAbort(value, signal)) {
      report(logger, {
        level: "warn",
        event: "provider.failed",
        message: `the function threw after an accepted ${
          stopStatus === "cancelled" ? "cancel" : "stop"
        }: the outcome is ${stopStatus}`,
        ...keyFields(context),
        error: value,
      });
    }
    return new ToolResult({ status: stopStatus! });
  }
  if (cause !== undefined) return aborted(cause, undefined, value, context, logger);
  report(logger, {
    level: "error",
    event: "provider.failed",
    message: `${INTERNAL_ERROR.code}: ${INTERNAL_ERROR.message}`,
    ...keyFields(context),
    error: value,
  });
  return new ToolResult({ status: "failed", error: INTERNAL_ERROR });
}

/**
 * The outcome of a function whose signal the deadline (`failed`, deadline exceeded) or a close or
 * abandon (`unknown`) aborted, with the outputs it returned, logged with the execution key
 * (`provider.failed` and `provider.aborted`, as when it throws).
 */
function aborted(
  cause: "deadline" | "aborted",
  outputs: ToolResult["outputs"] | undefined,
  thrown: unknown,
  context: ToolContext,
  logger: ToolLogger,
): ToolResult {
  const error = cause === "deadline" ? DEADLINE_ERROR : ABORTED_ERROR;
  const returned = outputs === undefined ? "" : " (it returned; its outputs are kept)";
  report(logger, {
    level: "warn",
    event: cause === "deadline" ? "provider.failed" : "provider.aborted",
    message: `${error.code}: ${error.message}${returned}`,
    ...keyFields(context),
    ...(thrown === undefined ? {} : { error: thrown }),
  });
  return cause === "deadline"
    ? new ToolResult({ status: "failed", error, outputs })
    : new ToolResult({ status: "unknown", error, outputs });
}

function isTimeout(reason: unknown): boolean {
  return reason instanceof DOMException && reason.name === "TimeoutError";
}

function statusOf(result: ToolResult): ToolExecutionStatus {
  switch (result.status) {
    case "succeeded":
      return new ToolExecutionStatus({ phase: "completed" });
    case "failed":
    case "unknown":
      return new ToolExecutionStatus({ phase: result.status, error: result.error! });
    default:
      return new ToolExecutionStatus({ phase: result.status });
  }
}

/** The context object an Action or Session function receives. */
class ExecutionCall implements ExecutionCallContext {
  readonly signal: AbortSignal;
  readonly context: ToolContext;
  readonly request: ToolRequest;
  readonly #events: ToolEventEmitter;
  readonly #execution: Execution;
  readonly #logger: ToolLogger;

  constructor(
    execution: Execution,
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    logger: ToolLogger,
  ) {
    this.signal = execution.controller.signal;
    this.context = context;
    this.request = request;
    this.#events = events;
    this.#execution = execution;
    this.#logger = logger;
  }

  // Arrow-function fields: the function may destructure `{ emit, progress }` from its context.
  readonly emit = (type: "progress" | "heartbeat", data?: object): Promise<boolean> => {
    if (type !== "progress" && type !== "heartbeat") {
      return Promise.reject(
        optionError("emit an event", "type", '"progress" or "heartbeat"', type),
      );
    }
    let event: ToolEvent;
    try {
      event = new ToolEvent({ type, data });
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#execution.result !== undefined) {
      report(this.#logger, {
        level: "warn",
        event: "event.late",
        message: `a ${type} event was emitted after the execution finished; it was dropped`,
        ...keyFields(this.context),
      });
      return Promise.resolve(false);
    }
    return this.#publish(event);
  };

  readonly progress = (data?: object): Promise<boolean> => this.emit("progress", data);

  async #publish(event: ToolEvent): Promise<boolean> {
    try {
      await this.#events.emit(event);
      return true;
    } catch (error) {
      report(this.#logger, {
        level: "warn",
        event: "event.refused",
        message: `a ${event.type} event could not be published`,
        ...keyFields(this.context),
        error,
      });
      return false;
    }
  }

  /**
   * Emits the terminal event of the recorded result: for `unknown`, the `executor_failed` event
   * the handler itself publishes for an unknown outcome (data `{"phase": "unknown", ...}`), so a
   * closing handler sees the execution end without waiting out its grace. When the handler ended
   * the execution first (an abandoned invoke, a grace already over), it refuses the event and
   * has published (or suppressed) the terminal event itself: nothing to report.
   */
  async terminal(result: ToolResult): Promise<void> {
    const unknown = result.status === "unknown";
    const event = unknown
      ? unknownOutcomeEvent(result)
      : new ToolEvent({ type: TERMINAL_EVENT[result.status] });
    const type = event.type;
    try {
      await this.#events.emit(event);
    } catch (error) {
      if (
        unknown && error instanceof ToolProtocolError &&
        error.code === ToolErrorCodes.ENDPOINT_EVENT_AFTER_TERMINAL
      ) return;
      report(this.#logger, {
        level: "warn",
        event: "event.terminal_refused",
        message: `the terminal ${type} event could not be published`,
        ...keyFields(this.context),
        error,
      });
    }
  }
}

interface Settings {
  readonly semantics: "query" | "action" | "session";
  readonly maxConcurrency: number;
  readonly controllable: boolean;
}

function settingsOf(
  semantics: "query" | "action" | "session",
  options: Record<string, unknown>,
): Settings {
  const label = defining(semantics);
  const control = semantics === "action" ? "cancellable" : "stoppable";
  return {
    semantics,
    maxConcurrency: positiveIntegerOption(label, "maxConcurrency", options.maxConcurrency, 1),
    controllable: semantics === "query"
      ? false
      : booleanOption(options[control], true, label, control),
  };
}

/** "define a query", "define an action", "define a session": the subject of option errors. */
function defining(semantics: "query" | "action" | "session"): string {
  return `define ${semantics === "action" ? "an" : "a"} ${semantics}`;
}

function checkRun(run: unknown, semantics: "query" | "action" | "session"): void {
  if (typeof run !== "function") {
    throw optionError(defining(semantics), "run", "a function", run);
  }
}

function descriptorFor(settings: Settings, name: string): ToolOperationDescriptor {
  return new ToolOperationDescriptor({
    name,
    semantics: settings.semantics,
    cancellable: settings.semantics === "action" && settings.controllable,
    stoppable: settings.semantics === "session" && settings.controllable,
    statusSupported: settings.semantics !== "query",
    maxConcurrency: settings.maxConcurrency,
  });
}

function implementOptions(options: ImplementOptions) {
  if (typeof options !== "object" || options === null) {
    throw optionError("implement an operation", "options", "an object", options);
  }
  if (typeof options.name !== "string" || options.name === "") {
    throw optionError("implement an operation", "name", "a non-empty string", options.name);
  }
  const logger = options.logger ?? consoleLogger;
  if (typeof logger !== "function") {
    throw optionError("implement an operation", "logger", "a function", logger);
  }
  const track = options.track;
  if (track !== undefined && typeof track !== "function") {
    throw optionError("implement an operation", "track", "a function", track);
  }
  return {
    logger,
    track,
    maxRetained: positiveIntegerOption(
      "implement an operation",
      "maxRetainedExecutions",
      options.maxRetainedExecutions,
      1024,
    ),
  };
}

/** The Query provider of a definition. */
function implementQuery<A>(
  run: QueryFunction<A>,
  validate: Validate<A>,
  checkOutputs: CheckOutputs | undefined,
  options: ImplementOptions,
): QueryToolEndpoint {
  const { logger } = implementOptions(options);
  const execute = async (
    args: A,
    request: ToolRequest,
    context: ToolContext,
    signal: AbortSignal,
  ): Promise<ToolResult> => {
    let fulfilled = true;
    let value: unknown;
    try {
      value = await run(args, { signal, context, request });
    } catch (error) {
      // The provider's rejection, answered `rejected` as for an SPI query() (module doc).
      if (error instanceof ToolEndpointError) throw error;
      fulfilled = false;
      value = error;
    }
    if (fulfilled && checkOutputs !== undefined && !signal.aborted) {
      const error = await checkOutputs(value, context, logger);
      if (error !== undefined) return new ToolResult({ status: "failed", error });
    }
    return outcomeOf(fulfilled, value, undefined, signal, context, logger);
  };
  return {
    query(request, context, { signal }) {
      const args = validate(request, context, logger);
      if (args instanceof Promise) {
        return args.then((valid) => execute(valid, request, context, signal));
      }
      return execute(args, request, context, signal);
    },
  };
}

/** The Action or Session provider of a definition. */
function implementExecution<A>(
  settings: Settings,
  run: ExecutionFunction<A>,
  validate: Validate<A>,
  checkOutputs: CheckOutputs | undefined,
  options: ImplementOptions,
): ActionToolEndpoint & SessionToolEndpoint {
  const { logger, maxRetained, track } = implementOptions(options);
  const table = new ExecutionTable(maxRetained);
  const command = settings.semantics === "action" ? "cancel" : "stop";
  const stopStatus = settings.semantics === "action" ? "cancelled" : "stopped";
  const answers = {
    accepted: new ToolControlResponse({ command, status: "accepted" }),
    terminal: new ToolControlResponse({ command, status: "terminal" }),
    unsupported: new ToolControlResponse({ command, status: "unsupported" }),
    notFound: new ToolControlResponse({ command, status: "rejected", error: NOT_FOUND_ERROR }),
  };

  const begin = (
    args: A,
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    outer: AbortSignal,
  ): ToolAccepted | Promise<ToolAccepted> => {
    const keyId = context.executionKey.id;
    const existing = table.get(keyId);
    if (existing?.result !== undefined) {
      // The handler forgot this finished execution and this table did not: replay its result.
      // The terminal event is established before start() returns, so the invoke answers with
      // the result itself (the handler's rule for a result established during start()).
      return new ExecutionCall(existing, request, context, events, logger)
        .terminal(existing.result).then(() => ACCEPTED);
    }
    if (existing !== undefined) {
      throw new ToolEndpointError(
        new ToolError({
          code: ToolErrorCodes.EXECUTION_CONFLICT,
          message: "an execution with this key is already running here",
          retryable: false,
        }),
      );
    }
    const execution: Execution = {
      key: context.executionKey,
      controller: new AbortController(),
      status: RUNNING,
      result: undefined,
      response: undefined,
      stopRequested: false,
    };
    table.add(keyId, execution);
    const controller = execution.controller;
    const forward = () => controller.abort(outer.reason);
    if (outer.aborted) forward();
    else outer.addEventListener("abort", forward, { once: true });
    const call = new ExecutionCall(execution, request, context, events, logger);
    const finish = (fulfilled: boolean, value: unknown): Promise<void> => {
      outer.removeEventListener("abort", forward);
      const result = outcomeOf(
        fulfilled,
        value,
        execution.stopRequested ? stopStatus : undefined,
        controller.signal,
        context,
        logger,
      );
      // The result first: the terminal event's barrier asks result() for it.
      execution.result = result;
      execution.response = new ToolResultResponse({ status: "available", result });
      execution.status = statusOf(result);
      table.finish(keyId);
      return call.terminal(result);
    };
    let running: Promise<ToolOutputs>;
    try {
      running = Promise.resolve(run(args, call));
    } catch (error) {
      running = Promise.reject(error);
    }
    if (checkOutputs !== undefined) {
      // Only with an outputs schema: a rejected check fails the execution with its error.
      running = running.then(async (value) => {
        if (controller.signal.aborted) return value;
        const error = await checkOutputs(value, context, logger);
        if (error !== undefined) throw new ToolEndpointError(error);
        return value;
      });
    }
    const work = running
      .then((value) => finish(true, value), (error) => finish(false, error))
      .catch((error) =>
        report(logger, {
          level: "error",
          event: "provider.internal",
          message: "recording the outcome of an execution failed",
          ...keyFields(context),
          error,
        })
      );
    track?.(work);
    return ACCEPTED;
  };

  const control = (key: ToolExecutionKey, reason: string | undefined): ToolControlResponse => {
    const execution = table.get(key.id);
    if (execution === undefined) return answers.notFound;
    if (execution.result !== undefined) return answers.terminal;
    if (!settings.controllable) return answers.unsupported;
    // A signal the deadline or a close already aborted keeps that cause: the command is accepted
    // (the work is ending) but the outcome follows why the signal aborted first.
    if (!execution.stopRequested && !execution.controller.signal.aborted) {
      execution.stopRequested = true;
      execution.status = STOPPING;
      execution.controller.abort(
        new DOMException(reason ?? `a ${command} control was accepted`, "AbortError"),
      );
    }
    return answers.accepted;
  };

  return {
    start(request, context, events, { signal }: ToolCallOptions) {
      const args = validate(request, context, logger);
      if (args instanceof Promise) {
        return args.then((valid) => begin(valid, request, context, events, signal));
      }
      return begin(args, request, context, events, signal);
    },
    cancel: (key, reason) => control(key, reason),
    stop: (key, reason) => control(key, reason),
    status(key) {
      const execution = table.get(key.id);
      if (execution === undefined) throw new ToolEndpointError(NOT_FOUND_ERROR);
      return execution.status;
    },
    result(key) {
      const execution = table.get(key.id);
      if (execution === undefined) return NOT_FOUND;
      return execution.response ?? PENDING;
    },
  };
}

function makeDefinition<S extends "query" | "action" | "session">(
  settings: Settings,
  implement: (options: ImplementOptions) => ToolEndpointImplementation,
): ToolOperationDefinition<S> {
  return Object.freeze({
    semantics: settings.semantics as S,
    operationDescriptor: (name: string) => descriptorFor(settings, name),
    implement: implement as ToolOperationDefinition<S>["implement"],
  });
}

/** Splits the `(options, run)` and `(run)` call forms. */
function splitArgs(
  first: unknown,
  second: unknown,
): [Record<string, unknown>, unknown] {
  if (second === undefined && typeof first === "function") return [{}, first];
  if (typeof first !== "object" || first === null) return [{}, second ?? first];
  return [first as Record<string, unknown>, second];
}

/**
 * Defines a Query operation from one function: it receives the validated arguments and
 * `{ signal, context, request }` and returns the outputs. The result statuses are those of the
 * module documentation.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { defineQuery, jsonSchema } from "@forge/tool";
 * const detect = defineQuery(
 *   { arguments: jsonSchema<{ class: string }>({ type: "object", required: ["class"] }) },
 *   (args) => ({ objects: [args.class] }),
 * );
 * assertEquals(detect.operationDescriptor("detect").semantics, "query");
 * ```
 */
export function defineQuery<O extends ToolOutputs>(
  run: QueryFunction<JsonObject, O>,
): ToolOperationDefinition<"query", JsonObject, OutputsOf<O>>;
/** Defines a Query operation with options (an argument schema, `maxConcurrency`). */
export function defineQuery<
  S extends ArgumentSchema = JsonSchema,
  O extends ToolOutputs = ToolOutputs,
>(
  options: DefinitionOptions<S>,
  run: QueryFunction<ArgumentsOf<S>, O>,
): ToolOperationDefinition<"query", CallArgumentsOf<S>, OutputsOf<O>>;
export function defineQuery(first: unknown, second?: unknown): ToolOperationDefinition<"query"> {
  const [options, run] = splitArgs(first, second);
  checkRun(run, "query");
  const settings = settingsOf("query", options);
  const validate = validatorOf<unknown>(
    options.arguments as ArgumentSchema | undefined,
    "define a query",
  );
  const checkOutputs = outputsCheckOf(options.outputs, "define a query");
  return makeDefinition(
    settings,
    (implement) => implementQuery(run as QueryFunction<unknown>, validate, checkOutputs, implement),
  );
}

/**
 * Defines an Action operation from one function: it receives the validated arguments and
 * `{ signal, emit, progress, context, request }` and returns the outputs. `start()` admits at
 * once; an accepted `cancel` aborts `signal`, and what the function then returns (or `{}` if it
 * throws the abort) becomes the `cancelled` result.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { defineAction } from "@forge/tool";
 * const move = defineAction({ maxConcurrency: 2 }, async (args, { progress }) => {
 *   await progress({ fraction: 0.5 });
 *   return { reached: args.target ?? null };
 * });
 * assertEquals(move.operationDescriptor("move").cancellable, true);
 * ```
 */
export function defineAction<O extends ToolOutputs>(
  run: ExecutionFunction<JsonObject, O>,
): ToolOperationDefinition<"action", JsonObject, OutputsOf<O>>;
/** Defines an Action operation with options (an argument schema, `maxConcurrency`, `cancellable`). */
export function defineAction<
  S extends ArgumentSchema = JsonSchema,
  O extends ToolOutputs = ToolOutputs,
>(
  options: ActionDefinitionOptions<S>,
  run: ExecutionFunction<ArgumentsOf<S>, O>,
): ToolOperationDefinition<"action", CallArgumentsOf<S>, OutputsOf<O>>;
export function defineAction(first: unknown, second?: unknown): ToolOperationDefinition<"action"> {
  return defineExecution("action", first, second);
}

/**
 * Defines a Session operation from one function: it receives the validated arguments and
 * `{ signal, emit, progress, context, request }`, runs until its work ends or `signal` aborts,
 * and returns the outputs. An accepted `stop` aborts `signal`, and what the function then
 * returns (or `{}` if it throws the abort) becomes the `stopped` result.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { defineSession } from "@forge/tool";
 * const follow = defineSession(async (_args, { signal }) => {
 *   await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
 *   return { followed: true };
 * });
 * assertEquals(follow.operationDescriptor("follow").stoppable, true);
 * ```
 */
export function defineSession<O extends ToolOutputs>(
  run: ExecutionFunction<JsonObject, O>,
): ToolOperationDefinition<"session", JsonObject, OutputsOf<O>>;
/** Defines a Session operation with options (an argument schema, `maxConcurrency`, `stoppable`). */
export function defineSession<
  S extends ArgumentSchema = JsonSchema,
  O extends ToolOutputs = ToolOutputs,
>(
  options: SessionDefinitionOptions<S>,
  run: ExecutionFunction<ArgumentsOf<S>, O>,
): ToolOperationDefinition<"session", CallArgumentsOf<S>, OutputsOf<O>>;
export function defineSession(
  first: unknown,
  second?: unknown,
): ToolOperationDefinition<"session"> {
  return defineExecution("session", first, second);
}

function defineExecution<S extends "action" | "session">(
  semantics: S,
  first: unknown,
  second: unknown,
): ToolOperationDefinition<S> {
  const [options, run] = splitArgs(first, second);
  checkRun(run, semantics);
  const settings = settingsOf(semantics, options);
  const validate = validatorOf<unknown>(
    options.arguments as ArgumentSchema | undefined,
    defining(semantics),
  );
  const checkOutputs = outputsCheckOf(options.outputs, defining(semantics));
  return makeDefinition(
    settings,
    (implement) =>
      implementExecution(
        settings,
        run as ExecutionFunction<unknown>,
        validate,
        checkOutputs,
        implement,
      ),
  );
}

/** Any operation definition, whatever its argument and output types. */
export type AnyOperationDefinition = ToolOperationDefinition<
  "query" | "action" | "session",
  unknown,
  unknown
>;

/** Options of {@linkcode defineEndpoint} (`Ops`: the operations' record type). */
export interface EndpointDefinitionOptions<
  Ops extends Readonly<Record<string, AnyOperationDefinition>> = Readonly<
    Record<string, AnyOperationDefinition>
  >,
> {
  /** The logical endpoint id. */
  readonly endpointId: string;
  /** The operations by name, in descriptor order. */
  readonly operations: Ops;
  /**
   * Where provider failures are reported, by the providers and by the handler
   * {@linkcode ToolEndpointDefinition.createHandler} builds (unless it is given its own `logger`),
   * and so by a binding, node or lifecycle serving that handler.
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
  /**
   * The handler's ledger bound, and the finished executions each Action and Session operation
   * keeps (a positive integer).
   *
   * @default {1024}
   */
  readonly maxRetainedExecutions?: number;
  /**
   * Whether the handlers {@linkcode ToolEndpointDefinition.createHandler} builds enforce
   * `deadline_ms` (unless given their own `enforceDeadlines`): an invoke past its deadline is
   * rejected before the function runs, and the function's signal aborts at the deadline (its
   * outcome is then `failed` with `FORGE_ENDPOINT_DEADLINE_EXCEEDED`). This differs from the
   * reference, which validates `deadline_ms` but does not enforce it; `false` restores that.
   *
   * @default {true}
   */
  readonly enforceDeadlines?: boolean;
}

/** The handler options {@linkcode ToolEndpointDefinition.createHandler} takes. */
export type DefinedHandlerOptions = Omit<
  ToolEndpointHandlerOptions,
  "operations" | "maxRetainedExecutions"
>;

/**
 * An endpoint built from definitions: its descriptor, its providers, and a handler factory.
 * `Ops` is the operations' record type (names, semantics, argument and output types), which
 * `ToolEndpointClient.for` turns into a typed client.
 */
export interface ToolEndpointDefinition<
  Ops extends Readonly<Record<string, AnyOperationDefinition>> = Readonly<
    Record<string, AnyOperationDefinition>
  >,
> {
  /** Type-only, never present at run time: the operation definitions' record type. */
  readonly definitions?: Ops;
  /** The descriptor derived from the definitions (protocol `forge.tool.endpoint/v1alpha1`). */
  readonly descriptor: ToolEndpointDescriptor;
  /** One SPI provider per operation, for `ToolEndpointHandlerOptions.operations`. */
  readonly operations: Readonly<Record<string, ToolEndpointImplementation>>;
  /**
   * A handler serving these providers, with the definition's `maxRetainedExecutions` (and its
   * `logger` and `enforceDeadlines` unless `options` give their own).
   */
  createHandler(options: DefinedHandlerOptions): ToolEndpointHandler;
  /**
   * Resolves once every Action and Session function started so far has settled and its terminal
   * event was emitted or refused. `handler.close()` aborts their signals without waiting for them:
   * await `idle()` after it for a complete shutdown.
   */
  idle(): Promise<void>;
}

/**
 * Builds an endpoint from named definitions: the descriptor (each operation's name written once,
 * as its key), a provider per operation, and `createHandler()`. Call `createHandler` once per
 * handler: the providers' executions tables belong to this endpoint definition.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { defineAction, defineEndpoint, defineQuery } from "@forge/tool";
 * const endpoint = defineEndpoint({
 *   endpointId: "arm",
 *   operations: {
 *     pose: defineQuery(() => ({ x: 0 })),
 *     move: defineAction(() => ({ reached: true })),
 *   },
 * });
 * assertEquals(endpoint.descriptor.operations.map((o) => o.name), ["pose", "move"]);
 * const handler = endpoint.createHandler({ endpointInstanceId: "arm-1" });
 * assertEquals(handler.state.maxRetainedExecutions, 1024);
 * ```
 */
export function defineEndpoint<Ops extends Readonly<Record<string, AnyOperationDefinition>>>(
  options: EndpointDefinitionOptions<Ops>,
): ToolEndpointDefinition<Ops> {
  const what = "define an endpoint";
  if (typeof options !== "object" || options === null) {
    throw optionError(what, "options", "an object", options);
  }
  const definitions: unknown = options.operations;
  if (typeof definitions !== "object" || definitions === null || Array.isArray(definitions)) {
    throw optionError(what, "operations", "an object of definitions", definitions);
  }
  const maxRetained = positiveIntegerOption(
    what,
    "maxRetainedExecutions",
    options.maxRetainedExecutions,
    1024,
  );
  const enforceDeadlines = booleanOption(
    options.enforceDeadlines,
    true,
    what,
    "enforceDeadlines",
  );
  const logger = options.logger ?? consoleLogger;
  const running = new Set<Promise<void>>();
  const track = (work: Promise<void>) => {
    running.add(work);
    work.then(() => running.delete(work));
  };
  const descriptors: ToolOperationDescriptor[] = [];
  const operations: Record<string, ToolEndpointImplementation> = {};
  for (const [name, definition] of Object.entries(definitions)) {
    const candidate = definition as Partial<ToolOperationDefinition> | null;
    if (
      typeof candidate !== "object" || candidate === null ||
      typeof candidate.implement !== "function" ||
      typeof candidate.operationDescriptor !== "function"
    ) {
      throw optionError(
        what,
        `operations.${name}`,
        "a definition from defineQuery, defineAction or defineSession",
        definition,
      );
    }
    descriptors.push(candidate.operationDescriptor(name));
    operations[name] = candidate.implement({
      name,
      endpointId: options.endpointId,
      logger,
      maxRetainedExecutions: maxRetained,
      track,
    });
  }
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: options.endpointId,
    operations: descriptors,
  });
  Object.freeze(operations);
  return Object.freeze({
    descriptor,
    operations,
    async idle(): Promise<void> {
      while (running.size > 0) await Promise.all([...running]);
    },
    createHandler(handlerOptions: DefinedHandlerOptions): ToolEndpointHandler {
      return new ToolEndpointHandler(descriptor, {
        ...handlerOptions,
        // One logger for the providers and the handler, unless the handler is given its own.
        logger: handlerOptions?.logger ?? logger,
        enforceDeadlines: handlerOptions?.enforceDeadlines ?? enforceDeadlines,
        operations,
        maxRetainedExecutions: maxRetained,
      });
    },
  });
}

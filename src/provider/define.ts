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
import type { JsonObject } from "../_internal/json.ts";
import type { ToolEndpointImplementation } from "../endpoint/spi.ts";
import { implementExecution } from "./_implement_execution.ts";
import { implementQuery } from "./_implement_query.ts";
import { jsonSchemaOf } from "./_json_schema.ts";
import { checkRun, defining, descriptorFor, type Settings, settingsOf } from "./_settings.ts";
import { outputsCheckOf, validatorOf } from "./_validate.ts";
import type { JsonSchema } from "./schema.ts";
import type {
  ActionDefinitionOptions,
  ArgumentSchema,
  ArgumentsOf,
  CallArgumentsOf,
  DefinitionOptions,
  ExecutionFunction,
  ImplementOptions,
  OutputsOf,
  QueryFunction,
  SessionDefinitionOptions,
  ToolOperationDefinition,
  ToolOutputs,
} from "./types.ts";

function makeDefinition<S extends "query" | "action" | "session">(
  settings: Settings,
  options: Record<string, unknown>,
  implement: (options: ImplementOptions) => ToolEndpointImplementation,
): ToolOperationDefinition<S> {
  return Object.freeze({
    semantics: settings.semantics as S,
    description: settings.description,
    argumentsJsonSchema: jsonSchemaOf(options.arguments),
    outputsJsonSchema: jsonSchemaOf(options.outputs),
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
    options,
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
    options,
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

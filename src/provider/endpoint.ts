/**
 * {@linkcode defineEndpoint}: an endpoint built from named definitions (the descriptor, one SPI
 * provider per operation, a handler factory and `idle()`), and the
 * {@linkcode ToolEndpointDefinition} a typed client reads. The outcome of each operation's
 * function follows the table of `defineQuery`, `defineAction` and `defineSession`.
 *
 * @module
 */
import { positiveIntegerOption } from "../_internal/options.ts";
import { TOOL_ENDPOINT_PROTOCOL } from "../endpoint/constants.ts";
import { consoleLogger, type ToolLogger } from "../endpoint/log.ts";
import { ToolEndpointDescriptor, type ToolOperationDescriptor } from "../endpoint/models.ts";
import type { ToolEndpointImplementation } from "../endpoint/spi.ts";
import { ToolEndpointHandler, type ToolEndpointHandlerOptions } from "../handler/handler.ts";
import { booleanOption, optionError } from "./_validate.ts";
import type { AnyOperationDefinition, ToolOperationDefinition } from "./types.ts";

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
  /**
   * The operation definitions by name, as given to {@linkcode defineEndpoint} (a frozen record in
   * descriptor order): what each one knows beyond the Wire descriptor, read-only (its
   * `semantics`, `description`, `argumentsJsonSchema` and `outputsJsonSchema`). The MCP server's
   * `definitions` option reads it; a typed client reads its type.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { defineEndpoint, defineQuery, jsonSchema } from "@forge/tool";
   * const endpoint = defineEndpoint({
   *   endpointId: "arm",
   *   operations: {
   *     pose: defineQuery({
   *       description: "The arm's pose.",
   *       arguments: jsonSchema({ type: "object", properties: { frame: { type: "string" } } }),
   *       outputs: { type: "object", required: ["x"] },
   *     }, () => ({ x: 0 })),
   *   },
   * });
   * const pose = endpoint.definitions.pose;
   * assertEquals(pose.semantics, "query");
   * assertEquals(pose.description, "The arm's pose.");
   * assertEquals(pose.argumentsJsonSchema, {
   *   type: "object",
   *   properties: { frame: { type: "string" } },
   * });
   * assertEquals(pose.outputsJsonSchema, { type: "object", required: ["x"] });
   * ```
   */
  readonly definitions: Ops;
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
    definitions: Object.freeze({ ...definitions }) as Ops,
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

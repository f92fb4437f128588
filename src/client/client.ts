// Kept whole: the facade, one public class (constructor, query, invoke, close and their requests).
/**
 * The caller side of the ToolEndpoint Wire: {@linkcode ToolEndpointClient} sends correlated
 * requests over a {@linkcode ToolClientTransport} and returns results, invocation handles and
 * ordered event streams. The facade: it builds invoke requests and hands exchanges to the
 * exchange table (`_exchanges.ts`) and invocations to their handles (`_invocation.ts`).
 *
 * @module
 */
import {
  ToolAccepted,
  ToolContext,
  ToolEndpointDescriptor,
  ToolExecutionKey,
  ToolRequest,
  ToolResult,
} from "../endpoint/models.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeInvokeRequestEnvelope } from "../wire/factories.ts";
import { type InvokeResponse, invokeResponseFromPayload } from "../wire/execution_payloads.ts";
import { optionMessage } from "../_internal/options.ts";
import { ToolCallError, ToolClientError, ToolClientErrorCodes } from "./errors.ts";
import type { ToolClientTransport } from "./transport.ts";
import type { ToolEndpointDefinition } from "../provider/endpoint.ts";
import { type Config, configOf, optionalString, semanticsOf, timeoutOf } from "./_config.ts";
import { ExchangeTable } from "./_exchanges.ts";
import { type ClientCore, Invocation } from "./_invocation.ts";
import {
  abortReason,
  type Answer,
  answerOf,
  contextOf,
  resolveFailure,
  unwrap,
  wrongSemantics,
} from "./_failure.ts";
import type {
  ToolClientCallOptions,
  ToolEndpointClientOptions,
  ToolEndpointClientStats,
} from "./options.ts";
import type { ToolInvocation } from "./invocation.ts";
import type {
  ToolOperations,
  TypedToolEndpointClient,
  TypedToolEndpointClientOptions,
} from "./typed.ts";

export type { ToolEventRecord } from "./_events.ts";
export type {
  ToolClientCallOptions,
  ToolEndpointClientOptions,
  ToolEndpointClientStats,
} from "./options.ts";
export type { ToolInvocation } from "./invocation.ts";
export type {
  InvokeOperationName,
  OperationArguments,
  OperationOutputs,
  QueryOperationName,
  ToolOperations,
  TypedCallArguments,
  TypedToolEndpointClient,
  TypedToolEndpointClientOptions,
  TypedToolInvocation,
  TypedToolResult,
} from "./typed.ts";

/**
 * The caller side of one ToolEndpoint: Query calls, Action and Session invocations with event
 * streams, status, result and control, over any {@linkcode ToolClientTransport}.
 *
 * Every response is checked against its request with {@linkcode validateResponseCorrelation};
 * responses that answer no pending exchange (late, duplicate, forged, for another instance) are
 * dropped and counted in {@linkcode ToolEndpointClient.stats}, never handed to another call.
 *
 * Lost messages: status, result and control requests without an answer in `timeoutMs` are
 * re-sent with the same request id, up to `maxAttempts` sends, then fail with a
 * {@linkcode ToolClientError} `FORGE_CLIENT_TIMEOUT` naming the exchange. An invoke is not
 * re-sent (a duplicate delivery may execute again, PROTOCOL 5.2) unless the call sets
 * `resendInvoke`: an unanswered Query fails with outcome `"unknown"`; for an unanswered Action or
 * Session invoke the client asks the result of the execution key to learn whether it was
 * admitted. `ToolError.retryable` never triggers a retry by itself.
 *
 * Bounds: `maxPendingExchanges` exchanges wait at once, `maxOpenInvocations` invocations are
 * routed at once, and each buffers at most `maxBufferedEvents` events (the oldest are dropped
 * when its reader falls behind).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   InProcessToolClientTransport,
 *   ToolEndpointClient,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * const descriptor = new ToolEndpointDescriptor({
 *   protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *   endpointId: "math",
 *   operations: [new ToolOperationDescriptor({ name: "add", semantics: "query" })],
 * });
 * const handler = new ToolEndpointHandler(descriptor, {
 *   endpointInstanceId: "math-1",
 *   operations: {
 *     add: {
 *       query: (request) =>
 *         new ToolResult({
 *           status: "succeeded",
 *           outputs: { sum: Number(request.arguments.a) + Number(request.arguments.b) },
 *         }),
 *     },
 *   },
 * });
 * const client = new ToolEndpointClient({
 *   transport: new InProcessToolClientTransport(handler),
 *   endpointId: "math",
 *   descriptor,
 * });
 * const result = await client.query("add", { a: 2, b: 3 });
 * assertEquals(result.outputs, { sum: 5 });
 * await client.close();
 * ```
 */
export class ToolEndpointClient {
  readonly #transport: ToolClientTransport;
  readonly #config: Config;
  readonly #invocations = new Map<string, Invocation>();
  /** Open invocations already settled, whose streams wait one reorder window for late events. */
  readonly #lingering = new Set<Invocation>();
  readonly #exchanges: ExchangeTable;
  readonly #background = new Set<Promise<void>>();
  #closing: Promise<void> | undefined;

  /**
   * Checks the options and connects to the transport. Option errors name the option and show
   * the value received.
   */
  constructor(options: ToolEndpointClientOptions) {
    this.#config = configOf(options);
    this.#transport = options.transport;
    const exchanges = new ExchangeTable(this.#transport, this.#config, this.#invocations);
    this.#exchanges = exchanges;
    this.#transport.connect((message) => exchanges.receive(message));
  }

  /**
   * A client of the endpoint `definition` describes (what `defineEndpoint` returns): its
   * `endpointId` and `descriptor` come from the definition, and the returned view checks
   * operation names, argument types and output types at compile time. At run time it is a plain
   * `ToolEndpointClient`.
   *
   * @example
   * ```ts
   * import { assertEquals } from "@std/assert";
   * import { defineEndpoint, defineQuery, InProcessToolClientTransport, ToolEndpointClient } from "@forge/tool";
   * const math = defineEndpoint({
   *   endpointId: "math",
   *   operations: { double: defineQuery((args) => ({ twice: Number(args.n) * 2 })) },
   * });
   * const handler = math.createHandler({ endpointInstanceId: "math-1" });
   * const client = ToolEndpointClient.for(math, {
   *   transport: new InProcessToolClientTransport(handler),
   * });
   * const result = await client.query("double", { n: 4 });
   * assertEquals(result.status, "succeeded");
   * if (result.status === "succeeded") assertEquals(result.outputs.twice, 8);
   * await client.close();
   * await handler.close();
   * ```
   */
  static for<Ops extends ToolOperations>(
    definition: ToolEndpointDefinition<Ops>,
    options: TypedToolEndpointClientOptions,
  ): TypedToolEndpointClient<Ops> {
    const descriptor: unknown = (definition as { descriptor?: unknown } | null)?.descriptor;
    if (!(descriptor instanceof ToolEndpointDescriptor)) {
      throw new TypeError(
        optionMessage(
          "create a ToolEndpointClient",
          "definition",
          "an endpoint definition from defineEndpoint",
          definition,
        ),
      );
    }
    return new ToolEndpointClient({
      ...options,
      endpointId: descriptor.endpointId,
      descriptor,
    }) as TypedToolEndpointClient<Ops>;
  }

  /** The endpoint this client calls. */
  get endpointId(): string {
    return this.#config.endpointId;
  }

  /** A snapshot of the client's counters. */
  get stats(): ToolEndpointClientStats {
    return this.#exchanges.stats(this.#invocations.size);
  }

  /**
   * Calls a Query operation and resolves to its {@linkcode ToolResult} (any terminal status,
   * `unknown` included). A rejected invoke or a `tool.error` rejects with a
   * {@linkcode ToolCallError}; no answer in `timeoutMs` rejects with a {@linkcode ToolClientError}
   * `FORGE_CLIENT_TIMEOUT` of outcome `"unknown"` (the query may have run). An answer that
   * accepted the call as an Action or Session (possible without a descriptor) is never left
   * running: the client sends `cancel` (or `stop`) at once, waits for its answer, then rejects
   * with `FORGE_CLIENT_UNEXPECTED_RESPONSE` naming the execution key and what the control got.
   */
  async query(
    operation: string,
    args: object = {},
    options: ToolClientCallOptions = {},
  ): Promise<ToolResult> {
    const semantics = semanticsOf(this.#config, operation, options, "query");
    if (semantics !== undefined && semantics !== "query") {
      throw wrongSemantics(operation, this.#config.endpointId, semantics, "invoke()");
    }
    const timeoutMs = timeoutOf(this.#config, options, "query");
    const { envelope, context } = await this.#invokeRequest(operation, args, options, "query");
    const response = await this.#invokeExchange(envelope, options, timeoutMs);
    const outcome = unwrap(response, contextOf("invoke", envelope));
    if (outcome instanceof ToolResult) return outcome;
    if (outcome instanceof ToolAccepted) {
      throw await this.#endUnexpectedAcceptance(operation, envelope, context, options, timeoutMs);
    }
    throw new ToolCallError(outcome, "rejected", contextOf("invoke", envelope));
  }

  /**
   * A `query()` was answered with an acceptance (no descriptor told the operation is an Action or
   * Session): nobody holds a handle to the admitted execution, so it is ended at once (`cancel`,
   * then `stop` when unsupported) and the answer waited for; the error says what was done.
   */
  async #endUnexpectedAcceptance(
    operation: string,
    envelope: ToolEnvelope,
    context: ToolContext,
    options: ToolClientCallOptions,
    timeoutMs: number,
  ): Promise<ToolClientError> {
    const invocation = new Invocation(
      this.#core,
      context,
      envelope,
      options.semantics,
      undefined,
      timeoutMs,
    );
    const key = `invocation_id=${context.invocationId} attempt_id=${context.attemptId}`;
    const init = {
      code: ToolClientErrorCodes.UNEXPECTED_RESPONSE,
      exchange: "invoke",
      invocationId: context.invocationId,
      attemptId: context.attemptId,
      attempts: 1,
    } as const;
    try {
      const answer = await invocation.terminate(
        "the caller used query() on an Action or Session; the client ends it",
      );
      return new ToolClientError(
        `operation '${operation}' was accepted as an Action or Session (${key}); the client ` +
          `sent ${answer.command} at once, answered ${answer.status}; use invoke()`,
        init,
      );
    } catch (error) {
      return new ToolClientError(
        `operation '${operation}' was accepted as an Action or Session (${key}); ending it ` +
          `failed, it may still run; use invoke()`,
        { ...init, cause: error },
      );
    } finally {
      invocation.release(undefined);
    }
  }

  /**
   * Invokes an Action or Session operation and resolves, once the endpoint answered, to its
   * {@linkcode ToolInvocation} handle. A rejected invoke or a `tool.error` rejects with a
   * {@linkcode ToolCallError}. When the invoke gets no answer, the client asks the result of the
   * execution key: `pending` or `available` yield the handle (the execution was admitted), and
   * `not_found` rejects with `FORGE_CLIENT_TIMEOUT` of outcome `"not_admitted"`.
   */
  async invoke(
    operation: string,
    args: object = {},
    options: ToolClientCallOptions = {},
  ): Promise<ToolInvocation> {
    const declared = semanticsOf(this.#config, operation, options, "invoke");
    if (declared === "query") {
      throw wrongSemantics(operation, this.#config.endpointId, declared, "query()");
    }
    const timeoutMs = timeoutOf(this.#config, options, "invoke");
    const { envelope, context } = await this.#invokeRequest(operation, args, options, "invoke");
    if (this.#invocations.has(context.executionKey.id)) {
      throw new RangeError(
        `Cannot invoke as the execution key is already open: current value is ` +
          `'${context.invocationId}'/'${context.attemptId}'`,
      );
    }
    // Invocations whose result is known and whose stream only waits for events in transit give
    // way first.
    for (const settled of this.#lingering) {
      if (this.#invocations.size < this.#config.maxOpenInvocations) break;
      settled.endStream();
    }
    if (this.#invocations.size >= this.#config.maxOpenInvocations) {
      throw new ToolClientError(
        `${this.#invocations.size} invocations are open ('maxOpenInvocations')`,
        {
          code: ToolClientErrorCodes.OVERLOADED,
          exchange: "invoke",
          invocationId: context.invocationId,
          attemptId: context.attemptId,
          outcome: "not_sent",
        },
      );
    }
    const invocation = new Invocation(
      this.#core,
      context,
      envelope,
      declared,
      options.signal,
      timeoutMs,
    );
    this.#invocations.set(context.executionKey.id, invocation);
    let answer: Answer<InvokeResponse>;
    try {
      answer = await this.#invokeExchange(envelope, options, timeoutMs);
    } catch (error) {
      if (
        error instanceof ToolClientError && error.code === ToolClientErrorCodes.TIMEOUT &&
        !options.signal?.aborted
      ) {
        return await invocation.recoverAdmission(error);
      }
      if (options.signal?.aborted) invocation.abortUnanswered(abortReason(options.signal));
      else invocation.release(error);
      throw error;
    }
    if ("error" in answer) {
      invocation.release(undefined);
      throw new ToolCallError(answer.error, "error", contextOf("invoke", envelope));
    }
    const outcome = answer.ok;
    if (!(outcome instanceof ToolAccepted) && !(outcome instanceof ToolResult)) {
      invocation.release(undefined);
      throw new ToolCallError(outcome, "rejected", contextOf("invoke", envelope));
    }
    invocation.accept(outcome);
    return invocation;
  }

  /**
   * Closes the client: pending exchanges reject with `FORGE_CLIENT_CLOSED`, open invocations end
   * their waits, and the transport is closed.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  async #close(): Promise<void> {
    // The cancel or stop an abort sent is let finish (each is bounded by its exchange's
    // attempts); new calls are refused meanwhile.
    while (this.#background.size > 0) await Promise.allSettled(Array.from(this.#background));
    this.#exchanges.close();
    for (const invocation of Array.from(this.#invocations.values())) {
      invocation.release(
        new ToolClientError("the client was closed", {
          code: ToolClientErrorCodes.CLOSED,
          invocationId: invocation.key.invocationId,
          attemptId: invocation.key.attemptId,
        }),
      );
    }
    await this.#transport.close?.();
  }

  /** `close()`, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // -------------------------------------------------------------------------------------------

  /** What invocations use of the client. */
  readonly #core: ClientCore = {
    config: () => this.#config,
    exchange: (spec) => this.#exchanges.exchange(spec),
    forget: (invocation) => {
      this.#lingering.delete(invocation);
      if (this.#invocations.get(invocation.key.id) === invocation) {
        this.#invocations.delete(invocation.key.id);
      }
    },
    linger: (invocation) => {
      if (this.#invocations.get(invocation.key.id) === invocation) {
        this.#lingering.add(invocation);
      }
    },
    track: (work) => {
      this.#background.add(work);
      work.then(() => this.#background.delete(work));
    },
  };

  async #invokeRequest(
    operation: string,
    args: object,
    options: ToolClientCallOptions,
    action: string,
  ): Promise<{ envelope: ToolEnvelope; context: ToolContext }> {
    if (this.#closing !== undefined) {
      throw new ToolClientError("the client was closed", {
        code: ToolClientErrorCodes.CLOSED,
        outcome: "not_sent",
      });
    }
    // An aborted call sends nothing (and so never has anything to cancel).
    if (options.signal?.aborted) throw abortReason(options.signal);
    const config = this.#config;
    const context = new ToolContext({
      executionKey: new ToolExecutionKey({
        invocationId: optionalString(options.invocationId, "invocationId", action) ??
          config.generateId(),
        attemptId: optionalString(options.attemptId, "attemptId", action) ?? config.generateId(),
      }),
      toolId: optionalString(options.toolId, "toolId", action) ?? config.toolId,
      implementationId: optionalString(options.implementationId, "implementationId", action) ??
        config.implementationId,
      endpointId: config.endpointId,
      operation,
      callerId: optionalString(options.callerId, "callerId", action) ?? config.callerId,
      deadlineMs: options.deadlineMs,
      metadata: options.metadata,
    });
    const request = new ToolRequest({ arguments: args });
    const requestId = optionalString(options.requestId, "requestId", action) ??
      config.generateId();
    let endpointInstanceId: string | Promise<string> | undefined;
    const notSent = {
      exchange: "invoke",
      invocationId: context.invocationId,
      attemptId: context.attemptId,
      outcome: "not_sent",
    } as const;
    try {
      endpointInstanceId = config.endpointInstanceId ??
        this.#transport.resolveInstance?.(config.endpointId);
      if (typeof endpointInstanceId === "object") endpointInstanceId = await endpointInstanceId;
    } catch (error) {
      // A gateway without an instance for the endpoint: nothing was sent.
      throw resolveFailure(error, notSent, config.endpointId);
    }
    if (options.signal?.aborted) throw abortReason(options.signal);
    const envelope = makeInvokeRequestEnvelope(request, context, {
      requestId,
      endpointInstanceId,
    });
    return { envelope, context };
  }

  /** The invoke exchange of a Query or an Action/Session start (resent only on request). */
  #invokeExchange(
    envelope: ToolEnvelope,
    options: ToolClientCallOptions,
    timeoutMs: number,
  ): Promise<Answer<InvokeResponse>> {
    return this.#exchanges.exchange({
      name: "invoke",
      request: envelope,
      parse: (message) => answerOf(message, invokeResponseFromPayload),
      maxAttempts: options.resendInvoke === true ? this.#config.maxAttempts : 1,
      timeoutMs,
      signal: options.signal,
      timeoutOutcome: "unknown",
      deadlineMs: options.deadlineMs,
    });
  }
}

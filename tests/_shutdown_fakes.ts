// Providers of the shutdown suites (not a test file itself): Actions and Sessions that keep
// running after acceptance and either end when their signal aborts or ignore it.
import {
  ToolAccepted,
  type ToolCallOptions,
  ToolContext,
  ToolControlResponse,
  type ToolEndpointDescriptor,
  ToolEndpointHandler,
  type ToolEndpointHandlerOptions,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../mod.ts";
import {
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
} from "../wire.ts";
import { cellDescriptor, silentLogger } from "./_helpers.ts";

/**
 * What a running execution does when its signal aborts:
 * - `"end"`: after `endDelayMs`, it retains a `cancelled` (Action) / `stopped` (Session) result
 *   and emits the matching terminal event;
 * - `"ignore"`: nothing; it runs on until the handler gives up on it.
 */
export type OnAbort = "end" | "ignore";

/** One execution as the provider sees it. */
export interface Running {
  readonly context: ToolContext;
  readonly events: ToolEventEmitter;
  readonly signal: AbortSignal;
  /** The emit of its terminal event, once started. */
  ending?: Promise<void>;
}

/** An Action or Session provider whose executions run until their signal aborts (or forever). */
export class LongRunning {
  readonly executions = new Map<string, Running>();
  readonly results = new Map<string, ToolResult>();
  readonly #semantics: "action" | "session";
  readonly #onAbort: OnAbort;
  readonly #endDelayMs: number;
  readonly #acceptedDetails: Record<string, unknown>;
  readonly #earlyEvents: number;

  constructor(
    semantics: "action" | "session",
    onAbort: OnAbort,
    options: {
      /** How long after the abort the execution ends (`"end"`; default 10 ms). */
      endDelayMs?: number;
      /** The details of every acceptance (default `{}`). */
      acceptedDetails?: Record<string, unknown>;
      /** `progress` events emitted during start(), before the acceptance (default 0). */
      earlyEvents?: number;
    } = {},
  ) {
    this.#semantics = semantics;
    this.#onAbort = onAbort;
    this.#endDelayMs = options.endDelayMs ?? 10;
    this.#acceptedDetails = options.acceptedDetails ?? {};
    this.#earlyEvents = options.earlyEvents ?? 0;
  }

  async start(
    _request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    { signal }: ToolCallOptions,
  ): Promise<ToolAccepted> {
    for (let step = 0; step < this.#earlyEvents; step++) {
      await events.emit(new ToolEvent({ type: "progress", data: { step } }));
    }
    const running: Running = { context, events, signal };
    this.executions.set(context.executionKey.id, running);
    if (this.#onAbort === "end") {
      signal.addEventListener("abort", () => {
        setTimeout(() => {
          const ended = this.#semantics === "action" ? "cancelled" : "stopped";
          this.results.set(context.executionKey.id, new ToolResult({ status: ended }));
          running.ending = events.emit(new ToolEvent({ type: ended }));
          running.ending.catch(() => {});
        }, this.#endDelayMs);
      }, { once: true });
    }
    return new ToolAccepted({ details: this.#acceptedDetails });
  }

  cancel(): ToolControlResponse {
    return new ToolControlResponse({ command: "cancel", status: "accepted" });
  }

  stop(): ToolControlResponse {
    return new ToolControlResponse({ command: "stop", status: "accepted" });
  }

  status(key: ToolExecutionKey): ToolExecutionStatus {
    const result = this.results.get(key.id);
    if (result === undefined) return new ToolExecutionStatus({ phase: "running" });
    return new ToolExecutionStatus({
      phase: result.status === "cancelled" ? "cancelled" : "stopped",
    });
  }

  result(key: ToolExecutionKey): ToolResultResponse | Promise<ToolResultResponse> {
    const result = this.results.get(key.id);
    return result === undefined
      ? new ToolResultResponse({ status: "pending" })
      : new ToolResultResponse({ status: "available", result });
  }
}

/** The endpoint of the shutdown suites: "robot" with move/action and serve/session. */
export function robotDescriptor(maxConcurrency = 4): ToolEndpointDescriptor {
  return cellDescriptor({ endpointId: "robot", query: null, maxConcurrency });
}

/** A handler for {@linkcode robotDescriptor} with both providers. */
export function robotHandler(
  move: LongRunning,
  serve: LongRunning,
  extras: Partial<Omit<ToolEndpointHandlerOptions, "operations">> = {},
): ToolEndpointHandler {
  return new ToolEndpointHandler(robotDescriptor(), {
    endpointInstanceId: "instance-1",
    logger: silentLogger,
    ...extras,
    operations: { move, serve },
  });
}

/** The invoke, status and result requests of one execution of the robot endpoint. */
export function requests(operation: string, invocationId: string) {
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: "forge.tool.robot",
    implementationId: "robot",
    endpointId: "robot",
    operation,
  });
  const headers = (requestId: string) => ({ requestId, endpointInstanceId: "instance-1" });
  return {
    invoke: (requestId = `invoke-${invocationId}`) =>
      makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, headers(requestId)),
    status: () => makeStatusRequestEnvelope(context, headers(`status-${invocationId}`)),
    result: () => makeResultRequestEnvelope(context, headers(`result-${invocationId}`)),
  };
}

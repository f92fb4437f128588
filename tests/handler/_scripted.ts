// The scripted provider of the handler lifecycle and Query suites (not a test file itself): every
// method counts its calls and runs a replaceable script, and robot.cell hosts one per semantics.
import {
  type ActionToolEndpoint,
  type QueryToolEndpoint,
  type SessionToolEndpoint,
  ToolAccepted,
  type ToolCallOptions,
  type ToolContext,
  ToolControlResponse,
  ToolEndpointHandler,
  type ToolEventEmitter,
  type ToolExecutionKey,
  ToolExecutionStatus,
  type ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import { cellDescriptor, silentLogger } from "../_helpers.ts";
import { type HandlerExtras, INSTANCE, type Target, withoutUnhandledRejections } from "./_fakes.ts";

/** A test that also fails when any promise rejection went unhandled. */
export function test(name: string, fn: () => Promise<void>): void {
  Deno.test(name, () => withoutUnhandledRejections(fn));
}

export const COMPLETED = new ToolExecutionStatus({ phase: "completed" });
export const RUNNING = new ToolExecutionStatus({ phase: "running" });
export const PENDING = new ToolResultResponse({ status: "pending" });

export function succeeded(outputs: Record<string, unknown> = {}): ToolResult {
  return new ToolResult({ status: "succeeded", outputs });
}

export function available(result: ToolResult): ToolResultResponse {
  return new ToolResultResponse({ status: "available", result });
}

// ---------------------------------------------------------------------------------------------
// A scripted provider: every method counts its calls and runs a replaceable script, which may
// return a value or a promise, throw, or reject.

export type Script<A extends unknown[]> = ((...args: A) => unknown) | undefined;

export class Scripted {
  readonly calls = { query: 0, start: 0, cancel: 0, stop: 0, status: 0, result: 0 };
  readonly signals: AbortSignal[] = [];
  readonly emitters: ToolEventEmitter[] = [];
  onQuery: Script<[ToolRequest, ToolContext, ToolCallOptions]>;
  onStart: Script<[ToolRequest, ToolContext, ToolEventEmitter, ToolCallOptions]>;
  onControl: Script<[ToolExecutionKey, string | undefined, ToolCallOptions]>;
  onStatus: Script<[ToolExecutionKey, ToolCallOptions]>;
  onResult: Script<[ToolExecutionKey, ToolCallOptions]>;
  /** Keys the provider considers finished (status completed, result available). */
  readonly done = new Set<string>();

  query(request: ToolRequest, context: ToolContext, options: ToolCallOptions) {
    this.calls.query++;
    this.signals.push(options.signal);
    return this.onQuery ? this.onQuery(request, context, options) : succeeded({ ok: true });
  }

  start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    options: ToolCallOptions,
  ) {
    this.calls.start++;
    this.signals.push(options.signal);
    this.emitters.push(events);
    return this.onStart ? this.onStart(request, context, events, options) : new ToolAccepted();
  }

  cancel(key: ToolExecutionKey, reason: string | undefined, options: ToolCallOptions) {
    this.calls.cancel++;
    return this.onControl
      ? this.onControl(key, reason, options)
      : new ToolControlResponse({ command: "cancel", status: "accepted" });
  }

  stop(key: ToolExecutionKey, reason: string | undefined, options: ToolCallOptions) {
    this.calls.stop++;
    return this.onControl
      ? this.onControl(key, reason, options)
      : new ToolControlResponse({ command: "stop", status: "accepted" });
  }

  status(key: ToolExecutionKey, options: ToolCallOptions) {
    this.calls.status++;
    if (this.onStatus) return this.onStatus(key, options);
    return this.done.has(key.id) ? COMPLETED : RUNNING;
  }

  result(key: ToolExecutionKey, options: ToolCallOptions) {
    this.calls.result++;
    if (this.onResult) return this.onResult(key, options);
    return this.done.has(key.id) ? available(succeeded({ key: key.invocationId })) : PENDING;
  }
}

// ---------------------------------------------------------------------------------------------
// A mixed endpoint: robot.cell with detect (query), move (action) and serve (session).

export const CQ: Target = {
  endpointId: "robot.cell",
  operation: "detect",
  arguments: { class: "cube" },
};
export const CA: Target = {
  endpointId: "robot.cell",
  operation: "move",
  arguments: { target: "home" },
};
export const CS: Target = { endpointId: "robot.cell", operation: "serve", arguments: {} };

export interface CellOptions extends HandlerExtras {
  readonly maxConcurrency?: number;
}

export function cell(
  providers: { query?: Scripted; action?: Scripted; session?: Scripted },
  options: CellOptions = {},
): ToolEndpointHandler {
  const { maxConcurrency = 1, ...extras } = options;
  const descriptor = cellDescriptor({ maxConcurrency });
  return new ToolEndpointHandler(descriptor, {
    endpointInstanceId: INSTANCE,
    logger: silentLogger,
    ...extras,
    // Scripted returns `unknown` on purpose: it also plays providers that break the SPI.
    operations: {
      detect: (providers.query ?? new Scripted()) as unknown as QueryToolEndpoint,
      move: (providers.action ?? new Scripted()) as unknown as ActionToolEndpoint,
      serve: (providers.session ?? new Scripted()) as unknown as SessionToolEndpoint,
    },
  });
}

/** How a provider method fails: a synchronous throw or an asynchronous rejection. */
export const THROW_KINDS = [
  ["synchronous throw", (error: Error) => () => {
    throw error;
  }],
  ["asynchronous rejection", (error: Error) => () => Promise.reject(error)],
] as const;

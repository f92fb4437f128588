// Shared endpoint of the client suites (not a test file itself): a Query `echo`, a cancellable
// Action `move` that reports progress, and a stoppable Session `watch` that beats, all served
// by the real ToolEndpointHandler.
import {
  ToolAccepted,
  type ToolCallOptions,
  type ToolContext,
  ToolControlResponse,
  ToolEndpointError,
  ToolEndpointHandler,
  ToolError,
  ToolEvent,
  type ToolEventEmitter,
  type ToolExecutionKey,
  ToolExecutionStatus,
  type ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import { cellDescriptor, silentLogger } from "../_helpers.ts";

export const ENDPOINT = "robot.arm";
export const INSTANCE = "arm-1";

export const DESCRIPTOR = cellDescriptor({
  endpointId: ENDPOINT,
  query: "echo",
  queryConcurrency: 64,
  session: "watch",
  maxConcurrency: 10_000,
});

/** The structured rejection `echo` answers for `{ reject: true }`. */
export const BUSY = new ToolError({
  code: "FORGE_ENDPOINT_BUSY",
  message: "the arm is busy",
  retryable: true,
  details: { queue: 3 },
});

interface Execution {
  status: ToolExecutionStatus;
  result: ToolResult | undefined;
}

function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Runs `steps` steps of `stepMs`, emitting progress; ends `ended` when the signal aborts. */
class Stepper {
  readonly executions = new Map<string, Execution>();
  readonly calls = { start: 0, control: 0, status: 0, result: 0 };
  readonly #ended: "cancelled" | "stopped";
  readonly #beat: "progress" | "heartbeat";

  constructor(ended: "cancelled" | "stopped", beat: "progress" | "heartbeat") {
    this.#ended = ended;
    this.#beat = beat;
  }

  start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    options: ToolCallOptions,
  ): ToolAccepted {
    this.calls.start++;
    if (request.arguments.reject === true) throw new ToolEndpointError(BUSY);
    const steps = Number(request.arguments.steps ?? 3);
    const stepMs = Number(request.arguments.stepMs ?? 1);
    const execution: Execution = {
      status: new ToolExecutionStatus({ phase: "running" }),
      result: undefined,
    };
    this.executions.set(context.executionKey.id, execution);
    // Bounded like a real provider's table: the oldest executions are forgotten.
    if (this.executions.size > 1024) {
      this.executions.delete(this.executions.keys().next().value!);
    }
    void this.#run(execution, steps, stepMs, events, options.signal);
    return new ToolAccepted({ details: { steps } });
  }

  async #run(
    execution: Execution,
    steps: number,
    stepMs: number,
    events: ToolEventEmitter,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      for (let step = 1; step <= steps; step++) {
        if (!await wait(stepMs, signal)) {
          execution.result = new ToolResult({ status: this.#ended });
          execution.status = new ToolExecutionStatus({ phase: this.#ended });
          await events.emit(new ToolEvent({ type: this.#ended }));
          return;
        }
        await events.emit(new ToolEvent({ type: this.#beat, data: { step } }));
      }
      execution.result = new ToolResult({ status: "succeeded", outputs: { steps } });
      execution.status = new ToolExecutionStatus({ phase: "completed" });
      await events.emit(new ToolEvent({ type: "executor_completed" }));
    } catch {
      // The handler closed or the event could not be published: the result stays readable.
    }
  }

  #control(key: ToolExecutionKey, command: "cancel" | "stop"): ToolControlResponse {
    this.calls.control++;
    const execution = this.executions.get(key.id);
    if (execution === undefined) {
      throw new ToolEndpointError(new ToolError({ code: "NOT_FOUND", message: "no execution" }));
    }
    if (execution.result !== undefined) {
      return new ToolControlResponse({ command, status: "terminal" });
    }
    return new ToolControlResponse({ command, status: "accepted" });
  }

  cancel(key: ToolExecutionKey): ToolControlResponse {
    return this.#control(key, "cancel");
  }

  stop(key: ToolExecutionKey): ToolControlResponse {
    return this.#control(key, "stop");
  }

  status(key: ToolExecutionKey): ToolExecutionStatus {
    this.calls.status++;
    const execution = this.executions.get(key.id);
    if (execution === undefined) {
      throw new ToolEndpointError(new ToolError({ code: "NOT_FOUND", message: "no execution" }));
    }
    return execution.status;
  }

  result(key: ToolExecutionKey): ToolResultResponse {
    this.calls.result++;
    const execution = this.executions.get(key.id);
    if (execution === undefined) return new ToolResultResponse({ status: "not_found" });
    if (execution.result === undefined) return new ToolResultResponse({ status: "pending" });
    return new ToolResultResponse({ status: "available", result: execution.result });
  }
}

/** The providers and the handler serving them. */
export interface ArmEndpoint {
  readonly handler: ToolEndpointHandler;
  readonly move: Stepper;
  readonly watch: Stepper;
  readonly echoCalls: { count: number; contexts: ToolContext[] };
}

/** A fresh handler over fresh providers. */
export function armEndpoint(options: { maxRetainedExecutions?: number } = {}): ArmEndpoint {
  const move = new Stepper("cancelled", "progress");
  const watch = new Stepper("stopped", "heartbeat");
  const echoCalls = { count: 0, contexts: [] as ToolContext[] };
  const handler = new ToolEndpointHandler(DESCRIPTOR, {
    endpointInstanceId: INSTANCE,
    logger: silentLogger,
    maxRetainedExecutions: options.maxRetainedExecutions ?? 16_384,
    operations: {
      echo: {
        query: async (request, context) => {
          echoCalls.count++;
          // The first 16 contexts are kept for inspection; a soak must not grow the fixture.
          if (echoCalls.contexts.length < 16) echoCalls.contexts.push(context);
          if (request.arguments.reject === true) throw new ToolEndpointError(BUSY);
          const delayMs = Number(request.arguments.delayMs ?? 0);
          if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
          return new ToolResult({ status: "succeeded", outputs: { echo: request.arguments } });
        },
      },
      move,
      watch,
    },
  });
  return { handler, move, watch, echoCalls };
}

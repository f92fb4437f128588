/**
 * An example endpoint: a detector Query, an arm Action with progress events and cancel, and a
 * policy Session with heartbeats and stop. Used by the demo and the examples test.
 *
 * @module
 */
import {
  type ActionToolEndpoint,
  type QueryToolEndpoint,
  type SessionToolEndpoint,
  TOOL_ENDPOINT_PROTOCOL,
  ToolAccepted,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolEvent,
  type ToolEventEmitter,
  type ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolResult,
  ToolResultResponse,
} from "../mod.ts";

/** The example endpoint's descriptor. */
export const demoDescriptor: ToolEndpointDescriptor = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: "robot.demo",
  operations: [
    new ToolOperationDescriptor({ name: "detect", semantics: "query", maxConcurrency: 4 }),
    new ToolOperationDescriptor({
      name: "move",
      semantics: "action",
      cancellable: true,
      statusSupported: true,
    }),
    new ToolOperationDescriptor({
      name: "policy",
      semantics: "session",
      stoppable: true,
      statusSupported: true,
    }),
  ],
});

/** A detector that "sees" the classes it is asked for. */
const detector: QueryToolEndpoint = {
  query(request) {
    const classes = request.arguments.classes;
    const objects = Array.isArray(classes)
      ? classes.map((name, i) => ({ class: name, score: 0.9 - i * 0.1, box: [10 * i, 20, 32, 32] }))
      : [];
    return new ToolResult({ status: "succeeded", outputs: { objects } });
  },
};

interface Execution {
  status: ToolExecutionStatus;
  result: ToolResult | undefined;
  events: ToolEventEmitter;
}

/**
 * Shared bookkeeping of the example Action and Session: status and result per execution, and a
 * background loop that emits events until the work ends.
 */
class Executions {
  readonly #runs = new Map<string, Execution>();

  begin(key: ToolExecutionKey, events: ToolEventEmitter): Execution {
    const run: Execution = {
      status: new ToolExecutionStatus({ phase: "running" }),
      result: undefined,
      events,
    };
    this.#runs.set(key.id, run);
    return run;
  }

  async finish(
    key: ToolExecutionKey,
    result: ToolResult,
    phase: "completed" | "cancelled" | "stopped",
    event: "executor_completed" | "cancelled" | "stopped",
  ): Promise<void> {
    const run = this.#runs.get(key.id);
    if (run === undefined || run.result !== undefined) return;
    run.result = result;
    run.status = new ToolExecutionStatus({ phase });
    await run.events.emit(new ToolEvent({ type: event, data: { outputs: result.outputs } }));
  }

  status(key: ToolExecutionKey): ToolExecutionStatus {
    return this.#runs.get(key.id)?.status ?? new ToolExecutionStatus({ phase: "accepted" });
  }

  result(key: ToolExecutionKey): ToolResultResponse {
    const run = this.#runs.get(key.id);
    if (run === undefined) return new ToolResultResponse({ status: "not_found" });
    return run.result === undefined
      ? new ToolResultResponse({ status: "pending" })
      : new ToolResultResponse({ status: "available", result: run.result });
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const id = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(id);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Builds the example handler; `stepMs` paces the Action and Session loops. */
export function createDemoHandler(
  endpointInstanceId = "demo-instance-1",
  stepMs = 20,
): ToolEndpointHandler {
  const arm = new Executions();
  const move: ActionToolEndpoint = {
    async start(request, context, events, { signal }) {
      const key = context.executionKey;
      arm.begin(key, events);
      await events.emit(new ToolEvent({ type: "progress", data: { fraction: 0 } }));
      // The motion runs in the background; start() returns as soon as the goal is accepted.
      void (async () => {
        for (let step = 1; step <= 10; step++) {
          if (!(await sleep(stepMs, signal))) {
            return arm.finish(
              key,
              new ToolResult({ status: "cancelled" }),
              "cancelled",
              "cancelled",
            );
          }
          await events.emit(new ToolEvent({ type: "progress", data: { fraction: step / 10 } }));
        }
        await arm.finish(
          key,
          new ToolResult({
            status: "succeeded",
            outputs: { pose: request.arguments.target ?? null },
          }),
          "completed",
          "executor_completed",
        );
      })().catch(() => undefined);
      return new ToolAccepted({ details: { executor: "arm" } });
    },
    cancel: (_key, reason) =>
      new ToolControlResponse({
        command: "cancel",
        status: "accepted",
        details: reason === undefined ? {} : { reason },
      }),
    status: (key) => arm.status(key),
    result: (key) => arm.result(key),
  };

  const sessions = new Executions();
  const policy: SessionToolEndpoint = {
    start(_request, context, events, { signal }) {
      const key = context.executionKey;
      sessions.begin(key, events);
      void (async () => {
        let ticks = 0;
        while (await sleep(stepMs, signal)) {
          ticks++;
          await events.emit(new ToolEvent({ type: "heartbeat", data: { ticks } }));
        }
        await sessions.finish(
          key,
          new ToolResult({ status: "stopped", outputs: { ticks } }),
          "stopped",
          "stopped",
        );
      })().catch(() => undefined);
      return new ToolAccepted({ details: { service: "policy" } });
    },
    stop: (_key, reason) =>
      new ToolControlResponse({
        command: "stop",
        status: "accepted",
        details: reason === undefined ? {} : { reason },
      }),
    status: (key) => sessions.status(key),
    result: (key) => sessions.result(key),
  };

  return new ToolEndpointHandler(demoDescriptor, {
    endpointInstanceId,
    operations: { detect: detector, move, policy },
  });
}

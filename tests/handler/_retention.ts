// Run by retention_test.ts in a subprocess with --expose-gc: which objects of a finished
// execution the handler still keeps alive while it retains the execution's record. Prints one
// JSON line of facts.
import {
  ToolAccepted,
  type ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import { TOOL_ENDPOINT_PROTOCOL } from "../../wire.ts";
import { requests } from "./_fakes.ts";

const gc = (globalThis as { gc?: () => void }).gc;
const done = new ToolResult({ status: "succeeded", outputs: {} });
/** What each execution handed the provider, held weakly; whether it has ended, by key id. */
const seen = new Map<
  string,
  { emitter: WeakRef<ToolEventEmitter>; context: WeakRef<ToolContext> }
>();
const ended = new Set<string>();

const handler = new ToolEndpointHandler(
  new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "robot",
    operations: [
      new ToolOperationDescriptor({
        name: "move",
        semantics: "action",
        statusSupported: true,
        maxConcurrency: 4,
      }),
    ],
  }),
  {
    endpointInstanceId: "instance-1",
    operations: {
      move: {
        start(_request, context, events) {
          const id = context.executionKey.id;
          seen.set(id, { emitter: new WeakRef(events), context: new WeakRef(context) });
          // "by-event" executions end with a terminal event, the others when a status read finds
          // them completed.
          if (context.executionKey.invocationId.startsWith("by-event")) {
            setTimeout(() => {
              ended.add(id);
              void events.emit(new ToolEvent({ type: "executor_completed" }));
            }, 1);
          } else ended.add(id);
          return new ToolAccepted();
        },
        cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
        status: (key) =>
          new ToolExecutionStatus({ phase: ended.has(key.id) ? "completed" : "running" }),
        result: (key) =>
          ended.has(key.id)
            ? new ToolResultResponse({ status: "available", result: done })
            : new ToolResultResponse({ status: "pending" }),
      },
    },
  },
);

const published: string[] = [];
const sink = {
  eventSink: (event: { payload: { type?: unknown } }) =>
    void published.push(String(event.payload.type)),
};
/** One execution, its requests built and dropped here: only the handler can keep them alive. */
async function execute(invocationId: string): Promise<void> {
  const exchange = requests("move", invocationId);
  await handler.dispatch(exchange.invoke(), sink);
  if (invocationId.startsWith("by-status")) await handler.dispatch(exchange.status());
}
for (const invocationId of ["by-event-1", "by-event-2", "by-status-1", "by-status-2"]) {
  await execute(invocationId);
}
// The terminal events are published a timer later.
await new Promise((resolve) => setTimeout(resolve, 50));
gc?.();
const alive = (pick: "emitter" | "context") =>
  [...seen].filter(([, refs]) => refs[pick].deref() !== undefined).map(([id]) => id).length;
console.log(JSON.stringify({
  gc: gc !== undefined,
  retained: handler.state.retainedExecutions,
  published,
  emittersAlive: alive("emitter"),
  contextsAlive: alive("context"),
}));

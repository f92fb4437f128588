// EndpointNodeLifecycle.shutdown() with running executions (issue 11, defect 2): terminal events
// first, then one `unavailable`, then the unregister.
import { assertEquals } from "@std/assert";
import { ToolContext, ToolExecutionKey, ToolRequest } from "../../mod.ts";
import {
  endpointStatusFromEnvelope,
  eventFromPayload,
  makeInvokeRequestEnvelope,
  type ToolEnvelope,
} from "../../wire.ts";
import { EndpointNodeLifecycle, EndpointRegistry } from "../../node.ts";
import { LongRunning, robotHandler } from "../handler/_fakes.ts";

function describe(envelope: ToolEnvelope): string {
  if (envelope.messageType === "tool.event") {
    return `event ${envelope.invocationId} ${eventFromPayload(envelope.payload).type}`;
  }
  if (envelope.messageType === "endpoint.status") {
    return `status ${endpointStatusFromEnvelope(envelope).state}`;
  }
  return envelope.messageType;
}

Deno.test("shutdown with a running execution: its terminal event, then one unavailable, then the unregister", async () => {
  const move = new LongRunning("action", "end", { endDelayMs: 40 });
  const handler = robotHandler(move, new LongRunning("session", "ignore"));
  const registry = new EndpointRegistry({ routes: { robot: "robot" } });
  const log: string[] = [];
  const node: EndpointNodeLifecycle = new EndpointNodeLifecycle({
    handler,
    health: { periodMs: 60_000 },
    send: (envelope) => {
      log.push(describe(envelope));
      if (envelope.messageType !== "endpoint.status") {
        queueMicrotask(() => node.receive(registry.handle(envelope, "robot")));
      }
    },
  });
  node.start();
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId: "move-1", attemptId: "attempt-1" }),
    toolId: "forge.tool.move",
    implementationId: "robot",
    endpointId: "robot",
    operation: "move",
  });
  await handler.dispatch(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
      requestId: "invoke-1",
      endpointInstanceId: "instance-1",
    }),
    { eventSink: (event) => void log.push(describe(event)) },
  );
  log.push("-- shutdown");
  const done = node.shutdown();
  // A dispatch's health check while the execution winds down reports nothing yet.
  assertEquals(node.check(), false);
  await done;
  assertEquals(log.slice(log.indexOf("-- shutdown")), [
    "-- shutdown",
    "event move-1 cancelled",
    "status unavailable",
    "endpoint.unregister",
  ]);
  assertEquals(registry.records().length, 0);
});

// Shutdown and undelivered acceptances through the Dora binding and serveToolEndpoint (issue 11,
// defects 2 and 6): every admitted execution ends with exactly one terminal event published
// before the unregister, and an acceptance the caller never got leaves nothing running.
import { assert, assertEquals, assertInstanceOf, assertRejects } from "@std/assert";
import type { RecordBatch } from "apache-arrow";
import { ToolEvent, ToolResult } from "../../mod.ts";
import {
  endpointRegistryResponseFromPayload,
  endpointStatusFromEnvelope,
  errorFromPayload,
  eventFromPayload,
  invokeResponseFromPayload,
  resultResponseFromPayload,
  statusResponseFromPayload,
  type ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import { EndpointRegistry } from "../../node.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../../dora.ts";
import { LongRunning, type OnAbort, requests, robotHandler } from "../handler/_fakes.ts";

/** One line per message the node published, in order, as the Gateway sees them. */
function describe(envelope: ToolEnvelope): string {
  switch (envelope.messageType) {
    case "tool.event":
      return `event ${envelope.invocationId} ${eventFromPayload(envelope.payload).type}`;
    case "endpoint.status":
      return `status ${endpointStatusFromEnvelope(envelope).state}`;
    case "tool.invoke.response":
      return `response ${envelope.invocationId} ${envelope.payload.outcome}`;
    default:
      return envelope.messageType;
  }
}

/**
 * Serves `handler` on a loopback dataflow with a lifecycle against an in-memory Registry (a
 * short lease, so renewals show), starts two executions, sends Stop, and returns everything the
 * node published.
 */
async function serveAndStop(onAbort: OnAbort, graceMs: number) {
  const move = new LongRunning("action", onAbort, { endDelayMs: 150 });
  const serve = new LongRunning("session", onAbort, { endDelayMs: 150 });
  const handler = robotHandler(move, serve);
  const flow = new LoopbackDataflow();
  const registry = new EndpointRegistry({ routes: { robot: "robot" }, leaseTtlMs: 60 });
  const logged: string[] = [];
  const node = serveToolEndpoint(handler, {
    transport: flow.transport,
    graceMs,
    lifecycle: { unregisterTimeoutMs: 5_000, health: { periodMs: 60_000 } },
    logger: ({ level, message }) => void logged.push(`${level} ${message}`),
  });
  const seen: string[] = [];
  const accepted = Promise.withResolvers<void>();
  const gateway = (async () => {
    for (;;) {
      const output = await flow.nextOutput();
      if (output === null) return;
      const envelope = decodeToolEnvelopeIpc(output.data);
      seen.push(describe(envelope));
      if (seen.filter((line) => line.endsWith(" accepted")).length === 2) accepted.resolve();
      if (
        envelope.messageType === "endpoint.register" ||
        envelope.messageType === "endpoint.unregister"
      ) {
        const response = registry.handle(envelope, "robot");
        const { operation, status } = endpointRegistryResponseFromPayload(response.payload);
        seen.push(`${operation} ${status}`);
        await flow.request(encodeToolEnvelopeIpc(response)).catch(() => {});
      }
    }
  })();
  await flow.request(encodeToolEnvelopeIpc(requests("move", "move-1").invoke()));
  await flow.request(encodeToolEnvelopeIpc(requests("serve", "serve-1").invoke()));
  await accepted.promise;
  seen.push("-- stop");
  await flow.stop();
  const stats = await node;
  await gateway;
  return { handler, seen, stats, logged, registry };
}

/** The lines after `-- stop`, without the Registry's answers. */
function afterStop(seen: string[]): string[] {
  return seen.slice(seen.indexOf("-- stop") + 1).filter((line) =>
    !line.endsWith(" accepted") || line.startsWith("unregister")
  );
}

Deno.test("serveToolEndpoint on Stop: terminal events go out before the unregister, the lease is renewed meanwhile", async () => {
  const { handler, seen, stats, logged, registry } = await serveAndStop("end", 10_000);
  const tail = afterStop(seen);
  // While the executions wind down (150 ms), renewals continue (lease 60 ms).
  const unregister = tail.indexOf("endpoint.unregister");
  assert(tail.slice(0, unregister).includes("endpoint.register"), seen.join("\n"));
  assertEquals(tail.filter((line) => !line.startsWith("endpoint.register")), [
    ...tail.filter((line) => line.startsWith("event")),
    "status unavailable",
    "endpoint.unregister",
    "unregister accepted",
  ]);
  assertEquals(tail.filter((line) => line.startsWith("event")).sort(), [
    "event move-1 cancelled",
    "event serve-1 stopped",
  ]);
  assertEquals(seen.filter((line) => line === "status unavailable").length, 1);
  assertEquals(registry.records().length, 0);
  assertEquals(stats.abandoned, 0);
  assertEquals(logged.filter((line) => line.startsWith("error") || line.startsWith("warn")), []);
  // The results are readable and terminal afterwards.
  for (
    const [operation, id, status] of [["move", "move-1", "cancelled"], [
      "serve",
      "serve-1",
      "stopped",
    ]]
  ) {
    const [answer] = await handler.dispatch(requests(operation, id).result());
    assertEquals(resultResponseFromPayload(answer.payload).result?.status, status);
  }
});

Deno.test("serveToolEndpoint on Stop: executions that outlive the grace end unknown, published before the unregister", async () => {
  const { handler, seen, registry } = await serveAndStop("ignore", 50);
  const tail = afterStop(seen);
  assertEquals(tail.filter((line) => !line.startsWith("endpoint.register")), [
    ...tail.filter((line) => line.startsWith("event")),
    "status unavailable",
    "endpoint.unregister",
    "unregister accepted",
  ]);
  assertEquals(tail.filter((line) => line.startsWith("event")).sort(), [
    "event move-1 executor_failed",
    "event serve-1 executor_failed",
  ]);
  assertEquals(registry.records().length, 0);
  for (const [operation, id] of [["move", "move-1"], ["serve", "serve-1"]]) {
    const [result] = await handler.dispatch(requests(operation, id).result());
    const retained = resultResponseFromPayload(result.payload).result;
    assertEquals([retained?.status, retained?.error?.code], [
      "unknown",
      "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    ]);
    const [status] = await handler.dispatch(requests(operation, id).status());
    assertEquals(statusResponseFromPayload(status.payload).phase, "unknown");
  }
});

// --- Undelivered acceptances -----------------------------------------------------------------

/** A binding whose sink records what it published (as envelopes), failing when told to. */
function bindingFor(provider: LongRunning, options: { failResponse?: boolean } = {}) {
  const handler = robotHandler(provider, new LongRunning("session", "ignore"));
  const published: ToolEnvelope[] = [];
  const reported: unknown[] = [];
  const events: string[] = [];
  const binding = new DoraToolEndpointBinding(handler, {
    maxMessageBytes: 1024,
    eventSink: (batch: RecordBatch) => {
      const envelope = toolMessageToEnvelope(batch);
      if (options.failResponse === true && envelope.messageType === "tool.invoke.response") {
        throw new Error("link down");
      }
      published.push(envelope);
    },
    logger: (record) => {
      events.push(`${record.level} ${record.event} ${record.invocationId}`);
      reported.push(record.error);
    },
  });
  return { handler, binding, published, reported, events };
}

async function assertAbandoned(
  handler: ReturnType<typeof robotHandler>,
  binding: DoraToolEndpointBinding,
  provider: LongRunning,
  published: ToolEnvelope[],
) {
  const execution = [...provider.executions.values()][0];
  assert(execution.signal.aborted, "the execution's signal aborted");
  assertEquals(handler.state.permitsInUse.move, 0);
  const late = await assertRejects(
    () => execution.events.emit(new ToolEvent({ type: "progress" })),
    ToolProtocolError,
  );
  assertEquals(late.code, "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL");
  // A retry with the same key learns the outcome was lost; status and result read it too.
  const [duplicate] = await binding.dispatchInput(
    toolEnvelopeToMessage(requests("move", "inv-1").invoke("retry")),
  ).then(() => [published.at(-1)!]);
  const outcome = invokeResponseFromPayload(duplicate.payload);
  assertInstanceOf(outcome, ToolResult);
  assertEquals([duplicate.requestId, outcome.status, outcome.error?.code], [
    "retry",
    "unknown",
    "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
  ]);
  const [status] = await binding.dispatchInput(
    toolEnvelopeToMessage(requests("move", "inv-1").status()),
  );
  assertEquals(statusResponseFromPayload(toolMessageToEnvelope(status).payload).phase, "unknown");
  // No event of that execution was ever published (neither the early ones nor a terminal one),
  // and close() has nothing left to publish.
  await handler.close({ graceMs: 10_000 });
  assertEquals(published.filter((envelope) => envelope.messageType === "tool.event"), []);
}

Deno.test("an acceptance too large for the message limit: tool.error, and the execution is abandoned", async () => {
  const provider = new LongRunning("action", "ignore", {
    acceptedDetails: { blob: "x".repeat(2048) },
    earlyEvents: 2,
  });
  const { handler, binding, published, reported, events } = bindingFor(provider);
  assertEquals(
    await binding.dispatchInput(toolEnvelopeToMessage(requests("move", "inv-1").invoke())),
    [],
  );
  assertEquals(published.map((envelope) => envelope.messageType), ["tool.error"]);
  assertEquals(errorFromPayload(published[0].payload).code, "FORGE_PROTOCOL_MESSAGE_TOO_LARGE");
  // The abandoned execution is reported, with the encoding failure as its cause.
  assertEquals(events, ["error binding.acceptance_undelivered inv-1"]);
  assertInstanceOf(reported[0], Error);
  assert(reported[0].message.includes("converged to unknown"), reported[0].message);
  assertInstanceOf(reported[0].cause, ToolProtocolError);
  await assertAbandoned(handler, binding, provider, published);
});

Deno.test("an acceptance the transport fails to send: the execution is abandoned", async () => {
  const provider = new LongRunning("action", "ignore", { earlyEvents: 2 });
  const { handler, binding, published, reported, events } = bindingFor(provider, {
    failResponse: true,
  });
  await assertRejects(
    () => binding.dispatchInput(toolEnvelopeToMessage(requests("move", "inv-1").invoke())),
    Error,
    "link down",
  );
  assertEquals(published, []);
  assertEquals(events, ["error binding.acceptance_undelivered inv-1"]);
  assertEquals(((reported[0] as Error).cause as Error).message, "link down");
  await assertAbandonedAfterFailedSend(handler, provider);
});

/** The same checks as assertAbandoned, through the handler (the binding's sink keeps failing). */
async function assertAbandonedAfterFailedSend(
  handler: ReturnType<typeof robotHandler>,
  provider: LongRunning,
) {
  const execution = [...provider.executions.values()][0];
  assert(execution.signal.aborted, "the execution's signal aborted");
  assertEquals(handler.state.permitsInUse.move, 0);
  const late = await assertRejects(
    () => execution.events.emit(new ToolEvent({ type: "progress" })),
    ToolProtocolError,
  );
  assertEquals(late.code, "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL");
  const [duplicate] = await handler.dispatch(requests("move", "inv-1").invoke("retry"), {
    eventSink: () => {},
  });
  const outcome = invokeResponseFromPayload(duplicate.payload);
  assertInstanceOf(outcome, ToolResult);
  assertEquals([outcome.status, outcome.error?.code], [
    "unknown",
    "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
  ]);
  const [result] = await handler.dispatch(requests("move", "inv-1").result());
  assertEquals(resultResponseFromPayload(result.payload).result?.status, "unknown");
}

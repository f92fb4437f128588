// ToolEndpointClient over the loopback dataflow (Arrow IPC bytes both ways) against the real
// handler served by serveToolEndpoint, with the loopback's fault injection: lost, duplicated,
// reordered, forged and late messages.
import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  ToolClientError,
  ToolEndpointClient,
  type ToolEndpointClientOptions,
  type ToolEventRecord,
  type ToolInvocation,
} from "../../mod.ts";
import { ToolEnvelope } from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolClientTransport,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  type LoopbackFaults,
  type LoopbackOutput,
  LoopbackToolClientTransport,
  serveToolEndpoint,
} from "../../dora.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT, INSTANCE } from "../client/_fixtures.ts";
import { recordingLogger } from "../_helpers.ts";

type ClientOptions = Omit<ToolEndpointClientOptions, "transport" | "endpointId">;

/** A served endpoint on a loopback dataflow with a client on its gateway side. */
async function withLoopback(
  faults: LoopbackFaults,
  options: ClientOptions,
  body: (
    client: ToolEndpointClient,
    context: {
      flow: LoopbackDataflow;
      arm: ReturnType<typeof armEndpoint>;
      /** What the client transport logged. */
      transportLog: ReturnType<typeof recordingLogger>;
    },
  ) => Promise<void>,
): Promise<void> {
  const arm = armEndpoint();
  const flow = new LoopbackDataflow({ faults });
  const serving = serveToolEndpoint(arm.handler, { transport: flow.transport, graceMs: 200 });
  const transportLog = recordingLogger();
  const client = new ToolEndpointClient({
    transport: new LoopbackToolClientTransport(flow, { logger: transportLog.logger }),
    endpointId: ENDPOINT,
    endpointInstanceId: INSTANCE,
    descriptor: DESCRIPTOR,
    timeoutMs: 200,
    ...options,
  });
  try {
    await body(client, { flow, arm, transportLog });
  } finally {
    await client.close();
    await flow.stop();
    await serving;
  }
}

function envelopeOf(output: LoopbackOutput): ToolEnvelope {
  return decodeToolEnvelopeIpc(output.data);
}

function bytesOf(envelope: ToolEnvelope): Uint8Array {
  return encodeToolEnvelopeIpc(envelope);
}

async function collect(invocation: ToolInvocation): Promise<ToolEventRecord[]> {
  const records: ToolEventRecord[] = [];
  for await (const record of invocation.events) records.push(record);
  return records;
}

function summary(records: readonly ToolEventRecord[]): string[] {
  return records.map(({ sequence, event }) => `${sequence}:${event.type}`);
}

function progress(steps: number, terminal: string): string[] {
  return [...Array.from({ length: steps }, (_, i) => `${i}:progress`), `${steps}:${terminal}`];
}

/** A copy of `envelope` with some header fields replaced. */
function forge(envelope: ToolEnvelope, changes: Partial<Record<string, string>>): ToolEnvelope {
  return new ToolEnvelope({
    messageType: envelope.messageType,
    requestId: envelope.requestId,
    invocationId: envelope.invocationId,
    attemptId: envelope.attemptId,
    endpointId: envelope.endpointId,
    endpointInstanceId: envelope.endpointInstanceId,
    operation: envelope.operation,
    sequence: envelope.sequence,
    payload: envelope.payload,
    ...changes,
  });
}

Deno.test("client loopback: Query, Action and Session over Arrow IPC bytes", async () => {
  await withLoopback({}, {}, async (client, { flow }) => {
    const result = await client.query("echo", { text: "hi" });
    assertEquals(result.outputs, { echo: { text: "hi" } });
    const move = await client.invoke("move", { steps: 3 });
    assertEquals(summary(await collect(move)), progress(3, "executor_completed"));
    assertEquals((await move.result()).status, "succeeded");
    const watch = await client.invoke("watch", { steps: 100_000, stepMs: 5 });
    assertEquals((await watch.stop()).status, "accepted");
    assertEquals((await watch.result()).status, "stopped");
    assert(flow.sent.length >= 8);
    assertEquals(client.stats.uncorrelated + client.stats.mismatched + client.stats.invalid, 0);
  });
});

Deno.test("client loopback: duplicated answers and events settle every call once", async () => {
  const faults: LoopbackFaults = { output: (output) => [output, output] };
  await withLoopback(faults, {}, async (client) => {
    const result = await client.query("echo", { n: 1 });
    assertEquals(result.status, "succeeded");
    const move = await client.invoke("move", { steps: 4 });
    assertEquals(summary(await collect(move)), progress(4, "executor_completed"));
    assertEquals((await move.result()).status, "succeeded");
    // Every duplicate response is dropped as uncorrelated (its exchange is already answered).
    assert(client.stats.uncorrelated >= 3);
    // A duplicate event while the stream is open is dropped as a duplicate; after the terminal
    // event the invocation is no longer routed.
    assertEquals(client.stats.duplicateEvents + client.stats.unroutedEvents, 5);
    assertEquals(client.stats.events, 5);
  });
});

Deno.test("client loopback: reordered events are delivered in sequence order", async () => {
  // Holds every event and releases them in reverse order once the terminal event was sent.
  const held: LoopbackOutput[] = [];
  const faults: LoopbackFaults = {
    output: (output) => {
      const envelope = envelopeOf(output);
      if (envelope.messageType !== "tool.event") return [output];
      held.push(output);
      return envelope.payload.type === "executor_completed" ? held.splice(0).reverse() : [];
    },
  };
  await withLoopback(faults, { reorderWindowMs: 5_000 }, async (client) => {
    const move = await client.invoke("move", { steps: 5 });
    assertEquals(summary(await collect(move)), progress(5, "executor_completed"));
    assertEquals(move.eventGaps, 0);
    assertEquals((await move.result()).status, "succeeded");
  });
});

Deno.test("client loopback: a lost event is a gap, skipped after the reorder window", async () => {
  const faults: LoopbackFaults = {
    output: (output) => {
      const envelope = envelopeOf(output);
      return envelope.messageType === "tool.event" && envelope.sequence === 1 ? [] : [output];
    },
  };
  await withLoopback(faults, { reorderWindowMs: 20, pollIntervalMs: 5 }, async (client) => {
    const move = await client.invoke("move", { steps: 3 });
    assertEquals(summary(await collect(move)), [
      "0:progress",
      "2:progress",
      "3:executor_completed",
    ]);
    assertEquals(move.eventGaps, 1);
    assertEquals((await move.result()).status, "succeeded");
  });
});

Deno.test("client loopback: a lost terminal event and a lost result answer are recovered", async () => {
  let resultsLost = 1;
  const faults: LoopbackFaults = {
    output: (output) => {
      const envelope = envelopeOf(output);
      if (envelope.messageType === "tool.event" && envelope.payload.type === "executor_completed") {
        return [];
      }
      if (envelope.messageType === "tool.result.response" && resultsLost-- > 0) return [];
      return [output];
    },
  };
  await withLoopback(faults, { timeoutMs: 30, pollIntervalMs: 5 }, async (client) => {
    const move = await client.invoke("move", { steps: 2 });
    assertEquals(summary(await collect(move)), ["0:progress", "1:progress"]);
    assertEquals((await move.result()).status, "succeeded");
    assert(client.stats.resent >= 1);
  });
});

Deno.test("client loopback: forged answers are dropped and never reach another call", async () => {
  let forgedOnce = false;
  const injected: ToolEnvelope[] = [];
  await withLoopback({}, {}, async (client, { flow, transportLog }) => {
    // Two concurrent queries; before the first answer, forge answers carrying a pending request
    // id with another invocation, another instance, and another operation.
    const faultyFlow = flow;
    const a = client.query("echo", { who: "a", delayMs: 20 }, { requestId: "req-a" });
    const b = client.query("echo", { who: "b", delayMs: 20 }, { requestId: "req-b" });
    while (!forgedOnce) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (client.stats.sent === 2) {
        forgedOnce = true;
        const template = new ToolEnvelope({
          messageType: "tool.invoke.response",
          requestId: "req-a",
          invocationId: "someone-else",
          attemptId: "attempt",
          endpointId: ENDPOINT,
          endpointInstanceId: INSTANCE,
          operation: "echo",
          payload: {
            outcome: "completed",
            result: { status: "succeeded", outputs: { forged: 1 } },
          },
        });
        injected.push(template);
        injected.push(forge(template, { requestId: "req-b" }));
        injected.push(forge(template, { requestId: "unknown-request" }));
        for (const envelope of injected) {
          faultyFlow.injectOutput("tool_response", bytesOf(envelope));
        }
        faultyFlow.injectOutput("tool_response", new Uint8Array([1, 2, 3]));
      }
    }
    const [ra, rb] = await Promise.all([a, b]);
    assertEquals(ra.outputs, { echo: { who: "a", delayMs: 20 } });
    assertEquals(rb.outputs, { echo: { who: "b", delayMs: 20 } });
    assertEquals(client.stats.mismatched, 2);
    assertEquals(client.stats.uncorrelated, 1);
    assertEquals(transportLog.events(), ["warn client_transport.undecodable"]);
  });
});

Deno.test("client loopback: a forged event of another instance or operation is dropped", async () => {
  await withLoopback({}, {}, async (client, { flow }) => {
    const move = await client.invoke("move", { steps: 100_000, stepMs: 5 }, {
      invocationId: "inv-m",
      attemptId: "att-m",
    });
    const event = new ToolEnvelope({
      messageType: "tool.event",
      invocationId: "inv-m",
      attemptId: "att-m",
      endpointId: ENDPOINT,
      endpointInstanceId: "arm-evil",
      operation: "move",
      sequence: 0,
      payload: { type: "executor_completed", data: {} },
    });
    flow.injectOutput("tool_response", bytesOf(event));
    flow.injectOutput(
      "tool_response",
      bytesOf(forge(event, { operation: "watch", endpointInstanceId: INSTANCE })),
    );
    while (client.stats.mismatched < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    await move.cancel();
    const records = await collect(move);
    assertEquals(records.at(-1)?.event.type, "cancelled");
    assertEquals(client.stats.mismatched, 2);
  });
});

Deno.test("client loopback: a late answer after the timeout is counted, not delivered", async () => {
  const late: LoopbackOutput[] = [];
  const faults: LoopbackFaults = {
    output: (output) => {
      const envelope = envelopeOf(output);
      if (envelope.messageType === "tool.status.response" && late.length === 0) {
        late.push(output);
        return [];
      }
      return [output];
    },
  };
  await withLoopback(faults, { timeoutMs: 30 }, async (client, { flow }) => {
    const move = await client.invoke("move", { steps: 100_000, stepMs: 5 });
    assertEquals((await move.status()).phase, "running");
    assertEquals(client.stats.resent, 1);
    flow.injectOutput("tool_response", late[0].data);
    while (client.stats.uncorrelated === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    assertEquals(client.stats.uncorrelated, 1);
    await move.cancel();
    await move.result();
  });
});

Deno.test("client loopback: a lost invoke request is not re-sent and is reported not admitted", async () => {
  const faults: LoopbackFaults = {
    input: (_id, data) =>
      decodeToolEnvelopeIpc(data).messageType === "tool.invoke.request" ? [] : [data],
  };
  await withLoopback(faults, { timeoutMs: 30 }, async (client, { arm }) => {
    const error = await assertRejects(() => client.invoke("move", { steps: 1 }), ToolClientError);
    assertEquals([error.code, error.exchange, error.outcome], [
      "FORGE_CLIENT_TIMEOUT",
      "invoke",
      "not_admitted",
    ]);
    const query = await assertRejects(() => client.query("echo", {}), ToolClientError);
    assertEquals([query.code, query.outcome, query.attempts], [
      "FORGE_CLIENT_TIMEOUT",
      "unknown",
      1,
    ]);
    assertEquals(arm.move.calls.start + arm.echoCalls.count, 0);
  });
});

Deno.test("client loopback: a duplicated invoke request executes once (handler dedup)", async () => {
  const faults: LoopbackFaults = { input: (_id, data) => [data, data] };
  await withLoopback(faults, {}, async (client, { arm }) => {
    const move = await client.invoke("move", { steps: 2 });
    assertEquals((await move.result()).status, "succeeded");
    assertEquals(arm.move.calls.start, 1);
  });
});

Deno.test("client loopback: result polling gives up with a timeout naming the exchange", async () => {
  const faults: LoopbackFaults = {
    output: (output) => envelopeOf(output).messageType === "tool.result.response" ? [] : [output],
  };
  await withLoopback(
    faults,
    { timeoutMs: 20, maxAttempts: 2, pollIntervalMs: 5 },
    async (client) => {
      const move = await client.invoke("move", { steps: 100_000, stepMs: 10_000 });
      const error = await assertRejects(() => move.result(), ToolClientError);
      assertEquals([error.code, error.exchange, error.attempts], [
        "FORGE_CLIENT_TIMEOUT",
        "result",
        2,
      ]);
      await move.cancel();
    },
  );
});

Deno.test("client loopback: events still in transit when a poll found the result are delivered", async () => {
  const held: LoopbackOutput[] = [];
  const faults: LoopbackFaults = {
    output: (output) => {
      if (envelopeOf(output).messageType !== "tool.event") return [output];
      held.push(output);
      return [];
    },
  };
  await withLoopback(faults, { reorderWindowMs: 5_000 }, async (client, { flow }) => {
    const move = await client.invoke("move", { steps: 2 });
    while (held.length < 3) await new Promise((resolve) => setTimeout(resolve, 1));
    assertEquals((await move.result()).status, "succeeded");
    for (const output of held) flow.injectOutput(output.id, output.data);
    assertEquals(summary(await collect(move)), progress(2, "executor_completed"));
  });
});

Deno.test("client loopback: registry messages on the response output are not answers", async () => {
  const arm = armEndpoint();
  const flow = new LoopbackDataflow();
  const serving = serveToolEndpoint(arm.handler, {
    transport: flow.transport,
    graceMs: 200,
    lifecycle: true,
  });
  const client = new ToolEndpointClient({
    transport: new LoopbackToolClientTransport(flow),
    endpointId: ENDPOINT,
    endpointInstanceId: INSTANCE,
    descriptor: DESCRIPTOR,
  });
  assertEquals((await client.query("echo", { n: 1 })).status, "succeeded");
  // The node registered at start: its endpoint.register went out on the response output.
  while (client.stats.invalid + client.stats.uncorrelated === 0) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  assertEquals(client.stats.uncorrelated, 0);
  await client.close();
  await flow.stop();
  await serving;
});

Deno.test("client loopback: the client as a Dora node (DoraToolClientTransport on the node side)", async () => {
  const arm = armEndpoint();
  const flow = new LoopbackDataflow({ requestInputId: "tool_response" });
  const log = recordingLogger();
  const transport = new DoraToolClientTransport(flow.transport, { logger: log.logger });
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    endpointInstanceId: INSTANCE,
    descriptor: DESCRIPTOR,
  });
  // The test plays the endpoint: each tool_request output is dispatched, answers go back in.
  const serving = (async () => {
    for await (const output of flow.responses) {
      assertEquals(output.id, "tool_request");
      const answers = await arm.handler.dispatch(decodeToolEnvelopeIpc(output.data));
      for (const answer of answers) await flow.request(bytesOf(answer));
    }
  })();
  await flow.input("tick", new Uint8Array(0));
  await flow.request(new Uint8Array([0xff, 0x00]));
  assertEquals((await client.query("echo", { n: 2 })).outputs, { echo: { n: 2 } });
  assertEquals(transport.stats.ignored, 1);
  assertEquals(transport.stats.undecodable, 1);
  assertEquals(log.events(), ["warn client_transport.undecodable"]);
  assertEquals(log.records[0].message, "a message of 2 bytes did not decode; dropped");
  assertEquals(transport.stats.sent, 1);
  await flow.stop();
  await transport.done;
  await client.close();
  await serving;
  assertEquals(flow.isClosed, true);
});

Deno.test("client loopback: handles whose event before the terminal one was lost all end released", async () => {
  // Each `move` of 2 steps emits 0:progress 1:progress 2:executor_completed; 1 is lost.
  const faults: LoopbackFaults = {
    output: (output) => {
      const envelope = envelopeOf(output);
      return envelope.messageType === "tool.event" && envelope.sequence === 1 ? [] : [output];
    },
  };
  await withLoopback(faults, { maxOpenInvocations: 20, reorderWindowMs: 5 }, async (client) => {
    const handles: ToolInvocation[] = [];
    for (let i = 0; i < 20; i++) handles.push(await client.invoke("move", { steps: 2 }));
    while (handles.some((h) => h.eventGaps === 0)) await new Promise((r) => setTimeout(r, 1));
    for (const handle of handles) assertEquals((await handle.result()).status, "succeeded");
    assertEquals(client.stats.openInvocations, 0);
    // The limit is free again: 20 more fit.
    const more = await Promise.all(
      Array.from({ length: 20 }, () => client.invoke("move", { steps: 0 })),
    );
    for (const handle of more) assertEquals((await handle.result()).status, "succeeded");
  });
});

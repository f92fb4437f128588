import { assert, assertEquals, assertRejects } from "@std/assert";
import { delay } from "@std/async";
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  type ToolLogger,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  endpointRegistryResponseFromPayload,
  endpointStatusFromEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import { EndpointRegistry } from "../../node.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
} from "../../dora.ts";
import { recordingLogger, silentLogger } from "../_helpers.ts";

const descriptor = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: "vision.yolo",
  operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
});

const requestContext = new ToolContext({
  executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
  toolId: "forge.tool.detect",
  implementationId: "yolo",
  endpointId: "vision.yolo",
  operation: "detect",
});

/** The Query fixture; its records go to `logger` (none printed by default). */
function handler(logger: ToolLogger = silentLogger): ToolEndpointHandler {
  return new ToolEndpointHandler(descriptor, {
    endpointInstanceId: "instance-1",
    logger,
    operations: { detect: { query: () => new ToolResult({ status: "succeeded" }) } },
  });
}

Deno.test("without a registration hook, a Registry response on the request input is refused", async () => {
  const binding = new DoraToolEndpointBinding(handler(), { ipcEventSink: () => {} });
  const registry = new EndpointRegistry({ routes: { yolo: "vision.yolo" } });
  const response = registry.handle(
    makeRegistrationEnvelope(descriptor, { endpointInstanceId: "instance-1", requestId: "r-1" }),
    "yolo",
  );
  const refused = await assertRejects(
    () => binding.dispatchIpc(encodeToolEnvelopeIpc(response)),
    ToolProtocolError,
    "request envelope must be an execution request, found 'endpoint.registry.response'",
  );
  assertEquals([refused.code, refused.path], [
    "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE",
    "message_type",
  ]);
});

Deno.test("serveToolEndpoint refuses forged non-request messages: logged, counted, never answered", async () => {
  // A response, an event and an endpoint.status arriving on the request input, through both
  // codecs. Each is refused with its code in the node's log and counted as an error; the node
  // keeps serving and answers the valid request that follows.
  const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), requestContext, {
    requestId: "request-1",
    endpointInstanceId: "instance-1",
  });
  const forged: ToolEnvelope[] = [
    makeInvokeResponseEnvelope(
      new ToolResult({ status: "succeeded" }),
      invoke,
    ),
    makeEventEnvelope(new ToolEvent({ type: "heartbeat" }), requestContext, {
      endpointInstanceId: "instance-1",
      sequence: 0,
    }),
    new ToolEnvelope({
      messageType: "endpoint.status",
      endpointId: "vision.yolo",
      endpointInstanceId: "instance-1",
      payload: { status: { state: "ready", active_invocations: 0, details: {} } },
    }),
  ];
  for (const codec of ["fast", "generic"] as const) {
    const flow = new LoopbackDataflow();
    const logged: string[] = [];
    const node = serveToolEndpoint(handler(), {
      transport: flow.transport,
      codec,
      logger: ({ level, message }) => void logged.push(`${level} ${message}`),
    });
    for (const envelope of forged) await flow.request(encodeToolEnvelopeIpc(envelope));
    await flow.request(encodeToolEnvelopeIpc(invoke));
    const answer = await flow.nextOutput();
    await flow.stop();
    const stats = await node;
    assertEquals(decodeToolEnvelopeIpc(answer!.data).messageType, "tool.invoke.response", codec);
    assertEquals(decodeToolEnvelopeIpc(answer!.data).requestId, "request-1", codec);
    assertEquals(stats.requests, 4, codec);
    assertEquals(stats.errors, 3, codec);
    assertEquals(stats.responses, 1, codec);
    const refusals = logged.filter((line) =>
      line.startsWith("error ") &&
      line.includes("ToolProtocolError FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE: ") &&
      line.includes("request envelope must be an execution request")
    );
    assertEquals(refusals.length, 3, `${codec}: ${logged.join("\n")}`);
    for (const envelope of forged) {
      assert(refusals.some((line) => line.includes(`'${envelope.messageType}'`)), codec);
    }
  }
});

Deno.test("with a registration hook, a Registry response reaches it and nothing is answered", async () => {
  const seen: ToolEnvelope[] = [];
  const binding = new DoraToolEndpointBinding(handler(), {
    ipcEventSink: () => {},
    onRegistryResponse: (response) => seen.push(response),
  });
  const registry = new EndpointRegistry({ routes: { yolo: "vision.yolo" } });
  const response = registry.handle(
    makeRegistrationEnvelope(descriptor, { endpointInstanceId: "instance-1", requestId: "r-1" }),
    "yolo",
  );
  assertEquals(await binding.dispatchIpc(encodeToolEnvelopeIpc(response)), []);
  assertEquals(seen.map((envelope) => envelope.requestId), ["r-1"]);
});

Deno.test("serveToolEndpoint with a lifecycle registers at start and unregisters on stop", async () => {
  const flow = new LoopbackDataflow();
  const registry = new EndpointRegistry({ routes: { yolo: "vision.yolo" }, leaseTtlMs: 60_000 });
  const logged: string[] = [];
  const node = serveToolEndpoint(handler(), {
    transport: flow.transport,
    // Far beyond the grace period: only an answer read after Stop ends the unregister in time.
    lifecycle: { unregisterTimeoutMs: 60_000, health: { periodMs: 60_000 } },
    graceMs: 10_000,
    logger: ({ level, message }) => void logged.push(`${level} ${message}`),
  });
  const sent: string[] = [];
  const gateway = (async () => {
    for (;;) {
      const output = await flow.nextOutput();
      if (output === null) return;
      const envelope = decodeToolEnvelopeIpc(output.data);
      sent.push(envelope.messageType);
      if (
        envelope.messageType === "endpoint.register" ||
        envelope.messageType === "endpoint.unregister"
      ) {
        const response = registry.handle(envelope, "yolo");
        sent.push(
          `${endpointRegistryResponseFromPayload(response.payload).operation} ${
            endpointRegistryResponseFromPayload(response.payload).status
          }`,
        );
        await flow.request(encodeToolEnvelopeIpc(response)).catch(() => {});
      }
    }
  })();
  // Wait until the Registry holds the node's record.
  for (let i = 0; i < 200 && registry.records().length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assertEquals(registry.records().length, 1);
  await flow.stop();
  const stats = await node;
  await gateway;
  assertEquals(stats.stopReason, "stop");
  assertEquals(registry.records().length, 0);
  assert(sent.indexOf("register accepted") > sent.indexOf("endpoint.register"), sent.join());
  assert(sent.indexOf("endpoint.unregister") > sent.indexOf("register accepted"), sent.join());
  assert(sent.includes("unregister accepted"), sent.join());
  // The node read the answer after Stop: no grace expiry, nothing abandoned, no failure logged.
  assertEquals(stats.abandoned, 0);
  assertEquals(logged.filter((line) => line.startsWith("error") || line.startsWith("warn")), []);
});

Deno.test("serveToolEndpoint: an unanswered unregister is logged with its reason", async () => {
  const flow = new LoopbackDataflow();
  const registry = new EndpointRegistry({ routes: { yolo: "vision.yolo" }, leaseTtlMs: 60_000 });
  const logged: string[] = [];
  const recorder = recordingLogger();
  const served = recordingLogger();
  const node = serveToolEndpoint(handler(recorder.logger), {
    transport: flow.transport,
    lifecycle: { unregisterTimeoutMs: 50, health: { periodMs: 60_000 } },
    logger: (record) => {
      served.logger(record);
      logged.push(`${record.level} ${record.message}`);
    },
  });
  const gateway = (async () => {
    for (;;) {
      const output = await flow.nextOutput();
      if (output === null) return;
      const envelope = decodeToolEnvelopeIpc(output.data);
      // The Registry answers the register only.
      if (envelope.messageType === "endpoint.register") {
        await flow.request(encodeToolEnvelopeIpc(registry.handle(envelope, "yolo")))
          .catch(() => {});
      }
    }
  })();
  for (let i = 0; i < 200 && registry.records().length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await flow.stop();
  const stats = await node;
  await gateway;
  assertEquals(stats.stopReason, "stop");
  assert(
    logged.some((line) =>
      line.startsWith("error onShutdown failed") &&
      line.includes(
        "endpoint.unregister got no answer: no endpoint.registry.response to " +
          "unregister within 50 ms",
      )
    ),
    logged.join("\n"),
  );
  // The registration's own record goes to serve's logger (the lifecycle's), none to the handler's.
  assertEquals(
    served.records.filter((record) => record.event === "registration.unregister_failed")
      .map((record) => String(record.error)),
    ["Error: no endpoint.registry.response to unregister within 50 ms"],
  );
  assertEquals(recorder.records, []);
});

Deno.test("serveToolEndpoint: a request arriving after Stop, while work settles, is answered", async () => {
  const release = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  const slow = new ToolEndpointHandler(descriptor, {
    endpointInstanceId: "instance-1",
    operations: {
      detect: {
        query: async () => {
          started.resolve();
          await release.promise;
          return new ToolResult({ status: "succeeded" });
        },
      },
    },
  });
  const flow = new LoopbackDataflow();
  const node = serveToolEndpoint(slow, { transport: flow.transport, logger: () => {} });
  const invoke = (requestId: string, invocationId: string) =>
    encodeToolEnvelopeIpc(makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      new ToolContext({
        executionKey: new ToolExecutionKey({ invocationId, attemptId: "att-1" }),
        toolId: "forge.tool.detect",
        implementationId: "yolo",
        endpointId: "vision.yolo",
        operation: "detect",
      }),
      { requestId, endpointInstanceId: "instance-1" },
    ));
  await flow.request(invoke("r-1", "inv-1"));
  await started.promise;
  await flow.stop();
  // The handler is closing (it waits for inv-1), and the node still reads: r-2 gets an answer.
  await flow.request(invoke("r-2", "inv-2"));
  const late = decodeToolEnvelopeIpc((await flow.nextOutput())!.data);
  release.resolve();
  const first = decodeToolEnvelopeIpc((await flow.nextOutput())!.data);
  const stats = await node;
  assertEquals([late.requestId, late.messageType], ["r-2", "tool.invoke.response"]);
  assertEquals(late.payload.outcome, "rejected");
  assertEquals((late.payload.error as { code: string }).code, "FORGE_ENDPOINT_UNAVAILABLE");
  assertEquals([first.requestId, first.payload.outcome], ["r-1", "completed"]);
  assertEquals([stats.requests, stats.responses, stats.abandoned], [2, 2, 0]);
});

Deno.test("serveToolEndpoint: on an idle node, every request read after Stop is answered once", async () => {
  const flow = new LoopbackDataflow();
  const node = serveToolEndpoint(handler(), { transport: flow.transport, logger: () => {} });
  await new Promise((resolve) => setTimeout(resolve, 0)); // idle: a read is pending
  const invoke = (n: number) =>
    encodeToolEnvelopeIpc(makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      new ToolContext({
        executionKey: new ToolExecutionKey({ invocationId: `inv-${n}`, attemptId: "att-1" }),
        toolId: "forge.tool.detect",
        implementationId: "yolo",
        endpointId: "vision.yolo",
        operation: "detect",
      }),
      { requestId: `r-${n}`, endpointInstanceId: "instance-1" },
    ));
  const deliveries = [flow.stop(), ...[1, 2, 3, 4].map((n) => flow.request(invoke(n)))];
  const stats = await node;
  const taken = (await Promise.allSettled(deliveries)).slice(1)
    .flatMap((result, n) => result.status === "fulfilled" ? [`r-${n + 1}`] : []);
  assert(taken.length > 0, "the node read at least one request after Stop");
  const answers = flow.sent.map((output) => decodeToolEnvelopeIpc(output.data));
  assertEquals(answers.map((answer) => answer.requestId), taken);
  for (const answer of answers) {
    assertEquals(answer.messageType, "tool.invoke.response");
    assertEquals((answer.payload.error as { code: string }).code, "FORGE_ENDPOINT_UNAVAILABLE");
  }
  assertEquals([stats.requests, stats.responses], [taken.length, taken.length]);
});

Deno.test("serveToolEndpoint counts events in stats.responses and their failed sends in sendFailures", async () => {
  const actionDescriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "arm.moveit",
    operations: [
      new ToolOperationDescriptor({ name: "move", semantics: "action", statusSupported: true }),
    ],
  });
  const go = Promise.withResolvers<void>();
  const emitted = Promise.withResolvers<void>();
  const pending = new ToolExecutionStatus({ phase: "running" });
  const recorder = recordingLogger();
  const actionHandler = new ToolEndpointHandler(actionDescriptor, {
    endpointInstanceId: "instance-1",
    logger: recorder.logger,
    operations: {
      move: {
        start(_request, _context, events) {
          // Three events once the test has seen the acceptance; the first one's send fails.
          (async () => {
            await go.promise;
            for (let step = 0; step < 3; step++) {
              await events.emit(new ToolEvent({ type: "progress", data: { step } }))
                .catch(() => {});
            }
            emitted.resolve();
          })();
          return new ToolAccepted();
        },
        cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
        status: () => pending,
        result: () => new ToolResultResponse({ status: "pending" }),
      },
    },
  });
  const flow = new LoopbackDataflow();
  const logged: string[] = [];
  const node = serveToolEndpoint(actionHandler, {
    transport: flow.transport,
    // The execution never ends by itself: at shutdown it converges to unknown after the grace.
    graceMs: 20,
    logger: ({ level, message }) => void logged.push(`${level} ${message}`),
  });
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId: "inv-1", attemptId: "att-1" }),
    toolId: "forge.tool.move",
    implementationId: "moveit",
    endpointId: "arm.moveit",
    operation: "move",
  });
  await flow.request(encodeToolEnvelopeIpc(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
      requestId: "r-1",
      endpointInstanceId: "instance-1",
    }),
  ));
  const types: string[] = [];
  const first = await flow.nextOutput();
  types.push(decodeToolEnvelopeIpc(first!.data).messageType);
  flow.failNextSend("link down");
  go.resolve();
  const second = await flow.nextOutput();
  types.push(decodeToolEnvelopeIpc(second!.data).messageType);
  await emitted.promise;
  await flow.stop();
  const stats = await node;
  assertEquals(types, ["tool.invoke.response", "tool.event"]);
  // The response, the last two events and the shutdown's terminal event went out; the failed
  // event was counted and logged.
  assertEquals([stats.responses, stats.sendFailures], [4, 1]);
  assert(logged.some((line) => line.startsWith("error publishing") && line.includes("link down")));
  // The handler records the failed event and the execution shutdown left without an outcome.
  assertEquals(recorder.events(), ["error event.sink_failed", "warn execution.unknown"]);
});

// --- Health state changes are reported when they happen ----------------------------------------

/** Reads every output of `flow` in the background; `until` waits for a matching envelope. */
function gatewayOf(flow: LoopbackDataflow) {
  const seen: ToolEnvelope[] = [];
  let changed = Promise.withResolvers<void>();
  const reading = (async () => {
    for (;;) {
      const output = await flow.nextOutput();
      if (output === null) return;
      seen.push(decodeToolEnvelopeIpc(output.data));
      changed.resolve();
      changed = Promise.withResolvers<void>();
    }
  })();
  return {
    seen,
    reading,
    states: () =>
      seen.filter((envelope) => envelope.messageType === "endpoint.status")
        .map((envelope) => endpointStatusFromEnvelope(envelope).state),
    async until(match: (envelope: ToolEnvelope) => boolean): Promise<void> {
      while (!seen.some(match)) await changed.promise;
    },
  };
}

/** Lifecycle settings where only a state change can send a status while the test runs. */
const NO_PERIOD = {
  unregisterTimeoutMs: 1,
  health: { periodMs: 3_600_000 },
  registration: { responseTimeoutMs: 3_600_000 },
} as const;

function invokeOf(endpointId: string, operation: string, n: number): Uint8Array {
  return encodeToolEnvelopeIpc(makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId: `inv-${n}`, attemptId: "att-1" }),
      toolId: `forge.tool.${operation}`,
      implementationId: "impl",
      endpointId,
      operation,
    }),
    { requestId: `r-${n}`, endpointInstanceId: "instance-1" },
  ));
}

Deno.test("serveToolEndpoint reports busy at a saturating Query's admission and ready at its end", async () => {
  const started = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const blocking = new ToolEndpointHandler(descriptor, {
    endpointInstanceId: "instance-1",
    // The 1 ms unregister of NO_PERIOD gets no answer: not what this test checks.
    logger: silentLogger,
    operations: {
      detect: {
        query: async () => {
          started.resolve();
          await release.promise;
          return new ToolResult({ status: "succeeded" });
        },
      },
    },
  });
  const flow = new LoopbackDataflow();
  const node = serveToolEndpoint(blocking, {
    transport: flow.transport,
    lifecycle: NO_PERIOD,
    logger: () => {},
  });
  const gateway = gatewayOf(flow);
  await gateway.until((envelope) => envelope.messageType === "endpoint.status");
  await flow.request(invokeOf("vision.yolo", "detect", 1));
  await started.promise;
  await delay(0); // whatever was sent has been read
  assertEquals(gateway.states(), ["ready", "busy"]);
  release.resolve();
  await gateway.until((envelope) => envelope.messageType === "tool.invoke.response");
  await delay(0);
  assertEquals(gateway.states(), ["ready", "busy", "ready"]);
  await flow.stop();
  await node;
  await gateway.reading;
  assertEquals(gateway.states(), ["ready", "busy", "ready", "unavailable"]);
});

Deno.test("serveToolEndpoint reports an Action's permit release with no request in between", async () => {
  const actionDescriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "arm.moveit",
    operations: [
      new ToolOperationDescriptor({ name: "move", semantics: "action", statusSupported: true }),
    ],
  });
  const finish = Promise.withResolvers<void>();
  let done = false;
  const actionHandler = new ToolEndpointHandler(actionDescriptor, {
    endpointInstanceId: "instance-1",
    // The 1 ms unregister of NO_PERIOD gets no answer: not what this test checks.
    logger: silentLogger,
    operations: {
      move: {
        start(_request, _context, events) {
          (async () => {
            await finish.promise;
            done = true;
            await events.emit(new ToolEvent({ type: "executor_completed", data: {} }));
          })();
          return new ToolAccepted();
        },
        cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
        status: () => new ToolExecutionStatus({ phase: done ? "completed" : "running" }),
        result: () =>
          done
            ? new ToolResultResponse({
              status: "available",
              result: new ToolResult({ status: "succeeded" }),
            })
            : new ToolResultResponse({ status: "pending" }),
      },
    },
  });
  const flow = new LoopbackDataflow();
  const node = serveToolEndpoint(actionHandler, {
    transport: flow.transport,
    lifecycle: NO_PERIOD,
    logger: () => {},
  });
  const gateway = gatewayOf(flow);
  await flow.request(invokeOf("arm.moveit", "move", 1));
  await gateway.until((envelope) => envelope.messageType === "tool.invoke.response");
  await delay(0);
  assertEquals(gateway.states(), ["ready", "busy"]);
  // The execution ends on its own (a terminal event): no request reaches the node meanwhile.
  finish.resolve();
  await gateway.until((envelope) => envelope.messageType === "tool.event");
  await delay(0);
  assertEquals(gateway.states(), ["ready", "busy", "ready"]);
  await flow.stop();
  await node;
  await gateway.reading;
});

Deno.test("serveToolEndpoint: a throwing health details() is logged once and the node serves on", async () => {
  const flow = new LoopbackDataflow();
  const logged: string[] = [];
  const node = serveToolEndpoint(handler(), {
    transport: flow.transport,
    lifecycle: {
      ...NO_PERIOD,
      health: {
        ...NO_PERIOD.health,
        details: () => {
          throw new Error("sensor gone");
        },
      },
    },
    logger: ({ level, message }) => void logged.push(`${level} ${message}`),
  });
  const gateway = gatewayOf(flow);
  await flow.request(invokeOf("vision.yolo", "detect", 1));
  await gateway.until((envelope) => envelope.messageType === "tool.invoke.response");
  await flow.stop();
  await node;
  await gateway.reading;
  assertEquals(gateway.states(), ["degraded", "unavailable"]);
  assertEquals(logged.filter((line) => line.includes("details() callback failed")), [
    "error the details() callback failed; the snapshot reports degraded",
  ]);
});

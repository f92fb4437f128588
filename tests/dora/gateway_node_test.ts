// The Dora edge of the gateway (src/dora/gateway_node.ts): Arrow IPC framing once per message on
// the routes (the loopback route and the Dora node), with the real endpoint node.
import { assert, assertEquals, assertStrictEquals } from "@std/assert";
import {
  ToolContext,
  ToolEndpointDescriptor,
  ToolExecutionKey,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../../mod.ts";
import {
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import { ToolGateway } from "../../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  runToolGatewayNode,
  serveToolEndpoint,
} from "../../dora.ts";
import { serveGatewayLoopbackRoute } from "../../src/dora/gateway_node.ts";
import { createDemoHandler, demoDescriptor, demoEndpoint } from "../../examples/endpoint.ts";
import { recordingLogger } from "../_helpers.ts";

const YOLO = "vision.yolo";

const descriptors = {
  detector: new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: YOLO,
    operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  }),
};

function context(operation: string, invocationId = "invocation-1", endpointId = YOLO) {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: `forge.tool.${operation}`,
    implementationId: "test",
    endpointId,
    operation,
  });
}

/** What the caller sends: no instance (the gateway fills it). */
const unresolved = (requestId: string) => ({ requestId, endpointInstanceId: undefined });

async function until(condition: () => boolean, what: string): Promise<void> {
  // Bounded by turns of the event loop, not by time.
  for (let turn = 0; turn < 2000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`gave up waiting for ${what}`);
}

Deno.test("gateway routes Query and Action through the loopback with IPC bytes on both hops", async () => {
  const flow = new LoopbackDataflow();
  const node = serveToolEndpoint(createDemoHandler("demo-instance-1"), {
    transport: flow.transport,
    lifecycle: { unregisterTimeoutMs: 300 },
  });
  const logs: string[] = [];
  const gateway = new ToolGateway({
    routes: { demo: demoDescriptor.endpointId },
    logger: ({ level, message }) => logs.push(`${level}: ${message}`),
  });
  const serving = serveGatewayLoopbackRoute(gateway, "demo", flow);
  const caller = gateway.connect();
  const answers: ToolEnvelope[] = [];
  caller.connect((message) => answers.push(message));
  await until(() => gateway.registry.lookup("robot.demo") !== undefined, "the registration");
  assertEquals(await caller.resolveInstance!("robot.demo"), "demo-instance-1");

  const detect = context("detect", "detect-1", "robot.demo");
  await caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: { classes: ["cube"] } }),
      detect,
      unresolved("request-1"),
    ),
  );
  await until(() => answers.length === 1, "the Query answer");
  // The caller's own headers come back: its request id, and no instance (it named none).
  assertEquals(answers[0].messageType, "tool.invoke.response");
  assertEquals(answers[0].requestId, "request-1");
  assertStrictEquals(answers[0].endpointInstanceId, undefined);
  assertEquals(answers[0].payload.outcome, "completed");
  assertEquals((answers[0].payload.result as { status: string }).status, "succeeded");

  // Every message the node published travelled as IPC bytes and decodes as such; the answer it
  // sent carries the gateway's exchange id and the instance the gateway filled in.
  const published = flow.sent.map((output) => decodeToolEnvelopeIpc(output.data));
  const invokeResponse = published.find((message) =>
    message.messageType === "tool.invoke.response"
  )!;
  assertEquals(invokeResponse.endpointInstanceId, "demo-instance-1");
  assertEquals(invokeResponse.requestId, "request-1@gateway-1");

  const move = context("move", "move-1", "robot.demo");
  await caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: { target: "home" } }),
      move,
      unresolved("request-2"),
    ),
  );
  await until(
    () => answers.some((message) => message.payload.type === "executor_completed"),
    "the Action's terminal event",
  );
  await caller.send(makeResultRequestEnvelope(move, unresolved("request-3")));
  await until(() => answers.some((message) => message.requestId === "request-3"), "the result");
  const accepted = answers.find((message) => message.requestId === "request-2")!;
  assertEquals(accepted.payload.outcome, "accepted");
  const events = answers.filter((message) => message.messageType === "tool.event");
  assertEquals(events.map((event) => event.sequence), events.map((_, index) => index));
  assert(answers.indexOf(accepted) < answers.indexOf(events[0]), "acceptance before events");
  const result = answers.find((message) => message.requestId === "request-3")!;
  assertEquals(result.payload.status, "available");

  await flow.stop();
  await node;
  await serving;
  // The node unregistered on shutdown.
  assertStrictEquals(gateway.registry.lookup("robot.demo"), undefined);
  assertEquals(gateway.stats.dropped, 0, logs.join("\n"));
  assertEquals(gateway.pendingExchanges, 0);
  await gateway.close();
});

Deno.test("gateway as a Dora node: one input/output pair per provider route and per Dora caller", async () => {
  const flow = new LoopbackDataflow();
  const logs: string[] = [];
  const gateway = new ToolGateway({
    routes: { detector: YOLO },
    logger: ({ level, message }) => logs.push(`${level}: ${message}`),
  });
  const running = runToolGatewayNode(gateway, {
    transport: flow.transport,
    callers: { planner_request: "planner_response" },
  });
  // The provider registers on the route's input; the Registry answers on the route's output.
  await flow.input(
    "detector_response",
    encodeToolEnvelopeIpc(
      makeRegistrationEnvelope(descriptors.detector, {
        endpointInstanceId: "instance-1",
        requestId: "register-1",
      }),
    ),
  );
  const registryAnswer = (await flow.nextOutput())!;
  assertEquals(registryAnswer.id, "detector_request");
  assertEquals(
    decodeToolEnvelopeIpc(registryAnswer.data).messageType,
    "endpoint.registry.response",
  );

  // A Dora caller sends a request without an instance; the gateway forwards it to instance-1.
  await flow.input(
    "planner_request",
    encodeToolEnvelopeIpc(
      makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        context("detect"),
        unresolved("invoke-1"),
      ),
    ),
  );
  const request = (await flow.nextOutput())!;
  assertEquals(request.id, "detector_request");
  const forwarded = decodeToolEnvelopeIpc(request.data);
  assertEquals(forwarded.endpointInstanceId, "instance-1");
  await flow.input(
    "detector_response",
    encodeToolEnvelopeIpc(
      makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), forwarded),
    ),
  );
  const answer = (await flow.nextOutput())!;
  assertEquals(answer.id, "planner_response");
  const decoded = decodeToolEnvelopeIpc(answer.data);
  assertEquals([decoded.requestId, decoded.endpointInstanceId], ["invoke-1", undefined]);
  assertEquals(decoded.payload, {
    outcome: "completed",
    result: { status: "succeeded", outputs: {} },
  });

  // Garbage on a caller input is dropped; garbage on a route input is dropped by the gateway,
  // decoded once at the edge; a tick is ignored.
  await flow.input("planner_request", new Uint8Array([9, 9, 9]));
  await flow.input("detector_response", new Uint8Array([1, 2, 3]));
  await flow.input("tick", new Uint8Array(0));
  await flow.stop();
  const stats = await running;
  assertEquals(stats.stopReason, "stop");
  assertEquals(stats.inputs, 6);
  assertEquals(stats.invalidCallerInputs, 1);
  assertEquals(stats.gateway.forwarded, 1);
  assertEquals(stats.gateway.answered, 1);
  assertEquals(stats.gateway.dropped, 1);
  assertEquals(logs.length, 1);
  assert(
    logs[0].startsWith("warn: dropped: undecodable message on route 'detector': "),
    logs[0],
  );
  assert(flow.isClosed);
});

Deno.test("gateway on the loopback: a provider restart in the middle of a Session makes it unknown", async () => {
  const gateway = new ToolGateway({ routes: { demo: "robot.demo" }, logger: () => {} });
  const caller = gateway.connect();
  const answers: ToolEnvelope[] = [];
  caller.connect((message) => answers.push(message));
  const start = (instance: string) => {
    const flow = new LoopbackDataflow();
    const recorder = recordingLogger();
    const node = serveToolEndpoint(
      demoEndpoint(20, recorder.logger).createHandler({ endpointInstanceId: instance }),
      { transport: flow.transport, lifecycle: { unregisterTimeoutMs: 50 }, graceMs: 50 },
    );
    return { flow, node, recorder, serving: serveGatewayLoopbackRoute(gateway, "demo", flow) };
  };
  const first = start("process-1");
  await until(() => gateway.registry.lookup("robot.demo") !== undefined, "the first registration");
  const policy = context("policy", "policy-1", "robot.demo");
  await caller.send(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), policy, unresolved("start-1")),
  );
  await until(() => answers.some((message) => message.requestId === "start-1"), "the acceptance");
  assertEquals(
    answers.find((message) => message.requestId === "start-1")!.payload.outcome,
    "accepted",
  );

  // The provider process dies without unregistering: its dataflow closes under it.
  await first.flow.transport.close();
  await first.node;
  await first.serving;
  assertEquals(gateway.registry.lookup("robot.demo")?.endpointInstanceId, "process-1");
  // The dead process could publish neither the Session's terminal event nor its unregister.
  assertEquals([...new Set(first.recorder.events())].sort(), [
    "error event.sink_failed",
    "error node.publish_failed",
    "error node.shutdown_hook_failed",
    "warn event.terminal_refused",
    "warn provider.aborted",
    "warn registration.unregister_failed",
  ]);

  // A new process start registers on the same route and replaces it.
  const second = start("process-2");
  await until(
    () => gateway.registry.lookup("robot.demo")?.endpointInstanceId === "process-2",
    "the replacement",
  );
  await caller.send(makeStatusRequestEnvelope(policy, unresolved("status-1")));
  const status = answers.find((message) => message.requestId === "status-1")!;
  assertEquals(status.payload, {
    status: {
      phase: "unknown",
      details: {},
      error: {
        code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
        message: "endpoint instance 'process-1' of 'robot.demo' was replaced by 'process-2'; " +
          "the outcome of the execution cannot be recovered",
        retryable: false,
        details: {
          endpoint_instance_id: "process-1",
          current_endpoint_instance_id: "process-2",
        },
      },
    },
  });
  // New work goes to the new process.
  await caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect", "detect-1", "robot.demo"),
      unresolved("detect-1"),
    ),
  );
  await until(() => answers.some((message) => message.requestId === "detect-1"), "the Query");
  assertEquals(
    answers.find((message) => message.requestId === "detect-1")!.payload.outcome,
    "completed",
  );

  await second.flow.stop();
  await second.node;
  await second.serving;
  assertEquals(second.recorder.events(), []);
  await gateway.close();
});

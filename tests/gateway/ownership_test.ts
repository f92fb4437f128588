// Caller ownership in the router: an execution belongs to the caller that started it (its
// connect() handle, or every handle of one `callerId`). A stranger's status, result, cancel and
// stop get exactly what the endpoint answers for a key it does not know; a stranger's repeated
// invoke is refused and never moves the events.
import { assertEquals } from "@std/assert";
import {
  ToolAccepted,
  type ToolClientTransport,
  ToolContext,
  ToolExecutionKey,
  ToolRequest,
} from "../../mod.ts";
import {
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  type ToolEnvelope,
} from "../../wire.ts";
import { ToolGateway } from "../../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  runToolGatewayNode,
} from "../../dora.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { HostedEndpoint } from "./_hosted.ts";

const ENDPOINT = "robot.demo";
const INSTANCE = "demo-1";

function context(operation: string, invocationId: string): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: `forge.tool.${operation}`,
    implementationId: "demo",
    endpointId: ENDPOINT,
    operation,
  });
}

const unresolved = (requestId: string) => ({ requestId, endpointInstanceId: undefined });

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 2000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** A caller of the gateway and what it received. */
function caller(gateway: ToolGateway, callerId?: string) {
  const transport: ToolClientTransport = callerId === undefined
    ? gateway.connect()
    : gateway.connect({ callerId });
  const received: ToolEnvelope[] = [];
  transport.connect((message) => received.push(message));
  const answer = async (request: ToolEnvelope): Promise<ToolEnvelope> => {
    await transport.send(request);
    await until(
      () => received.some((m) => m.requestId === request.requestId),
      `the answer to ${request.requestId}`,
    );
    return received.find((m) => m.requestId === request.requestId)!;
  };
  const events = () => received.filter((m) => m.messageType === "tool.event");
  return { transport, received, answer, events };
}

/** What the endpoint itself answers for requests naming a key it never saw. */
async function unknownKeyAnswers(hosted: HostedEndpoint) {
  const ghost = context("policy", "invocation-ghost");
  const pinned = (requestId: string) => ({ requestId, endpointInstanceId: INSTANCE });
  const ask = async (request: ToolEnvelope) => {
    const [answer] = await hosted.handler.dispatch(request);
    return { messageType: answer.messageType, payload: answer.payload };
  };
  return {
    status: await ask(makeStatusRequestEnvelope(ghost, pinned("g-status"))),
    result: await ask(makeResultRequestEnvelope(ghost, pinned("g-result"))),
    stop: await ask(makeControlRequestEnvelope("stop", ghost, pinned("g-stop"))),
  };
}

const shape = (answer: ToolEnvelope) => ({
  messageType: answer.messageType,
  payload: answer.payload,
});

Deno.test("ownership: a stranger's status, result and stop get the endpoint's unknown-key answers", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(2).createHandler({ endpointInstanceId: INSTANCE }),
  );
  hosted.register();
  const owner = caller(gateway);
  const stranger = caller(gateway);
  const session = context("policy", "invocation-1");
  const invoked = await owner.answer(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), session, unresolved("i-1")),
  );
  assertEquals(invoked.payload.outcome, "accepted");
  const expected = await unknownKeyAnswers(hosted);
  assertEquals(expected.status.messageType, "tool.error");
  assertEquals(expected.result.payload, { status: "not_found" });

  // The stranger learns nothing: the answers of a key that does not exist, byte for byte.
  const status = await stranger.answer(makeStatusRequestEnvelope(session, unresolved("s-1")));
  const result = await stranger.answer(makeResultRequestEnvelope(session, unresolved("s-2")));
  const stop = await stranger.answer(
    makeControlRequestEnvelope("stop", session, unresolved("s-3")),
  );
  assertEquals(shape(status), expected.status);
  assertEquals(shape(result), expected.result);
  assertEquals(shape(stop), expected.stop);
  // Each answer correlates with the stranger's own request.
  assertEquals([status.requestId, result.requestId, stop.requestId], ["s-1", "s-2", "s-3"]);

  // The session is still running: the stranger's stop never reached it.
  const ownerStatus = await owner.answer(makeStatusRequestEnvelope(session, unresolved("o-1")));
  assertEquals(ownerStatus.payload, { status: { phase: "running", details: {} } });
  const stopped = await owner.answer(
    makeControlRequestEnvelope("stop", session, unresolved("o-2")),
  );
  assertEquals(stopped.messageType, "tool.control.response");
  await until(
    () => owner.events().some((e) => e.payload.type === "stopped"),
    "the stopped event",
  );
  assertEquals(stranger.events(), []);
  await gateway.close();
  await hosted.close();
});

Deno.test("ownership: a stranger's cancel of an Action is answered as for an unknown key", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(5).createHandler({ endpointInstanceId: INSTANCE }),
  );
  hosted.register();
  const owner = caller(gateway);
  const stranger = caller(gateway);
  const move = context("move", "invocation-1");
  await owner.answer(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), move, unresolved("i-1")),
  );
  const [expected] = await hosted.handler.dispatch(
    makeControlRequestEnvelope("cancel", context("move", "invocation-ghost"), {
      requestId: "g-1",
      endpointInstanceId: INSTANCE,
    }),
  );
  const cancel = await stranger.answer(
    makeControlRequestEnvelope("cancel", move, unresolved("s-1")),
  );
  assertEquals(shape(cancel), shape(expected));
  assertEquals(expected.payload, {
    response: {
      command: "cancel",
      status: "rejected",
      details: {},
      error: {
        code: "FORGE_ENDPOINT_EXECUTION_NOT_FOUND",
        message:
          "no execution with this key is known here: it was never started or it was forgotten",
        retryable: false,
        details: {},
      },
    },
  });
  // The move completes for its owner.
  await until(
    () => owner.events().some((e) => e.payload.type === "executor_completed"),
    "the move's completion",
  );
  assertEquals(stranger.events(), []);
  await gateway.close();
  await hosted.close();
});

Deno.test("ownership: a stranger's repeated invoke is refused and never takes over the events", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(2).createHandler({ endpointInstanceId: INSTANCE }),
  );
  hosted.register();
  const owner = caller(gateway);
  const stranger = caller(gateway);
  const session = context("policy", "invocation-1");
  const invoke = (requestId: string) =>
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), session, unresolved(requestId));
  await owner.answer(invoke("i-1"));
  const forwardedBefore = gateway.stats.forwarded;
  const again = await stranger.answer(invoke("s-1"));
  assertEquals(again.messageType, "tool.invoke.response");
  assertEquals(again.payload, {
    outcome: "rejected",
    error: {
      code: "FORGE_PROTOCOL_DEDUP_CONFLICT",
      message: "the execution key is already in use by another caller",
      retryable: false,
      details: {},
    },
  });
  // Answered by the gateway: nothing reached the endpoint.
  assertEquals(gateway.stats.forwarded, forwardedBefore);
  // The owner keeps receiving the session's heartbeats; the stranger gets none.
  const seen = owner.events().length;
  await until(() => owner.events().length >= seen + 3, "three more heartbeats");
  assertEquals(stranger.events(), []);
  await owner.answer(makeControlRequestEnvelope("stop", session, unresolved("o-stop")));
  await until(() => owner.events().some((e) => e.payload.type === "stopped"), "stopped");
  assertEquals(stranger.events(), []);
  await gateway.close();
  await hosted.close();
});

Deno.test("ownership: handles of one callerId share an execution; a re-invoke moves the events to the new handle", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(2).createHandler({ endpointInstanceId: INSTANCE }),
  );
  hosted.register();
  const first = caller(gateway, "planner");
  const second = caller(gateway, "planner");
  const other = caller(gateway, "someone-else");
  const session = context("policy", "invocation-1");
  const invoke = (requestId: string) =>
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), session, unresolved(requestId));
  await first.answer(invoke("i-1"));
  const status = await second.answer(makeStatusRequestEnvelope(session, unresolved("st-1")));
  assertEquals(status.payload, { status: { phase: "running", details: {} } });
  const refused = await other.answer(makeStatusRequestEnvelope(session, unresolved("st-2")));
  assertEquals(refused.messageType, "tool.error");
  assertEquals(
    (refused.payload.error as { code: string }).code,
    "FORGE_ENDPOINT_EXECUTION_NOT_FOUND",
  );
  // The first handle closes (a reconnect); the second re-invokes: the duplicate's replayed
  // acceptance, and the events from now on, are its own.
  first.transport.close?.();
  const replay = await second.answer(invoke("i-2"));
  assertEquals(replay.payload.outcome, "accepted");
  await until(() => second.events().length >= 2, "heartbeats on the new handle");
  await second.answer(makeControlRequestEnvelope("stop", session, unresolved("stop")));
  await until(() => second.events().some((e) => e.payload.type === "stopped"), "stopped");
  assertEquals(other.events(), []);
  await gateway.close();
  await hosted.close();
});

Deno.test("ownership on the Dora caller path: each caller input owns its executions", async () => {
  const flow = new LoopbackDataflow();
  const gateway = new ToolGateway({ routes: { detector: ENDPOINT }, logger: () => {} });
  const running = runToolGatewayNode(gateway, {
    transport: flow.transport,
    callers: { planner_request: "planner_response", observer_request: "observer_response" },
  });
  await flow.input(
    "detector_response",
    encodeToolEnvelopeIpc(
      makeRegistrationEnvelope(demoEndpoint().descriptor, {
        endpointInstanceId: INSTANCE,
        requestId: "register-1",
      }),
    ),
  );
  assertEquals((await flow.nextOutput())!.id, "detector_request");
  const move = context("move", "invocation-1");
  await flow.input(
    "planner_request",
    encodeToolEnvelopeIpc(
      makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), move, unresolved("i-1")),
    ),
  );
  const forwarded = decodeToolEnvelopeIpc((await flow.nextOutput())!.data);
  await flow.input(
    "detector_response",
    encodeToolEnvelopeIpc(makeInvokeResponseEnvelope(new ToolAccepted(), forwarded)),
  );
  assertEquals((await flow.nextOutput())!.id, "planner_response");
  // Another Dora caller asks for the planner's execution: answered by the gateway, not found.
  await flow.input(
    "observer_request",
    encodeToolEnvelopeIpc(makeStatusRequestEnvelope(move, unresolved("s-1"))),
  );
  const answer = (await flow.nextOutput())!;
  assertEquals(answer.id, "observer_response");
  const decoded = decodeToolEnvelopeIpc(answer.data);
  assertEquals([decoded.messageType, decoded.requestId], ["tool.error", "s-1"]);
  assertEquals(
    (decoded.payload.error as { code: string }).code,
    "FORGE_ENDPOINT_EXECUTION_NOT_FOUND",
  );
  await flow.stop();
  const stats = await running;
  assertEquals([stats.gateway.forwarded, stats.gateway.refused], [1, 1]);
});

/**
 * The caller side: a Query through {@linkcode ToolEndpointClient} against the same Query written
 * by hand over `handler.dispatch` (fresh ids, the invoke envelope, dispatch, the response payload
 * decoded), measured in the same run; the client's target is at most 1.5× that baseline. Also an
 * Action invoke + result through the client; a Query over the loopback dataflow (Arrow IPC bytes
 * both ways, the endpoint served by `serveToolEndpoint`) for the cost of the carrier hop; and the
 * full round trip through a {@linkcode ToolGateway}: caller → gateway → provider → caller, both
 * from a caller in the gateway's process (`gateway.connect()`, IPC bytes on the provider hop) and
 * from a Dora caller of the gateway node (`examples/gateway_loopback.ts`: the dataflow of
 * `gateway_dataflow.yml` on three loopback dataflows, IPC bytes on both hops). The gateway node's
 * Query is also timed in its parts, each alone: the same Query routed in process (client, gateway
 * router and handler, no IPC) and the IPC encodes and decodes of its four hops; the summary
 * compares the whole with their sum (what the dataflows, node runners and Dora edges add).
 */
import {
  InProcessToolClientTransport,
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointClient,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../mod.ts";
import {
  invokeResponseFromPayload,
  makeInvokeRequestEnvelope,
  makeRegistrationEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../wire.ts";
import { ToolGateway } from "../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolClientTransport,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  LoopbackToolClientTransport,
  serveToolEndpoint,
} from "../dora.ts";
import { startGatewayLoopback } from "../examples/gateway_loopback.ts";
import { serveGatewayLoopbackRoute } from "../src/dora/gateway_node.ts";
import { steadyBench } from "./_steady.ts";

/**
 * The warmup of every case here: a client Query through the gateway node takes 52–61 µs in its
 * first two seconds (61, then 52) and 37–41 µs from then on (in a process of its own).
 */
const CLIENT_WARMUP_MS = 2000;

const ENDPOINT = "vision.yolo";
const INSTANCE = "yolo-1";
const done = new ToolResult({ status: "succeeded", outputs: { objects: [{ label: "cube" }] } });
const available = new ToolResultResponse({ status: "available", result: done });
const completed = new ToolExecutionStatus({ phase: "completed" });
const ARGS = { class: "cube", threshold: 0.5 };

const descriptor = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: ENDPOINT,
  operations: [
    new ToolOperationDescriptor({ name: "detect", semantics: "query", maxConcurrency: 64 }),
    new ToolOperationDescriptor({
      name: "track",
      semantics: "action",
      cancellable: true,
      statusSupported: true,
      maxConcurrency: 64,
    }),
  ],
});

function makeHandler(): ToolEndpointHandler {
  return new ToolEndpointHandler(descriptor, {
    endpointInstanceId: INSTANCE,
    maxRetainedExecutions: 1024,
    operations: {
      detect: { query: () => done },
      // Completes at start: the invoke answers with acceptance, the result is available at once.
      track: {
        start: () => new ToolAccepted(),
        cancel: () => new ToolControlResponse({ command: "cancel", status: "terminal" }),
        status: () => completed,
        result: () => available,
      },
    },
  });
}

const handler = makeHandler();
const client = new ToolEndpointClient({
  transport: new InProcessToolClientTransport(handler),
  endpointId: ENDPOINT,
  descriptor,
});

steadyBench({
  name: "handler.dispatch by hand (baseline)",
  group: "client query",
  warmupMs: CLIENT_WARMUP_MS,
  baseline: true,
  async fn() {
    const context = new ToolContext({
      executionKey: new ToolExecutionKey({
        invocationId: crypto.randomUUID(),
        attemptId: crypto.randomUUID(),
      }),
      toolId: ENDPOINT,
      implementationId: ENDPOINT,
      endpointId: ENDPOINT,
      operation: "detect",
    });
    const request = makeInvokeRequestEnvelope(new ToolRequest({ arguments: ARGS }), context, {
      requestId: crypto.randomUUID(),
      endpointInstanceId: INSTANCE,
    });
    const [response] = await handler.dispatch(request);
    const result = invokeResponseFromPayload(response.payload);
    if (!(result instanceof ToolResult)) throw new Error("expected a result");
  },
});

steadyBench({
  name: "ToolEndpointClient.query (in process)",
  group: "client query",
  warmupMs: CLIENT_WARMUP_MS,
  async fn() {
    const result = await client.query("detect", ARGS);
    if (result.status !== "succeeded") throw new Error("expected success");
  },
});

steadyBench({
  name: "ToolEndpointClient.invoke + result (in process)",
  group: "client action",
  warmupMs: CLIENT_WARMUP_MS,
  async fn() {
    const invocation = await client.invoke("track", ARGS);
    await invocation.result();
  },
});

// The same Query over a loopback dataflow: the client encodes Arrow IPC, the served node
// decodes, dispatches and encodes, the client decodes.
const flow = new LoopbackDataflow();
const served = makeHandler();
void serveToolEndpoint(served, { transport: flow.transport });
const loopbackClient = new ToolEndpointClient({
  transport: new LoopbackToolClientTransport(flow),
  endpointId: ENDPOINT,
  endpointInstanceId: INSTANCE,
  descriptor,
});

steadyBench({
  name: "handler.dispatch by hand (baseline)",
  group: "client over loopback",
  warmupMs: CLIENT_WARMUP_MS,
  baseline: true,
  async fn() {
    const context = new ToolContext({
      executionKey: new ToolExecutionKey({
        invocationId: crypto.randomUUID(),
        attemptId: crypto.randomUUID(),
      }),
      toolId: ENDPOINT,
      implementationId: ENDPOINT,
      endpointId: ENDPOINT,
      operation: "detect",
    });
    const request = makeInvokeRequestEnvelope(new ToolRequest({ arguments: ARGS }), context, {
      requestId: crypto.randomUUID(),
      endpointInstanceId: INSTANCE,
    });
    const [response] = await handler.dispatch(request);
    invokeResponseFromPayload(response.payload);
  },
});

steadyBench({
  name: "ToolEndpointClient.query over the loopback (IPC both ways)",
  group: "client over loopback",
  warmupMs: CLIENT_WARMUP_MS,
  async fn() {
    await loopbackClient.query("detect", ARGS);
  },
});

// The full round trip through a ToolGateway. A caller in the gateway's process: the gateway
// routes envelopes by endpoint id; its Dora edge encodes each request once as IPC bytes for the
// provider on its route (which registered with the gateway's Registry) and decodes its answer once.
const inProcessGateway = new ToolGateway({ routes: { detector: ENDPOINT } });
const routeFlow = new LoopbackDataflow();
void serveToolEndpoint(makeHandler(), { transport: routeFlow.transport, lifecycle: true });
void serveGatewayLoopbackRoute(inProcessGateway, "detector", routeFlow);
const gatewayClient = new ToolEndpointClient({
  transport: inProcessGateway.connect(),
  endpointId: ENDPOINT,
  descriptor,
});

// A Dora caller of the gateway node: planner → gateway → provider → gateway → planner, each hop
// one ToolMessage as Arrow IPC bytes between two loopback dataflows.
const gatewayNode = new ToolGateway({ routes: { detector: ENDPOINT } });
const dataflow = startGatewayLoopback({
  gateway: gatewayNode,
  handler: makeHandler(),
  serve: { lifecycle: true },
});
const plannerClient = new ToolEndpointClient({
  transport: new DoraToolClientTransport(dataflow.planner),
  endpointId: ENDPOINT,
  descriptor,
});

for (let turn = 0; turn < 1000; turn++) {
  if (
    inProcessGateway.registry.lookup(ENDPOINT) !== undefined &&
    gatewayNode.registry.lookup(ENDPOINT) !== undefined
  ) break;
  await new Promise((resolve) => setTimeout(resolve, 1));
}

steadyBench({
  name: "ToolEndpointClient.query through gateway.connect() (IPC to the provider and back)",
  group: "client over loopback",
  warmupMs: CLIENT_WARMUP_MS,
  async fn() {
    await gatewayClient.query("detect", ARGS);
  },
});

steadyBench({
  name: "ToolEndpointClient.query through the gateway node (IPC bytes on both hops)",
  group: "client over loopback",
  warmupMs: CLIENT_WARMUP_MS,
  async fn() {
    await plannerClient.query("detect", ARGS);
  },
});

// The gateway node's Query in its parts, each timed alone: the summary compares the whole with
// their sum, which leaves what the three loopback dataflows, their node runners and the gateway's
// Dora edge add between the parts.
//
// Part 1: the same Query routed in process. The client, the gateway's router (ids, ownership,
// exchange table, correlation) and the provider's handler, with the provider attached to the
// route in process, so no message is framed as IPC.
const routedGateway = new ToolGateway({ routes: { detector: ENDPOINT } });
const routedHandler = makeHandler();
let forwarded: ToolEnvelope | undefined;
let answered: ToolEnvelope | undefined;
routedGateway.attachRoute("detector", async (envelope) => {
  if (envelope.messageType === "endpoint.registry.response") return;
  forwarded = envelope;
  for (const answer of await routedHandler.dispatch(envelope)) {
    answered = answer;
    routedGateway.receive("detector", answer);
  }
});
routedGateway.receive(
  "detector",
  makeRegistrationEnvelope(descriptor, { endpointInstanceId: INSTANCE, requestId: "register-1" }),
);
const routedClient = new ToolEndpointClient({
  transport: routedGateway.connect(),
  endpointId: ENDPOINT,
  descriptor,
});
if ((await routedClient.query("detect", ARGS)).status !== "succeeded") {
  throw new Error("the Query routed in process did not succeed");
}

steadyBench({
  name: "part: ToolEndpointClient.query routed in process (client, router, handler; no IPC)",
  group: "gateway node parts",
  warmupMs: CLIENT_WARMUP_MS,
  baseline: true,
  async fn() {
    await routedClient.query("detect", ARGS);
  },
});

// Part 2: the IPC of the four hops, on the messages of the routed Query above, each framed and
// read once per hop as the gateway node's path does: the caller encodes the request its factory
// built, the gateway decodes it and encodes the decoded request for the provider, which decodes
// it; the provider encodes its handler's response, the gateway decodes it and encodes it for the
// caller, which decodes it.
const hopRequest = forwarded!;
const hopResponse = answered!;
steadyBench({
  name: "part: the four hops' IPC (each message encoded and decoded once per hop)",
  group: "gateway node parts",
  warmupMs: CLIENT_WARMUP_MS,
  // deno-lint-ignore require-await
  async fn() {
    const atGateway = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(hopRequest));
    decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(atGateway));
    const fromProvider = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(hopResponse));
    decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(fromProvider));
  },
});

/**
 * The README's demo: an endpoint node (detector Query, arm Action, policy Session) served on the
 * embedded loopback dataflow, with this script playing the Gateway and its in-memory Registry.
 * The node registers (and renews a short lease while it serves), reports its health, answers the
 * invocations, and unregisters when stopped. Every exchange travels the full carrier path —
 * envelope → Arrow ToolMessage → IPC bytes → node → IPC bytes → envelope — and is printed with
 * its timing.
 *
 * Run it with `deno task demo`.
 *
 * @module
 */
import {
  EndpointRegistry,
  endpointRegistryResponseFromPayload,
  endpointStatusFromEnvelope,
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  ToolContext,
  type ToolEnvelope,
  ToolExecutionKey,
  ToolRequest,
} from "../mod.ts";
import {
  decodeToolMessageIpc,
  encodeToolMessageIpc,
  LoopbackDataflow,
  serveToolEndpoint,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../dora.ts";
import { createDemoHandler, demoDescriptor } from "./endpoint.ts";

const INSTANCE = "demo-instance-1";
const started = performance.now();
const elapsed = () => `${(performance.now() - started).toFixed(1).padStart(7)} ms`;

function summary(envelope: ToolEnvelope): string {
  if (envelope.messageType === "endpoint.registry.response") {
    const response = endpointRegistryResponseFromPayload(envelope.payload);
    const lease = response.leaseTtlMs === undefined ? "" : `, lease ${response.leaseTtlMs} ms`;
    return `${envelope.messageType} ${response.operation} ${response.status} ` +
      `(revision ${response.registryRevision}${lease})`;
  }
  if (envelope.messageType === "endpoint.status") {
    const status = endpointStatusFromEnvelope(envelope);
    return `${envelope.messageType} ${status.state} (active ${status.activeInvocations})`;
  }
  if (envelope.messageType.startsWith("endpoint.")) {
    return `${envelope.messageType} ${envelope.endpointId} instance ${envelope.endpointInstanceId}`;
  }
  const payload = JSON.stringify(envelope.payload);
  const text = payload.length > 110 ? `${payload.slice(0, 107)}...` : payload;
  const sequence = envelope.sequence === undefined ? "" : ` #${envelope.sequence}`;
  return `${envelope.messageType}${sequence} ${envelope.operation}/${envelope.invocationId} ${text}`;
}

/**
 * The Gateway side: sends requests as IPC bytes, matches responses by request id, and answers
 * the node's management messages with its Registry.
 */
class Gateway {
  readonly #flow: LoopbackDataflow;
  readonly #registry = new EndpointRegistry({
    routes: { detector: demoDescriptor.endpointId },
    leaseTtlMs: 250, // short, so the trace shows renewals
  });
  readonly #waiting = new Map<string, PromiseWithResolvers<ToolEnvelope>>();
  readonly #events = new Map<string, ToolEnvelope[]>();
  readonly #reading: Promise<void>;

  constructor(flow: LoopbackDataflow) {
    this.#flow = flow;
    this.#reading = this.#read();
  }

  async #read(): Promise<void> {
    for (;;) {
      const output = await this.#flow.nextOutput();
      if (output === null) return;
      const envelope = toolMessageToEnvelope(decodeToolMessageIpc(output.data));
      console.log(`${elapsed()}  <- ${summary(envelope)}  (${output.data.length} B IPC)`);
      if (
        envelope.messageType === "endpoint.register" ||
        envelope.messageType === "endpoint.unregister"
      ) {
        // The Registry decides; its answer goes back on the node's request input.
        const response = this.#registry.handle(envelope, "detector");
        console.log(`${elapsed()}  -> ${summary(response)}`);
        this.#flow.request(encodeToolMessageIpc(toolEnvelopeToMessage(response))).catch(() => {});
      } else if (envelope.messageType === "tool.event") {
        const list = this.#events.get(envelope.invocationId!) ?? [];
        list.push(envelope);
        this.#events.set(envelope.invocationId!, list);
      } else {
        this.#waiting.get(envelope.requestId!)?.resolve(envelope);
      }
    }
  }

  async send(request: ToolEnvelope): Promise<ToolEnvelope> {
    const bytes = encodeToolMessageIpc(toolEnvelopeToMessage(request));
    const answer = Promise.withResolvers<ToolEnvelope>();
    this.#waiting.set(request.requestId!, answer);
    console.log(`${elapsed()}  -> ${summary(request)}  (${bytes.length} B IPC)`);
    await this.#flow.request(bytes);
    const response = await answer.promise;
    this.#waiting.delete(request.requestId!);
    return response;
  }

  events(invocationId: string): readonly ToolEnvelope[] {
    return this.#events.get(invocationId) ?? [];
  }

  async waitForEvent(invocationId: string, type: string): Promise<void> {
    while (!this.events(invocationId).some((event) => event.payload.type === type)) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  finished(): Promise<void> {
    return this.#reading;
  }
}

function context(operation: string, invocationId: string): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: `forge.tool.${operation}`,
    implementationId: "demo",
    endpointId: demoDescriptor.endpointId,
    operation,
  });
}

let requestNumber = 0;
const ids = () => ({ requestId: `request-${++requestNumber}`, endpointInstanceId: INSTANCE });

const flow = new LoopbackDataflow();
const node = serveToolEndpoint(createDemoHandler(INSTANCE), {
  transport: flow.transport,
  lifecycle: { health: { periodMs: 200 }, unregisterTimeoutMs: 300 },
  logger: (level, message) => {
    if (level !== "debug") console.log(`${elapsed()}  [node ${level}] ${message}`);
  },
});
const gateway = new Gateway(flow);
console.log("== Registration: the node announces itself");
await new Promise((resolve) => setTimeout(resolve, 30));

console.log("== Query: detector");
await gateway.send(
  makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { classes: ["cube", "cylinder"] } }),
    context("detect", "detect-1"),
    ids(),
  ),
);

console.log("== Action: arm moves to 'home', completes with progress events");
const move = context("move", "move-1");
await gateway.send(
  makeInvokeRequestEnvelope(new ToolRequest({ arguments: { target: "home" } }), move, ids()),
);
await gateway.send(makeStatusRequestEnvelope(move, ids()));
await gateway.waitForEvent("move-1", "executor_completed");
await gateway.send(makeResultRequestEnvelope(move, ids()));

console.log("== Action: a second move, cancelled by the operator");
const cancelled = context("move", "move-2");
await gateway.send(
  makeInvokeRequestEnvelope(new ToolRequest({ arguments: { target: "shelf" } }), cancelled, ids()),
);
await new Promise((resolve) => setTimeout(resolve, 50));
await gateway.send(
  makeControlRequestEnvelope("cancel", cancelled, { ...ids(), reason: "operator request" }),
);
await gateway.waitForEvent("move-2", "cancelled");
await gateway.send(makeResultRequestEnvelope(cancelled, ids()));

console.log("== Session: policy runs with heartbeats until stopped");
const session = context("policy", "policy-1");
await gateway.send(
  makeInvokeRequestEnvelope(new ToolRequest({ arguments: { task: "pick cube" } }), session, ids()),
);
await new Promise((resolve) => setTimeout(resolve, 70));
await gateway.send(makeControlRequestEnvelope("stop", session, { ...ids(), reason: "done" }));
await gateway.waitForEvent("policy-1", "stopped");
await gateway.send(makeResultRequestEnvelope(session, ids()));

console.log("== Stop: the node shuts down gracefully and unregisters");
await flow.stop();
const stats = await node;
await gateway.finished();
console.log(
  `${elapsed()}  node stopped (${stats.stopReason}): ${stats.requests} requests, ` +
    `${stats.responses} messages published, ${stats.errors} errors`,
);

import { assert, assertEquals, assertRejects } from "@std/assert";
import {
  EndpointRegistry,
  endpointRegistryResponseFromPayload,
  makeRegistrationEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  type ToolEnvelope,
  ToolOperationDescriptor,
  ToolResult,
} from "../mod.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
} from "../dora.ts";

const descriptor = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: "vision.yolo",
  operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
});

function handler(): ToolEndpointHandler {
  return new ToolEndpointHandler(descriptor, {
    endpointInstanceId: "instance-1",
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
  await assertRejects(
    () => binding.dispatchIpc(encodeToolEnvelopeIpc(response)),
    RangeError,
    "execution request",
  );
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
  const node = serveToolEndpoint(handler(), {
    transport: flow.transport,
    lifecycle: { unregisterTimeoutMs: 200, health: { periodMs: 60_000 } },
    logger: () => {},
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
});

// Messages a TypeScript user can act on: constructor errors name the TypeScript field and the
// Wire field, while decoding keeps the reference's messages byte for byte.
import { assertEquals, assertInstanceOf, assertThrows } from "@std/assert";
import { ToolContext, ToolExecutionKey, ToolOperationDescriptor } from "../../mod.ts";
import {
  decodeEnvelope,
  EndpointRegistryResponse,
  invokeRequestFromEnvelope,
  ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import { envelopeInit } from "../_helpers.ts";

const context = {
  executionKey: new ToolExecutionKey({ invocationId: "i", attemptId: "a" }),
  toolId: "forge.tool.detect",
  implementationId: "yolo",
  endpointId: "vision.yolo",
  operation: "detect",
};

Deno.test("constructor errors name the TypeScript field, then the Wire field", () => {
  const cases: [() => unknown, ErrorConstructor, string][] = [
    [
      () => new ToolContext({ ...context, toolId: " " }),
      RangeError,
      "toolId (tool_id) must be a non-empty string",
    ],
    [
      () => new ToolExecutionKey({ invocationId: "", attemptId: "a" }),
      RangeError,
      "invocationId (invocation_id) must be a non-empty string",
    ],
    [
      () => new ToolContext({ ...context, executionKey: {} as never }),
      TypeError,
      "executionKey (execution_key) must be a ToolExecutionKey",
    ],
    [
      () => new ToolOperationDescriptor({ name: "m", semantics: "query", maxConcurrency: 0 }),
      RangeError,
      "maxConcurrency (max_concurrency) must be in [1, 9007199254740991]",
    ],
    [
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 1,
          leaseTtlMs: 0,
        }),
      RangeError,
      "leaseTtlMs (lease_ttl_ms) must be in [1, 9007199254740991] when provided",
    ],
    // A field named alike in TypeScript and on the Wire is named once.
    [
      () => new ToolContext({ ...context, operation: "" }),
      RangeError,
      "operation must be a non-empty string",
    ],
  ];
  for (const [fn, kind, message] of cases) {
    const error = assertThrows(fn);
    assertInstanceOf(error, kind);
    assertEquals((error as Error).message, message);
  }
});

function invokeText(toolId: string): string {
  return JSON.stringify({
    attempt_id: "a",
    endpoint_id: "vision.yolo",
    endpoint_instance_id: "n",
    invocation_id: "i",
    message_type: "tool.invoke.request",
    operation: "detect",
    payload: {
      arguments: {},
      context: { implementation_id: "yolo", metadata: {}, tool_id: toolId },
    },
    protocol: "forge.tool.endpoint/v1alpha1",
    request_id: "r",
  });
}

Deno.test("decoding keeps the reference's messages, naming the Wire field only", () => {
  const decoded = assertThrows(() => decodeEnvelope(invokeText(" ")), ToolProtocolError);
  assertEquals(
    [decoded.code, decoded.message, decoded.path],
    ["FORGE_PROTOCOL_INVALID_PAYLOAD", "tool_id must be a non-empty string", "payload.context"],
  );
  const descriptor = JSON.stringify({
    endpoint_id: "vision.yolo",
    endpoint_instance_id: "n",
    message_type: "endpoint.register",
    payload: {
      descriptor: {
        endpoint_id: "vision.yolo",
        operations: [{
          cancellable: false,
          max_concurrency: 0,
          name: "detect",
          semantics: "query",
          status_supported: false,
          stoppable: false,
        }],
        protocol_version: "forge.tool.endpoint/v1alpha1",
      },
    },
    protocol: "forge.tool.endpoint/v1alpha1",
    request_id: "r",
  });
  const error = assertThrows(() => decodeEnvelope(descriptor), ToolProtocolError);
  assertEquals(error.message, "max_concurrency must be in [1, 9007199254740991]");
});

Deno.test("building the models of a decoded request keeps the reference's messages too", () => {
  // A ToolEnvelope built in TypeScript whose payload breaks a model rule: the Wire layer (not the
  // constructor the user called) reports it, in the reference's words.
  const valid = decodeEnvelope(invokeText("forge.tool.detect"));
  const broken = new ToolEnvelope({
    ...envelopeInit(valid),
    payload: { arguments: {}, context: { implementation_id: "y", metadata: {}, tool_id: "" } },
  });
  const error = assertThrows(() => invokeRequestFromEnvelope(broken), ToolProtocolError);
  assertEquals(error.message, "tool_id must be a non-empty string");
});

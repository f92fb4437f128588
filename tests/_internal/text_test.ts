// One blank-string rule for endpoint instance ids: the node's parts (registration, health)
// refuse exactly the ids the handler refuses. U+0085 is Python whitespace (refused everywhere);
// U+FEFF is not (accepted everywhere), although String.prototype.trim() strips it.
import { assertEquals } from "@std/assert";
import {
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolOperationDescriptor,
  ToolResult,
} from "../../mod.ts";
import { TOOL_ENDPOINT_PROTOCOL } from "../../wire.ts";
import { EndpointHealthReporter, EndpointRegistration } from "../../node.ts";
import { pairKey } from "../../src/_internal/text.ts";

const descriptor = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: "vision.yolo",
  operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
});
const operations = {
  detect: { query: () => new ToolResult({ status: "succeeded", outputs: {} }) },
};

function accepts(make: () => unknown): boolean {
  try {
    make();
    return true;
  } catch {
    return false;
  }
}

const handlerAccepts = (id: string) =>
  accepts(() => new ToolEndpointHandler(descriptor, { endpointInstanceId: id, operations }));
const registrationAccepts = (id: string) =>
  accepts(() => new EndpointRegistration({ descriptor, endpointInstanceId: id, send: () => {} }));
const healthAccepts = (id: string) =>
  accepts(() =>
    new EndpointHealthReporter({
      handler: new ToolEndpointHandler(descriptor, {
        endpointInstanceId: "instance-1",
        operations,
      }),
      endpointInstanceId: id,
      send: () => {},
    })
  );

for (
  const [label, id, accepted] of [
    ["U+0085 (NEL) alone", "\u0085", false],
    ["U+FEFF (BOM) alone", "\ufeff", true],
    ["U+001C alone", "\u001c", false],
    ["spaces and U+3000", " \u3000 ", false],
    ["empty", "", false],
    ["a plain id", "instance-1", true],
  ] as const
) {
  Deno.test(`instance id rule agrees across handler, registration and health: ${label}`, () => {
    assertEquals(
      [handlerAccepts(id), registrationAccepts(id), healthAccepts(id)],
      [accepted, accepted, accepted],
    );
  });
}

Deno.test("pairKey is injective: the first identifier's length says where it ends", () => {
  const pairs: [string, string][] = [
    ["a", "bc"],
    ["ab", "c"],
    ["1:a", ""],
    ["", "1:a"],
    ["10", "x"],
    ["1", "0x"],
    ["é", "x"],
    ["\u{1F600}", ""],
  ];
  const keys = pairs.map(([first, second]) => pairKey(first, second));
  assertEquals(new Set(keys).size, pairs.length);
  assertEquals(pairKey("invocation-1", "attempt-1"), "12:invocation-1attempt-1");
  // The nested form keys the gateway's execution table: endpoint, then invocation and attempt.
  assertEquals(
    new Set([
      pairKey("a", pairKey("b", "c")),
      pairKey("a1", pairKey(":b", "c")),
      pairKey("a", pairKey("bc", "")),
    ]).size,
    3,
  );
});

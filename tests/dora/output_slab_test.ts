// The fast encoder's output buffer (src/dora/_output_slab.ts): small streams are regions of a
// shared buffer, handed out once; none is ever written again, a detached buffer is replaced, and
// a large stream has a buffer of its own.
import { assert, assertEquals, assertNotStrictEquals } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import { context as helperContext } from "../_helpers.ts";
import { makeInvokeRequestEnvelope, type ToolEnvelope } from "../../wire.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "../../dora.ts";

const context = helperContext();

function invoke(requestId: string, filler = ""): ToolEnvelope {
  return makeInvokeRequestEnvelope(new ToolRequest({ arguments: { filler } }), context, {
    requestId,
    endpointInstanceId: "instance-1",
  });
}

Deno.test("small IPC streams share a buffer without overlapping, and none changes afterwards", () => {
  const streams = Array.from(
    { length: 200 },
    (_, i) => encodeToolEnvelopeIpc(invoke(`r-${i}`)),
  );
  const snapshots = streams.map((bytes) => bytes.slice());
  // Later encodes (and a retried, wider payload) never write into an earlier region.
  for (let i = 0; i < 200; i++) encodeToolEnvelopeIpc(invoke(`later-${i}`, "é".repeat(i)));
  const shared = streams.filter((bytes) => bytes.buffer === streams[0].buffer);
  assert(shared.length > 1, "consecutive small streams share one buffer");
  const regions = shared.map((b) => [b.byteOffset, b.byteOffset + b.length]).sort((a, b) =>
    a[0] - b[0]
  );
  for (let i = 1; i < regions.length; i++) assert(regions[i][0] >= regions[i - 1][1], "no overlap");
  for (const [i, bytes] of streams.entries()) {
    assertEquals(bytes, snapshots[i]);
    assertEquals(bytes.byteOffset % 8, 0);
    assertEquals(decodeToolEnvelopeIpc(bytes).requestId, `r-${i}`);
  }
});

Deno.test("a transferred (detached) output buffer is replaced; a large stream has its own", () => {
  const first = encodeToolEnvelopeIpc(invoke("first"));
  const moved = (first.buffer as ArrayBuffer).transfer();
  assertEquals(first.length, 0); // detached with its buffer
  const next = encodeToolEnvelopeIpc(invoke("next"));
  assertNotStrictEquals(next.buffer, moved);
  assertEquals(decodeToolEnvelopeIpc(next).requestId, "next");
  const large = encodeToolEnvelopeIpc(invoke("large", "x".repeat(8000)));
  assertEquals(large.byteOffset, 0);
  assertNotStrictEquals(large.buffer, next.buffer);
  assertEquals(
    (decodeToolEnvelopeIpc(large).payload.arguments as { filler: string }).filler,
    "x".repeat(8000),
  );
});

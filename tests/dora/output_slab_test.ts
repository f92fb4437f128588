// The fast encoder's output buffer (src/dora/_output_slab.ts): small streams are regions of a
// shared buffer, handed out once; none is ever written again, a detached buffer is replaced, and
// a large stream has a buffer of its own.
import { assert, assertEquals, assertNotStrictEquals } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import { context as helperContext } from "../_helpers.ts";
import { makeInvokeRequestEnvelope, type ToolEnvelope } from "../../wire.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "../../dora.ts";
import { checkToolMessageStream } from "../../src/dora/ipc.ts";

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

Deno.test("streams written in place keep every byte outside their buffers zero, retried ones too", () => {
  // The encoder writes each small stream in place in its buffer and hands out the bytes it used;
  // a payload wider than its first guess is written again past the region it gave up. Whatever
  // the buffer held before, every padding byte of the body must be zero.
  for (let i = 0; i < 300; i++) {
    const filler = i % 3 === 0
      ? "é".repeat(i)
      : i % 3 === 1
      ? "x".repeat(i * 7)
      : "\u{1f916}".repeat(i);
    const bytes = encodeToolEnvelopeIpc(invoke(`pad-${i}`, filler));
    const layout = checkToolMessageStream(bytes, bytes.length);
    const covered = new Uint8Array(layout.bodyLength);
    for (let b = 0; b < layout.buffers.length; b += 2) {
      covered.fill(1, layout.buffers[b], layout.buffers[b] + layout.buffers[b + 1]);
    }
    for (let at = 0; at < layout.bodyLength; at++) {
      if (covered[at] === 0 && bytes[layout.bodyStart + at] !== 0) {
        throw new Error(`stream ${i}: body byte ${at} is ${bytes[layout.bodyStart + at]}, not 0`);
      }
    }
    assertEquals(
      (decodeToolEnvelopeIpc(bytes).payload.arguments as { filler: string }).filler,
      filler,
    );
  }
});

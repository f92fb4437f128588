// What the gateway node does to one Query on its way through (issue 20, part B): each message is
// decoded once, validated once (the gateway is one trust boundary), its payload copied once (the
// copy the gateway forwards, with its own request id) and encoded once, without a second typed
// validation at the encoder. The counts are V8's call counts (precise coverage through the
// inspector, see _gateway_hop_counts.ts), taken in a process of its own: no production code
// carries a counter.
import { assertEquals } from "@std/assert";
import type { HopReport } from "./_gateway_hop_counts.ts";

async function countOneQuery(): Promise<HopReport> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      "--allow-sys",
      new URL("./_gateway_hop_counts.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assertEquals(output.success, true, stderr);
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

Deno.test("gateway node: one Query is decoded, validated, copied and encoded once per message", async () => {
  const report = await countOneQuery();
  assertEquals(report.outputs, [
    "detector_request",
    "detector_request",
    "planner_response",
    "detector_request",
    "planner_response",
  ]);
  assertEquals(report.forwarded, ["q-2@gateway-2", "instance-1"]);
  assertEquals(report.answer, [
    "tool.invoke.response",
    "q-2",
    { outcome: "completed", result: { status: "succeeded", outputs: { detections: 3 } } },
  ]);
  assertEquals(report.counts, {
    // Once per message, at the edge that decoded it (the caller's input, the route's input).
    decodeToolEnvelopeIpc: 2,
    validateMessageEnvelope: 2,
    readInvokeRequest: 1,
    readInvokeResponse: 1,
    // The decoded message, and the copy forwarded with the gateway's request id.
    ToolEnvelope: 4,
    withExchange: 2,
    // The payload is parsed in place at decode and copied once, into the forwarded copy.
    copyJson: 2,
    // Each encoder asks; the copy is marked validated, so neither validates again.
    encodeToolEnvelopeIpc: 2,
    checkTypedEnvelope: 2,
  });
});

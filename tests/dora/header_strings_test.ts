// The header strings of a carrier row (src/dora/_header_strings.ts): the values of the repeating
// columns (protocol, message type, endpoint, instance, operation) are kept in a small table and
// handed back when the same bytes arrive again. Whatever shares a slot, whatever is evicted, and
// whatever is not ASCII, every header decodes to exactly the string that was encoded, over IPC
// bytes and over an apache-arrow carrier alike.
import { assertEquals } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import { context } from "../_helpers.ts";
import { makeInvokeRequestEnvelope, type ToolEnvelope } from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../../dora.ts";
import { SeededRandom } from "../_gen.ts";

function invoke(endpointId: string, operation: string, instance: string, n: number): ToolEnvelope {
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { n } }),
    context(endpointId, operation, { invocationId: `inv-${n}`, attemptId: `att-${n}` }),
    { requestId: `req-${n}`, endpointInstanceId: instance },
  );
}

/** The headers a decode gave, beside the ones encoded. */
function headers(envelope: ToolEnvelope): string[] {
  return [
    envelope.protocol,
    envelope.messageType,
    envelope.requestId!,
    envelope.invocationId!,
    envelope.attemptId!,
    envelope.endpointId,
    envelope.endpointInstanceId!,
    envelope.operation!,
  ];
}

function assertRoundTrips(envelope: ToolEnvelope): void {
  const viaIpc = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(envelope));
  const viaCarrier = toolMessageToEnvelope(toolEnvelopeToMessage(envelope));
  assertEquals(headers(viaIpc), headers(envelope));
  assertEquals(headers(viaCarrier), headers(envelope));
}

Deno.test("header values that agree on length, first, middle and last byte decode as themselves", () => {
  // Same column, same length, same bytes at the start, the middle and the end: one slot of the
  // table, told apart only by the byte-by-byte check.
  const twins = [
    ["abcXefgh", "det1ect2", "inAst-01"],
    ["abcYefgh", "det2ect2", "inBst-01"],
    ["abcZefgh", "det3ect2", "inCst-01"],
  ];
  for (let round = 0; round < 4; round++) {
    for (const [i, [endpoint, operation, instance]] of twins.entries()) {
      assertRoundTrips(invoke(endpoint, operation, instance, round * 3 + i));
    }
  }
});

Deno.test("non-ASCII and long header values of repeating columns decode exactly, every time", () => {
  const values = [
    ["vision.yolo-é", "détect", "instance-ü"],
    ["x".repeat(64), "o".repeat(65), "i".repeat(200)],
    ["vision.\u{1f916}", "op\u00a0x", "i"],
  ];
  for (let round = 0; round < 3; round++) {
    for (const [i, [endpoint, operation, instance]] of values.entries()) {
      assertRoundTrips(invoke(endpoint, operation, instance, round * 3 + i));
    }
  }
});

Deno.test("many distinct short header values, in a seeded random order, each decode as themselves", () => {
  // 600 values per column fill the 256 slots many times over: hits, misses, evictions and slots
  // shared between columns all happen.
  const random = new SeededRandom(20);
  const alphabet = [..."abcdefghijklmnopqrstuvwxyz0123456789._-/"];
  const word = () => {
    let text = "";
    for (let i = random.int(1, 20); i > 0; i--) text += random.pick(alphabet);
    return text;
  };
  const pool = Array.from({ length: 600 }, word);
  for (let n = 0; n < 3000; n++) {
    assertRoundTrips(invoke(random.pick(pool), random.pick(pool), random.pick(pool), n));
  }
});

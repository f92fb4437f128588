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
import { identifierTexts } from "../../src/dora/_header_strings.ts";

function invoke(
  endpointId: string,
  operation: string,
  instance: string,
  n: number,
  ids: readonly [string, string, string] = [`req-${n}`, `inv-${n}`, `att-${n}`],
): ToolEnvelope {
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { n } }),
    context(endpointId, operation, { invocationId: ids[1], attemptId: ids[2] }),
    { requestId: ids[0], endpointInstanceId: instance },
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

Deno.test("identifiers cut from one decode are the values of their ranges, null ones stay null", () => {
  const bytes = new TextEncoder().encode("\0\0\0\0request-1\0\0\0invocation-22\0\0attempt-333");
  const request = [bytes, 4, 13] as const;
  const invocation = [bytes, 16, 29] as const;
  const attempt = [bytes, 31, 42] as const;
  assertEquals(identifierTexts(request, invocation, attempt), [
    "request-1",
    "invocation-22",
    "attempt-333",
  ]);
  assertEquals(identifierTexts(undefined, invocation, attempt), [
    undefined,
    "invocation-22",
    "attempt-333",
  ]);
  assertEquals(identifierTexts(request, undefined, [bytes, 42, 42]), ["request-1", undefined, ""]);
  // Ranges given out of order, or overlapping, still cut their own bytes.
  assertEquals(identifierTexts(attempt, request, [bytes, 8, 20]), [
    "attempt-333",
    "request-1",
    "est-1\0\0\0invo",
  ]);
});

Deno.test("identifiers are left to the one-by-one reads where one decode could misplace them", () => {
  const encoder = new TextEncoder();
  const ascii = encoder.encode("abcdefgh--ijklmnop--qrstuvwx");
  // Fewer than two values: nothing to share.
  assertEquals(identifierTexts([ascii, 0, 8], undefined, undefined), undefined);
  assertEquals(identifierTexts(undefined, undefined, undefined), undefined);
  // Values in different buffers.
  assertEquals(identifierTexts([ascii, 0, 8], [ascii.slice(), 10, 18], undefined), undefined);
  // Farther apart than the span decoded at once.
  const wide = new Uint8Array(400).fill(0x61);
  assertEquals(identifierTexts([wide, 0, 8], [wide, 300, 308], undefined), undefined);
  assertEquals(identifierTexts([wide, 0, 8], [wide, 248, 256], undefined), [
    "aaaaaaaa",
    "aaaaaaaa",
    undefined,
  ]);
  // A non-ASCII value, and a two-byte character between two ASCII values: decoding the stretch
  // would turn those two bytes into one character and shift every later value by one.
  const inside = encoder.encode("abcdéfgh--ijklmnop");
  assertEquals(identifierTexts([inside, 0, 9], [inside, 11, 19], undefined), undefined);
  const between = encoder.encode("abcdefgh-é-ijklmnop");
  assertEquals(identifierTexts([between, 0, 8], [between, 12, 20], undefined), undefined);
});

Deno.test("request, invocation and attempt ids of every shape decode as encoded, over IPC and arrow", () => {
  const ids: [string, string, string][] = [
    [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()],
    ["r", "i", "a"],
    ["r".repeat(20), "i".repeat(130), "a".repeat(5)],
    ["r".repeat(200), "i".repeat(200), "a".repeat(200)],
    ["réq", crypto.randomUUID(), "att-\u{1f916}"],
    [crypto.randomUUID(), "inv\u00e9", crypto.randomUUID()],
  ];
  for (const [n, triple] of ids.entries()) {
    const envelope = invoke("vision.yolo", "detect", "yolo-1", n, triple);
    assertRoundTrips(envelope);
    const decoded = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(envelope));
    assertEquals([decoded.requestId, decoded.invocationId, decoded.attemptId], triple);
  }
});

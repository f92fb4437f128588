// The embedded loopback dataflow's own contract (src/dora/loopback.ts); its use by the runner,
// the binding and the client is tested with them.
import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { LoopbackDataflow } from "../../src/dora/loopback.ts";

Deno.test("loopback option errors name the option and show the value", () => {
  const cases: [unknown, string][] = [
    [null, "'options' must be an object: current value is null"],
    [{ requestInputId: "" }, `'requestInputId' must be a non-empty string: current value is ""`],
    [{ requestInputId: 3 }, "'requestInputId' must be a non-empty string: current value is 3"],
    [{ now: 5 }, "'now' must be a function: current value is 5"],
    [{ faults: "drop" }, `'faults' must be an object: current value is "drop"`],
    [{ faults: { input: true } }, "'faults.input' must be a function: current value is true"],
    [{ faults: { output: 1 } }, "'faults.output' must be a function: current value is 1"],
  ];
  for (const [options, rule] of cases) {
    const error = assertThrows(() => new LoopbackDataflow(options as never), TypeError);
    assertEquals(error.message, `Cannot create a LoopbackDataflow as ${rule}`);
  }
});

Deno.test("a loopback's fault hooks keep their object as this", async () => {
  const faults = {
    seen: 0,
    input(_id: string, data: Uint8Array): readonly Uint8Array[] {
      this.seen++;
      return [data];
    },
  };
  const flow = new LoopbackDataflow({ requestInputId: "requests", faults });
  const delivered = flow.request(new Uint8Array([1]));
  const event = await flow.transport.nextEvent();
  await delivered;
  assertEquals(event?.type === "input" ? event.id : undefined, "requests");
  assertStrictEquals(faults.seen, 1);
  await flow.transport.close();
});

Deno.test("a loopback keeps the latest maxSentHistory outputs (1,024 by default), every one delivered", async () => {
  for (const value of [0, 1.5, -1, "8", Number.POSITIVE_INFINITY]) {
    const error = assertThrows(
      () => new LoopbackDataflow({ maxSentHistory: value as number }),
      RangeError,
    );
    assertEquals(
      error.message,
      `Cannot create a LoopbackDataflow as 'maxSentHistory' must be a positive integer: ` +
        `current value is ${typeof value === "string" ? JSON.stringify(value) : String(value)}`,
    );
  }
  const small = new LoopbackDataflow({ maxSentHistory: 3 });
  for (let i = 0; i < 5; i++) await small.transport.sendOutput(`out-${i}`, new Uint8Array([i]));
  assertEquals(small.sent.map((output) => output.id), ["out-2", "out-3", "out-4"]);
  // The history bound drops nothing on the way: every output is still read in order.
  for (let i = 0; i < 5; i++) assertEquals((await small.nextOutput())?.id, `out-${i}`);
  await small.transport.close();

  const flow = new LoopbackDataflow();
  for (let i = 0; i < 1100; i++) await flow.transport.sendOutput("out", new Uint8Array([i & 255]));
  assertEquals(flow.sent.length, 1024);
  assertEquals(flow.sent[0].data, new Uint8Array([76]));
  await flow.transport.close();
});

Deno.test("a loopback's copies share nothing with the bytes they were made from", async () => {
  const flow = new LoopbackDataflow();
  const request = new Uint8Array([1, 2, 3]);
  const delivered = flow.request(request);
  request[0] = 9;
  const event = await flow.transport.nextEvent();
  await delivered;
  assertEquals(event?.type === "input" ? event.data : undefined, new Uint8Array([1, 2, 3]));
  const response = new Uint8Array([4, 5]);
  await flow.transport.sendOutput("tool_response", response);
  response[0] = 9;
  assertEquals((await flow.nextOutput())?.data, new Uint8Array([4, 5]));
  assertEquals(flow.sent[0].data, new Uint8Array([4, 5]));
  await flow.transport.close();
});

Deno.test("a loopback's kept outputs pin only buffers its own traffic filled", async () => {
  const flow = new LoopbackDataflow();
  const other = new LoopbackDataflow({ maxSentHistory: 1 });
  const output = new Uint8Array(600);
  for (let i = 0; i < 1100; i++) {
    // Busy neighbours between two of its outputs (another dataflow, the same process).
    for (let k = 0; k < 50; k++) await other.transport.sendOutput("busy", output);
    await flow.transport.sendOutput("rare", output);
  }
  const buffers = new Set(flow.sent.map((kept) => kept.data.buffer));
  // 1,024 outputs of 600 bytes fill ten 64 KiB buffers, not one each.
  assertEquals(flow.sent.length, 1024);
  assertEquals(buffers.size <= Math.ceil(1024 * 600 / 65536) + 1, true, `${buffers.size} buffers`);
  await flow.transport.close();
  await other.transport.close();
});

Deno.test("a loopback input's timestamp: the clock's millisecond, a given NTP64 converted, a clock out of range refused", async () => {
  const flow = new LoopbackDataflow({ now: () => 4_294_967_295_999.9 });
  const stamp = async () => {
    const event = await flow.transport.nextEvent();
    return event?.type === "input" ? event.timestampMs : undefined;
  };
  const first = flow.input("tick", new Uint8Array([1]));
  assertEquals(await stamp(), 4_294_967_295_999);
  await first;
  // 0x8000_0000 is half a second past 1,700,000,000 s.
  const second = flow.input("tick", new Uint8Array([2]), {
    timestamp: (1_700_000_000n << 32n) | 0x8000_0000n,
  });
  assertEquals(await stamp(), 1_700_000_000_500);
  await second;
  await flow.transport.close();
  for (const now of [4_294_967_296_000, -1, Number.NaN, 2 ** 60]) {
    const late = new LoopbackDataflow({ now: () => now });
    const error = assertThrows(() => late.input("tick", new Uint8Array(0)), RangeError);
    assertEquals(
      error.message,
      `epoch milliseconds must be an integer in [0, 2^32 s), got ${Math.floor(now)}`,
    );
    await late.transport.close();
  }
});

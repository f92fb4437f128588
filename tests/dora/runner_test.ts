// The node runner (src/dora/runner.ts) over the in-process loopback dataflow (src/dora/loopback.ts),
// and the NTP64 timestamp conversions (src/dora/transport.ts).
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "@std/assert";
import { deadline, delay } from "@std/async";
import { LoopbackDataflow } from "../../src/dora/loopback.ts";
import { runToolEndpointNode, ToolEndpointNode } from "../../src/dora/runner.ts";
import type { ToolEndpointNodeOptions } from "../../src/dora/runner_options.ts";
import { type DoraTransport, epochMsToNtp64, ntp64ToEpochMs } from "../../src/dora/transport.ts";
import { concat } from "../_helpers.ts";
import type { ToolLogger, ToolLogLevel } from "../../mod.ts";

const encoder = new TextEncoder();
const PREFIX = encoder.encode("echo:");

function echoed(request: Uint8Array): Uint8Array {
  return concat(PREFIX, request.toReversed());
}

/** The trivial echo handler: `echo:` + the request reversed; keeps the requests it saw. */
function echo(received: Uint8Array[] = []): ToolEndpointNodeOptions["handle"] {
  return async (request, publish) => {
    received.push(request);
    await publish(echoed(request));
  };
}

function captureLogs() {
  const lines: { level: ToolLogLevel; message: string }[] = [];
  const logger: ToolLogger = ({ level, message }) => void lines.push({ level, message });
  return {
    lines,
    logger,
    has: (level: ToolLogLevel, fragment: string) =>
      lines.some((l) => l.level === level && l.message.includes(fragment)),
  };
}

/** A promise to release by hand. */
function gate() {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { promise, open: () => resolve() };
}

// --- NTP64 --------------------------------------------------------------------------------------

Deno.test("ntp64ToEpochMs: seconds in the high word, the fraction floored to the millisecond", () => {
  assertEquals(ntp64ToEpochMs(0n), 0);
  assertEquals(ntp64ToEpochMs(1n << 32n), 1000);
  assertEquals(ntp64ToEpochMs((1_700_000_000n << 32n) | 0x8000_0000n), 1_700_000_000_500);
  assertEquals(ntp64ToEpochMs((1n << 32n) - 1n), 999, "just below one second");
  assertEquals(ntp64ToEpochMs(0xffff_ffff_ffff_ffffn), 4_294_967_295_999);
  assert(Number.isSafeInteger(ntp64ToEpochMs(0xffff_ffff_ffff_ffffn)));
  // uhlc keeps a counter in the low bits: it never moves the millisecond.
  assertEquals(ntp64ToEpochMs(epochMsToNtp64(1_712_345_678_901) | 0xfn), 1_712_345_678_901);
});

Deno.test("epochMsToNtp64 round-trips every millisecond of a second exactly", () => {
  const base = 1_712_345_678_000;
  for (let ms = 0; ms < 1000; ms++) {
    const timestamp = epochMsToNtp64(base + ms);
    assertEquals(ntp64ToEpochMs(timestamp), base + ms);
    assertEquals(ntp64ToEpochMs(timestamp - 1n), base + ms - 1, "the smallest such timestamp");
  }
  assertEquals(epochMsToNtp64(1_700_000_000_500), (1_700_000_000n << 32n) | 0x8000_0000n);
});

Deno.test("NTP64 conversions reject values outside their ranges", () => {
  assertThrows(() => ntp64ToEpochMs(-1n), RangeError);
  assertThrows(() => ntp64ToEpochMs(1n << 64n), RangeError);
  assertThrows(() => ntp64ToEpochMs(5 as unknown as bigint), RangeError);
  assertThrows(() => epochMsToNtp64(-1), RangeError);
  assertThrows(() => epochMsToNtp64(1.5), RangeError);
  assertThrows(() => epochMsToNtp64(4_294_967_296_000), RangeError);
});

// --- the runner ---------------------------------------------------------------------------------

Deno.test("runner: request/response round trip over the loopback", async () => {
  const flow = new LoopbackDataflow();
  const received: Uint8Array[] = [];
  const done = runToolEndpointNode({ transport: flow.transport, handle: echo(received) });
  const request = encoder.encode("hello");
  await flow.request(request);
  assertEquals(await flow.nextOutput(), { id: "tool_response", data: echoed(request) });
  await flow.stop();
  const stats = await done;
  assertEquals(received, [request]);
  assertEquals(stats.stopReason, "stop");
  assertEquals(
    [stats.inputs, stats.requests, stats.responses, stats.errors, stats.sendFailures],
    [1, 1, 1, 0, 0],
  );
  assert(flow.isClosed, "the transport was closed");
  assertEquals(await flow.nextOutput(), null);
});

Deno.test("runner: requests run concurrently; the next event is read before a handler ends", async () => {
  const flow = new LoopbackDataflow();
  const gates = [gate(), gate(), gate()];
  const started: number[] = [];
  const node = new ToolEndpointNode({
    transport: flow.transport,
    handle: async (request, publish) => {
      started.push(request[0]);
      await gates[request[0]].promise;
      await publish(request);
    },
  });
  const done = node.run();
  for (const index of [0, 1, 2]) await flow.request(new Uint8Array([index]));
  await delay(0);
  assertEquals(started, [0, 1, 2], "all three started before any finished");
  assertEquals(node.inFlight, 3);
  for (const index of [2, 0, 1]) gates[index].open();
  const order: number[] = [];
  for (let i = 0; i < 3; i++) order.push((await flow.nextOutput())!.data[0]);
  assertEquals(order, [2, 0, 1], "responses go out as handlers finish");
  await flow.stop();
  assertEquals((await done).responses, 3);
  assertEquals(node.inFlight, 0);
});

Deno.test("runner: other inputs are ignored at debug, with their last timestamp kept", async () => {
  const flow = new LoopbackDataflow();
  const logs = captureLogs();
  let calls = 0;
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: () => {
      calls++;
      return Promise.resolve();
    },
    logger: logs.logger,
  });
  await flow.input("tick", new Uint8Array(0), { timestamp: epochMsToNtp64(1_712_345_678_900) });
  await flow.input("tick", new Uint8Array(0), { timestamp: epochMsToNtp64(1_712_345_678_999) });
  await flow.request(new Uint8Array([1]));
  await flow.stop();
  const stats = await done;
  assertEquals(calls, 1);
  assertEquals(stats.inputs, 3);
  assertEquals(stats.requests, 1);
  assertEquals(stats.lastTimestampMs.get("tick"), 1_712_345_678_999);
  assert(stats.lastTimestampMs.has("tool_request"));
  assert(logs.has("debug", '"tick"'));
});

Deno.test("runner: custom request input and response output ids", async () => {
  const flow = new LoopbackDataflow({ requestInputId: "requests" });
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: echo(),
    requestInputId: "requests",
    responseOutputId: "responses",
  });
  await flow.request(new Uint8Array([7]));
  assertEquals((await flow.nextOutput())?.id, "responses");
  await flow.input("tool_request", new Uint8Array([8]));
  await flow.stop();
  const stats = await done;
  assertEquals([stats.inputs, stats.requests], [2, 1]);
});

Deno.test("runner: input-closed, error and unknown events keep the node serving", async () => {
  const flow = new LoopbackDataflow();
  const logs = captureLogs();
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: echo(),
    logger: logs.logger,
  });
  await flow.event("input-closed");
  await flow.event("error");
  await flow.event("unknown");
  await flow.request(new Uint8Array([1]));
  assertEquals((await flow.nextOutput())?.data, echoed(new Uint8Array([1])));
  await flow.event("stop");
  const stats = await done;
  assertEquals(Object.fromEntries(stats.events), {
    "input-closed": 1,
    error: 1,
    unknown: 1,
    stop: 1,
  });
  assert(logs.has("warn", "error"));
  assert(logs.has("info", "input-closed"));
});

Deno.test("runner: a throwing or rejecting handler is logged; no response; serving continues", async () => {
  const flow = new LoopbackDataflow();
  const logs = captureLogs();
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: (request, publish) => {
      if (request[0] === 0) throw new TypeError("synchronous throw");
      if (request[0] === 1) return Promise.reject(new Error("rejection"));
      return publish(request);
    },
    logger: logs.logger,
  });
  await flow.request(new Uint8Array([0]));
  await flow.request(new Uint8Array([1]));
  await flow.request(new Uint8Array([2]));
  assertEquals((await flow.nextOutput())?.data, new Uint8Array([2]));
  await flow.stop();
  const stats = await done;
  assertEquals([stats.requests, stats.responses, stats.errors], [3, 1, 2]);
  assert(logs.has("error", "synchronous throw"));
  assert(logs.has("error", "rejection"));
  assertEquals(flow.sent.length, 1);
});

Deno.test("runner: stop mid-request runs onShutdown, waits for the handler, then closes", async () => {
  const flow = new LoopbackDataflow();
  const release = gate();
  const order: string[] = [];
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: async (request, publish) => {
      order.push("handle started");
      await release.promise;
      await publish(request);
      order.push("published");
    },
    onShutdown: () => {
      order.push("onShutdown");
      return Promise.resolve();
    },
  });
  await flow.request(new Uint8Array([5]));
  await flow.stop();
  await delay(20);
  assertEquals(order, ["handle started", "onShutdown"]);
  assertEquals(flow.isClosed, false, "the transport stays open for the in-flight request");
  let finished = false;
  done.then(() => (finished = true));
  await delay(5);
  assertEquals(finished, false);
  release.open();
  const stats = await done;
  assertEquals(order, ["handle started", "onShutdown", "published"]);
  assertEquals(stats.stopReason, "stop");
  assertEquals([stats.responses, stats.abandoned], [1, 0]);
  assertEquals(flow.sent, [{ id: "tool_response", data: new Uint8Array([5]) }]);
  assert(flow.isClosed);
});

Deno.test("runner: after the grace period the transport closes under a stuck handler", async () => {
  const flow = new LoopbackDataflow();
  const logs = captureLogs();
  const stuck = gate();
  let publishAfterClose: unknown = null;
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: async (request, publish) => {
      await stuck.promise;
      try {
        await publish(request);
      } catch (error) {
        publishAfterClose = error;
      }
    },
    graceMs: 30,
    logger: logs.logger,
  });
  await flow.request(new Uint8Array([1]));
  await flow.stop();
  const stats = await deadline(done, 2000);
  assertEquals(stats.abandoned, 1);
  assert(flow.isClosed);
  assert(logs.has("warn", "grace"));
  stuck.open();
  await delay(5);
  assertInstanceOf(publishAfterClose, Error, "a late publish rejects once the transport closed");
  assertEquals(flow.sent, []);
});

Deno.test("runner: a failed send rejects the publisher, is logged, and serving continues", async () => {
  const flow = new LoopbackDataflow();
  const logs = captureLogs();
  const publishErrors: unknown[] = [];
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: async (request, publish) => {
      try {
        await publish(request);
      } catch (error) {
        publishErrors.push(error);
        throw error;
      }
    },
    logger: logs.logger,
  });
  flow.failNextSend("daemon gone");
  await flow.request(new Uint8Array([1]));
  await flow.request(new Uint8Array([2]));
  assertEquals(await flow.nextOutput(), { id: "tool_response", data: new Uint8Array([2]) });
  await flow.stop();
  const stats = await done;
  assertEquals(publishErrors.length, 1);
  assertInstanceOf(publishErrors[0], Error);
  assertStringIncludes((publishErrors[0] as Error).message, "tool_response");
  assertStringIncludes((publishErrors[0] as Error).message, "daemon gone");
  assertEquals([stats.sendFailures, stats.errors, stats.responses], [1, 1, 1]);
  assert(logs.has("error", "tool_response"));
});

Deno.test("runner: empty and 4 MiB requests round-trip exactly", async () => {
  const flow = new LoopbackDataflow();
  const received: Uint8Array[] = [];
  const done = runToolEndpointNode({ transport: flow.transport, handle: echo(received) });
  const big = new Uint8Array(4 * 1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >>> 11)) & 0xff;
  await flow.request(new Uint8Array(0));
  await flow.request(big);
  assertEquals((await flow.nextOutput())?.data, PREFIX);
  const second = (await flow.nextOutput())!.data;
  const expected = echoed(big);
  assertEquals(second.length, expected.length);
  assert(second.every((b, i) => b === expected[i]), "4 MiB byte for byte");
  await flow.stop();
  await done;
  assertEquals(received.map((r) => r.length), [0, big.length]);
});

Deno.test("runner: the end of the event stream ends serving", async () => {
  const flow = new LoopbackDataflow();
  const done = runToolEndpointNode({ transport: flow.transport, handle: echo() });
  await flow.request(new Uint8Array([1]));
  flow.end();
  const stats = await done;
  assertEquals(stats.stopReason, "end-of-stream");
  assertEquals(stats.responses, 1);
  await assertRejects(() => flow.request(new Uint8Array([2])), Error, "closed");
});

Deno.test("runner: after Stop, events are read and handled until onShutdown settles", async () => {
  const flow = new LoopbackDataflow();
  const hook = gate();
  const received: Uint8Array[] = [];
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: echo(received),
    onShutdown: () => hook.promise,
    logger: () => {},
  });
  await flow.stop();
  // Still reading: a request and an error event arrive while the hook runs.
  await flow.request(new Uint8Array([7, 8]));
  assertEquals(await flow.nextOutput(), {
    id: "tool_response",
    data: echoed(new Uint8Array([7, 8])),
  });
  await flow.event("error");
  hook.open();
  const stats = await done;
  assertEquals(received, [new Uint8Array([7, 8])]);
  assertEquals([stats.requests, stats.responses, stats.events.get("error")], [1, 1, 1]);
  assertEquals(stats.stopReason, "stop");
  assert(flow.isClosed);
});

Deno.test("runner: after Stop without onShutdown, no further event is read", async () => {
  const flow = new LoopbackDataflow();
  const done = runToolEndpointNode({ transport: flow.transport, handle: echo(), logger: () => {} });
  await flow.stop();
  const stats = await done;
  assertEquals(stats.stopReason, "stop");
  assert(flow.isClosed);
  await assertRejects(() => flow.request(new Uint8Array([1])), Error, "the node closed");
  assertEquals(stats.requests, 0);
});

/**
 * Delivers Stop and then `count` requests at once (nothing awaited in between), runs the node to
 * its end, and returns how many requests the node read (took) and what it answered.
 */
async function stopThenRequests(count: number, options: Partial<ToolEndpointNodeOptions> = {}) {
  const flow = new LoopbackDataflow();
  const received: Uint8Array[] = [];
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: echo(received),
    logger: () => {},
    ...options,
  });
  await delay(0); // the node is idle, waiting in nextEvent
  const deliveries = [flow.stop()];
  for (let n = 0; n < count; n++) deliveries.push(flow.request(new Uint8Array([n])));
  const stats = await done;
  const taken = (await Promise.allSettled(deliveries)).slice(1)
    .flatMap((result, n) => result.status === "fulfilled" ? [n] : []);
  return { stats, taken, received, answered: flow.sent.map((output) => output.data) };
}

Deno.test("runner: every request read after Stop is answered, also once the hook settled", async () => {
  const { stats, taken, received, answered } = await stopThenRequests(4, {
    onShutdown: () => Promise.resolve(),
  });
  // The hook settles at once; a read issued before that returns a request: it is handled.
  assert(taken.length > 0, "the node read at least one request after Stop");
  assertEquals(received, taken.map((n) => new Uint8Array([n])));
  assertEquals(answered, taken.map((n) => echoed(new Uint8Array([n]))));
  assertEquals([stats.requests, stats.responses], [taken.length, taken.length]);
});

Deno.test("runner: after Stop the node ends its pending read with stopReading, not close", async () => {
  const flow = new LoopbackDataflow();
  const calls: string[] = [];
  const transport: DoraTransport = {
    nextEvent: () => flow.transport.nextEvent(),
    sendOutput: (id, data) => flow.transport.sendOutput(id, data),
    stopReading: () => {
      calls.push("stopReading");
      flow.transport.stopReading!();
    },
    close: () => {
      calls.push("close");
      return flow.transport.close();
    },
  };
  const hook = gate();
  const done = runToolEndpointNode({
    transport,
    handle: echo(),
    onShutdown: () => hook.promise,
    logger: () => {},
  });
  await flow.stop();
  await delay(0); // a read is pending while the hook runs
  hook.open();
  const stats = await done;
  assertEquals(calls, ["stopReading", "close"]);
  assertEquals(stats.stopReason, "stop");
});

Deno.test("runner: without stopReading, a pending read is awaited up to the grace, then closed", async () => {
  for (const late of [true, false]) {
    const flow = new LoopbackDataflow();
    // The loopback without stopReading: only close ends its pending read.
    const { stopReading: _, ...transport } = flow.transport;
    const done = runToolEndpointNode({
      transport,
      handle: echo(),
      onShutdown: () => Promise.resolve(),
      graceMs: 50,
      logger: () => {},
    });
    await flow.stop();
    await delay(0); // the hook settled; the node waits on its last read
    if (late) await flow.request(new Uint8Array([9]));
    const stats = await done;
    assert(flow.isClosed);
    assertEquals(stats.stopReason, "stop");
    assertEquals(
      flow.sent.map((output) => output.data),
      late ? [echoed(new Uint8Array([9]))] : [],
      `late request: ${late}`,
    );
    assertEquals([stats.requests, stats.responses, stats.abandoned], late ? [1, 1, 0] : [0, 0, 0]);
  }
});

Deno.test("loopback: stopReading ends a pending read with null; sends work until close", async () => {
  const flow = new LoopbackDataflow();
  const pending = flow.transport.nextEvent();
  flow.transport.stopReading!();
  assertEquals(await pending, null);
  const untaken = flow.request(new Uint8Array([1]));
  assertEquals(await flow.transport.nextEvent(), null);
  assertEquals(flow.pendingEvents, 1);
  await flow.transport.sendOutput("r", new Uint8Array([2]));
  assertEquals(flow.sent, [{ id: "r", data: new Uint8Array([2]) }]);
  await flow.transport.close();
  await assertRejects(() => untaken, Error, "not taken");
});

Deno.test("runner: stop() from the process side ends serving without a Stop event", async () => {
  const flow = new LoopbackDataflow();
  let shutdowns = 0;
  const node = new ToolEndpointNode({
    transport: flow.transport,
    handle: echo(),
    onShutdown: () => {
      shutdowns++;
      return Promise.resolve();
    },
  });
  const done = node.run();
  assertEquals(node.run(), done, "run() is idempotent");
  await flow.request(new Uint8Array([1]));
  await flow.nextOutput();
  node.stop();
  const stats = await done;
  assertEquals(stats.stopReason, "requested");
  assertEquals(shutdowns, 1);
  assert(flow.isClosed);
  assertEquals(node.stats, stats);
});

Deno.test("runner: a failing nextEvent shuts down and rejects run()", async () => {
  let closed = 0;
  const transport: DoraTransport = {
    nextEvent: () => Promise.reject(new Error("event stream broke")),
    sendOutput: () => Promise.resolve(),
    close: () => {
      closed++;
      return Promise.resolve();
    },
  };
  const logs = captureLogs();
  const node = new ToolEndpointNode({ transport, handle: echo(), logger: logs.logger });
  await assertRejects(() => node.run(), Error, "event stream broke");
  assertEquals(node.stats.stopReason, "transport-error");
  assertEquals(closed, 1);
  assert(logs.has("error", "event stream broke"));
});

Deno.test("runner: a failing onShutdown is logged and shutdown continues", async () => {
  const flow = new LoopbackDataflow();
  const logs = captureLogs();
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: echo(),
    onShutdown: () => Promise.reject(new Error("close failed")),
    logger: logs.logger,
  });
  await flow.stop();
  assertEquals((await done).stopReason, "stop");
  assert(flow.isClosed);
  assert(logs.has("error", "close failed"));
});

Deno.test("runner: the default logger sends warnings and errors to the transport log", async () => {
  const flow = new LoopbackDataflow();
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: () => Promise.reject(new Error("boom")),
  });
  await flow.input("tick", new Uint8Array(0));
  await flow.request(new Uint8Array([1]));
  await flow.stop();
  await done;
  assertEquals(flow.logs.length, 1, "debug lines are dropped");
  assertEquals(flow.logs[0].level, "error");
  assertStringIncludes(flow.logs[0].message, "boom");
});

Deno.test("runner: options are validated", () => {
  const flow = new LoopbackDataflow();
  assertThrows(
    () => new ToolEndpointNode({ transport: flow.transport } as ToolEndpointNodeOptions),
    TypeError,
  );
  assertThrows(
    () => new ToolEndpointNode({ transport: flow.transport, handle: echo(), graceMs: -1 }),
    RangeError,
  );
});

// --- the loopback dataflow itself ---------------------------------------------------------------

Deno.test("loopback: inputs and outputs are copies; timestamps are NTP64-converted", async () => {
  const flow = new LoopbackDataflow({ now: () => 1_712_345_678_901.7 });
  const bytes = new Uint8Array([1, 2, 3]);
  const delivered = flow.request(bytes);
  bytes[0] = 99;
  const event = await flow.transport.nextEvent();
  await delivered;
  assertEquals(event, {
    type: "input",
    id: "tool_request",
    data: new Uint8Array([1, 2, 3]),
    timestampMs: 1_712_345_678_901,
  });
  const out = new Uint8Array([4]);
  await flow.transport.sendOutput("o", out);
  out[0] = 0;
  assertEquals(await flow.nextOutput(), { id: "o", data: new Uint8Array([4]) });
  await flow.transport.close();
});

Deno.test("loopback: one pending nextEvent at a time; close ends it with null", async () => {
  const flow = new LoopbackDataflow();
  const pending = flow.transport.nextEvent();
  await assertRejects(() => flow.transport.nextEvent(), Error, "already pending");
  const queued = flow.request(new Uint8Array([1])); // taken by the pending call
  assertEquals((await pending)?.type, "input");
  await queued;
  const waiting = flow.transport.nextEvent();
  await flow.transport.close();
  assertEquals(await waiting, null);
  assertEquals(await flow.transport.nextEvent(), null);
  await assertRejects(() => flow.transport.sendOutput("x", new Uint8Array(0)), Error, '"x"');
  await assertRejects(() => flow.stop(), Error, "closed");
});

Deno.test("loopback: responses iterate until the node closes; undelivered events reject", async () => {
  const flow = new LoopbackDataflow();
  const untaken = flow.request(new Uint8Array([1]));
  await flow.transport.sendOutput("a", new Uint8Array([1]));
  await flow.transport.sendOutput("b", new Uint8Array([2]));
  const ids: string[] = [];
  const reading = (async () => {
    for await (const output of flow.responses) ids.push(output.id);
  })();
  await delay(1);
  await flow.transport.close();
  await reading;
  assertEquals(ids, ["a", "b"]);
  await assertRejects(() => untaken, Error, "not taken");
  assertEquals(flow.sent.map((o) => o.id), ["a", "b"]);
  await flow.closed;
});

Deno.test("loopback: failNextSend fails exactly the next send", async () => {
  const flow = new LoopbackDataflow();
  flow.failNextSend(new Error("injected"));
  await assertRejects(() => flow.transport.sendOutput("r", new Uint8Array(1)), Error, "injected");
  await flow.transport.sendOutput("r", new Uint8Array(1));
  assertEquals(flow.sent.length, 1);
  flow.transport.log?.("info", "hello");
  assertEquals(flow.logs, [{ level: "info", message: "hello" }]);
  await flow.transport.close();
});

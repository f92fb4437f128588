// The FFI Dora node (src/dora/ffi.ts) and the runner over it, driven through a C test double of
// the dora C node API (tests/fixtures/dora_double.c) built with the system C compiler.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStringIncludes,
} from "@std/assert";
import { delay } from "@std/async";
import { type DoraNodeTransport, openDoraNode } from "../../src/dora/ffi.ts";
import { runToolEndpointNode } from "../../src/dora/runner.ts";
import type { ToolLogger, ToolLogLevel } from "../../mod.ts";
import { type DoraEvent, epochMsToNtp64 } from "../../src/dora/transport.ts";
import { ToolContext, ToolExecutionKey, ToolRequest } from "../../mod.ts";
import { eventFromPayload, makeInvokeRequestEnvelope } from "../../wire.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc, serveToolEndpoint } from "../../dora.ts";
import { LongRunning, robotHandler } from "../handler/_fakes.ts";
import { concat, hex, unhex } from "../_helpers.ts";

const FIXTURE = new URL("../fixtures/dora_double.c", import.meta.url);

async function hasCompiler(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("cc", { args: ["--version"], stdout: "null" })
      .output();
    return success;
  } catch {
    return false;
  }
}

const CC = await hasCompiler();
if (!CC) {
  console.warn(
    "dora/ffi_test: no C compiler `cc` on PATH; the FFI tests are skipped (install a C compiler " +
      "to run them)",
  );
}

const WORK = await Deno.makeTempDir({ prefix: "dora_double_" });
globalThis.addEventListener("unload", () => {
  try {
    Deno.removeSync(WORK, { recursive: true });
  } catch {
    // best effort
  }
});

async function compile(name: string, defines: string[] = []): Promise<string> {
  const out = `${WORK}/${name}`;
  const { success, stderr } = await new Deno.Command("cc", {
    args: [...defines, "-shared", "-fPIC", "-o", out, FIXTURE.pathname, "-lpthread"],
    stderr: "piped",
  }).output();
  if (!success) throw new Error(`compiling the dora double failed:\n${decode(stderr)}`);
  return out;
}

const LIB = CC ? await compile("libdora_double.so") : "";
const LIB_NO_LOG = CC ? await compile("libdora_double_nolog.so", ["-DDORA_DOUBLE_NO_LOG"]) : "";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
function decode(bytes: Uint8Array): string {
  return decoder.decode(bytes);
}
/** Byte-for-byte equality without building a diff of megabytes. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
/** What the double wrote at free_dora_context. */
interface DoubleRecord {
  readonly counters: Map<string, number>;
  readonly outputs: { id: string; data: Uint8Array }[];
  readonly logs: { level: string; message: string }[];
}

function parseRecord(text: string): DoubleRecord {
  const counters = new Map<string, number>();
  const outputs: { id: string; data: Uint8Array }[] = [];
  const logs: { level: string; message: string }[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const [kind, a, ...rest] = line.split(" ");
    if (kind === "output") outputs.push({ id: a, data: unhex(rest[0]) });
    else if (kind === "log") logs.push({ level: a, message: rest.join(" ") });
    else counters.set(kind, Number(a));
  }
  return { counters, outputs, logs };
}

let sessionCount = 0;

/** One scripted run of the double: a script file, a record file, and the env pointing at them. */
class Session {
  readonly script: string;
  readonly recordPath: string;

  constructor(lines: string[]) {
    sessionCount++;
    this.script = `${WORK}/script_${sessionCount}.txt`;
    this.recordPath = `${WORK}/record_${sessionCount}.txt`;
    Deno.writeTextFileSync(this.script, lines.join("\n") + "\n");
  }

  open(libraryPath = LIB): Promise<DoraNodeTransport> {
    Deno.env.set("DORA_DOUBLE_SCRIPT", this.script);
    Deno.env.set("DORA_DOUBLE_RECORD", this.recordPath);
    return openDoraNode({ libraryPath });
  }

  async record(): Promise<DoubleRecord> {
    return parseRecord(await Deno.readTextFile(this.recordPath));
  }
}

/** The native-memory discipline every run must keep. */
function assertHygiene(record: DoubleRecord): void {
  const c = (name: string) => record.counters.get(name);
  assertEquals(c("frees"), c("events"), "every event freed");
  assertEquals(c("free_calls"), c("events"), "free_dora_event called once per event");
  assertEquals(c("double_frees"), 0, "no double free");
  assertEquals(c("invalid_frees"), 0, "no invalid free");
  assertEquals(c("use_after_free"), 0, "no read after free");
  assertEquals(c("unfreed"), 0, "no leaked event");
  assertEquals(c("overlaps"), 0, "no send or log while dora_next_event was pending");
  assertEquals(c("concurrent_next"), 0, "never two dora_next_event calls at once");
}

const PREFIX = encoder.encode("echo:");

/** The trivial echo handler: responds `echo:` + the request reversed, and keeps the requests. */
function echo(received: Uint8Array[] = [], wait = 0) {
  return async (request: Uint8Array, publish: (response: Uint8Array) => Promise<void>) => {
    received.push(request);
    if (wait > 0) await delay(wait);
    await publish(concat(PREFIX, request.toReversed()));
  };
}

function echoed(request: Uint8Array): Uint8Array {
  return concat(PREFIX, request.toReversed());
}

function captureLogs() {
  const lines: { level: ToolLogLevel; message: string }[] = [];
  const logger: ToolLogger = ({ level, message }) => void lines.push({ level, message });
  return { lines, logger };
}

function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.keys(vars).map((key) => [key, Deno.env.get(key)] as const);
  for (const [key, value] of Object.entries(vars)) {
    if (value === undefined) Deno.env.delete(key);
    else Deno.env.set(key, value);
  }
  return fn().finally(() => {
    for (const [key, value] of saved) {
      if (value === undefined) Deno.env.delete(key);
      else Deno.env.set(key, value);
    }
  });
}

function test(name: string, fn: () => Promise<void>): void {
  Deno.test({ name: `dora ffi: ${name}`, ignore: !CC, fn });
}

// --- openDoraNode -------------------------------------------------------------------------------

test("no library path and no DORA_NODE_API_LIB is a clear error", async () => {
  await withEnv({ DORA_NODE_API_LIB: undefined }, async () => {
    const error = await assertRejects(() => openDoraNode());
    assertEquals(
      error.message,
      "Cannot open a Dora node as 'libraryPath' must be the dora C node API shared object built " +
        "from dora's libdora_node_api_c.a (or set DORA_NODE_API_LIB): current value is undefined",
    );
    const typed = await assertRejects(() => openDoraNode({ libraryPath: 7 as never }), TypeError);
    assertEquals(
      typed.message,
      "Cannot open a Dora node as 'libraryPath' must be a string or a URL: current value is 7",
    );
  });
});

test("a library that cannot be loaded is an error naming the path", async () => {
  const missing = `${WORK}/no_such_library.so`;
  const error = await assertRejects(() => openDoraNode({ libraryPath: missing }));
  assertStringIncludes(error.message, missing);
});

test("the library path comes from DORA_NODE_API_LIB", async () => {
  const session = new Session(["end"]);
  Deno.env.set("DORA_DOUBLE_SCRIPT", session.script);
  Deno.env.set("DORA_DOUBLE_RECORD", session.recordPath);
  await withEnv({ DORA_NODE_API_LIB: LIB }, async () => {
    const transport = await openDoraNode();
    assertEquals(await transport.nextEvent(), null);
    await transport.close();
  });
  assertHygiene(await session.record());
});

test("NULL from init_dora_context_from_env is an Error", async () => {
  const session = new Session(["end"]);
  await withEnv({ DORA_DOUBLE_INIT_FAIL: "1" }, async () => {
    const error = await assertRejects(() => session.open());
    assertStringIncludes(error.message, "init_dora_context_from_env returned NULL");
  });
  // The library was closed again; a later open works.
  const transport = await session.open();
  await transport.close();
});

// --- the transport ------------------------------------------------------------------------------

test("events of every type are read, freed once, and inputs are owned copies", async () => {
  const seconds = 1_700_000_000n;
  const timestamp = (seconds << 32n) | 0x8000_0000n; // .5 s
  const session = new Session([
    `input camera/image 00ff10 ${timestamp}`,
    "stop",
    "input_closed",
    "error",
    "unknown",
    "raw_event 42",
    "raw_event -1",
    "input e\u00e9 - 0",
    "end",
  ]);
  const transport = await session.open();
  const events: DoraEvent[] = [];
  for (let event = await transport.nextEvent(); event; event = await transport.nextEvent()) {
    events.push(event);
  }
  assertEquals(await transport.nextEvent(), null, "null stays null");
  await transport.close();
  assert(transport.closed);
  // The lib is closed now: the data must still be readable (owned, not borrowed).
  assertEquals(events, [
    {
      type: "input",
      id: "camera/image",
      data: new Uint8Array([0, 255, 16]),
      timestampMs: 1_700_000_000_500,
    },
    { type: "stop" },
    { type: "input-closed" },
    { type: "error" },
    { type: "unknown" },
    { type: "unknown" },
    { type: "unknown" },
    { type: "input", id: "e\u00e9", data: new Uint8Array(0), timestampMs: 0 },
  ]);
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.counters.get("events"), 8);
});

test("input data is copied to an exact-length buffer (empty and 4 MiB)", async () => {
  const big = new Uint8Array(4 * 1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >>> 9) * 13) & 0xff;
  const bigPath = `${WORK}/big_input.bin`;
  await Deno.writeFile(bigPath, big);
  const session = new Session([
    "input empty -",
    `input big @${bigPath}`,
    "input small 0102",
    "end",
  ]);
  const transport = await session.open();
  const first = await transport.nextEvent();
  const second = await transport.nextEvent();
  const third = await transport.nextEvent();
  assertEquals(await transport.nextEvent(), null);
  assert(first?.type === "input" && second?.type === "input" && third?.type === "input");
  assertEquals(first.data.byteLength, 0);
  assertEquals(second.data.byteLength, big.length);
  assertEquals(second.data.buffer.byteLength, big.length, "a fresh buffer of the exact length");
  assert(sameBytes(second.data, big), "4 MiB copied byte for byte");
  assertEquals(third.data, new Uint8Array([1, 2]));
  assert(second.data.buffer !== third.data.buffer, "no shared buffer between events");
  // A send of a view with an offset sends exactly the view.
  await transport.sendOutput("view", big.subarray(3, 3 + 1024 * 1024));
  await transport.close();
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.outputs.length, 1);
  assertEquals(record.outputs[0].id, "view");
  assert(sameBytes(record.outputs[0].data, big.subarray(3, 3 + 1024 * 1024)), "the view's bytes");
});

test("sends while dora_next_event is pending are queued and flushed in order after it", async () => {
  const session = new Session(["fail_send 2", "sleep 150", "input tick -", "end"]);
  const transport = await session.open();
  const pending = transport.nextEvent();
  const settled: string[] = [];
  const errors = new Map<string, Error>();
  const send = (id: string, data: Uint8Array) =>
    transport.sendOutput(id, data).then(
      () => void settled.push(id),
      (error: Error) => {
        settled.push(`${id} failed`);
        errors.set(id, error);
      },
    );
  const sends = [
    send("a", new Uint8Array([1])),
    send("b", new Uint8Array([2])),
    send("c", new Uint8Array(0)),
  ];
  transport.log("info", "queued log line");
  await delay(60);
  assertEquals(settled, [], "nothing sent while dora_next_event is pending");
  const event = await pending;
  assertEquals(event?.type, "input");
  await Promise.all(sends);
  assertEquals(settled, ["a", "b failed", "c"]);
  assertInstanceOf(errors.get("b"), Error);
  assertStringIncludes(errors.get("b")!.message, '"b"');
  // Not pending now: a send goes out at once.
  await transport.sendOutput("d", new Uint8Array([4]));
  assertEquals(await transport.nextEvent(), null);
  await transport.close();
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.outputs.map((o) => o.id), ["a", "c", "d"]);
  assertEquals(record.outputs[1].data, new Uint8Array(0));
  assertEquals(record.counters.get("send_failures"), 1);
  assertEquals(record.logs, [{ level: "info", message: "queued log line" }]);
});

test("a second nextEvent while one is pending is refused", async () => {
  const session = new Session(["sleep 30", "input x 01", "end"]);
  const transport = await session.open();
  const pending = transport.nextEvent();
  await assertRejects(() => transport.nextEvent(), Error, "already pending");
  assertEquals((await pending)?.type, "input");
  await transport.close();
  assertHygiene(await session.record());
});

test("close waits for a pending dora_next_event, then frees the context", async () => {
  const session = new Session(["sleep 150", "input late 01", "end"]);
  const transport = await session.open();
  const pending = transport.nextEvent();
  const queued = transport.sendOutput("queued", new Uint8Array([9]));
  const closing = transport.close();
  assert(transport.closed);
  assertEquals(await transport.nextEvent(), null, "no new call after close");
  const event = await pending;
  assertEquals(event?.type === "input" ? event.id : null, "late", "the pending event is not lost");
  await queued;
  await closing;
  assertEquals(await transport.close(), undefined, "close is idempotent");
  await assertRejects(() => transport.sendOutput("after", new Uint8Array(1)), Error, '"after"');
  transport.log("info", "ignored after close");
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.counters.get("events"), 1);
  assertEquals(record.outputs.map((o) => o.id), ["queued"]);
});

test("dora_log is used when the library has it", async () => {
  const session = new Session(["end"]);
  const transport = await session.open();
  assert(transport.hasDoraLog);
  transport.log("warn", "two\nlines");
  await transport.close();
  const record = await session.record();
  assertEquals(record.logs, [{ level: "warn", message: "two\\nlines" }]);
});

test("a library without dora_log (dora 0.x) loads; log falls back to stderr", async () => {
  const session = new Session(["input x 01", "end"]);
  const transport = await session.open(LIB_NO_LOG);
  assertEquals(transport.hasDoraLog, false);
  const original = console.error;
  const lines: string[] = [];
  console.error = (...args: unknown[]) => lines.push(args.join(" "));
  try {
    transport.log("info", "to stderr");
  } finally {
    console.error = original;
  }
  assertEquals(lines, ["[info] to stderr"]);
  assertEquals((await transport.nextEvent())?.type, "input");
  await transport.close();
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.counters.get("log_calls"), 0);
});

test("the double itself catches a send issued while dora_next_event is pending", async () => {
  // Self-check of the harness: calling the library the wrong way must show in the record.
  const session = new Session(["sleep 50", "input x 01", "end"]);
  Deno.env.set("DORA_DOUBLE_SCRIPT", session.script);
  Deno.env.set("DORA_DOUBLE_RECORD", session.recordPath);
  const lib = Deno.dlopen(LIB, {
    init_dora_context_from_env: { parameters: [], result: "pointer" },
    free_dora_context: { parameters: ["pointer"], result: "void" },
    dora_next_event: { parameters: ["pointer"], result: "pointer", nonblocking: true },
    free_dora_event: { parameters: ["pointer"], result: "void" },
    dora_send_output: {
      parameters: ["pointer", "buffer", "usize", "buffer", "usize"],
      result: "i32",
    },
  });
  try {
    const context = lib.symbols.init_dora_context_from_env();
    const pending = lib.symbols.dora_next_event(context);
    await delay(10);
    const id = encoder.encode("wrong");
    assertEquals(lib.symbols.dora_send_output(context, id, 5n, new Uint8Array(1), 1n), 0);
    const event = await pending;
    lib.symbols.free_dora_event(event);
    lib.symbols.free_dora_event(event);
    lib.symbols.free_dora_context(context);
  } finally {
    lib.close();
  }
  const record = await session.record();
  assertEquals(record.counters.get("overlaps"), 1);
  assertEquals(record.counters.get("double_frees"), 1);
});

// --- the runner over FFI ------------------------------------------------------------------------

test("runner: request/response round trip", async () => {
  const request = encoder.encode("hello");
  const session = new Session([`input tool_request ${hex(request)}`, "wait_for_output 1", "stop"]);
  const received: Uint8Array[] = [];
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: echo(received),
  });
  assertEquals(received, [request]);
  assertEquals(stats.stopReason, "stop");
  assertEquals(stats.requests, 1);
  assertEquals(stats.responses, 1);
  assertEquals(stats.errors, 0);
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.counters.get("wait_timeouts"), 0);
  assertEquals(record.outputs, [{ id: "tool_response", data: echoed(request) }]);
});

test("runner: several concurrent requests; responses queued behind next_event, never overlapping", async () => {
  const requests = ["01", "0203", "040506", "07"].map(unhex);
  const session = new Session([
    ...requests.map((r) => `input tool_request ${hex(r)}`),
    "wait_for_output 4",
    "stop",
  ]);
  const received: Uint8Array[] = [];
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: echo(received, 25), // responds while the runner already waits in dora_next_event
    logger: () => {},
  });
  assertEquals(received, requests);
  assertEquals(stats.requests, 4);
  assertEquals(stats.responses, 4);
  assert(stats.inputs > 4, "timer-like tick inputs arrived while responses were queued");
  assert(stats.lastTimestampMs.has("tick"));
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.counters.get("wait_timeouts"), 0);
  assertEquals(
    record.outputs.map((o) => hex(o.data)).sort(),
    requests.map((r) => hex(echoed(r))).sort(),
  );
});

test("runner: input_closed, error and unknown events keep the node serving", async () => {
  const session = new Session([
    "input_closed",
    "error",
    "unknown",
    "raw_event 42",
    "input tool_request 2a",
    "wait_for_output 1",
    "stop",
  ]);
  const logs = captureLogs();
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: echo(),
    logger: logs.logger,
  });
  assertEquals(stats.responses, 1);
  assertEquals(
    Object.fromEntries(stats.events),
    { "input-closed": 1, error: 1, unknown: 2, stop: 1 },
  );
  assert(logs.lines.some((l) => l.level === "warn" && l.message.includes("error")));
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.outputs, [{ id: "tool_response", data: echoed(new Uint8Array([0x2a])) }]);
});

test("runner: a failing handler gets no response and the node keeps serving", async () => {
  const session = new Session([
    "input tool_request ff",
    "input tool_request 01",
    "wait_for_output 1",
    "stop",
  ]);
  const logs = captureLogs();
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: async (request, publish) => {
      if (request[0] === 0xff) throw new Error("bad bytes from an untrusted route");
      await publish(echoed(request));
    },
    logger: logs.logger,
  });
  assertEquals(stats.errors, 1);
  assertEquals(stats.responses, 1);
  assert(logs.lines.some((l) => l.level === "error" && l.message.includes("untrusted route")));
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.outputs.length, 1);
});

test("runner: stop mid-request waits for the in-flight handler, then closes", async () => {
  const session = new Session(["input tool_request 0102", "stop"]);
  const order: string[] = [];
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: async (request, publish) => {
      order.push("handle started");
      await delay(150);
      await publish(echoed(request));
      order.push("handle published");
    },
    onShutdown: async () => {
      order.push("onShutdown");
      await delay(1);
    },
    logger: () => {},
  });
  assertEquals(order, ["handle started", "onShutdown", "handle published"]);
  assertEquals(stats.stopReason, "stop");
  assertEquals(stats.responses, 1);
  assertEquals(stats.abandoned, 0);
  // The record is written by free_dora_context: the response went out before the context closed.
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.outputs, [{ id: "tool_response", data: echoed(new Uint8Array([1, 2])) }]);
});

test("runner: every request read after Stop is answered before the context closes", async () => {
  const requests = [[1], [2, 2], [3, 3, 3]].map((bytes) => new Uint8Array(bytes));
  for (const hook of ["settled at once", "settles while reading"]) {
    const session = new Session(["stop", ...requests.map((r) => `input tool_request ${hex(r)}`)]);
    const received: Uint8Array[] = [];
    const stats = await runToolEndpointNode({
      transport: await session.open(),
      handle: echo(received),
      onShutdown: hook === "settled at once" ? () => Promise.resolve() : () => delay(5),
      logger: () => {},
    });
    const record = await session.record();
    assertHygiene(record);
    // Every Input event the double delivered (all events but the Stop) was read by the node.
    const read = record.counters.get("events")! - 1;
    assert(read > 0, `${hook}: the node read at least one request after Stop`);
    assertEquals(received, requests.slice(0, read), hook);
    assertEquals(
      record.outputs,
      requests.slice(0, read).map((r) => ({ id: "tool_response", data: echoed(r) })),
      hook,
    );
    assertEquals([stats.requests, stats.responses], [read, read], hook);
  }
});

test("runner: a failed send rejects the publisher, is logged, and the node keeps serving", async () => {
  const session = new Session([
    "fail_send 1",
    "input tool_request 01",
    "input tool_request 02",
    "wait_for_output 2",
    "stop",
  ]);
  const logs = captureLogs();
  const publishErrors: unknown[] = [];
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: async (request, publish) => {
      try {
        await publish(echoed(request));
      } catch (error) {
        publishErrors.push(error);
        throw error;
      }
    },
    logger: logs.logger,
  });
  assertEquals(publishErrors.length, 1);
  assertInstanceOf(publishErrors[0], Error);
  assertStringIncludes((publishErrors[0] as Error).message, "tool_response");
  assertEquals(stats.sendFailures, 1);
  assertEquals(stats.errors, 1);
  assertEquals(stats.responses, 1);
  assert(logs.lines.some((l) => l.level === "error" && l.message.includes("tool_response")));
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.counters.get("send_failures"), 1);
  assertEquals(record.outputs, [{ id: "tool_response", data: echoed(new Uint8Array([2])) }]);
});

test("runner: empty and 4 MiB requests round-trip exactly", async () => {
  const big = new Uint8Array(4 * 1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >>> 11)) & 0xff;
  const bigPath = `${WORK}/big_request.bin`;
  await Deno.writeFile(bigPath, big);
  const session = new Session([
    "input tool_request -",
    `input tool_request @${bigPath}`,
    "wait_for_output 2",
    "stop",
  ]);
  const received: Uint8Array[] = [];
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: echo(received),
  });
  assertEquals(stats.responses, 2);
  assertEquals(received.map((r) => r.length), [0, big.length]);
  const record = await session.record();
  assertHygiene(record);
  assertEquals(record.outputs.length, 2);
  assertEquals(record.outputs[0].data, PREFIX);
  assert(sameBytes(record.outputs[1].data, echoed(big)), "4 MiB response byte for byte");
});

test("runner: the end of the event stream ends serving; input timestamps are exact", async () => {
  const at = 1_712_345_678_901;
  const session = new Session([
    `input tick - ${epochMsToNtp64(at - 5)}`,
    `input tool_request 01 ${epochMsToNtp64(at)}`,
    "wait_for_output 1",
    "end",
  ]);
  const logs = captureLogs();
  const stats = await runToolEndpointNode({
    transport: await session.open(),
    handle: echo(),
    logger: logs.logger,
  });
  assertEquals(stats.stopReason, "end-of-stream");
  assertEquals(stats.lastTimestampMs.get("tool_request"), at);
  assert(
    logs.lines.some((l) => l.level === "debug" && l.message.includes('"tick"')),
    "other inputs are logged at debug",
  );
  assertHygiene(await session.record());
});

// --- serveToolEndpoint over FFI: shutdown with running executions ------------------------------

for (const onAbort of ["end", "ignore"] as const) {
  test(`serve: Stop with running executions publishes each one's terminal event before closing (${onAbort})`, async () => {
    const move = new LongRunning("action", onAbort, { endDelayMs: 50 });
    const serve = new LongRunning("session", onAbort, { endDelayMs: 50 });
    const handler = robotHandler(move, serve);
    const invoke = (operation: string, invocationId: string) =>
      hex(encodeToolEnvelopeIpc(makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        new ToolContext({
          executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
          toolId: "forge.tool.robot",
          implementationId: "robot",
          endpointId: "robot",
          operation,
        }),
        { requestId: `invoke-${invocationId}`, endpointInstanceId: "instance-1" },
      )));
    const session = new Session([
      `input tool_request ${invoke("move", "move-1")}`,
      `input tool_request ${invoke("serve", "serve-1")}`,
      "wait_for_output 2",
      "stop",
      // Timer ticks while the node shuts down, so its queued sends go out (as a dora timer would).
      "wait_for_output 4 3000",
      "end",
    ]);
    const stats = await serveToolEndpoint(handler, {
      transport: await session.open(),
      graceMs: onAbort === "end" ? 10_000 : 50,
      logger: () => {},
    });
    assertEquals(stats.stopReason, "stop");
    const record = await session.record();
    assertHygiene(record);
    const published = record.outputs.map(({ data }) => decodeToolEnvelopeIpc(data));
    const lines = published.map((envelope) =>
      envelope.messageType === "tool.event"
        ? `${envelope.invocationId} ${eventFromPayload(envelope.payload).type}`
        : `${envelope.invocationId} ${envelope.payload.outcome}`
    );
    const [moveEnd, serveEnd] = onAbort === "end"
      ? ["cancelled", "stopped"]
      : ["executor_failed", "executor_failed"];
    assertEquals(lines.slice(0, 2).sort(), ["move-1 accepted", "serve-1 accepted"]);
    assertEquals(lines.slice(2).sort(), [`move-1 ${moveEnd}`, `serve-1 ${serveEnd}`]);
    // The outcomes are terminal, and readable after the node stopped.
    for (const [provider, id] of [[move, "move-1"], [serve, "serve-1"]] as const) {
      const execution = [...provider.executions.values()][0];
      assert(execution.signal.aborted);
      assertEquals(execution.context.executionKey.invocationId, id);
    }
    assertEquals(handler.state.activeInvocations, 0);
  });
}

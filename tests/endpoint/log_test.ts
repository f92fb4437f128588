/**
 * The default logger writes text: one string argument per console call, the error formatted with
 * its stack, fields, cause chain and AggregateError members. A live object handed to `console`
 * stays alive in V8's inspector (with everything it reaches), so the heap of a process that logs
 * provider failures must not grow with every handler it closes.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import { consoleLogger, type ToolLogRecord } from "../../mod.ts";
import { formatThrown, logSafely } from "../../src/endpoint/log.ts";

const METHODS = ["debug", "info", "warn", "error"] as const;

/** Runs `body` with the console methods replaced by recorders; returns each call's arguments. */
function captureConsole(body: () => void): { method: string; args: unknown[] }[] {
  const calls: { method: string; args: unknown[] }[] = [];
  const originals = METHODS.map((method) => console[method]);
  for (const method of METHODS) {
    console[method] = (...args: unknown[]) => calls.push({ method, args });
  }
  try {
    body();
  } finally {
    METHODS.forEach((method, i) => (console[method] = originals[i]));
  }
  return calls;
}

function onlyString(calls: { method: string; args: unknown[] }[]): string[] {
  for (const { args } of calls) {
    assertEquals(args.length, 1);
    assertEquals(typeof args[0], "string");
  }
  return calls.map(({ args }) => args[0] as string);
}

Deno.test("consoleLogger: a record without an error is one line on its level's method", () => {
  const calls = captureConsole(() => {
    for (const level of METHODS) {
      consoleLogger({
        level,
        event: "event.late",
        message: "dropped",
        endpointId: "e",
        operation: "o",
        invocationId: "i",
        attemptId: "a",
        requestId: "r",
      });
    }
  });
  assertEquals(calls.map(({ method }) => method), [...METHODS]);
  assertEquals(
    onlyString(calls),
    METHODS.map(() =>
      "[event.late] dropped (endpoint=e, operation=o, invocation=i, attempt=a, request=r)"
    ),
  );
});

Deno.test("consoleLogger: an error is text with its stack, fields and cause chain, never the object", () => {
  const inner = new TypeError("the sensor timed out");
  const error = Object.assign(new Error("the read failed", { cause: inner }), {
    code: "SENSOR_FAILED",
  });
  const [line] = onlyString(
    captureConsole(() =>
      consoleLogger({ level: "error", event: "provider.failed", message: "failed", error })
    ),
  );
  assert(line.startsWith("[provider.failed] failed Error: the read failed\n    at "), line);
  assertStringIncludes(line, error.stack!.split("\n")[1]);
  assertStringIncludes(line, '{"code": "SENSOR_FAILED"}');
  assertStringIncludes(line, "\n  [cause]: TypeError: the sensor timed out\n      at ");
  assertStringIncludes(line, inner.stack!.split("\n")[1].trim());
});

Deno.test("consoleLogger: AggregateError members and non-Error values are described safely", () => {
  const cyclic: Record<string, unknown> = { id: 1 };
  cyclic.self = cyclic;
  const hostile = {
    get value() {
      throw new Error("a getter that throws");
    },
  };
  const aggregate = new AggregateError([new RangeError("first"), "second", cyclic], "both failed");
  const records: ToolLogRecord[] = [
    { level: "warn", event: "a", message: "m", error: aggregate },
    { level: "warn", event: "b", message: "m", error: "a thrown string" },
    { level: "warn", event: "c", message: "m", error: 42 },
    { level: "warn", event: "d", message: "m", error: hostile },
    { level: "warn", event: "e", message: "m", error: null },
    { level: "warn", event: "f", message: "m", error: { samples: new Array(1e6).fill(0.5) } },
    {
      level: "warn",
      event: "g",
      message: "m",
      error: new Proxy({}, {
        ownKeys: () => {
          throw new Error("no keys");
        },
      }),
    },
  ];
  const lines = onlyString(captureConsole(() => records.forEach(consoleLogger)));
  assert(lines[0].startsWith("[a] m AggregateError: both failed\n"), lines[0]);
  assertStringIncludes(lines[0], "\n  [errors][0]: RangeError: first\n");
  assertStringIncludes(lines[0], '\n  [errors][1]: "second"');
  assertStringIncludes(lines[0], '\n  [errors][2]: {"id": 1, "self": [Circular]}');
  assertEquals(lines.slice(1, 5), [
    '[b] m "a thrown string"',
    "[c] m 42",
    '[d] m {"value": undefined}',
    "[e] m null",
  ]);
  // A huge value is described within a bound, without serializing all of it.
  assert(lines[5].length < 2100, `${lines[5].length}`);
  assertEquals(lines[6], "[g] m [unprintable value]");
});

Deno.test("formatThrown: a cause cycle ends at [Circular]", () => {
  const error = new Error("loop");
  (error as { cause?: unknown }).cause = error;
  assertEquals(formatThrown(error).split("\n").at(-1), "  [cause]: [Circular]");
});

Deno.test("logSafely: a logger that throws falls back to text on the console", () => {
  const calls = captureConsole(() =>
    logSafely(() => {
      throw new Error("the logger broke");
    }, { level: "warn", event: "event.late", message: "dropped", error: new Error("why") })
  );
  const lines = onlyString(calls);
  assertEquals(lines.length, 2);
  assert(lines[0].startsWith("[event.late] dropped Error: why\n"), lines[0]);
  assert(lines[1].startsWith("[logger.failed] the logger threw Error: the logger broke\n"));
});

Deno.test("consoleLogger: the heap does not grow with each closed handler whose failures were logged", async () => {
  const out = await Deno.makeTempFile({ suffix: ".json" });
  try {
    const { success } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--v8-flags=--expose-gc",
        `--allow-write=${out}`,
        new URL("../fixtures/logger_heap.ts", import.meta.url).pathname,
        out,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    assert(success, "the heap fixture failed");
    const heaps: number[] = JSON.parse(await Deno.readTextFile(out));
    assertEquals(heaps.length, 3);
    // Each round's failures reach 8 MB of provider state: retained, the heap grows by 16 MB
    // between round 1 and round 3; written as text, by well under 1 MB.
    const growth = heaps[2] - heaps[0];
    assert(growth < 8 * 2 ** 20, `the heap grew by ${(growth / 2 ** 20).toFixed(1)} MiB`);
  } finally {
    await Deno.remove(out);
  }
});

// The fuzz harness itself (tests/fuzz/_common.ts): a time cap that passes is never a failure and
// never leaves an input running, and what fast-check reports without a counterexample or with a
// non-Error thrown reads as what it is, never as "null".
import fc from "fast-check";
import { assertEquals, assertMatch } from "@std/assert";
import { delay } from "@std/async";
import { counterexampleOf, type FuzzTarget, runTarget } from "./_common.ts";

const LIMIT_MS = 40;

Deno.test("fuzz harness: a time cap passing during an input is no failure, the input ends", async () => {
  let running = 0;
  let finished = 0;
  const started = performance.now();
  const slow: FuzzTarget<number> = {
    name: "slow_input",
    arbitrary: () => fc.nat(),
    async: true,
    batchSize: 5,
    // Outlasts the cap whatever the machine's load: it waits for the clock, not for a count.
    async check() {
      running++;
      while (performance.now() < started + LIMIT_MS + 20) await delay(5);
      running--;
      finished++;
    },
  };
  const report = await runTarget(slow, {
    runs: 5,
    seed: 1,
    timeLimitMs: LIMIT_MS,
    timeBounds: "report",
  });
  assertEquals(report.failures, []);
  assertEquals(running, 0, "an input was left running after runTarget returned");
  assertEquals([finished, report.inputs, report.batches], [1, 1, 1]);
});

Deno.test("fuzz harness: a cap passing before a batch's first input is no failure", async () => {
  // The reported case: a batch that starts just before the cap and whose first input is not
  // ready by then (here its generation outlasts the cap) ran no input at all.
  const started = performance.now();
  let checked = 0;
  const late: FuzzTarget<number> = {
    name: "late_input",
    arbitrary: () =>
      fc.nat().map((n) => {
        while (performance.now() < started + LIMIT_MS + 5) { /* generation outlasts the cap */ }
        return n;
      }),
    check() {
      checked++;
    },
  };
  const report = await runTarget(late, {
    runs: 3,
    seed: 2,
    timeLimitMs: LIMIT_MS,
    timeBounds: "report",
  });
  assertEquals(report.failures, []);
  assertEquals([checked, report.inputs, report.batches], [0, 0, 1]);
});

Deno.test("fuzz harness: a non-Error thrown is reported as such, with its input", async () => {
  const target: FuzzTarget<number> = {
    name: "throws_null",
    arbitrary: () => fc.constant(7),
    check() {
      throw null;
    },
  };
  const report = await runTarget(target, { runs: 1, seed: 3, timeBounds: "report" });
  assertEquals(report.failures.map((f) => [f.error, f.input, f.path]), [
    ["non-Error thrown: null", 7, "0"],
  ]);
});

Deno.test("fuzz harness: fast-check's failures without a counterexample", () => {
  const base = {
    failed: true,
    interrupted: false,
    numRuns: 0,
    numSkips: 0,
    seed: 9,
    counterexample: null,
    counterexamplePath: null,
    errorInstance: null,
  };
  // Interrupted before any input passed: fast-check says failed, the harness says nothing found.
  assertEquals(counterexampleOf("t", { ...base, interrupted: true }), null);
  assertEquals(counterexampleOf("t", { ...base, failed: false, interrupted: true }), null);
  // Too many skipped inputs: a failure that says so, never "null".
  const skipped = counterexampleOf("t", { ...base, numRuns: 2, numSkips: 201 });
  assertEquals(skipped?.input, null);
  assertMatch(skipped!.error, /without a counterexample: 2 input\(s\) passed, 201 skipped/);
  // A real counterexample keeps its input, path and error.
  assertEquals(
    counterexampleOf("t", {
      ...base,
      counterexample: [{ n: undefined }],
      counterexamplePath: "3:1",
      errorInstance: new RangeError("bad"),
    }),
    {
      target: "t",
      seed: 9,
      path: "3:1",
      error: "RangeError: bad",
      input: { n: { $undefined: true } },
    },
  );
});

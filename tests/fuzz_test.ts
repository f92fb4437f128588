// The reliability and security harness in CI: every fuzz target of tests/fuzz/ on a small fixed
// budget and seed, the deterministic security boundary checks, and a replay of every saved
// counterexample in tests/fixtures/fuzz_regressions/, then the harness's own tests (its time cap,
// its reports) and targets run with a clock that stalls. `deno task fuzz` runs the same targets on
// any budget (see tools/fuzz.ts).
//
// The heap check needs `gc` (`--v8-flags=--expose-gc`); `deno task test` does not expose it, so
// the in-process targets skip it and a child process with `gc` runs it (the last test). Input
// times are reported, not held to a bound (see CI_BUDGET). A passing run prints nothing: the
// round reports are part of the error when a target fails.
import fc from "fast-check";
import { assertEquals, assertMatch } from "@std/assert";
import { delay } from "@std/async";
import { counterexampleOf, type FuzzTarget, loadRegressions, runTarget } from "./fuzz/_common.ts";
import { runSchedule, type Schedule } from "./fuzz/chaos.ts";
import { BOUNDARY_CHECKS } from "./fuzz/security.ts";
import { runShutdownScenario, shutdownScenarioArb } from "./fuzz/shutdown.ts";
import { buildDouble } from "./fuzz/ffi.ts";
import {
  formatReport,
  replayCounterexample,
  runSuite,
  SUITES,
  type TargetReport,
} from "./fuzz/mod.ts";

/**
 * The CI budget: inputs per target before the suite weights (dispatch 1/2, security end-to-end
 * batches 1/10, chaos schedules 1/4, FFI scripts 3 %, requests after Stop 5 %,
 * shutdown scenarios 1/10, lossy caller scenarios 2 %), and a cap per target so a slow machine
 * cannot stretch CI (inputs not reached by then are skipped, not failed; the input running when
 * the cap passes runs to its end and is checked, so a loaded machine can make a target run fewer
 * inputs, never fail).
 */
const CI_BUDGET = {
  runs: 600,
  seed: 0x5eed2026,
  timeLimitMs: 8_000,
  // No wall-clock threshold in the test suite: the slowest input is reported on failure, and the
  // long runs of `deno task fuzz` hold each input to its time bound.
  timeBounds: "report",
} as const;

/** Throws with every round report and counterexample when a target failed; silent otherwise. */
function assertClean(reports: readonly TargetReport[]): void {
  const failures = reports.flatMap((report) => report.failures);
  if (failures.length === 0) return;
  const rounds = reports.map((report) => {
    const counters = Object.entries(report.counters).sort(([a], [b]) => a < b ? -1 : 1);
    return `  ${formatReport(report)}` +
      (counters.length > 0
        ? `\n    ${counters.map(([name, n]) => `${name}: ${n}`).join("; ")}`
        : "");
  });
  const shown = failures.map((failure) => {
    const input = JSON.stringify(failure.input);
    return `${failure.target} (seed ${failure.seed}, path ${failure.path}): ${failure.error}\n` +
      `  input: ${input.length > 2000 ? input.slice(0, 2000) + "…" : input}`;
  });
  throw new Error(
    `${failures.length} counterexample(s); save them with \`deno task fuzz --seed ${CI_BUDGET.seed} ` +
      `--runs ${CI_BUDGET.runs}\`:\n${shown.join("\n")}\n${rounds.join("\n")}`,
  );
}

for (const suite of SUITES) {
  const needsCc = suite.name === "ffi";
  const cc = needsCc ? (await buildDouble()) !== null : true;
  if (!cc) {
    console.warn("fuzz_test: no C compiler `cc` on PATH; the FFI fault target is skipped");
  }
  Deno.test({
    name: `fuzz: ${suite.name} (${suite.targets.map((t) => t.name).join(", ")})`,
    ignore: !cc,
    async fn() {
      assertClean(await runSuite(suite, CI_BUDGET));
    },
  });
}

const regressions = await loadRegressions();
Deno.test({
  name: `fuzz: ${regressions.length} saved counterexample(s) replay clean`,
  async fn(t) {
    for (const { file, example } of regressions) {
      await t.step(file, () => replayCounterexample(example));
    }
  },
});

// The heap check, in a child process that has `gc` (`deno task test` does not expose it): the
// targets that keep the most state, in small batches, must each return to their baseline.
const HEAP_RUN = [
  "run",
  "--v8-flags=--expose-gc",
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-env",
  "--allow-ffi",
  new URL("../tools/fuzz.ts", import.meta.url).pathname,
  "--runs",
  "240",
  "--batch-size",
  "40",
  "--seed",
  String(CI_BUDGET.seed),
  "--only",
  "decode_envelope,dispatch_input,handler_chaos",
];
Deno.test("fuzz: the heap returns to its baseline after every batch (child process with gc)", async () => {
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: HEAP_RUN,
    cwd: new URL("..", import.meta.url).pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(stdout);
  if (code !== 0 || !out.includes("heap checked after every batch")) {
    throw new Error(
      `the heap run failed (exit ${code}):\n${out}\n${new TextDecoder().decode(stderr)}`,
    );
  }
});

// ---------------------------------------------------------------------------------------------
// The harness itself (tests/fuzz/_common.ts): a time cap that passes is never a failure and never
// leaves an input running, and what fast-check reports without a counterexample or with a
// non-Error thrown reads as what it is, never as "null".

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

// ---------------------------------------------------------------------------------------------
// Targets on a machine made slow on purpose: their invariants hold exactly whatever the load (no
// check reads the clock; the runner's time bound, enforced only by `deno task fuzz`, is where
// slowness is judged).

/**
 * Runs `fn` while every `performance.now()` read by a fuzz target's own code (tests/fuzz/) is
 * 5 s after the previous one: what a heavily loaded machine can do between two reads. The code
 * under test keeps the real clock (its leases and graces measure time by design).
 */
async function onAStallingMachine(fn: () => Promise<void>): Promise<void> {
  const real = performance.now;
  let stalled = 0;
  performance.now = () => {
    const caller = new Error().stack?.split("\n")[2] ?? "";
    if (caller.includes("/tests/fuzz/")) stalled += 5_000;
    return real.call(performance) + stalled;
  };
  try {
    await fn();
  } finally {
    performance.now = real;
  }
}

const SCHEDULE: Schedule = {
  enforceDeadlines: false,
  maxConcurrency: 2,
  maxRetained: 8,
  maxEarlyEvents: 2,
  keys: 2,
  steps: [
    {
      kind: "invoke",
      key: 0,
      op: "move",
      start: "sync",
      early: 1,
      conflict: false,
      deadline: null,
    },
    { kind: "emit", key: 0, event: "progress" },
    {
      kind: "invoke",
      key: 1,
      op: "serve",
      start: "defer",
      early: 0,
      conflict: false,
      deadline: null,
    },
    { kind: "status", key: 0, mismatch: false },
    { kind: "finish", key: 0, phase: "completed" },
    { kind: "result", key: 0, mismatch: false },
    { kind: "tick", turns: 2 },
  ],
};

Deno.test("handler_chaos: a schedule passes on a machine that stalls 5 s between clock reads", async () => {
  const counters: Record<string, number> = {};
  await onAStallingMachine(() => runSchedule(SCHEDULE, counters));
  assertEquals(counters["schedules passed"], 1);
});

Deno.test("security: the nesting boundary check passes on a machine that stalls 5 s between clock reads", async () => {
  const check = BOUNDARY_CHECKS.find((c) => c.name.startsWith("nesting:"))!;
  await onAStallingMachine(async () => await check.fn());
});

Deno.test("shutdown_running: scenarios pass on a machine that stalls 5 s between clock reads", async () => {
  const counters: Record<string, number> = {};
  const scenarios = fc.sample(shutdownScenarioArb(), { numRuns: 3, seed: 7 });
  await onAStallingMachine(async () => {
    for (const scenario of scenarios) await runShutdownScenario(scenario, counters);
  });
  assertEquals(counters["scenarios passed"], 3);
});

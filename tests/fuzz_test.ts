// The reliability and security harness in CI: every fuzz target of tests/fuzz/ on a small fixed
// budget and seed, the deterministic security boundary checks, and a replay of every saved
// counterexample in tests/fixtures/fuzz_regressions/. `deno task fuzz` runs the same targets on
// any budget (see tools/fuzz.ts).
//
// The heap check needs `gc` (`--v8-flags=--expose-gc`); `deno task test` does not expose it, so
// the in-process targets skip it and a child process with `gc` runs it (the last test). Input
// times are reported, not held to a bound (see CI_BUDGET). A passing run prints nothing: the
// round reports are part of the error when a target fails.
import { loadRegressions } from "./fuzz/_common.ts";
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

/**
 * The long-run entry of the reliability and security harness (`deno task fuzz`).
 *
 * ```sh
 * deno task fuzz                                  # one round, 1000 inputs per target, random seed
 * deno task fuzz --runs 600 --seed 1592598566     # the budget and seed CI runs (tests/fuzz_test.ts)
 * deno task fuzz --minutes 60                     # rounds with fresh seeds until an hour is up
 * deno task fuzz --minutes 10 --only handler_chaos,dispatch_input
 * deno task fuzz --runs 5000 --only shutdown_running,oversized_acceptance,ffi_faults
 * ```
 *
 * Options: `--runs N` inputs per target per round before the suite weights (default 1000;
 * dispatch gets half, security end-to-end batches a tenth, chaos schedules a quarter, FFI
 * scripts 3 %, requests-after-Stop scenarios 5 %,
 * shutdown scenarios (`shutdown_running`, `oversized_acceptance`) a tenth, lossy caller
 * scenarios (`lossy_caller`) 2 %), `--seed S` the first round's seed (default random; round k uses S + k),
 * `--minutes M` keep running rounds until M minutes passed (default: one round), `--only a,b`
 * restrict to these targets, `--batch-size N` inputs between two heap checks (default: each
 * target's own, 50 to 250). Counts per target are printed after every round and in total;
 * every counterexample is saved under tests/fixtures/fuzz_regressions/ (seed, replay path and the
 * input itself), which `deno task test` replays from then on. Exits 1 when anything was found.
 *
 * Runs with `--v8-flags=--expose-gc` (see the task), so the heap is checked against its baseline
 * after every batch.
 *
 * @module
 */
import { exposedGc, saveRegression } from "../tests/fuzz/_common.ts";
import {
  formatReport,
  runSuite,
  SUITES,
  targetNames,
  type TargetReport,
} from "../tests/fuzz/mod.ts";

interface Options {
  runs: number;
  batchSize: number | undefined;
  seed: number;
  minutes: number | undefined;
  only: Set<string> | undefined;
}

function usage(message?: string): never {
  if (message !== undefined) console.error(`fuzz: ${message}`);
  console.error(
    "usage: deno task fuzz [--runs N] [--seed S] [--minutes M] [--only target,target] " +
      "[--batch-size N]\n" +
      `targets: ${targetNames().join(", ")}`,
  );
  Deno.exit(2);
}

function parseArgs(args: readonly string[]): Options {
  const options: Options = {
    runs: 1000,
    batchSize: undefined,
    seed: crypto.getRandomValues(new Int32Array(1))[0],
    minutes: undefined,
    only: undefined,
  };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const [flag, inline] = arg.includes("=") ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    const value = () => {
      const next = inline ?? args[++i];
      if (next === undefined) usage(`${flag} needs a value`);
      return next;
    };
    const number = (text: string) => {
      const n = Number(text);
      if (!Number.isFinite(n)) usage(`${flag}: not a number: ${text}`);
      return n;
    };
    switch (flag) {
      case "--runs":
        options.runs = Math.max(1, Math.floor(number(value())));
        break;
      case "--batch-size":
        options.batchSize = Math.max(1, Math.floor(number(value())));
        break;
      case "--seed":
        options.seed = number(value()) | 0;
        break;
      case "--minutes":
        options.minutes = number(value());
        break;
      case "--only": {
        const names = value().split(",").map((name) => name.trim()).filter(Boolean);
        const known = new Set(targetNames());
        for (const name of names) if (!known.has(name)) usage(`unknown target ${name}`);
        options.only = new Set(names);
        break;
      }
      case "--help":
      case "-h":
        usage();
        break;
      default:
        usage(`unknown argument ${arg}`);
    }
  }
  return options;
}

interface Total {
  inputs: number;
  rounds: number;
  failures: number;
  slowestMs: number;
  heapGrowth: number | null;
  counters: Record<string, number>;
}

async function main(): Promise<number> {
  const options = parseArgs(Deno.args);
  const started = performance.now();
  const deadline = options.minutes === undefined ? undefined : started + options.minutes * 60_000;
  console.log(
    `fuzz: base seed ${options.seed}, ${options.runs} runs per target per round, ` +
      (deadline === undefined ? "one round" : `${options.minutes} minute(s)`) +
      (exposedGc() === undefined
        ? " (no gc: heap checks off; run through `deno task fuzz`)"
        : ", heap checked after every batch"),
  );
  const totals = new Map<string, Total>();
  const baselines = new Map<string, number>();
  let found = 0;
  for (let round = 0;; round++) {
    const seed = (options.seed + round) | 0;
    const roundStarted = performance.now();
    for (const suite of SUITES) {
      const remaining = deadline === undefined ? undefined : deadline - performance.now();
      if (remaining !== undefined && remaining <= 0) break;
      const reports: TargetReport[] = await runSuite(
        suite,
        { runs: options.runs, seed, timeLimitMs: remaining, batchSize: options.batchSize },
        { baselines, only: options.only },
      );
      for (const report of reports) {
        const total = totals.get(report.target) ?? {
          inputs: 0,
          rounds: 0,
          failures: 0,
          slowestMs: 0,
          heapGrowth: null,
          counters: {},
        };
        total.inputs += report.inputs;
        total.rounds++;
        total.failures += report.failures.length;
        total.slowestMs = Math.max(total.slowestMs, report.slowestMs);
        if (report.heapGrowth !== null) {
          total.heapGrowth = Math.max(total.heapGrowth ?? -Infinity, report.heapGrowth);
        }
        for (const [name, n] of Object.entries(report.counters)) {
          total.counters[name] = (total.counters[name] ?? 0) + n;
        }
        totals.set(report.target, total);
        console.log(`  [round ${round}, seed ${seed}] ${formatReport(report)}`);
        for (const failure of report.failures) {
          found++;
          const file = failure.input === null
            ? "(no input to save)"
            : await saveRegression(failure);
          console.log(
            `    COUNTEREXAMPLE ${failure.target} seed ${failure.seed} path ${failure.path}: ` +
              `${failure.error}\n    saved: ${file}`,
          );
        }
      }
    }
    console.log(
      `fuzz: round ${round} done in ${((performance.now() - roundStarted) / 1000).toFixed(1)} s`,
    );
    if (deadline === undefined || performance.now() >= deadline) break;
  }
  const minutes = (performance.now() - started) / 60_000;
  console.log(`\nfuzz: totals after ${minutes.toFixed(1)} minute(s), base seed ${options.seed}`);
  for (const [target, total] of totals) {
    const heap = total.heapGrowth === null
      ? "heap not checked"
      : `max heap growth ${(total.heapGrowth / 1048576).toFixed(2)} MiB`;
    console.log(
      `  ${target}: ${total.inputs} inputs over ${total.rounds} round(s), ` +
        `${total.failures} failure(s), slowest ${total.slowestMs.toFixed(1)} ms, ${heap}`,
    );
    const counters = Object.entries(total.counters).sort(([a], [b]) => a < b ? -1 : 1);
    if (counters.length > 0) {
      console.log(`    ${counters.map(([name, n]) => `${name}: ${n}`).join("; ")}`);
    }
  }
  console.log(found === 0 ? "fuzz: nothing found" : `fuzz: ${found} counterexample(s) saved`);
  return found === 0 ? 0 : 1;
}

Deno.exit(await main());

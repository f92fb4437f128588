// The fuzz harness's registry: every suite with its weight, and the lookup of a target by name
// (for replaying saved counterexamples). tests/fuzz_test.ts runs the suites on a small fixed
// budget in CI; tools/fuzz.ts runs them on any budget (`deno task fuzz`).
import {
  type AnyTarget,
  type Budget,
  type Counterexample,
  describeError,
  type FuzzTarget,
  replay,
  runTarget,
  type TargetReport,
} from "./_common.ts";
import * as afterStop from "./after_stop.ts";
import * as carrier from "./carrier.ts";
import * as chaos from "./chaos.ts";
import * as dispatch from "./dispatch.ts";
import * as ffi from "./ffi.ts";
import * as gatewayRouter from "./gateway_router.ts";
import * as httpApi from "./http_api.ts";
import * as lossyCaller from "./lossy_caller.ts";
import * as mcpRequests from "./mcp_requests.ts";
import * as security from "./security.ts";
import * as shutdown from "./shutdown.ts";
import * as wire from "./wire.ts";

export type { Budget, Counterexample, TargetReport } from "./_common.ts";

/** One module of targets, and the share of `budget.runs` each of its targets gets. */
export interface Suite {
  readonly name: string;
  /** Inputs per target = max(1, runs × weight): heavy targets (schedules) get fewer. */
  readonly weight: number;
  readonly targets: readonly AnyTarget[];
  /** Extra deterministic checks run once per call (the security boundaries). */
  readonly checks?: readonly security.SecurityCheck[];
}

/** Every suite, cheapest first. */
export const SUITES: readonly Suite[] = [
  { name: "wire", weight: 1, targets: wire.targets },
  { name: "carrier", weight: 1, targets: carrier.targets },
  { name: "dispatch", weight: 0.5, targets: dispatch.targets },
  { name: "security", weight: 0.1, targets: security.targets, checks: security.BOUNDARY_CHECKS },
  { name: "chaos", weight: 0.25, targets: chaos.targets },
  // Thousands of hung calls per input: few inputs.
  { name: "hung", weight: 0.02, targets: [chaos.hungTarget] },
  { name: "ffi", weight: 0.03, targets: ffi.targets },
  { name: "after-stop", weight: 0.05, targets: afterStop.targets },
  { name: "shutdown", weight: 0.1, targets: shutdown.targets },
  // A client over two lossy hops: concurrent calls with timeouts, few inputs.
  { name: "lossy-caller", weight: 0.02, targets: lossyCaller.targets },
  // Schedules of two callers and an adversarial provider through one gateway.
  { name: "gateway-router", weight: 0.1, targets: gatewayRouter.targets },
  // A fresh gateway, provider and HTTP service per input of up to six requests.
  { name: "http-api", weight: 0.05, targets: httpApi.targets },
  // A fresh gateway, provider and MCP server per input of up to eight JSON-RPC messages.
  { name: "mcp-requests", weight: 0.05, targets: mcpRequests.targets },
];

/** The pseudo target of the boundary checks: its input names the check. */
export const securityBoundaries: FuzzTarget<{ check: string }> = {
  name: "security_boundaries",
  arbitrary: () => {
    throw new Error("security_boundaries is a list of deterministic checks");
  },
  async check(input) {
    const check = security.BOUNDARY_CHECKS.find((c) => c.name === input.check);
    if (check === undefined) throw new Error(`no boundary check named ${input.check}`);
    await check.fn();
  },
  async: true,
  timeBoundMs: 10_000,
};

/** The target called `name`, if any. */
export function targetNamed(name: string): AnyTarget | undefined {
  if (name === securityBoundaries.name) return securityBoundaries;
  for (const suite of SUITES) {
    const target = suite.targets.find((t) => t.name === name);
    if (target !== undefined) return target;
  }
  return undefined;
}

/** Every target name (and the boundary checks'). */
export function targetNames(): string[] {
  return [
    ...SUITES.flatMap((suite) => suite.targets.map((target) => target.name)),
    securityBoundaries.name,
  ];
}

/** Options of {@linkcode runSuite}. */
export interface RunOptions {
  /** Heap baselines kept across calls (see runTarget). */
  readonly baselines?: Map<string, number>;
  /** Only these targets (by name); default all. */
  readonly only?: ReadonlySet<string>;
}

/** Runs one suite under `budget` (weights applied) and returns a report per target. */
export async function runSuite(
  suite: Suite,
  budget: Budget,
  options: RunOptions = {},
): Promise<TargetReport[]> {
  const reports: TargetReport[] = [];
  const wanted = (name: string) => options.only === undefined || options.only.has(name);
  if (suite.checks !== undefined && wanted(securityBoundaries.name)) {
    const report: TargetReport = {
      target: securityBoundaries.name,
      inputs: 0,
      batches: 1,
      slowestMs: 0,
      heapGrowth: null,
      counters: {},
      failures: [],
    };
    for (const check of suite.checks) {
      const started = performance.now();
      try {
        await check.fn();
        report.inputs++;
      } catch (error) {
        report.failures.push({
          target: securityBoundaries.name,
          seed: budget.seed,
          path: null,
          error: `${check.name}: ${describeError(error)}`,
          input: { check: check.name },
        });
      }
      report.slowestMs = Math.max(report.slowestMs, performance.now() - started);
    }
    reports.push(report);
  }
  for (const target of suite.targets) {
    if (!wanted(target.name)) continue;
    const runs = Math.max(1, Math.round(budget.runs * suite.weight));
    reports.push(await runTarget(target, { ...budget, runs }, options.baselines));
  }
  return reports;
}

/** Replays a stored counterexample through its target. */
export async function replayCounterexample(example: Counterexample): Promise<void> {
  const target = targetNamed(example.target);
  if (target === undefined) throw new Error(`no fuzz target named ${example.target}`);
  if (example.input === null) {
    throw new Error(`${example.target}: the counterexample has no input (${example.error})`);
  }
  await replay(target, example.input);
}

/** One line of counts for a report. */
export function formatReport(report: TargetReport): string {
  const memory = report.heapGrowth === null
    ? "heap not checked"
    : `heap ${(report.heapGrowth / 1048576).toFixed(2)} MiB over baseline`;
  const status = report.failures.length === 0 ? "ok" : `FAILED (${report.failures.length})`;
  return `${report.target}: ${status}, ${report.inputs} inputs in ${report.batches} batches, ` +
    `slowest ${report.slowestMs.toFixed(1)} ms, ${memory}`;
}

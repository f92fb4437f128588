// Fuzz targets on a machine made slow on purpose: their invariants hold exactly whatever the
// load (no check reads the clock; the runner's time bound, enforced only by `deno task fuzz`, is
// where slowness is judged).
import fc from "fast-check";
import { assertEquals } from "@std/assert";
import { runSchedule, type Schedule } from "./chaos.ts";
import { BOUNDARY_CHECKS } from "./security.ts";
import { runShutdownScenario, shutdownScenarioArb } from "./shutdown.ts";

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

// The execution ledger's eviction (src/handler/_ledger.ts) while many executions run: making
// room examines the evictable records only, so an admission into a full ledger costs the same
// with 1,000 running executions as with none (issue 20, latency under load), and the victim is
// still the least recently used evictable record.
import { assertEquals } from "@std/assert";
import fc from "fast-check";
import {
  ToolAccepted,
  ToolError,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolResult,
} from "../../mod.ts";
import { ExecutionLedger, type ExecutionRecord } from "../../src/handler/_ledger.ts";

const DONE = new ToolResult({ status: "succeeded", outputs: {} });
const COMPLETED = new ToolExecutionStatus({ phase: "completed" });
const UNKNOWN = {
  code: "FORGE_ENDPOINT_EXECUTOR_FAILED",
  message: "gone",
  retryable: false,
} as const;

function key(invocationId: string): ToolExecutionKey {
  return new ToolExecutionKey({ invocationId, attemptId: "attempt-1" });
}

function admitted(ledger: ExecutionLedger, invocationId: string): ExecutionRecord {
  const record = ledger.admit(key(invocationId), "move", 1_000_000, `request-${invocationId}`);
  if (record instanceof ToolError) throw new Error(`not admitted: ${record.message}`);
  return record;
}

/** Admits `invocationId` and leaves it running (accepted, permit held). */
function running(ledger: ExecutionLedger, invocationId: string): ExecutionRecord {
  const record = admitted(ledger, invocationId);
  ledger.settle(record, new ToolAccepted(), "accepted");
  return record;
}

/** Admits `invocationId` and finishes it through the provider's terminal report. */
function finished(ledger: ExecutionLedger, invocationId: string): void {
  running(ledger, invocationId);
  ledger.recordTerminal(key(invocationId), "move", COMPLETED, DONE, false);
}

/** Records examined per admission into a full ledger, with `runningCount` executions running. */
function examinedPerAdmission(runningCount: number): number {
  const maxRetained = runningCount + 16;
  const ledger = new ExecutionLedger(["move"], maxRetained, () => {});
  for (let i = 0; i < runningCount; i++) running(ledger, `run-${i}`);
  for (let i = 0; i < 16; i++) finished(ledger, `warm-${i}`);
  assertEquals(ledger.size, maxRetained);
  const before = ledger.examined;
  for (let i = 0; i < 200; i++) finished(ledger, `next-${i}`);
  assertEquals([ledger.size, ledger.permits.get("move")], [maxRetained, runningCount]);
  return (ledger.examined - before) / 200;
}

Deno.test("ledger eviction: an admission into a full ledger examines one record, however many run", () => {
  assertEquals(examinedPerAdmission(0), 1);
  assertEquals(examinedPerAdmission(10), 1);
  assertEquals(examinedPerAdmission(1000), 1);
});

Deno.test("ledger eviction: the victim is the least recently used evictable record", () => {
  const ledger = new ExecutionLedger(["move"], 4, () => {});
  const a = running(ledger, "a"); // used first, ends later without being used again
  finished(ledger, "b");
  running(ledger, "c");
  finished(ledger, "d");
  // a's permit is released by the handler's own convergence: no use, so a stays oldest.
  ledger.convergeUnknown(a, UNKNOWN);
  ledger.settle(a, a.result!, "terminal");
  ledger.find(key("b"), "move"); // b used again: d is now older than b
  finished(ledger, "e"); // evicts a
  assertEquals(
    [...ledger.records()].map((record) => record.key.id),
    ["c", "d", "b", "e"].map(
      (id) => key(id).id,
    ),
  );
  finished(ledger, "f"); // c runs: evicts d
  finished(ledger, "g"); // evicts b
  assertEquals(
    [...ledger.records()].map((record) => record.key.id),
    ["c", "e", "f", "g"].map(
      (id) => key(id).id,
    ),
  );
  assertEquals(ledger.examined > 0, true);
});

Deno.test("ledger eviction: a full ledger of running records refuses, and admits once one ends", () => {
  const ledger = new ExecutionLedger(["move"], 3, () => {});
  running(ledger, "a");
  const b = running(ledger, "b");
  running(ledger, "c");
  const refused = ledger.admit(key("d"), "move", 10, "request-d");
  assertEquals(refused instanceof ToolError ? refused.code : "admitted", "FORGE_ENDPOINT_CAPACITY");
  ledger.recordTerminal(key("b"), "move", COMPLETED, DONE, false);
  assertEquals(b.phase, "terminal");
  running(ledger, "d");
  assertEquals(
    [...ledger.records()].map((record) => record.key.id),
    ["a", "c", "d"].map(
      (id) => key(id).id,
    ),
  );
});

Deno.test("ledger eviction: 10,000 uses of finished records leave making room a bounded cost", () => {
  const ledger = new ExecutionLedger(["move"], 8, () => {});
  for (let i = 0; i < 8; i++) finished(ledger, `k-${i}`);
  for (let round = 0; round < 10_000; round++) ledger.find(key(`k-${round % 8}`), "move");
  const before = ledger.examined;
  finished(ledger, "next"); // evicts the least recently used: k-0 (10,000 % 8 = 0 used first)
  // Each use moved its record to the newest end of the eviction list: the oldest end is k-0,
  // found at once, not after 10,000 entries.
  assertEquals(ledger.examined - before, 1);
  assertEquals(ledger.get(key("k-0")), undefined);
  assertEquals(ledger.size, 8);
});

Deno.test("ledger eviction: random admissions, uses and endings evict what a recency-ordered model evicts", () => {
  // The model: keys in recency order (a use moves a key to the end), each running or ended; an
  // admission into a full ledger first removes the oldest ended key.
  // "converge" ends a running record without using it (the handler's own unknown convergence):
  // it becomes evictable with an old stamp, the eviction heap's case; a later "use" moves it.
  type Step = { kind: "run" | "finish" | "use" | "end" | "converge"; pick: number };
  const step = fc.record({
    kind: fc.oneof(
      { arbitrary: fc.constantFrom<Step["kind"]>("run", "finish", "end"), weight: 3 },
      { arbitrary: fc.constant<Step["kind"]>("run"), weight: 2 },
      { arbitrary: fc.constant<Step["kind"]>("converge"), weight: 3 },
      { arbitrary: fc.constant<Step["kind"]>("use"), weight: 3 },
    ),
    pick: fc.nat(1_000),
  });
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 8 }),
      fc.array(step, { maxLength: 120 }),
      (max, steps) => {
        const ledger = new ExecutionLedger(["move"], max, () => {});
        const order: string[] = [];
        const runningKeys = new Map<string, ExecutionRecord>();
        let fresh = 0;
        const touch = (id: string) => {
          order.splice(order.indexOf(id), 1);
          order.push(id);
        };
        const admit = (id: string): boolean => {
          if (order.length >= max) {
            const victim = order.find((k) => !runningKeys.has(k));
            if (victim === undefined) return false;
            order.splice(order.indexOf(victim), 1);
          }
          order.push(id);
          return true;
        };
        for (const { kind, pick } of steps) {
          if (kind === "run" || kind === "finish") {
            const id = `k-${fresh++}`;
            const record = ledger.admit(key(id), "move", 1_000_000, `request-${id}`);
            assertEquals(record instanceof ToolError, !admit(id));
            if (record instanceof ToolError) continue;
            ledger.settle(record, new ToolAccepted(), "accepted");
            runningKeys.set(id, record);
            if (kind === "finish") {
              ledger.recordTerminal(key(id), "move", COMPLETED, DONE, false);
              touch(id);
              runningKeys.delete(id);
            }
          } else if (kind === "use") {
            if (order.length === 0) continue;
            const id = order[pick % order.length];
            ledger.find(key(id), "move");
            touch(id);
          } else if (runningKeys.size > 0) {
            const running = [...runningKeys.keys()];
            const id = running[pick % running.length];
            if (kind === "end") {
              ledger.recordTerminal(key(id), "move", COMPLETED, DONE, false);
              touch(id);
            } else {
              const record = runningKeys.get(id)!;
              ledger.convergeUnknown(record, UNKNOWN);
              ledger.settle(record, record.result!, "terminal");
            }
            runningKeys.delete(id);
          }
          assertEquals(
            [...ledger.records()].map((record) => record.key.id),
            order.map((id) => key(id).id),
          );
        }
      },
    ),
    { numRuns: 1000 },
  );
});

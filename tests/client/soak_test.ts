// The client soak: 10,000 mixed Query/Action/Session invocations with random cancels, stops and
// aborts (tests/client/_soak.ts), run in a subprocess with --expose-gc so the heap can be
// measured after a full collection. Every call settles exactly once, nothing stays pending, and
// the heap returns to its post-warm-up baseline.
import { assert, assertEquals, assertLessOrEqual } from "@std/assert";
import type { SoakFacts } from "./_soak.ts";
import { runWithGc } from "../_helpers.ts";

const CALLS = 10_000;
const SEED = 0x5eed;
/** A leak of 400 bytes per call would pass this; the run measures about 0.6 MB of noise. */
const HEAP_MARGIN_BYTES = 4 * 1024 * 1024;

Deno.test("client soak: 10,000 mixed invocations settle once each; the heap returns to baseline", async () => {
  const facts = await runWithGc(
    new URL("./_soak.ts", import.meta.url),
    ["--allow-read", "--allow-env"],
    [String(CALLS), String(SEED)],
  ) as SoakFacts;
  assertEquals(facts.gc, true);
  assertEquals(facts.settledOnce, CALLS);
  assertEquals([facts.settledTwice, facts.unsettled], [0, 0]);
  assertEquals(facts.unexpected, []);
  assertEquals([facts.pendingExchanges, facts.openInvocations], [0, 0]);
  // The mix really happened: cancels, stops and aborts among the outcomes.
  for (const outcome of ["query:succeeded", "move:cancelled", "watch:stopped", "move:aborted"]) {
    assert((facts.outcomes[outcome] ?? 0) > 0, outcome);
  }
  assertLessOrEqual(facts.finalHeap - facts.baselineHeap, HEAP_MARGIN_BYTES);
});

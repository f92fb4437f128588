// Load on the Gateway Tool API, in a subprocess with --expose-gc (http_load_child.ts): 1,000
// concurrent SSE subscribers on one Session and 200 concurrent Queries, twice; afterwards the
// store, the subscribers and the gateway's pending exchanges are back to 0 and the heap after a
// full GC is within a size bound of what it was after the first round (no per-round growth).
import { assert, assertEquals } from "@std/assert";
import { runWithGc } from "../_helpers.ts";

/** What http_load_child.ts prints: per-round counts, the tables after both, the heap. */
interface LoadReport {
  okQueries: number[];
  ended: number[];
  subscribersUnderLoad: number[];
  subscribers: number;
  invocations: number;
  running: number;
  pendingExchanges: number;
  heap: { baseline: number; afterFirst: number; after: number };
}

Deno.test("http load: 1,000 SSE subscribers and 200 concurrent Queries are served; every table and the heap return to baseline", async () => {
  const report = await runWithGc(
    new URL("./http_load_child.ts", import.meta.url),
    ["--allow-read", "--allow-env", "--allow-net", "--allow-ffi"],
    ["1000", "200"],
  ) as LoadReport;
  assertEquals(report.okQueries, [200, 200]);
  assertEquals(report.ended, [1000, 1000]);
  assertEquals(report.subscribersUnderLoad, [1000, 1000]);
  assertEquals(
    [report.subscribers, report.invocations, report.running, report.pendingExchanges],
    [0, 0, 0, 0],
  );
  const { baseline, afterFirst, after } = report.heap;
  const MiB = 1024 * 1024;
  // A size bound: a second identical round leaves at most 4 MiB more (a leak of the 1,000
  // subscribers' streams or the 200 Queries' exchanges would be tens of MiB), and the whole run
  // at most 16 MiB above the cold baseline (code compiled and caches warmed once).
  assert(after - afterFirst < 4 * MiB, `heap grew ${after - afterFirst} bytes in round 2`);
  assert(after - baseline < 16 * MiB, `heap grew ${after - baseline} bytes over the run`);
});

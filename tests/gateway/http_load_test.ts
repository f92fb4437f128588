// Load on the Gateway Tool API, in a subprocess with --expose-gc (http_load_child.ts): 1,000
// concurrent SSE subscribers on one Session and 200 concurrent Queries, twice; afterwards the
// store, the subscribers and the gateway's pending exchanges are back to 0 and the heap after a
// full GC is within a size bound of what it was after the first round (no per-round growth).
import { assert, assertEquals } from "@std/assert";

Deno.test("http load: 1,000 SSE subscribers and 200 concurrent Queries are served; every table and the heap return to baseline", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--expose-gc",
      "--allow-read",
      "--allow-env",
      "--allow-net",
      "--allow-ffi",
      new URL("./http_load_child.ts", import.meta.url).pathname,
      "1000",
      "200",
    ],
    stdout: "piped",
    stderr: "piped",
  });
  const { code, stdout, stderr } = await child.output();
  const out = new TextDecoder().decode(stdout);
  assertEquals(code, 0, new TextDecoder().decode(stderr));
  const report = JSON.parse(out.trim().split("\n").at(-1)!);
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

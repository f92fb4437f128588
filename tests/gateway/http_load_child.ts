// Run by http_load_test.ts with --v8-flags=--expose-gc: 1,000 concurrent SSE subscribers on one
// Session and 200 concurrent Queries over real HTTP, then every table back to baseline; prints
// one JSON line with the counts and the heap (after a full GC) at baseline, under load and after.
import { ENDPOINT, SseReader, startHarness, until } from "./http_helpers.ts";

const SUBSCRIBERS = Number(Deno.args[0] ?? 1000);
const QUERIES = Number(Deno.args[1] ?? 200);
const gc = (globalThis as { gc?: () => void }).gc!;

function heap(): number {
  gc();
  gc();
  return Deno.memoryUsage().heapUsed;
}

const h = await startHarness({ stepMs: 20, retentionMs: 20 });
const post = { method: "POST", body: "{}", headers: { "content-type": "application/json" } };

async function round(): Promise<Record<string, number>> {
  const started = await h.json(`/tools/${ENDPOINT}/policy:invoke`, post);
  const id = (started.body.data as Record<string, unknown>).invocation_id as string;
  const readers = await Promise.all(
    Array.from({ length: SUBSCRIBERS }, async () => {
      const response = await h.fetch(`/invocations/${id}/events`);
      if (response.status !== 200) throw new Error(`events: ${response.status}`);
      return new SseReader(response);
    }),
  );
  await until(() => h.server.handler.stats.subscribers === SUBSCRIBERS, "every subscriber");
  const queries = await Promise.all(
    Array.from({ length: QUERIES }, () =>
      h.json(`/tools/${ENDPOINT}/detect:invoke`, {
        method: "POST",
        body: JSON.stringify({ arguments: { classes: ["cube"] } }),
      })),
  );
  const okQueries = queries.filter((answer) => answer.status === 200).length;
  const loaded = heap();
  const subscribersUnderLoad = h.server.handler.stats.subscribers;
  await h.json(`/invocations/${id}/stop`, { method: "POST" });
  const ends = await Promise.all(
    readers.map(async (reader) => (await reader.rest()).at(-1)?.event),
  );
  const ended = ends.filter((event) => event === "end").length;
  await until(() => h.server.handler.stats.invocations === 0, "the retention");
  await until(() => h.gateway.pendingExchanges === 0, "the exchanges");
  return { okQueries, ended, subscribersUnderLoad, loaded };
}

// A first small round warms every code path, so the baseline is not the cold heap.
const baseline = heap();
const first = await round();
const afterFirst = heap();
const second = await round();
const after = heap();
const stats = h.server.handler.stats;
console.log(JSON.stringify({
  okQueries: [first.okQueries, second.okQueries],
  ended: [first.ended, second.ended],
  subscribersUnderLoad: [first.subscribersUnderLoad, second.subscribersUnderLoad],
  subscribers: stats.subscribers,
  invocations: stats.invocations,
  running: stats.runningInvocations,
  pendingExchanges: h.gateway.pendingExchanges,
  heap: { baseline, loaded: second.loaded, afterFirst, after },
}));
await h.close();

// What a client keeps of a call once its answer arrived: nothing the Scavenger has to promote.
// Before the pending exchanges moved from a Map to RequestTable, a soak of Query invokes promoted
// 0.2–2 MiB at every Scavenge (V8's Map leaves obsolete backing tables that point at the
// exchanges, and with them the whole call, until the next mark-compact); now none. The test sums
// the bytes V8 reports promoted (--trace-gc-nvp) in the soak's second half: a count, not a time.
import { assert, assertEquals } from "@std/assert";
import { RequestTable } from "../../src/client/_request_table.ts";

Deno.test("client: a soak of queries promotes (almost) nothing at its Scavenges", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--v8-flags=--trace-gc-nvp",
      new URL("../fixtures/client_scavenge.ts", import.meta.url).pathname,
      "80000",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  assert(output.success, "the soak fixture failed");
  // V8 writes its trace on the same stdout and may split a record: read the text whole.
  const text = new TextDecoder().decode(output.stdout).replaceAll("\n", "");
  const half = text.indexOf("--- second half ---");
  assert(half > 0, "the fixture printed no marker");
  let scavenges = 0;
  let promoted = 0;
  for (const match of text.slice(half).matchAll(/"gc":"(\w+)".*?"promoted":(\d+)/g)) {
    if (match[1] !== "s") continue;
    scavenges++;
    promoted += Number(match[2]);
  }
  assert(scavenges >= 3, `only ${scavenges} Scavenges in the second half`);
  // Before: several MiB over these Scavenges. After: a few KiB (the compiler's own objects).
  assert(
    promoted < 256 * 1024,
    `${scavenges} Scavenges promoted ${(promoted / 1024).toFixed(0)} KiB of per-call objects`,
  );
});

Deno.test("RequestTable: set, get, delete with colliding slots and growth", () => {
  const table = new RequestTable<number>();
  const keys = Array.from({ length: 500 }, (_, i) => `request-${i}`);
  keys.forEach((key, i) => table.set(key, i));
  assertEquals(table.size, 500);
  assertEquals(keys.map((key) => table.get(key)), keys.map((_, i) => i));
  // Deleting every other key keeps every remaining one reachable (backward-shift deletion).
  keys.forEach((key, i) => {
    if (i % 2 === 0) assertEquals(table.delete(key), true);
  });
  assertEquals(table.delete("request-0"), false);
  assertEquals(table.size, 250);
  assertEquals(
    keys.map((key) => table.get(key)),
    keys.map((_, i) => (i % 2 === 0 ? undefined : i)),
  );
  assertEquals(table.values().sort((a, b) => a - b), keys.map((_, i) => i).filter((i) => i % 2));
  table.set("request-1", -1);
  assertEquals([table.get("request-1"), table.size, table.has("request-2")], [-1, 250, false]);
  for (const key of keys) table.delete(key);
  assertEquals([table.size, table.values()], [0, []]);
});

Deno.test("RequestTable: a key's hash, given or left out, reaches the same entry", () => {
  // The client hashes a request id once and passes the hash to every operation on it; the
  // table must behave as a Map whichever way each operation is called.
  const table = new RequestTable<number>();
  const model = new Map<string, number>();
  const keys = Array.from({ length: 300 }, () => crypto.randomUUID());
  let seed = 7;
  const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let step = 0; step < 20_000; step++) {
    const key = keys[next(keys.length)];
    const hash = next(2) === 0 ? RequestTable.hashOf(key) : undefined;
    switch (next(4)) {
      case 0:
        table.set(key, step, hash);
        model.set(key, step);
        break;
      case 1:
        assertEquals(table.delete(key, hash), model.delete(key));
        break;
      case 2:
        assertEquals(table.get(key, hash), model.get(key));
        break;
      default:
        assertEquals(table.has(key, hash), model.has(key));
    }
    assertEquals(table.size, model.size);
  }
  assertEquals(table.values().sort((a, b) => a - b), [...model.values()].sort((a, b) => a - b));
});

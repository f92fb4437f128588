// The table by execution key behind the handler's ledger and the definitions' executions
// (src/_internal/execution_map.ts): it must agree with a plain Map by the key's pairKey id.
import { assertEquals, assertStrictEquals } from "@std/assert";
import { ExecutionKeyMap } from "../../src/_internal/execution_map.ts";
import { pairKey } from "../../src/_internal/text.ts";

interface Entry {
  readonly key: { readonly invocationId: string; readonly attemptId: string };
  readonly n: number;
}

const entry = (invocationId: string, attemptId: string, n = 0): Entry => ({
  key: { invocationId, attemptId },
  n,
});

Deno.test("ExecutionKeyMap: attempts of one invocation are held, replaced and forgotten each alone", () => {
  const map = new ExecutionKeyMap<Entry>();
  const first = entry("inv", "1");
  map.set(first);
  // A fresh key with the same strings finds it; the same invocation's other attempt does not.
  assertStrictEquals(map.get({ invocationId: "inv", attemptId: "1" }), first);
  assertEquals(map.get({ invocationId: "inv", attemptId: "2" }), undefined);
  assertEquals(map.delete({ invocationId: "inv", attemptId: "2" }), false);
  const second = entry("inv", "2");
  map.set(second);
  const replaced = entry("inv", "1", 1);
  map.set(replaced);
  assertEquals(map.size, 2);
  assertStrictEquals(map.get(first.key), replaced);
  assertStrictEquals(map.get(second.key), second);
  assertEquals(map.delete(first.key), true);
  assertEquals(map.delete(first.key), false);
  assertEquals([map.size, map.get(first.key), [...map.values()]], [1, undefined, [second]]);
  assertEquals(map.delete(second.key), true);
  assertEquals([map.size, [...map.values()]], [0, []]);
  // A lone attempt replaced in place stays one value.
  map.set(entry("solo", "a"));
  map.set(entry("solo", "a", 2));
  assertEquals([map.size, map.get({ invocationId: "solo", attemptId: "a" })?.n], [1, 2]);
});

Deno.test("ExecutionKeyMap: agrees with a Map by pairKey over random sets and deletes", () => {
  // A small deterministic generator: ids that collide often, across invocations and attempts,
  // including ids whose concatenations would be equal ("a" + "bc" and "ab" + "c").
  let seed = 7;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const ids = ["a", "ab", "bc", "c", "", "1:a"];
  const map = new ExecutionKeyMap<Entry>();
  const reference = new Map<string, Entry>();
  for (let step = 0; step < 5000; step++) {
    const value = entry(ids[next(ids.length)], ids[next(ids.length)], step);
    const id = pairKey(value.key.invocationId, value.key.attemptId);
    if (next(3) === 0) {
      assertEquals(map.delete(value.key), reference.delete(id));
    } else {
      map.set(value);
      reference.set(id, value);
    }
    assertEquals(map.size, reference.size);
    const probe = { invocationId: ids[next(ids.length)], attemptId: ids[next(ids.length)] };
    assertStrictEquals(map.get(probe), reference.get(pairKey(probe.invocationId, probe.attemptId)));
  }
  const byN = (a: Entry, b: Entry) => a.n - b.n;
  assertEquals([...map.values()].sort(byN), [...reference.values()].sort(byN));
});

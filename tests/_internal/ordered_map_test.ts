// The insertion-ordered map the bounded tables use as queues (src/_internal/ordered_map.ts):
// order, moves, deletes, and how much of it a search for the oldest entry visits.
import { assertEquals, assertStrictEquals } from "@std/assert";
import { OrderedMap } from "../../src/_internal/ordered_map.ts";

Deno.test("OrderedMap keeps insertion order; set of a present key moves it to the end", () => {
  const map = new OrderedMap<string, number>();
  map.set("a", 1);
  map.set("b", 2);
  map.set("c", 3);
  map.set("a", 4);
  assertEquals([...map.keys()], ["b", "c", "a"]);
  assertEquals([...map.values()], [2, 3, 4]);
  assertEquals([...map], [["b", 2], ["c", 3], ["a", 4]]);
  assertEquals([map.size, map.get("a"), map.has("b"), map.get("z"), map.has("z")], [
    3,
    4,
    true,
    undefined,
    false,
  ]);
  assertStrictEquals(map.delete("c"), true);
  assertStrictEquals(map.delete("c"), false);
  assertEquals([...map.keys()], ["b", "a"]);
  map.delete("b");
  map.delete("a");
  assertEquals([map.size, [...map.keys()]], [0, []]);
  map.set("d", 5); // a map emptied by deletes starts again
  assertEquals([...map.entries()], [["d", 5]]);
  map.clear();
  assertEquals([map.size, [...map.keys()], map.get("d")], [0, [], undefined]);
  map.set("e", 6);
  assertEquals([...map.keys()], ["e"]);
});

Deno.test("OrderedMap.oldestWhere finds the oldest accepted entry, visiting only live ones", () => {
  const map = new OrderedMap<number, { done: boolean }>();
  for (let i = 0; i < 5; i++) map.set(i, { done: i >= 2 });
  let visits = 0;
  const done = (value: { done: boolean }) => {
    visits++;
    return value.done;
  };
  assertStrictEquals(map.oldestWhere(done), 2);
  assertStrictEquals(visits, 3);
  assertStrictEquals(map.oldestWhere(() => false), undefined);
  // Used as a queue, 10,000 times over: the oldest is always the first entry visited, however
  // many were deleted before it.
  const queue = new OrderedMap<number, true>();
  for (let i = 0; i < 1000; i++) queue.set(i, true);
  visits = 0;
  for (let i = 1000; i < 11_000; i++) {
    const oldest = queue.oldestWhere(() => {
      visits++;
      return true;
    });
    assertStrictEquals(oldest, i - 1000);
    queue.delete(oldest!);
    queue.set(i, true);
  }
  assertEquals([visits, queue.size], [10_000, 1000]);
});

Deno.test("an OrderedMap iteration skips entries deleted before it reaches them", () => {
  const map = new OrderedMap<string, number>();
  for (const [key, value] of [["a", 1], ["b", 2], ["c", 3], ["d", 4]] as const) {
    map.set(key, value);
  }
  const seen: string[] = [];
  for (const [key] of map) {
    seen.push(key);
    if (key === "a") {
      map.delete("a"); // the entry the iteration stands on
      map.delete("b"); // and the next one
    }
  }
  assertEquals(seen, ["a", "c", "d"]);
  assertEquals([...map.keys()], ["c", "d"]);
});

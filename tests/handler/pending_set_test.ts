/**
 * `PendingSet`, the list of pending promises close() waits on (provider calls, dispatches):
 * insertion order, O(1) idempotent removal, entries that leave by themselves.
 */
import { assertEquals, assertStrictEquals } from "@std/assert";
import { PendingSet } from "../../src/handler/_abort.ts";

Deno.test("pending set: iterates in insertion order and removes idempotently", () => {
  const set = new PendingSet();
  const promises = [0, 1, 2, 3].map((n) => Promise.resolve(n));
  const removers = promises.map((promise) => set.add(promise));
  assertStrictEquals(set.size, 4);
  removers[1]();
  removers[1]();
  removers[3]();
  assertStrictEquals(set.size, 2);
  assertEquals([...set], [promises[0], promises[2]]);
  removers[0]();
  removers[2]();
  assertStrictEquals(set.size, 0);
  assertEquals([...set], []);
  const again = Promise.resolve(4);
  set.add(again);
  assertEquals([...set], [again]);
});

Deno.test("pending set: an entered entry is iterated once it has its promise, until it leaves", () => {
  const set = new PendingSet();
  const first = set.enter();
  const added = Promise.resolve("added");
  set.add(added);
  // An entry without its promise yet counts, but yields nothing.
  assertStrictEquals(set.size, 2);
  assertEquals([...set], [added]);
  const work = Promise.resolve("work");
  first.promise = work;
  assertEquals([...set], [work, added]);
  set.leave(first);
  set.leave(first);
  assertStrictEquals(set.size, 1);
  assertEquals([...set], [added]);
});

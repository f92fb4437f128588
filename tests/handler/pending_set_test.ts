/**
 * `PendingSet`, the list of pending promises close() waits on (provider calls, dispatches):
 * insertion order, O(1) idempotent removal, removal once a tracked promise settles.
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

Deno.test("pending set: a tracked promise leaves the set once it settles, either way", async () => {
  const set = new PendingSet();
  const { promise: fulfilled, resolve } = Promise.withResolvers<void>();
  const { promise: rejected, reject } = Promise.withResolvers<void>();
  rejected.catch(() => {});
  set.track(fulfilled);
  set.track(rejected);
  assertStrictEquals(set.size, 2);
  resolve();
  await fulfilled;
  assertEquals([...set], [rejected]);
  reject(new Error("no"));
  await rejected.catch(() => {});
  assertStrictEquals(set.size, 0);
});

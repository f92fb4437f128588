/** AbortFanout: subscription order, O(1) unsubscribe, idempotence and calls after the abort. */
import { assertEquals } from "@std/assert";
import { AbortFanout } from "../../src/handler/_abort.ts";

Deno.test("AbortFanout calls the subscribers still linked, in subscription order, once", () => {
  const controller = new AbortController();
  const fanout = new AbortFanout(controller.signal);
  const calls: string[] = [];
  const unsubscribe: Record<string, () => void> = {};
  for (const name of ["a", "b", "c", "d", "e"]) {
    unsubscribe[name] = fanout.subscribe((reason) => {
      calls.push(`${name}:${reason}`);
      // Unsubscribing during the calls changes nothing: every linked subscriber is called.
      if (name === "b") unsubscribe.d();
    });
  }
  unsubscribe.a(); // the head
  unsubscribe.c(); // a middle one
  unsubscribe.c(); // again: nothing
  unsubscribe.e(); // the tail
  const late = fanout.subscribe((reason) => calls.push(`f:${reason}`));
  controller.abort("stop");
  late();
  assertEquals(calls, ["b:stop", "d:stop", "f:stop"]);
  controller.abort("again");
  fanout.subscribe((reason) => calls.push(`g:${reason}`))();
  assertEquals(calls, ["b:stop", "d:stop", "f:stop", "g:stop"]);
});

Deno.test("AbortFanout keeps working after every subscriber left", () => {
  const controller = new AbortController();
  const fanout = new AbortFanout(controller.signal);
  const calls: number[] = [];
  for (let i = 0; i < 3; i++) fanout.subscribe(() => calls.push(i))();
  fanout.subscribe(() => calls.push(9));
  controller.abort();
  assertEquals(calls, [9]);
});

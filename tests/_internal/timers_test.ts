/**
 * The long-delay timer helper (src/_internal/timers.ts): a delay beyond 2^31 − 1 ms is stepped,
 * never clamped to 1 ms as the global `setTimeout` does, and never fires early.
 */
import { assertEquals } from "@std/assert";
import { MAX_TIMER_DELAY_MS, setLongTimeout } from "../../src/_internal/timers.ts";
import { settleWithin } from "../../src/_internal/async.ts";
import { SYSTEM_CLOCK } from "../../node.ts";

/** Short real wait: long enough for a clamped (1 ms) timer to have fired many times over. */
const tick = (ms = 50) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Armed {
  readonly delay: number;
  readonly run: () => void;
  cleared: boolean;
}

/** Replaces the global timers while `body` runs, recording every timer armed. */
async function withStubbedTimers(body: (armed: Armed[]) => void | Promise<void>): Promise<void> {
  const armed: Armed[] = [];
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const set = (callback: () => void, delay?: number) => {
    armed.push({ delay: delay ?? 0, run: callback, cleared: false });
    return armed.length as unknown as ReturnType<typeof setTimeout>;
  };
  const clear = (id?: number) => {
    if (typeof id === "number" && armed[id - 1] !== undefined) armed[id - 1].cleared = true;
  };
  globalThis.setTimeout = set as unknown as typeof setTimeout;
  globalThis.clearTimeout = clear as unknown as typeof clearTimeout;
  try {
    await body(armed);
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
}

Deno.test("setLongTimeout: a delay up to 2^31 - 1 ms is one setTimeout of exactly that delay", async () => {
  await withStubbedTimers((armed) => {
    let fired = 0;
    setLongTimeout(() => fired++, 25);
    setLongTimeout(() => fired++, MAX_TIMER_DELAY_MS);
    setLongTimeout(() => fired++, -3);
    setLongTimeout(() => fired++, NaN);
    assertEquals(armed.map((timer) => timer.delay), [25, MAX_TIMER_DELAY_MS, 0, 0]);
    for (const timer of armed) timer.run();
    assertEquals(fired, 4);
  });
});

Deno.test("setLongTimeout: a longer delay is stepped on the clock and fires only at its deadline", async () => {
  await withStubbedTimers((armed) => {
    let now = 1000;
    let fired = 0;
    setLongTimeout(() => fired++, 2 * MAX_TIMER_DELAY_MS + 5, { now: () => now });
    assertEquals(armed.map((timer) => timer.delay), [MAX_TIMER_DELAY_MS]);
    // The first step ran a little late: the next step is what remains, from the clock.
    now += MAX_TIMER_DELAY_MS + 2;
    armed[0].run();
    assertEquals(fired, 0);
    assertEquals(armed.map((timer) => timer.delay), [MAX_TIMER_DELAY_MS, MAX_TIMER_DELAY_MS]);
    now += MAX_TIMER_DELAY_MS;
    armed[1].run();
    assertEquals(fired, 0);
    assertEquals(armed[2].delay, 3);
    now += 3;
    armed[2].run();
    assertEquals(fired, 1);
    assertEquals(armed.length, 3);
  });
});

Deno.test("setLongTimeout: clear() cancels the pending step, before and after a step", async () => {
  await withStubbedTimers((armed) => {
    let now = 0;
    let fired = 0;
    const timer = setLongTimeout(() => fired++, 3 * MAX_TIMER_DELAY_MS, { now: () => now });
    now += MAX_TIMER_DELAY_MS;
    armed[0].run();
    timer.clear();
    timer.clear();
    assertEquals(armed.map((step) => step.cleared), [false, true]);
    const short = setLongTimeout(() => fired++, 10);
    short.clear();
    assertEquals(armed[2].cleared, true);
    assertEquals(fired, 0);
  });
});

Deno.test("setLongTimeout: an infinite delay steps forever and never fires", async () => {
  await withStubbedTimers((armed) => {
    let fired = 0;
    setLongTimeout(() => fired++, Infinity, { now: () => 0 });
    for (let i = 0; i < 5; i++) armed[i].run();
    assertEquals(armed.length, 6);
    assertEquals(armed.every((step) => step.delay === MAX_TIMER_DELAY_MS), true);
    assertEquals(fired, 0);
  });
});

Deno.test("setLongTimeout and SYSTEM_CLOCK: a 2^31 ms timer does not fire within 50 ms", async () => {
  let fired = 0;
  const helper = setLongTimeout(() => fired++, 2 ** 31);
  const clock = SYSTEM_CLOCK.setTimeout(() => fired++, 2 ** 31);
  const huge = SYSTEM_CLOCK.setTimeout(() => fired++, 2 ** 40);
  await tick();
  helper.clear();
  SYSTEM_CLOCK.clearTimeout(clock);
  SYSTEM_CLOCK.clearTimeout(huge);
  assertEquals(fired, 0);
});

Deno.test("SYSTEM_CLOCK: a short timer fires, a cleared one does not", async () => {
  const fired: string[] = [];
  SYSTEM_CLOCK.setTimeout(() => fired.push("short"), 1);
  const cleared = SYSTEM_CLOCK.setTimeout(() => fired.push("cleared"), 1);
  SYSTEM_CLOCK.clearTimeout(cleared);
  SYSTEM_CLOCK.clearTimeout(undefined);
  await tick(20);
  assertEquals(fired, ["short"]);
});

Deno.test("settleWithin: a 2^31 ms bound waits for the work instead of giving up after 1 ms", async () => {
  let release!: () => void;
  const work = new Promise<void>((resolve) => (release = resolve));
  let settled = false;
  const waiting = settleWithin([work], 2 ** 31).then(() => (settled = true));
  await tick();
  assertEquals(settled, false);
  release();
  await waiting;
  assertEquals(settled, true);
});

// The gateway's exchange timeouts on one timer (src/gateway/_exchange_timeouts.ts): deadlines in
// start order, never early, settled exchanges dropped, bounded, and one timer however many
// exchanges come and go.
import { assert, assertEquals, assertThrows } from "@std/assert";
import { ExchangeTimeouts } from "../../src/gateway/_exchange_timeouts.ts";
import { FakeClock } from "../_helpers.ts";

/** A FakeClock that counts the timers set on it. */
class CountingClock extends FakeClock {
  set = 0;
  override setTimeout(callback: () => void, ms: number): unknown {
    this.set++;
    return super.setTimeout(callback, ms);
  }
}

function setup(timeoutMs = 100) {
  const clock = new CountingClock();
  const pending = new Map<string, true>();
  const expired: [string, number][] = [];
  const timeouts = new ExchangeTimeouts({ clock, exchangeTimeoutMs: timeoutMs }, pending, (id) => {
    pending.delete(id);
    expired.push([id, clock.now()]);
  });
  const start = (id: string) => {
    pending.set(id, true);
    timeouts.add(id, clock.now(), pending.size);
  };
  const settle = (id: string) => {
    pending.delete(id);
    timeouts.settled();
  };
  return { clock, pending, expired, timeouts, start, settle };
}

Deno.test("exchange timeouts end each unanswered exchange at its own deadline, in start order, never early", () => {
  const { clock, expired, start, settle, timeouts } = setup();
  start("a");
  clock.advance(10);
  start("b");
  clock.advance(10);
  start("c");
  settle("b");
  clock.advance(79); // t = 99
  assertEquals(expired, []);
  clock.advance(1); // t = 100
  assertEquals(expired, [["a", 100]]);
  clock.advance(19); // t = 119: b was answered, c is not due
  assertEquals(expired, [["a", 100]]);
  clock.advance(1);
  assertEquals(expired, [["a", 100], ["c", 120]]);
  assertEquals(timeouts.size, 0);
  assertEquals(clock.pending, 0);
});

Deno.test("exchange timeouts: exchanges answered in time set one timer per timeout period, and close() clears it", () => {
  const { clock, expired, start, settle, timeouts } = setup();
  for (let i = 0; i < 1000; i++) {
    start(`q-${i}`);
    settle(`q-${i}`);
    clock.advance(1);
  }
  assertEquals(expired, []);
  // One timer per exchangeTimeoutMs of traffic, not one per exchange: each fires once, finds
  // nothing due, and the next exchange sets the next (1,000 ms of traffic, 100 ms timeouts).
  assert(clock.set <= 11, `${clock.set} timers set`);
  assertEquals(timeouts.size, 0);
  start("last");
  timeouts.close();
  assertEquals(clock.pending, 0);
  clock.advance(1000);
  assertEquals(expired, []);
});

Deno.test("exchange timeouts: settled entries behind a waiting head stay bounded", () => {
  const { clock, expired, start, settle, timeouts, pending } = setup(1_000_000);
  start("hung");
  for (let i = 0; i < 10_000; i++) {
    start(`q-${i}`);
    settle(`q-${i}`);
  }
  assert(timeouts.size <= 2 * pending.size + 64 + 1, `${timeouts.size} entries`);
  clock.advance(1_000_000);
  assertEquals(expired, [["hung", 1_000_000]]);
  assertEquals(clock.pending, 0);
});

Deno.test("exchange timeouts: an exchange started from inside an expiry sets no second timer", () => {
  const clock = new CountingClock();
  const pending = new Map<string, true>();
  const expired: string[] = [];
  const timeouts: ExchangeTimeouts = new ExchangeTimeouts(
    { clock, exchangeTimeoutMs: 100 },
    pending,
    (id) => {
      pending.delete(id);
      expired.push(id);
      // The caller answered with an error re-sends at once.
      if (id === "first") {
        pending.set("again", true);
        timeouts.add("again", clock.now(), pending.size);
      }
    },
  );
  pending.set("first", true);
  timeouts.add("first", clock.now(), pending.size);
  clock.advance(100);
  assertEquals(clock.pending, 1);
  clock.advance(100);
  assertEquals(expired, ["first", "again"]);
  assertEquals(clock.pending, 0);
  timeouts.close();
});

Deno.test("exchange timeouts: an expiry that throws leaves the later exchanges' timeouts running", () => {
  const clock = new CountingClock();
  const pending = new Map<string, true>();
  const expired: string[] = [];
  const timeouts = new ExchangeTimeouts({ clock, exchangeTimeoutMs: 100 }, pending, (id) => {
    pending.delete(id);
    expired.push(id);
    if (id === "first") throw new Error("expiry failed");
  });
  for (const id of ["first", "second"]) {
    pending.set(id, true);
    timeouts.add(id, clock.now(), pending.size);
    clock.advance(10);
  }
  assertThrows(() => clock.advance(90), Error, "expiry failed");
  clock.advance(100);
  assertEquals(expired, ["first", "second"]);
  assertEquals(clock.pending, 0);
});

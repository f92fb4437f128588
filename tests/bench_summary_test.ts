/**
 * The bench summary's verdicts: a target is judged on the median of the rounds while their spread
 * is within bounds, and past it only when no round could change the verdict.
 */
import { assertEquals } from "@std/assert";
import { spreadOf, UNSTABLE_SPREAD, verdictOf } from "../bench/summary.ts";

Deno.test("bench summary: within the spread bound the median decides", () => {
  assertEquals(verdictOf([7.4, 7.5, 7.6], { atMost: 4 }), { target: "≤ 4", verdict: "MISSED" });
  // One round past the target does not decide while the rounds agree within 25%.
  assertEquals(verdictOf([3.6, 3.9, 4.2], { atMost: 4 }), { target: "≤ 4", verdict: "met" });
  assertEquals(verdictOf([9.6, 10.2, 11.3], { atLeast: 5 }), { target: "≥ 5", verdict: "met" });
  assertEquals(verdictOf([4.6, 4.8, 5.1], { atLeast: 5 }).verdict, "MISSED");
});

Deno.test("bench summary: past the spread bound a target is judged only when every round agrees", () => {
  // Session rounds of one run (6.64 … 10.82, spread 51%): every round misses ≤ 4.
  assertEquals(verdictOf([8.06, 8.21, 6.64, 8.16, 10.82], { atMost: 4 }), {
    target: "≤ 4",
    verdict: "MISSED in every round",
  });
  assertEquals(verdictOf([8.03, 17.39, 20.38], { atLeast: 5 }).verdict, "met in every round");
  // Rounds on both sides of the target: no verdict.
  assertEquals(verdictOf([3.5, 5.8, 4.1], { atMost: 4 }).verdict, "unstable (spread 56%)");
  assertEquals(
    verdictOf([10.33, 11.31, 28.21, 5.9], { atMost: 6 }).verdict.startsWith("unstable"),
    true,
  );
});

Deno.test("bench summary: the spread is (max − min) ÷ median, and the bound sits at 25%", () => {
  assertEquals(spreadOf([2, 3, 4]), 2 / 3);
  assertEquals(spreadOf([5]), 0);
  assertEquals(UNSTABLE_SPREAD, 0.25);
  // Exactly at the bound the median still decides.
  assertEquals(verdictOf([3.5, 4, 4.5], { atMost: 4.2 }).verdict, "met");
  assertEquals(verdictOf([3.4, 4, 4.6], { atMost: 3.6 }).verdict, "unstable (spread 30%)");
});

Deno.test("bench summary: a ratio without a target has no verdict", () => {
  assertEquals(verdictOf([1, 100], undefined), { target: "", verdict: "" });
  assertEquals(verdictOf([1.2], {}), { target: "", verdict: "" });
});

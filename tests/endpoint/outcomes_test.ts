// Port of the reference's tests/test_models.py (tests 7, 9, 10 and 12-16 of 16: results, result
// lookups, control answers, events, execution statuses), plus the terminal phase table
// (src/endpoint/outcomes.ts).
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import {
  isTerminalPhase,
  TERMINAL_RESULT_STATUS,
  ToolControlResponse,
  ToolError,
  ToolEvent,
  ToolExecutionStatus,
  type ToolExecutionStatusInit,
  ToolResult,
  type ToolResultInit,
  ToolResultResponse,
  validateExecutionResult,
} from "../../src/endpoint/models.ts";
import type { ToolEventType } from "../../src/endpoint/constants.ts";

Deno.test("tool result terminal error invariants", async (t) => {
  const error = new ToolError({ code: "EXECUTOR_FAILED", message: "executor failed" });

  for (const status of ["succeeded", "cancelled", "stopped"] as const) {
    await t.step(status, () => {
      assertStrictEquals(new ToolResult({ status }).error, undefined);
      assertThrows(
        () => new ToolResult({ status, error } as unknown as ToolResultInit),
        RangeError,
        "must not contain",
      );
    });
  }
  for (const status of ["failed", "unknown"] as const) {
    await t.step(status, () => {
      assertThrows(
        () => new ToolResult({ status } as ToolResultInit),
        RangeError,
        "must contain",
      );
      assertStrictEquals(new ToolResult({ status, error }).error, error);
    });
  }
});

Deno.test("result lookup response distinguishes pending available and not found", () => {
  const result = new ToolResult({ status: "succeeded", outputs: { value: 1 } });

  assertStrictEquals(new ToolResultResponse({ status: "pending" }).result, undefined);
  assertStrictEquals(new ToolResultResponse({ status: "not_found" }).result, undefined);
  assertStrictEquals(new ToolResultResponse({ status: "available", result }).result, result);

  assertThrows(
    () => new ToolResultResponse({ status: "available" } as never),
    RangeError,
    "must contain",
  );
  assertThrows(
    () => new ToolResultResponse({ status: "pending", result } as never),
    RangeError,
    "only an available",
  );
});

Deno.test("control response distinguishes ack from terminal state", () => {
  const accepted = new ToolControlResponse({ command: "cancel", status: "accepted" });
  // (The reference also checks the doc string for "means only": not visible at runtime.)
  assertStrictEquals(accepted.status, "accepted");

  const error = new ToolError({ code: "CONTROL_REJECTED", message: "cannot cancel" });
  const rejected = new ToolControlResponse({ command: "cancel", status: "rejected", error });
  assertStrictEquals(rejected.error, error);

  assertThrows(
    () => new ToolControlResponse({ command: "stop", status: "rejected" } as never),
    RangeError,
    "must contain",
  );
  assertThrows(
    () => new ToolControlResponse({ command: "stop", status: "unsupported", error } as never),
    RangeError,
    "only a rejected",
  );
});

Deno.test("documented event types are accepted", async (t) => {
  const types: ToolEventType[] = [
    "progress",
    "heartbeat",
    "executor_completed",
    "executor_failed",
    "cancelled",
    "stopped",
  ];
  for (const type of types) {
    await t.step(type, () => {
      assertStrictEquals(new ToolEvent({ type }).type, type);
    });
  }
});

Deno.test("unknown event type is rejected", () => {
  assertThrows(() => new ToolEvent({ type: "log" as never }), RangeError, "event type");
});

Deno.test("execution status separates executor completion from runtime success", () => {
  const status = new ToolExecutionStatus({
    phase: "completed",
    details: { executor_result: "completed" },
  });

  assertStrictEquals(status.phase, "completed");
  assertEquals(status.details, { executor_result: "completed" });
  // (The reference also checks the doc string for "Runtime still owns": not visible at runtime.)
});

Deno.test("terminal execution status and result must agree", () => {
  const error = new ToolError({ code: "EXECUTOR_FAILED", message: "failed" });
  const pairs: [ToolExecutionStatus, ToolResult][] = [
    [new ToolExecutionStatus({ phase: "completed" }), new ToolResult({ status: "succeeded" })],
    [
      new ToolExecutionStatus({ phase: "failed", error }),
      new ToolResult({ status: "failed", error }),
    ],
    [new ToolExecutionStatus({ phase: "cancelled" }), new ToolResult({ status: "cancelled" })],
    [new ToolExecutionStatus({ phase: "stopped" }), new ToolResult({ status: "stopped" })],
    [
      new ToolExecutionStatus({ phase: "unknown", error }),
      new ToolResult({ status: "unknown", error }),
    ],
  ];
  for (const [status, result] of pairs) {
    assertStrictEquals(validateExecutionResult(status, result), undefined);
  }

  assertThrows(
    () =>
      validateExecutionResult(
        new ToolExecutionStatus({ phase: "running" }),
        new ToolResult({ status: "succeeded" }),
      ),
    RangeError,
    "not terminal",
  );
  assertThrows(
    () =>
      validateExecutionResult(
        new ToolExecutionStatus({ phase: "completed" }),
        new ToolResult({ status: "stopped" }),
      ),
    RangeError,
    "requires result status",
  );
});

Deno.test("failed and unknown execution status require structured error", () => {
  for (const phase of ["failed", "unknown"] as const) {
    assertThrows(
      () => new ToolExecutionStatus({ phase } as ToolExecutionStatusInit),
      RangeError,
      phase,
    );
  }

  const error = new ToolError({ code: "EXECUTOR_FAILED", message: "Controller rejected goal" });
  assertStrictEquals(new ToolExecutionStatus({ phase: "failed", error }).error, error);
  assertStrictEquals(new ToolExecutionStatus({ phase: "unknown", error }).error, error);
});

Deno.test("terminal phases map to their required result statuses", () => {
  assertEquals({ ...TERMINAL_RESULT_STATUS }, {
    completed: "succeeded",
    failed: "failed",
    cancelled: "cancelled",
    stopped: "stopped",
    unknown: "unknown",
  });
  assert(Object.isFrozen(TERMINAL_RESULT_STATUS));
  for (const phase of ["completed", "failed", "cancelled", "stopped", "unknown"]) {
    assert(isTerminalPhase(phase), phase);
  }
  for (
    const phase of ["accepted", "running", "stopping", "succeeded", "toString", "", "__proto__"]
  ) {
    assertStrictEquals(isTerminalPhase(phase), false, phase);
  }
  const error = new ToolError({ code: "E", message: "m" });
  const phases: [ToolExecutionStatusInit, boolean][] = [
    [{ phase: "accepted" }, false],
    [{ phase: "running" }, false],
    [{ phase: "stopping" }, false],
    [{ phase: "completed" }, true],
    [{ phase: "failed", error }, true],
    [{ phase: "cancelled" }, true],
    [{ phase: "stopped" }, true],
    [{ phase: "unknown", error }, true],
  ];
  for (const [init, terminal] of phases) {
    const status = new ToolExecutionStatus(init);
    assertStrictEquals(status.terminal, terminal, init.phase);
    assertStrictEquals(Object.hasOwn(status, "terminal"), false);
  }
});

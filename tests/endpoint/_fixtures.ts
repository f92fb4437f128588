// Helpers of the endpoint model suites (not a test file itself): exact throw checks, the
// reference's execution key and context.
import { assertStrictEquals, assertThrows } from "@std/assert";
import { ToolContext, type ToolContextInit, ToolExecutionKey } from "../../src/endpoint/models.ts";

export type ErrorClass = typeof RangeError | typeof TypeError;

/** Asserts that `fn` throws exactly an `errorClass` with exactly `message`. */
export function assertThrowsExactly(
  fn: () => unknown,
  errorClass: ErrorClass,
  message: string,
): void {
  const error = assertThrows(fn, errorClass);
  assertStrictEquals(error.constructor, errorClass);
  assertStrictEquals(error.message, message);
}

/** Removes `readonly` so a test can attempt an assignment. */
export function mutable<T>(value: T): { -readonly [K in keyof T]: T[K] } {
  return value;
}

/** The key of attempt `attemptId` of invocation-1. */
export function key(attemptId = "attempt-1"): ToolExecutionKey {
  return new ToolExecutionKey({ invocationId: "invocation-1", attemptId });
}

/** The reference's helper context (tests/test_models.py). */
export function context(metadata?: Record<string, unknown>): ToolContext {
  return new ToolContext({
    executionKey: key(),
    toolId: "forge.tool.detect_objects",
    implementationId: "yolo",
    endpointId: "vision.yolo",
    operation: "detect",
    callerId: "test-client",
    deadlineMs: 1_800_000_000_000,
    metadata: metadata ?? {},
  });
}

/** The required fields of a ToolContext init. */
export const contextValues = (): ToolContextInit => ({
  executionKey: key(),
  toolId: "forge.tool.test",
  implementationId: "fake",
  endpointId: "fake.endpoint",
  operation: "run",
});

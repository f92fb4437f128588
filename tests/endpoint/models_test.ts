// Port of the reference's tests/test_models.py (tests 4, 5, 6, 8 and 11 of 16), plus exact
// messages, check order, JSON copy rules (prototype safety, deep freezing, Map and bigint input,
// depth), string rules (blank set, lone surrogates), frozen instances and stable shapes. The
// execution key and context: execution_test.ts; results, events and statuses: outcomes_test.ts.
// Stays whole (over 400 lines): its table-driven tests check every model's rules in one place.
import {
  assert,
  assertEquals,
  assertNotEquals,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import { MAX } from "../_helpers.ts";
import {
  EndpointRegistryResponse,
  type EndpointRegistryResponseInit,
  EndpointStatus,
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
  validateExecutionResult,
} from "../../src/endpoint/models.ts";
import { assertThrowsExactly, context, contextValues, type ErrorClass, key } from "./_fixtures.ts";

// ---------------------------------------------------------------------------------------------
// The reference's tests

Deno.test("request and result mapping fields are defensive copies", () => {
  const args: { limits: { maximum: number } } = { limits: { maximum: 1.5 } };
  const outputs: { objects: string[] } = { objects: [] };
  const request = new ToolRequest({ arguments: args });
  const result = new ToolResult({ status: "succeeded", outputs });
  args.limits.maximum = 2.5;
  outputs.objects = ["changed"];

  assertEquals(request.arguments.limits, { maximum: 1.5 });
  assertEquals(result.outputs.objects, []);
});

Deno.test("models support standard json serialization", () => {
  const ctx = context();

  const serialized = JSON.parse(JSON.stringify(ctx));

  assertEquals(serialized.executionKey, { invocationId: "invocation-1", attemptId: "attempt-1" });
  assertEquals(JSON.parse(JSON.stringify(serialized)), serialized);
  assertEquals(serialized, {
    executionKey: { invocationId: "invocation-1", attemptId: "attempt-1" },
    toolId: "forge.tool.detect_objects",
    implementationId: "yolo",
    endpointId: "vision.yolo",
    operation: "detect",
    callerId: "test-client",
    deadlineMs: 1_800_000_000_000,
    metadata: {},
  });
});

Deno.test("mapping values are strict bounded json", () => {
  assertThrows(
    () => new ToolRequest({ arguments: new Map<unknown, unknown>([[1, "invalid"]]) }),
    TypeError,
    "keys must be strings",
  );
  assertThrows(
    () => new ToolResult({ status: "succeeded", outputs: { value: Number.NaN } }),
    RangeError,
    "finite",
  );
  assertThrows(
    () => new ToolRequest({ arguments: { value: MAX + 1 } }),
    RangeError,
    "interoperable range",
  );
  assertThrows(
    () => new ToolRequest({ arguments: { "\ud800": "invalid" } }),
    RangeError,
    "Unicode scalar",
  );
  assertThrows(
    () => new ToolEvent({ type: "progress", data: { value: new (class Opaque {})() } }),
    TypeError,
    "unsupported JSON value",
  );
});

Deno.test("endpoint registry response invariants", () => {
  const error = new ToolError({ code: "REGISTRY_REJECTED", message: "stale endpoint instance" });

  const accepted = new EndpointRegistryResponse({
    operation: "register",
    status: "accepted",
    registryRevision: 0,
    leaseTtlMs: 30_000,
  });
  assertStrictEquals(accepted.leaseTtlMs, 30_000);
  assertThrows(
    () =>
      new EndpointRegistryResponse({
        operation: "register",
        status: "accepted",
        registryRevision: 0,
      }),
    RangeError,
    "must contain lease_ttl_ms",
  );

  assertStrictEquals(
    new EndpointRegistryResponse({
      operation: "unregister",
      status: "accepted",
      registryRevision: MAX,
    }).leaseTtlMs,
    undefined,
  );
  const unregisterWithLease = assertThrows(
    () =>
      new EndpointRegistryResponse({
        operation: "unregister",
        status: "accepted",
        registryRevision: 1,
        leaseTtlMs: 1,
      }),
    RangeError,
  );
  assert(/unregister.*must not contain/.test(unregisterWithLease.message));

  const rejected = new EndpointRegistryResponse({
    operation: "unregister",
    status: "rejected",
    registryRevision: 2,
    error,
  });
  assertStrictEquals(rejected.error, error);
  assertThrows(
    () =>
      new EndpointRegistryResponse({
        operation: "unregister",
        status: "rejected",
        registryRevision: 2,
      }),
    RangeError,
    "must contain an error",
  );
  assertThrows(
    () =>
      new EndpointRegistryResponse({
        operation: "unregister",
        status: "rejected",
        registryRevision: 2,
        leaseTtlMs: 1,
        error,
      }),
    RangeError,
    "must not contain lease_ttl_ms",
  );
  assertThrows(
    () =>
      new EndpointRegistryResponse({
        operation: "heartbeat" as never,
        status: "accepted",
        registryRevision: 1,
      }),
    RangeError,
    "unsupported endpoint registry operation",
  );

  for (const revision of [-1, MAX + 1, true]) {
    assertThrows(
      () =>
        new EndpointRegistryResponse({
          operation: "unregister",
          status: "accepted",
          registryRevision: revision as number,
        }),
      RangeError,
      "registry_revision",
    );
  }
  for (const leaseTtlMs of [0, MAX + 1, true]) {
    assertThrows(
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 1,
          leaseTtlMs: leaseTtlMs as number,
        }),
      RangeError,
      "lease_ttl_ms",
    );
  }
  // (The reference also checks the doc string for "duration": not visible at runtime.)
});

Deno.test("key identifiers and active invocations are validated", () => {
  assertThrows(
    () => new ToolContext({ ...contextValues(), executionKey: "invocation-1" as never }),
    TypeError,
    "execution_key",
  );
  assertEquals(new ToolAccepted({ details: { queue: "default" } }).details, { queue: "default" });
  for (const activeInvocations of [-1, MAX + 1]) {
    assertThrows(
      () => new EndpointStatus({ endpointId: "robot.arm", state: "ready", activeInvocations }),
      RangeError,
      "active_invocations",
    );
  }
});

// ---------------------------------------------------------------------------------------------
// Beyond the reference

const ERROR = new ToolError({ code: "E", message: "m" });

Deno.test("every validation rule has the reference message, the TypeScript field named first", async (t) => {
  const cases: [string, () => unknown, ErrorClass, string][] = [
    // ToolExecutionKey
    [
      "blank invocation_id",
      () => new ToolExecutionKey({ invocationId: " ", attemptId: "a" }),
      RangeError,
      "invocationId (invocation_id) must be a non-empty string",
    ],
    [
      "non-string attempt_id",
      () => new ToolExecutionKey({ invocationId: "i", attemptId: 1 as never }),
      RangeError,
      "attemptId (attempt_id) must be a non-empty string",
    ],
    [
      "lone surrogate attempt_id",
      () => new ToolExecutionKey({ invocationId: "i", attemptId: "a\udc00" }),
      RangeError,
      "attemptId (attempt_id) must contain valid Unicode scalar values",
    ],
    // ToolContext
    [
      "execution_key type",
      () => new ToolContext({ ...contextValues(), executionKey: { ...key() } as never }),
      TypeError,
      "executionKey (execution_key) must be a ToolExecutionKey",
    ],
    [
      "tool_id",
      () => new ToolContext({ ...contextValues(), toolId: "" }),
      RangeError,
      "toolId (tool_id) must be a non-empty string",
    ],
    [
      "implementation_id",
      () => new ToolContext({ ...contextValues(), implementationId: "\n" }),
      RangeError,
      "implementationId (implementation_id) must be a non-empty string",
    ],
    [
      "endpoint_id",
      () => new ToolContext({ ...contextValues(), endpointId: undefined as never }),
      RangeError,
      "endpointId (endpoint_id) must be a non-empty string",
    ],
    [
      "operation",
      () => new ToolContext({ ...contextValues(), operation: "\ud800" }),
      RangeError,
      "operation must contain valid Unicode scalar values",
    ],
    [
      "caller_id",
      () => new ToolContext({ ...contextValues(), callerId: "" }),
      RangeError,
      "callerId (caller_id) must be a non-empty string",
    ],
    [
      "deadline_ms negative",
      () => new ToolContext({ ...contextValues(), deadlineMs: -1 }),
      RangeError,
      "deadlineMs (deadline_ms) must be a non-negative Unix epoch millisecond not greater than 9007199254740991",
    ],
    [
      "metadata not a mapping",
      () => new ToolContext({ ...contextValues(), metadata: [] }),
      TypeError,
      "metadata must be a mapping",
    ],
    // ToolRequest
    [
      "arguments missing",
      () => new ToolRequest({} as never),
      TypeError,
      "arguments must be a mapping",
    ],
    [
      "arguments an array",
      () => new ToolRequest({ arguments: [1] }),
      TypeError,
      "arguments must be a mapping",
    ],
    [
      "arguments a class instance",
      () => new ToolRequest({ arguments: new (class Args {})() }),
      TypeError,
      "arguments must be a mapping",
    ],
    // ToolError
    [
      "code",
      () => new ToolError({ code: "", message: "m" }),
      RangeError,
      "code must be a non-empty string",
    ],
    [
      "message",
      () => new ToolError({ code: "c", message: "\u2028" }),
      RangeError,
      "message must be a non-empty string",
    ],
    [
      "retryable",
      () => new ToolError({ code: "c", message: "m", retryable: "true" as never }),
      TypeError,
      "retryable must be a bool",
    ],
    [
      "details not a mapping",
      () => new ToolError({ code: "c", message: "m", details: "x" as never }),
      TypeError,
      "details must be a mapping",
    ],
    // ToolResult
    [
      "result status",
      () => new ToolResult({ status: "bogus" } as never),
      RangeError,
      "unsupported tool result status: 'bogus'",
    ],
    [
      "result status non-string",
      () => new ToolResult({ status: 3 } as never),
      RangeError,
      "unsupported tool result status: 3",
    ],
    [
      "failed result without error",
      () => new ToolResult({ status: "failed" } as never),
      RangeError,
      "a failed tool result must contain an error",
    ],
    [
      "unknown result without error",
      () => new ToolResult({ status: "unknown" } as never),
      RangeError,
      "a unknown tool result must contain an error",
    ],
    [
      "succeeded result with error",
      () => new ToolResult({ status: "succeeded", error: ERROR } as never),
      RangeError,
      "a succeeded tool result must not contain an error",
    ],
    [
      "cancelled result with error",
      () => new ToolResult({ status: "cancelled", error: ERROR } as never),
      RangeError,
      "a cancelled tool result must not contain an error",
    ],
    [
      "result error type",
      () => new ToolResult({ status: "failed", error: { code: "E", message: "m" } } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "outputs not a mapping",
      () => new ToolResult({ status: "succeeded", outputs: 1 as never }),
      TypeError,
      "outputs must be a mapping",
    ],
    // ToolResultResponse
    [
      "result response status",
      () => new ToolResultResponse({ status: "ready" } as never),
      RangeError,
      "unsupported result response status: 'ready'",
    ],
    [
      "available without result",
      () => new ToolResultResponse({ status: "available" } as never),
      RangeError,
      "an available result response must contain a result",
    ],
    [
      "not_found with result",
      () =>
        new ToolResultResponse({
          status: "not_found",
          result: new ToolResult({ status: "succeeded" }),
        } as never),
      RangeError,
      "only an available result response may contain a result",
    ],
    [
      "result type",
      () =>
        new ToolResultResponse({ status: "available", result: { status: "succeeded" } } as never),
      TypeError,
      "result must be a ToolResult or undefined",
    ],
    // ToolAccepted
    [
      "accepted details",
      () => new ToolAccepted({ details: new Set() }),
      TypeError,
      "details must be a mapping",
    ],
    // ToolControlResponse
    [
      "control command",
      () => new ToolControlResponse({ command: "pause", status: "accepted" } as never),
      RangeError,
      "unsupported tool control command: 'pause'",
    ],
    [
      "control status",
      () => new ToolControlResponse({ command: "stop", status: "done" } as never),
      RangeError,
      "unsupported tool control status: 'done'",
    ],
    [
      "rejected without error",
      () => new ToolControlResponse({ command: "cancel", status: "rejected" } as never),
      RangeError,
      "a rejected control response must contain an error",
    ],
    [
      "terminal with error",
      () =>
        new ToolControlResponse({ command: "cancel", status: "terminal", error: ERROR } as never),
      RangeError,
      "only a rejected control response may contain an error",
    ],
    [
      "control error type",
      () =>
        new ToolControlResponse({ command: "cancel", status: "rejected", error: "no" } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "control details",
      () => new ToolControlResponse({ command: "cancel", status: "accepted", details: [] }),
      TypeError,
      "details must be a mapping",
    ],
    // ToolEvent
    [
      "event type",
      () => new ToolEvent({ type: "log" as never }),
      RangeError,
      "unsupported tool event type: 'log'",
    ],
    [
      "event data",
      () => new ToolEvent({ type: "progress", data: null as never }),
      TypeError,
      "data must be a mapping",
    ],
    // EndpointStatus
    [
      "status endpoint_id",
      () => new EndpointStatus({ endpointId: "\u00a0", state: "ready" }),
      RangeError,
      "endpointId (endpoint_id) must be a non-empty string",
    ],
    [
      "endpoint state",
      () => new EndpointStatus({ endpointId: "e", state: "offline" as never }),
      RangeError,
      "unsupported endpoint state: 'offline'",
    ],
    [
      "active_invocations",
      () => new EndpointStatus({ endpointId: "e", state: "busy", activeInvocations: 0.5 }),
      RangeError,
      "activeInvocations (active_invocations) must be in [0, 9007199254740991]",
    ],
    [
      "endpoint status details",
      () => new EndpointStatus({ endpointId: "e", state: "busy", details: 1 as never }),
      TypeError,
      "details must be a mapping",
    ],
    // ToolExecutionStatus
    [
      "execution phase",
      () => new ToolExecutionStatus({ phase: "done" } as never),
      RangeError,
      "unsupported execution phase: 'done'",
    ],
    [
      "failed phase without error",
      () => new ToolExecutionStatus({ phase: "failed" } as never),
      RangeError,
      "a failed execution status must contain an error",
    ],
    [
      "unknown phase without error",
      () => new ToolExecutionStatus({ phase: "unknown" } as never),
      RangeError,
      "a unknown execution status must contain an error",
    ],
    [
      "running phase with error",
      () => new ToolExecutionStatus({ phase: "running", error: ERROR } as never),
      RangeError,
      "only a failed or unknown execution status may contain an error",
    ],
    [
      "execution status error type",
      () => new ToolExecutionStatus({ phase: "unknown", error: new Error("x") } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "execution status details",
      () => new ToolExecutionStatus({ phase: "running", details: [] }),
      TypeError,
      "details must be a mapping",
    ],
    // EndpointRegistryResponse
    [
      "registry operation",
      () =>
        new EndpointRegistryResponse({
          operation: "heartbeat",
          status: "accepted",
          registryRevision: 0,
        } as never),
      RangeError,
      "unsupported endpoint registry operation: 'heartbeat'",
    ],
    [
      "registry status",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "ok",
          registryRevision: 0,
        } as never),
      RangeError,
      "unsupported endpoint registry response status: 'ok'",
    ],
    [
      "registry_revision",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: -1,
          leaseTtlMs: 1,
        }),
      RangeError,
      "registryRevision (registry_revision) must be in [0, 9007199254740991]",
    ],
    [
      "registry_revision missing",
      () => new EndpointRegistryResponse({ operation: "unregister", status: "accepted" } as never),
      RangeError,
      "registryRevision (registry_revision) must be in [0, 9007199254740991]",
    ],
    [
      "lease_ttl_ms",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 0,
          leaseTtlMs: 0,
        }),
      RangeError,
      "leaseTtlMs (lease_ttl_ms) must be in [1, 9007199254740991] when provided",
    ],
    [
      "registry error type",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "rejected",
          registryRevision: 0,
          error: "stale" as never,
        }),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "rejected with lease",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "rejected",
          registryRevision: 0,
          leaseTtlMs: 5,
          error: ERROR,
        }),
      RangeError,
      "a rejected registry response must not contain lease_ttl_ms",
    ],
    [
      "rejected without error",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "rejected",
          registryRevision: 0,
        }),
      RangeError,
      "a rejected registry response must contain an error",
    ],
    [
      "accepted with error",
      () =>
        new EndpointRegistryResponse({
          operation: "unregister",
          status: "accepted",
          registryRevision: 0,
          error: ERROR,
        }),
      RangeError,
      "an accepted registry response must not contain an error",
    ],
    [
      "accepted register without lease",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 0,
        }),
      RangeError,
      "an accepted register response must contain lease_ttl_ms",
    ],
    [
      "accepted unregister with lease",
      () =>
        new EndpointRegistryResponse({
          operation: "unregister",
          status: "accepted",
          registryRevision: 0,
          leaseTtlMs: 1,
        }),
      RangeError,
      "an accepted unregister response must not contain lease_ttl_ms",
    ],
    // validateExecutionResult
    [
      "validate: status type",
      () =>
        validateExecutionResult(
          { phase: "completed" } as never,
          new ToolResult({ status: "succeeded" }),
        ),
      TypeError,
      "status must be a ToolExecutionStatus",
    ],
    [
      "validate: result type",
      () =>
        validateExecutionResult(new ToolExecutionStatus({ phase: "completed" }), {
          status: "succeeded",
        } as never),
      TypeError,
      "result must be a ToolResult",
    ],
    [
      "validate: not terminal",
      () =>
        validateExecutionResult(
          new ToolExecutionStatus({ phase: "running" }),
          new ToolResult({ status: "succeeded" }),
        ),
      RangeError,
      "execution phase 'running' is not terminal",
    ],
    [
      "validate: mismatch",
      () =>
        validateExecutionResult(
          new ToolExecutionStatus({ phase: "completed" }),
          new ToolResult({ status: "stopped" }),
        ),
      RangeError,
      "execution phase 'completed' requires result status 'succeeded'",
    ],
    [
      "validate: failed needs failed",
      () =>
        validateExecutionResult(
          new ToolExecutionStatus({ phase: "failed", error: ERROR }),
          new ToolResult({ status: "unknown", error: ERROR }),
        ),
      RangeError,
      "execution phase 'failed' requires result status 'failed'",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
});

Deno.test("validation runs in the reference order when two rules fail", async (t) => {
  const cases: [string, () => unknown, ErrorClass, string][] = [
    [
      "key: invocation_id before attempt_id",
      () => new ToolExecutionKey({ invocationId: "", attemptId: "" }),
      RangeError,
      "invocationId (invocation_id) must be a non-empty string",
    ],
    [
      "key: blank before lone surrogate",
      () => new ToolExecutionKey({ invocationId: "i", attemptId: 5 as never }),
      RangeError,
      "attemptId (attempt_id) must be a non-empty string",
    ],
    [
      "context: execution_key before tool_id",
      () => new ToolContext({ ...contextValues(), executionKey: null as never, toolId: "" }),
      TypeError,
      "executionKey (execution_key) must be a ToolExecutionKey",
    ],
    [
      "context: tool_id before implementation_id",
      () => new ToolContext({ ...contextValues(), toolId: "", implementationId: "" }),
      RangeError,
      "toolId (tool_id) must be a non-empty string",
    ],
    [
      "context: endpoint_id before operation",
      () => new ToolContext({ ...contextValues(), endpointId: "", operation: "" }),
      RangeError,
      "endpointId (endpoint_id) must be a non-empty string",
    ],
    [
      "context: operation before caller_id",
      () => new ToolContext({ ...contextValues(), operation: "", callerId: "" }),
      RangeError,
      "operation must be a non-empty string",
    ],
    [
      "context: caller_id before deadline_ms",
      () => new ToolContext({ ...contextValues(), callerId: " ", deadlineMs: -1 }),
      RangeError,
      "callerId (caller_id) must be a non-empty string",
    ],
    [
      "context: deadline_ms before metadata",
      () => new ToolContext({ ...contextValues(), deadlineMs: 1.5, metadata: 1 as never }),
      RangeError,
      "deadlineMs (deadline_ms) must be a non-negative Unix epoch millisecond not greater than 9007199254740991",
    ],
    [
      "error: code before message",
      () => new ToolError({ code: "", message: "" }),
      RangeError,
      "code must be a non-empty string",
    ],
    [
      "error: message before retryable",
      () => new ToolError({ code: "c", message: "", retryable: 1 as never }),
      RangeError,
      "message must be a non-empty string",
    ],
    [
      "error: retryable before details",
      () => new ToolError({ code: "c", message: "m", retryable: 1 as never, details: 1 as never }),
      TypeError,
      "retryable must be a bool",
    ],
    [
      "result: status before error",
      () => new ToolResult({ status: "bogus", error: "x" } as never),
      RangeError,
      "unsupported tool result status: 'bogus'",
    ],
    [
      "result: presence before error type (non-error status)",
      () => new ToolResult({ status: "succeeded", error: "x" } as never),
      RangeError,
      "a succeeded tool result must not contain an error",
    ],
    [
      "result: error type before outputs",
      () => new ToolResult({ status: "failed", error: "x", outputs: 1 } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "result: presence before outputs",
      () => new ToolResult({ status: "unknown", outputs: 1 } as never),
      RangeError,
      "a unknown tool result must contain an error",
    ],
    [
      "result response: status before result",
      () => new ToolResultResponse({ status: "done", result: 1 } as never),
      RangeError,
      "unsupported result response status: 'done'",
    ],
    [
      "result response: presence before result type",
      () => new ToolResultResponse({ status: "pending", result: 1 } as never),
      RangeError,
      "only an available result response may contain a result",
    ],
    [
      "control: command before status",
      () => new ToolControlResponse({ command: "pause", status: "done" } as never),
      RangeError,
      "unsupported tool control command: 'pause'",
    ],
    [
      "control: status before error",
      () => new ToolControlResponse({ command: "stop", status: "done", error: 1 } as never),
      RangeError,
      "unsupported tool control status: 'done'",
    ],
    [
      "control: presence before error type",
      () => new ToolControlResponse({ command: "stop", status: "accepted", error: 1 } as never),
      RangeError,
      "only a rejected control response may contain an error",
    ],
    [
      "control: error type before details",
      () =>
        new ToolControlResponse({
          command: "stop",
          status: "rejected",
          error: 1,
          details: 1,
        } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "event: type before data",
      () => new ToolEvent({ type: "log", data: 1 } as never),
      RangeError,
      "unsupported tool event type: 'log'",
    ],
    [
      "endpoint status: endpoint_id before state",
      () => new EndpointStatus({ endpointId: "", state: "x" } as never),
      RangeError,
      "endpointId (endpoint_id) must be a non-empty string",
    ],
    [
      "endpoint status: state before active_invocations",
      () => new EndpointStatus({ endpointId: "e", state: "x", activeInvocations: -1 } as never),
      RangeError,
      "unsupported endpoint state: 'x'",
    ],
    [
      "endpoint status: active_invocations before details",
      () =>
        new EndpointStatus({
          endpointId: "e",
          state: "ready",
          activeInvocations: -1,
          details: 1 as never,
        }),
      RangeError,
      "activeInvocations (active_invocations) must be in [0, 9007199254740991]",
    ],
    [
      "execution status: phase before error",
      () => new ToolExecutionStatus({ phase: "x", error: 1 } as never),
      RangeError,
      "unsupported execution phase: 'x'",
    ],
    [
      "execution status: presence before error type",
      () => new ToolExecutionStatus({ phase: "running", error: 1 } as never),
      RangeError,
      "only a failed or unknown execution status may contain an error",
    ],
    [
      "execution status: error type before details",
      () => new ToolExecutionStatus({ phase: "failed", error: 1, details: 1 } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "registry: operation before status",
      () =>
        new EndpointRegistryResponse({
          operation: "heartbeat",
          status: "maybe",
          registryRevision: -1,
        } as never),
      RangeError,
      "unsupported endpoint registry operation: 'heartbeat'",
    ],
    [
      "registry: status before revision",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "maybe",
          registryRevision: -1,
        } as never),
      RangeError,
      "unsupported endpoint registry response status: 'maybe'",
    ],
    [
      "registry: revision before lease",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: -1,
          leaseTtlMs: 0,
        }),
      RangeError,
      "registryRevision (registry_revision) must be in [0, 9007199254740991]",
    ],
    [
      "registry: lease range before error type",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "rejected",
          registryRevision: 0,
          leaseTtlMs: 0,
          error: 1 as never,
        }),
      RangeError,
      "leaseTtlMs (lease_ttl_ms) must be in [1, 9007199254740991] when provided",
    ],
    [
      "registry: error type before the status rules",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 0,
          error: 1 as never,
        }),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "registry: rejected lease before missing error",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "rejected",
          registryRevision: 0,
          leaseTtlMs: 1,
        }),
      RangeError,
      "a rejected registry response must not contain lease_ttl_ms",
    ],
    [
      "registry: accepted error before missing lease",
      () =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 0,
          error: ERROR,
        }),
      RangeError,
      "an accepted registry response must not contain an error",
    ],
    [
      "validate: status type before result type",
      () => validateExecutionResult(1 as never, 2 as never),
      TypeError,
      "status must be a ToolExecutionStatus",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
});

Deno.test("a missing init object is a TypeError", async (t) => {
  const cases: [string, () => unknown][] = [
    ["ToolExecutionKey", () => new ToolExecutionKey(undefined as never)],
    ["ToolContext", () => new ToolContext(null as never)],
    ["ToolRequest", () => new ToolRequest(undefined as never)],
    ["ToolError", () => new ToolError("E" as never)],
    ["ToolResult", () => new ToolResult(undefined as never)],
    ["ToolResultResponse", () => new ToolResultResponse(undefined as never)],
    ["ToolAccepted", () => new ToolAccepted(null as never)],
    ["ToolControlResponse", () => new ToolControlResponse(undefined as never)],
    ["ToolEvent", () => new ToolEvent("progress" as never)],
    ["EndpointStatus", () => new EndpointStatus(undefined as never)],
    ["ToolExecutionStatus", () => new ToolExecutionStatus(undefined as never)],
    ["EndpointRegistryResponse", () => new EndpointRegistryResponse(undefined as never)],
  ];
  for (const [name, fn] of cases) {
    await t.step(name, () => assertThrowsExactly(fn, TypeError, `${name} requires an init object`));
  }
  // ToolAccepted alone has only optional fields: its init may be omitted.
  assertEquals(new ToolAccepted().details, {});
  assertEquals(new ToolAccepted(), new ToolAccepted({}));
});

Deno.test("null is a value, not an absent optional field", async (t) => {
  const cases: [string, () => unknown, ErrorClass, string][] = [
    [
      "caller_id null",
      () => new ToolContext({ ...contextValues(), callerId: null as never }),
      RangeError,
      "callerId (caller_id) must be a non-empty string",
    ],
    [
      "deadline_ms null",
      () => new ToolContext({ ...contextValues(), deadlineMs: null as never }),
      RangeError,
      "deadlineMs (deadline_ms) must be a non-negative Unix epoch millisecond not greater than 9007199254740991",
    ],
    [
      "metadata null",
      () => new ToolContext({ ...contextValues(), metadata: null as never }),
      TypeError,
      "metadata must be a mapping",
    ],
    [
      "result error null",
      () => new ToolResult({ status: "succeeded", error: null } as never),
      RangeError,
      "a succeeded tool result must not contain an error",
    ],
    [
      "failed result error null",
      () => new ToolResult({ status: "failed", error: null } as never),
      TypeError,
      "error must be a ToolError or undefined",
    ],
    [
      "retryable null",
      () => new ToolError({ code: "c", message: "m", retryable: null as never }),
      TypeError,
      "retryable must be a bool",
    ],
    [
      "lease_ttl_ms null",
      () =>
        new EndpointRegistryResponse({
          operation: "unregister",
          status: "accepted",
          registryRevision: 0,
          leaseTtlMs: null as never,
        }),
      RangeError,
      "leaseTtlMs (lease_ttl_ms) must be in [1, 9007199254740991] when provided",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
});

Deno.test("integer fields accept only integral numbers in range", async (t) => {
  const notIntegers: unknown[] = [1.5, Number.NaN, Infinity, -Infinity, "1", 1n, true, false, {}];
  const rules: [string, (value: unknown) => unknown, string][] = [
    [
      "deadline_ms",
      (value) => new ToolContext({ ...contextValues(), deadlineMs: value as number }),
      "deadlineMs (deadline_ms) must be a non-negative Unix epoch millisecond not greater than 9007199254740991",
    ],
    [
      "active_invocations",
      (value) =>
        new EndpointStatus({
          endpointId: "e",
          state: "ready",
          activeInvocations: value as number,
        }),
      "activeInvocations (active_invocations) must be in [0, 9007199254740991]",
    ],
    [
      "registry_revision",
      (value) =>
        new EndpointRegistryResponse({
          operation: "unregister",
          status: "accepted",
          registryRevision: value as number,
        }),
      "registryRevision (registry_revision) must be in [0, 9007199254740991]",
    ],
    [
      "lease_ttl_ms",
      (value) =>
        new EndpointRegistryResponse({
          operation: "register",
          status: "accepted",
          registryRevision: 0,
          leaseTtlMs: value as number,
        }),
      "leaseTtlMs (lease_ttl_ms) must be in [1, 9007199254740991] when provided",
    ],
  ];
  for (const [field, build, message] of rules) {
    await t.step(field, () => {
      for (const value of [...notIntegers, -1, MAX + 1, -MAX]) {
        assertThrowsExactly(() => build(value), RangeError, message);
      }
    });
  }
  // The bounds themselves are accepted; -0 is stored as 0.
  assertStrictEquals(new ToolContext({ ...contextValues(), deadlineMs: 0 }).deadlineMs, 0);
  assert(Object.is(new ToolContext({ ...contextValues(), deadlineMs: -0 }).deadlineMs, 0));
  const idle = new EndpointStatus({ endpointId: "e", state: "ready", activeInvocations: -0 });
  assert(Object.is(idle.activeInvocations, 0));
  assertStrictEquals(
    new EndpointStatus({ endpointId: "e", state: "busy", activeInvocations: MAX })
      .activeInvocations,
    MAX,
  );
  const bounds = new EndpointRegistryResponse({
    operation: "register",
    status: "accepted",
    registryRevision: MAX,
    leaseTtlMs: 1,
  });
  assertEquals([bounds.registryRevision, bounds.leaseTtlMs], [MAX, 1]);
  assertStrictEquals(
    new EndpointRegistryResponse({
      operation: "register",
      status: "accepted",
      registryRevision: 0,
      leaseTtlMs: MAX,
    }).leaseTtlMs,
    MAX,
  );
});

Deno.test("unsupported values are named in the Python repr style", async (t) => {
  const cases: [unknown, string][] = [
    ["bogus", "unsupported tool event type: 'bogus'"],
    ["", "unsupported tool event type: ''"],
    ["Progress", "unsupported tool event type: 'Progress'"],
    [1, "unsupported tool event type: 1"],
    [undefined, "unsupported tool event type: undefined"],
    [null, "unsupported tool event type: null"],
    [true, "unsupported tool event type: true"],
    [Symbol("s"), "unsupported tool event type: Symbol(s)"],
    [Object.create(null), "unsupported tool event type: [object Object]"],
  ];
  for (const [type, message] of cases) {
    await t.step(message, () => {
      assertThrowsExactly(() => new ToolEvent({ type: type as never }), RangeError, message);
    });
  }
});

Deno.test("a __proto__ key stays an own data property", () => {
  const args = JSON.parse('{"__proto__": {"x": 1}, "plain": true}');
  const request = new ToolRequest({ arguments: args });

  assertStrictEquals(Object.getPrototypeOf(request.arguments), Object.prototype);
  assert(Object.hasOwn(request.arguments, "__proto__"));
  assertEquals(Object.keys(request.arguments), ["__proto__", "plain"]);
  assertEquals(request.arguments["__proto__"], { x: 1 });
  assertStrictEquals((request.arguments as Record<string, unknown>).x, undefined);
  assertStrictEquals(({} as Record<string, unknown>).x, undefined); // nothing polluted

  const nested = new ToolEvent({
    type: "progress",
    data: JSON.parse('{"inner": {"__proto__": [1, 2]}}'),
  });
  const inner = nested.data.inner as Record<string, unknown>;
  assertStrictEquals(Object.getPrototypeOf(inner), Object.prototype);
  assertEquals(inner["__proto__"], [1, 2]);

  const fromMap = new ToolAccepted({ details: new Map([["__proto__", "value"]]) });
  assertStrictEquals(Object.getPrototypeOf(fromMap.details), Object.prototype);
  assertStrictEquals(fromMap.details["__proto__"], "value");
});

Deno.test("copied JSON is deeply frozen", () => {
  const request = new ToolRequest({
    arguments: { a: { b: [1, { c: 2 }, [3]] }, list: [] },
  });
  const a = request.arguments.a as { b: [number, { c: number }, number[]] };
  for (const value of [request.arguments, a, a.b, a.b[1], a.b[2], request.arguments.list]) {
    assert(Object.isFrozen(value));
  }
  assertThrows(() => {
    (request.arguments as Record<string, unknown>).added = 1;
  }, TypeError);
  assertThrows(() => {
    a.b[1].c = 3;
  }, TypeError);
  assertThrows(() => a.b[2].push(4), TypeError);
  assertThrows(() => (request.arguments.list as unknown[]).push(1), TypeError);
  assertEquals(request.arguments, { a: { b: [1, { c: 2 }, [3]] }, list: [] });

  // Defaulted fields are frozen empty objects too.
  for (
    const value of [
      new ToolAccepted().details,
      new ToolResult({ status: "succeeded" }).outputs,
      new ToolEvent({ type: "heartbeat" }).data,
      context().metadata,
      new ToolError({ code: "c", message: "m" }).details,
    ]
  ) {
    assertEquals(value, {});
    assert(Object.isFrozen(value));
  }
});

Deno.test("Map input is copied into plain objects and its keys must be strings", () => {
  const request = new ToolRequest({
    arguments: new Map<string, unknown>([["outer", new Map([["inner", [1, "two"]]])]]),
  });
  assertEquals(request.arguments, { outer: { inner: [1, "two"] } });
  assertStrictEquals(Object.getPrototypeOf(request.arguments.outer), Object.prototype);

  assertThrowsExactly(
    () => new ToolRequest({ arguments: new Map<unknown, unknown>([[1, "invalid"]]) }),
    TypeError,
    "arguments keys must be strings",
  );
  assertThrowsExactly(
    () =>
      new ToolEvent({
        type: "progress",
        data: { nested: new Map<unknown, unknown>([[Symbol("k"), 1]]) },
      }),
    TypeError,
    "data.nested keys must be strings",
  );
  assertThrowsExactly(
    () => new ToolRequest({ arguments: new Map([["\udbff", 1]]) }),
    RangeError,
    "arguments keys must contain valid Unicode scalar values",
  );
});

Deno.test("bigint values are accepted within the interoperable range only", () => {
  const request = new ToolRequest({
    arguments: { small: 5n, max: BigInt(MAX), min: -BigInt(MAX), zero: 0n },
  });
  assertEquals(request.arguments, { small: 5, max: MAX, min: -MAX, zero: 0 });
  assertStrictEquals(typeof request.arguments.max, "number");

  assertThrowsExactly(
    () => new ToolRequest({ arguments: { big: BigInt(MAX) + 1n } }),
    RangeError,
    "arguments.big integer exceeds interoperable range ±9007199254740991",
  );
  assertThrowsExactly(
    () => new ToolResult({ status: "succeeded", outputs: { list: [-BigInt(MAX) - 1n] } }),
    RangeError,
    "outputs.list[0] integer exceeds interoperable range ±9007199254740991",
  );
});

Deno.test("JSON copy rules report the value's path", async (t) => {
  const nest = (levels: number): unknown => {
    let value: unknown = 1;
    for (let i = 0; i < levels; i++) value = { a: value };
    return value;
  };
  await t.step("depth 64 is accepted, 65 is not", () => {
    // The mapping itself is depth 0: wrapping 64 times puts the innermost value at depth 64.
    new ToolRequest({ arguments: nest(64) as object });
    assertThrowsExactly(
      () => new ToolRequest({ arguments: nest(65) as object }),
      RangeError,
      `arguments${".a".repeat(65)} JSON nesting exceeds 64`,
    );
  });
  const cases: [string, () => unknown, ErrorClass, string][] = [
    [
      "integer beyond 2^53 - 1",
      () => new ToolRequest({ arguments: { list: [0, -(MAX + 1)] } }),
      RangeError,
      "arguments.list[1] integer exceeds interoperable range ±9007199254740991",
    ],
    [
      "NaN",
      () => new ToolResult({ status: "succeeded", outputs: { value: Number.NaN } }),
      RangeError,
      "outputs.value floating-point values must be finite",
    ],
    [
      "Infinity",
      () => new ToolEvent({ type: "progress", data: { deep: { value: -Infinity } } }),
      RangeError,
      "data.deep.value floating-point values must be finite",
    ],
    [
      "lone surrogate value",
      () => new ToolRequest({ arguments: { text: "a\ud800b" } }),
      RangeError,
      "arguments.text must contain valid Unicode scalar values",
    ],
    [
      "lone surrogate key",
      () => new ToolRequest({ arguments: { inner: { "\udc00": 1 } } }),
      RangeError,
      "arguments.inner keys must contain valid Unicode scalar values",
    ],
    [
      "class instance",
      () => new ToolEvent({ type: "progress", data: { value: new (class Opaque {})() } }),
      TypeError,
      "data.value contains unsupported JSON value: Opaque",
    ],
    [
      "undefined member",
      () => new ToolRequest({ arguments: { value: undefined } }),
      TypeError,
      "arguments.value contains unsupported JSON value: undefined",
    ],
    [
      "Date",
      () => new ToolAccepted({ details: { at: new Date(0) } }),
      TypeError,
      "details.at contains unsupported JSON value: Date",
    ],
    [
      "Set",
      () => new ToolAccepted({ details: { items: new Set([1]) } }),
      TypeError,
      "details.items contains unsupported JSON value: Set",
    ],
    [
      "function",
      () => new ToolAccepted({ details: { fn: () => 1 } }),
      TypeError,
      "details.fn contains unsupported JSON value: Function",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
  await t.step("valid values round-trip", () => {
    const value = {
      n: null,
      t: true,
      f: false,
      i: -MAX,
      x: 1.5,
      s: "方块 😀",
      a: [[], {}],
      "": "empty key",
    };
    assertEquals(new ToolRequest({ arguments: value }).arguments, value);
  });
});

Deno.test("identifiers reject lone surrogates and accept astral characters", async (t) => {
  const build = (invocationId: string) => new ToolExecutionKey({ invocationId, attemptId: "a" });
  for (const valid of ["\ud83d\ude00", "robot-\u{1F916}", "\u{10FFFF}", "\ud800\udc00"]) {
    await t.step(`accepts ${JSON.stringify(valid)}`, () => {
      assertStrictEquals(build(valid).invocationId, valid);
    });
  }
  for (const invalid of ["\ud800", "\udc00", "a\ud83d", "\ude00\ud83d", "x\udfffy"]) {
    await t.step(`rejects ${JSON.stringify(invalid)}`, () => {
      assertThrowsExactly(
        () => build(invalid),
        RangeError,
        "invocationId (invocation_id) must contain valid Unicode scalar values",
      );
    });
  }
  await t.step("JSON strings and keys with astral characters are accepted", () => {
    const args = { "\u{1F916}": "\ud83d\ude00" };
    assertEquals(new ToolRequest({ arguments: args }).arguments, args);
  });
});

Deno.test("blank identifiers use the reference's whitespace set", async (t) => {
  const blank = [
    "",
    "\t",
    "\n",
    "\v",
    "\f",
    "\r",
    " ",
    "\u0085",
    "\u00a0",
    "\u1680",
    "\u2000",
    "\u2005",
    "\u200a",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u205f",
    "\u3000",
    " \t\u00a0\u3000\n",
  ];
  for (const value of blank) {
    await t.step(`blank ${JSON.stringify(value)}`, () => {
      assertThrowsExactly(
        () => new ToolError({ code: value, message: "m" }),
        RangeError,
        "code must be a non-empty string",
      );
    });
  }
  const notBlank = ["\u200b", "\ufeff", "\u180e", "\u2060", "\u001c", "\u001f", "\u0000", " x "];
  for (const value of notBlank) {
    await t.step(`not blank ${JSON.stringify(value)}`, () => {
      assertStrictEquals(new ToolError({ code: value, message: "m" }).code, value);
    });
  }
});

Deno.test("every model is frozen with a stable shape", async (t) => {
  const error = new ToolError({ code: "E", message: "m" });
  const models: [string, object, string[]][] = [
    ["ToolExecutionKey", key(), ["invocationId", "attemptId"]],
    [
      "ToolContext",
      new ToolContext(contextValues()),
      [
        "executionKey",
        "toolId",
        "implementationId",
        "endpointId",
        "operation",
        "callerId",
        "deadlineMs",
        "metadata",
      ],
    ],
    ["ToolRequest", new ToolRequest({ arguments: {} }), ["arguments"]],
    ["ToolError", error, ["code", "message", "retryable", "details"]],
    ["ToolResult", new ToolResult({ status: "succeeded" }), ["status", "outputs", "error"]],
    ["ToolResultResponse", new ToolResultResponse({ status: "pending" }), ["status", "result"]],
    ["ToolAccepted", new ToolAccepted(), ["details"]],
    [
      "ToolControlResponse",
      new ToolControlResponse({ command: "stop", status: "terminal" }),
      ["command", "status", "error", "details"],
    ],
    ["ToolEvent", new ToolEvent({ type: "heartbeat" }), ["type", "data"]],
    [
      "EndpointStatus",
      new EndpointStatus({ endpointId: "e", state: "degraded" }),
      ["endpointId", "state", "activeInvocations", "details"],
    ],
    [
      "ToolExecutionStatus",
      new ToolExecutionStatus({ phase: "stopping" }),
      ["phase", "error", "details"],
    ],
    [
      "EndpointRegistryResponse",
      new EndpointRegistryResponse({
        operation: "unregister",
        status: "accepted",
        registryRevision: 3,
      }),
      ["operation", "status", "registryRevision", "leaseTtlMs", "error"],
    ],
  ];
  for (const [name, model, keys] of models) {
    await t.step(name, () => {
      assert(Object.isFrozen(model));
      assertEquals(Object.keys(model), keys);
      const first = keys[0];
      const before = (model as Record<string, unknown>)[first];
      assertThrows(() => {
        (model as Record<string, unknown>)[first] = "changed";
      }, TypeError);
      assertThrows(() => {
        (model as Record<string, unknown>).extra = 1;
      }, TypeError);
      assertStrictEquals((model as Record<string, unknown>)[first], before);
    });
  }
});

Deno.test("absent optional fields read as undefined and defaults are applied", () => {
  const ctx = new ToolContext(contextValues());
  assertEquals([ctx.callerId, ctx.deadlineMs, ctx.metadata], [undefined, undefined, {}]);
  const error = new ToolError({ code: "E", message: "m" });
  assertEquals([error.retryable, error.details], [false, {}]);
  assertStrictEquals(new EndpointStatus({ endpointId: "e", state: "ready" }).activeInvocations, 0);
  const rejected = new ToolControlResponse({
    command: "stop",
    status: "rejected",
    error,
    details: { why: "busy" },
  });
  assertEquals(rejected.details, { why: "busy" });
  // Two models built from equal inputs are deeply equal (value semantics).
  assertEquals(
    new ToolResult({ status: "failed", error, outputs: { a: [1] } }),
    new ToolResult({
      status: "failed",
      error: new ToolError({ code: "E", message: "m" }),
      outputs: new Map([["a", [1]]]),
    }),
  );
  assertNotEquals(
    new ToolEvent({ type: "progress", data: { fraction: 0.5 } }),
    new ToolEvent({ type: "progress", data: { fraction: 0.25 } }),
  );
});

Deno.test("registry response accepts every documented combination", () => {
  const error = new ToolError({ code: "REGISTRY_REJECTED", message: "stale endpoint instance" });
  const combos: EndpointRegistryResponseInit[] = [
    { operation: "register", status: "accepted", registryRevision: 0, leaseTtlMs: 30_000 },
    { operation: "unregister", status: "accepted", registryRevision: 1 },
    { operation: "register", status: "rejected", registryRevision: 2, error },
    { operation: "unregister", status: "rejected", registryRevision: 3, error },
  ];
  for (const init of combos) {
    const response = new EndpointRegistryResponse(init);
    assertEquals(
      { ...response },
      {
        operation: init.operation,
        status: init.status,
        registryRevision: init.registryRevision,
        leaseTtlMs: init.leaseTtlMs,
        error: init.error,
      },
    );
  }
});

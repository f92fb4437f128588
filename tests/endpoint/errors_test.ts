// Port of the reference's tests/test_exceptions.py (2 tests), plus the error classes' shapes.
import {
  assertEquals,
  assertInstanceOf,
  assertRejects,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import { ToolEndpointError, ToolProtocolError } from "../../src/endpoint/errors.ts";
import { ToolError } from "../../src/endpoint/models.ts";

Deno.test("endpoint error preserves structured failure", async () => {
  const reject = async (): Promise<never> => {
    await Promise.resolve();
    throw new ToolEndpointError(
      new ToolError({
        code: "FORGE_ENDPOINT_BUSY",
        message: "endpoint concurrency limit reached",
        retryable: true,
        details: { operation: "execute" },
      }),
    );
  };

  const error = await assertRejects(reject, ToolEndpointError);

  assertStrictEquals(error.error.code, "FORGE_ENDPOINT_BUSY");
  assertStrictEquals(error.error.retryable, true);
  assertEquals(error.error.details, { operation: "execute" });
  assertStrictEquals(error.message, "FORGE_ENDPOINT_BUSY: endpoint concurrency limit reached");
});

Deno.test("endpoint error requires tool error", () => {
  const error = assertThrows(
    () => new ToolEndpointError(new RangeError("invalid") as never),
    TypeError,
    "ToolError",
  );
  assertStrictEquals(error.message, "error must be a ToolError");
});

// ---------------------------------------------------------------------------------------------
// Beyond the reference

Deno.test("endpoint error is an Error that keeps the very ToolError it wraps", () => {
  const toolError = new ToolError({ code: "BUSY", message: "not admitted", retryable: true });
  const error = new ToolEndpointError(toolError);
  assertInstanceOf(error, Error);
  assertStrictEquals(error.name, "ToolEndpointError");
  assertStrictEquals(error.error, toolError);
  assertStrictEquals(String(error), "ToolEndpointError: BUSY: not admitted");
});

Deno.test("endpoint error rejects look-alikes of a ToolError", async (t) => {
  const lookAlike = { code: "BUSY", message: "not admitted", retryable: false, details: {} };
  const cases: [string, unknown][] = [
    ["plain object with the same fields", lookAlike],
    ["undefined", undefined],
    ["a string", "BUSY: not admitted"],
  ];
  for (const [label, value] of cases) {
    await t.step(label, () => {
      const error = assertThrows(() => new ToolEndpointError(value as never), TypeError);
      assertStrictEquals(error.message, "error must be a ToolError");
    });
  }
});

Deno.test("protocol error exposes code, message and path", () => {
  const withPath = new ToolProtocolError(
    "FORGE_PROTOCOL_INVALID_PAYLOAD",
    "JSON nesting exceeds 64",
    "payload.arguments",
  );
  assertInstanceOf(withPath, Error);
  assertStrictEquals(withPath.name, "ToolProtocolError");
  assertStrictEquals(withPath.code, "FORGE_PROTOCOL_INVALID_PAYLOAD");
  assertStrictEquals(withPath.message, "JSON nesting exceeds 64");
  assertStrictEquals(withPath.path, "payload.arguments");
  assertStrictEquals(
    String(withPath),
    "FORGE_PROTOCOL_INVALID_PAYLOAD: JSON nesting exceeds 64 (at payload.arguments)",
  );

  const withoutPath = new ToolProtocolError("FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE", "unknown");
  assertStrictEquals(withoutPath.path, undefined);
  assertStrictEquals(String(withoutPath), "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE: unknown");
});

/**
 * The JSON copy takes an object's members that need no copy (a valid string, a boolean, null, a
 * canonical value that fits the depth bound) as they are, without building their path: every
 * rule still holds for them, and a refused member is named by the same path as before.
 */
import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { canonicalHeight, copyJson, modelFaults } from "../../src/_internal/json.ts";
import { MAX_JSON_DEPTH } from "../../src/endpoint/constants.ts";

/** `leaf` nested `levels` objects deep: `{x: {x: ... {x: leaf}}}`. */
function nested(levels: number, leaf: unknown): Record<string, unknown> {
  let value: unknown = leaf;
  for (let i = 0; i < levels; i++) value = { x: value };
  return value as Record<string, unknown>;
}

function pathOf(levels: number): string {
  return "value" + ".x".repeat(levels);
}

Deno.test("json copy members: a leaf at the depth bound is kept, one below it is refused", () => {
  for (const leaf of ["s", true, null]) {
    const kept = copyJson(nested(MAX_JSON_DEPTH, leaf), "value", modelFaults);
    assertEquals(canonicalHeight(kept), MAX_JSON_DEPTH);
    const error = assertThrows(
      () => copyJson(nested(MAX_JSON_DEPTH + 1, leaf), "value", modelFaults),
      RangeError,
    );
    assertEquals(error.message, `${pathOf(MAX_JSON_DEPTH + 1)} JSON nesting exceeds 64`);
  }
});

Deno.test("json copy members: a string member with a lone surrogate is named by its path", () => {
  const error = assertThrows(
    () => copyJson({ a: "ok", b: { c: "\ud800" } }, "value", modelFaults),
    RangeError,
  );
  assertEquals(error.message, "value.b.c must contain valid Unicode scalar values");
  const key = assertThrows(
    () => copyJson({ b: { "\udc00": "x" } }, "value", modelFaults),
    RangeError,
  );
  assertEquals(key.message, "value.b keys must contain valid Unicode scalar values");
});

Deno.test("json copy members: a canonical member is reused only where it fits the bound", () => {
  const inner = copyJson(nested(10, "s"), "inner", modelFaults);
  const outer = copyJson({ a: inner, b: 1, c: false }, "value", modelFaults) as {
    a: unknown;
  };
  assertStrictEquals(outer.a, inner);
  assertEquals(canonicalHeight(outer), 11);
  // Nested so that the canonical member would end below the bound: refused at the first
  // object past it, with its path.
  const error = assertThrows(
    () => copyJson(nested(MAX_JSON_DEPTH - 9, inner), "value", modelFaults),
    RangeError,
  );
  assertEquals(error.message, `${pathOf(MAX_JSON_DEPTH + 1)} JSON nesting exceeds 64`);
  // A Map's members take the same path.
  const fromMap = copyJson(new Map([["b", "x"], ["a", null]]), "value", modelFaults);
  assertEquals(Object.keys(fromMap as object), ["a", "b"]);
  assertEquals(fromMap, { a: null, b: "x" });
});

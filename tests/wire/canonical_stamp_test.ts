/**
 * The canonical mark of a copied JSON value is a private stamp: the facts (height, whether the
 * Wire writes it differently from `JSON.stringify`) travel with the value, invisible to every
 * reflection API and impossible to copy or forge. Replaces the symbol-mark part of
 * `tests/structure_test.ts` ("a canonical value carries its facts itself"), which asserted that
 * the mark was a readable symbol-keyed property.
 */
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import {
  canonicalHeight,
  canonicalNeedsWriter,
  copyJson,
  modelFaults,
} from "../../src/_internal/json.ts";

Deno.test("canonical stamp: facts travel with the value, invisibly", () => {
  const canonical = copyJson({ b: [1, { c: 1e-7 }], a: "x" }, "value", modelFaults) as object;
  const plain = { a: "x", b: [1, { c: 1e-7 }] };
  assertEquals(canonicalHeight(canonical), 3);
  assert(canonicalNeedsWriter(canonical));
  assertStrictEquals(copyJson(canonical, "value", modelFaults), canonical);
  assertEquals(JSON.stringify(canonical), JSON.stringify(plain));
  assertEquals(Object.keys(canonical), ["a", "b"]);
  assertEquals(Reflect.ownKeys(canonical), ["a", "b"]);
  assertEquals(Object.getOwnPropertySymbols(canonical), []);
  assertEquals(canonical, plain);
  assert(Object.isFrozen(canonical));
  const clone = structuredClone(canonical);
  assertEquals(clone, plain);
  assertEquals(canonicalHeight(clone), undefined);
  assertEquals(canonicalHeight((canonical as { b: object }).b), undefined);
  assertEquals(canonicalHeight(plain), undefined);
  const array = copyJson([[1]], "value", modelFaults) as object;
  assertEquals(canonicalHeight(array), 2);
  assertEquals(canonicalNeedsWriter(array), false);
  assertEquals(Reflect.ownKeys(array), ["0", "length"]);
});

Deno.test("canonical stamp: copies, spreads and proxies of a canonical value are checked again", () => {
  const canonical = copyJson({ a: "x" }, "value", modelFaults) as object;
  const bad = "\ud800";
  const forgeries: object[] = [
    { ...canonical, bad },
    Object.assign({}, canonical, { bad }),
    Object.freeze({ ...canonical, bad }),
    new Proxy({ ...canonical, bad }, {}),
  ];
  for (const forged of forgeries) {
    assertEquals(canonicalHeight(forged), undefined);
    assert(canonicalNeedsWriter(forged));
    assertThrows(
      () => copyJson(forged, "value", modelFaults),
      RangeError,
      "value.bad must contain valid Unicode scalar values",
    );
  }
  const proxied = new Proxy(canonical, {});
  assertEquals(canonicalHeight(proxied), undefined);
  const copied = copyJson(proxied, "value", modelFaults);
  assert(copied !== proxied);
  assertEquals(copied, { a: "x" });
  assertEquals(canonicalHeight(copied), 1);
});

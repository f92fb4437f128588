// Port of the reference's tests/test_models.py (tests 1-3 of 16: the execution key and the
// context), plus the execution key's identity (src/endpoint/execution.ts).
import {
  assert,
  assertEquals,
  assertNotEquals,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import { MAX } from "../_helpers.ts";
import {
  executionKeyOfCheckedFields,
  ToolContext,
  ToolExecutionKey,
} from "../../src/endpoint/models.ts";
import { context, contextValues, key, mutable } from "./_fixtures.ts";

Deno.test("execution key is attempt scoped hashable identity", () => {
  const first = key("attempt-1");
  const second = key("attempt-2");

  assertNotEquals(first, second);
  assertStrictEquals(first.equals(second), false);
  assert(first.equals(key("attempt-1")));
  assertEquals(first, key("attempt-1"));
  const identities = new Set([first.id, second.id, key("attempt-1").id, key("attempt-2").id]);
  assertEquals(identities, new Set([first.id, second.id]));
  assertStrictEquals(identities.size, 2);
  assertThrows(
    () => new ToolExecutionKey({ invocationId: "", attemptId: "attempt-1" }),
    RangeError,
    "invocation_id",
  );
  assertThrows(
    () => new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "" }),
    RangeError,
    "attempt_id",
  );
});

Deno.test("context uses execution key and copies metadata", () => {
  const metadata: Record<string, { value: string }> = { trace: { value: "before" } };
  const ctx = context(metadata);
  metadata.trace.value = "after";

  assertStrictEquals(ctx.invocationId, "invocation-1");
  assertStrictEquals(ctx.attemptId, "attempt-1");
  assertEquals(ctx.metadata.trace, { value: "before" });
  // (The reference also checks the doc string for "absolute Unix epoch": not visible at runtime.)
  const original = ctx.executionKey;
  assertThrows(() => {
    mutable(ctx).executionKey = key("attempt-2");
  }, TypeError);
  assertStrictEquals(ctx.executionKey, original);
  assertStrictEquals(ctx.attemptId, "attempt-1");
});

Deno.test("context deadline uses interoperable json integer range", () => {
  assertStrictEquals(new ToolContext({ ...contextValues(), deadlineMs: MAX }).deadlineMs, MAX);
  assertThrows(
    () => new ToolContext({ ...contextValues(), deadlineMs: MAX + 1 }),
    RangeError,
    "deadline_ms",
  );
});

Deno.test("execution key id is injective and not an own property", () => {
  const abc = new ToolExecutionKey({ invocationId: "a", attemptId: "bc" });
  const abC = new ToolExecutionKey({ invocationId: "ab", attemptId: "c" });
  assertNotEquals(abc.id, abC.id);
  assertStrictEquals(abc.equals(abC), false);
  assertStrictEquals(abc.id, "1:abc");
  assertStrictEquals(abC.id, "2:abc");
  const colon = new ToolExecutionKey({ invocationId: "1:a", attemptId: "b" });
  const plain = new ToolExecutionKey({ invocationId: "1", attemptId: ":ab" });
  assertNotEquals(colon.id, plain.id);
  assertStrictEquals(new ToolExecutionKey({ invocationId: "a", attemptId: "bc" }).id, abc.id);

  assertStrictEquals(Object.hasOwn(abc, "id"), false);
  assertEquals(Object.keys(abc), ["invocationId", "attemptId"]);
  const ledger = new Map<string, string>([[abc.id, "first"], [abC.id, "second"]]);
  assertStrictEquals(
    ledger.get(new ToolExecutionKey({ invocationId: "ab", attemptId: "c" }).id),
    "second",
  );
  assertStrictEquals(abc.equals({ invocationId: "a", attemptId: "bc" } as never), false);
  assertStrictEquals(abc.equals(undefined as never), false);
});

Deno.test("execution key: the public constructor checks its fields whatever else it is passed", () => {
  // Only executionKeyOfCheckedFields's module-private token skips the checks (for an envelope's
  // headers, already checked by the same rules); any other second argument is ignored.
  const Key = ToolExecutionKey as unknown as new (init: unknown, checked: unknown) => unknown;
  for (const extra of [true, "checked", Symbol("checked execution key fields"), {}]) {
    assertThrows(() => new Key({ invocationId: " ", attemptId: "a" }, extra), RangeError);
    assertThrows(() => new Key({ invocationId: "i", attemptId: "\ud800" }, extra), RangeError);
    assertThrows(() => new Key(undefined, extra), TypeError);
  }
  const checked = executionKeyOfCheckedFields("invocation-1", "attempt-1");
  assert(checked instanceof ToolExecutionKey);
  assert(Object.isFrozen(checked));
  assert(
    checked.equals(new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" })),
  );
  assertStrictEquals(checked.id, key("attempt-1").id);
});

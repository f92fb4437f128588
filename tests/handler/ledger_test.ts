// The execution ledger's phase machine, permits and retention, on the private module itself
// (src/handler/_ledger.ts): the handler suites reach the same rules through dispatch.
import { assertEquals, assertInstanceOf, assertStrictEquals, assertThrows } from "@std/assert";
import {
  ToolAccepted,
  ToolError,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolResult,
} from "../../mod.ts";
import { ToolProtocolError } from "../../wire.ts";
import { ExecutionLedger, type ExecutionRecord } from "../../src/handler/_ledger.ts";
import { withResolvers } from "../../src/_internal/async.ts";

const DONE = new ToolResult({ status: "succeeded", outputs: {} });
const COMPLETED = new ToolExecutionStatus({ phase: "completed" });
const RUNNING = new ToolExecutionStatus({ phase: "running" });

function key(invocationId: string): ToolExecutionKey {
  return new ToolExecutionKey({ invocationId, attemptId: "attempt-1" });
}

function ledger(maxRetained = 8): { ledger: ExecutionLedger; notices: () => number } {
  let notices = 0;
  return {
    ledger: new ExecutionLedger(["move"], maxRetained, () => notices++),
    notices: () => notices,
  };
}

function admitted(ledger: ExecutionLedger, invocationId: string): ExecutionRecord {
  const record = ledger.admit(key(invocationId), "move", 4, `request-${invocationId}`);
  if (record instanceof ToolError) throw new Error(`not admitted: ${record.message}`);
  return record;
}

Deno.test("ledger: an admitted execution is starting, holds a permit, and accepted settles it", async () => {
  const { ledger: book, notices } = ledger();
  const record = admitted(book, "a");
  assertEquals([record.phase, record.permitHeld, book.permits.get("move")], ["starting", true, 1]);
  assertEquals(notices(), 1);
  // No waiter is made until a duplicate finds the record starting; one waits here as it would.
  assertEquals(record.ready, undefined);
  const waiter = (record.ready = withResolvers<void>()).promise;
  const accepted = new ToolAccepted();
  book.settle(record, accepted, "accepted");
  await waiter;
  assertEquals(record.phase, "accepted");
  assertStrictEquals(record.outcome, accepted);
  // The provider's terminal state ends the acceptance; the replayed outcome stays the acceptance.
  book.recordTerminal(record.key, "move", COMPLETED, DONE, false);
  assertEquals([record.phase, record.permitHeld, book.permits.get("move")], ["terminal", false, 0]);
  assertStrictEquals(record.outcome, accepted);
  assertEquals(notices(), 2);
});

Deno.test("ledger: a record lets go of its emitter when that emitter's progression ended, not of another", () => {
  const { ledger: book } = ledger();
  const record = admitted(book, "a");
  const [first, second] = [{}, {}] as unknown as NonNullable<ExecutionRecord["emitter"]>[];
  record.emitter = second;
  // A stale emitter's end changes nothing; the record's own emitter's end drops it.
  book.progressionEnded(record, first);
  assertStrictEquals(record.emitter, second);
  book.progressionEnded(record, second);
  assertEquals(record.emitter, undefined);
});

Deno.test("ledger: a terminal state reported while starting waits for the start to settle", () => {
  const { ledger: book } = ledger();
  const record = admitted(book, "a");
  book.recordTerminal(record.key, "move", COMPLETED, DONE, false);
  assertEquals([record.phase, record.outcome, record.permitHeld], ["starting", undefined, false]);
  assertStrictEquals(record.result, DONE);
});

Deno.test("ledger: a rejection stays the outcome when a terminal state is observed later", () => {
  const { ledger: book } = ledger();
  const record = admitted(book, "a");
  const refusal = new ToolError({ code: "NO", message: "not admitted" });
  book.releasePermit(record);
  book.settle(record, refusal, "rejected");
  book.recordTerminal(record.key, "move", COMPLETED, DONE, false);
  assertEquals(record.phase, "rejected");
  assertStrictEquals(record.outcome, refusal);
});

Deno.test("ledger: an observation is observed, and terminal with its result as the outcome", () => {
  const { ledger: book } = ledger();
  book.recordStatus(key("a"), "move", RUNNING);
  const record = book.get(key("a"))!;
  assertEquals([record.phase, record.invoked, record.outcome], ["observed", false, undefined]);
  book.recordTerminal(key("a"), "move", COMPLETED, DONE, false);
  assertEquals(record.phase, "terminal");
  assertStrictEquals(record.outcome, DONE);
});

Deno.test("ledger: unknown convergence releases the permit and yields the unknown result", () => {
  const { ledger: book } = ledger();
  const record = admitted(book, "a");
  const result = book.convergeUnknown(record, {
    code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    message: "lost",
    retryable: false,
  });
  assertEquals([result.status, result.error?.code], ["unknown", "FORGE_ENDPOINT_OUTCOME_UNKNOWN"]);
  assertEquals([record.status?.phase, record.permitHeld, book.permits.get("move")], [
    "unknown",
    false,
    0,
  ]);
});

Deno.test("ledger: admission refuses at max_concurrency and when only starting records are retained", () => {
  const { ledger: book } = ledger(2);
  const first = admitted(book, "a");
  admitted(book, "b");
  // Full of starting records: none may be evicted.
  const full = book.admit(key("c"), "move", 4, "request-c");
  assertInstanceOf(full, ToolError);
  assertEquals([full.code, full.message, full.retryable], [
    "FORGE_ENDPOINT_CAPACITY",
    "execution retention is full of active records",
    true,
  ]);
  const busy = book.admit(key("c"), "move", 2, "request-c");
  assertInstanceOf(busy, ToolError);
  assertEquals(busy.message, "operation 'move' is at max_concurrency");
  // A settled record without a permit is evicted, least recently used first.
  book.releasePermit(first);
  book.settle(first, new ToolError({ code: "NO", message: "no" }), "rejected");
  admitted(book, "c");
  assertEquals([book.size, book.get(key("a"))], [2, undefined]);
});

Deno.test("ledger: a key bound to another operation is an execution conflict", () => {
  const book = new ExecutionLedger(["move", "grip"], 8, () => {});
  book.admit(key("a"), "move", 4, "request-a");
  const error = assertThrows(() => book.find(key("a"), "grip"), ToolProtocolError);
  assertEquals(error.code, "FORGE_PROTOCOL_EXECUTION_CONFLICT");
});

Deno.test("ledger: attempts of one invocation are records of their own, each found, counted and evicted alone", () => {
  const book = new ExecutionLedger(["move"], 3, () => {});
  const attempt = (attemptId: string) => new ToolExecutionKey({ invocationId: "a", attemptId });
  const admit = (attemptId: string) => {
    const record = book.admit(attempt(attemptId), "move", 8, `request-${attemptId}`);
    if (record instanceof ToolError) throw new Error(record.message);
    book.releasePermit(record);
    book.settle(record, new ToolAccepted(), "accepted");
    return record;
  };
  const [first, second, third] = [admit("1"), admit("2"), admit("3")];
  assertEquals(book.size, 3);
  // Fresh keys with the same strings find each record; an attempt never admitted finds none.
  assertStrictEquals(book.get(attempt("1")), first);
  assertStrictEquals(book.get(attempt("2")), second);
  assertStrictEquals(book.find(attempt("3"), "move"), third);
  assertEquals(book.get(attempt("4")), undefined);
  assertEquals(book.get(key("b")), undefined);
  // The fourth attempt evicts the least recently used one only.
  const fourth = admit("4");
  assertEquals(
    [book.size, book.get(attempt("1")), [...book.records()].map((r) => r.key.attemptId)],
    [3, undefined, ["2", "3", "4"]],
  );
  assertStrictEquals(book.get(attempt("4")), fourth);
  // Down to one attempt and then to none: another invocation's record takes the room.
  for (const invocationId of ["b", "c", "d"]) admitted(book, invocationId);
  assertEquals([book.size, book.get(attempt("2")), book.get(attempt("3"))], [
    3,
    undefined,
    undefined,
  ]);
  assertEquals(book.get(attempt("4")), undefined);
  assertEquals([...book.records()].map((r) => r.key.invocationId), ["b", "c", "d"]);
});

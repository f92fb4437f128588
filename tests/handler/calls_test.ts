/**
 * `ProviderCalls.call` (src/handler/_calls.ts), the one way provider code is called: an answer
 * returned synchronously is not tracked for close() and reaches the caller one microtask turn
 * before one returned as a promise, a throw becomes a rejection, a thenable is followed, and a
 * call made once close() abandoned the pending ones is refused.
 */
import { assertEquals, assertInstanceOf, assertRejects, assertStrictEquals } from "@std/assert";
import { ToolEndpointDescriptor, ToolOperationDescriptor, ToolResult } from "../../mod.ts";
import { ABANDONED, ProviderCalls } from "../../src/handler/_calls.ts";
import { handlerSettings } from "../../src/handler/_options.ts";

const DONE = new ToolResult({ status: "succeeded", outputs: {} });

function calls(): ProviderCalls {
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: "forge.tool.endpoint/v1alpha1",
    endpointId: "vision.yolo",
    operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  });
  return new ProviderCalls(handlerSettings(descriptor, {
    endpointInstanceId: "instance-1",
    operations: { detect: { query: () => DONE } },
    logger: () => {},
  }));
}

/** How many microtask turns pass before `promise` settles. */
async function turnsUntilSettled(promise: Promise<unknown>): Promise<number> {
  let settled = false;
  promise.then(() => settled = true, () => settled = true);
  let turns = 0;
  while (!settled) {
    await null;
    turns++;
  }
  return turns;
}

Deno.test("calls: a synchronous answer is untracked and settles a turn before a promised one", async () => {
  const host = calls();
  const sync = host.call(() => DONE);
  assertEquals([...host.inFlight].length, 0);
  const promised = host.call(() => Promise.resolve(DONE));
  assertEquals([...host.inFlight].length, 1);
  const [syncTurns, promisedTurns] = await Promise.all([
    turnsUntilSettled(sync),
    turnsUntilSettled(promised),
  ]);
  assertEquals(syncTurns + 1, promisedTurns);
  assertStrictEquals(await sync, DONE);
  assertEquals([...host.inFlight].length, 0);
  // Alone, too: it is settled when call() returns, a promised answer one turn later.
  assertEquals(await turnsUntilSettled(host.call(() => DONE)), 1);
  assertEquals(await turnsUntilSettled(host.call(() => Promise.resolve(DONE))), 2);
});

Deno.test("calls: a throw is a rejection, a thenable is followed, an abandoned host refuses", async () => {
  const host = calls();
  const boom = new Error("boom");
  await assertRejects(
    () =>
      host.call(() => {
        throw boom;
      }),
    Error,
    "boom",
  );
  const thenable = { then: (resolve: (value: unknown) => void) => resolve(DONE) };
  assertStrictEquals(await host.call(() => thenable as unknown as PromiseLike<ToolResult>), DONE);
  // A plain object with a non-callable `then` is an answer, not a thenable.
  const answer = { then: 1 };
  assertStrictEquals(await host.call(() => answer), answer);
  const pending = host.call(() => new Promise(() => {}));
  host.close();
  host.abandonPending();
  assertStrictEquals(await pending.catch((error) => error), ABANDONED);
  assertStrictEquals(await host.call(() => DONE).catch((error) => error), ABANDONED);
  assertStrictEquals(
    await host.call(() => Promise.resolve(DONE)).catch((error) => error),
    ABANDONED,
  );
});

Deno.test("calls: callNow hands a synchronous answer over as it is, anything else as a promise", async () => {
  const host = calls();
  assertStrictEquals(host.callNow(() => DONE), DONE);
  const answer = { then: 1 };
  assertStrictEquals(host.callNow(() => answer), answer);
  const promised = host.callNow(() => Promise.resolve(DONE));
  assertInstanceOf(promised, Promise);
  assertStrictEquals(await promised, DONE);
  const thrown = host.callNow(() => {
    throw new Error("boom");
  });
  assertInstanceOf(thrown, Promise);
  await assertRejects(() => thrown, Error, "boom");
  const pending = host.callNow(() => new Promise(() => {}));
  host.close();
  host.abandonPending();
  assertStrictEquals(await (pending as Promise<unknown>).catch((error) => error), ABANDONED);
  // Once close() abandoned the pending calls, even a synchronous answer is refused.
  const refused = host.callNow(() => DONE);
  assertInstanceOf(refused, Promise);
  assertStrictEquals(await refused.catch((error) => error), ABANDONED);
});

/**
 * The reason an accepted control gives the provider's signal: an `AbortError` `DOMException`
 * naming the command, frozen, and the same object for every execution the same command ends (the
 * handler builds one per command instead of one per control, a stack trace each).
 */
import { assert, assertInstanceOf, assertStrictEquals } from "@std/assert";
import { controlFor, controlOf, invokeFor } from "./_fakes.ts";
import { CA, cell, CS, Scripted, test } from "./_scripted.ts";

for (const [target, command] of [[CA, "cancel"], [CS, "stop"]] as const) {
  test(`an accepted ${command} aborts with one frozen AbortError per command`, async () => {
    const provider = new Scripted();
    const handler = cell(target === CA ? { action: provider } : { session: provider });
    const other = cell(target === CA ? { action: provider } : { session: provider });
    await handler.dispatch(invokeFor(target, { invocationId: "first" }));
    await other.dispatch(invokeFor(target, { invocationId: "second" }));
    for (const [h, invocationId] of [[handler, "first"], [other, "second"]] as const) {
      const response = await h.dispatch(controlFor(target, command, { invocationId }));
      assertStrictEquals(controlOf(response[0]).status, "accepted");
    }
    const [first, second] = provider.signals;
    assert(first.aborted && second.aborted);
    assertInstanceOf(first.reason, DOMException);
    assertStrictEquals(first.reason.name, "AbortError");
    assertStrictEquals(first.reason.message, `a ${command} control was accepted`);
    assert(Object.isFrozen(first.reason));
    assertStrictEquals(second.reason, first.reason);
  });
}

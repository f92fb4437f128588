// What a retained execution keeps alive once it ended (tests/handler/_retention.ts, in a
// subprocess with --expose-gc): the handler retains the record for replay, but lets go of the
// execution's emitter (and with it the context the emitter held) as soon as its event
// progression ended, whether a terminal event ended it or a status read did.
import { assertEquals } from "@std/assert";
import { runWithGc } from "../_helpers.ts";

Deno.test("retention: a finished execution's record keeps neither its emitter nor its context", async () => {
  const facts = await runWithGc(new URL("./_retention.ts", import.meta.url), [
    "--allow-read",
    "--allow-env",
  ]);
  assertEquals(facts, {
    gc: true,
    retained: 4,
    published: ["executor_completed", "executor_completed"],
    emittersAlive: 0,
    contextsAlive: 0,
  });
});

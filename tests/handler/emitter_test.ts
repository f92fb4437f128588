/**
 * `ExecutionEmitter` (src/handler/_emitter.ts) on its own: `finished` resolves whether it was
 * asked for before or after progression ended, and `accept()` hands back the early events in
 * order (none: an empty array), after which nothing more is buffered.
 */
import { assert, assertEquals } from "@std/assert";
import { ToolEvent } from "../../mod.ts";
import { ExecutionEmitter } from "../../src/handler/_emitter.ts";
import { ctx, INSTANCE } from "./_fakes.ts";

function emitter(): ExecutionEmitter {
  return new ExecutionEmitter(
    { establishTerminalForEvent: () => Promise.resolve(), report: () => {} },
    ctx("motion.arm", "move"),
    INSTANCE,
    4,
    16,
    undefined,
  );
}

/** True when `promise` settles within the current microtask turns. */
async function settlesNow(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(() => settled = true);
  for (let turn = 0; turn < 8; turn++) await null;
  return settled;
}

Deno.test("emitter: finished resolves when asked for before the end, and after it", async () => {
  const early = emitter();
  const waiting = early.finished;
  assertEquals([early.isFinished, await settlesNow(waiting)], [false, false]);
  early.closeTerminal();
  assertEquals([early.isFinished, await settlesNow(waiting)], [true, true]);

  const late = emitter();
  late.reject();
  assertEquals([late.isFinished, await settlesNow(late.finished)], [true, true]);
});

Deno.test("emitter: accept() hands back no events or the early ones in order", async () => {
  const quiet = emitter();
  assertEquals(quiet.accept().length, 0);

  const chatty = emitter();
  await chatty.emit(new ToolEvent({ type: "progress", data: { step: 1 } }));
  await chatty.emit(new ToolEvent({ type: "progress", data: { step: 2 } }));
  const events = chatty.accept();
  assertEquals(events.map((event) => [event.sequence, event.payload.data]), [
    [0, { step: 1 }],
    [1, { step: 2 }],
  ]);
  // Accepted without a sink: a later event is refused, never buffered.
  let refused = false;
  await chatty.emit(new ToolEvent({ type: "progress", data: { step: 3 } })).catch(() => {
    refused = true;
  });
  assert(refused);
  assertEquals(chatty.accept().length, 0);
});

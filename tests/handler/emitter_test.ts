/**
 * `ExecutionEmitter` (src/handler/_emitter.ts) on its own: `finished` resolves whether it was
 * asked for before or after progression ended, and `accept()` hands back the early events in
 * order (none: an empty array), after which nothing more is buffered.
 */
import { assert, assertEquals } from "@std/assert";
import { ToolEvent } from "../../mod.ts";
import { ExecutionEmitter } from "../../src/handler/_emitter.ts";
import { ctx, INSTANCE } from "./_fakes.ts";

/** An emitter without a sink; `ends` counts its host's ended() calls. */
function emitter(ends: { count: number } = { count: 0 }): ExecutionEmitter {
  return new ExecutionEmitter(
    {
      establishTerminalForEvent: () => Promise.resolve(),
      report: () => {},
      ended: () => ends.count++,
    },
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

Deno.test("emitter: the host hears once that progression ended, however it ended", async () => {
  const closed = { count: 0 };
  const terminal = emitter(closed);
  terminal.closeTerminal();
  terminal.closeTerminal();
  await terminal.converge();
  assertEquals(closed.count, 1);

  const rejected = { count: 0 };
  emitter(rejected).reject();
  assertEquals(rejected.count, 1);

  const converged = { count: 0 };
  await emitter(converged).converge(new ToolEvent({ type: "executor_failed" }));
  assertEquals(converged.count, 1);

  // Ended before acceptance: accepting it afterwards does not tell the host again.
  const accepted = { count: 0 };
  const early = emitter(accepted);
  early.closeTerminal();
  early.accept();
  assertEquals(accepted.count, 1);

  // Still running: nothing to hear.
  const running = { count: 0 };
  const open = emitter(running);
  open.accept();
  assertEquals([running.count, open.isFinished], [0, false]);
});

/**
 * A handler's close(): stop admitting, wait out the grace for provider calls and executions,
 * then converge what still runs to `unknown`, abandon pending calls, and wait for the answers and
 * terminal events that produces.
 *
 * @module
 */
import { settleWithin } from "../_internal/async.ts";
import type { ExecutionLedger } from "./_ledger.ts";
import type { ExecutionLifecycle } from "./_lifecycle.ts";
import type { ProviderCalls } from "./_calls.ts";

/** Closes the handler whose parts these are, allowing `graceMs` twice (see its close()). */
export async function shutDown(
  calls: ProviderCalls,
  ledger: ExecutionLedger,
  lifecycle: ExecutionLifecycle,
  dispatches: Iterable<Promise<unknown>>,
  graceMs: number,
): Promise<void> {
  if (calls.close()) {
    for (const record of ledger.records()) ledger.unlink(record);
  }
  const executions = lifecycle.unfinishedExecutions();
  // Calls an earlier close() abandoned are not waited for again.
  const waiting = new Set<Promise<unknown>>(calls.abandoned ? [] : calls.inFlight);
  // Each holds its emitter now (see unfinishedExecutions).
  for (const record of executions) waiting.add(record.emitter!.finished);
  await settleWithin(waiting, graceMs);
  // The grace is over. Accepted executions still running end as `unknown`, with a terminal
  // event; pending provider calls are abandoned, so every request waiting on one is answered.
  const publications = new Set<Promise<unknown>>();
  for (const record of executions) {
    // An execution whose progression ended during the grace may have let go of its emitter.
    if (record.emitter?.isFinished === false) publications.add(lifecycle.shutDown(record));
  }
  calls.abandonPending();
  for (const dispatch of dispatches) publications.add(dispatch);
  // Then let the answers and the terminal events themselves be produced before close() returns.
  await settleWithin(publications, graceMs);
}

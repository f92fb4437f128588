/**
 * The result watch of an invocation: the wake/sleep pair (why it woke, with priorities) and the
 * loop that polls the result with capped backoff until the terminal result is known, restarting
 * the backoff when an event arrives. A base class, so the invocation carries it without another
 * object per invoke.
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { setLongTimeout } from "../_internal/timers.ts";
import type { ToolExecutionKey, ToolResult, ToolResultResponse } from "../endpoint/models.ts";
import {
  ToolCallError,
  ToolClientError,
  ToolClientErrorCodes,
  type ToolClientErrorContext,
  type ToolClientExchange,
} from "./errors.ts";
import { type Answer, unwrap } from "./_failure.ts";

/** Why the result watch woke: `poll` is a caller asking `result()`. */
export type Wake = "event" | "poll" | "gap" | "terminal" | "timeout" | "stopped";
const WAKE_PRIORITY: Readonly<Record<Wake, number>> = {
  timeout: 0,
  event: 1,
  poll: 2,
  gap: 2,
  terminal: 3,
  stopped: 4,
};

/** The wake/sleep pair and the result-polling loop of one invocation. */
export abstract class ResultWatch {
  #watching = false;
  #wakeup: PromiseWithResolvers<Wake> | undefined;
  #pendingWake: Wake | undefined;

  /** The execution key, for the error when the endpoint forgets the execution. */
  abstract readonly key: ToolExecutionKey;
  /** Whether the watch has nothing left to do: the terminal result is known, or released. */
  protected abstract watchOver(): boolean;
  /** Whether the terminal event has arrived (it may still wait in the buffer). */
  protected abstract terminalEventSeen(): boolean;
  /** The first and largest delay between polls, in milliseconds. */
  protected abstract pollIntervals(): { pollIntervalMs: number; maxPollIntervalMs: number };
  /** One result request. */
  protected abstract resultRequest(): Promise<Answer<ToolResultResponse>>;
  /** The fields of an error about an exchange of this invocation. */
  protected abstract about(exchange: ToolClientExchange): ToolClientErrorContext;
  /** A poll was answered with a retryable error: the waiting callers get it, the watch goes on. */
  protected abstract pollRefused(error: ToolCallError): void;
  /** A poll found the terminal result. */
  protected abstract polledTerminal(result: ToolResult): void;
  /** The watch failed: end every wait with `error`. */
  protected abstract watchFailed(error: unknown): void;

  /** Wakes the watch (or keeps the reason of highest priority for its next sleep). */
  protected wake(reason: Wake): void {
    const waiter = this.#wakeup;
    if (waiter !== undefined) {
      this.#wakeup = undefined;
      waiter.resolve(reason);
      return;
    }
    if (
      this.#pendingWake === undefined || WAKE_PRIORITY[reason] > WAKE_PRIORITY[this.#pendingWake]
    ) {
      this.#pendingWake = reason;
    }
  }

  #sleep(ms: number): Promise<Wake> {
    const pending = this.#pendingWake;
    this.#pendingWake = undefined;
    if (pending !== undefined) return Promise.resolve(pending);
    const wakeup = withResolvers<Wake>();
    this.#wakeup = wakeup;
    const timer = setLongTimeout(() => this.wake("timeout"), ms);
    return wakeup.promise.finally(() => timer.clear());
  }

  /** Starts the result watch once: it runs until the terminal result is known or the end. */
  protected watch(): void {
    if (this.#watching || this.watchOver()) return;
    this.#watching = true;
    this.#watchLoop().then(undefined, (error) => this.watchFailed(error));
  }

  async #watchLoop(): Promise<void> {
    const { pollIntervalMs, maxPollIntervalMs } = this.pollIntervals();
    let backoff = pollIntervalMs;
    // A terminal event that arrived before anyone waited is acted on at once.
    if (this.terminalEventSeen()) this.wake("terminal");
    while (!this.watchOver()) {
      const woke = await this.#sleep(backoff);
      if (this.watchOver() || woke === "stopped") return;
      if (woke === "event") {
        backoff = pollIntervalMs;
        continue;
      }
      let response: ToolResultResponse;
      try {
        response = unwrap(await this.resultRequest(), this.about("result"));
      } catch (error) {
        if (!(error instanceof ToolCallError) || !error.retryable) throw error;
        // The endpoint is away for now (a gateway whose lease on it expired, a provider at
        // capacity) and the execution may still run: the waiting result() calls get the error,
        // the invocation stays open (its events keep arriving) and the watch polls on.
        this.pollRefused(error);
        backoff = Math.min(backoff * 2, maxPollIntervalMs);
        continue;
      }
      if (response.status === "available" && response.result !== undefined) {
        this.polledTerminal(response.result);
        return;
      }
      if (response.status === "not_found") {
        throw new ToolClientError("the endpoint no longer knows the execution", {
          code: ToolClientErrorCodes.UNEXPECTED_RESPONSE,
          exchange: "result",
          invocationId: this.key.invocationId,
          attemptId: this.key.attemptId,
          attempts: 1,
        });
      }
      backoff = woke === "timeout" ? Math.min(backoff * 2, maxPollIntervalMs) : pollIntervalMs;
    }
  }
}

/**
 * The call context an Action or Session function receives (`signal`, `emit`, `progress`,
 * `context`, `request`), and the terminal event its execution emits once the result is recorded.
 *
 * @module
 */
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import { logSafely as report, type ToolLogger } from "../endpoint/log.ts";
import {
  type ToolContext,
  ToolEvent,
  type ToolRequest,
  type ToolResult,
} from "../endpoint/models.ts";
import type { ToolEventEmitter } from "../endpoint/spi.ts";
import { unknownOutcomeEvent } from "../handler/unknown_event.ts";
import { TERMINAL_EVENT } from "./_constants.ts";
import type { Execution } from "./_executions.ts";
import { keyFields, optionError } from "./_validate.ts";
import type { ExecutionCallContext } from "./types.ts";

/** The context object an Action or Session function receives. */
export class ExecutionCall implements ExecutionCallContext {
  readonly signal: AbortSignal;
  readonly context: ToolContext;
  readonly request: ToolRequest;
  readonly #events: ToolEventEmitter;
  readonly #execution: Execution;
  readonly #logger: ToolLogger;

  constructor(
    execution: Execution,
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    logger: ToolLogger,
  ) {
    this.signal = execution.controller.signal;
    this.context = context;
    this.request = request;
    this.#events = events;
    this.#execution = execution;
    this.#logger = logger;
  }

  // Arrow-function fields: the function may destructure `{ emit, progress }` from its context.
  readonly emit = (type: "progress" | "heartbeat", data?: object): Promise<boolean> => {
    if (type !== "progress" && type !== "heartbeat") {
      return Promise.reject(
        optionError("emit an event", "type", '"progress" or "heartbeat"', type),
      );
    }
    let event: ToolEvent;
    try {
      event = new ToolEvent({ type, data });
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#execution.result !== undefined) {
      report(this.#logger, {
        level: "warn",
        event: "event.late",
        message: `a ${type} event was emitted after the execution finished; it was dropped`,
        ...keyFields(this.context),
      });
      return Promise.resolve(false);
    }
    return this.#publish(event);
  };

  readonly progress = (data?: object): Promise<boolean> => this.emit("progress", data);

  async #publish(event: ToolEvent): Promise<boolean> {
    try {
      await this.#events.emit(event);
      return true;
    } catch (error) {
      report(this.#logger, {
        level: "warn",
        event: "event.refused",
        message: `a ${event.type} event could not be published`,
        ...keyFields(this.context),
        error,
      });
      return false;
    }
  }

  /**
   * Emits the terminal event of the recorded result: for `unknown`, the `executor_failed` event
   * the handler itself publishes for an unknown outcome (data `{"phase": "unknown", ...}`), so a
   * closing handler sees the execution end without waiting out its grace. When the handler ended
   * the execution first (an abandoned invoke, a grace already over), it refuses the event and
   * has published (or suppressed) the terminal event itself: nothing to report.
   */
  async terminal(result: ToolResult): Promise<void> {
    const unknown = result.status === "unknown";
    const event = unknown
      ? unknownOutcomeEvent(result)
      : new ToolEvent({ type: TERMINAL_EVENT[result.status] });
    const type = event.type;
    try {
      await this.#events.emit(event);
    } catch (error) {
      if (
        unknown && error instanceof ToolProtocolError &&
        error.code === ToolErrorCodes.ENDPOINT_EVENT_AFTER_TERMINAL
      ) return;
      report(this.#logger, {
        level: "warn",
        event: "event.terminal_refused",
        message: `the terminal ${type} event could not be published`,
        ...keyFields(this.context),
        error,
      });
    }
  }
}

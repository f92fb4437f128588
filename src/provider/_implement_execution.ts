/**
 * The SPI Action or Session provider of a definition: `start()` admits at once and runs the
 * function in the background; cancel or stop, status and result answer from the executions
 * table (see "Unknown and forgotten executions" in the module documentation of `define.ts`).
 *
 * @module
 */
import { ToolEndpointError, ToolErrorCodes } from "../endpoint/errors.ts";
import { logSafely as report } from "../endpoint/log.ts";
import {
  type ToolAccepted,
  type ToolContext,
  ToolControlResponse,
  ToolError,
  type ToolExecutionKey,
  type ToolRequest,
  ToolResultResponse,
} from "../endpoint/models.ts";
import type {
  ActionToolEndpoint,
  SessionToolEndpoint,
  ToolCallOptions,
  ToolEventEmitter,
} from "../endpoint/spi.ts";
import { ACCEPTED, NOT_FOUND, NOT_FOUND_ERROR, PENDING, RUNNING, STOPPING } from "./_constants.ts";
import { ExecutionCall } from "./_execution_call.ts";
import { type Execution, ExecutionTable } from "./_executions.ts";
import { outcomeOf, statusOf } from "./_outcome.ts";
import { implementOptions, type Settings } from "./_settings.ts";
import { type CheckOutputs, keyFields, type Validate } from "./_validate.ts";
import type { ExecutionFunction, ImplementOptions, ToolOutputs } from "./types.ts";

/** The Action or Session provider of a definition. */
export function implementExecution<A>(
  settings: Settings,
  run: ExecutionFunction<A>,
  validate: Validate<A>,
  checkOutputs: CheckOutputs | undefined,
  options: ImplementOptions,
): ActionToolEndpoint & SessionToolEndpoint {
  const { logger, maxRetained, track } = implementOptions(options);
  const table = new ExecutionTable(maxRetained);
  const command = settings.semantics === "action" ? "cancel" : "stop";
  const stopStatus = settings.semantics === "action" ? "cancelled" : "stopped";
  const answers = {
    accepted: new ToolControlResponse({ command, status: "accepted" }),
    terminal: new ToolControlResponse({ command, status: "terminal" }),
    unsupported: new ToolControlResponse({ command, status: "unsupported" }),
    notFound: new ToolControlResponse({ command, status: "rejected", error: NOT_FOUND_ERROR }),
  };

  const begin = (
    args: A,
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    outer: AbortSignal,
  ): ToolAccepted | Promise<ToolAccepted> => {
    const existing = table.get(context.executionKey);
    if (existing?.result !== undefined) {
      // The handler forgot this finished execution and this table did not: replay its result.
      // The terminal event is established before start() returns, so the invoke answers with
      // the result itself (the handler's rule for a result established during start()).
      return new ExecutionCall(existing, request, context, events, logger)
        .terminal(existing.result).then(() => ACCEPTED);
    }
    if (existing !== undefined) {
      throw new ToolEndpointError(
        new ToolError({
          code: ToolErrorCodes.EXECUTION_CONFLICT,
          message: "an execution with this key is already running here",
          retryable: false,
        }),
      );
    }
    const execution: Execution = {
      key: context.executionKey,
      controller: new AbortController(),
      status: RUNNING,
      result: undefined,
      response: undefined,
      stopRequested: false,
    };
    table.add(execution);
    const controller = execution.controller;
    const forward = () => controller.abort(outer.reason);
    if (outer.aborted) forward();
    else outer.addEventListener("abort", forward, { once: true });
    const call = new ExecutionCall(execution, request, context, events, logger);
    const finish = (fulfilled: boolean, value: unknown): Promise<void> => {
      outer.removeEventListener("abort", forward);
      const result = outcomeOf(
        fulfilled,
        value,
        execution.stopRequested ? stopStatus : undefined,
        controller.signal,
        context,
        logger,
      );
      // The result first: the terminal event's barrier asks result() for it.
      execution.result = result;
      execution.response = new ToolResultResponse({ status: "available", result });
      execution.status = statusOf(result);
      table.finish(execution);
      return call.terminal(result);
    };
    let running: Promise<ToolOutputs>;
    try {
      running = Promise.resolve(run(args, call));
    } catch (error) {
      running = Promise.reject(error);
    }
    if (checkOutputs !== undefined) {
      // Only with an outputs schema: a rejected check fails the execution with its error.
      running = running.then(async (value) => {
        if (controller.signal.aborted) return value;
        const error = await checkOutputs(value, context, logger);
        if (error !== undefined) throw new ToolEndpointError(error);
        return value;
      });
    }
    const work = running
      .then((value) => finish(true, value), (error) => finish(false, error))
      .catch((error) =>
        report(logger, {
          level: "error",
          event: "provider.internal",
          message: "recording the outcome of an execution failed",
          ...keyFields(context),
          error,
        })
      );
    track?.(work);
    return ACCEPTED;
  };

  const control = (key: ToolExecutionKey, reason: string | undefined): ToolControlResponse => {
    const execution = table.get(key);
    if (execution === undefined) return answers.notFound;
    if (execution.result !== undefined) return answers.terminal;
    if (!settings.controllable) return answers.unsupported;
    // A signal the deadline or a close already aborted keeps that cause: the command is accepted
    // (the work is ending) but the outcome follows why the signal aborted first.
    if (!execution.stopRequested && !execution.controller.signal.aborted) {
      execution.stopRequested = true;
      execution.status = STOPPING;
      execution.controller.abort(
        new DOMException(reason ?? `a ${command} control was accepted`, "AbortError"),
      );
    }
    return answers.accepted;
  };

  return {
    start(request, context, events, { signal }: ToolCallOptions) {
      const args = validate(request, context, logger);
      if (args instanceof Promise) {
        return args.then((valid) => begin(valid, request, context, events, signal));
      }
      return begin(args, request, context, events, signal);
    },
    cancel: (key, reason) => control(key, reason),
    stop: (key, reason) => control(key, reason),
    status(key) {
      const execution = table.get(key);
      if (execution === undefined) throw new ToolEndpointError(NOT_FOUND_ERROR);
      return execution.status;
    },
    result(key) {
      const execution = table.get(key);
      if (execution === undefined) return NOT_FOUND;
      return execution.response ?? PENDING;
    },
  };
}

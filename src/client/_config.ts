/**
 * The client's configuration: {@linkcode ToolEndpointClientOptions} checked once at construction
 * into a frozen {@linkcode Config} (defaults applied, option errors naming the option and showing
 * the value received), and the per-call option checks that use it.
 *
 * @module
 */
import type { ToolSemantics } from "../endpoint/constants.ts";
import { consoleLogger, logSafely, type ToolLogger } from "../endpoint/log.ts";
import { ToolEndpointDescriptor, type ToolExecutionKey } from "../endpoint/models.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import type { ToolClientTransport } from "./transport.ts";
import type { ToolClientCallOptions, ToolEndpointClientOptions } from "./options.ts";
import { ToolClientError, ToolClientErrorCodes } from "./errors.ts";
import { resolveFailure } from "./_failure.ts";

/** The client's checked options. */
export interface Config {
  readonly endpointId: string;
  readonly endpointInstanceId: string | undefined;
  /**
   * The descriptor a call checks against, read at each call (the `descriptor` option, fixed or a
   * function); `undefined` without one.
   */
  readonly descriptor: (() => unknown) | undefined;
  readonly toolId: string;
  readonly implementationId: string;
  readonly callerId: string | undefined;
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  readonly pollIntervalMs: number;
  readonly maxPollIntervalMs: number;
  readonly reorderWindowMs: number;
  readonly maxPendingExchanges: number;
  readonly maxOpenInvocations: number;
  readonly maxBufferedEvents: number;
  readonly onError: (error: unknown, key: ToolExecutionKey) => void;
  readonly generateId: () => string;
}

/** `value` when it is a non-empty string, `undefined` when absent; else a `TypeError`. */
export function optionalString(value: unknown, name: string, action: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(optionMessage(action, name, "a non-empty string", value));
  }
  return value;
}

/**
 * `value` when it is a descriptor of `endpointId` (or `undefined`); else the option error, in
 * the constructor for a fixed descriptor, in the call for one a `descriptor` function returned.
 */
function checkedDescriptor(
  value: unknown,
  endpointId: string,
  action: string,
): ToolEndpointDescriptor | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof ToolEndpointDescriptor)) {
    throw new TypeError(
      optionMessage(action, "descriptor", "a ToolEndpointDescriptor or a function", value),
    );
  }
  if (value.endpointId !== endpointId) {
    throw new RangeError(
      `Cannot ${action} as 'descriptor' must describe endpoint '${endpointId}': current ` +
        `value describes '${value.endpointId}'`,
    );
  }
  return value;
}

/** Reports a background failure of the execution `key` to `logger`, as one record. */
function backgroundReporter(
  logger: ToolLogger,
  endpointId: string,
): (error: unknown, key: ToolExecutionKey) => void {
  return (error, key) =>
    logSafely(logger, {
      level: "error",
      event: "client.background_failed",
      message: "a control the client sent in the background failed",
      endpointId,
      invocationId: key.invocationId,
      attemptId: key.attemptId,
      error,
    });
}

/**
 * Checks the client's options (the transport included) and returns its configuration; what
 * `new ToolEndpointClient(options)` throws on bad options.
 */
export function configOf(options: ToolEndpointClientOptions): Config {
  const action = "create a ToolEndpointClient";
  if (typeof options !== "object" || options === null) {
    throw new TypeError(optionMessage(action, "options", "an object", options));
  }
  const transport: unknown = options.transport;
  if (
    typeof transport !== "object" || transport === null ||
    typeof (transport as ToolClientTransport).send !== "function" ||
    typeof (transport as ToolClientTransport).connect !== "function"
  ) {
    throw new TypeError(
      optionMessage(action, "transport", "an object with send() and connect()", transport),
    );
  }
  const endpointId = optionalString(options.endpointId, "endpointId", action);
  if (endpointId === undefined) {
    throw new TypeError(optionMessage(action, "endpointId", "a non-empty string", endpointId));
  }
  const descriptor: unknown = options.descriptor;
  let readDescriptor: (() => unknown) | undefined;
  if (typeof descriptor === "function") {
    readDescriptor = descriptor as () => unknown;
  } else if (descriptor !== undefined) {
    const fixed = checkedDescriptor(descriptor, endpointId, action);
    readDescriptor = () => fixed;
  }
  const pollIntervalMs = positiveIntegerOption(
    action,
    "pollIntervalMs",
    options.pollIntervalMs,
    50,
  );
  const maxPollIntervalMs = positiveIntegerOption(
    action,
    "maxPollIntervalMs",
    options.maxPollIntervalMs,
    Math.max(1000, pollIntervalMs),
  );
  if (maxPollIntervalMs < pollIntervalMs) {
    throw new RangeError(
      `Cannot ${action} as 'maxPollIntervalMs' must be at least 'pollIntervalMs' ` +
        `(${pollIntervalMs}): current value is ${maxPollIntervalMs}`,
    );
  }
  optionalFunction(action, "generateId", options.generateId);
  const logger = optionalFunction<ToolLogger>(action, "logger", options.logger) ?? consoleLogger;
  return Object.freeze({
    endpointId,
    endpointInstanceId: optionalString(
      options.endpointInstanceId,
      "endpointInstanceId",
      action,
    ),
    descriptor: readDescriptor,
    toolId: optionalString(options.toolId, "toolId", action) ?? endpointId,
    implementationId: optionalString(options.implementationId, "implementationId", action) ??
      endpointId,
    callerId: optionalString(options.callerId, "callerId", action),
    timeoutMs: positiveIntegerOption(action, "timeoutMs", options.timeoutMs, 5000),
    maxAttempts: positiveIntegerOption(action, "maxAttempts", options.maxAttempts, 3),
    pollIntervalMs,
    maxPollIntervalMs,
    reorderWindowMs: positiveIntegerOption(
      action,
      "reorderWindowMs",
      options.reorderWindowMs,
      100,
    ),
    maxPendingExchanges: positiveIntegerOption(
      action,
      "maxPendingExchanges",
      options.maxPendingExchanges,
      1024,
    ),
    maxOpenInvocations: positiveIntegerOption(
      action,
      "maxOpenInvocations",
      options.maxOpenInvocations,
      1024,
    ),
    maxBufferedEvents: positiveIntegerOption(
      action,
      "maxBufferedEvents",
      options.maxBufferedEvents,
      256,
    ),
    onError: backgroundReporter(logger, endpointId),
    generateId: options.generateId ?? (() => crypto.randomUUID()),
  });
}

/** A call's attempt timeout: its `timeoutMs` option, else the client's. */
export function timeoutOf(config: Config, options: ToolClientCallOptions, action: string): number {
  return positiveIntegerOption(action, "timeoutMs", options.timeoutMs, config.timeoutMs);
}

/**
 * Checks a call's operation and options and returns the operation's semantics: the
 * descriptor's, else the call's `semantics` option (`undefined` when neither says).
 */
export function semanticsOf(
  config: Config,
  operation: string,
  options: ToolClientCallOptions,
  action: string,
): ToolSemantics | undefined {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      optionMessage(action, "options", "an object", options),
    );
  }
  if (typeof operation !== "string" || operation === "") {
    throw new TypeError(
      optionMessage(action, "operation", "a non-empty string", operation),
    );
  }
  const given: unknown = options.semantics;
  if (given !== undefined && given !== "action" && given !== "session") {
    throw new RangeError(
      optionMessage(action, "semantics", '"action" or "session"', given),
    );
  }
  let value: unknown;
  try {
    value = config.descriptor?.();
  } catch (error) {
    // A gateway without a registration for the endpoint: nothing was sent.
    throw resolveFailure(
      error,
      { exchange: "invoke", outcome: "not_sent" },
      config.endpointId,
      "descriptor",
    );
  }
  const descriptor = checkedDescriptor(value, config.endpointId, action);
  if (descriptor === undefined) return given;
  const declared = descriptor.operation(operation);
  if (declared === undefined) {
    const known = descriptor.operations.map((o) => `'${o.name}'`).join(", ");
    throw new ToolClientError(
      `operation '${operation}' is not in the descriptor of '${descriptor.endpointId}' ` +
        `(it declares ${known === "" ? "none" : known})`,
      { code: ToolClientErrorCodes.UNKNOWN_OPERATION, exchange: "invoke", outcome: "not_sent" },
    );
  }
  return declared.semantics;
}

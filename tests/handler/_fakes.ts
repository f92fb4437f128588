// Shared fakes, request builders and decoders of the handler suites (not a test file itself),
// and the long-running providers of the shutdown suites. Stays whole (over 400 lines): one home
// for every fake provider the handler, node and Dora suites drive.
// The names follow the reference's tests/test_handler.py: FakeQuery, RejectingQuery,
// InvalidQuery, FakeAction, FakeSession, MissingControlMethod, RecordingAction,
// RecordingSession, and the request builders `_invoke_request`, `_action_request`,
// `_session_request`.
import { AssertionError, assertStrictEquals } from "@std/assert";
import { delay } from "@std/async";
import {
  ToolAccepted,
  type ToolCallOptions,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointError,
  ToolEndpointHandler,
  type ToolEndpointHandlerOptions,
  ToolError,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  controlResponseFromPayload,
  errorFromPayload,
  eventFromPayload,
  type InvokeResponse,
  invokeResponseFromPayload,
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  resultResponseFromPayload,
  statusResponseFromPayload,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolControlCommand,
  ToolEnvelope,
  type ToolEnvelopeInit,
  ToolProtocolError,
} from "../../wire.ts";
import { cellDescriptor, silentLogger } from "../_helpers.ts";

/** The handler's provider instance in every suite. */
export const INSTANCE = "instance-1";

// ---------------------------------------------------------------------------------------------
// Query fakes

/** One recorded `query()` call. */
export interface QueryCall {
  readonly request: ToolRequest;
  readonly context: ToolContext;
  readonly signal: AbortSignal;
}

/** Answers a fixed result, or the result of a function of the request, and records every call. */
export class FakeQuery {
  readonly calls: QueryCall[] = [];
  result: ToolResult | ((request: ToolRequest) => ToolResult);

  constructor(
    result: ToolResult | ((request: ToolRequest) => ToolResult) = new ToolResult({
      status: "succeeded",
      outputs: { ok: true },
    }),
  ) {
    this.result = result;
  }

  query(request: ToolRequest, context: ToolContext, options: ToolCallOptions): Promise<ToolResult> {
    this.calls.push({ request, context, signal: options.signal });
    const result = this.result;
    return Promise.resolve(typeof result === "function" ? result(request) : result);
  }
}

/** A {@linkcode FakeQuery} answer: succeeded, with the request's arguments as `outputs.arguments`. */
export function echoArguments(request: ToolRequest): ToolResult {
  return new ToolResult({ status: "succeeded", outputs: { arguments: request.arguments } });
}

/** The structured rejection RejectingQuery raises. */
export const QUERY_BUSY = new ToolError({
  code: "FORGE_ENDPOINT_BUSY",
  message: "query capacity is exhausted",
  retryable: true,
});

/** Rejects every query with a structured ToolEndpointError. */
export class RejectingQuery {
  calls = 0;

  // deno-lint-ignore require-await
  async query(): Promise<ToolResult> {
    this.calls++;
    throw new ToolEndpointError(QUERY_BUSY);
  }
}

/** Returns something that is not a ToolResult. */
export class InvalidQuery {
  calls = 0;

  query(): Promise<ToolResult> {
    this.calls++;
    return Promise.resolve({ not: "a ToolResult" } as unknown as ToolResult);
  }
}

// ---------------------------------------------------------------------------------------------
// Minimal Action / Session fakes

/** start -> ToolAccepted(), cancel -> accepted, status -> running, result -> pending. */
export class FakeAction {
  start(): Promise<ToolAccepted> {
    return Promise.resolve(new ToolAccepted());
  }
  cancel(): Promise<ToolControlResponse> {
    return Promise.resolve(new ToolControlResponse({ command: "cancel", status: "accepted" }));
  }
  status(): Promise<ToolExecutionStatus> {
    return Promise.resolve(new ToolExecutionStatus({ phase: "running" }));
  }
  result(): Promise<ToolResultResponse> {
    return Promise.resolve(new ToolResultResponse({ status: "pending" }));
  }
}

/** start -> ToolAccepted(), stop -> accepted, status -> running, result -> pending. */
export class FakeSession {
  start(): Promise<ToolAccepted> {
    return Promise.resolve(new ToolAccepted());
  }
  stop(): Promise<ToolControlResponse> {
    return Promise.resolve(new ToolControlResponse({ command: "stop", status: "accepted" }));
  }
  status(): Promise<ToolExecutionStatus> {
    return Promise.resolve(new ToolExecutionStatus({ phase: "running" }));
  }
  result(): Promise<ToolResultResponse> {
    return Promise.resolve(new ToolResultResponse({ status: "pending" }));
  }
}

/** Has start/status/result but neither cancel nor stop. */
export class MissingControlMethod {
  start(): Promise<ToolAccepted> {
    return Promise.resolve(new ToolAccepted());
  }
  status(): Promise<ToolExecutionStatus> {
    return Promise.resolve(new ToolExecutionStatus({ phase: "running" }));
  }
  result(): Promise<ToolResultResponse> {
    return Promise.resolve(new ToolResultResponse({ status: "pending" }));
  }
}

// ---------------------------------------------------------------------------------------------
// Recording Action / Session

/** What runs inside `start()` after the configured events were emitted. */
export type StartHook = (
  request: ToolRequest,
  context: ToolContext,
  events: ToolEventEmitter,
  options: ToolCallOptions,
) => unknown;

/** Options of the recording providers. */
export interface RecordingOptions {
  /** Events `start()` emits (awaited, in order) before it returns. */
  readonly events?: readonly ToolEvent[];
  /** The status `status()` answers (mutable through the field). */
  readonly status?: ToolExecutionStatus;
  /** The lookup `result()` answers (mutable through the field). */
  readonly result?: ToolResultResponse;
}

/** The shared body of RecordingAction and RecordingSession. */
abstract class RecordingExecution {
  startCalls = 0;
  controlCalls = 0;
  statusCalls = 0;
  resultCalls = 0;
  /** The emitter handed to the most recent `start()`. */
  emitter: ToolEventEmitter | undefined;
  /** Every emitter, in start order. */
  readonly emitters: ToolEventEmitter[] = [];
  /** The execution signal of every `start()`, in order. */
  readonly signals: AbortSignal[] = [];
  /** The context of every `start()`, in order. */
  readonly contexts: ToolContext[] = [];
  events: readonly ToolEvent[];
  currentStatus: ToolExecutionStatus;
  currentResult: ToolResultResponse;
  /** Runs after the events were emitted; whatever it throws, `start()` throws. */
  startHook: StartHook | undefined;
  /** Replaces the accepted control answer when set. */
  controlAnswer: ((key: ToolExecutionKey, reason: string | undefined) => unknown) | undefined;
  /** Reasons passed to cancel()/stop(). */
  readonly reasons: (string | undefined)[] = [];

  constructor(options: RecordingOptions = {}) {
    this.events = options.events ?? [];
    this.currentStatus = options.status ?? new ToolExecutionStatus({ phase: "running" });
    this.currentResult = options.result ?? new ToolResultResponse({ status: "pending" });
  }

  protected abstract readonly acceptedDetails: Record<string, string>;
  protected abstract readonly command: ToolControlCommand;

  async start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    options: ToolCallOptions,
  ): Promise<ToolAccepted> {
    this.startCalls++;
    this.emitter = events;
    this.emitters.push(events);
    this.signals.push(options.signal);
    this.contexts.push(context);
    for (const event of this.events) await events.emit(event);
    if (this.startHook !== undefined) await this.startHook(request, context, events, options);
    return new ToolAccepted({ details: this.acceptedDetails });
  }

  protected control(key: ToolExecutionKey, reason: string | undefined): ToolControlResponse {
    this.controlCalls++;
    this.reasons.push(reason);
    if (this.controlAnswer !== undefined) {
      return this.controlAnswer(key, reason) as ToolControlResponse;
    }
    return new ToolControlResponse({
      command: this.command,
      status: "accepted",
      details: { reason: reason ?? null },
    });
  }

  status(_key: ToolExecutionKey, _options: ToolCallOptions): Promise<ToolExecutionStatus> {
    this.statusCalls++;
    return Promise.resolve(this.currentStatus);
  }

  result(_key: ToolExecutionKey, _options: ToolCallOptions): Promise<ToolResultResponse> {
    this.resultCalls++;
    return Promise.resolve(this.currentResult);
  }

  /** Makes the provider report a terminal status and its available result. */
  finish(status: ToolExecutionStatus, result: ToolResult): void {
    this.currentStatus = status;
    this.currentResult = new ToolResultResponse({ status: "available", result });
  }

  /** Makes the provider report running/pending again. */
  reset(): void {
    this.currentStatus = new ToolExecutionStatus({ phase: "running" });
    this.currentResult = new ToolResultResponse({ status: "pending" });
  }
}

/** The reference's RecordingAction: start -> ToolAccepted({"executor": "arm"}). */
export class RecordingAction extends RecordingExecution {
  protected readonly acceptedDetails = { executor: "arm" };
  protected readonly command = "cancel" as const;

  get cancelCalls(): number {
    return this.controlCalls;
  }

  cancel(
    key: ToolExecutionKey,
    reason: string | undefined,
    _options: ToolCallOptions,
  ): Promise<ToolControlResponse> {
    return Promise.resolve(this.control(key, reason));
  }
}

/** The reference's RecordingSession: start -> ToolAccepted({"service": "policy"}). */
export class RecordingSession extends RecordingExecution {
  protected readonly acceptedDetails = { service: "policy" };
  protected readonly command = "stop" as const;

  get stopCalls(): number {
    return this.controlCalls;
  }

  stop(
    key: ToolExecutionKey,
    reason: string | undefined,
    _options: ToolCallOptions,
  ): Promise<ToolControlResponse> {
    return Promise.resolve(this.control(key, reason));
  }
}

/** ToolAccepted the recording providers answer. */
export const ACTION_ACCEPTED = new ToolAccepted({ details: { executor: "arm" } });
/** ToolAccepted the recording session answers. */
export const SESSION_ACCEPTED = new ToolAccepted({ details: { service: "policy" } });

// ---------------------------------------------------------------------------------------------
// Descriptors and handlers

/** "vision.yolo" with detect/query. */
export function queryDescriptor(): ToolEndpointDescriptor {
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "vision.yolo",
    operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  });
}

/** Extra handler options for the builders. */
export type HandlerExtras = Partial<Omit<ToolEndpointHandlerOptions, "operations">>;

/** A Query handler for "vision.yolo"/detect, instance "instance-1". */
export function queryHandler(query: unknown, extras: HandlerExtras = {}): ToolEndpointHandler {
  return new ToolEndpointHandler(queryDescriptor(), {
    endpointInstanceId: INSTANCE,
    logger: silentLogger,
    ...extras,
    operations: { detect: query as FakeQuery },
  });
}

/** Options of the Action/Session handler builders (the reference's `_action_handler`). */
export interface ExecutionHandlerOptions extends HandlerExtras {
  readonly maxConcurrency?: number;
}

/** "motion.arm" with move/action (cancellable, status_supported). */
export function actionDescriptor(maxConcurrency = 1): ToolEndpointDescriptor {
  return cellDescriptor({ endpointId: "motion.arm", query: null, session: null, maxConcurrency });
}

/** "policy.runner" with serve/session (stoppable, status_supported). */
export function sessionDescriptor(maxConcurrency = 1): ToolEndpointDescriptor {
  return cellDescriptor({ endpointId: "policy.runner", query: null, action: null, maxConcurrency });
}

/** The reference's `_action_handler(action, ...)`. */
export function actionHandler(
  action: unknown,
  options: ExecutionHandlerOptions = {},
): ToolEndpointHandler {
  const { maxConcurrency, ...extras } = options;
  return new ToolEndpointHandler(actionDescriptor(maxConcurrency ?? 1), {
    endpointInstanceId: INSTANCE,
    logger: silentLogger,
    ...extras,
    operations: { move: action as FakeAction },
  });
}

/** The reference's `_session_handler(session, ...)`. */
export function sessionHandler(
  session: unknown,
  options: ExecutionHandlerOptions = {},
): ToolEndpointHandler {
  const { maxConcurrency, ...extras } = options;
  return new ToolEndpointHandler(sessionDescriptor(maxConcurrency ?? 1), {
    endpointInstanceId: INSTANCE,
    logger: silentLogger,
    ...extras,
    operations: { serve: session as FakeSession },
  });
}

// ---------------------------------------------------------------------------------------------
// Contexts and requests

/** Options of the context and request builders. */
export interface ContextOptions {
  readonly invocationId?: string;
  readonly attemptId?: string;
  readonly deadlineMs?: number;
  readonly callerId?: string;
}

/** ctx(endpoint, operation): tool "forge.tool.detect", implementation "yolo". */
export function ctx(endpointId: string, operation: string, options: ContextOptions = {}) {
  return new ToolContext({
    executionKey: new ToolExecutionKey({
      invocationId: options.invocationId ?? "invocation-1",
      attemptId: options.attemptId ?? "attempt-1",
    }),
    toolId: "forge.tool.detect",
    implementationId: "yolo",
    endpointId,
    operation,
    callerId: options.callerId,
    deadlineMs: options.deadlineMs,
    metadata: {},
  });
}

/** The execution key of `invocationId` / attempt-1. */
export function key(invocationId = "invocation-1", attemptId = "attempt-1"): ToolExecutionKey {
  return new ToolExecutionKey({ invocationId, attemptId });
}

/** Which endpoint/operation/arguments a request family uses. */
export interface Target {
  readonly endpointId: string;
  readonly operation: string;
  readonly arguments: Record<string, unknown>;
}

/** The Query target: vision.yolo/detect, {"class": "cube"}. */
export const QUERY: Target = {
  endpointId: "vision.yolo",
  operation: "detect",
  arguments: { class: "cube" },
};
/** The Action target: motion.arm/move, {"target": "home"}. */
export const ACTION: Target = {
  endpointId: "motion.arm",
  operation: "move",
  arguments: { target: "home" },
};
/** The Session target: policy.runner/serve, {}. */
export const SESSION: Target = { endpointId: "policy.runner", operation: "serve", arguments: {} };

/** Options of the request builders. */
export interface RequestOptions extends ContextOptions {
  readonly requestId?: string;
  /** `null` leaves the instance out (unresolved); default "instance-1". */
  readonly endpointInstanceId?: string | null;
  readonly arguments?: Record<string, unknown>;
}

function instanceOf(options: RequestOptions): string | undefined {
  return options.endpointInstanceId === null ? undefined : (options.endpointInstanceId ?? INSTANCE);
}

/** A tool.invoke.request for `target`. */
export function invokeFor(target: Target, options: RequestOptions = {}): ToolEnvelope {
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: options.arguments ?? target.arguments }),
    ctx(target.endpointId, target.operation, options),
    { requestId: options.requestId ?? "request-1", endpointInstanceId: instanceOf(options) },
  );
}

/** A tool.status.request for `target`. */
export function statusFor(target: Target, options: RequestOptions = {}): ToolEnvelope {
  return makeStatusRequestEnvelope(ctx(target.endpointId, target.operation, options), {
    requestId: options.requestId ?? "status-1",
    endpointInstanceId: instanceOf(options),
  });
}

/** A tool.result.request for `target`. */
export function resultFor(target: Target, options: RequestOptions = {}): ToolEnvelope {
  return makeResultRequestEnvelope(ctx(target.endpointId, target.operation, options), {
    requestId: options.requestId ?? "result-1",
    endpointInstanceId: instanceOf(options),
  });
}

/** A tool.control.request for `target`. */
export function controlFor(
  target: Target,
  command: ToolControlCommand,
  options: RequestOptions & { readonly reason?: string } = {},
): ToolEnvelope {
  return makeControlRequestEnvelope(command, ctx(target.endpointId, target.operation, options), {
    requestId: options.requestId ?? "control-1",
    endpointInstanceId: instanceOf(options),
    reason: options.reason,
  });
}

/** The reference's `_invoke_request()`: detect on vision.yolo, {"class": "cube"}, request-1. */
export function invokeRequest(options: RequestOptions = {}): ToolEnvelope {
  return invokeFor(QUERY, options);
}

/** The reference's `_action_request(request_id, invocation_id)`. */
export function actionRequest(
  requestId = "request-1",
  invocationId = "invocation-1",
): ToolEnvelope {
  return invokeFor(ACTION, { requestId, invocationId });
}

/** The reference's `_session_request(request_id, invocation_id)`. */
export function sessionRequest(
  requestId = "request-1",
  invocationId = "invocation-1",
): ToolEnvelope {
  return invokeFor(SESSION, { requestId, invocationId });
}

/** The init object of an envelope, for a modified copy. */
export function withFields(
  envelope: ToolEnvelope,
  changes: Partial<Record<keyof ToolEnvelopeInit, unknown>>,
): ToolEnvelope {
  const init: ToolEnvelopeInit = {
    protocol: envelope.protocol,
    messageType: envelope.messageType,
    payload: envelope.payload,
    requestId: envelope.requestId,
    invocationId: envelope.invocationId,
    attemptId: envelope.attemptId,
    endpointId: envelope.endpointId,
    endpointInstanceId: envelope.endpointInstanceId,
    operation: envelope.operation,
    sequence: envelope.sequence,
  };
  return new ToolEnvelope({ ...init, ...changes } as ToolEnvelopeInit);
}

// ---------------------------------------------------------------------------------------------
// Decoding responses

function expectType(envelope: ToolEnvelope, messageType: string): void {
  assertStrictEquals(
    envelope.messageType,
    messageType,
    `expected ${messageType}, got ${envelope.messageType}: ${JSON.stringify(envelope.payload)}`,
  );
}

/** The decoded value of a tool.invoke.response. */
export function invokeOutcome(envelope: ToolEnvelope): InvokeResponse {
  expectType(envelope, "tool.invoke.response");
  return invokeResponseFromPayload(envelope.payload);
}

/** The ToolResult of a completed tool.invoke.response. */
export function completedResult(envelope: ToolEnvelope): ToolResult {
  const outcome = invokeOutcome(envelope);
  if (!(outcome instanceof ToolResult)) {
    throw new AssertionError(`expected a completed outcome, got ${JSON.stringify(outcome)}`);
  }
  return outcome;
}

/** The ToolError of a rejected tool.invoke.response. */
export function rejectedError(envelope: ToolEnvelope): ToolError {
  const outcome = invokeOutcome(envelope);
  if (!(outcome instanceof ToolError)) {
    throw new AssertionError(`expected a rejected outcome, got ${JSON.stringify(outcome)}`);
  }
  return outcome;
}

/** The ToolAccepted of an accepted tool.invoke.response. */
export function acceptedOutcome(envelope: ToolEnvelope): ToolAccepted {
  const outcome = invokeOutcome(envelope);
  if (!(outcome instanceof ToolAccepted)) {
    throw new AssertionError(`expected an accepted outcome, got ${JSON.stringify(outcome)}`);
  }
  return outcome;
}

/** The status of a tool.status.response. */
export function statusOf(envelope: ToolEnvelope): ToolExecutionStatus {
  expectType(envelope, "tool.status.response");
  return statusResponseFromPayload(envelope.payload);
}

/** The lookup of a tool.result.response. */
export function resultOf(envelope: ToolEnvelope): ToolResultResponse {
  expectType(envelope, "tool.result.response");
  return resultResponseFromPayload(envelope.payload);
}

/** The answer of a tool.control.response. */
export function controlOf(envelope: ToolEnvelope): ToolControlResponse {
  expectType(envelope, "tool.control.response");
  return controlResponseFromPayload(envelope.payload);
}

/** The error of a tool.error. */
export function errorOf(envelope: ToolEnvelope): ToolError {
  expectType(envelope, "tool.error");
  return errorFromPayload(envelope.payload);
}

/** The event of a tool.event. */
export function eventOf(envelope: ToolEnvelope): ToolEvent {
  expectType(envelope, "tool.event");
  return eventFromPayload(envelope.payload);
}

/** The unknown result of a start that failed after dispatch. */
export const UNKNOWN_START_RESULT = new ToolResult({
  status: "unknown",
  error: new ToolError({
    code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    message: "Start failed after dispatch; the execution outcome cannot be recovered",
    retryable: false,
  }),
});

// ---------------------------------------------------------------------------------------------
// Assertions and async utilities

/** What to check of a {@linkcode ToolProtocolError} beyond its code. */
export interface ProtocolExpectation {
  /** The exact path; `null` means none. */
  readonly path?: string | null;
  /** A fragment of the message. */
  readonly includes?: string;
  /** The exact message. */
  readonly message?: string;
}

/** Checks that `error` is a ToolProtocolError with `code` and the expectation. */
export function checkProtocolError(
  error: unknown,
  code: string,
  expected: ProtocolExpectation = {},
): ToolProtocolError {
  if (!(error instanceof ToolProtocolError)) {
    const name = error instanceof Error ? error.constructor.name : typeof error;
    throw new AssertionError(`expected ToolProtocolError ${code}, got ${name}: ${String(error)}`);
  }
  const where = String(error);
  assertStrictEquals(error.code, code, `code of ${where}`);
  if (expected.path !== undefined) {
    assertStrictEquals(error.path, expected.path ?? undefined, `path of ${where}`);
  }
  if (expected.message !== undefined) {
    assertStrictEquals(error.message, expected.message, `message of ${where}`);
  }
  if (expected.includes !== undefined && !error.message.includes(expected.includes)) {
    throw new AssertionError(`expected ${where} to include ${expected.includes}`);
  }
  return error;
}

/** Awaits `fn()`, expects a ToolProtocolError with `code`, and returns it. */
export async function assertRejectsProtocol(
  fn: () => PromiseLike<unknown>,
  code: string,
  expected: ProtocolExpectation = {},
): Promise<ToolProtocolError> {
  let error: unknown;
  let rejected = false;
  try {
    await fn();
  } catch (caught) {
    error = caught;
    rejected = true;
  }
  if (!rejected) throw new AssertionError(`expected ${code} to be raised`);
  return checkProtocolError(error, code, expected);
}

/** Awaits `promise` and returns what it rejected with (fails when it resolves). */
export async function rejectionOf(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new AssertionError("expected the promise to reject");
}

/** A promise with its resolve function exposed, for gating provider code. */
export function gate(): { promise: Promise<void>; open: () => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  return { promise, open: () => resolve() };
}

/** Waits (bounded) until `condition()` holds, yielding to timers between checks. */
export async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new AssertionError("condition was never met");
    await delay(1);
  }
}

/** Whether `promise` has settled, checked after a scheduler turn. */
export async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(() => (done = true), () => (done = true));
  await delay(5);
  return done;
}

/**
 * Runs `fn` while listening for `unhandledrejection`, then waits a scheduler turn and asserts
 * none fired.
 */
export async function withoutUnhandledRejections(fn: () => Promise<void>): Promise<void> {
  const reasons: unknown[] = [];
  const listener = (event: PromiseRejectionEvent) => {
    event.preventDefault();
    reasons.push(event.reason);
  };
  globalThis.addEventListener("unhandledrejection", listener);
  try {
    await fn();
    await delay(20);
  } finally {
    globalThis.removeEventListener("unhandledrejection", listener);
  }
  if (reasons.length > 0) {
    throw new AssertionError(
      `unhandled rejections: ${reasons.map((reason) => String(reason)).join("; ")}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Shutdown providers: Actions and Sessions that keep running after acceptance and either end when
// their signal aborts or ignore it.

/**
 * What a running execution does when its signal aborts:
 * - `"end"`: after `endDelayMs`, it retains a `cancelled` (Action) / `stopped` (Session) result
 *   and emits the matching terminal event;
 * - `"ignore"`: nothing; it runs on until the handler gives up on it.
 */
export type OnAbort = "end" | "ignore";

/** One execution as the provider sees it. */
export interface Running {
  readonly context: ToolContext;
  readonly events: ToolEventEmitter;
  readonly signal: AbortSignal;
  /** The emit of its terminal event, once started. */
  ending?: Promise<void>;
}

/** An Action or Session provider whose executions run until their signal aborts (or forever). */
export class LongRunning {
  readonly executions = new Map<string, Running>();
  readonly results = new Map<string, ToolResult>();
  readonly #semantics: "action" | "session";
  readonly #onAbort: OnAbort;
  readonly #endDelayMs: number;
  readonly #acceptedDetails: Record<string, unknown>;
  readonly #earlyEvents: number;

  constructor(
    semantics: "action" | "session",
    onAbort: OnAbort,
    options: {
      /** How long after the abort the execution ends (`"end"`; default 10 ms). */
      endDelayMs?: number;
      /** The details of every acceptance (default `{}`). */
      acceptedDetails?: Record<string, unknown>;
      /** `progress` events emitted during start(), before the acceptance (default 0). */
      earlyEvents?: number;
    } = {},
  ) {
    this.#semantics = semantics;
    this.#onAbort = onAbort;
    this.#endDelayMs = options.endDelayMs ?? 10;
    this.#acceptedDetails = options.acceptedDetails ?? {};
    this.#earlyEvents = options.earlyEvents ?? 0;
  }

  async start(
    _request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    { signal }: ToolCallOptions,
  ): Promise<ToolAccepted> {
    for (let step = 0; step < this.#earlyEvents; step++) {
      await events.emit(new ToolEvent({ type: "progress", data: { step } }));
    }
    const running: Running = { context, events, signal };
    this.executions.set(context.executionKey.id, running);
    if (this.#onAbort === "end") {
      signal.addEventListener("abort", () => {
        setTimeout(() => {
          const ended = this.#semantics === "action" ? "cancelled" : "stopped";
          this.results.set(context.executionKey.id, new ToolResult({ status: ended }));
          running.ending = events.emit(new ToolEvent({ type: ended }));
          running.ending.catch(() => {});
        }, this.#endDelayMs);
      }, { once: true });
    }
    return new ToolAccepted({ details: this.#acceptedDetails });
  }

  cancel(): ToolControlResponse {
    return new ToolControlResponse({ command: "cancel", status: "accepted" });
  }

  stop(): ToolControlResponse {
    return new ToolControlResponse({ command: "stop", status: "accepted" });
  }

  status(key: ToolExecutionKey): ToolExecutionStatus {
    const result = this.results.get(key.id);
    if (result === undefined) return new ToolExecutionStatus({ phase: "running" });
    return new ToolExecutionStatus({
      phase: result.status === "cancelled" ? "cancelled" : "stopped",
    });
  }

  result(key: ToolExecutionKey): ToolResultResponse | Promise<ToolResultResponse> {
    const result = this.results.get(key.id);
    return result === undefined
      ? new ToolResultResponse({ status: "pending" })
      : new ToolResultResponse({ status: "available", result });
  }
}

/** The endpoint of the shutdown suites: "robot" with move/action and serve/session. */
export function robotDescriptor(maxConcurrency = 4): ToolEndpointDescriptor {
  return cellDescriptor({ endpointId: "robot", query: null, maxConcurrency });
}

/** A handler for {@linkcode robotDescriptor} with both providers. */
export function robotHandler(
  move: LongRunning,
  serve: LongRunning,
  extras: Partial<Omit<ToolEndpointHandlerOptions, "operations">> = {},
): ToolEndpointHandler {
  return new ToolEndpointHandler(robotDescriptor(), {
    endpointInstanceId: "instance-1",
    logger: silentLogger,
    ...extras,
    operations: { move, serve },
  });
}

/** The invoke, status and result requests of one execution of the robot endpoint. */
export function requests(operation: string, invocationId: string) {
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: "forge.tool.robot",
    implementationId: "robot",
    endpointId: "robot",
    operation,
  });
  const headers = (requestId: string) => ({ requestId, endpointInstanceId: "instance-1" });
  return {
    invoke: (requestId = `invoke-${invocationId}`) =>
      makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, headers(requestId)),
    status: () => makeStatusRequestEnvelope(context, headers(`status-${invocationId}`)),
    result: () => makeResultRequestEnvelope(context, headers(`result-${invocationId}`)),
  };
}

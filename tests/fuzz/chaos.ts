// Handler chaos: randomised schedules of invokes, duplicates, status, result, cancel/stop,
// provider throws, never-settling providers, early and late events, sink failures and holds,
// untrusted routes, deadlines (enforced or not) and close(), run by an interpreter against a
// real ToolEndpointHandler behind a DoraToolEndpointBinding (whose event sink is the publication
// point).
//
// Checked after every step: permits stay within [0, max_concurrency]; the ledger within its
// bound; no request is answered twice and no untrusted request at all; every answer correlates
// with its request; every event of an execution is offered to the sink after the response to
// the invoke that started it was published, with sequence numbers 0, 1, 2, … in order (a failed
// publication consumes its number and is the only way to a gap), and none after its terminal
// event; a trusted dispatchInput only ever rejects with the sink's own failure. When the ledger
// is large enough to retain every key of the schedule, a terminal status or result, once
// answered, never changes. At the end every hold is released and every deferred start settled,
// close() must return (waited for, not timed), every invoke must have been answered exactly once,
// unless its start (or the Query) never settles or the sink refused its response, and once every
// execution is observed terminal no admission permit is in use.
import fc from "fast-check";
import type { RecordBatch } from "apache-arrow";
import {
  ToolAccepted,
  type ToolCallOptions,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointError,
  ToolEndpointHandler,
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
  errorFromPayload,
  invokeResponseFromPayload,
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  resultResponseFromPayload,
  statusResponseFromPayload,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
  ToolProtocolError,
  toolResultToPayload,
  validateResponseCorrelation,
} from "../../wire.ts";
import { cellDescriptor } from "../_helpers.ts";
import {
  DoraToolEndpointBinding,
  toolEnvelopeToMessage,
  type ToolMessageArrowValue,
  toolMessageToEnvelope,
} from "../../dora.ts";
import {
  type AnyTarget,
  type Budget,
  describeError,
  type FuzzTarget,
  invariant,
  runTarget,
  type TargetReport,
  tick,
} from "./_common.ts";
import { canon } from "./wire.ts";
import { deadline, DeadlineError } from "@std/async";

const ENDPOINT = "chaos.arm";
/** A close() still pending after this long never returns (its grace is 10 ms): a hang. */
const CLOSE_HANG_GUARD_MS = 30_000;
const INSTANCE = "instance-1";
type ExecOp = "move" | "serve";
type Terminal = "completed" | "failed" | "cancelled" | "stopped";

/** How a provider's start behaves. */
type StartMode = "sync" | "defer" | "throw" | "never";

/** One step of a schedule. Keys are indices into the schedule's key pool (modulo its size). */
export type Step =
  | {
    readonly kind: "invoke";
    readonly key: number;
    readonly op: ExecOp;
    readonly start: StartMode;
    readonly early: number;
    /** Invoke an already-known key under the other operation (an execution conflict). */
    readonly conflict: boolean;
    /** deadline_ms relative to now, in ms (negative: already passed), or none. */
    readonly deadline: number | null;
  }
  | {
    readonly kind: "settle";
    readonly key: number;
    readonly how: "accept" | "reject" | "throw" | "bad";
  }
  | { readonly kind: "advance"; readonly key: number }
  | { readonly kind: "finish"; readonly key: number; readonly phase: Terminal }
  | {
    readonly kind: "emit";
    readonly key: number;
    readonly event: "progress" | "terminal" | "wrong";
  }
  | { readonly kind: "status"; readonly key: number; readonly mismatch: boolean }
  | { readonly kind: "result"; readonly key: number; readonly mismatch: boolean }
  | {
    readonly kind: "control";
    readonly key: number;
    readonly mismatch: boolean;
    readonly command: "cancel" | "stop";
  }
  | { readonly kind: "fault"; readonly key: number; readonly call: "status" | "result" | "control" }
  | {
    readonly kind: "query";
    readonly mode: "sync" | "throw" | "never";
    readonly deadline: number | null;
  }
  | { readonly kind: "sink"; readonly what: "fail" | "hold" | "release" }
  | {
    readonly kind: "untrusted";
    readonly key: number;
    readonly how: "endpoint" | "instance" | "operation";
  }
  | { readonly kind: "close" }
  | { readonly kind: "tick"; readonly turns: number };

/** A schedule: the handler's configuration and its steps. */
export interface Schedule {
  /** The handler enforces deadline_ms (the provider's signal aborts at the deadline). */
  readonly enforceDeadlines: boolean;
  readonly maxConcurrency: number;
  readonly maxRetained: number;
  readonly maxEarlyEvents: number;
  readonly keys: number;
  readonly steps: readonly Step[];
}

const keyArb = fc.nat({ max: 7 });
const deadlineArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  fc.integer({ min: -5, max: 30 }),
);

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant("invoke" as const),
      key: keyArb,
      op: fc.constantFrom("move", "serve" as const),
      start: fc.constantFrom("sync", "sync", "defer", "defer", "defer", "throw", "never" as const),
      early: fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 4 })),
      conflict: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
      deadline: deadlineArb,
    }),
  },
  {
    weight: 9,
    arbitrary: fc.record({
      kind: fc.constant("settle" as const),
      key: keyArb,
      how: fc.constantFrom("accept", "accept", "reject", "throw", "bad" as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), key: keyArb }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("finish" as const),
      key: keyArb,
      phase: fc.constantFrom("completed", "failed", "cancelled", "stopped" as const),
    }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("emit" as const),
      key: keyArb,
      event: fc.constantFrom("progress", "progress", "terminal", "wrong" as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("status" as const),
      key: keyArb,
      mismatch: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, fc.constant(true)),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("result" as const),
      key: keyArb,
      mismatch: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, fc.constant(true)),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("control" as const),
      key: keyArb,
      mismatch: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, fc.constant(true)),
      command: fc.constantFrom("cancel", "stop" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("fault" as const),
      key: keyArb,
      call: fc.constantFrom("status", "result", "control" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("query" as const),
      mode: fc.constantFrom("sync", "sync", "throw", "never" as const),
      deadline: deadlineArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("sink" as const),
      what: fc.constantFrom("fail", "hold", "release" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("untrusted" as const),
      key: keyArb,
      how: fc.constantFrom("endpoint", "instance", "operation" as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "close" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "tick" as const, turns: 1 }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("tick" as const),
      turns: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

/** Random schedules: small handlers, few keys, 5 to 40 steps. */
export function scheduleArb(): fc.Arbitrary<Schedule> {
  return fc.record({
    enforceDeadlines: fc.boolean(),
    maxConcurrency: fc.integer({ min: 1, max: 3 }),
    maxRetained: fc.integer({ min: 1, max: 8 }),
    maxEarlyEvents: fc.integer({ min: 1, max: 3 }),
    keys: fc.integer({ min: 1, max: 6 }),
    steps: fc.array(stepArb, { minLength: 5, maxLength: 40 }),
  });
}

// ---------------------------------------------------------------------------------------------
// The fake providers

/** Thrown by the sink on command. */
export class SinkFailure extends Error {
  override name = "SinkFailure";
}

const NOT_FOUND = new ToolError({ code: "CHAOS_NOT_FOUND", message: "unknown execution" });
const ALREADY = new ToolError({ code: "CHAOS_ALREADY_STARTED", message: "started before" });
const REJECTED = new ToolError({ code: "CHAOS_REJECTED", message: "start rejected" });
const FAILURE = new ToolError({ code: "CHAOS_FAILED", message: "execution failed" });

const TERMINAL_RESULT: Record<Terminal, () => ToolResult> = {
  completed: () => new ToolResult({ status: "succeeded", outputs: { done: true } }),
  failed: () => new ToolResult({ status: "failed", error: FAILURE }),
  cancelled: () => new ToolResult({ status: "cancelled" }),
  stopped: () => new ToolResult({ status: "stopped" }),
};
const TERMINAL_EVENT: Record<
  Terminal,
  "executor_completed" | "executor_failed" | "cancelled" | "stopped"
> = {
  completed: "executor_completed",
  failed: "executor_failed",
  cancelled: "cancelled",
  stopped: "stopped",
};

function isTerminal(phase: string): boolean {
  return phase !== "accepted" && phase !== "running" && phase !== "stopping";
}

/** What a provider knows of one execution it started. */
interface ProviderExecution {
  readonly op: ExecOp;
  phase: "accepted" | "running" | "stopping" | Terminal;
  /** The start failed: the provider forgot the execution. */
  failed: boolean;
  emitter: ToolEventEmitter;
  deferred: PromiseWithResolvers<unknown> | undefined;
  never: boolean;
}

/** The driver's record of one request it dispatched. */
interface Sent {
  readonly request: ToolEnvelope;
  readonly trusted: boolean;
  readonly invocation: string;
  /** May stay unanswered: its start (or Query) never settles. */
  mayHang: boolean;
  settled: boolean;
  rejection: unknown;
  answers: number;
  /** The sink refused this request's response. */
  responseRefused: boolean;
}

interface SinkAttempt {
  readonly envelope: ToolEnvelope;
  ok: boolean | undefined;
}

/** Runs one schedule and checks the invariants; throws on the first violation. */
export async function runSchedule(
  schedule: Schedule,
  counters: Record<string, number> = {},
): Promise<void> {
  const count = (name: string, n = 1) => (counters[name] = (counters[name] ?? 0) + n);
  const strict = schedule.keys <= schedule.maxRetained;
  const invocation = (key: number) => `inv-${key % schedule.keys}`;

  // --- provider state ----------------------------------------------------------------------
  const known = new Map<string, ProviderExecution>(); // by invocation id
  const everStarted = new Set<string>();
  const nextStart = new Map<string, { mode: StartMode; early: number }>();
  const faults = new Map<string, Set<"status" | "result" | "control">>();
  let dispatching: string | undefined; // the request id whose dispatch is running synchronously
  const startedBy = new Map<string, string>(); // invocation -> request id that started it
  const background = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    const quiet = promise.then(() => undefined, () => undefined);
    background.add(quiet);
    quiet.finally(() => background.delete(quiet));
  };

  const fault = (inv: string, call: "status" | "result" | "control") => {
    const set = faults.get(inv);
    if (set?.delete(call)) throw new Error(`provider ${call}() failed`);
  };

  const makeProvider = (op: ExecOp) => {
    const command = op === "move" ? "cancel" : "stop";
    const mine = (key: ToolExecutionKey) => {
      const execution = known.get(key.invocationId);
      return execution !== undefined && execution.op === op && !execution.failed
        ? execution
        : undefined;
    };
    const control = (key: ToolExecutionKey) => {
      fault(key.invocationId, "control");
      const execution = mine(key);
      if (execution === undefined) {
        return new ToolControlResponse({ command, status: "rejected", error: NOT_FOUND });
      }
      if (
        execution.phase !== "accepted" && execution.phase !== "running" &&
        execution.phase !== "stopping"
      ) {
        return new ToolControlResponse({ command, status: "terminal" });
      }
      execution.phase = "stopping";
      return new ToolControlResponse({ command, status: "accepted" });
    };
    return {
      async start(
        _request: ToolRequest,
        context: ToolContext,
        emitter: ToolEventEmitter,
        _options: ToolCallOptions,
      ): Promise<ToolAccepted> {
        const inv = context.invocationId;
        if (everStarted.has(inv)) throw new ToolEndpointError(ALREADY);
        everStarted.add(inv);
        if (dispatching !== undefined) startedBy.set(inv, dispatching);
        const plan = nextStart.get(inv) ?? { mode: "sync" as StartMode, early: 0 };
        const execution: ProviderExecution = {
          op,
          phase: "accepted",
          failed: false,
          emitter,
          deferred: undefined,
          never: plan.mode === "never",
        };
        known.set(inv, execution);
        if (plan.mode === "defer") execution.deferred = Promise.withResolvers<unknown>();
        for (let i = 0; i < plan.early; i++) {
          const emitted = emitter.emit(new ToolEvent({ type: "progress", data: { early: i } }));
          track(emitted);
          try {
            await emitted;
          } catch {
            // An overflow is the handler's business: the start converges to unknown.
          }
        }
        switch (plan.mode) {
          case "throw":
            execution.failed = true;
            throw new Error("provider start threw");
          case "never":
            return await new Promise<ToolAccepted>(() => {});
          case "defer":
            return await (execution.deferred!.promise as Promise<ToolAccepted>);
          default:
            return new ToolAccepted({ details: { op } });
        }
      },
      cancel: (key: ToolExecutionKey) => Promise.resolve(control(key)),
      stop: (key: ToolExecutionKey) => Promise.resolve(control(key)),
      status(key: ToolExecutionKey): Promise<ToolExecutionStatus> {
        fault(key.invocationId, "status");
        const execution = mine(key);
        if (execution === undefined) throw new ToolEndpointError(NOT_FOUND);
        const phase = execution.phase;
        return Promise.resolve(
          phase === "failed"
            ? new ToolExecutionStatus({ phase, error: FAILURE })
            : new ToolExecutionStatus({ phase }),
        );
      },
      result(key: ToolExecutionKey): Promise<ToolResultResponse> {
        fault(key.invocationId, "result");
        const execution = mine(key);
        if (execution === undefined) {
          return Promise.resolve(new ToolResultResponse({ status: "not_found" }));
        }
        const phase = execution.phase;
        if (phase === "accepted" || phase === "running" || phase === "stopping") {
          return Promise.resolve(new ToolResultResponse({ status: "pending" }));
        }
        return Promise.resolve(
          new ToolResultResponse({ status: "available", result: TERMINAL_RESULT[phase]() }),
        );
      },
    };
  };

  const handler = new ToolEndpointHandler(
    cellDescriptor({ endpointId: ENDPOINT, maxConcurrency: schedule.maxConcurrency }),
    {
      endpointInstanceId: INSTANCE,
      // The schedule's provider failures are expected: counted, not printed.
      logger: (record) => void count(`logged ${record.event}`),
      maxEarlyEvents: schedule.maxEarlyEvents,
      maxRetainedExecutions: schedule.maxRetained,
      enforceDeadlines: schedule.enforceDeadlines,
      operations: {
        detect: {
          query(request: ToolRequest): Promise<ToolResult> | ToolResult {
            const mode = request.arguments.mode;
            if (mode === "throw") throw new Error("query threw");
            if (mode === "never") return new Promise<ToolResult>(() => {});
            return new ToolResult({ status: "succeeded", outputs: {} });
          },
        },
        move: makeProvider("move"),
        serve: makeProvider("serve"),
      },
    },
  );

  let violation: unknown;
  const recordViolation = (fn: () => void) => {
    try {
      fn();
    } catch (error) {
      violation ??= error;
    }
  };

  // --- the sink ----------------------------------------------------------------------------
  let failNext = 0;
  let hold: PromiseWithResolvers<void> | undefined;
  const attempts: SinkAttempt[] = [];
  const answered: ToolEnvelope[] = []; // every answer, in publication order
  const sent = new Map<string, Sent>();
  const sink = async (batch: RecordBatch) => {
    const envelope = toolMessageToEnvelope(batch);
    const attempt: SinkAttempt = { envelope, ok: undefined };
    attempts.push(attempt);
    recordViolation(() => checkEventOffer(envelope));
    if (hold !== undefined) await hold.promise;
    if (failNext > 0) {
      failNext--;
      attempt.ok = false;
      if (envelope.messageType !== "tool.event") {
        const request = sent.get(envelope.requestId!);
        if (request !== undefined) request.responseRefused = true;
      }
      count("sink failures injected");
      throw new SinkFailure("sink refused the message");
    }
    attempt.ok = true;
    recordViolation(() => publish(envelope));
  };
  const binding = new DoraToolEndpointBinding(handler, {
    eventSink: sink,
    logger: () => void count("endpoint failures reported"),
  });

  // --- observations and invariants ---------------------------------------------------------
  const terminalStatus = new Map<string, string>();
  const terminalResult = new Map<string, string>();
  const terminalEventPublished = new Set<string>();
  const eventSequence = new Map<string, number>(); // next expected sequence offered to the sink

  function checkEventOffer(envelope: ToolEnvelope) {
    if (envelope.messageType !== "tool.event") return;
    const inv = envelope.invocationId!;
    const expected = eventSequence.get(inv) ?? 0;
    invariant(
      envelope.sequence === expected,
      () => `event of ${inv} offered with sequence ${envelope.sequence}, expected ${expected}`,
    );
    eventSequence.set(inv, expected + 1);
    invariant(!terminalEventPublished.has(inv), () => `event of ${inv} after its terminal event`);
    const starter = startedBy.get(inv);
    invariant(starter !== undefined, () => `event of ${inv} whose start was not seen`);
    const response = answered.find((message) =>
      message.requestId === starter && message.messageType !== "tool.event"
    );
    invariant(
      response !== undefined,
      () => `event ${envelope.sequence} of ${inv} offered before its invoke response was published`,
    );
  }

  function publish(envelope: ToolEnvelope) {
    answered.push(envelope);
    const inv = envelope.invocationId!;
    if (envelope.messageType === "tool.event") {
      count("events published");
      const type = (envelope.payload as { type: string }).type;
      if (type !== "progress" && type !== "heartbeat") terminalEventPublished.add(inv);
      return;
    }
    const request = sent.get(envelope.requestId!);
    invariant(request !== undefined, () => `an answer to unknown request ${envelope.requestId}`);
    invariant(request.trusted, () => `untrusted request ${envelope.requestId} was answered`);
    request.answers++;
    invariant(request.answers === 1, () => `request ${envelope.requestId} answered twice`);
    validateResponseCorrelation(request.request, envelope);
    count(`answered ${envelope.messageType}`);
    observeTerminal(envelope, inv);
  }

  function observeTerminal(envelope: ToolEnvelope, inv: string) {
    if (!strict) return;
    let status: ToolExecutionStatus | undefined;
    let result: ToolResult | undefined;
    if (envelope.messageType === "tool.status.response") {
      status = statusResponseFromPayload(envelope.payload);
      const seen = terminalStatus.get(inv);
      if (seen !== undefined) {
        invariant(
          canon(envelope.payload) === seen,
          () => `terminal status of ${inv} changed: ${seen} -> ${canon(envelope.payload)}`,
        );
      }
      if (["accepted", "running", "stopping"].includes(status.phase)) return;
      terminalStatus.set(inv, canon(envelope.payload));
      return;
    }
    if (envelope.messageType === "tool.result.response") {
      const lookup = resultResponseFromPayload(envelope.payload);
      if (lookup.status === "available") result = lookup.result;
      else {
        invariant(
          !terminalResult.has(inv),
          () => `result of ${inv} became ${lookup.status} after it was available`,
        );
      }
    } else if (envelope.messageType === "tool.invoke.response") {
      const outcome = invokeResponseFromPayload(envelope.payload);
      if (outcome instanceof ToolResult) result = outcome;
    }
    if (result === undefined) return;
    const text = canon(toolResultToPayload(result));
    const seen = terminalResult.get(inv);
    invariant(seen === undefined || seen === text, () => `terminal result of ${inv} changed`);
    terminalResult.set(inv, text);
  }

  function checkState() {
    const state = handler.state;
    for (const op of ["move", "serve"]) {
      const used = state.permitsInUse[op];
      invariant(
        used >= 0 && used <= schedule.maxConcurrency,
        () => `permits of ${op}: ${used} of ${schedule.maxConcurrency}`,
      );
    }
    invariant(
      state.retainedExecutions <= schedule.maxRetained,
      () => `ledger holds ${state.retainedExecutions} of ${schedule.maxRetained}`,
    );
    invariant(state.activeQueries.detect >= 0, "negative active queries");
  }

  // --- requests ----------------------------------------------------------------------------
  let requestCount = 0;
  const opOf = new Map<string, ExecOp>(); // the operation a key was first invoked with

  function context(
    inv: string,
    operation: string,
    endpointId = ENDPOINT,
    deadline: number | null = null,
  ): ToolContext {
    return new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId: inv, attemptId: "a-1" }),
      toolId: "forge.tool.chaos",
      implementationId: "chaos",
      endpointId,
      operation,
      deadlineMs: deadline === null ? undefined : Math.max(0, Date.now() + deadline),
    });
  }

  function send(request: ToolEnvelope, trusted: boolean, mayHang = false) {
    const record: Sent = {
      request,
      trusted,
      invocation: request.invocationId!,
      mayHang,
      settled: false,
      rejection: undefined,
      answers: 0,
      responseRefused: false,
    };
    sent.set(request.requestId!, record);
    dispatching = request.requestId;
    let promise: Promise<RecordBatch[]>;
    try {
      promise = binding.dispatchInput(toolEnvelopeToMessage(request) as ToolMessageArrowValue);
    } finally {
      dispatching = undefined;
    }
    const done = promise.then(
      (batches) => {
        record.settled = true;
        for (const batch of batches) publish(toolMessageToEnvelope(batch));
      },
      (error) => {
        record.settled = true;
        record.rejection = error ?? new Error("undefined rejection");
        if (trusted) {
          invariant(
            error instanceof SinkFailure,
            () => `trusted request ${request.requestId} rejected: ${describeError(error)}`,
          );
          count("dispatches rejected by the sink");
        } else {
          invariant(
            error instanceof ToolProtocolError,
            () => `untrusted request raised ${describeError(error)}`,
          );
          count(`untrusted raised ${error.code}`);
        }
      },
    );
    track(done);
    donePromises.push(done);
  }
  const donePromises: Promise<void>[] = [];
  const guard = (promise: Promise<void>) =>
    promise.catch((error) => {
      violation ??= error;
    });

  function newRequestId() {
    return `req-${++requestCount}`;
  }

  function executionOp(inv: string, mismatch: boolean): ExecOp {
    const op = opOf.get(inv) ?? "move";
    return mismatch ? (op === "move" ? "serve" : "move") : op;
  }

  let closing: Promise<void> | undefined;

  async function step(s: Step) {
    switch (s.kind) {
      case "invoke": {
        const inv = invocation(s.key);
        if (!opOf.has(inv)) opOf.set(inv, s.op);
        if (!nextStart.has(inv)) nextStart.set(inv, { mode: s.start, early: s.early });
        const op = s.conflict ? (opOf.get(inv) === "move" ? "serve" : "move") : opOf.get(inv)!;
        const request = makeInvokeRequestEnvelope(
          new ToolRequest({ arguments: { step: requestCount } }),
          context(inv, op, ENDPOINT, s.deadline),
          { requestId: newRequestId(), endpointInstanceId: INSTANCE },
        );
        const plan = nextStart.get(inv)!;
        send(request, true, plan.mode === "never");
        count(sentBefore(inv) ? "duplicate invokes" : "invokes");
        break;
      }
      case "settle": {
        const execution = known.get(pick(s.key, (e) => e.deferred !== undefined));
        const deferred = execution?.deferred;
        if (execution === undefined || deferred === undefined) break;
        execution.deferred = undefined;
        if (s.how === "accept") deferred.resolve(new ToolAccepted());
        else if (s.how === "bad") {
          execution.failed = true;
          deferred.resolve({ not: "a ToolAccepted" });
        } else {
          execution.failed = true;
          deferred.reject(
            s.how === "reject" ? new ToolEndpointError(REJECTED) : new Error("start rejected"),
          );
        }
        count(`starts settled (${s.how})`);
        break;
      }
      case "advance": {
        const execution = known.get(pick(s.key, (e) => e.phase === "accepted"));
        if (execution?.phase === "accepted") execution.phase = "running";
        break;
      }
      case "finish": {
        const execution = known.get(pick(s.key, (e) => !e.failed && !isTerminal(e.phase)));
        if (execution === undefined || execution.failed) break;
        if (!["accepted", "running", "stopping"].includes(execution.phase)) break;
        execution.phase = s.phase;
        count("executions finished");
        break;
      }
      case "emit": {
        const execution = known.get(pick(s.key, () => true));
        if (execution === undefined) break;
        let type: ToolEvent["type"] = "progress";
        const phase = execution.phase;
        const terminal = phase === "accepted" || phase === "running" || phase === "stopping"
          ? "completed"
          : phase;
        if (s.event === "terminal") type = TERMINAL_EVENT[terminal];
        if (s.event === "wrong") {
          type = TERMINAL_EVENT[terminal === "completed" ? "cancelled" : "completed"];
        }
        const emitted = execution.emitter.emit(new ToolEvent({ type, data: { emit: true } }));
        emitted.then(
          () => count(`emits resolved (${s.event})`),
          () => count(`emits rejected (${s.event})`),
        );
        track(emitted);
        break;
      }
      case "status":
      case "result":
      case "control": {
        const inv = s.key < 6 ? pick(s.key, () => true) : invocation(s.key);
        const op = executionOp(inv, s.mismatch);
        const options = { requestId: newRequestId(), endpointInstanceId: INSTANCE };
        const request = s.kind === "status"
          ? makeStatusRequestEnvelope(context(inv, op), options)
          : s.kind === "result"
          ? makeResultRequestEnvelope(context(inv, op), options)
          : makeControlRequestEnvelope(s.command, context(inv, op), options);
        send(request, true);
        count(`${s.kind} requests`);
        break;
      }
      case "fault": {
        const inv = invocation(s.key);
        if (!faults.has(inv)) faults.set(inv, new Set());
        faults.get(inv)!.add(s.call);
        break;
      }
      case "query": {
        // The mode travels in the arguments: a refused Query (closed, deadline passed) never
        // reaches the provider, so a queue of modes would go out of step.
        const request = makeInvokeRequestEnvelope(
          new ToolRequest({ arguments: { mode: s.mode } }),
          context(`query-${requestCount}`, "detect", ENDPOINT, s.deadline),
          { requestId: newRequestId(), endpointInstanceId: INSTANCE },
        );
        send(request, true, s.mode === "never");
        count("queries");
        break;
      }
      case "sink":
        if (s.what === "fail") failNext++;
        else if (s.what === "hold") hold ??= Promise.withResolvers<void>();
        else {
          hold?.resolve();
          hold = undefined;
        }
        break;
      case "untrusted": {
        const inv = invocation(s.key);
        const op = executionOp(inv, false);
        const options = {
          requestId: newRequestId(),
          endpointInstanceId: s.how === "instance" ? "instance-2" : INSTANCE,
        };
        const request = makeStatusRequestEnvelope(
          context(
            inv,
            s.how === "operation" ? "undeclared" : op,
            s.how === "endpoint" ? "chaos.other" : ENDPOINT,
          ),
          options,
        );
        send(request, false);
        break;
      }
      case "close":
        if (closing === undefined) {
          closing = handler.close({ graceMs: 5 });
          track(closing);
          count("closes");
        }
        break;
      case "tick":
        for (let i = 0; i < s.turns; i++) await tick();
        break;
    }
  }

  /** The invocation of the key-th known execution that passes `filter` (else of key itself). */
  function pick(key: number, filter: (execution: ProviderExecution) => boolean): string {
    const candidates = [...known].filter(([, execution]) => filter(execution));
    if (candidates.length === 0) return invocation(key);
    return candidates[key % candidates.length][0];
  }

  function sentBefore(inv: string): boolean {
    let n = 0;
    for (const record of sent.values()) {
      if (record.invocation === inv && record.request.messageType === "tool.invoke.request") n++;
    }
    return n > 1;
  }

  const onRejection = (event: PromiseRejectionEvent) => {
    // Rejections of tracked promises are handled; anything else is a harness or handler bug.
    violation ??= new Error(`unhandled rejection: ${describeError(event.reason)}`);
    event.preventDefault();
  };
  globalThis.addEventListener("unhandledrejection", onRejection);
  try {
    for (const s of schedule.steps) {
      await step(s);
      await tick();
      for (const done of donePromises.splice(0)) guard(done);
      checkState();
      if (violation !== undefined) throw violation;
    }

    // --- finale: release everything that can settle, then close -----------------------------
    hold?.resolve();
    hold = undefined;
    failNext = 0;
    for (const execution of known.values()) {
      if (execution.deferred !== undefined) {
        execution.deferred.resolve(new ToolAccepted());
        execution.deferred = undefined;
      }
    }
    const quiesce = async () => {
      for (let i = 0; i < 20; i++) {
        await tick();
        checkState();
        if ([...sent.values()].every((r) => r.settled || r.mayHang || hangsOn(r))) break;
      }
    };
    await quiesce();
    // Every execution ends (the provider finishes it and a status request observes that, also
    // for a start that never settles): then no permit is in use any more. A close() whose grace
    // ran out with provider calls pending abandons them, and the handler calls no provider after
    // that (status is answered FORGE_ENDPOINT_UNAVAILABLE): then an execution cannot be observed
    // terminal any more, and its permit stays (no new execution is admitted after close anyway).
    faults.clear();
    const finale: string[] = [];
    for (const [inv, execution] of known) {
      if (execution.failed) continue;
      if (!isTerminal(execution.phase)) execution.phase = "completed";
      const request = makeStatusRequestEnvelope(context(inv, execution.op), {
        requestId: newRequestId(),
        endpointInstanceId: INSTANCE,
      });
      finale.push(request.requestId!);
      send(request, true);
    }
    await quiesce();
    const abandoned = finale.some((id) => {
      const answer = answered.find((m) => m.requestId === id);
      return answer?.messageType === "tool.error" &&
        errorFromPayload(answer.payload).code === "FORGE_ENDPOINT_UNAVAILABLE";
    });
    if (!abandoned) {
      for (const op of ["move", "serve"] as const) {
        const used = handler.state.permitsInUse[op];
        invariant(
          used === 0,
          () => `${used} ${op} permits still in use after every execution ended`,
        );
      }
      count("permits all returned");
    } else {
      invariant(closing !== undefined, "provider calls were abandoned without a close()");
      count("permit check skipped (provider calls abandoned by close)");
    }
    // close() returns once its grace has run out (about twice graceMs): waited for, not timed,
    // so a loaded machine cannot fail it; how long the schedule took is the runner's time bound.
    // The guard only turns a close() that never returns into a report instead of a hung run.
    try {
      await deadline(handler.close({ graceMs: 10 }), CLOSE_HANG_GUARD_MS);
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      throw new Error(`close({ graceMs: 10 }) did not return in ${CLOSE_HANG_GUARD_MS} ms`);
    }
    if (closing !== undefined) await closing;
    for (let i = 0; i < 3; i++) await tick();
    checkState();
    // After close: new executions are refused, and still answered.
    const late = makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("after-close", "move"),
      { requestId: newRequestId(), endpointInstanceId: INSTANCE },
    );
    send(late, true);
    for (let i = 0; i < 5 && !sent.get(late.requestId!)!.settled; i++) await tick();
    const refusal = answered.find((m) => m.requestId === late.requestId);
    invariant(refusal !== undefined, "an invoke after close() was not answered");
    const outcome = invokeResponseFromPayload(refusal.payload);
    invariant(
      outcome instanceof ToolError && outcome.code === "FORGE_ENDPOINT_UNAVAILABLE",
      "an invoke after close() was not refused as unavailable",
    );
    for (const done of donePromises.splice(0)) guard(done);
    if (violation !== undefined) throw violation;

    // Every request answered exactly once, unless it may hang or the sink refused it.
    for (const [id, record] of sent) {
      if (!record.trusted) {
        invariant(record.answers === 0 && record.settled, () => `untrusted ${id} not raised`);
        continue;
      }
      if (record.answers === 1) continue;
      if (record.responseRefused && record.rejection instanceof SinkFailure) {
        count("responses refused by the sink");
        continue;
      }
      if (!record.settled && (record.mayHang || hangsOn(record))) {
        count("requests waiting on never-settling providers");
        continue;
      }
      throw new Error(
        `request ${id} (${record.request.messageType}) answered ${record.answers} times, ` +
          `settled=${record.settled}, rejection=${describeError(record.rejection)}`,
      );
    }
    count("schedules passed");
    count("steps run", schedule.steps.length);
    if (strict) count("strict schedules");
  } finally {
    globalThis.removeEventListener("unhandledrejection", onRejection);
    hold?.resolve();
    for (const execution of known.values()) {
      execution.deferred?.resolve(new ToolAccepted());
    }
    await handler.close({ graceMs: 0 });
  }

  /** A request that waits on an execution whose start never settles (a duplicate of it). */
  function hangsOn(record: Sent): boolean {
    if (record.request.messageType !== "tool.invoke.request") return false;
    return known.get(record.invocation)?.never === true;
  }
}

/** The chaos target: one schedule per input. */
export const chaosTarget: FuzzTarget<Schedule> = {
  name: "handler_chaos",
  arbitrary: scheduleArb,
  check: runSchedule,
  async: true,
  batchSize: 50,
  timeBoundMs: 2000,
};

// ---------------------------------------------------------------------------------------------
// Thousands of hung calls

/** A load scenario: provider calls that never settle, then healthy traffic, then close(). */
export interface HungScenario {
  /** Queries whose provider call never settles. */
  readonly queries: number;
  /** Action invokes whose start() never settles. */
  readonly actions: number;
  /** Free Query and Action slots beyond the hung calls (max_concurrency = hung + slack). */
  readonly slack: number;
  /** Healthy Queries and Actions sent while the hung calls are pending. */
  readonly healthy: number;
  /** The handler enforces deadline_ms; the hung calls carry a far deadline when set. */
  readonly enforceDeadlines: boolean;
  /** How far ahead the hung calls' deadline lies, in ms (beyond setTimeout's range), or none. */
  readonly deadlineAhead: number | null;
  /** Hung Action invokes share one caller AbortSignal, aborted before close() when set. */
  readonly callerSignal: "none" | "kept" | "aborted";
  /** Duplicates of one hung Action invoke, waiting on its start. */
  readonly duplicates: number;
}

/** Thousands of hung calls of each kind, a little healthy traffic, and a far deadline or none. */
export function hungScenarioArb(): fc.Arbitrary<HungScenario> {
  return fc.record({
    queries: fc.integer({ min: 1000, max: 4000 }),
    actions: fc.integer({ min: 1000, max: 4000 }),
    slack: fc.integer({ min: 1, max: 3 }),
    healthy: fc.integer({ min: 1, max: 8 }),
    enforceDeadlines: fc.boolean(),
    deadlineAhead: fc.oneof(
      fc.constant(null),
      fc.constantFrom(30 * 86_400_000, 2 ** 31, Number.MAX_SAFE_INTEGER),
    ),
    callerSignal: fc.constantFrom("none", "kept", "aborted" as const),
    duplicates: fc.integer({ min: 0, max: 200 }),
  });
}

/**
 * Runs one hung-calls scenario. While the hung calls are pending: every healthy Query and Action
 * is answered (completed, accepted, its status and result), a Query beyond max_concurrency is
 * refused as FORGE_ENDPOINT_CAPACITY, the counters match, and no far deadline aborts a provider
 * signal. Then close() returns, every hung call is answered exactly once (or rejected with the
 * caller's reason when its caller abandoned it), none of them as a provider success, and every
 * provider signal is aborted, every slot and permit returned.
 */
export async function runHungScenario(
  scenario: HungScenario,
  counters: Record<string, number> = {},
): Promise<void> {
  const count = (name: string, n = 1) => (counters[name] = (counters[name] ?? 0) + n);
  const signals: AbortSignal[] = []; // of the hung provider calls
  const finished = new Set<string>();
  const done = new ToolResult({ status: "succeeded", outputs: { ok: true } });
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: ENDPOINT,
      operations: [
        new ToolOperationDescriptor({
          name: "detect",
          semantics: "query",
          maxConcurrency: scenario.queries + scenario.slack,
        }),
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          cancellable: true,
          statusSupported: true,
          maxConcurrency: scenario.actions + scenario.slack,
        }),
      ],
    }),
    {
      endpointInstanceId: INSTANCE,
      // The hung calls' failures are expected by the thousand: counted, not printed.
      logger: (record) => void count(`logged ${record.event}`),
      enforceDeadlines: scenario.enforceDeadlines,
      maxRetainedExecutions: scenario.actions + scenario.healthy + 1,
      operations: {
        detect: {
          query(request: ToolRequest, _context: ToolContext, options: ToolCallOptions) {
            if (request.arguments.hang !== true) return done;
            signals.push(options.signal);
            return new Promise<ToolResult>(() => {});
          },
        },
        move: {
          start(
            request: ToolRequest,
            _context: ToolContext,
            _events: ToolEventEmitter,
            options: ToolCallOptions,
          ) {
            if (request.arguments.hang !== true) return new ToolAccepted();
            signals.push(options.signal);
            return new Promise<ToolAccepted>(() => {});
          },
          cancel: () => new ToolControlResponse({ command: "cancel", status: "accepted" }),
          status: (key: ToolExecutionKey) =>
            new ToolExecutionStatus({ phase: finished.has(key.id) ? "completed" : "running" }),
          result: (key: ToolExecutionKey) =>
            finished.has(key.id)
              ? new ToolResultResponse({ status: "available", result: done })
              : new ToolResultResponse({ status: "pending" }),
        },
      },
    },
  );
  const deadlineMs = scenario.deadlineAhead === null
    ? undefined
    : Math.min(Number.MAX_SAFE_INTEGER, Date.now() + scenario.deadlineAhead);
  const contextOf = (invocationId: string, operation: string) =>
    new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
      toolId: "forge.tool.chaos",
      implementationId: "chaos",
      endpointId: ENDPOINT,
      operation,
      deadlineMs,
    });
  let requests = 0;
  const invoke = (invocationId: string, operation: string, hang: boolean) =>
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: { hang } }),
      contextOf(invocationId, operation),
      { requestId: `r-${requests++}`, endpointInstanceId: INSTANCE },
    );
  const ids = { endpointInstanceId: INSTANCE };
  const caller = new AbortController();
  const callerSignal = scenario.callerSignal === "none" ? undefined : caller.signal;

  // The hung calls, each tracked until it settles.
  const hung: { request: ToolEnvelope; answer: Promise<readonly ToolEnvelope[]> }[] = [];
  const outcomes = new Map<ToolEnvelope, PromiseSettledResult<readonly ToolEnvelope[]>>();
  const send = (request: ToolEnvelope, signal?: AbortSignal) => {
    const answer = handler.dispatch(request, { signal });
    hung.push({ request, answer });
    answer.then(
      (value) => outcomes.set(request, { status: "fulfilled", value }),
      (reason) => outcomes.set(request, { status: "rejected", reason }),
    );
  };
  for (let i = 0; i < scenario.queries; i++) send(invoke(`q-${i}`, "detect", true));
  for (let i = 0; i < scenario.actions; i++) send(invoke(`a-${i}`, "move", true), callerSignal);
  for (let i = 0; i < scenario.duplicates; i++) send(invoke("a-0", "move", true), callerSignal);
  const hungCalls = scenario.queries + scenario.actions;
  for (let i = 0; i < 50 && signals.length < hungCalls; i++) await tick();
  invariant(
    signals.length === hungCalls,
    () => `${signals.length} of ${hungCalls} hung calls reached their provider`,
  );
  count("hung calls", hungCalls + scenario.duplicates);

  // Healthy traffic is answered while they hang.
  for (let i = 0; i < scenario.healthy; i++) {
    const query = invoke(`healthy-q-${i}`, "detect", false);
    const [answer] = await handler.dispatch(query);
    validateResponseCorrelation(query, answer);
    const result = invokeResponseFromPayload(answer.payload);
    invariant(result instanceof ToolResult && result.status === "succeeded", "healthy Query");
    const action = invoke(`healthy-a-${i}`, "move", false);
    const [accepted] = await handler.dispatch(action);
    validateResponseCorrelation(action, accepted);
    invariant(invokeResponseFromPayload(accepted.payload) instanceof ToolAccepted, "healthy start");
    const context = contextOf(`healthy-a-${i}`, "move");
    finished.add(context.executionKey.id);
    const status = makeStatusRequestEnvelope(context, { ...ids, requestId: `s-${i}` });
    const [observed] = await handler.dispatch(status);
    validateResponseCorrelation(status, observed);
    invariant(statusResponseFromPayload(observed.payload).phase === "completed", "healthy status");
    const lookup = makeResultRequestEnvelope(context, { ...ids, requestId: `l-${i}` });
    const [retained] = await handler.dispatch(lookup);
    invariant(
      resultResponseFromPayload(retained.payload).status === "available",
      "healthy result",
    );
    count("healthy calls answered", 4);
  }
  const state = handler.state;
  invariant(state.activeQueries.detect === scenario.queries, "active Queries after healthy ones");
  invariant(state.permitsInUse.move === scenario.actions, "permits after healthy Actions ended");
  // Fill the free Query slots with more hung calls: the next one is refused as at capacity.
  for (let i = 0; i < scenario.slack; i++) send(invoke(`q-extra-${i}`, "detect", true));
  const [refused] = await handler.dispatch(invoke("q-over", "detect", false));
  const refusal = invokeResponseFromPayload(refused.payload);
  invariant(
    refusal instanceof ToolError && refusal.code === "FORGE_ENDPOINT_CAPACITY" &&
      refusal.retryable,
    () => `a Query beyond max_concurrency was answered ${JSON.stringify(refused.payload)}`,
  );
  count("queries refused at capacity");
  if (scenario.enforceDeadlines && deadlineMs !== undefined) {
    await tick();
    await tick();
    const early = signals.filter((signal) => signal.aborted).length;
    invariant(early === 0, () => `${early} far deadlines aborted their provider signal early`);
    count("far deadlines held");
  }

  // The caller gives up on its calls, then the handler closes: everything is answered.
  if (scenario.callerSignal === "aborted") caller.abort(new SinkFailure("the caller gave up"));
  await handler.close({ graceMs: 5 });
  for (let i = 0; i < 50 && outcomes.size < hung.length; i++) await tick();
  invariant(
    outcomes.size === hung.length,
    () => `${hung.length - outcomes.size} hung calls still unanswered after close()`,
  );
  for (const { request } of hung) {
    const outcome = outcomes.get(request)!;
    if (outcome.status === "rejected") {
      invariant(
        scenario.callerSignal === "aborted" && outcome.reason === caller.signal.reason &&
          request.operation === "move",
        () => `a hung ${request.operation} call rejected: ${describeError(outcome.reason)}`,
      );
      count("hung calls abandoned by their caller");
      continue;
    }
    const [answer, ...rest] = outcome.value;
    invariant(rest.length === 0, "a hung call was answered with events");
    validateResponseCorrelation(request, answer);
    const response = invokeResponseFromPayload(answer.payload);
    invariant(
      !(response instanceof ToolAccepted) &&
        !(response instanceof ToolResult && response.status === "succeeded"),
      () => `a hung call was answered as a provider success: ${JSON.stringify(answer.payload)}`,
    );
  }
  invariant(signals.every((signal) => signal.aborted), "a hung call's signal outlived close()");
  const after = handler.state;
  invariant(after.activeQueries.detect === 0, "Query slots still in use after close()");
  invariant(after.permitsInUse.move === 0, "Action permits still in use after close()");
  count("scenarios passed");
}

/** The hung-calls target: one scenario per input. */
export const hungTarget: FuzzTarget<HungScenario> = {
  name: "handler_hung_calls",
  arbitrary: hungScenarioArb,
  check: runHungScenario,
  async: true,
  batchSize: 5,
  timeBoundMs: 5000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [chaosTarget];

/** Runs every target of this module under `budget`. */
export async function run(budget: Budget): Promise<TargetReport[]> {
  return [await runTarget(chaosTarget, budget)];
}

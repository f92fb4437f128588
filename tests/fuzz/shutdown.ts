// Shutdown and undelivered acceptances (issue 11, defects 2 and 6), two targets:
//
// - `shutdown_running`: serveToolEndpoint on the loopback dataflow (fast or generic codec, with or
//   without a lifecycle against an in-memory Registry) with random running Actions and Sessions:
//   providers that end when their signal aborts (with or without a terminal event), that ignore
//   it, that finished before Stop, or whose terminal barrier hangs; then Stop, sometimes followed
//   by status and result requests. Invariants: every accepted execution ends with exactly one
//   terminal event, after its response, in sequence, and (with a lifecycle) before the
//   `endpoint.unregister`; one `unavailable` snapshot; afterwards every accepted execution's status
//   and result are terminal (`unknown` exactly when its terminal event was the handler's
//   `executor_failed`) and no permit is in use; serving ends within its bound.
// - `oversized_acceptance`: Action and Session invokes through the binding, some with an
//   acceptance too large for the message limit, some whose response send fails, with early and
//   late events and duplicates. Invariants: every invoke is answered once (or its send failed);
//   an execution whose acceptance did not reach the caller is aborted, publishes no event ever,
//   holds no permit, and reads `unknown` through a duplicate invoke, status and result; the others
//   run on and end at close() with exactly one terminal event.
import fc from "fast-check";
import type { RecordBatch } from "apache-arrow";
import {
  ToolAccepted,
  type ToolCallOptions,
  ToolContext,
  ToolControlResponse,
  ToolEndpointHandler,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  endpointStatusFromEnvelope,
  eventFromPayload,
  invokeResponseFromPayload,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  resultResponseFromPayload,
  statusResponseFromPayload,
  type ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import { EndpointRegistry } from "../../node.ts";
import { cellDescriptor } from "../_helpers.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../../dora.ts";
import {
  type AnyTarget,
  type Budget,
  type FuzzTarget,
  invariant,
  runTarget,
  type TargetReport,
  tick,
} from "./_common.ts";

const ENDPOINT = "shutdown.robot";
const INSTANCE = "instance-1";
type Op = "move" | "serve";

/**
 * What a running execution does:
 * - `end`: when its signal aborts, after `delayMs`, retains its result and emits the terminal
 *   event;
 * - `silent`: when its signal aborts, retains its result but emits nothing (the handler never
 *   learns it in time);
 * - `ignore`: runs on;
 * - `done`: finishes on its own right after acceptance (result, then terminal event);
 * - `stuck`: when its signal aborts, emits its terminal event but its result() never answers (the
 *   terminal barrier hangs).
 */
export type Behaviour = "end" | "silent" | "ignore" | "done" | "stuck";

/** The per-invocation steering, carried in the invoke's arguments. */
interface Steering {
  readonly behaviour: Behaviour;
  readonly delayMs: number;
  readonly early: number;
  readonly late: number;
  readonly blob: number;
}

/** One execution as its provider sees it. */
interface Execution {
  readonly op: Op;
  readonly signal: AbortSignal;
  readonly events: ToolEventEmitter;
  result: ToolResult | undefined;
  stuck: boolean;
}

/** The provider of both operations, steered per invocation; keeps what it started. */
class SteeredProvider {
  readonly executions = new Map<string, Execution>();
  readonly #op: Op;
  readonly #background: Set<Promise<unknown>>;

  constructor(op: Op, background: Set<Promise<unknown>>) {
    this.#op = op;
    this.#background = background;
  }

  #ended(): ToolResult {
    return new ToolResult({ status: this.#op === "move" ? "cancelled" : "stopped" });
  }

  #terminalEvent(result: ToolResult): ToolEvent {
    return new ToolEvent({
      type: result.status === "succeeded" ? "executor_completed" : result.status as "cancelled",
    });
  }

  #track(promise: Promise<unknown>): void {
    const quiet = promise.then(() => undefined, () => undefined);
    this.#background.add(quiet);
    quiet.finally(() => this.#background.delete(quiet));
  }

  async start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    { signal }: ToolCallOptions,
  ): Promise<ToolAccepted> {
    const steering = request.arguments as unknown as Steering;
    const execution: Execution = { op: this.#op, signal, events, result: undefined, stuck: false };
    this.executions.set(context.executionKey.id, execution);
    for (let i = 0; i < steering.early; i++) {
      await events.emit(new ToolEvent({ type: "progress", data: { early: i } }));
    }
    const later = (fn: () => void) => setTimeout(fn, steering.delayMs);
    if (steering.late > 0) {
      this.#track((async () => {
        await tick();
        for (let i = 0; i < steering.late; i++) {
          await events.emit(new ToolEvent({ type: "heartbeat", data: { late: i } }));
        }
      })());
    }
    const end = (emit: boolean) => {
      execution.result = this.#ended();
      if (emit) this.#track(events.emit(this.#terminalEvent(execution.result)));
    };
    switch (steering.behaviour) {
      case "done":
        later(() => {
          execution.result = new ToolResult({ status: "succeeded", outputs: { done: true } });
          this.#track(events.emit(this.#terminalEvent(execution.result)));
        });
        break;
      case "end":
      case "silent":
        signal.addEventListener("abort", () => later(() => end(steering.behaviour === "end")), {
          once: true,
        });
        break;
      case "stuck":
        signal.addEventListener("abort", () => {
          execution.stuck = true;
          this.#track(events.emit(this.#terminalEvent(this.#ended())));
        }, { once: true });
        break;
    }
    return new ToolAccepted({ details: { blob: "x".repeat(steering.blob) } });
  }

  cancel(): ToolControlResponse {
    return new ToolControlResponse({ command: "cancel", status: "accepted" });
  }

  stop(): ToolControlResponse {
    return new ToolControlResponse({ command: "stop", status: "accepted" });
  }

  status(key: ToolExecutionKey): ToolExecutionStatus {
    const result = this.executions.get(key.id)?.result;
    if (result === undefined) return new ToolExecutionStatus({ phase: "running" });
    return new ToolExecutionStatus({
      phase: result.status === "succeeded" ? "completed" : result.status as "cancelled",
    });
  }

  result(key: ToolExecutionKey): ToolResultResponse | Promise<ToolResultResponse> {
    const execution = this.executions.get(key.id);
    if (execution?.stuck === true) return new Promise<ToolResultResponse>(() => {});
    return execution?.result === undefined
      ? new ToolResultResponse({ status: "pending" })
      : new ToolResultResponse({ status: "available", result: execution.result });
  }
}

function makeHandler(background: Set<Promise<unknown>>) {
  const move = new SteeredProvider("move", background);
  const serve = new SteeredProvider("serve", background);
  const handler = new ToolEndpointHandler(
    cellDescriptor({ endpointId: ENDPOINT, query: null, maxConcurrency: 8 }),
    {
      endpointInstanceId: INSTANCE,
      maxEarlyEvents: 4,
      // Convergences and refused late events are what this target provokes: not printed.
      logger: () => {},
      operations: { move, serve },
    },
  );
  return { handler, providers: { move, serve } };
}

function contextOf(op: Op, invocationId: string): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "a-1" }),
    toolId: "forge.tool.shutdown",
    implementationId: "shutdown",
    endpointId: ENDPOINT,
    operation: op,
  });
}

function invoke(op: Op, invocationId: string, requestId: string, steering: Steering): ToolEnvelope {
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { ...steering } }),
    contextOf(op, invocationId),
    { requestId, endpointInstanceId: INSTANCE },
  );
}

const headers = (requestId: string) => ({ requestId, endpointInstanceId: INSTANCE });

/** Reads status and result of an execution straight from the handler. */
async function observe(handler: ToolEndpointHandler, op: Op, invocationId: string) {
  const context = contextOf(op, invocationId);
  const [status] = await handler.dispatch(
    makeStatusRequestEnvelope(context, headers(`observe-status-${invocationId}`)),
  );
  const [result] = await handler.dispatch(
    makeResultRequestEnvelope(context, headers(`observe-result-${invocationId}`)),
  );
  return {
    status: status.messageType === "tool.status.response"
      ? statusResponseFromPayload(status.payload)
      : undefined,
    result: result.messageType === "tool.result.response"
      ? resultResponseFromPayload(result.payload)
      : undefined,
  };
}

/**
 * Checks the events of each invocation: after its response, in sequence, at most one terminal
 * event and it comes last; every accepted execution has one, unless a status or result response
 * already exposed its terminal state (the emitter then closes without an event, as in the
 * reference).
 */
function checkEvents(
  published: readonly ToolEnvelope[],
  accepted: ReadonlySet<string>,
): Map<string, string> {
  const terminal = new Map<string, string>(); // invocation -> its terminal event type
  const next = new Map<string, number>();
  const responded = new Set<string>();
  for (const envelope of published) {
    const inv = envelope.invocationId!;
    if (envelope.messageType === "tool.invoke.response") responded.add(inv);
    if (envelope.messageType !== "tool.event") continue;
    invariant(responded.has(inv), () => `event of ${inv} before its invoke response`);
    invariant(accepted.has(inv), () => `event of ${inv}, whose acceptance was not delivered`);
    invariant(!terminal.has(inv), () => `event of ${inv} after its terminal event`);
    const expected = next.get(inv) ?? 0;
    invariant(
      envelope.sequence === expected,
      () => `event of ${inv} has sequence ${envelope.sequence}, expected ${expected}`,
    );
    next.set(inv, expected + 1);
    const type = eventFromPayload(envelope.payload).type;
    if (type !== "progress" && type !== "heartbeat") terminal.set(inv, type);
  }
  const observed = new Set<string>();
  for (const envelope of published) {
    if (envelope.messageType === "tool.status.response") {
      const phase = statusResponseFromPayload(envelope.payload).phase;
      if (phase !== "accepted" && phase !== "running" && phase !== "stopping") {
        observed.add(envelope.invocationId!);
      }
    } else if (envelope.messageType === "tool.result.response") {
      if (resultResponseFromPayload(envelope.payload).status === "available") {
        observed.add(envelope.invocationId!);
      }
    }
  }
  for (const inv of accepted) {
    invariant(
      terminal.has(inv) || observed.has(inv),
      () => `accepted execution ${inv} ended without a terminal event`,
    );
  }
  return terminal;
}

/** Checks status and result after the end: terminal, and `unknown` exactly for executor_failed. */
async function checkOutcomes(
  handler: ToolEndpointHandler,
  accepted: ReadonlyMap<string, Op>,
  terminal: ReadonlyMap<string, string>,
  counters: Record<string, number>,
): Promise<void> {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  for (const [inv, op] of accepted) {
    const { status, result } = await observe(handler, op, inv);
    invariant(result?.status === "available", () => `${inv}: result ${result?.status} afterwards`);
    const outcome = result.result!;
    const event = terminal.get(inv);
    const unknown = outcome.status === "unknown";
    // No provider here fails: executor_failed is the handler's unknown convergence.
    invariant(
      unknown === (event === "executor_failed"),
      () => `${inv}: result ${outcome.status} after terminal event ${event}`,
    );
    if (unknown) {
      invariant(
        outcome.error?.code === "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
        () => `${inv}: unknown with ${outcome.error?.code}`,
      );
    }
    invariant(
      status !== undefined && status.phase !== "running" && status.phase !== "accepted",
      () => `${inv}: status ${status?.phase} afterwards`,
    );
    count(`outcome ${outcome.status}`);
  }
  const state = handler.state;
  invariant(
    state.permitsInUse.move === 0 && state.permitsInUse.serve === 0,
    () => `permits still in use: ${JSON.stringify(state.permitsInUse)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// shutdown_running

/** One execution of a shutdown scenario. */
export interface PlannedExecution {
  readonly op: Op;
  readonly behaviour: Behaviour;
  readonly delayMs: number;
  readonly early: number;
  readonly late: number;
}

/** A shutdown scenario. */
export interface ShutdownScenario {
  readonly codec: "fast" | "generic";
  readonly lifecycle: boolean;
  readonly graceMs: number;
  readonly executions: readonly PlannedExecution[];
  /** Milliseconds between the last acceptance and Stop. */
  readonly stopAfterMs: number;
  /** Status and result requests sent right after Stop. */
  readonly lateRequests: number;
}

const plannedArb: fc.Arbitrary<PlannedExecution> = fc.record({
  op: fc.constantFrom("move", "serve" as const),
  behaviour: fc.constantFrom("end", "end", "silent", "ignore", "done", "stuck" as const),
  delayMs: fc.integer({ min: 0, max: 15 }),
  early: fc.integer({ min: 0, max: 2 }),
  late: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, fc.integer({ min: 1, max: 3 })),
});

/** Random shutdown scenarios: 1 to 6 running executions. */
export function shutdownScenarioArb(): fc.Arbitrary<ShutdownScenario> {
  return fc.record({
    codec: fc.constantFrom("fast", "generic" as const),
    lifecycle: fc.boolean(),
    graceMs: fc.integer({ min: 30, max: 60 }),
    executions: fc.array(plannedArb, { minLength: 1, maxLength: 6 }),
    stopAfterMs: fc.integer({ min: 0, max: 20 }),
    lateRequests: fc.integer({ min: 0, max: 2 }),
  });
}

/** Runs one shutdown scenario; throws on the first violated invariant. */
export async function runShutdownScenario(
  scenario: ShutdownScenario,
  counters: Record<string, number> = {},
): Promise<void> {
  const count = (name: string, n = 1) => (counters[name] = (counters[name] ?? 0) + n);
  const background = new Set<Promise<unknown>>();
  const { handler } = makeHandler(background);
  const flow = new LoopbackDataflow();
  const registry = new EndpointRegistry({ routes: { robot: ENDPOINT }, leaseTtlMs: 60_000 });
  const logs: string[] = [];
  const serving = serveToolEndpoint(handler, {
    transport: flow.transport,
    codec: scenario.codec,
    graceMs: scenario.graceMs,
    lifecycle: scenario.lifecycle
      ? { unregisterTimeoutMs: 2_000, health: { periodMs: 60_000 } }
      : undefined,
    logger: ({ level, message }) => void logs.push(`${level} ${message}`),
  });
  const published: ToolEnvelope[] = [];
  const accepted = new Map<string, Op>();
  const answeredInvokes = new Set<string>();
  const allAnswered = Promise.withResolvers<void>();
  let unregisterAt = -1;
  const gateway = (async () => {
    for (;;) {
      const output = await flow.nextOutput();
      if (output === null) return;
      const envelope = decodeToolEnvelopeIpc(output.data);
      published.push(envelope);
      if (envelope.messageType === "tool.invoke.response") {
        answeredInvokes.add(envelope.invocationId!);
        if (envelope.payload.outcome === "accepted") {
          accepted.set(envelope.invocationId!, envelope.operation as Op);
        }
        if (answeredInvokes.size === scenario.executions.length) allAnswered.resolve();
      }
      if (
        envelope.messageType === "endpoint.register" ||
        envelope.messageType === "endpoint.unregister"
      ) {
        if (envelope.messageType === "endpoint.unregister") unregisterAt = published.length - 1;
        await flow.request(encodeToolEnvelopeIpc(registry.handle(envelope, "robot")))
          .catch(() => {});
      }
    }
  })();
  scenario.executions.forEach((planned, i) => {
    const steering: Steering = { ...planned, blob: 0 };
    void flow.request(encodeToolEnvelopeIpc(invoke(planned.op, `inv-${i}`, `req-${i}`, steering)));
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    allAnswered.promise,
    new Promise((resolve) => (timer = setTimeout(resolve, 2_000))),
  ]);
  clearTimeout(timer);
  invariant(
    answeredInvokes.size === scenario.executions.length,
    () => `${answeredInvokes.size} of ${scenario.executions.length} invokes answered`,
  );
  await new Promise((resolve) => setTimeout(resolve, scenario.stopAfterMs));
  const stopAt = published.length;
  await flow.stop();
  for (let i = 0; i < scenario.lateRequests; i++) {
    const [inv, op] = [...accepted][i % Math.max(1, accepted.size)] ?? ["inv-0", "move" as Op];
    const context = contextOf(op, inv);
    await flow.request(encodeToolEnvelopeIpc(
      i % 2 === 0
        ? makeStatusRequestEnvelope(context, headers(`late-${i}`))
        : makeResultRequestEnvelope(context, headers(`late-${i}`)),
    )).catch(() => {});
  }
  const stats = await serving;
  await gateway;

  // Every accepted execution: exactly one terminal event, after its response, in sequence.
  const terminal = checkEvents(published, new Set(accepted.keys()));
  for (const type of terminal.values()) count(`terminal ${type}`);
  if (scenario.lifecycle) {
    invariant(unregisterAt >= 0, "no endpoint.unregister");
    const lastEvent = published.findLastIndex((envelope) => envelope.messageType === "tool.event");
    invariant(lastEvent < unregisterAt, "a tool.event was published after the unregister");
    const unavailable = published.filter((envelope) =>
      envelope.messageType === "endpoint.status" &&
      endpointStatusFromEnvelope(envelope).state === "unavailable"
    );
    invariant(unavailable.length === 1, () => `${unavailable.length} unavailable snapshots`);
    const reportedAt = published.indexOf(unavailable[0]);
    invariant(
      reportedAt > lastEvent && reportedAt < unregisterAt,
      "unavailable was not reported between the last terminal event and the unregister",
    );
    invariant(registry.records().length === 0, "the Registry still holds the endpoint");
    count("lifecycle scenarios");
  }
  invariant(stats.stopReason === "stop", () => `stopped for ${stats.stopReason}`);
  invariant(stats.abandoned === 0, () => `${stats.abandoned} requests abandoned`);
  invariant(
    logs.every((line) => !line.startsWith("error") && !line.startsWith("warn")),
    () => `logged: ${logs.join(" | ")}`,
  );
  await checkOutcomes(handler, accepted, terminal, counters);
  await Promise.all(background);
  count(
    "events after stop",
    published.slice(stopAt).filter((e) => e.messageType === "tool.event").length,
  );
  count("executions", scenario.executions.length);
  count("scenarios passed");
}

/** The shutdown target: one scenario per input. */
export const shutdownTarget: FuzzTarget<ShutdownScenario> = {
  name: "shutdown_running",
  arbitrary: shutdownScenarioArb,
  check: runShutdownScenario,
  async: true,
  batchSize: 25,
  timeBoundMs: 3000,
};

// ---------------------------------------------------------------------------------------------
// oversized_acceptance

/** One invoke of an acceptance scenario. */
export interface PlannedInvoke {
  readonly op: Op;
  /** The acceptance exceeds the 1024-byte message limit. */
  readonly oversized: boolean;
  /** The sink fails to publish the response. */
  readonly failSend: boolean;
  readonly early: number;
  readonly late: number;
  /** Send a duplicate invoke (another request id) right after it. */
  readonly duplicate: boolean;
}

/** An acceptance scenario: invokes through the binding, then close(). */
export interface AcceptanceScenario {
  readonly invokes: readonly PlannedInvoke[];
}

/** Random acceptance scenarios: 1 to 6 invokes. */
export function acceptanceScenarioArb(): fc.Arbitrary<AcceptanceScenario> {
  return fc.record({
    invokes: fc.array(
      fc.record({
        op: fc.constantFrom("move", "serve" as const),
        oversized: fc.boolean(),
        failSend: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, fc.constant(true)),
        early: fc.integer({ min: 0, max: 2 }),
        late: fc.integer({ min: 0, max: 2 }),
        duplicate: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, fc.constant(true)),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  });
}

/** Runs one acceptance scenario; throws on the first violated invariant. */
export async function runAcceptanceScenario(
  scenario: AcceptanceScenario,
  counters: Record<string, number> = {},
): Promise<void> {
  const count = (name: string, n = 1) => (counters[name] = (counters[name] ?? 0) + n);
  const background = new Set<Promise<unknown>>();
  const { handler, providers } = makeHandler(background);
  const published: ToolEnvelope[] = [];
  const refuse = new Set<string>(); // request ids whose response send fails
  const reported: unknown[] = [];
  const binding = new DoraToolEndpointBinding(handler, {
    maxMessageBytes: 1024,
    eventSink: (batch: RecordBatch) => {
      const envelope = toolMessageToEnvelope(batch);
      if (envelope.messageType !== "tool.event" && refuse.has(envelope.requestId!)) {
        throw new Error("send failed");
      }
      published.push(envelope);
    },
    logger: (record) => void reported.push(record.error),
  });
  const undelivered = new Map<string, Op>(); // invocation -> op: the caller never got it
  const delivered = new Map<string, Op>();
  for (const [i, planned] of scenario.invokes.entries()) {
    const inv = `inv-${i}`;
    const steering: Steering = {
      behaviour: "ignore",
      delayMs: 0,
      early: planned.early,
      late: planned.late,
      blob: planned.oversized ? 2048 : 0,
    };
    const request = invoke(planned.op, inv, `req-${i}`, steering);
    if (planned.failSend) refuse.add(request.requestId!);
    const outcome = await binding.dispatchInput(toolEnvelopeToMessage(request)).then(
      () => "published",
      (error) => error instanceof Error && error.message === "send failed" ? "failed" : error,
    );
    invariant(outcome === "published" || outcome === "failed", () => `invoke raised ${outcome}`);
    const answers = published.filter((envelope) => envelope.requestId === request.requestId);
    if (planned.failSend) {
      invariant(answers.length === 0, "a refused response was published");
      undelivered.set(inv, planned.op);
      count("acceptances whose send failed");
    } else if (planned.oversized) {
      invariant(
        answers.length === 1 && answers[0].messageType === "tool.error",
        "an oversized acceptance was not answered with one tool.error",
      );
      undelivered.set(inv, planned.op);
      count("oversized acceptances");
    } else {
      invariant(
        answers.length === 1 && answers[0].payload.outcome === "accepted",
        "an acceptance was not published once",
      );
      delivered.set(inv, planned.op);
    }
    if (planned.duplicate) {
      const duplicate = invoke(planned.op, inv, `dup-${i}`, steering);
      await binding.dispatchInput(toolEnvelopeToMessage(duplicate)).catch(() => {});
      const answer = published.find((envelope) => envelope.requestId === `dup-${i}`);
      invariant(answer !== undefined, "a duplicate invoke was not answered");
      if (undelivered.has(inv)) {
        const replay = invokeResponseFromPayload(answer.payload);
        invariant(
          replay instanceof ToolResult && replay.status === "unknown",
          "a duplicate of an undelivered acceptance did not read unknown",
        );
        count("duplicates of undelivered acceptances");
      }
    }
    for (let t = 0; t < 3; t++) await tick();
  }
  await Promise.all(background);
  for (let t = 0; t < 3; t++) await tick();
  // Undelivered: aborted, silent, no permit, unknown to status and result.
  for (const [inv, op] of undelivered) {
    const execution = providers[op].executions.get(
      new ToolExecutionKey({
        invocationId: inv,
        attemptId: "a-1",
      }).id,
    );
    invariant(execution?.signal.aborted === true, () => `${inv} was not aborted`);
    const { status, result } = await observe(handler, op, inv);
    invariant(status?.phase === "unknown", () => `${inv}: status ${status?.phase}`);
    invariant(result?.result?.status === "unknown", () => `${inv}: result ${result?.status}`);
  }
  invariant(
    reported.length === undelivered.size,
    () => `${reported.length} reports for ${undelivered.size} abandoned executions`,
  );
  const usedBeforeClose = handler.state.permitsInUse.move + handler.state.permitsInUse.serve;
  invariant(
    usedBeforeClose === delivered.size,
    () => `${usedBeforeClose} permits in use for ${delivered.size} running executions`,
  );
  // The delivered ones run on until close(): then exactly one terminal event each.
  await handler.close({ graceMs: 5 });
  await Promise.all(background);
  const terminal = checkEvents(published, new Set(delivered.keys()));
  await checkOutcomes(handler, delivered, terminal, counters);
  for (const inv of undelivered.keys()) {
    invariant(
      published.every((envelope) =>
        envelope.messageType !== "tool.event" || envelope.invocationId !== inv
      ),
      () => `an event of undelivered ${inv} was published`,
    );
  }
  // Late emits of abandoned executions fail as after a terminal event.
  for (const [inv, op] of undelivered) {
    const execution = providers[op].executions.get(
      new ToolExecutionKey({ invocationId: inv, attemptId: "a-1" }).id,
    )!;
    const failure = await execution.events.emit(new ToolEvent({ type: "progress" })).then(
      () => undefined,
      (error) => error,
    );
    invariant(
      failure instanceof ToolProtocolError &&
        failure.code === "FORGE_ENDPOINT_EVENT_AFTER_TERMINAL",
      () => `a late emit of abandoned ${inv} did not fail as after terminal`,
    );
  }
  count("scenarios passed");
}

/** The oversized-acceptance target: one scenario per input. */
export const acceptanceTarget: FuzzTarget<AcceptanceScenario> = {
  name: "oversized_acceptance",
  arbitrary: acceptanceScenarioArb,
  check: runAcceptanceScenario,
  async: true,
  batchSize: 50,
  timeBoundMs: 1000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [shutdownTarget, acceptanceTarget];

/** Runs every target of this module under `budget`. */
export async function run(budget: Budget): Promise<TargetReport[]> {
  return [await runTarget(shutdownTarget, budget), await runTarget(acceptanceTarget, budget)];
}

// The ToolGateway router between two callers and an adversarial provider: schedules of caller
// requests (invokes of a Query, an Action and a Session, status, result, cancel/stop, for the
// caller's own executions, the other caller's and unknown ones, addressed to an instance or not)
// and provider traffic (answers right, forged or duplicated, dropped requests, errors, events for
// any execution from either instance, registrations, unregisters and status changes).
//
// Invariant: a caller receives answers only to requests it sent, at most one each, carrying the
// request's execution identity; of an execution it never invoked, only the gateway's refusal (a
// `tool.error` of its own, `not_found`, `rejected`), never a provider's answer or event; by `close()` every request was answered;
// afterwards no exchange is pending.
import fc from "fast-check";
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  EndpointStatus,
  makeControlRequestEnvelope,
  makeControlResponseEnvelope,
  makeEndpointStatusEnvelope,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  ToolEnvelope,
} from "../../wire.ts";
import { ToolGateway } from "../../gateway.ts";
import { type AnyTarget, type FuzzTarget, invariant } from "./_common.ts";

const ENDPOINT = "fuzz.router";
const OPERATIONS = ["q", "m", "s"] as const;
const INSTANCES = ["i1", "i2"] as const;
/** The code of the provider's own errors (the gateway's refusals never carry it). */
const PROVIDER_ERROR = "FORGE_FUZZ_PROVIDER_BUSY";

/**
 * True when `message` is the gateway's refusal, in any of its forms: a `tool.error` of its own, a
 * result `not_found`, a control `rejected`, an invoke `rejected` (another caller's execution).
 */
function isRefusal(message: ToolEnvelope): boolean {
  const payload = message.payload as {
    error?: { code?: string };
    status?: string;
    response?: { status?: string };
    outcome?: string;
  };
  switch (message.messageType) {
    case "tool.error":
      return payload.error?.code !== PROVIDER_ERROR;
    case "tool.result.response":
      return payload.status === "not_found";
    case "tool.control.response":
      return payload.response?.status === "rejected";
    case "tool.invoke.response":
      return payload.outcome === "rejected";
    default:
      return false;
  }
}

const descriptor = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: ENDPOINT,
  operations: [
    new ToolOperationDescriptor({ name: "q", semantics: "query" }),
    new ToolOperationDescriptor({
      name: "m",
      semantics: "action",
      cancellable: true,
      statusSupported: true,
    }),
    new ToolOperationDescriptor({ name: "s", semantics: "session", statusSupported: true }),
  ],
});

/** One step of a schedule; the numbers choose among what exists when the step runs. */
export interface RouterStep {
  readonly kind: "register" | "unregister" | "status" | "call" | "answer" | "event";
  readonly caller: number;
  readonly call: "invoke" | "status" | "result" | "control";
  /** Which key: a new one, or the n-th known (own or not), or an unknown one. */
  readonly key: number;
  readonly operation: number;
  readonly instance: number;
  /** Address the request to an instance. */
  readonly addressed: boolean;
  /** How the provider answers: 0 right, 1 error, 2 forged request id, 3 twice, 4 result at once. */
  readonly answer: number;
  readonly pick: number;
  readonly phase: number;
}

const stepArb: fc.Arbitrary<RouterStep> = fc.record({
  kind: fc.constantFrom(
    "register",
    "unregister",
    "status",
    "call",
    "call",
    "call",
    "answer",
    "answer",
    "answer",
    "event",
  ),
  caller: fc.integer({ min: 0, max: 1 }),
  call: fc.constantFrom("invoke", "invoke", "status", "result", "control"),
  key: fc.integer({ min: -1, max: 8 }),
  operation: fc.integer({ min: 0, max: 2 }),
  instance: fc.integer({ min: 0, max: 1 }),
  addressed: fc.boolean(),
  answer: fc.integer({ min: 0, max: 4 }),
  pick: fc.nat(),
  phase: fc.integer({ min: 0, max: 2 }),
});

/** Ten to sixty steps. */
export function routerScheduleArb(): fc.Arbitrary<readonly RouterStep[]> {
  return fc.array(stepArb, { minLength: 10, maxLength: 60 });
}

interface Key {
  readonly invocationId: string;
  readonly operation: string;
  readonly owner: number;
}

function contextOf(key: Key): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId: key.invocationId, attemptId: "a1" }),
    toolId: "fuzz.tool",
    implementationId: "fuzz",
    endpointId: ENDPOINT,
    operation: key.operation,
  });
}

/** The provider's answer to `request` (addressed to `to`: the request itself or a forgery). */
function answerOf(request: ToolEnvelope, to: ToolEnvelope, step: RouterStep): ToolEnvelope {
  if (step.answer === 1) {
    const busy = new ToolError({ code: PROVIDER_ERROR, message: "busy", retryable: true });
    return makeErrorResponseEnvelope(busy, to);
  }
  switch (request.messageType) {
    case "tool.invoke.request":
      return makeInvokeResponseEnvelope(
        request.operation === "q" || step.answer === 4
          ? new ToolResult({ status: "succeeded", outputs: {} })
          : new ToolAccepted(),
        to,
      );
    case "tool.status.request":
      return makeStatusResponseEnvelope(
        new ToolExecutionStatus({
          phase: (["running", "accepted", "completed"] as const)[step.phase],
        }),
        to,
      );
    case "tool.result.request":
      return makeResultResponseEnvelope(
        step.phase === 2
          ? new ToolResultResponse({
            status: "available",
            result: new ToolResult({ status: "succeeded", outputs: {} }),
          })
          : new ToolResultResponse({ status: "pending" }),
        to,
      );
    default: {
      const command = (request.payload as { command: "cancel" | "stop" }).command;
      return makeControlResponseEnvelope(
        new ToolControlResponse({ command, status: step.phase === 0 ? "accepted" : "terminal" }),
        to,
      );
    }
  }
}

/** A copy of `request` under another request id (a reply nobody asked for). */
function forged(request: ToolEnvelope, n: number): ToolEnvelope {
  return new ToolEnvelope({
    messageType: request.messageType,
    requestId: `forged-${n}`,
    invocationId: request.invocationId,
    attemptId: request.attemptId,
    endpointId: request.endpointId,
    endpointInstanceId: request.endpointInstanceId,
    operation: request.operation,
    payload: request.payload,
  });
}

async function runSchedule(
  schedule: readonly RouterStep[],
  counters: Record<string, number>,
): Promise<void> {
  const gateway = new ToolGateway({
    routes: { route: ENDPOINT },
    logger: () => {},
    maxPendingExchanges: 8,
    maxExecutions: 6,
  });
  const toProvider: ToolEnvelope[] = [];
  gateway.attachRoute("route", (envelope) => void toProvider.push(envelope));
  const callers = [0, 1].map(() => {
    const transport = gateway.connect();
    const received: ToolEnvelope[] = [];
    transport.connect((message) => void received.push(message));
    return {
      transport,
      received,
      sent: new Map<string, ToolEnvelope>(),
      invoked: new Set<string>(),
    };
  });
  const keys: Key[] = [];
  let n = 0;
  const count = (name: string) => void (counters[name] = (counters[name] ?? 0) + 1);
  const registration = (instance: string) =>
    makeRegistrationEnvelope(descriptor, { endpointInstanceId: instance, requestId: `reg-${n++}` });
  try {
    gateway.receive("route", registration("i1"));
    for (const step of schedule) {
      const instance = INSTANCES[step.instance];
      switch (step.kind) {
        case "register":
          gateway.receive("route", registration(instance));
          break;
        case "unregister":
          gateway.receive(
            "route",
            makeUnregisterEnvelope({
              endpointId: ENDPOINT,
              endpointInstanceId: instance,
              requestId: `unregister-${n++}`,
            }),
          );
          break;
        case "status":
          count("endpoint status");
          gateway.receive(
            "route",
            makeEndpointStatusEnvelope(
              new EndpointStatus({
                endpointId: ENDPOINT,
                state: (["ready", "unavailable", "degraded"] as const)[step.phase],
                activeInvocations: 0,
              }),
              { endpointInstanceId: instance },
            ),
          );
          break;
        case "call": {
          const caller = callers[step.caller];
          const fresh = step.call === "invoke" && step.key < 2;
          const key: Key = fresh || keys.length === 0
            ? {
              invocationId: `invocation-${n++}`,
              operation: OPERATIONS[step.operation],
              owner: step.key < 0 ? -1 : step.caller,
            }
            : keys[step.pick % keys.length];
          const context = contextOf(key);
          const ids = {
            requestId: `request-${n++}`,
            endpointInstanceId: step.addressed ? instance : undefined,
          };
          const request = step.call === "invoke"
            ? makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, ids)
            : step.call === "status"
            ? makeStatusRequestEnvelope(context, ids)
            : step.call === "result"
            ? makeResultRequestEnvelope(context, ids)
            : makeControlRequestEnvelope(key.operation === "s" ? "stop" : "cancel", context, ids);
          if (fresh && key.owner === step.caller) keys.push(key);
          if (step.call === "invoke") caller.invoked.add(key.invocationId);
          caller.sent.set(request.requestId!, request);
          count(`call ${step.call}`);
          await caller.transport.send(request);
          break;
        }
        case "answer": {
          if (toProvider.length === 0) break;
          const at = step.pick % toProvider.length;
          const request = step.answer === 3 ? toProvider[at] : toProvider.splice(at, 1)[0];
          if (!request.messageType.startsWith("tool.")) break;
          const to = step.answer === 2 ? forged(request, n++) : request;
          gateway.receive("route", answerOf(request, to, step));
          count(`answer ${step.answer}`);
          break;
        }
        case "event": {
          if (keys.length === 0) break;
          const key = keys[step.pick % keys.length];
          gateway.receive(
            "route",
            makeEventEnvelope(
              new ToolEvent({
                type: (["progress", "heartbeat", "executor_completed"] as const)[step.phase],
              }),
              contextOf(key),
              { endpointInstanceId: instance, sequence: 1 + (step.pick % 4) },
            ),
          );
          count("event");
          break;
        }
      }
    }
    for (const [index, caller] of callers.entries()) {
      const answers = new Map<string, number>();
      for (const message of caller.received) {
        if (message.messageType === "tool.event") {
          invariant(
            caller.invoked.has(message.invocationId!),
            () => `caller ${index} got an event of ${message.invocationId}, which it never invoked`,
          );
          count("event delivered");
          continue;
        }
        const id = message.requestId!;
        const request = caller.sent.get(id);
        invariant(
          request !== undefined,
          () => `caller ${index} got an answer to ${id}, never sent`,
        );
        invariant(
          request.invocationId === message.invocationId && request.attemptId === message.attemptId,
          () => `caller ${index}'s answer to ${id} names another execution`,
        );
        // Nothing of another's execution (or nobody's) reaches a caller: only the gateway's refusal.
        invariant(
          caller.invoked.has(message.invocationId!) || isRefusal(message),
          () =>
            `caller ${index} got a provider's ${message.messageType} about ${message.invocationId}, which it never invoked`,
        );
        answers.set(id, (answers.get(id) ?? 0) + 1);
        invariant(answers.get(id) === 1, () => `caller ${index} got two answers to ${id}`);
      }
    }
  } finally {
    await gateway.close();
  }
  invariant(gateway.pendingExchanges === 0, "an exchange is still pending after close()");
  for (const [index, caller] of callers.entries()) {
    const answered = new Set(
      caller.received.filter((m) => m.messageType !== "tool.event").map((m) => m.requestId),
    );
    for (const [id, request] of caller.sent) {
      invariant(
        answered.has(id),
        () => `caller ${index}'s ${request.messageType} ${id} was never answered`,
      );
    }
  }
}

/** The router between two callers and an adversarial provider. */
export const gatewayRouterTarget: FuzzTarget<readonly RouterStep[]> = {
  name: "gateway_router",
  arbitrary: routerScheduleArb,
  check: runSchedule,
  async: true,
  batchSize: 100,
  timeBoundMs: 2000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [gatewayRouterTarget];

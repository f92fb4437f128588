/**
 * The records the router keeps (callers, routes, pending exchanges, routed executions) and the
 * pure rules over them: when an answer ends its execution, the execution key, how an envelope is
 * named in logs, and the copy forwarded with the gateway's own request id.
 *
 * @module
 */
import { TERMINAL_EXECUTION_PHASE_VALUES } from "../endpoint/constants.ts";
import type { ToolError } from "../endpoint/models.ts";
import { pairKey } from "../_internal/text.ts";
import { envelopeReheaded, type ToolEnvelope } from "../wire/envelope.ts";

/** The message types a caller may send. */
export const EXECUTION_REQUESTS: ReadonlySet<string> = new Set<string>([
  "tool.invoke.request",
  "tool.status.request",
  "tool.result.request",
  "tool.control.request",
]);

/** A caller connected through `ToolGateway.connect`. */
export interface Caller {
  deliver: ((message: ToolEnvelope) => void) | undefined;
  closed: boolean;
  /**
   * Who owns the executions this caller invokes: its `callerId` when it gave one (every handle of
   * that id shares them), else the caller itself (its handle alone).
   */
  readonly identity: unknown;
  /** The `callerId` it connected with, if any. */
  readonly callerId: string | undefined;
}

/** A connected caller, not yet delivering; `identity` as {@linkcode Caller.identity} says. */
export function newCaller(callerId: string | undefined): Caller {
  const caller: Caller = {
    deliver: undefined,
    closed: false,
    callerId,
    get identity() {
      return callerId ?? caller;
    },
  };
  return caller;
}

/**
 * The link of a provider route: `frame` turns an envelope into what `send` takes (identity for
 * an envelope route; the Dora edge's IPC encoder for a framed one). `frame` may throw a
 * `ToolProtocolError` (a message too large for the route): nothing is sent then.
 */
export interface RouteLink {
  readonly frame: (envelope: ToolEnvelope) => unknown;
  readonly send: (frame: never) => void | Promise<void>;
}

/** A request forwarded to a provider and not answered yet. */
export interface PendingExchange {
  readonly caller: Caller;
  /** The request as the caller sent it: its headers are restored on the answer. */
  readonly request: ToolEnvelope;
  /** The request as sent to the provider: the answer must correlate with it. */
  readonly forwarded: ToolEnvelope;
  readonly routeId: string;
  readonly instanceId: string;
  /** The request's execution key (see {@linkcode executionKey}), built once when forwarded. */
  readonly key: string;
  /** When it was forwarded (the gateway's clock, ms). */
  readonly startedAtMs: number;
}

/** An execution the gateway routed an invoke for. */
export interface ExecutionRecord {
  readonly routeId: string;
  readonly instanceId: string;
  /** The identity of the caller that invoked it (see `Caller.identity`): only it may read it. */
  readonly owner: unknown;
  /** Where its events go: the owner's handle that invoked it last, until that handle closes. */
  caller: Caller | undefined;
  /** Set once the instance was replaced: the outcome every later request gets. */
  unknown: ToolError | undefined;
  /**
   * Set once the execution is known to be over (or its invoke went unanswered): the record may
   * be forgotten to make room (see `maxExecutions`).
   */
  finished: boolean;
}

/** The router's counters, shared by its parts (a snapshot is `ToolGatewayStats`). */
export interface GatewayCounters {
  forwarded: number;
  answered: number;
  events: number;
  unavailable: number;
  unknown: number;
  management: number;
  dropped: number;
  refused: number;
}

/** Event types that end an execution. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<unknown> = new Set([
  "executor_completed",
  "executor_failed",
  "cancelled",
  "stopped",
]);

const TERMINAL_PHASES: ReadonlySet<unknown> = new Set(TERMINAL_EXECUTION_PHASE_VALUES);

/** True when a validated answer says its execution is over. */
export function answerEndsExecution(response: ToolEnvelope): boolean {
  const payload = response.payload as Record<string, unknown>;
  switch (response.messageType) {
    case "tool.error":
      return true;
    case "tool.invoke.response":
      return payload.outcome !== "accepted";
    case "tool.status.response":
      return TERMINAL_PHASES.has((payload.status as Record<string, unknown>).phase);
    case "tool.result.response":
      return payload.status === "available";
    case "tool.control.response":
      return (payload.response as Record<string, unknown>).status === "terminal";
    default:
      return false;
  }
}

/**
 * The key of the execution table: injective over (endpoint, invocation, attempt), as
 * `ToolExecutionKey.id` is over the last two. Only `tool.*` envelopes are keyed, whose
 * invocation and attempt ids the envelope's constructor required.
 */
export function executionKey(
  endpointId: string,
  invocationId: string | undefined,
  attemptId: string | undefined,
): string {
  return pairKey(endpointId, pairKey(invocationId!, attemptId!));
}

/** How logs name an envelope: its type and execution key. */
export function describe(envelope: ToolEnvelope): string {
  return `${envelope.messageType} endpoint_id=${envelope.endpointId} invocation_id=${envelope.invocationId} attempt_id=${envelope.attemptId} request_id=${envelope.requestId}`;
}

/**
 * A copy of `envelope` with another request id and instance (both may be absent). When
 * `validated` (the source passed its typed validation: a factory built it, or the edge that
 * received it validated it), the copy is marked validated as a factory's envelope is: the typed
 * validation reads the payload and the execution headers, which the copy keeps, never the
 * request id or the instance, so the encoders need not run it again. Only the two new headers
 * are checked (see `envelopeReheaded`); a payload the source holds as a canonical copy is taken
 * as it is (see `copyJson`).
 */
export function withExchange(
  envelope: ToolEnvelope,
  requestId: string | undefined,
  endpointInstanceId: string | undefined,
  validated: boolean,
): ToolEnvelope {
  return envelopeReheaded(envelope, requestId, endpointInstanceId, validated);
}

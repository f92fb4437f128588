/**
 * Health reporting of one endpoint node: unsolicited `endpoint.status` snapshots on a period and
 * on every state change (PROTOCOL.md 8.4).
 *
 * @module
 */
import { isBlankInstanceId } from "../_internal/text.ts";
import type { EndpointState } from "../endpoint/constants.ts";
import { EndpointStatus } from "../endpoint/models.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeEndpointStatusEnvelope } from "../wire/factories.ts";
import { ToolEndpointHandler } from "../handler/handler.ts";
import { type NodeClock, SYSTEM_CLOCK } from "./clock.ts";
import { deliver, requireNumberIn } from "./_util.ts";

/** Options of {@linkcode EndpointHealthReporter}. */
export interface EndpointHealthReporterOptions {
  /** The handler whose state is reported. */
  readonly handler: ToolEndpointHandler;
  /** Publishes one `endpoint.status`; a throw or rejection is recorded in `lastError`. */
  readonly send: (envelope: ToolEnvelope) => void | Promise<void>;
  /** The provider instance (default: the handler's `endpointInstanceId`). */
  readonly endpointInstanceId?: string;
  /** The snapshot period in ms (default 5000); every snapshot sent restarts it. */
  readonly periodMs?: number;
  /**
   * When set, the handler state is also checked every `pollMs` ms and a snapshot is sent as soon
   * as the state changed. Without it, state changes are noticed when
   * {@linkcode EndpointHealthReporter.check} is called (a transport calls it after each message)
   * and at the latest on the next period.
   */
  readonly pollMs?: number;
  /** Monotonic time and timers (default: `performance.now` and the global timers). */
  readonly clock?: NodeClock;
  /** The provider's own degradation signal: `degraded` while it returns true. */
  readonly degraded?: () => boolean;
  /** Extra `details` for each snapshot (a JSON object; default `{}`). */
  readonly details?: () => object;
}

/** Options of {@linkcode EndpointHealthReporter.stop}. */
export interface HealthStopOptions {
  /** Send one last snapshot before stopping (default false). */
  readonly final?: boolean;
}

/**
 * The endpoint state a handler snapshot maps to, in precedence order:
 *
 * 1. `unavailable` when the handler is closed or `shuttingDown` is true;
 * 2. `degraded` when `degraded` is true;
 * 3. `busy` when every permit of every operation is in use: for each descriptor operation, the
 *    executions in progress (`permitsInUse` for Action/Session, `activeQueries` for Query) reach
 *    its `max_concurrency`;
 * 4. `ready` otherwise.
 */
export function endpointStateOf(
  handler: ToolEndpointHandler,
  options: { readonly shuttingDown?: boolean; readonly degraded?: boolean } = {},
): EndpointState {
  const state = handler.state;
  if (state.closed || options.shuttingDown === true) return "unavailable";
  if (options.degraded === true) return "degraded";
  const busy = handler.descriptor.operations.every((operation) => {
    const inUse = state.permitsInUse[operation.name] ?? state.activeQueries[operation.name] ?? 0;
    return inUse >= operation.maxConcurrency;
  });
  return busy ? "busy" : "ready";
}

/**
 * Sends `endpoint.status` health snapshots for one handler: one at start, then one every
 * `periodMs`, and one whenever the state (`ready`, `busy`, `degraded`, `unavailable`) differs from
 * the last one sent. `active_invocations` is the handler's `state.activeInvocations`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import {
 *   EndpointHealthReporter,
 *   TOOL_ENDPOINT_PROTOCOL,
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: "instance-1",
 *     operations: { detect: { query: () => new ToolResult({ status: "succeeded" }) } },
 *   },
 * );
 * const sent: unknown[] = [];
 * const reporter = new EndpointHealthReporter({
 *   handler,
 *   send: (envelope) => void sent.push(envelope.payload),
 * });
 * reporter.start();
 * reporter.stop();
 * assertEquals(sent, [{ status: { state: "ready", active_invocations: 0, details: {} } }]);
 * ```
 */
export class EndpointHealthReporter {
  readonly #handler: ToolEndpointHandler;
  readonly #send: (envelope: ToolEnvelope) => void | Promise<void>;
  readonly #instance: string;
  readonly #periodMs: number;
  readonly #pollMs: number | undefined;
  readonly #clock: NodeClock;
  readonly #degraded: (() => boolean) | undefined;
  readonly #details: (() => object) | undefined;
  #running = false;
  #shuttingDown = false;
  #lastState: EndpointState | undefined;
  #lastError: unknown;
  #sent = 0;
  #periodTimer: { handle: unknown } | undefined;
  #pollTimer: { handle: unknown } | undefined;

  /** Validates the options; nothing is sent before {@linkcode EndpointHealthReporter.start}. */
  constructor(options: EndpointHealthReporterOptions) {
    if (options === null || typeof options !== "object") {
      throw new TypeError("EndpointHealthReporter options must be an object");
    }
    if (!(options.handler instanceof ToolEndpointHandler)) {
      throw new TypeError("handler must be a ToolEndpointHandler");
    }
    if (typeof options.send !== "function") throw new TypeError("send must be a function");
    const instance = options.endpointInstanceId ?? options.handler.endpointInstanceId;
    if (typeof instance !== "string" || isBlankInstanceId(instance)) {
      throw new TypeError("endpointInstanceId must be a non-empty string");
    }
    this.#handler = options.handler;
    this.#send = options.send;
    this.#instance = instance;
    this.#periodMs = requireNumberIn(options.periodMs ?? 5000, "periodMs", 0, Infinity, true);
    this.#pollMs = options.pollMs === undefined
      ? undefined
      : requireNumberIn(options.pollMs, "pollMs", 0, Infinity, true);
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#degraded = options.degraded;
    this.#details = options.details;
  }

  /** The state of the last snapshot sent, or `undefined` before the first. */
  get lastState(): EndpointState | undefined {
    return this.#lastState;
  }

  /** The last error a `send` threw or rejected with, or `undefined`. */
  get lastError(): unknown {
    return this.#lastError;
  }

  /** How many snapshots were sent. */
  get sent(): number {
    return this.#sent;
  }

  /** Whether the periodic reporting runs. */
  get running(): boolean {
    return this.#running;
  }

  /** The current snapshot, computed from the handler now (nothing is sent). */
  snapshot(): EndpointStatus {
    let degraded = false;
    if (this.#degraded !== undefined) {
      try {
        degraded = this.#degraded() === true;
      } catch {
        degraded = true;
      }
    }
    return new EndpointStatus({
      endpointId: this.#handler.descriptor.endpointId,
      state: endpointStateOf(this.#handler, { shuttingDown: this.#shuttingDown, degraded }),
      activeInvocations: this.#handler.state.activeInvocations,
      details: this.#details?.() ?? {},
    });
  }

  /** Sends a snapshot now and starts the period (and the poll, when configured). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.report();
    if (this.#pollMs !== undefined) this.#armPoll();
  }

  /** Sends a snapshot now (also when stopped) and, while running, restarts the period. */
  report(): EndpointStatus {
    const status = this.snapshot();
    this.#lastState = status.state;
    this.#sent += 1;
    const envelope = makeEndpointStatusEnvelope(status, { endpointInstanceId: this.#instance });
    if (this.#running) this.#armPeriod();
    deliver(() => this.#send(envelope), (error) => (this.#lastError = error));
    return status;
  }

  /**
   * Sends a snapshot when the current state differs from the last one sent; returns whether it
   * sent one. Cheap: call it after every dispatched message or published response.
   */
  check(): boolean {
    if (this.snapshot().state === this.#lastState) return false;
    this.report();
    return true;
  }

  /** Marks the endpoint as shutting down: every later snapshot is `unavailable` (sent now). */
  shuttingDown(): void {
    this.#shuttingDown = true;
    this.check();
  }

  /** Stops the period and the poll; with `final`, sends one last snapshot first. */
  stop(options: HealthStopOptions = {}): void {
    if (options.final === true) this.report();
    this.#running = false;
    this.#cancel(this.#periodTimer);
    this.#cancel(this.#pollTimer);
    this.#periodTimer = undefined;
    this.#pollTimer = undefined;
  }

  #armPeriod(): void {
    this.#cancel(this.#periodTimer);
    const timer: { handle: unknown } = { handle: undefined };
    this.#periodTimer = timer;
    timer.handle = this.#clock.setTimeout(() => {
      if (this.#periodTimer !== timer || !this.#running) return;
      this.#periodTimer = undefined;
      this.report();
    }, this.#periodMs);
  }

  #armPoll(): void {
    const timer: { handle: unknown } = { handle: undefined };
    this.#pollTimer = timer;
    timer.handle = this.#clock.setTimeout(() => {
      if (this.#pollTimer !== timer || !this.#running) return;
      this.check();
      this.#armPoll();
    }, this.#pollMs!);
  }

  #cancel(timer: { handle: unknown } | undefined): void {
    if (timer !== undefined) this.#clock.clearTimeout(timer.handle);
  }
}

/**
 * Health reporting of one endpoint node: unsolicited `endpoint.status` snapshots on a period and
 * on every state change (PROTOCOL.md 8.4).
 *
 * @module
 */
import { isStripBlank } from "../_internal/text.ts";
import type { EndpointState } from "../endpoint/constants.ts";
import { EndpointStatus } from "../endpoint/models.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { makeEndpointStatusEnvelope } from "../wire/factories.ts";
import { handlerLoad, ToolEndpointHandler } from "../handler/handler.ts";
import { logSafely, type ToolLogger } from "../endpoint/log.ts";
import { type NodeClock, SYSTEM_CLOCK } from "./clock.ts";
import { deliver } from "./_util.ts";
import { optionMessage, requireNumberIn } from "../_internal/options.ts";

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
  /**
   * The provider's own degradation signal: `degraded` while it returns true. A throw counts as
   * true (and is logged, see `logger`).
   */
  readonly degraded?: () => boolean;
  /**
   * Extra `details` for each snapshot (a JSON object; default `{}`). When it throws or returns a
   * value that is not valid JSON details (a `NaN`, a cycle, a non-object), the snapshot is sent
   * as `degraded` with empty details, and the failure is logged (see `logger`): reporting goes on.
   */
  readonly details?: () => object;
  /**
   * Where a failing `degraded` or `details` callback is reported: one `error` record
   * `health.callback_failed` with the endpoint id, the cause and the callback's name in the
   * message, once per run of consecutive failures of that callback (a callback that keeps failing
   * is not reported on every snapshot).
   *
   * @default {the handler's logger}
   */
  readonly logger?: ToolLogger;
}

/** A provider callback of {@linkcode EndpointHealthReporter}: `degraded` or `details`. */
export type HealthCallback = "degraded" | "details";

const CREATE_REPORTER = "create an EndpointHealthReporter";

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
  // Read from the handler's parts: no snapshot is built (a check runs twice per request).
  const load = handlerLoad(handler);
  if (load === undefined) {
    throw new TypeError(
      optionMessage("read the endpoint state", "handler", "a ToolEndpointHandler", handler),
    );
  }
  if (load === "closed" || options.shuttingDown === true) return "unavailable";
  if (options.degraded === true) return "degraded";
  return load;
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
 *   ToolEndpointDescriptor,
 *   ToolEndpointHandler,
 *   ToolOperationDescriptor,
 *   ToolResult,
 * } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * import { EndpointHealthReporter } from "@forge/tool/node";
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
  readonly #logger: ToolLogger;
  /** The callbacks whose last call failed (their next failure is not reported again). */
  readonly #failing = new Set<HealthCallback>();
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
      throw new TypeError(optionMessage(CREATE_REPORTER, "options", "an object", options));
    }
    if (!(options.handler instanceof ToolEndpointHandler)) {
      throw new TypeError(
        optionMessage(CREATE_REPORTER, "handler", "a ToolEndpointHandler", options.handler),
      );
    }
    if (typeof options.send !== "function") {
      throw new TypeError(optionMessage(CREATE_REPORTER, "send", "a function", options.send));
    }
    const instance = options.endpointInstanceId ?? options.handler.endpointInstanceId;
    if (typeof instance !== "string" || isStripBlank(instance)) {
      throw new TypeError(
        optionMessage(CREATE_REPORTER, "endpointInstanceId", "a non-empty string", instance),
      );
    }
    this.#handler = options.handler;
    this.#send = options.send;
    this.#instance = instance;
    this.#periodMs = requireNumberIn(
      CREATE_REPORTER,
      options.periodMs ?? 5000,
      "periodMs",
      0,
      Infinity,
      true,
    );
    this.#pollMs = options.pollMs === undefined
      ? undefined
      : requireNumberIn(CREATE_REPORTER, options.pollMs, "pollMs", 0, Infinity, true);
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    for (const name of ["degraded", "details", "logger"] as const) {
      const value: unknown = options[name];
      if (value !== undefined && typeof value !== "function") {
        throw new TypeError(optionMessage(CREATE_REPORTER, name, "a function", value));
      }
    }
    this.#degraded = options.degraded;
    this.#details = options.details;
    this.#logger = options.logger ?? options.handler.logger;
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

  /**
   * The current snapshot, computed from the handler now (nothing is sent). Never throws for a
   * failing `degraded` or `details` callback: see {@linkcode EndpointHealthReporterOptions}.
   */
  snapshot(): EndpointStatus {
    let degraded = this.#providerDegraded();
    const endpointId = this.#handler.descriptor.endpointId;
    const activeInvocations = this.#handler.state.activeInvocations;
    if (this.#details !== undefined) {
      try {
        const status = new EndpointStatus({
          endpointId,
          state: this.#state(degraded),
          activeInvocations,
          details: this.#details() ?? {},
        });
        this.#succeeded("details");
        return status;
      } catch (error) {
        this.#failed("details", error);
        degraded = true;
      }
    }
    return new EndpointStatus({ endpointId, state: this.#state(degraded), activeInvocations });
  }

  /**
   * The state a snapshot would carry now, without calling `details`: a `details` callback whose
   * last call failed keeps the state `degraded` until a snapshot calls it successfully.
   */
  #currentState(): EndpointState {
    return this.#state(this.#providerDegraded() || this.#failing.has("details"));
  }

  #state(degraded: boolean): EndpointState {
    return endpointStateOf(this.#handler, { shuttingDown: this.#shuttingDown, degraded });
  }

  #providerDegraded(): boolean {
    if (this.#degraded === undefined) return false;
    try {
      const degraded = this.#degraded() === true;
      this.#succeeded("degraded");
      return degraded;
    } catch (error) {
      this.#failed("degraded", error);
      return true;
    }
  }

  #succeeded(callback: HealthCallback): void {
    this.#failing.delete(callback);
  }

  #failed(callback: HealthCallback, error: unknown): void {
    if (this.#failing.has(callback)) return;
    this.#failing.add(callback);
    logSafely(this.#logger, {
      level: "error",
      event: "health.callback_failed",
      message: `the ${callback}() callback failed; the snapshot reports degraded`,
      endpointId: this.#handler.descriptor.endpointId,
      error,
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
    if (this.#currentState() === this.#lastState) return false;
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

/**
 * The lifecycle of one endpoint node: registration and lease renewal, health snapshots, and the
 * ordered graceful shutdown, independent of the transport that carries the messages.
 *
 * @module
 */
import { isBlank } from "../_internal/text.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import type { EndpointRegistryResponse } from "../endpoint/models.ts";
import { handlerLoad, ToolEndpointHandler } from "../handler/handler.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { type NodeClock, SYSTEM_CLOCK } from "./clock.ts";
import { EndpointHealthReporter, type EndpointHealthReporterOptions } from "./health.ts";
import { EndpointRegistration } from "./registration.ts";
import type { EndpointRegistrationOptions } from "./registration_options.ts";
import { optionMessage } from "../_internal/options.ts";

const CREATE_LIFECYCLE = "create an EndpointNodeLifecycle";

/**
 * A new `endpoint_instance_id` for this process start: `"<prefix>-<random UUID>"` (default prefix
 * `epinst`). PROTOCOL.md 5.1 requires a new value for every provider process start, restart
 * included, and forbids reading order into it: call this once when the process starts and give
 * the same value to the handler and the node.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { newEndpointInstanceId } from "@forge/tool/node";
 * assertEquals(newEndpointInstanceId().startsWith("epinst-"), true);
 * ```
 */
export function newEndpointInstanceId(prefix = "epinst"): string {
  if (typeof prefix !== "string" || isBlank(prefix)) {
    throw new TypeError("prefix must be a non-empty string");
  }
  return `${prefix}-${crypto.randomUUID()}`;
}

/** Where an {@linkcode EndpointNodeLifecycle} is. */
export type EndpointNodePhase = "created" | "running" | "shutting_down" | "stopped";

/** Options of {@linkcode EndpointNodeLifecycle}. */
export interface EndpointNodeLifecycleOptions {
  /** The handler the node serves; its descriptor and instance are registered. */
  readonly handler: ToolEndpointHandler;
  /** Publishes one management envelope (register, unregister, status) on the transport. */
  readonly send: (envelope: ToolEnvelope) => void | Promise<void>;
  /** Monotonic time and timers for both loops (default: the process clock). */
  readonly clock?: NodeClock;
  /** A uniform sample in `[0, 1)` for jitter (default `Math.random`). */
  readonly random?: () => number;
  /** Registration loop tuning (renewal fraction, jitter, backoff, response timeout...). */
  readonly registration?: Omit<
    EndpointRegistrationOptions,
    "descriptor" | "endpointInstanceId" | "send" | "clock" | "random"
  >;
  /** Health reporting tuning (period, poll, degraded signal, details). */
  readonly health?: Omit<
    EndpointHealthReporterOptions,
    "handler" | "send" | "clock" | "endpointInstanceId"
  >;
  /**
   * How long shutdown lets admitted executions end and publish their terminal events
   * (`handler.close({ graceMs })`; default 5000).
   */
  readonly graceMs?: number;
  /** How long shutdown waits for the unregister response, in ms (default: response timeout). */
  readonly unregisterTimeoutMs?: number;
  /** Closes the transport; called last in {@linkcode EndpointNodeLifecycle.shutdown}. */
  readonly closeTransport?: () => void | Promise<void>;
  /**
   * Where the registration loop and the health reporter report, unless their own settings name
   * one.
   *
   * @default {the handler's logger}
   */
  readonly logger?: ToolLogger;
}

/**
 * One endpoint node's management lifecycle: an {@linkcode EndpointRegistration} loop and an
 * {@linkcode EndpointHealthReporter} for a {@linkcode ToolEndpointHandler}, over any transport
 * that can `send` envelopes and feeds incoming ones to {@linkcode EndpointNodeLifecycle.receive}.
 *
 * {@linkcode EndpointNodeLifecycle.shutdown} keeps this order:
 *
 * 1. stop admitting: `handler.close({ graceMs })` starts (new invokes are refused at once) and
 *    aborts the signal of every running execution;
 * 2. settle: `handler.close` waits up to `graceMs` until every admitted Action and Session reached
 *    a terminal state and its terminal event was published (what did not converges to `unknown`
 *    and gets its terminal event then; see {@linkcode ToolEndpointHandler.close}); the lease
 *    keeps being renewed meanwhile, so the executions' results stay reachable;
 * 3. one `unavailable` snapshot (none when the last one sent already said so), then health
 *    reporting stops;
 * 4. `endpoint.unregister`, waiting up to `unregisterTimeoutMs` for its response;
 * 5. `closeTransport()`.
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
 * import {
 *   EndpointNodeLifecycle,
 *   EndpointRegistry,
 *   newEndpointInstanceId,
 * } from "@forge/tool/node";
 * const handler = new ToolEndpointHandler(
 *   new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   {
 *     endpointInstanceId: newEndpointInstanceId(),
 *     operations: { detect: { query: () => new ToolResult({ status: "succeeded" }) } },
 *   },
 * );
 * const registry = new EndpointRegistry({ routes: { yolo: "vision.yolo" } });
 * const node: EndpointNodeLifecycle = new EndpointNodeLifecycle({
 *   handler,
 *   send: (envelope) => {
 *     if (envelope.messageType === "endpoint.status") return; // a Gateway would record it
 *     node.receive(registry.handle(envelope, "yolo"));
 *   },
 * });
 * node.start();
 * assertEquals(node.registration.state, "registered");
 * await node.shutdown();
 * assertEquals(registry.records().length, 0);
 * ```
 */
export class EndpointNodeLifecycle {
  /** The registration loop. */
  readonly registration: EndpointRegistration;
  /** The health reporter. */
  readonly health: EndpointHealthReporter;
  readonly #handler: ToolEndpointHandler;
  readonly #graceMs: number | undefined;
  readonly #unregisterTimeoutMs: number | undefined;
  readonly #closeTransport: (() => void | Promise<void>) | undefined;
  #phase: EndpointNodePhase = "created";
  /** Ends the handler's permit notifications; dropped at the first one after the node stopped. */
  #unwatch: (() => void) | undefined;
  #shutdown: Promise<EndpointRegistryResponse | undefined> | undefined;

  /** Builds both loops; nothing is sent before {@linkcode EndpointNodeLifecycle.start}. */
  constructor(options: EndpointNodeLifecycleOptions) {
    if (options === null || typeof options !== "object") {
      throw new TypeError(optionMessage(CREATE_LIFECYCLE, "options", "an object", options));
    }
    if (!(options.handler instanceof ToolEndpointHandler)) {
      throw new TypeError(
        optionMessage(CREATE_LIFECYCLE, "handler", "a ToolEndpointHandler", options.handler),
      );
    }
    if (typeof options.send !== "function") {
      throw new TypeError(optionMessage(CREATE_LIFECYCLE, "send", "a function", options.send));
    }
    if (options.logger !== undefined && typeof options.logger !== "function") {
      throw new TypeError(optionMessage(CREATE_LIFECYCLE, "logger", "a function", options.logger));
    }
    const logger = options.logger ?? options.handler.logger;
    const clock = options.clock ?? SYSTEM_CLOCK;
    this.#handler = options.handler;
    this.registration = new EndpointRegistration({
      ...options.registration,
      descriptor: options.handler.descriptor,
      endpointInstanceId: options.handler.endpointInstanceId,
      send: options.send,
      clock,
      random: options.random,
      logger: options.registration?.logger ?? logger,
    });
    this.health = new EndpointHealthReporter({
      ...options.health,
      logger: options.health?.logger ?? logger,
      handler: options.handler,
      send: options.send,
      clock,
    });
    this.#graceMs = options.graceMs;
    this.#unregisterTimeoutMs = options.unregisterTimeoutMs;
    this.#closeTransport = options.closeTransport;
  }

  /** Where the node is. */
  get phase(): EndpointNodePhase {
    return this.#phase;
  }

  /** The handler the node serves. */
  get handler(): ToolEndpointHandler {
    return this.#handler;
  }

  /**
   * Starts registration (sends `endpoint.register`) and health reporting (sends a snapshot).
   * From then on every Action/Session permit taken or released in the handler is checked
   * ({@linkcode ToolEndpointHandler.watchState}), so `busy` and `ready` are reported when they
   * happen; Query calls are checked by the transport ({@linkcode EndpointNodeLifecycle.check}).
   */
  start(): void {
    if (this.#phase !== "created") return;
    this.#phase = "running";
    this.registration.start();
    this.health.start();
    this.#unwatch = this.#handler.watchState(() => this.check());
  }

  /**
   * Feeds one incoming envelope: a correlated `endpoint.registry.response` is applied to the
   * registration loop (true); anything else is left to the caller (false).
   */
  receive(envelope: ToolEnvelope): boolean {
    return this.registration.receive(envelope);
  }

  /**
   * Sends a health snapshot if the state changed; call it when a request was dispatched and when
   * it was answered (a Query is admitted and released there). O(operations); sends nothing when
   * the state is unchanged. Only while running: during shutdown the one `unavailable` snapshot
   * comes after every admitted execution ended (see {@linkcode EndpointNodeLifecycle.shutdown}).
   */
  check(): boolean {
    // A closed handler is draining: the one `unavailable` goes out after the drain, from shutdown.
    if (this.#phase === "running") {
      return handlerLoad(this.#handler) === "closed" ? false : this.health.check();
    }
    if (this.#phase === "stopped") {
      this.#unwatch?.();
      this.#unwatch = undefined;
    }
    return false;
  }

  /**
   * Shuts down gracefully in the documented order (stop admitting, let every admitted execution
   * end and publish its terminal event, one `unavailable` snapshot, unregister, close the
   * transport). Resolves with the unregister
   * response, or `undefined` when none arrived. Calling it again returns the same promise.
   */
  shutdown(): Promise<EndpointRegistryResponse | undefined> {
    this.#shutdown ??= this.#runShutdown();
    return this.#shutdown;
  }

  async #runShutdown(): Promise<EndpointRegistryResponse | undefined> {
    const started = this.#phase === "running";
    this.#phase = "shutting_down";
    let response: EndpointRegistryResponse | undefined;
    try {
      await this.#handler.close(this.#graceMs === undefined ? {} : { graceMs: this.#graceMs });
      // Reported once every execution's terminal event is out, and only once.
      if (started) this.health.shuttingDown();
      this.health.stop();
      response = await this.registration.stop(
        this.#unregisterTimeoutMs === undefined ? {} : { timeoutMs: this.#unregisterTimeoutMs },
      );
    } finally {
      try {
        await this.#closeTransport?.();
      } finally {
        this.#phase = "stopped";
      }
    }
    return response;
  }
}

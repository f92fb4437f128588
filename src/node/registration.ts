// Stays whole: one registration loop; announce, renewal, retry and unregister share its pending request and timers.
/**
 * The registration loop of one endpoint node: announce, lease renewal, retry with bounded
 * exponential backoff, and unregister on shutdown (PROTOCOL.md 8.1–8.3, 8.5, 11.2).
 *
 * @module
 */
import { withResolvers } from "../_internal/async.ts";
import { isStripBlank } from "../_internal/text.ts";
import { consoleLogger, logSafely, type ToolLogger } from "../endpoint/log.ts";
import {
  type EndpointRegistryResponse,
  ToolEndpointDescriptor,
  type ToolError,
} from "../endpoint/models.ts";
import { validateManagementResponseCorrelation } from "../wire/correlation.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import { makeRegistrationEnvelope, makeUnregisterEnvelope } from "../wire/factories.ts";
import { endpointRegistryResponseFromPayload } from "../wire/management_payloads.ts";
import { type NodeClock, SYSTEM_CLOCK } from "./clock.ts";
import { deliver, jittered } from "./_util.ts";
import { optionMessage, requireNumberIn } from "../_internal/options.ts";
import type {
  EndpointRegistrationOptions,
  EndpointRegistrationState,
  RegistrationStopOptions,
} from "./registration_options.ts";

interface Pending {
  readonly request: ToolEnvelope;
  readonly sentAtMs: number;
  readonly done?: PromiseWithResolvers<EndpointRegistryResponse | undefined>;
}

/**
 * The registration loop of one endpoint node (PROTOCOL.md 8): `endpoint.register` is announce,
 * upsert and lease renewal, so the loop sends the exact descriptor at start and again before
 * each lease runs out, and `endpoint.unregister` when it stops.
 *
 * - Renewal: after an accepted register with `lease_ttl_ms = L`, the next register goes out
 *   `L × renewFraction × (1 ± jitter)` after the accepted one was sent (default 0.5 ± 10 %).
 * - Retry: a register whose response does not arrive within `responseTimeoutMs`, whose send
 *   fails, or that is rejected is retried after `min(maxMs, initialMs × factor^(n−1))` for the
 *   n-th consecutive failure, with jitter, and never above `maxMs`. An acceptance resets it.
 * - Correlation: every `endpoint.registry.response` is checked against the outstanding request
 *   with `validateManagementResponseCorrelation`; one that does not correlate (another request,
 *   endpoint or instance, the wrong operation, a late answer to an abandoned attempt, a malformed
 *   payload) is ignored and counted in {@linkcode EndpointRegistration.uncorrelatedResponses}.
 * - Each exchange has a fresh, unguessable `request_id` (a random UUID): only the exact id of the
 *   outstanding request correlates, so a response forged by whatever can write to the node's
 *   input is ignored. The Registry never deduplicates on it (8.5).
 *
 * All timing goes through the injected clock, so the loop is deterministic under a fake one.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEndpointDescriptor, ToolOperationDescriptor } from "@forge/tool";
 * import { TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * import { EndpointRegistration, EndpointRegistry } from "@forge/tool/node";
 * const registry = new EndpointRegistry({ routes: { yolo: "vision.yolo" } });
 * const registration: EndpointRegistration = new EndpointRegistration({
 *   descriptor: new ToolEndpointDescriptor({
 *     protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *     endpointId: "vision.yolo",
 *     operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 *   }),
 *   endpointInstanceId: "instance-1",
 *   // A loopback: the Registry answers at once on the trusted route "yolo".
 *   send: (envelope) => void registration.receive(registry.handle(envelope, "yolo")),
 * });
 * registration.start();
 * assertEquals([registration.state, registration.registryRevision], ["registered", 1]);
 * await registration.stop();
 * assertEquals(registry.lookup("vision.yolo"), undefined);
 * ```
 */
export class EndpointRegistration {
  readonly #descriptor: ToolEndpointDescriptor;
  readonly #instance: string;
  readonly #send: (envelope: ToolEnvelope) => void | Promise<void>;
  readonly #clock: NodeClock;
  readonly #random: () => number;
  readonly #renewFraction: number;
  readonly #jitter: number;
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #factor: number;
  readonly #responseTimeoutMs: number;
  readonly #requestId: (operation: "register" | "unregister") => string;
  readonly #onStateChange:
    | ((state: EndpointRegistrationState, previous: EndpointRegistrationState) => void)
    | undefined;
  #state: EndpointRegistrationState = "unregistered";
  #pending: Pending | undefined;
  #timer: { handle: unknown } | undefined;
  #failures = 0;
  #revision: number | undefined;
  #leaseTtlMs: number | undefined;
  #lastError: ToolError | Error | undefined;
  readonly #logger: ToolLogger;
  #uncorrelated = 0;
  #attempts = 0;
  #stopping: Promise<EndpointRegistryResponse | undefined> | undefined;

  /** Validates the options; nothing is sent before {@linkcode EndpointRegistration.start}. */
  constructor(options: EndpointRegistrationOptions) {
    if (options === null || typeof options !== "object") {
      throw new TypeError(optionMessage(CREATE_REGISTRATION, "options", "an object", options));
    }
    if (!(options.descriptor instanceof ToolEndpointDescriptor)) {
      throw new TypeError(
        optionMessage(
          CREATE_REGISTRATION,
          "descriptor",
          "a ToolEndpointDescriptor",
          options.descriptor,
        ),
      );
    }
    if (
      typeof options.endpointInstanceId !== "string" ||
      isStripBlank(options.endpointInstanceId)
    ) {
      throw new TypeError(
        optionMessage(
          CREATE_REGISTRATION,
          "endpointInstanceId",
          "a non-empty string",
          options.endpointInstanceId,
        ),
      );
    }
    if (typeof options.send !== "function") {
      throw new TypeError(optionMessage(CREATE_REGISTRATION, "send", "a function", options.send));
    }
    const renewFraction = requireNumberIn(
      CREATE_REGISTRATION,
      options.renewFraction ?? 0.5,
      "renewFraction",
      0,
      1,
      true,
    );
    const jitter = requireNumberIn(CREATE_REGISTRATION, options.jitter ?? 0.1, "jitter", 0, 1);
    if (jitter >= 1) {
      throw new RangeError(
        optionMessage(CREATE_REGISTRATION, "jitter", "a finite number in [0, 1)", jitter),
      );
    }
    if (renewFraction * (1 + jitter) >= 1) {
      throw new RangeError(
        `Cannot ${CREATE_REGISTRATION} as 'renewFraction' × (1 + 'jitter') must stay below 1: ` +
          `current values are ${renewFraction} and ${jitter}`,
      );
    }
    const backoff = options.backoff ?? {};
    const initialMs = requireNumberIn(
      CREATE_REGISTRATION,
      backoff.initialMs ?? 1000,
      "backoff.initialMs",
      0,
      Infinity,
    );
    const maxMs = requireNumberIn(
      CREATE_REGISTRATION,
      backoff.maxMs ?? 30_000,
      "backoff.maxMs",
      initialMs,
      Infinity,
    );
    const factor = requireNumberIn(
      CREATE_REGISTRATION,
      backoff.factor ?? 2,
      "backoff.factor",
      1,
      Infinity,
    );
    const responseTimeoutMs = requireNumberIn(
      CREATE_REGISTRATION,
      options.responseTimeoutMs ?? 5000,
      "responseTimeoutMs",
      0,
      Infinity,
      true,
    );
    this.#descriptor = options.descriptor;
    this.#instance = options.endpointInstanceId;
    this.#send = options.send;
    this.#clock = options.clock ?? SYSTEM_CLOCK;
    this.#random = options.random ?? Math.random;
    this.#renewFraction = renewFraction;
    this.#jitter = jitter;
    this.#initialMs = initialMs;
    this.#maxMs = maxMs;
    this.#factor = factor;
    this.#responseTimeoutMs = responseTimeoutMs;
    this.#requestId = options.requestId ?? unguessableRequestId;
    this.#onStateChange = options.onStateChange;
    if (options.logger !== undefined && typeof options.logger !== "function") {
      throw new TypeError(
        optionMessage("create an EndpointRegistration", "logger", "a function", options.logger),
      );
    }
    this.#logger = options.logger ?? consoleLogger;
    // Build one registration now: an unregistrable descriptor fails at construction.
    makeRegistrationEnvelope(this.#descriptor, {
      endpointInstanceId: this.#instance,
      requestId: "probe",
    });
  }

  /** Where the loop is (see {@linkcode EndpointRegistrationState}). */
  get state(): EndpointRegistrationState {
    return this.#state;
  }

  /** The `registry_revision` of the last correlated response (accepted or rejected). */
  get registryRevision(): number | undefined {
    return this.#revision;
  }

  /** The `lease_ttl_ms` of the last accepted registration, in ms. */
  get leaseTtlMs(): number | undefined {
    return this.#leaseTtlMs;
  }

  /**
   * The most recent failure: the `ToolError` of a rejection, or an `Error` for a lost attempt
   * (send failure or response timeout). Not cleared by a later acceptance.
   */
  get lastError(): ToolError | Error | undefined {
    return this.#lastError;
  }

  /** How many `endpoint.registry.response` messages were ignored as uncorrelated. */
  get uncorrelatedResponses(): number {
    return this.#uncorrelated;
  }

  /** How many `endpoint.register` messages were sent. */
  get attempts(): number {
    return this.#attempts;
  }

  /** Consecutive failed attempts since the last acceptance. */
  get consecutiveFailures(): number {
    return this.#failures;
  }

  /** This loop's provider instance. */
  get endpointInstanceId(): string {
    return this.#instance;
  }

  /** The retry delay after the `failures`-th consecutive failure (1-based), before jitter. */
  backoffDelayMs(failures: number): number {
    const exponent = Math.max(0, failures - 1);
    return Math.min(this.#maxMs, this.#initialMs * this.#factor ** exponent);
  }

  /** Sends the first `endpoint.register` now. Calling it again while running does nothing. */
  start(): void {
    if (this.#state === "stopped") throw new Error("the registration loop was stopped");
    if (this.#state !== "unregistered") return;
    this.#setState("registering");
    this.#register();
  }

  /**
   * Feeds one incoming envelope. Returns true when it was the correlated
   * `endpoint.registry.response` of the outstanding request (and was applied); any other
   * `endpoint.registry.response` is ignored and counted; other message types are ignored.
   */
  receive(envelope: ToolEnvelope): boolean {
    if (
      !(envelope instanceof ToolEnvelope) || envelope.messageType !== "endpoint.registry.response"
    ) {
      return false;
    }
    const pending = this.#pending;
    let response: EndpointRegistryResponse;
    try {
      if (pending === undefined) throw new RangeError("no outstanding request");
      validateManagementResponseCorrelation(pending.request, envelope);
      response = endpointRegistryResponseFromPayload(envelope.payload);
    } catch {
      this.#uncorrelated += 1;
      return false;
    }
    this.#pending = undefined;
    this.#disarm();
    this.#revision = response.registryRevision;
    if (response.error !== undefined) this.#lastError = response.error;
    if (pending.done !== undefined) {
      pending.done.resolve(response);
      return true;
    }
    if (response.status === "accepted") {
      this.#failures = 0;
      this.#leaseTtlMs = response.leaseTtlMs;
      this.#setState("registered");
      const renewAt = pending.sentAtMs +
        jittered(response.leaseTtlMs! * this.#renewFraction, this.#jitter, this.#random);
      this.#arm(Math.max(0, renewAt - this.#clock.now()), () => this.#register());
    } else {
      this.#log(
        "registration.rejected",
        "the Registry rejected endpoint.register; retrying",
        response.error,
      );
      this.#retry();
    }
    return true;
  }

  /**
   * Stops the loop: cancels any pending renewal or retry, abandons an outstanding register, sends
   * `endpoint.unregister` (when the loop was started) and waits for its correlated response up to
   * `timeoutMs`. Resolves with that response, or `undefined` when it was not sent, could not be
   * sent, or did not arrive in time. Calling it again returns the same promise.
   */
  stop(options: RegistrationStopOptions = {}): Promise<EndpointRegistryResponse | undefined> {
    if (this.#stopping !== undefined) return this.#stopping;
    const timeoutMs = requireNumberIn(
      "stop the registration loop",
      options.timeoutMs ?? this.#responseTimeoutMs,
      "timeoutMs",
      0,
      Infinity,
    );
    const started = this.#state !== "unregistered";
    this.#disarm();
    this.#pending = undefined;
    this.#setState("stopped");
    if (!started) return (this.#stopping = Promise.resolve(undefined));
    const request = makeUnregisterEnvelope({
      endpointId: this.#descriptor.endpointId,
      endpointInstanceId: this.#instance,
      requestId: this.#requestId("unregister"),
    });
    const done = withResolvers<EndpointRegistryResponse | undefined>();
    const pending: Pending = { request, sentAtMs: this.#clock.now(), done };
    this.#pending = pending;
    const fail = (error: Error): void => {
      if (this.#pending !== pending) return;
      this.#pending = undefined;
      this.#disarm();
      this.#lastError = error;
      this.#log("registration.unregister_failed", "endpoint.unregister got no answer", error);
      done.resolve(undefined);
    };
    this.#arm(
      timeoutMs,
      () => fail(new Error(`no endpoint.registry.response to unregister within ${timeoutMs} ms`)),
    );
    deliver(() => this.#send(request), (error) => fail(asError(error)));
    return (this.#stopping = done.promise);
  }

  #register(): void {
    const request = makeRegistrationEnvelope(this.#descriptor, {
      endpointInstanceId: this.#instance,
      requestId: this.#requestId("register"),
    });
    const pending: Pending = { request, sentAtMs: this.#clock.now() };
    this.#pending = pending;
    this.#attempts += 1;
    const lost = (error: Error): void => {
      if (this.#pending !== pending) return;
      this.#pending = undefined;
      this.#disarm();
      this.#lastError = error;
      this.#log("registration.lost", "endpoint.register got no answer; retrying", error);
      this.#retry();
    };
    this.#arm(
      this.#responseTimeoutMs,
      () => lost(new Error(`no endpoint.registry.response within ${this.#responseTimeoutMs} ms`)),
    );
    deliver(() => this.#send(request), (error) => lost(asError(error)));
  }

  #log(event: string, message: string, error: unknown): void {
    logSafely(this.#logger, {
      level: "warn",
      event,
      message,
      endpointId: this.#descriptor.endpointId,
      error,
    });
  }

  #retry(): void {
    this.#failures += 1;
    const delay = Math.min(
      this.#maxMs,
      jittered(this.backoffDelayMs(this.#failures), this.#jitter, this.#random),
    );
    this.#setState("retrying");
    this.#arm(delay, () => this.#register());
  }

  #arm(ms: number, callback: () => void): void {
    this.#disarm();
    const timer: { handle: unknown } = { handle: undefined };
    this.#timer = timer;
    timer.handle = this.#clock.setTimeout(() => {
      if (this.#timer !== timer) return;
      this.#timer = undefined;
      callback();
    }, ms);
  }

  #disarm(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer.handle);
    this.#timer = undefined;
  }

  #setState(state: EndpointRegistrationState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#onStateChange?.(state, previous);
  }
}

const CREATE_REGISTRATION = "create an EndpointRegistration";

/** The default `request_id`: the operation and a random UUID, never predictable. */
function unguessableRequestId(operation: "register" | "unregister"): string {
  return `${operation}-${crypto.randomUUID()}`;
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The options of the registration loop ({@linkcode EndpointRegistration}): the descriptor and
 * instance, the transport hooks, lease renewal and backoff, the clock and the logger; its state
 * names and the options of its stop.
 *
 * @module
 */
import type { ToolLogger } from "../endpoint/log.ts";
import type { ToolEndpointDescriptor } from "../endpoint/models.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import type { NodeClock } from "./clock.ts";

/**
 * Where the registration loop is:
 *
 * - `unregistered`: created, not started;
 * - `registering`: the first `endpoint.register` is in flight and no attempt failed yet;
 * - `registered`: the last registration was accepted (a renewal may be in flight);
 * - `retrying`: an attempt was lost or rejected; the loop retries with backoff until one is
 *   accepted;
 * - `stopped`: {@linkcode EndpointRegistration.stop} was called; nothing is sent but the
 *   `endpoint.unregister`.
 */
export type EndpointRegistrationState =
  | "unregistered"
  | "registering"
  | "registered"
  | "retrying"
  | "stopped";

/** The bounded exponential backoff of registration retries. */
export interface RegistrationBackoff {
  /** The delay before the first retry, in ms (default 1000). */
  readonly initialMs?: number;
  /** The largest delay, in ms, jitter included (default 30 000). */
  readonly maxMs?: number;
  /** The growth factor per consecutive failure, at least 1 (default 2). */
  readonly factor?: number;
}

/** Options of {@linkcode EndpointRegistration}. */
export interface EndpointRegistrationOptions {
  /** The exact descriptor to register (normally the handler's `descriptor`). */
  readonly descriptor: ToolEndpointDescriptor;
  /** This process start's instance (see `newEndpointInstanceId`). */
  readonly endpointInstanceId: string;
  /** Publishes one management envelope; a throw or rejection counts as a lost attempt. */
  readonly send: (envelope: ToolEnvelope) => void | Promise<void>;
  /** Monotonic time and timers (default: `performance.now` and the global timers). */
  readonly clock?: NodeClock;
  /** A uniform sample in `[0, 1)` for jitter (default `Math.random`). */
  readonly random?: () => number;
  /**
   * When to renew, as a fraction of `lease_ttl_ms` in `(0, 1)` (default 0.5): the next
   * `endpoint.register` is sent `lease_ttl_ms × renewFraction × (1 ± jitter)` after the accepted
   * one was sent. The send time precedes the Registry's receive time that anchors the lease, so
   * the renewal is never later than that fraction of the lease.
   */
  readonly renewFraction?: number;
  /**
   * Relative jitter in `[0, 1)` applied to renewal and retry delays (default 0.1, ±10 %).
   * `renewFraction × (1 + jitter)` must stay below 1.
   */
  readonly jitter?: number;
  /** Retry backoff after a lost or rejected registration. */
  readonly backoff?: RegistrationBackoff;
  /**
   * How long to wait for the correlated `endpoint.registry.response`, in ms (default 5000); an
   * attempt without one is lost. Also bounds the wait for the unregister response in `stop()`.
   */
  readonly responseTimeoutMs?: number;
  /**
   * Makes the `request_id` of each exchange. The id is what makes a response acceptable, so it
   * must be unguessable by anything that can write to the node's input: the default is
   * `"<operation>-<random UUID>"` (`crypto.randomUUID()`); a counter would let a forged
   * `endpoint.registry.response` be accepted.
   */
  readonly requestId?: (operation: "register" | "unregister") => string;
  /**
   * Where lost and rejected attempts are reported, with the endpoint id: `registration.lost`
   * (no response in time, or the send failed), `registration.rejected` (the Registry refused;
   * the record's error is the `ToolError`), `registration.unregister_failed`; all at level
   * `warn` (the loop retries).
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
  /** Called on every state transition. */
  readonly onStateChange?: (
    state: EndpointRegistrationState,
    previous: EndpointRegistrationState,
  ) => void;
}

/** Options of {@linkcode EndpointRegistration.stop}. */
export interface RegistrationStopOptions {
  /** How long to wait for the unregister response, in ms (default: `responseTimeoutMs`). */
  readonly timeoutMs?: number;
}

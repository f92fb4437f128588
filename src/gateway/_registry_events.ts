/**
 * Registry changes as the gateway publishes them: JSON-ready records (snake_case, as the Wire),
 * the synchronous watchers of {@linkcode ToolGateway.watchRegistry} and the bounded async
 * iterator of {@linkcode ToolGateway.registryEvents} (a slow consumer loses the oldest records
 * and is told how many with one `gap` record).
 *
 * @module
 */
import type { EndpointStatus } from "../endpoint/models.ts";
import type { EndpointRegistryChange } from "../node/registry_records.ts";
// deno-lint-ignore no-unused-vars
import type { ToolGateway } from "./gateway.ts";

/**
 * One Registry change of a {@linkcode ToolGateway}, shaped for JSON (snake_case fields, as the
 * Wire): `registered` (an endpoint got a current instance), `replaced` (another instance took
 * its place), `unregistered`, `expired` (the lease ended), `state` (the current instance reported
 * a different `endpoint.status` state). Lease renewals are not published: a renewal changes no
 * instance, only the lease deadline.
 */
export type GatewayRegistryEvent =
  | {
    readonly kind: "registered" | "replaced" | "unregistered" | "expired";
    /** The Registry revision after the change. */
    readonly revision: number;
    readonly endpoint_id: string;
    /** The new instance (`registered`, `replaced`) or the removed one. */
    readonly endpoint_instance_id: string;
    readonly route_id: string;
    /** The instance a `replaced` record replaced. */
    readonly previous_endpoint_instance_id?: string;
    /** When the new lease ends (monotonic ms of the gateway's clock), for `registered`/`replaced`. */
    readonly lease_deadline_ms?: number;
  }
  | {
    readonly kind: "state";
    /** The Registry revision when the status arrived (a state change does not move it). */
    readonly revision: number;
    readonly endpoint_id: string;
    readonly endpoint_instance_id: string;
    /** The state the instance reported (`ready`, `busy`, `degraded`, `unavailable`). */
    readonly state: string;
    readonly active_invocations: number;
  }
  | {
    /** Records this iterator dropped because its consumer was slower than the changes. */
    readonly kind: "gap";
    readonly dropped: number;
  };

/** Options of {@linkcode ToolGateway.registryEvents}. */
export interface GatewayRegistryEventsOptions {
  /** Ends the iteration (the iterator returns `done`) and releases its watcher. */
  readonly signal?: AbortSignal;
  /**
   * How many records wait for a slow consumer; beyond it the oldest is dropped and counted in
   * the next `gap` record.
   *
   * @default {256}
   */
  readonly maxBuffered?: number;
}

/** A synchronous watcher of the Registry changes. */
export interface RegistryWatcher {
  event(event: GatewayRegistryEvent): void;
  /** The gateway closed. */
  close(): void;
}

/** The JSON record of a Registry change. */
export function changeEvent(change: EndpointRegistryChange): GatewayRegistryEvent {
  const { record } = change;
  const base = {
    kind: change.kind,
    revision: change.revision,
    endpoint_id: record.endpointId,
    endpoint_instance_id: record.endpointInstanceId,
    route_id: record.routeId,
  };
  switch (change.kind) {
    case "registered":
      return Object.freeze({ ...base, lease_deadline_ms: record.leaseDeadlineMs });
    case "replaced":
      return Object.freeze({
        ...base,
        previous_endpoint_instance_id: change.previous.endpointInstanceId,
        lease_deadline_ms: record.leaseDeadlineMs,
      });
    default:
      return Object.freeze(base);
  }
}

/** The JSON record of a reported state change. */
export function stateEvent(
  status: EndpointStatus,
  endpointInstanceId: string,
  revision: number,
): GatewayRegistryEvent {
  return Object.freeze({
    kind: "state",
    revision,
    endpoint_id: status.endpointId,
    endpoint_instance_id: endpointInstanceId,
    state: status.state,
    active_invocations: status.activeInvocations,
  });
}

/** The bounded async iterator of {@linkcode ToolGateway.registryEvents}. */
export class RegistryEventStream
  implements AsyncIterableIterator<GatewayRegistryEvent>, RegistryWatcher {
  readonly #queue: GatewayRegistryEvent[] = [];
  readonly #max: number;
  #dropped = 0;
  #done = false;
  #waiting: ((result: IteratorResult<GatewayRegistryEvent>) => void) | undefined;
  #release: () => void = () => {};
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort = () => this.#finish();

  constructor(max: number, signal: AbortSignal | undefined) {
    this.#max = max;
    this.#signal = signal;
  }

  /** Starts: `release` unsubscribes the watcher. */
  start(release: () => void): this {
    this.#release = release;
    if (this.#done) release();
    else if (this.#signal?.aborted) this.#finish();
    else this.#signal?.addEventListener("abort", this.#onAbort, { once: true });
    return this;
  }

  event(event: GatewayRegistryEvent): void {
    if (this.#done) return;
    if (this.#waiting !== undefined) {
      const resolve = this.#waiting;
      this.#waiting = undefined;
      resolve({ value: event, done: false });
      return;
    }
    if (this.#queue.length >= this.#max) {
      this.#queue.shift();
      this.#dropped += 1;
    }
    this.#queue.push(event);
  }

  close(): void {
    this.#finish();
  }

  next(): Promise<IteratorResult<GatewayRegistryEvent>> {
    if (this.#dropped > 0) {
      const dropped = this.#dropped;
      this.#dropped = 0;
      return Promise.resolve({ value: Object.freeze({ kind: "gap", dropped }), done: false });
    }
    const value = this.#queue.shift();
    if (value !== undefined) return Promise.resolve({ value, done: false });
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => (this.#waiting = resolve));
  }

  return(): Promise<IteratorResult<GatewayRegistryEvent>> {
    this.#finish();
    this.#queue.length = 0;
    this.#dropped = 0;
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#release();
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.({ value: undefined, done: true });
  }
}

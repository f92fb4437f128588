/**
 * The gateway as Registry host: management messages decided by the {@linkcode EndpointRegistry}
 * and answered on their route, the current instances' `endpoint.status` snapshots, the lease
 * timer (leases expire without traffic), and the Registry changes handed to the exchanges
 * (replacement, expiry, unregister).
 *
 * @module
 */
import type { EndpointStatus } from "../endpoint/models.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import type { NodeClock } from "../node/clock.ts";
import { EndpointRegistry } from "../node/registry.ts";
import type { EndpointRegistryChange } from "../node/registry_records.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { endpointStatusFromEnvelope } from "../wire/management_payloads.ts";
import type { GatewayAnswers } from "./_answers.ts";
import { describe, type GatewayCounters, type RouteLink } from "./_records.ts";
import {
  changeEvent,
  type GatewayRegistryEvent,
  type RegistryWatcher,
  stateEvent,
} from "./_registry_events.ts";

/** What {@linkcode RegistryHost} needs from the rest of the gateway. */
export interface RegistryHostParts {
  readonly routes: Readonly<Record<string, string>> | ReadonlyMap<string, string>;
  readonly leaseTtlMs: number | undefined;
  readonly clock: NodeClock;
  readonly logger: ToolLogger;
  readonly links: ReadonlyMap<string, RouteLink>;
  readonly answers: GatewayAnswers;
  readonly stats: GatewayCounters;
  /** Called on every Registry change, after the host updated its own state. */
  readonly onChange: (change: EndpointRegistryChange) => void;
}

/** Hosts the Registry of the gateway's provider routes. */
export class RegistryHost {
  readonly registry: EndpointRegistry;
  readonly #parts: RegistryHostParts;
  readonly #health = new Map<string, EndpointStatus>();
  readonly #watchers = new Set<RegistryWatcher>();
  #leaseTimer: unknown = undefined;
  #closed = false;

  constructor(parts: RegistryHostParts) {
    this.#parts = parts;
    this.registry = new EndpointRegistry({
      routes: parts.routes,
      leaseTtlMs: parts.leaseTtlMs,
      clock: parts.clock,
      onChange: (change) => this.#onRegistryChange(change),
      logger: parts.logger,
    });
  }

  /** The last `endpoint.status` the current instance of `endpointId` reported, if any. */
  endpointStatus(endpointId: string): EndpointStatus | undefined {
    this.registry.expire();
    return this.#health.get(endpointId);
  }

  /** How many watchers (listeners, iterators, `waitFor` calls) are subscribed. */
  get watchers(): number {
    return this.#watchers.size;
  }

  /** Subscribes `watcher` to every later change; returns the unsubscribe function. */
  watch(watcher: RegistryWatcher): () => void {
    if (this.#closed) {
      watcher.close();
      return () => {};
    }
    this.#watchers.add(watcher);
    return () => {
      this.#watchers.delete(watcher);
    };
  }

  /** An `endpoint.register` or `endpoint.unregister` from `routeId`: decided, answered there. */
  manage(routeId: string, request: ToolEnvelope): void {
    const response = this.registry.handle(request, routeId);
    this.#parts.stats.management += 1;
    this.#armLeaseTimer();
    const answers = this.#parts.answers;
    const link = this.#parts.links.get(routeId);
    if (link === undefined) {
      answers.log(
        "error",
        "gateway.no_link",
        `route '${routeId}' has no link: ${describe(response)} not sent`,
      );
      return;
    }
    try {
      const sent = link.send(link.frame(response) as never);
      Promise.resolve(sent).catch((error) =>
        answers.log(
          "error",
          "gateway.send_failed",
          `sending ${describe(response)} on route '${routeId}' failed: ${error}`,
        )
      );
    } catch (error) {
      answers.log(
        "error",
        "gateway.send_failed",
        `sending ${describe(response)} on route '${routeId}' failed: ${error}`,
      );
    }
  }

  /** An `endpoint.status` from the route of `endpointId`: kept when its instance is current. */
  status(endpointId: string, envelope: ToolEnvelope): void {
    const current = this.registry.lookup(endpointId);
    if (
      envelope.endpointId !== endpointId ||
      current?.endpointInstanceId !== envelope.endpointInstanceId
    ) {
      this.#parts.answers.drop(
        `endpoint.status of instance '${envelope.endpointInstanceId}' is not current`,
      );
      return;
    }
    const status = endpointStatusFromEnvelope(envelope);
    const before = this.#health.get(endpointId);
    this.#health.set(endpointId, status);
    if (before?.state !== status.state) {
      this.#publish(stateEvent(status, envelope.endpointInstanceId!, this.registry.revision));
    }
  }

  /** Clears the lease timer; later Registry changes arm none. */
  close(): void {
    this.#closed = true;
    if (this.#leaseTimer !== undefined) this.#parts.clock.clearTimeout(this.#leaseTimer);
    this.#leaseTimer = undefined;
    const watchers = [...this.#watchers];
    this.#watchers.clear();
    for (const watcher of watchers) watcher.close();
  }

  #onRegistryChange(change: EndpointRegistryChange): void {
    this.#health.delete(change.record.endpointId);
    this.#armLeaseTimer();
    this.#parts.onChange(change);
    this.#publish(changeEvent(change));
  }

  /** Hands `event` to every watcher; a throwing one is logged (`gateway.watcher_failed`). */
  #publish(event: GatewayRegistryEvent): void {
    for (const watcher of [...this.#watchers]) {
      try {
        watcher.event(event);
      } catch (error) {
        this.#parts.answers.log(
          "error",
          "gateway.watcher_failed",
          `a Registry watcher threw on ${event.kind} of '${
            "endpoint_id" in event ? event.endpoint_id : ""
          }': ${error}`,
          error,
        );
      }
    }
  }

  #armLeaseTimer(): void {
    if (this.#closed) return;
    const clock = this.#parts.clock;
    if (this.#leaseTimer !== undefined) clock.clearTimeout(this.#leaseTimer);
    this.#leaseTimer = undefined;
    const next = this.registry.nextLeaseDeadlineMs();
    if (next === undefined) return;
    this.#leaseTimer = clock.setTimeout(() => {
      this.#leaseTimer = undefined;
      this.registry.expire();
      this.#armLeaseTimer();
    }, Math.max(0, next - clock.now()));
  }
}

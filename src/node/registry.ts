// Stays whole: one Registry; register, unregister, expiry and lookups share its records and revision.
/**
 * An in-memory endpoint Registry: the Gateway's record of which provider instance currently
 * serves each configured endpoint, with the exact rules of `forge.tool.endpoint/v1alpha1`.
 *
 * Rules ported from PROTOCOL.md (interfaces/forge_tool/PROTOCOL.md of Forgelab-Robotics/forge):
 *
 * - Authority (8.5, 13.3): each statically configured, trusted management route authorizes one
 *   configured `endpoint_id`. Message contents grant nothing: the envelope `endpoint_id` and, for
 *   `endpoint.register`, the descriptor `endpoint_id` are checked against the route. Here a route
 *   is a route ID the transport supplies (for example the Dora input a message arrived on), and
 *   the configuration maps each route ID to exactly one endpoint and each endpoint to exactly one
 *   route, so "the same trusted route" is always the route of the endpoint's record.
 * - A request on a route that is not configured is not trusted: it is refused with a thrown
 *   `FORGE_PROTOCOL_ROUTE_MISMATCH` and no response (9.7: a receiver must not answer an untrusted
 *   request as though it belonged to a provider route).
 * - A route/endpoint mismatch on a configured route is rejected without state change (8.5):
 *   `FORGE_PROTOCOL_ROUTE_MISMATCH`.
 * - State (8.5): at most one current record per configured endpoint: the current
 *   `endpoint_instance_id`, the exact descriptor and the lease deadline. The instance ID is
 *   opaque identity, never newness (5.1): instances are compared for equality only.
 * - `request_id` is correlation only, never a deduplication key (8.5, 11.2).
 * - Register, no current instance: accept, establish, revision + 1.
 * - Register, same current instance, exactly equal descriptor: accept and renew the lease,
 *   revision unchanged (8.1, 8.5). "Exactly equal" is equality of the whole descriptor payload:
 *   protocol version, endpoint ID, and the same operations in the same order with the same six
 *   fields each.
 * - Register, same current instance, changed descriptor: reject without replacing the
 *   descriptor, renewing the lease or changing the revision: `ENDPOINT_DESCRIPTOR_CHANGED`.
 * - Register, different instance on the (same) trusted route: atomically replace the record,
 *   revision + 1 (once; no intermediate absent state is observable).
 * - Unregister of the current instance: remove, revision + 1.
 * - Unregister with no current instance (authorized): accept, no state or revision change.
 * - Unregister from a stale instance while another is current: reject, no mutation:
 *   `STALE_ENDPOINT_INSTANCE` "endpoint instance is not current" (the code and message of the
 *   8.3 example).
 * - Lease expiry: remove, revision + 1 (once per expired record).
 * - Revision (8.6): process-local, starts at 0 with empty state; increments only for
 *   absent-to-current registration, replacement, matching unregister and expiry; equal renewal,
 *   absent unregister and every rejection leave it. Every response carries the revision after
 *   its decision.
 * - Responses (8.3, 11.2): an accepted register carries `lease_ttl_ms` (a duration); an accepted
 *   unregister and every rejection carry none; a rejection carries a `ToolError`; the response
 *   copies `request_id`, `endpoint_id` and `endpoint_instance_id` and echoes the operation.
 * - Lease time (4.3, 8.3, 8.5): the lease starts or renews only after a registration is
 *   accepted, at the Registry's trusted monotonic receive time (the injected clock's `now()` when
 *   `handle` runs); it is never a Wire field.
 * - `endpoint.status` is not a Registry mutation (8.5); this class does not take it.
 *
 * @module
 */
import { isBlank } from "../_internal/text.ts";
import { consoleLogger, logSafely, type ToolLogger } from "../endpoint/log.ts";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import {
  EndpointRegistryResponse,
  type ToolEndpointDescriptor,
  ToolError,
} from "../endpoint/models.ts";
import { ToolEnvelope } from "../wire/envelope.ts";
import { makeEndpointRegistryResponseEnvelope } from "../wire/factories.ts";
import {
  endpointDescriptorFromPayload,
  endpointDescriptorToPayload,
} from "../wire/management_payloads.ts";
import { type MonotonicClock, SYSTEM_CLOCK } from "./clock.ts";
import { optionMessage } from "../_internal/options.ts";

import {
  DEFAULT_LEASE_TTL_MS,
  type EndpointRegistryChange,
  EndpointRegistryErrorCodes,
  type EndpointRegistryOptions,
  type EndpointRegistryRecord,
} from "./registry_records.ts";

const CREATE_REGISTRY = "create an EndpointRegistry";
/** What `expire()` returns when no lease ended (one frozen array for every such call). */
const NONE_EXPIRED: readonly EndpointRegistryRecord[] = Object.freeze([]);

function logListenerError(
  logger: ToolLogger,
  error: unknown,
  change: EndpointRegistryChange,
): void {
  logSafely(logger, {
    level: "error",
    event: "registry.listener_failed",
    message: `onChange failed for ${change.kind} of instance ${change.record.endpointInstanceId} ` +
      `(revision ${change.revision})`,
    endpointId: change.record.endpointId,
    error,
  });
}

function rejection(code: string, message: string): ToolError {
  return new ToolError({ code, message, retryable: false });
}

function sameJson(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (typeof left !== "object" || typeof right !== "object" || left === null || right === null) {
    return false;
  }
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  if (leftKeys.length !== rightKeys.length) return false;
  for (const key of leftKeys) {
    if (!Object.hasOwn(right, key)) return false;
    if (
      !sameJson((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key])
    ) {
      return false;
    }
  }
  return true;
}

/**
 * True when two descriptors are exactly equal: the same protocol version, endpoint ID, and
 * operations in the same order with the same name, semantics, capabilities and
 * `max_concurrency` (equality of their Wire payloads).
 */
export function descriptorsEqual(
  left: ToolEndpointDescriptor,
  right: ToolEndpointDescriptor,
): boolean {
  return left === right ||
    sameJson(endpointDescriptorToPayload(left), endpointDescriptorToPayload(right));
}

/**
 * The Gateway-side endpoint Registry of PROTOCOL.md 8.5–8.6, in memory: one current record per
 * configured endpoint, authorized by a trusted management route, with leases on an injected
 * monotonic clock and a process-local revision.
 *
 * {@linkcode EndpointRegistry.handle} answers one `endpoint.register` or `endpoint.unregister`
 * with its `endpoint.registry.response` (accepted or rejected). Expiry is applied at
 * `clock.now()` before every decision and every read, and by {@linkcode EndpointRegistry.expire};
 * {@linkcode EndpointRegistry.nextLeaseDeadlineMs} tells a host when to call `expire()` so that
 * expiry is observed without traffic.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEndpointDescriptor, ToolOperationDescriptor } from "@forge/tool";
 * import { makeRegistrationEnvelope, TOOL_ENDPOINT_PROTOCOL } from "@forge/tool/wire";
 * import { EndpointRegistry } from "@forge/tool/node";
 * const registry = new EndpointRegistry({ routes: { "yolo/management": "vision.yolo" } });
 * const descriptor = new ToolEndpointDescriptor({
 *   protocolVersion: TOOL_ENDPOINT_PROTOCOL,
 *   endpointId: "vision.yolo",
 *   operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
 * });
 * const request = makeRegistrationEnvelope(descriptor, {
 *   endpointInstanceId: "instance-1",
 *   requestId: "register-1",
 * });
 * const response = registry.handle(request, "yolo/management");
 * assertEquals(response.payload, {
 *   lease_ttl_ms: 30000,
 *   operation: "register",
 *   registry_revision: 1,
 *   status: "accepted",
 * });
 * assertEquals(registry.lookup("vision.yolo")?.endpointInstanceId, "instance-1");
 * ```
 */
export class EndpointRegistry {
  readonly #routes: ReadonlyMap<string, string>;
  readonly #leaseTtlMs: number;
  readonly #clock: MonotonicClock;
  readonly #onChange: ((change: EndpointRegistryChange) => void) | undefined;
  readonly #logger: ToolLogger;
  readonly #records = new Map<string, EndpointRegistryRecord>();
  /**
   * At most the earliest lease deadline of the current records (`Infinity` when there is none):
   * before it, `expire()` has nothing to remove. Lowered by every record set, recomputed by each
   * walk.
   */
  #earliestDeadlineMs = Infinity;
  #revision = 0;

  /** Checks the route table (non-empty IDs, one route per endpoint) and the lease. */
  constructor(options: EndpointRegistryOptions) {
    if (options === null || typeof options !== "object") {
      throw new TypeError(optionMessage(CREATE_REGISTRY, "options", "an object", options));
    }
    const source: unknown = options.routes;
    if (source === null || typeof source !== "object") {
      throw new TypeError(
        optionMessage(
          CREATE_REGISTRY,
          "routes",
          "a record or a Map of route ID to endpoint ID",
          source,
        ),
      );
    }
    const entries = source instanceof Map
      ? [...(source as Map<unknown, unknown>)]
      : Object.entries(source as Record<string, unknown>);
    const routes = new Map<string, string>();
    const endpoints = new Set<string>();
    for (const [routeId, endpointId] of entries) {
      if (typeof routeId !== "string" || isBlank(routeId)) {
        throw new TypeError(
          optionMessage(CREATE_REGISTRY, "routes", "keyed by non-empty route IDs", routeId),
        );
      }
      if (typeof endpointId !== "string" || isBlank(endpointId)) {
        throw new TypeError(
          optionMessage(
            CREATE_REGISTRY,
            `routes.${routeId}`,
            "a non-empty endpoint ID",
            endpointId,
          ),
        );
      }
      if (endpoints.has(endpointId)) {
        throw new RangeError(
          optionMessage(
            CREATE_REGISTRY,
            "routes",
            `one route per endpoint ('${endpointId}' is configured on more than one route)`,
            routeId,
          ),
        );
      }
      endpoints.add(endpointId);
      routes.set(routeId, endpointId);
    }
    const leaseTtlMs: unknown = options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    if (!Number.isSafeInteger(leaseTtlMs) || (leaseTtlMs as number) < 1) {
      throw new RangeError(
        optionMessage(CREATE_REGISTRY, "leaseTtlMs", "an integer in [1, 2^53 - 1]", leaseTtlMs),
      );
    }
    const clock = options.clock ?? SYSTEM_CLOCK;
    if (typeof clock?.now !== "function") {
      throw new TypeError(optionMessage(CREATE_REGISTRY, "clock", "an object with now()", clock));
    }
    this.#routes = routes;
    this.#leaseTtlMs = leaseTtlMs as number;
    this.#clock = clock;
    if (options.onChange !== undefined && typeof options.onChange !== "function") {
      throw new TypeError(
        optionMessage(CREATE_REGISTRY, "onChange", "a function", options.onChange),
      );
    }
    this.#onChange = options.onChange;
    if (options.logger !== undefined && typeof options.logger !== "function") {
      throw new TypeError(optionMessage(CREATE_REGISTRY, "logger", "a function", options.logger));
    }
    this.#logger = options.logger ?? consoleLogger;
  }

  /** The process-local availability revision (after applying expiry). Starts at 0. */
  get revision(): number {
    this.expire();
    return this.#revision;
  }

  /** The lease granted on every accepted registration, in milliseconds. */
  get leaseTtlMs(): number {
    return this.#leaseTtlMs;
  }

  /** The configured routes: route ID -> endpoint ID. */
  get routes(): ReadonlyMap<string, string> {
    return new Map(this.#routes);
  }

  /** Every current record (after applying expiry), in registration order. */
  records(): readonly EndpointRegistryRecord[] {
    this.expire();
    return Object.freeze([...this.#records.values()]);
  }

  /** The current record of `endpointId` (after applying expiry), or `undefined`. */
  lookup(endpointId: string): EndpointRegistryRecord | undefined {
    this.expire();
    return this.#records.get(endpointId);
  }

  /** The earliest lease deadline of the current records (monotonic ms), or `undefined`. */
  nextLeaseDeadlineMs(): number | undefined {
    let next: number | undefined;
    for (const record of this.#records.values()) {
      if (next === undefined || record.leaseDeadlineMs < next) next = record.leaseDeadlineMs;
    }
    return next;
  }

  /**
   * Removes every record whose lease deadline is at or before `clock.now()`, incrementing the
   * revision once per removed record, and returns the removed records.
   */
  expire(): readonly EndpointRegistryRecord[] {
    const now = this.#clock.now();
    // No lease ends before the earliest deadline: every lookup of a routed request comes here,
    // and then it walks no record and allocates nothing.
    if (now < this.#earliestDeadlineMs) return NONE_EXPIRED;
    const expired: EndpointRegistryRecord[] = [];
    for (const [endpointId, record] of this.#records) {
      if (record.leaseDeadlineMs <= now) {
        this.#records.delete(endpointId);
        this.#revision += 1;
        expired.push(record);
        this.#notify({ kind: "expired", record, revision: this.#revision });
      }
    }
    // After the walk (a listener above may have registered): the earliest deadline left.
    this.#earliestDeadlineMs = this.nextLeaseDeadlineMs() ?? Infinity;
    return expired.length === 0 ? NONE_EXPIRED : Object.freeze(expired);
  }

  /** Sets the record of `endpointId`, keeping the bound on the earliest lease deadline. */
  #put(endpointId: string, record: EndpointRegistryRecord): void {
    this.#records.set(endpointId, record);
    if (record.leaseDeadlineMs < this.#earliestDeadlineMs) {
      this.#earliestDeadlineMs = record.leaseDeadlineMs;
    }
  }

  /**
   * Decides one `endpoint.register` or `endpoint.unregister` that arrived on the trusted route
   * `routeId`, and returns its correlated `endpoint.registry.response`.
   *
   * Throws a `FORGE_PROTOCOL_ROUTE_MISMATCH` {@linkcode ToolProtocolError} (and answers nothing)
   * when `routeId` is not a configured route, and a `RangeError` for any other message type.
   */
  handle(request: ToolEnvelope, routeId: string): ToolEnvelope {
    if (!(request instanceof ToolEnvelope)) throw new TypeError("request must be a ToolEnvelope");
    if (
      request.messageType !== "endpoint.register" && request.messageType !== "endpoint.unregister"
    ) {
      throw new RangeError("the Registry handles endpoint.register and endpoint.unregister only");
    }
    const routeEndpoint = typeof routeId === "string" ? this.#routes.get(routeId) : undefined;
    if (routeEndpoint === undefined) {
      throw new ToolProtocolError(
        ToolErrorCodes.ROUTE_MISMATCH,
        "management request arrived on a route that is not configured",
        "route",
      );
    }
    this.expire();
    const response = request.messageType === "endpoint.register"
      ? this.#register(request, routeId, routeEndpoint)
      : this.#unregister(request, routeEndpoint);
    return makeEndpointRegistryResponseEnvelope(response, request);
  }

  /**
   * Tells the listener about an applied change. Its failure never leaves the Registry: the state
   * is already consistent, and the caller still gets its answer or read.
   */
  #notify(change: EndpointRegistryChange): void {
    if (this.#onChange === undefined) return;
    try {
      this.#onChange(change);
    } catch (error) {
      logListenerError(this.#logger, error, change);
    }
  }

  #reject(operation: "register" | "unregister", error: ToolError): EndpointRegistryResponse {
    return new EndpointRegistryResponse({
      operation,
      status: "rejected",
      registryRevision: this.#revision,
      error,
    });
  }

  #register(
    request: ToolEnvelope,
    routeId: string,
    routeEndpoint: string,
  ): EndpointRegistryResponse {
    if (request.endpointId !== routeEndpoint) {
      return this.#reject(
        "register",
        rejection(
          EndpointRegistryErrorCodes.ROUTE_MISMATCH,
          `route authorizes endpoint '${routeEndpoint}', not '${request.endpointId}'`,
        ),
      );
    }
    let descriptor: ToolEndpointDescriptor;
    try {
      descriptor = endpointDescriptorFromPayload(request.payload);
    } catch (error) {
      if (!(error instanceof ToolProtocolError)) throw error;
      const code = error.code === ToolErrorCodes.UNSUPPORTED_VERSION
        ? EndpointRegistryErrorCodes.UNSUPPORTED_VERSION
        : EndpointRegistryErrorCodes.INVALID_PAYLOAD;
      const where = error.path === undefined ? "" : ` (at ${error.path})`;
      return this.#reject("register", rejection(code, `${error.message}${where}`));
    }
    if (descriptor.endpointId !== routeEndpoint) {
      return this.#reject(
        "register",
        rejection(
          EndpointRegistryErrorCodes.ROUTE_MISMATCH,
          `route authorizes endpoint '${routeEndpoint}', not descriptor endpoint '${descriptor.endpointId}'`,
        ),
      );
    }
    const now = this.#clock.now();
    const instance = request.endpointInstanceId!;
    const current = this.#records.get(routeEndpoint);
    if (current !== undefined && current.endpointInstanceId === instance) {
      if (!descriptorsEqual(current.descriptor, descriptor)) {
        return this.#reject(
          "register",
          rejection(
            EndpointRegistryErrorCodes.ENDPOINT_DESCRIPTOR_CHANGED,
            "the current endpoint instance registered a different descriptor",
          ),
        );
      }
      this.#put(
        routeEndpoint,
        Object.freeze({ ...current, renewedAtMs: now, leaseDeadlineMs: now + this.#leaseTtlMs }),
      );
    } else {
      const record: EndpointRegistryRecord = Object.freeze({
        routeId,
        endpointId: routeEndpoint,
        endpointInstanceId: instance,
        descriptor,
        registeredAtMs: now,
        renewedAtMs: now,
        leaseDeadlineMs: now + this.#leaseTtlMs,
      });
      this.#put(routeEndpoint, record);
      this.#revision += 1;
      this.#notify(
        current === undefined
          ? { kind: "registered", record, revision: this.#revision }
          : { kind: "replaced", record, previous: current, revision: this.#revision },
      );
    }
    return new EndpointRegistryResponse({
      operation: "register",
      status: "accepted",
      registryRevision: this.#revision,
      leaseTtlMs: this.#leaseTtlMs,
    });
  }

  #unregister(request: ToolEnvelope, routeEndpoint: string): EndpointRegistryResponse {
    if (request.endpointId !== routeEndpoint) {
      return this.#reject(
        "unregister",
        rejection(
          EndpointRegistryErrorCodes.ROUTE_MISMATCH,
          `route authorizes endpoint '${routeEndpoint}', not '${request.endpointId}'`,
        ),
      );
    }
    if (Object.keys(request.payload).length !== 0) {
      return this.#reject(
        "unregister",
        rejection(EndpointRegistryErrorCodes.INVALID_PAYLOAD, "unknown fields (at payload)"),
      );
    }
    const current = this.#records.get(routeEndpoint);
    if (current !== undefined) {
      if (current.endpointInstanceId !== request.endpointInstanceId) {
        return this.#reject(
          "unregister",
          rejection(
            EndpointRegistryErrorCodes.STALE_ENDPOINT_INSTANCE,
            "endpoint instance is not current",
          ),
        );
      }
      this.#records.delete(routeEndpoint);
      this.#revision += 1;
      this.#notify({ kind: "unregistered", record: current, revision: this.#revision });
    }
    return new EndpointRegistryResponse({
      operation: "unregister",
      status: "accepted",
      registryRevision: this.#revision,
    });
  }
}

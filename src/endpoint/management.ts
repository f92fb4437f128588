/**
 * The endpoint's health snapshot and the Registry decision (reference b.12, b.15).
 *
 * @module
 */
import {
  type EndpointRegistryOperation,
  type EndpointRegistryResponseStatus,
  type EndpointState,
  MAX_SAFE_JSON_INTEGER,
} from "./constants.ts";
import type { JsonObject } from "../_internal/json.ts";
import { fieldError, isIntegerIn, requireNonEmpty } from "../_internal/fields.ts";

import {
  ENDPOINT_STATES,
  jsonField,
  REGISTRY_OPERATIONS,
  REGISTRY_RESPONSE_STATUSES,
  requireInit,
  requireMember,
  requireOptionalError,
} from "./_model_rules.ts";
import type { ToolError } from "./outcomes.ts";

/** The init object of an {@linkcode EndpointStatus}. */
export interface EndpointStatusInit {
  /** The logical endpoint ID. */
  endpointId: string;
  /** The endpoint's health state. */
  state: EndpointState;
  /** Executions currently active, in `[0, 2^53 − 1]` (default 0). */
  activeInvocations?: number;
  /** Structured JSON details (copied and frozen; default `{}`). */
  details?: object;
}

/**
 * The current health and aggregate concurrency usage of an endpoint.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EndpointStatus } from "@forge/tool/wire";
 * const status = new EndpointStatus({ endpointId: "robot.arm", state: "ready" });
 * assertEquals(status.activeInvocations, 0);
 * ```
 */
export class EndpointStatus {
  /** The logical endpoint ID. */
  readonly endpointId: string;
  /** The endpoint's health state. */
  readonly state: EndpointState;
  /** Executions currently active. */
  readonly activeInvocations: number;
  /** Structured JSON details (deeply frozen). */
  readonly details: JsonObject;

  /**
   * Validates and freezes an endpoint status. Check order: `endpoint_id`, `state`,
   * `active_invocations`, `details`.
   */
  constructor(init: EndpointStatusInit) {
    requireInit(init, "EndpointStatus");
    const endpointId = requireNonEmpty(init.endpointId, "endpoint_id");
    const state = requireMember<EndpointState>(init.state, ENDPOINT_STATES, "endpoint state");
    const activeInvocations = init.activeInvocations === undefined ? 0 : init.activeInvocations;
    if (!isIntegerIn(activeInvocations, 0)) {
      throw fieldError(RangeError, `active_invocations must be in [0, ${MAX_SAFE_JSON_INTEGER}]`);
    }
    const details = jsonField(init.details, "details");
    this.endpointId = endpointId;
    this.state = state;
    this.activeInvocations = activeInvocations + 0; // -0 -> 0
    this.details = details;
    Object.freeze(this);
  }
}

// ---------------------------------------------------------------------------------------------
// Registry decision (b.15)

/** The init object of an {@linkcode EndpointRegistryResponse}. */
export interface EndpointRegistryResponseInit {
  /** The Registry operation answered. */
  operation: EndpointRegistryOperation;
  /** Whether the Registry accepted the request. */
  status: EndpointRegistryResponseStatus;
  /** The Registry revision, in `[0, 2^53 − 1]`. */
  registryRevision: number;
  /** The lease duration in milliseconds: required for an accepted register, else absent. */
  leaseTtlMs?: number;
  /** The error of a rejected response (required there, absent otherwise). */
  error?: ToolError;
}

/**
 * The Registry's decision on one endpoint-management request.
 *
 * `leaseTtlMs` (`lease_ttl_ms` on the Wire) is a lease duration in milliseconds, not an
 * observation timestamp or an absolute time. An accepted `register` carries it; an accepted
 * `unregister` and every rejection do not. A rejection carries an error; an acceptance does not.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { EndpointRegistryResponse } from "@forge/tool/wire";
 * const lease = new EndpointRegistryResponse({
 *   operation: "register",
 *   status: "accepted",
 *   registryRevision: 7,
 *   leaseTtlMs: 30_000,
 * });
 * assertEquals(lease.leaseTtlMs, 30000);
 * ```
 */
export class EndpointRegistryResponse {
  /** The Registry operation answered. */
  readonly operation: EndpointRegistryOperation;
  /** Whether the Registry accepted the request. */
  readonly status: EndpointRegistryResponseStatus;
  /** The Registry revision. */
  readonly registryRevision: number;
  /** The lease duration in milliseconds, or `undefined`. */
  readonly leaseTtlMs: number | undefined;
  /** The error of a rejected response, or `undefined`. */
  readonly error: ToolError | undefined;

  /**
   * Validates and freezes a Registry decision. Check order: `operation`, `status`,
   * `registry_revision`, `lease_ttl_ms`, error type, then the status rules.
   */
  constructor(init: EndpointRegistryResponseInit) {
    requireInit(init, "EndpointRegistryResponse");
    const operation = requireMember<EndpointRegistryOperation>(
      init.operation,
      REGISTRY_OPERATIONS,
      "endpoint registry operation",
    );
    const status = requireMember<EndpointRegistryResponseStatus>(
      init.status,
      REGISTRY_RESPONSE_STATUSES,
      "endpoint registry response status",
    );
    const registryRevision: unknown = init.registryRevision;
    if (!isIntegerIn(registryRevision, 0)) {
      throw fieldError(RangeError, `registry_revision must be in [0, ${MAX_SAFE_JSON_INTEGER}]`);
    }
    const leaseTtlMs: unknown = init.leaseTtlMs;
    if (leaseTtlMs !== undefined && !isIntegerIn(leaseTtlMs, 1)) {
      throw fieldError(
        RangeError,
        `lease_ttl_ms must be in [1, ${MAX_SAFE_JSON_INTEGER}] when provided`,
      );
    }
    const error: unknown = init.error;
    requireOptionalError(error);
    if (status === "rejected") {
      if (leaseTtlMs !== undefined) {
        throw fieldError(RangeError, "a rejected registry response must not contain lease_ttl_ms");
      }
      if (error === undefined) {
        throw fieldError(RangeError, "a rejected registry response must contain an error");
      }
    } else {
      if (error !== undefined) {
        throw fieldError(RangeError, "an accepted registry response must not contain an error");
      }
      if (operation === "register") {
        if (leaseTtlMs === undefined) {
          throw fieldError(RangeError, "an accepted register response must contain lease_ttl_ms");
        }
      } else if (leaseTtlMs !== undefined) {
        throw fieldError(
          RangeError,
          "an accepted unregister response must not contain lease_ttl_ms",
        );
      }
    }
    this.operation = operation;
    this.status = status;
    this.registryRevision = registryRevision + 0; // -0 -> 0
    this.leaseTtlMs = leaseTtlMs as number | undefined;
    this.error = error as ToolError | undefined;
    Object.freeze(this);
  }
}

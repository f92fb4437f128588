/**
 * The data model of the endpoint Registry ({@linkcode EndpointRegistry}): its rejection codes,
 * the default lease, the record of the instance serving an endpoint, the change notices its
 * listener receives, and its options.
 *
 * @module
 */
import { ToolErrorCodes } from "../endpoint/errors.ts";
import type { ToolLogger } from "../endpoint/log.ts";
import type { ToolEndpointDescriptor } from "../endpoint/models.ts";
import type { MonotonicClock } from "./clock.ts";

/** The Registry's rejection codes (the `code` of the `ToolError` of a rejected response). */
export interface EndpointRegistryErrorCodeTable {
  /** An unregister from an instance that is not the current one (PROTOCOL.md 8.3, 8.5). */
  readonly STALE_ENDPOINT_INSTANCE: "STALE_ENDPOINT_INSTANCE";
  /** A register from the current instance with a descriptor other than the registered one. */
  readonly ENDPOINT_DESCRIPTOR_CHANGED: "ENDPOINT_DESCRIPTOR_CHANGED";
  /** The envelope or descriptor endpoint is not the endpoint the route authorizes. */
  readonly ROUTE_MISMATCH: "FORGE_PROTOCOL_ROUTE_MISMATCH";
  /** The register descriptor or the unregister payload is invalid. */
  readonly INVALID_PAYLOAD: "FORGE_PROTOCOL_INVALID_PAYLOAD";
  /** The descriptor declares another protocol version. */
  readonly UNSUPPORTED_VERSION: "FORGE_PROTOCOL_UNSUPPORTED_VERSION";
}

/**
 * The codes of the Registry's rejections. `STALE_ENDPOINT_INSTANCE` is the code of the
 * PROTOCOL.md 8.3 example; the protocol names no code for a changed descriptor, so this package
 * uses `ENDPOINT_DESCRIPTOR_CHANGED` in the same style; route and payload failures reuse the
 * package's `FORGE_PROTOCOL_*` codes.
 */
export const EndpointRegistryErrorCodes: EndpointRegistryErrorCodeTable = Object.freeze(
  {
    STALE_ENDPOINT_INSTANCE: "STALE_ENDPOINT_INSTANCE",
    ENDPOINT_DESCRIPTOR_CHANGED: "ENDPOINT_DESCRIPTOR_CHANGED",
    ROUTE_MISMATCH: ToolErrorCodes.ROUTE_MISMATCH,
    INVALID_PAYLOAD: ToolErrorCodes.INVALID_PAYLOAD,
    UNSUPPORTED_VERSION: ToolErrorCodes.UNSUPPORTED_VERSION,
  } as const,
);

/** The default lease the Registry grants, in milliseconds (30 s, as the PROTOCOL.md examples). */
export const DEFAULT_LEASE_TTL_MS = 30_000;

/** The current availability record of one endpoint. */
export interface EndpointRegistryRecord {
  /** The trusted route the record was registered on. */
  readonly routeId: string;
  /** The logical endpoint. */
  readonly endpointId: string;
  /** The current provider instance. */
  readonly endpointInstanceId: string;
  /** The exact descriptor registered by that instance. */
  readonly descriptor: ToolEndpointDescriptor;
  /** When the current instance's registration was accepted first (monotonic ms). */
  readonly registeredAtMs: number;
  /** When the lease was last started or renewed (monotonic ms). */
  readonly renewedAtMs: number;
  /** When the lease ends unless renewed (monotonic ms): `renewedAtMs + leaseTtlMs`. */
  readonly leaseDeadlineMs: number;
}

/** What changed in the Registry, as reported to {@linkcode EndpointRegistryOptions.onChange}. */
export type EndpointRegistryChange =
  | {
    /** An endpoint with no current instance got one. */
    readonly kind: "registered";
    /** The new record. */
    readonly record: EndpointRegistryRecord;
    /** The revision after the change. */
    readonly revision: number;
  }
  | {
    /** Another instance replaced the current one, atomically. */
    readonly kind: "replaced";
    /** The new record. */
    readonly record: EndpointRegistryRecord;
    /** The record it replaced. */
    readonly previous: EndpointRegistryRecord;
    /** The revision after the change. */
    readonly revision: number;
  }
  | {
    /** The current instance unregistered, or its lease expired. */
    readonly kind: "unregistered" | "expired";
    /** The removed record. */
    readonly record: EndpointRegistryRecord;
    /** The revision after the change. */
    readonly revision: number;
  };

/** Options of {@linkcode EndpointRegistry}. */
export interface EndpointRegistryOptions {
  /**
   * The statically configured trusted management routes: route ID -> the one endpoint ID it
   * authorizes. Each endpoint has exactly one route.
   */
  readonly routes: Readonly<Record<string, string>> | ReadonlyMap<string, string>;
  /** The lease granted on every accepted registration, in ms (default 30 000). */
  readonly leaseTtlMs?: number;
  /** The trusted monotonic receive clock (default `performance.now`). */
  readonly clock?: MonotonicClock;
  /**
   * Called after every state change, with the revision after it. The change is applied (and the
   * request answered) whatever the listener does: a throw is logged (see `logger`).
   */
  readonly onChange?: (change: EndpointRegistryChange) => void;
  /**
   * Where a throwing `onChange` is reported: one `error` record `registry.listener_failed` with
   * the endpoint id, the cause, and the change's kind, instance and revision in the message. The
   * Registry's state and answer are unaffected.
   *
   * @default {consoleLogger}
   */
  readonly logger?: ToolLogger;
}

/**
 * Discovery through the gateway: waiting until an endpoint has a current registration
 * ({@linkcode ToolGateway.waitFor}), on the Registry watchers and the gateway's clock.
 *
 * @module
 */
import type { NodeClock } from "../node/clock.ts";
import type { EndpointRegistry } from "../node/registry.ts";
import type { EndpointRegistryRecord } from "../node/registry_records.ts";
import { ToolCallError } from "../client/errors.ts";
import { optionMessage } from "../_internal/options.ts";
import { unavailableError } from "./_answers.ts";
import type { RegistryWatcher } from "./_registry_events.ts";
// deno-lint-ignore no-unused-vars
import type { ToolGateway } from "./gateway.ts";

/** Options of {@linkcode ToolGateway.waitFor}. */
export interface ToolGatewayWaitOptions {
  /** Abandons the wait: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * How long to wait for a registration, in milliseconds (measured on the gateway's clock);
   * then the promise rejects with a retryable `FORGE_ENDPOINT_UNAVAILABLE` {@linkcode
   * ToolCallError}. Without it the wait lasts until a registration, the signal or `close()`.
   *
   * @default {undefined}
   */
  readonly timeoutMs?: number;
}

/** What the wait needs from the gateway. */
export interface DiscoveryParts {
  readonly registry: EndpointRegistry;
  readonly clock: NodeClock;
  readonly watch: (watcher: RegistryWatcher) => () => void;
  readonly closed: () => boolean;
}

const WAIT = "wait for an endpoint";

/** {@linkcode ToolGateway.waitFor}. */
export function waitForEndpoint(
  parts: DiscoveryParts,
  endpointId: string,
  options: ToolGatewayWaitOptions = {},
): Promise<EndpointRegistryRecord> {
  if (typeof endpointId !== "string") {
    return Promise.reject(
      new TypeError(optionMessage(WAIT, "endpointId", "a string", endpointId)),
    );
  }
  if (options === null || typeof options !== "object") {
    return Promise.reject(new TypeError(optionMessage(WAIT, "options", "an object", options)));
  }
  const { signal, timeoutMs } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    return Promise.reject(new TypeError(optionMessage(WAIT, "signal", "an AbortSignal", signal)));
  }
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== "number" || Number.isNaN(timeoutMs) || timeoutMs < 0)
  ) {
    return Promise.reject(
      new RangeError(optionMessage(WAIT, "timeoutMs", "a non-negative number", timeoutMs)),
    );
  }
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (parts.closed()) return Promise.reject(closedError(endpointId));
  const current = parts.registry.lookup(endpointId);
  if (current !== undefined) return Promise.resolve(current);
  const { promise, resolve, reject } = Promise.withResolvers<EndpointRegistryRecord>();
  const { clock } = parts;
  let timer: unknown = undefined;
  let unwatch: () => void = () => {};
  const cleanup = () => {
    unwatch();
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
    signal?.removeEventListener("abort", onAbort);
  };
  const onAbort = () => {
    cleanup();
    reject(signal!.reason);
  };
  unwatch = parts.watch({
    event(event) {
      if (event.kind !== "registered" && event.kind !== "replaced") return;
      if (event.endpoint_id !== endpointId) return;
      const record = parts.registry.lookup(endpointId);
      if (record === undefined) return;
      cleanup();
      resolve(record);
    },
    close() {
      cleanup();
      reject(closedError(endpointId));
    },
  });
  signal?.addEventListener("abort", onAbort, { once: true });
  if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
    timer = clock.setTimeout(() => {
      timer = undefined;
      cleanup();
      reject(
        new ToolCallError(
          unavailableError(
            endpointId,
            `endpoint '${endpointId}' registered no instance within ${timeoutMs} ms`,
          ),
          "error",
        ),
      );
    }, timeoutMs);
  }
  return promise;
}

function closedError(endpointId: string): ToolCallError {
  return new ToolCallError(unavailableError(endpointId, "the gateway closed"), "error");
}

/**
 * {@linkcode gatewayClient}: a {@linkcode ToolEndpointClient} through a {@linkcode ToolGateway}
 * whose descriptor comes from the gateway's Registry.
 *
 * @module
 */
import { ToolEndpointClient } from "../client/client.ts";
import type { ToolEndpointClientOptions } from "../client/options.ts";
import { optionMessage } from "../_internal/options.ts";
import type { ToolGateway } from "./gateway.ts";

/**
 * The options of {@linkcode gatewayClient}: a client's options but its transport, endpoint,
 * instance and descriptor, which the gateway supplies. `callerId` is also the caller the
 * gateway's ownership rule binds the client's executions to.
 */
export type ToolGatewayClientOptions = Omit<
  ToolEndpointClientOptions,
  "transport" | "endpointId" | "endpointInstanceId" | "descriptor"
>;

/**
 * A {@linkcode ToolEndpointClient} of `endpointId` through `gateway` (on its own
 * `gateway.connect({ callerId })` caller), checked against the descriptor the endpoint's current
 * instance registered, read from the Registry at each call: a Query/Action mix-up
 * (`FORGE_CLIENT_WRONG_SEMANTICS`) or an undeclared operation (`FORGE_CLIENT_UNKNOWN_OPERATION`)
 * is refused before sending, and a re-registered descriptor takes effect on the next call. While
 * the endpoint has no registration a call rejects at once, sending nothing, with the gateway's
 * retryable `FORGE_ENDPOINT_UNAVAILABLE` {@linkcode ToolCallError} (counted in
 * `stats.unavailable`); it does not wait: call `gateway.waitFor` first to wait for one.
 *
 * @example
 * ```ts
 * import { assertEquals, assertRejects } from "@std/assert";
 * import { ToolCallError } from "@forge/tool";
 * import { gatewayClient, ToolGateway } from "@forge/tool/gateway";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const client = gatewayClient(gateway, "vision.yolo", { callerId: "ui" });
 * const error = await assertRejects(() => client.query("detect"), ToolCallError);
 * assertEquals([error.error.code, error.retryable], ["FORGE_ENDPOINT_UNAVAILABLE", true]);
 * await client.close();
 * await gateway.close();
 * ```
 */
export function gatewayClient(
  gateway: ToolGateway,
  endpointId: string,
  options: ToolGatewayClientOptions = {},
): ToolEndpointClient {
  if (options === null || typeof options !== "object") {
    throw new TypeError(optionMessage("create a gateway client", "options", "an object", options));
  }
  const registry = gateway.registry;
  return new ToolEndpointClient({
    ...options,
    // Never an instance of the caller's choosing: the gateway's resolveInstance names the current
    // one, or rejects FORGE_ENDPOINT_UNAVAILABLE in the same turn the descriptor was read.
    endpointInstanceId: undefined,
    transport: gateway.connect({ callerId: options.callerId }),
    endpointId,
    descriptor: () => registry.lookup(endpointId)?.descriptor,
  });
}

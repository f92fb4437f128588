/**
 * The carrier interface of the caller side: what a {@linkcode ToolEndpointClient} needs to send
 * requests toward an endpoint and to receive what comes back.
 *
 * @module
 */
import type { ToolEnvelope } from "../wire/envelope.ts";

/**
 * What a {@linkcode ToolEndpointClient} needs from a carrier.
 *
 * Implementations in this package: {@linkcode InProcessToolClientTransport} (a handler in the same
 * process), and in `./dora` the loopback and Dora node transports. A gateway offers one that
 * routes by endpoint id.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import type { ToolClientTransport } from "@forge/tool";
 * import type { ToolEnvelope } from "@forge/tool/wire";
 * const sent: ToolEnvelope[] = [];
 * const transport: ToolClientTransport = {
 *   send: (request) => void sent.push(request),
 *   connect: () => {},
 * };
 * assertEquals(sent.length, 0);
 * ```
 */
export interface ToolClientTransport {
  /** Sends one request envelope toward the endpoint (rejects when it cannot be sent). */
  send(request: ToolEnvelope): void | Promise<void>;
  /** Called once by the client: every envelope arriving for callers (responses, tool.event). */
  connect(deliver: (message: ToolEnvelope) => void): void;
  /**
   * Optional: the endpoint instance to address for `endpointId` now (a gateway resolves it from
   * its Registry; throws a ToolEndpointError FORGE_ENDPOINT_UNAVAILABLE when none). The client
   * pins the instance for an execution at invoke time. Direct transports give it as an option.
   */
  resolveInstance?(endpointId: string): string | Promise<string>;
  /** Releases the transport. */
  close?(): void | Promise<void>;
}

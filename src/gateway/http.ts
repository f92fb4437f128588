/**
 * The Gateway Tool API of Forge's Gateway over HTTP and SSE, on a {@linkcode ToolGateway}:
 * {@linkcode toolGatewayHttpHandler} is the web-standard handler (mount it anywhere, or test it
 * without a socket), {@linkcode serveToolGateway} serves it with `Deno.serve`. Routes, bodies,
 * statuses, bounds and ownership are documented in docs/gateway.md.
 *
 * @module
 */
import type { ToolGateway } from "./gateway.ts";
import { GatewayHttpService } from "./_http_service.ts";
import {
  httpSettings,
  type ServeToolGatewayOptions,
  type ToolGatewayHttpOptions,
  type ToolGatewayHttpStats,
} from "./http_options.ts";
import { optionMessage } from "../_internal/options.ts";

export type {
  ServeToolGatewayOptions,
  ToolGatewayHttpOptions,
  ToolGatewayHttpRoute,
  ToolGatewayHttpRouteContext,
  ToolGatewayHttpStats,
} from "./http_options.ts";

/**
 * The Tool API as a web-standard handler, with `close()` (ends event streams and running
 * invocations, closes its clients) and `stats` (requests, kept and running invocations, SSE
 * subscribers, per-caller clients).
 */
export interface ToolGatewayHttpHandler {
  /** Answers one request; never rejects (a defect is a 500 JSON body and a log record). */
  (request: Request): Promise<Response>;
  /** Stops the service (idempotent); later requests are answered 503. */
  close(): Promise<void>;
  /** A snapshot of the counters and table sizes. */
  readonly stats: ToolGatewayHttpStats;
  /** Whether bearer tokens are configured. */
  readonly authenticated: boolean;
}

/**
 * The Gateway Tool API on `gateway` as a `(request) => Promise<Response>` handler: `GET /tools`,
 * `GET /tools/{endpoint_id}`, `POST /tools/{endpoint_id}/{operation}:invoke`, `GET
 * /invocations`, `GET /invocations/{id}` (and `/result`, `/events` over SSE), `POST
 * /invocations/{id}/cancel` and `/stop`, the status page `GET /` and its live feed `GET /events`
 * (unless `statusPage: false`), plus `extraRoutes`. Option errors name the option and show the
 * value received.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolGateway, toolGatewayHttpHandler } from "@forge/tool/gateway";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" } });
 * const handler = toolGatewayHttpHandler(gateway, { logger: () => {} });
 * const response = await handler(new Request("http://gateway/tools"));
 * assertEquals(response.status, 200);
 * assertEquals(await response.json(), { ok: true, data: { revision: 0, tools: [] } });
 * const missing = await handler(new Request("http://gateway/tools/vision.other"));
 * assertEquals(missing.status, 404);
 * assertEquals((await missing.json()).error.code, "FORGE_TOOL_ENDPOINT_UNKNOWN");
 * await handler.close();
 * await gateway.close();
 * ```
 */
export function toolGatewayHttpHandler(
  gateway: ToolGateway,
  options: ToolGatewayHttpOptions = {},
): ToolGatewayHttpHandler {
  if (gateway === null || typeof gateway !== "object" || typeof gateway.connect !== "function") {
    throw new TypeError(
      optionMessage("serve the gateway over HTTP", "gateway", "a ToolGateway", gateway),
    );
  }
  const service = new GatewayHttpService(gateway, httpSettings(options));
  const handler = ((request: Request) => service.handle(request)) as ToolGatewayHttpHandler;
  Object.defineProperties(handler, {
    close: { value: () => service.close() },
    stats: { get: () => service.stats },
    authenticated: { get: () => service.authenticated },
  });
  return handler;
}

/** A running {@linkcode serveToolGateway} server. */
export interface ToolGatewayServer {
  /** Where it listens (the port picked when `port` was 0). */
  readonly addr: Deno.NetAddr;
  /** The handler it serves (its `stats`). */
  readonly handler: ToolGatewayHttpHandler;
  /** Resolves once the server stopped. */
  readonly finished: Promise<void>;
  /** Ends event streams and running invocations, then stops the server. Idempotent. */
  close(): Promise<void>;
}

/**
 * Serves the Tool API of `gateway` with `Deno.serve` (needs `--allow-net`). Without `tokens`
 * it binds 127.0.0.1 unless `hostname` says otherwise and logs one `warn` record
 * `gateway.http_listening` saying every request is the anonymous caller; with tokens, one
 * `info` record.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { serveToolGateway, ToolGateway } from "@forge/tool/gateway";
 *
 * const gateway = new ToolGateway({ routes: { detector: "vision.yolo" }, logger: () => {} });
 * const server = serveToolGateway(gateway, { port: 0, logger: () => {} });
 * const response = await fetch(`http://127.0.0.1:${server.addr.port}/invocations`);
 * assertEquals(await response.json(), { ok: true, data: { invocations: [] } });
 * await server.close();
 * await gateway.close();
 * ```
 */
export function serveToolGateway(
  gateway: ToolGateway,
  options: ServeToolGatewayOptions = {},
): ToolGatewayServer {
  const handler = toolGatewayHttpHandler(gateway, options);
  const settings = httpSettings(options);
  const hostname = options.hostname ?? "127.0.0.1";
  const server = Deno.serve({
    port: options.port ?? 8080,
    hostname,
    signal: options.signal,
    onListen: () => {},
    onError: (error) => {
      settings.logger({
        level: "error",
        event: "gateway.http_failed",
        message: `the HTTP server failed: ${error}`,
        error,
      });
      return new Response(
        JSON.stringify({ ok: false, msg: "the gateway failed; see its log" }),
        { status: 500, headers: { "content-type": "application/json; charset=utf-8" } },
      );
    },
  }, handler);
  const addr = server.addr as Deno.NetAddr;
  const where = `http://${addr.hostname}:${addr.port}`;
  settings.logger(
    handler.authenticated
      ? {
        level: "info",
        event: "gateway.http_listening",
        message: `gateway Tool API on ${where}; bearer tokens required`,
      }
      : {
        level: "warn",
        event: "gateway.http_listening",
        message: `gateway Tool API on ${where} without authentication: every request is the ` +
          `caller '${settings.anonymousCallerId}'` +
          (hostname === "127.0.0.1" ? "; bound to 127.0.0.1 only" : ` on ${hostname}`) +
          `; configure 'tokens' to authenticate callers`,
      },
  );
  let closing: Promise<void> | undefined;
  return {
    addr,
    handler,
    finished: server.finished,
    close: () =>
      closing ??= (async () => {
        await handler.close();
        await server.shutdown();
      })(),
  };
}

/**
 * The options of the Gateway Tool API over HTTP ({@linkcode toolGatewayHttpHandler},
 * {@linkcode serveToolGateway}), their documented defaults and their checks.
 *
 * @module
 */
import type { ToolLogger } from "../endpoint/log.ts";
import { consoleLogger, warningsAndErrors } from "../endpoint/log.ts";
import { type MonotonicClock, SYSTEM_CLOCK } from "../node/clock.ts";
import { optionalFunction, optionMessage, positiveIntegerOption } from "../_internal/options.ts";
// deno-lint-ignore no-unused-vars
import type { serveToolGateway, toolGatewayHttpHandler } from "./http.ts";

/** What an extra route's handler is given besides the request. */
export interface ToolGatewayHttpRouteContext {
  /** The caller id the request authenticated as (the anonymous caller without tokens). */
  readonly callerId: string;
  /** The named groups of the route's pattern. */
  readonly params: Readonly<Record<string, string | undefined>>;
}

/**
 * A route another module mounts on the service (`/metrics`, a status page, `/mcp`): matched
 * after authentication and before the Tool API's own routes.
 */
export interface ToolGatewayHttpRoute {
  /** The HTTP method, upper case (`"GET"`), or `"*"` for any. */
  readonly method: string;
  /** The path pattern, in `URLPattern` pathname syntax (`"/metrics"`, `"/mcp/*"`). */
  readonly pathname: string;
  /**
   * Whether the route is reachable without a bearer token when tokens are configured.
   *
   * @default {false}
   */
  readonly public?: boolean;
  /** Answers the request. */
  readonly handler: (
    request: Request,
    context: ToolGatewayHttpRouteContext,
  ) => Response | Promise<Response>;
}

/** Options of {@linkcode toolGatewayHttpHandler}. */
export interface ToolGatewayHttpOptions {
  /**
   * Bearer tokens, each naming the caller id it authenticates: `{ token: callerId }`. When set,
   * every request needs `Authorization: Bearer <token>` (401 otherwise); without it, every
   * request is the caller `anonymousCallerId` and the server binds 127.0.0.1 by default.
   */
  readonly tokens?: Readonly<Record<string, string>> | ReadonlyMap<string, string>;
  /**
   * The caller id of every request when no `tokens` are configured.
   *
   * @default {"anonymous"}
   */
  readonly anonymousCallerId?: string;
  /**
   * The largest request body, in bytes (1 MiB of Wire message plus 64 KiB of headroom); a
   * larger one, declared or streamed, is answered 413.
   *
   * @default {1114112}
   */
  readonly maxBodyBytes?: number;
  /**
   * How long a request body may take to arrive, in milliseconds; then 408.
   *
   * @default {10000}
   */
  readonly bodyTimeoutMs?: number;
  /**
   * How long an invoke waits for the endpoint's answer when the body gives no `timeout_ms`.
   *
   * @default {30000}
   */
  readonly defaultTimeoutMs?: number;
  /**
   * The largest `timeout_ms` a body may give (400 above it).
   *
   * @default {300000}
   */
  readonly maxTimeoutMs?: number;
  /**
   * How many Action and Session invocations are kept, running and retained; when full, the
   * oldest finished one is forgotten, and when all are running an invoke is answered 503
   * `FORGE_TOOL_GATEWAY_BUSY`.
   *
   * @default {1024}
   */
  readonly maxInvocations?: number;
  /**
   * How many of its last events each invocation keeps for SSE replay (`Last-Event-ID`); an id
   * before that window is answered 410.
   *
   * @default {256}
   */
  readonly maxEventsPerInvocation?: number;
  /**
   * How long a finished invocation stays readable (status, result, events), in milliseconds.
   *
   * @default {300000}
   */
  readonly retentionMs?: number;
  /**
   * How many SSE subscribers may be attached at once; beyond, 503 `FORGE_TOOL_GATEWAY_BUSY`.
   *
   * @default {4096}
   */
  readonly maxSubscribers?: number;
  /**
   * How often an idle SSE stream sends a keep-alive comment, in milliseconds.
   *
   * @default {15000}
   */
  readonly keepAliveMs?: number;
  /**
   * The gateway's monotonic clock (its `clock` option), to show the lease left.
   *
   * @default {SYSTEM_CLOCK}
   */
  readonly clock?: MonotonicClock;
  /**
   * Whether the service serves the live status page at `GET /` (public, it holds no data) and
   * its feed `GET /events` (SSE of Registry changes and the caller's invocations).
   *
   * @default {true}
   */
  readonly statusPage?: boolean;
  /**
   * Routes other modules mount (see {@linkcode ToolGatewayHttpRoute}).
   *
   * @default {[]}
   */
  readonly extraRoutes?: readonly ToolGatewayHttpRoute[];
  /**
   * Where the service reports its start (`gateway.http_listening`) and failures
   * (`gateway.http_failed`).
   *
   * @default {consoleLogger, warnings and errors}
   */
  readonly logger?: ToolLogger;
}

/** Options of {@linkcode serveToolGateway}: the handler's, and where to listen. */
export interface ServeToolGatewayOptions extends ToolGatewayHttpOptions {
  /**
   * The port; 0 picks a free one.
   *
   * @default {8080}
   */
  readonly port?: number;
  /**
   * The interface to bind.
   *
   * @default {"127.0.0.1"}
   */
  readonly hostname?: string;
  /** Stops the server when it aborts. */
  readonly signal?: AbortSignal;
}

/** Counters and table sizes of a {@linkcode toolGatewayHttpHandler} handler, a snapshot. */
export interface ToolGatewayHttpStats {
  /** Requests answered since the start. */
  readonly requests: number;
  /** Action and Session invocations kept now, running and retained. */
  readonly invocations: number;
  /** Of those, the ones still running. */
  readonly runningInvocations: number;
  /** SSE streams attached now. */
  readonly subscribers: number;
  /** Per-caller clients (one per caller and endpoint), each on its own `gateway.connect()`. */
  readonly clients: number;
}

/** The checked settings (internal). */
export interface HttpSettings {
  readonly tokens: ReadonlyMap<string, string>;
  readonly anonymousCallerId: string;
  readonly maxBodyBytes: number;
  readonly bodyTimeoutMs: number;
  readonly defaultTimeoutMs: number;
  readonly maxTimeoutMs: number;
  readonly maxInvocations: number;
  readonly maxEventsPerInvocation: number;
  readonly retentionMs: number;
  readonly maxSubscribers: number;
  readonly keepAliveMs: number;
  readonly clock: MonotonicClock;
  readonly extraRoutes: readonly ToolGatewayHttpRoute[];
  readonly statusPage: boolean;
  readonly logger: ToolLogger;
}

const ACTION = "serve the gateway over HTTP";

/** The defaults of every bound, as documented on {@linkcode ToolGatewayHttpOptions}. */
export const HTTP_DEFAULTS = Object.freeze({
  anonymousCallerId: "anonymous",
  maxBodyBytes: 1024 * 1024 + 64 * 1024,
  bodyTimeoutMs: 10_000,
  defaultTimeoutMs: 30_000,
  maxTimeoutMs: 300_000,
  maxInvocations: 1024,
  maxEventsPerInvocation: 256,
  retentionMs: 300_000,
  maxSubscribers: 4096,
  keepAliveMs: 15_000,
});

function nonEmptyString(name: string, value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new TypeError(optionMessage(ACTION, name, "a non-empty string", value));
  }
  return value;
}

/** Checks the options; errors name the option and show the value received. */
export function httpSettings(options: ToolGatewayHttpOptions | undefined): HttpSettings {
  const o = options ?? {};
  if (typeof o !== "object" || o === null) {
    throw new TypeError(optionMessage(ACTION, "options", "an object", o));
  }
  const tokens = new Map<string, string>();
  if (o.tokens !== undefined) {
    if (typeof o.tokens !== "object" || o.tokens === null) {
      throw new TypeError(
        optionMessage(ACTION, "tokens", "an object of token -> caller id", o.tokens),
      );
    }
    const entries = o.tokens instanceof Map ? [...o.tokens] : Object.entries(o.tokens);
    for (const [token, callerId] of entries) {
      nonEmptyString("tokens", token);
      tokens.set(token, nonEmptyString(`tokens['${"*".repeat(4)}']`, callerId));
    }
    if (tokens.size === 0) {
      throw new RangeError(optionMessage(ACTION, "tokens", "a non-empty set of tokens", "{}"));
    }
  }
  const int = (name: keyof typeof HTTP_DEFAULTS) =>
    positiveIntegerOption(ACTION, name, o[name], HTTP_DEFAULTS[name] as number);
  const extraRoutes = o.extraRoutes ?? [];
  if (!Array.isArray(extraRoutes)) {
    throw new TypeError(optionMessage(ACTION, "extraRoutes", "an array of routes", extraRoutes));
  }
  for (const route of extraRoutes) {
    if (
      typeof route?.method !== "string" || typeof route.pathname !== "string" ||
      typeof route.handler !== "function"
    ) {
      throw new TypeError(
        optionMessage(ACTION, "extraRoutes", "routes with method, pathname and handler", route),
      );
    }
  }
  if (o.statusPage !== undefined && typeof o.statusPage !== "boolean") {
    throw new TypeError(optionMessage(ACTION, "statusPage", "a boolean", o.statusPage));
  }
  const clock = o.clock ?? SYSTEM_CLOCK;
  if (typeof clock?.now !== "function") {
    throw new TypeError(optionMessage(ACTION, "clock", "an object with now()", clock));
  }
  const settings: HttpSettings = {
    tokens,
    anonymousCallerId: o.anonymousCallerId === undefined
      ? HTTP_DEFAULTS.anonymousCallerId
      : nonEmptyString("anonymousCallerId", o.anonymousCallerId),
    maxBodyBytes: int("maxBodyBytes"),
    bodyTimeoutMs: int("bodyTimeoutMs"),
    defaultTimeoutMs: int("defaultTimeoutMs"),
    maxTimeoutMs: int("maxTimeoutMs"),
    maxInvocations: int("maxInvocations"),
    maxEventsPerInvocation: int("maxEventsPerInvocation"),
    retentionMs: int("retentionMs"),
    maxSubscribers: int("maxSubscribers"),
    keepAliveMs: int("keepAliveMs"),
    clock,
    extraRoutes,
    statusPage: o.statusPage ?? true,
    logger: optionalFunction<ToolLogger>(ACTION, "logger", o.logger) ??
      warningsAndErrors(consoleLogger),
  };
  if (settings.defaultTimeoutMs > settings.maxTimeoutMs) {
    throw new RangeError(
      optionMessage(
        ACTION,
        "defaultTimeoutMs",
        `at most 'maxTimeoutMs' (${settings.maxTimeoutMs})`,
        settings.defaultTimeoutMs,
      ),
    );
  }
  return settings;
}

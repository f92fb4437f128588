// The Gateway Tool API on web-standard Request/Response (private to src/gateway/): routing,
// identity, the per-caller clients, and the handlers of every route. `http.ts` is its public
// face (toolGatewayHttpHandler, serveToolGateway).
import { ToolEndpointClient } from "../client/client.ts";
import type { ToolGateway } from "./gateway.ts";
import type { ToolEndpointDescriptor } from "../endpoint/models.ts";
import { controlResponseToPayload, invokeResponseToPayload } from "../wire/execution_payloads.ts";
import { executionStatusToPayload, toolResultToPayload } from "../wire/outcome_payloads.ts";
import {
  endpointDescriptorToPayload,
  endpointStatusToPayload,
} from "../wire/management_payloads.ts";
import { pathParameters, readControlBody, readInvokeBody } from "./_http_body.ts";
import { BearerTokens } from "./_http_auth.ts";
import {
  callFailure,
  endpointUnknown,
  HttpErrorCodes,
  invocationNotFound,
  okResponse,
  serviceError,
  unauthorized,
} from "./_http_errors.ts";
import { eventStream } from "./_http_sse.ts";
import { InvocationStore, StoredInvocation } from "./_store.ts";
import { statusPageResponse } from "./_http_status_page.ts";
import { statusFeed } from "./_http_status_feed.ts";
import type { HttpSettings, ToolGatewayHttpRoute, ToolGatewayHttpStats } from "./http_options.ts";

type Params = Readonly<Record<string, string | undefined>>;
type RouteHandler = (request: Request, callerId: string, params: Params) => Promise<Response>;

interface Route {
  readonly method: string;
  readonly pattern: URLPattern;
  readonly public: boolean;
  readonly handle: RouteHandler;
}

/** One HTTP service over one gateway. */
export class GatewayHttpService {
  readonly #gateway: ToolGateway;
  readonly #settings: HttpSettings;
  readonly #tokens: BearerTokens | undefined;
  readonly #store: InvocationStore;
  readonly #routes: Route[];
  /** One client per (caller, endpoint), each on its own `gateway.connect()` transport. */
  readonly #clients = new Map<string, ToolEndpointClient>();
  readonly #pumps = new Set<Promise<void>>();
  /** The enders of the open status feeds (`GET /events`). */
  readonly #feeds = new Set<() => void>();
  #requests = 0;
  #closed = false;

  constructor(gateway: ToolGateway, settings: HttpSettings) {
    this.#gateway = gateway;
    this.#settings = settings;
    this.#tokens = settings.tokens.size > 0 ? new BearerTokens(settings.tokens) : undefined;
    this.#store = new InvocationStore({
      capacity: settings.maxInvocations,
      maxEventsPerInvocation: settings.maxEventsPerInvocation,
      retentionMs: settings.retentionMs,
      maxSubscribers: settings.maxSubscribers,
    });
    const route = (method: string, pathname: string, handle: RouteHandler): Route => ({
      method,
      pattern: new URLPattern({ pathname }),
      public: false,
      handle,
    });
    this.#routes = [
      ...settings.extraRoutes.map((extra: ToolGatewayHttpRoute): Route => ({
        method: extra.method.toUpperCase(),
        pattern: new URLPattern({ pathname: extra.pathname }),
        public: extra.public === true,
        handle: async (request, callerId, params) =>
          await extra.handler(request, { callerId, params }),
      })),
      ...(settings.statusPage
        ? [
          { ...route("GET", "/", () => statusPageResponse()), public: true },
          route("GET", "/events", (_r, c) => Promise.resolve(this.#feed(c))),
        ]
        : []),
      route("GET", "/tools", () => Promise.resolve(this.#listTools())),
      route("GET", "/tools/:endpoint", (_r, _c, p) => Promise.resolve(this.#tool(p.endpoint!))),
      route("POST", "/tools/:endpoint/:target", (r, c, p) => this.#invoke(r, c, p)),
      route("GET", "/invocations", (_r, c) => Promise.resolve(this.#list(c))),
      route("GET", "/invocations/:id", (_r, c, p) => this.#status(c, p.id!)),
      route(
        "GET",
        "/invocations/:id/result",
        (_r, c, p) => Promise.resolve(this.#result(c, p.id!)),
      ),
      route("POST", "/invocations/:id/cancel", (r, c, p) => this.#control(r, c, p.id!, "cancel")),
      route("POST", "/invocations/:id/stop", (r, c, p) => this.#control(r, c, p.id!, "stop")),
      route(
        "GET",
        "/invocations/:id/events",
        (r, c, p) => Promise.resolve(this.#events(r, c, p.id!)),
      ),
    ];
  }

  /** Whether bearer tokens are configured. */
  get authenticated(): boolean {
    return this.#tokens !== undefined;
  }

  get stats(): ToolGatewayHttpStats {
    return {
      requests: this.#requests,
      invocations: this.#store.size,
      runningInvocations: this.#store.running,
      subscribers: this.#store.subscribers,
      clients: this.#clients.size,
    };
  }

  /** Answers one request; never throws (a defect is a 500 JSON body and a log record). */
  async handle(request: Request): Promise<Response> {
    this.#requests += 1;
    try {
      return await this.#route(request);
    } catch (error) {
      this.#settings.logger({
        level: "error",
        event: "gateway.http_failed",
        message: `${request.method} ${new URL(request.url).pathname} failed: ${error}`,
        error,
      });
      return serviceError(HttpErrorCodes.GATEWAY_FAILED, `the gateway failed: ${error}`);
    }
  }

  async #route(request: Request): Promise<Response> {
    if (this.#closed) {
      return serviceError(HttpErrorCodes.GATEWAY_UNAVAILABLE, "the gateway is shutting down", true);
    }
    const url = new URL(request.url);
    let methodMismatch = false;
    for (const route of this.#routes) {
      const match = route.pattern.exec({ pathname: url.pathname });
      if (match === null) continue;
      if (route.method !== "*" && route.method !== request.method) {
        methodMismatch = true;
        continue;
      }
      let callerId = this.#settings.anonymousCallerId;
      if (this.#tokens !== undefined) {
        const caller = await this.#tokens.callerOf(request);
        if (caller === undefined && !route.public) return unauthorized();
        callerId = caller ?? callerId;
      }
      return await route.handle(request, callerId, pathParameters(match.pathname.groups));
    }
    if (methodMismatch) {
      return serviceError(
        HttpErrorCodes.METHOD_NOT_ALLOWED,
        `${request.method} is not allowed on ${url.pathname}`,
      );
    }
    return serviceError(
      HttpErrorCodes.ROUTE_NOT_FOUND,
      `no route ${request.method} ${url.pathname}; the Tool API serves /tools and /invocations`,
    );
  }

  // Tools

  #listTools(): Response {
    const registry = this.#gateway.registry;
    const tools = [...registry.records()]
      .sort((a, b) => (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0))
      .map((record) => ({
        endpoint_id: record.endpointId,
        descriptor: endpointDescriptorToPayload(record.descriptor).descriptor,
      }));
    return okResponse({ revision: registry.revision, tools });
  }

  #tool(endpointId: string): Response {
    const registry = this.#gateway.registry;
    if (![...registry.routes.values()].includes(endpointId)) return endpointUnknown(endpointId);
    const record = registry.lookup(endpointId);
    if (record === undefined) {
      return okResponse({ endpoint_id: endpointId, state: "unavailable", descriptor: null });
    }
    const now = this.#settings.clock.now();
    const status = this.#gateway.endpointStatus(endpointId);
    return okResponse({
      endpoint_id: endpointId,
      state: "registered",
      lease_left_ms: Math.max(0, Math.round(record.leaseDeadlineMs - now)),
      registered_age_ms: Math.max(0, Math.round(now - record.registeredAtMs)),
      registry_revision: registry.revision,
      descriptor: endpointDescriptorToPayload(record.descriptor).descriptor,
      status: status === undefined ? null : endpointStatusToPayload(status).status,
    });
  }

  #feed(callerId: string): Response {
    const response = statusFeed({
      gateway: this.#gateway,
      store: this.#store,
      view: (entry) => this.#view(entry),
      now: () => this.#settings.clock.now(),
      keepAliveMs: this.#settings.keepAliveMs,
      maxQueued: this.#settings.maxEventsPerInvocation,
      open: this.#feeds,
    }, callerId);
    return response ?? serviceError(
      HttpErrorCodes.GATEWAY_BUSY,
      `${this.#settings.maxSubscribers} event streams are open ('maxSubscribers'); retry later`,
      true,
    );
  }

  #clientOf(callerId: string, endpointId: string): ToolEndpointClient {
    const key = `${callerId}\u0000${endpointId}`;
    let client = this.#clients.get(key);
    if (client === undefined) {
      client = new ToolEndpointClient({
        transport: this.#gateway.connect(),
        endpointId,
        callerId,
        timeoutMs: this.#settings.defaultTimeoutMs,
        maxOpenInvocations: this.#settings.maxInvocations,
        maxBufferedEvents: this.#settings.maxEventsPerInvocation,
        logger: this.#settings.logger,
      });
      this.#clients.set(key, client);
    }
    return client;
  }

  async #invoke(request: Request, callerId: string, params: Params): Promise<Response> {
    const endpointId = params.endpoint!;
    const target = params.target!;
    if (!target.endsWith(":invoke") || target.length === ":invoke".length) {
      return serviceError(
        HttpErrorCodes.ROUTE_NOT_FOUND,
        `no route POST ${new URL(request.url).pathname}; invoke with ` +
          `POST /tools/${endpointId}/{operation}:invoke`,
      );
    }
    const operation = target.slice(0, -":invoke".length);
    const body = await readInvokeBody(
      request,
      this.#settings,
      this.#tokens === undefined ? undefined : callerId,
    );
    if (!body.ok) return body.response;
    const { args, callerId: bodyCaller, timeoutMs: timeout } = body.value;
    if (![...this.#gateway.registry.routes.values()].includes(endpointId)) {
      return endpointUnknown(endpointId);
    }
    const record = this.#gateway.registry.lookup(endpointId);
    if (record === undefined) {
      // The router's own answer for an endpoint with no current instance (503, retryable).
      try {
        this.#gateway.resolveInstance(endpointId);
      } catch (error) {
        return callFailure(error);
      }
    }
    const descriptor: ToolEndpointDescriptor = record!.descriptor;
    const spec = descriptor.operations.find((candidate) => candidate.name === operation);
    if (spec === undefined) {
      return serviceError(
        HttpErrorCodes.OPERATION_NOT_FOUND,
        `endpoint '${endpointId}' does not expose operation '${operation}'; it has ` +
          descriptor.operations.map((o) => `'${o.name}'`).join(", "),
        false,
        { endpoint_id: endpointId, operation },
      );
    }
    const client = this.#clientOf(callerId, endpointId);
    const timeoutMs = typeof timeout === "number" ? timeout : this.#settings.defaultTimeoutMs;
    const options = {
      timeoutMs,
      deadlineMs: typeof timeout === "number" ? Date.now() + timeout : undefined,
      callerId: typeof bodyCaller === "string" ? bodyCaller : callerId,
    };
    if (spec.semantics === "query") {
      // `request.signal` is not used: Deno.serve aborts it after every response (its legacy
      // behaviour, with a warning); a Query ends by its timeout or deadline.
      try {
        const result = await client.query(operation, args, options);
        return okResponse({
          endpoint_id: endpointId,
          operation,
          response: invokeResponseToPayload(result),
        });
      } catch (error) {
        return callFailure(error);
      }
    }
    if (!this.#store.reserve()) {
      return serviceError(
        HttpErrorCodes.GATEWAY_BUSY,
        `${this.#settings.maxInvocations} invocations are running ('maxInvocations'); retry ` +
          `when one ends`,
        true,
      );
    }
    let handle;
    try {
      // The HTTP request ends at the 202; the invocation outlives it (no request signal).
      handle = await client.invoke(operation, args, {
        ...options,
        semantics: spec.semantics,
      });
    } catch (error) {
      this.#store.release();
      return callFailure(error);
    }
    const entry = new StoredInvocation(
      this.#store,
      handle,
      callerId,
      endpointId,
      operation,
      spec.semantics,
      this.#settings.clock.now(),
    );
    this.#store.add(entry);
    this.#pump(entry);
    return okResponse(this.#view(entry), 202, { location: `/invocations/${entry.id}` });
  }

  /** Reads the handle's events into the store, then its result; then releases the handle. */
  #pump(entry: StoredInvocation): void {
    const work = (async () => {
      try {
        for await (const record of entry.handle.events) entry.push(record);
      } catch {
        // The stream ended early (a timeout, a close): the result request below decides.
      }
      try {
        entry.finish(this.#settings.clock.now(), await entry.handle.result());
      } catch (error) {
        entry.finish(this.#settings.clock.now(), undefined, error);
      }
      await Promise.resolve(entry.handle[Symbol.asyncDispose]()).catch(() => undefined);
    })();
    this.#pumps.add(work);
    work.finally(() => this.#pumps.delete(work));
  }

  // Invocations

  #view(entry: StoredInvocation): Record<string, unknown> {
    const base = `/invocations/${encodeURIComponent(entry.id)}`;
    const control = entry.semantics === "action" ? "cancel" : "stop";
    return {
      invocation_id: entry.id,
      attempt_id: entry.handle.key.attemptId,
      endpoint_id: entry.endpointId,
      operation: entry.operation,
      semantics: entry.semantics,
      caller_id: entry.callerId,
      phase: entry.phase,
      age_ms: Math.max(0, Math.round(this.#settings.clock.now() - entry.createdAtMs)),
      last_sequence: entry.lastSequence,
      last_event: entry.lastEventType ?? null,
      links: {
        self: base,
        result: `${base}/result`,
        events: `${base}/events`,
        [control]: `${base}/${control}`,
      },
    };
  }

  #list(callerId: string): Response {
    return okResponse({
      invocations: this.#store.list(callerId).map((entry) => this.#view(entry)),
    });
  }

  async #status(callerId: string, id: string): Promise<Response> {
    const entry = this.#store.get(id, callerId);
    if (entry === undefined) return invocationNotFound(id);
    if (entry.ended) return okResponse({ ...this.#view(entry), ...this.#outcome(entry) });
    try {
      const status = await entry.handle.status();
      return okResponse({ ...this.#view(entry), status: executionStatusToPayload(status) });
    } catch (error) {
      return callFailure(error);
    }
  }

  #outcome(entry: StoredInvocation): Record<string, unknown> {
    if (entry.result !== undefined) return { result: toolResultToPayload(entry.result) };
    return { result: null, failure: String(entry.failure) };
  }

  #result(callerId: string, id: string): Response {
    const entry = this.#store.get(id, callerId);
    if (entry === undefined) return invocationNotFound(id);
    if (!entry.ended) return okResponse(this.#view(entry), 202);
    return okResponse({ ...this.#view(entry), ...this.#outcome(entry) });
  }

  async #control(
    request: Request,
    callerId: string,
    id: string,
    command: "cancel" | "stop",
  ): Promise<Response> {
    const entry = this.#store.get(id, callerId);
    if (entry === undefined) return invocationNotFound(id);
    const body = await readControlBody(request, this.#settings, command);
    if (!body.ok) return body.response;
    const { reason } = body.value;
    const expected = entry.semantics === "action" ? "cancel" : "stop";
    if (command !== expected) {
      return serviceError(
        HttpErrorCodes.REQUEST_CONFLICT,
        `invocation '${id}' is ${entry.semantics === "action" ? "an Action" : "a Session"}: ` +
          `end it with POST /invocations/${id}/${expected}`,
        false,
        { invocation_id: id, semantics: entry.semantics },
      );
    }
    if (entry.ended) {
      return serviceError(
        HttpErrorCodes.REQUEST_CONFLICT,
        `invocation '${id}' already ended (${entry.phase}); read its result`,
        false,
        { invocation_id: id, phase: entry.phase },
      );
    }
    try {
      const answer = command === "cancel"
        ? await entry.handle.cancel(reason)
        : await entry.handle.stop(reason);
      return okResponse({
        ...this.#view(entry),
        control: controlResponseToPayload(answer).response,
      }, 202);
    } catch (error) {
      return callFailure(error);
    }
  }

  #events(request: Request, callerId: string, id: string): Response {
    const entry = this.#store.get(id, callerId);
    if (entry === undefined) return invocationNotFound(id);
    if (!entry.ended && this.#store.subscribers >= this.#settings.maxSubscribers) {
      return serviceError(
        HttpErrorCodes.GATEWAY_BUSY,
        `${this.#settings.maxSubscribers} event streams are open ('maxSubscribers'); retry later`,
        true,
      );
    }
    return eventStream(
      request,
      entry,
      this.#settings.keepAliveMs,
      this.#settings.maxEventsPerInvocation,
    );
  }

  /**
   * Stops answering: every event stream ends, running invocations are ended (`cancel`/`stop`
   * through their handles), the clients are closed. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const end of [...this.#feeds]) end();
    for (const entry of this.#store.all()) {
      if (!entry.ended) {
        await Promise.resolve(entry.handle[Symbol.asyncDispose]()).catch(() => undefined);
      }
    }
    await Promise.allSettled([...this.#clients.values()].map((client) => client.close()));
    await Promise.allSettled([...this.#pumps]);
    for (const entry of this.#store.all()) this.#store.remove(entry);
    this.#clients.clear();
  }
}

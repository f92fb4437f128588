// ToolGateway, the router on envelopes: Registry hosting, routing by endpoint id, instance
// replacement, lease expiry and unregister in the middle of an execution, forged answers, bounds.
// Its Dora framing (IPC bytes on the routes) is tests/dora/gateway_node_test.ts.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import {
  ToolAccepted,
  ToolCallError,
  type ToolClientTransport,
  ToolContext,
  ToolEndpointDescriptor,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  endpointRegistryResponseFromPayload,
  EndpointStatus,
  makeControlRequestEnvelope,
  makeEndpointStatusEnvelope,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  ToolEnvelope,
} from "../../wire.ts";
import { EndpointRegistryErrorCodes } from "../../node.ts";
import { ToolGateway, type ToolGatewayOptions } from "../../gateway.ts";
import { FakeClock, replaceEnvelope } from "../_helpers.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures: a gateway with two provider routes that the test plays by hand.

const YOLO = "vision.yolo";
const ARM = "robot.arm";
const ROUTES = { detector: YOLO, arm: ARM } as const;
type Route = keyof typeof ROUTES;

const descriptors: Record<Route, ToolEndpointDescriptor> = {
  detector: new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: YOLO,
    operations: [
      new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
      new ToolOperationDescriptor({
        name: "track",
        semantics: "action",
        cancellable: true,
        statusSupported: true,
      }),
    ],
  }),
  arm: new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: ARM,
    operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  }),
};

function context(operation: string, invocationId = "invocation-1", endpointId = YOLO) {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: `forge.tool.${operation}`,
    implementationId: "test",
    endpointId,
    operation,
  });
}

/** What the caller sends: no instance (the gateway fills it). */
const unresolved = (requestId: string) => ({ requestId, endpointInstanceId: undefined });

class Harness {
  readonly clock = new FakeClock();
  readonly logs: string[] = [];
  readonly gateway: ToolGateway;
  /** What the gateway sent on each route. */
  readonly sent: Record<Route, ToolEnvelope[]> = { detector: [], arm: [] };
  readonly caller: ToolClientTransport;
  /** What the caller received. */
  readonly answers: ToolEnvelope[] = [];
  #registrations = 0;

  constructor(options: Partial<ToolGatewayOptions> = {}) {
    this.gateway = new ToolGateway({
      routes: ROUTES,
      clock: this.clock,
      leaseTtlMs: 1000,
      logger: ({ level, message }) => this.logs.push(`${level}: ${message}`),
      ...options,
    });
    for (const route of Object.keys(ROUTES) as Route[]) {
      this.gateway.attachRoute(route, (envelope) => {
        this.sent[route].push(envelope);
      });
    }
    this.caller = this.gateway.connect();
    this.caller.connect((message) => this.answers.push(message));
  }

  /** The provider on `route` sends `envelope`. */
  provide(route: Route, envelope: ToolEnvelope): void {
    this.gateway.receive(route, envelope);
  }

  /** The provider on `route` registers `instance`; returns the Registry's answer. */
  register(route: Route, instance: string): ToolEnvelope {
    this.provide(
      route,
      makeRegistrationEnvelope(descriptors[route], {
        endpointInstanceId: instance,
        requestId: `register-${++this.#registrations}`,
      }),
    );
    const answer = this.sent[route].at(-1)!;
    assertEquals(answer.messageType, "endpoint.registry.response");
    return answer;
  }

  /** The last request the gateway forwarded on `route`. */
  forwarded(route: Route): ToolEnvelope {
    const request = this.sent[route].at(-1)!;
    assert(request.messageType.startsWith("tool."), request.messageType);
    return request;
  }

  close(): Promise<void> {
    return this.gateway.close();
  }
}

function errorOf(envelope: ToolEnvelope): unknown {
  assertEquals(envelope.messageType, "tool.error");
  return envelope.payload.error;
}

const UNKNOWN_AFTER_REPLACEMENT = {
  code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
  message: "endpoint instance 'instance-1' of 'vision.yolo' was replaced by 'instance-2'; " +
    "the outcome of the execution cannot be recovered",
  retryable: false,
  details: { endpoint_instance_id: "instance-1", current_endpoint_instance_id: "instance-2" },
};

// ---------------------------------------------------------------------------------------------
// No current instance

Deno.test("gateway answers a retryable FORGE_ENDPOINT_UNAVAILABLE when no instance is current", async () => {
  const h = new Harness();
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("request-1"),
    ),
  );
  assertEquals(h.answers.length, 1);
  assertEquals(errorOf(h.answers[0]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "endpoint 'vision.yolo' has no current instance",
    retryable: true,
    details: { endpoint_id: YOLO },
  });
  // Correlated with the caller's request; the unresolved instance stays omitted.
  assertEquals(h.answers[0].requestId, "request-1");
  assertEquals(h.answers[0].invocationId, "invocation-1");
  assertStrictEquals(h.answers[0].endpointInstanceId, undefined);
  assertEquals(h.sent.detector, []);
  const error = assertThrows(() => h.gateway.resolveInstance(YOLO), ToolCallError);
  assertEquals(error.error.code, "FORGE_ENDPOINT_UNAVAILABLE");
  assertEquals(error.error.retryable, true);

  // An endpoint no route serves is not retryable.
  await h.caller.send(
    makeStatusRequestEnvelope(
      context("detect", "invocation-1", "other.endpoint"),
      unresolved("r-2"),
    ),
  );
  assertEquals(errorOf(h.answers[1]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "endpoint 'other.endpoint' is not configured on this gateway",
    retryable: false,
    details: { endpoint_id: "other.endpoint" },
  });
  assertEquals(h.gateway.stats.unavailable, 2);
  await h.close();
});

Deno.test("gateway fills the current instance and restores the caller's headers on the answer", async () => {
  const h = new Harness();
  const registered = endpointRegistryResponseFromPayload(
    h.register("detector", "instance-1").payload,
  );
  assertEquals([registered.status, registered.registryRevision], ["accepted", 1]);
  const invoke = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { class: "cube" } }),
    context("detect"),
    unresolved("request-1"),
  );
  await h.caller.send(invoke);
  const forwarded = h.forwarded("detector");
  assertEquals(forwarded.endpointInstanceId, "instance-1");
  assertEquals(forwarded.requestId, "request-1@gateway-1");
  assertEquals(forwarded.payload, invoke.payload);
  assertEquals(h.answers, []);
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(
      new ToolResult({ status: "succeeded", outputs: { n: 1 } }),
      forwarded,
    ),
  );
  assertEquals(h.answers.length, 1);
  assertEquals(h.answers[0].requestId, "request-1");
  assertStrictEquals(h.answers[0].endpointInstanceId, undefined);
  assertEquals(h.answers[0].payload, {
    outcome: "completed",
    result: { status: "succeeded", outputs: { n: 1 } },
  });
  // A caller that pinned the instance gets it back.
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect", "invocation-2"),
      {
        requestId: "request-2",
        endpointInstanceId: "instance-1",
      },
    ),
  );
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), h.forwarded("detector")),
  );
  assertEquals(h.answers[1].endpointInstanceId, "instance-1");
  assertEquals(h.answers[1].requestId, "request-2");
  assertEquals(h.gateway.stats.answered, 2);
  assertEquals(h.gateway.pendingExchanges, 0);
  await h.close();
});

// ---------------------------------------------------------------------------------------------
// Instance replacement in the middle of an execution

Deno.test("gateway answers unknown when the instance running an execution is replaced", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  const track = context("track");
  await h.caller.send(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), track, unresolved("invoke-1")),
  );
  const invoke = h.forwarded("detector");
  h.provide("detector", makeInvokeResponseEnvelope(new ToolAccepted({}), invoke));
  assertEquals(h.answers[0].payload, { outcome: "accepted", accepted: { details: {} } });
  // A result request waits on instance-1 ...
  await h.caller.send(makeResultRequestEnvelope(track, unresolved("result-1")));
  const waiting = h.forwarded("detector");
  assertEquals(h.gateway.pendingExchanges, 1);

  // ... when the provider restarts: a new process start registers instance-2 on the route.
  h.register("detector", "instance-2");
  assertEquals(h.gateway.pendingExchanges, 0);
  assertEquals(h.answers[1].messageType, "tool.result.response");
  assertEquals(h.answers[1].requestId, "result-1");
  assertEquals(h.answers[1].payload, {
    status: "available",
    result: { status: "unknown", outputs: {}, error: UNKNOWN_AFTER_REPLACEMENT },
  });

  // Later requests for the execution are answered by the gateway, never sent to instance-2.
  const sentBefore = h.sent.detector.length;
  await h.caller.send(makeStatusRequestEnvelope(track, unresolved("status-1")));
  await h.caller.send(makeControlRequestEnvelope("cancel", track, unresolved("cancel-1")));
  await h.caller.send(makeResultRequestEnvelope(track, unresolved("result-2")));
  assertEquals(h.sent.detector.length, sentBefore);
  assertEquals(h.answers[2].payload, {
    status: { phase: "unknown", details: {}, error: UNKNOWN_AFTER_REPLACEMENT },
  });
  assertEquals(h.answers[3].payload, {
    response: { command: "cancel", status: "terminal", details: {} },
  });
  assertEquals(h.answers[4].payload, h.answers[1].payload);

  // instance-1's late answer and events are dropped.
  h.provide(
    "detector",
    makeResultResponseEnvelope(
      new ToolResultResponse({
        status: "available",
        result: new ToolResult({ status: "succeeded" }),
      }),
      waiting,
    ),
  );
  h.provide(
    "detector",
    makeEventEnvelope(new ToolEvent({ type: "progress" }), track, {
      endpointInstanceId: "instance-1",
      sequence: 0,
    }),
  );
  assertEquals(h.answers.length, 5);
  assertEquals(h.gateway.stats.dropped, 2);
  assertEquals(h.gateway.stats.unknown, 4);

  // New executions go to instance-2.
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("track", "invocation-2"),
      unresolved("i-2"),
    ),
  );
  assertEquals(h.forwarded("detector").endpointInstanceId, "instance-2");
  await h.close();
});

Deno.test("gateway answers a pending invoke unknown when its instance is replaced", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("invoke-1"),
    ),
  );
  h.register("detector", "instance-2");
  assertEquals(h.answers.length, 1);
  assertEquals(h.answers[0].payload, {
    outcome: "completed",
    result: { status: "unknown", outputs: {}, error: UNKNOWN_AFTER_REPLACEMENT },
  });
  await h.close();
});

// ---------------------------------------------------------------------------------------------
// Lease expiry and unregister in the middle of an execution

Deno.test("gateway ends waits with a retryable error at lease expiry, and routes again when the same instance returns", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  const track = context("track");
  await h.caller.send(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), track, unresolved("invoke-1")),
  );
  h.provide("detector", makeInvokeResponseEnvelope(new ToolAccepted({}), h.forwarded("detector")));
  await h.caller.send(makeStatusRequestEnvelope(track, unresolved("status-1")));
  assertEquals(h.gateway.pendingExchanges, 1);

  h.clock.advance(999);
  assertEquals(h.answers.length, 1, "the lease has not run out yet");
  h.clock.advance(1); // no traffic: the gateway's own timer expires the lease
  assertStrictEquals(h.gateway.registry.lookup(YOLO), undefined);
  assertEquals(h.gateway.pendingExchanges, 0);
  assertEquals(h.answers[1].requestId, "status-1");
  assertEquals(errorOf(h.answers[1]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "the lease of endpoint instance 'instance-1' of 'vision.yolo' expired",
    retryable: true,
    details: { endpoint_id: YOLO },
  });

  // Asked again while it is gone: the same retryable error, nothing sent.
  const sentBefore = h.sent.detector.length;
  await h.caller.send(makeResultRequestEnvelope(track, unresolved("result-1")));
  assertEquals(h.sent.detector.length, sentBefore);
  assertEquals(errorOf(h.answers[2]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "endpoint instance 'instance-1' of 'vision.yolo' is not registered",
    retryable: true,
    details: { endpoint_id: YOLO },
  });

  // The same instance registers again: status and result reach it.
  h.register("detector", "instance-1");
  await h.caller.send(makeStatusRequestEnvelope(track, unresolved("status-2")));
  const status = h.forwarded("detector");
  assertEquals([status.messageType, status.endpointInstanceId], [
    "tool.status.request",
    "instance-1",
  ]);
  h.provide(
    "detector",
    makeStatusResponseEnvelope(new ToolExecutionStatus({ phase: "completed" }), status),
  );
  await h.caller.send(makeResultRequestEnvelope(track, unresolved("result-2")));
  h.provide(
    "detector",
    makeResultResponseEnvelope(
      new ToolResultResponse({
        status: "available",
        result: new ToolResult({ status: "succeeded", outputs: { tracked: true } }),
      }),
      h.forwarded("detector"),
    ),
  );
  assertEquals(h.answers[3].payload, { status: { phase: "completed", details: {} } });
  assertEquals(h.answers[4].requestId, "result-2");
  assertEquals(h.answers[4].payload, {
    status: "available",
    result: { status: "succeeded", outputs: { tracked: true } },
  });
  await h.close();
});

Deno.test("gateway ends waits with a retryable error at unregister, and routes again after re-registration", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  const track = context("track");
  await h.caller.send(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), track, unresolved("invoke-1")),
  );
  h.provide("detector", makeInvokeResponseEnvelope(new ToolAccepted({}), h.forwarded("detector")));
  await h.caller.send(makeResultRequestEnvelope(track, unresolved("result-1")));

  h.provide(
    "detector",
    makeUnregisterEnvelope({
      endpointId: YOLO,
      endpointInstanceId: "instance-1",
      requestId: "unregister-1",
    }),
  );
  const unregistered = h.sent.detector.at(-1)!;
  assertEquals(endpointRegistryResponseFromPayload(unregistered.payload).status, "accepted");
  assertEquals(errorOf(h.answers[1]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "endpoint instance 'instance-1' of 'vision.yolo' unregistered",
    retryable: true,
    details: { endpoint_id: YOLO },
  });
  assertEquals(h.answers[1].requestId, "result-1");

  h.register("detector", "instance-1");
  await h.caller.send(makeResultRequestEnvelope(track, unresolved("result-2")));
  const forwarded = h.forwarded("detector");
  assertEquals(forwarded.endpointInstanceId, "instance-1");
  h.provide(
    "detector",
    makeResultResponseEnvelope(new ToolResultResponse({ status: "pending" }), forwarded),
  );
  assertEquals(h.answers[2].payload, { status: "pending" });
  await h.close();
});

Deno.test("gateway refuses an invoke pinned to an instance that is no longer current", async () => {
  const h = new Harness();
  h.register("detector", "instance-2");
  await h.caller.send(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context("detect"), {
      requestId: "invoke-1",
      endpointInstanceId: "instance-1",
    }),
  );
  assertEquals(h.sent.detector.length, 1, "only the Registry answer");
  assertEquals(h.answers[0].endpointInstanceId, "instance-1");
  assertEquals(errorOf(h.answers[0]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "endpoint instance 'instance-1' of 'vision.yolo' is no longer current",
    retryable: true,
    details: { endpoint_id: YOLO },
  });
  await h.close();
});

// ---------------------------------------------------------------------------------------------
// Forged answers

Deno.test("gateway drops answers and events a route's instance has no business sending", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  h.register("arm", "arm-instance-1");
  const other = h.gateway.connect();
  const otherAnswers: ToolEnvelope[] = [];
  other.connect((message) => otherAnswers.push(message));
  const track = context("track");
  await h.caller.send(
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), track, unresolved("invoke-1")),
  );
  const invoke = h.forwarded("detector");
  const accepted = makeInvokeResponseEnvelope(new ToolAccepted({}), invoke);

  // Another route answers the detector's request.
  h.provide("arm", accepted);
  // The right route, but not correlating: another execution, another instance, another type.
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(
      new ToolAccepted({}),
      replaceEnvelope(invoke, { invocationId: "invocation-9" }),
    ),
  );
  h.provide(
    "detector",
    makeErrorResponseEnvelope(
      new ToolError({ code: "X", message: "forged", retryable: false }),
      replaceEnvelope(invoke, { endpointInstanceId: "instance-9" }),
    ),
  );
  h.provide(
    "detector",
    makeStatusResponseEnvelope(
      new ToolExecutionStatus({ phase: "running" }),
      replaceEnvelope(invoke, { messageType: "tool.status.request" }),
    ),
  );
  // A request id nobody forwarded.
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(
      new ToolAccepted({}),
      replaceEnvelope(invoke, { requestId: "invoke-1" }),
    ),
  );
  // Events: of an execution nobody routed, from another instance, from another route.
  const event = (key: ToolContext, instance: string) =>
    makeEventEnvelope(new ToolEvent({ type: "progress" }), key, {
      endpointInstanceId: instance,
      sequence: 0,
    });
  h.provide("detector", event(context("track", "invocation-9"), "instance-1"));
  h.provide("detector", event(track, "instance-9"));
  h.provide("arm", event(track, "instance-1"));
  // An envelope whose payload is no invoke response, and a route nobody configured.
  h.gateway.receive(
    "detector",
    new ToolEnvelope({
      messageType: "tool.invoke.response",
      requestId: invoke.requestId,
      invocationId: invoke.invocationId,
      attemptId: invoke.attemptId,
      endpointId: YOLO,
      endpointInstanceId: "instance-1",
      operation: "track",
      payload: { outcome: "bogus" },
    }),
  );
  h.gateway.receive("nowhere", accepted);

  assertEquals(h.answers, []);
  assertEquals(otherAnswers, []);
  assertEquals(h.gateway.stats.dropped, 10);
  assertEquals(h.gateway.pendingExchanges, 1);
  assert(
    h.logs.some((line) =>
      line.startsWith(
        "warn: dropped: tool.invoke.response endpoint_id=vision.yolo " +
          "invocation_id=invocation-1 attempt_id=attempt-1 request_id=invoke-1@gateway-1 " +
          "answers no request forwarded on route 'arm'",
      )
    ),
    h.logs.join("\n"),
  );

  // The genuine answer and event reach the caller that invoked, once.
  h.provide("detector", accepted);
  h.provide("detector", accepted);
  h.provide("detector", event(track, "instance-1"));
  assertEquals(h.answers.map((message) => message.messageType), [
    "tool.invoke.response",
    "tool.event",
  ]);
  assertEquals(otherAnswers, []);
  assertEquals(h.gateway.stats.dropped, 11);
  await h.close();
});

// ---------------------------------------------------------------------------------------------
// Health, bounds, timeouts, options

Deno.test("gateway keeps the current instance's endpoint.status and drops a stale one", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  const status = (instance: string, state: "ready" | "busy") =>
    makeEndpointStatusEnvelope(
      new EndpointStatus({ endpointId: YOLO, state, activeInvocations: 0 }),
      { endpointInstanceId: instance },
    );
  h.provide("detector", status("instance-1", "busy"));
  assertEquals(h.gateway.endpointStatus(YOLO)?.state, "busy");
  h.provide("detector", status("instance-9", "ready"));
  assertEquals(h.gateway.endpointStatus(YOLO)?.state, "busy");
  assertEquals(h.gateway.stats.dropped, 1);
  h.register("detector", "instance-2");
  assertStrictEquals(h.gateway.endpointStatus(YOLO), undefined);
  await h.close();
});

Deno.test("gateway forgets an unanswered exchange after exchangeTimeoutMs and drops the late answer", async () => {
  const h = new Harness({ exchangeTimeoutMs: 500, leaseTtlMs: 10_000 });
  h.register("detector", "instance-1");
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("invoke-1"),
    ),
  );
  const forwarded = h.forwarded("detector");
  h.clock.advance(500);
  assertEquals(h.gateway.pendingExchanges, 0);
  assert(
    h.logs.some((line) => line.startsWith("warn: no answer within 500 ms on route 'detector'")),
  );
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), forwarded),
  );
  assertEquals(h.answers, []);
  assertEquals(h.gateway.stats.dropped, 1);
  await h.close();
});

Deno.test("gateway answers FORGE_ENDPOINT_CAPACITY beyond maxPendingExchanges", async () => {
  const h = new Harness({ maxPendingExchanges: 1 });
  h.register("detector", "instance-1");
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("invoke-1"),
    ),
  );
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect", "invocation-2"),
      unresolved("invoke-2"),
    ),
  );
  assertEquals(h.answers.length, 1);
  assertEquals(errorOf(h.answers[0]), {
    code: "FORGE_ENDPOINT_CAPACITY",
    message: "the gateway already waits for 1 answers",
    retryable: true,
    details: { max_pending_exchanges: 1 },
  });
  assertEquals(h.answers[0].requestId, "invoke-2");
  await h.close();
});

Deno.test("gateway bounds waiting exchanges per endpoint: a slow endpoint does not refuse another's calls", async () => {
  // Regression: one maxPendingExchanges pool served every route, so the detector's unanswered
  // calls made the arm answer capacity errors too.
  const h = new Harness({ maxPendingExchanges: 8, maxPendingExchangesPerEndpoint: 2 });
  h.register("detector", "instance-1");
  h.register("arm", "arm-1");
  const invoke = (invocationId: string, endpointId = YOLO) =>
    h.caller.send(
      makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        context("detect", invocationId, endpointId),
        unresolved(`invoke-${invocationId}`),
      ),
    );
  for (const id of ["d1", "d2", "d3"]) await invoke(id);
  assertEquals(h.sent.detector.filter((m) => m.messageType === "tool.invoke.request").length, 2);
  assertEquals(h.answers.length, 1);
  assertEquals(h.answers[0].requestId, "invoke-d3");
  assertEquals(errorOf(h.answers[0]), {
    code: "FORGE_ENDPOINT_CAPACITY",
    message: "the gateway already waits for 2 answers of endpoint 'vision.yolo'",
    retryable: true,
    details: { endpoint_id: YOLO, max_pending_exchanges_per_endpoint: 2 },
  });
  // The arm still has its own share.
  await invoke("a1", ARM);
  await invoke("a2", ARM);
  assertEquals(h.answers.length, 1);
  assertEquals(h.sent.arm.filter((m) => m.messageType === "tool.invoke.request").length, 2);
  assertEquals(h.gateway.pendingExchanges, 4);
  // An answer frees its endpoint's share.
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), h.sent.detector[1]),
  );
  await invoke("d4");
  assertEquals(h.answers.length, 2);
  assertEquals(h.forwarded("detector").invocationId, "d4");
  assertEquals(h.gateway.stats.unavailable, 1);
  await h.close();
});

Deno.test("gateway maxExecutions forgets only finished executions and refuses an invoke when all run", async () => {
  // Regression: the oldest execution was forgotten even while it ran, so its later events (the
  // terminal one too) were dropped as forged.
  const h = new Harness({ maxExecutions: 2 });
  h.register("detector", "instance-1");
  const track = (id: string) => context("track", id);
  const start = async (id: string) => {
    await h.caller.send(
      makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), track(id), unresolved(id)),
    );
  };
  const accept = () =>
    h.provide(
      "detector",
      makeInvokeResponseEnvelope(new ToolAccepted({}), h.forwarded("detector")),
    );
  const event = (id: string, type: "progress" | "executor_completed", sequence: number) =>
    h.provide(
      "detector",
      makeEventEnvelope(new ToolEvent({ type }), track(id), {
        endpointInstanceId: "instance-1",
        sequence,
      }),
    );
  await start("t1");
  accept();
  await start("t2");
  accept();
  // Both run: a third invoke is refused before it is forwarded.
  await start("t3");
  assertEquals(h.sent.detector.filter((m) => m.messageType === "tool.invoke.request").length, 2);
  assertEquals(h.answers.map((m) => [m.requestId, m.messageType]), [
    ["t1", "tool.invoke.response"],
    ["t2", "tool.invoke.response"],
    ["t3", "tool.error"],
  ]);
  assertEquals(errorOf(h.answers[2]), {
    code: "FORGE_ENDPOINT_CAPACITY",
    message: "the gateway already routes 2 running executions",
    retryable: true,
    details: { max_executions: 2 },
  });
  // The oldest still running execution keeps its events, the terminal one included.
  event("t1", "progress", 0);
  event("t1", "executor_completed", 1);
  assertEquals(h.answers.slice(3).map((m) => [m.invocationId, m.payload.type]), [
    ["t1", "progress"],
    ["t1", "executor_completed"],
  ]);
  // t1 finished: it makes room for t3, and t2 (still running) keeps its events.
  await start("t3");
  assertEquals(h.forwarded("detector").invocationId, "t3");
  accept();
  event("t2", "executor_completed", 0);
  assertEquals(h.answers.at(-1)!.invocationId, "t2");
  assertEquals(h.answers.at(-1)!.payload.type, "executor_completed");
  assertEquals(h.gateway.stats.dropped, 0, h.logs.join("\n"));
  assertEquals(h.gateway.stats.unavailable, 1);
  await h.close();
});

Deno.test("gateway answers a failed send on the route with a retryable error", async () => {
  const gateway = new ToolGateway({ routes: ROUTES, clock: new FakeClock(), logger: () => {} });
  const registryAnswers: ToolEnvelope[] = [];
  let fail = false;
  gateway.attachRoute("detector", (envelope) => {
    if (fail) throw new Error("link down");
    registryAnswers.push(envelope);
  });
  gateway.receive(
    "detector",
    makeRegistrationEnvelope(descriptors.detector, {
      endpointInstanceId: "instance-1",
      requestId: "register-1",
    }),
  );
  assertEquals(registryAnswers.length, 1);
  const caller = gateway.connect();
  const answers: ToolEnvelope[] = [];
  caller.connect((message) => answers.push(message));
  fail = true;
  await caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("invoke-1"),
    ),
  );
  assertEquals(errorOf(answers[0]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "sending on route 'detector' of endpoint 'vision.yolo' failed",
    retryable: true,
    details: { endpoint_id: YOLO },
  });
  assertEquals(gateway.pendingExchanges, 0);
  await gateway.close();
});

Deno.test("gateway close answers every waiting exchange and refuses later requests", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("invoke-1"),
    ),
  );
  await h.close();
  assertEquals(errorOf(h.answers[0]), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "the gateway closed",
    retryable: true,
    details: { endpoint_id: YOLO },
  });
  assertEquals(h.clock.pending, 0, "no timer left behind");
  let refused: unknown;
  try {
    await h.caller.send(makeStatusRequestEnvelope(context("track"), unresolved("status-1")));
  } catch (error) {
    refused = error;
  }
  assertInstanceOf(refused, Error);
});

Deno.test("gateway options name the option and the value received", () => {
  for (
    const [option, value] of [
      ["maxPendingExchanges", 0],
      ["maxPendingExchangesPerEndpoint", 2.5],
      ["exchangeTimeoutMs", 1.5],
      ["maxExecutions", -1],
      ["maxMessageBytes", 0],
    ] as const
  ) {
    const error = assertThrows(
      () => new ToolGateway({ routes: ROUTES, [option]: value }),
      RangeError,
    );
    assertEquals(
      error.message,
      `Cannot create a ToolGateway as '${option}' must be a positive integer: current value is ${value}`,
    );
  }
  assertEquals(
    assertThrows(() => new ToolGateway(null as never), TypeError).message,
    "Cannot create a ToolGateway as 'options' must be an object: current value is null",
  );
  assertEquals(
    assertThrows(() => new ToolGateway({ routes: ROUTES, clock: {} as never }), TypeError)
      .message,
    "Cannot create a ToolGateway as 'clock' must be an object with now(), setTimeout() and " +
      "clearTimeout(): current value is [object Object]",
  );
  // From plain JavaScript, a null limit is an absent one: the default.
  new ToolGateway({ routes: ROUTES, maxExecutions: null as unknown as number });
  const gateway = new ToolGateway({ routes: ROUTES });
  assertEquals(
    assertThrows(() => gateway.attachRoute("detector", 1 as never), TypeError).message,
    "Cannot attach a route as 'send' must be a function: current value is 1",
  );
  assertThrows(() => gateway.attachRoute("nowhere", () => {}), RangeError, "'nowhere'");
  gateway.attachRoute("detector", () => {});
  assertThrows(() => gateway.attachRoute("detector", () => {}), Error, "already attached");
  // The route table is the Registry's: one route per endpoint.
  assertThrows(
    () => new ToolGateway({ routes: { a: YOLO, b: YOLO } }),
    RangeError,
    "more than one route",
  );
  void gateway.close();
  assertEquals(EndpointRegistryErrorCodes.ROUTE_MISMATCH, "FORGE_PROTOCOL_ROUTE_MISMATCH");
});

// ---------------------------------------------------------------------------------------------
// The gateway as a Dora node

Deno.test("gateway survives a caller whose deliver callback throws, and logs it", async () => {
  const h = new Harness();
  h.register("detector", "instance-1");
  const rude = h.gateway.connect();
  rude.connect(() => {
    throw new Error("caller bug");
  });
  await rude.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect"),
      unresolved("r-1"),
    ),
  );
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), h.forwarded("detector")),
  );
  assert(
    h.logs.some((line) => line.startsWith("error: a caller's deliver callback threw")),
    h.logs.join("\n"),
  );
  // The gateway still routes for everyone else.
  await h.caller.send(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context("detect", "i-2"),
      unresolved("r-2"),
    ),
  );
  h.provide(
    "detector",
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded" }), h.forwarded("detector")),
  );
  assertEquals(h.answers.map((message) => message.requestId), ["r-2"]);
  await h.close();
});

// The Gateway Tool API over real HTTP on 127.0.0.1: discovery, a Query, an Action with its SSE
// events, result and cancel, a Session stop, the invocation list, Last-Event-ID resume and 410.
import { assert, assertEquals } from "@std/assert";
import { demoDescriptor } from "../../examples/endpoint.ts";
import { endpointDescriptorToPayload } from "../../wire.ts";
import { ToolGateway, toolGatewayHttpHandler } from "../../gateway.ts";
import { ENDPOINT, SseReader, startHarness, until } from "./http_helpers.ts";

const POST = { method: "POST" };

Deno.test("http: GET /tools and GET /tools/{endpoint_id} show the Registry", async () => {
  const h = await startHarness();
  const tools = await h.json("/tools");
  assertEquals(tools.status, 200);
  assertEquals(tools.body, {
    ok: true,
    data: {
      revision: 1,
      tools: [{
        endpoint_id: ENDPOINT,
        descriptor: endpointDescriptorToPayload(demoDescriptor).descriptor,
      }],
    },
  });
  // Forge's shape: the descriptor object itself, not the registration payload that wraps it.
  const listed = (tools.body.data as { tools: { descriptor: Record<string, unknown> }[] }).tools[0];
  assertEquals(Object.keys(listed.descriptor), ["protocol_version", "endpoint_id", "operations"]);
  assertEquals(listed.descriptor.protocol_version, "forge.tool.endpoint/v1alpha1");
  assertEquals(listed.descriptor.endpoint_id, ENDPOINT);
  const one = await h.json(`/tools/${ENDPOINT}`);
  assertEquals(one.status, 200);
  const data = one.body.data as Record<string, unknown>;
  assertEquals([data.endpoint_id, data.state], [ENDPOINT, "registered"]);
  assert(
    typeof data.lease_left_ms === "number" && data.lease_left_ms > 0 &&
      data.lease_left_ms <= 30_000,
  );
  assertEquals(data.descriptor, endpointDescriptorToPayload(demoDescriptor).descriptor);
  assertEquals((data.descriptor as Record<string, unknown>).endpoint_id, ENDPOINT);
  const unknown = await h.json("/tools/robot.other");
  assertEquals(unknown.status, 404);
  assertEquals(unknown.body, {
    ok: false,
    msg: "endpoint 'robot.other' is not served by this gateway; GET /tools lists the endpoints",
    error: {
      code: "FORGE_TOOL_ENDPOINT_UNKNOWN",
      message:
        "endpoint 'robot.other' is not served by this gateway; GET /tools lists the endpoints",
      retryable: false,
      details: { endpoint_id: "robot.other" },
    },
  });
  await h.close();
});

Deno.test("http: a Query answers 200 with the terminal result; unknown operation 404; no instance 503", async () => {
  const h = await startHarness();
  const detected = await h.json(`/tools/${ENDPOINT}/detect:invoke`, {
    ...POST,
    body: JSON.stringify({ arguments: { classes: ["cube"] }, timeout_ms: 5000 }),
  });
  assertEquals(detected, {
    status: 200,
    body: {
      ok: true,
      data: {
        endpoint_id: ENDPOINT,
        operation: "detect",
        response: {
          outcome: "completed",
          result: {
            status: "succeeded",
            outputs: { objects: [{ class: "cube", score: 0.9, box: [0, 20, 32, 32] }] },
          },
        },
      },
    },
  });
  const missing = await h.json(`/tools/${ENDPOINT}/fly:invoke`, { ...POST, body: "{}" });
  assertEquals(missing.status, 404);
  assertEquals(
    (missing.body.error as Record<string, unknown>).code,
    "FORGE_TOOL_OPERATION_NOT_FOUND",
  );
  // A provider's rejection keeps its ToolError unchanged: 422.
  const rejected = await h.json(`/tools/${ENDPOINT}/detect:invoke`, {
    ...POST,
    body: JSON.stringify({ arguments: { classes: "cube" } }),
  });
  assertEquals(rejected.status, 422);
  assertEquals(
    (rejected.body.error as Record<string, unknown>).code,
    "FORGE_ENDPOINT_INVALID_ARGUMENTS",
  );
  await h.close();

  const bare = await startHarness({ register: false });
  const unavailable = await bare.json(`/tools/${ENDPOINT}/detect:invoke`, { ...POST, body: "{}" });
  assertEquals(unavailable, {
    status: 503,
    body: {
      ok: false,
      msg: "endpoint 'robot.demo' has no current instance",
      error: {
        code: "FORGE_ENDPOINT_UNAVAILABLE",
        message: "endpoint 'robot.demo' has no current instance",
        retryable: true,
        details: { endpoint_id: ENDPOINT },
      },
    },
  });
  const state = await bare.json(`/tools/${ENDPOINT}`);
  assertEquals(state.body.data, { endpoint_id: ENDPOINT, state: "unavailable", descriptor: null });
  await bare.close();
});

Deno.test("http: an Action answers 202 with an invocation; SSE events in order; result 200", async () => {
  const h = await startHarness();
  const started = await h.json(`/tools/${ENDPOINT}/move:invoke`, {
    ...POST,
    body: JSON.stringify({ arguments: { target: "home" } }),
  });
  assertEquals(started.status, 202);
  const invocation = started.body.data as Record<string, unknown>;
  const id = invocation.invocation_id as string;
  assertEquals(invocation.links, {
    self: `/invocations/${id}`,
    result: `/invocations/${id}/result`,
    events: `/invocations/${id}/events`,
    cancel: `/invocations/${id}/cancel`,
  });
  assertEquals([invocation.semantics, invocation.caller_id], ["action", "anonymous"]);
  const events = await new SseReader(await h.fetch(`/invocations/${id}/events`)).rest();
  // progress 0, 0.1 ... 1.0, executor_completed, then the end message.
  assertEquals(events.length, 13);
  assertEquals(events.slice(0, 12).map((m) => m.id), [...Array(12).keys()].map(String));
  assertEquals(events[11].event, "executor_completed");
  assertEquals(JSON.parse(events[0].data!), {
    sequence: 0,
    type: "progress",
    data: { fraction: 0 },
  });
  assertEquals(events[12].event, "end");
  assertEquals(JSON.parse(events[12].data!).result, {
    status: "succeeded",
    outputs: { pose: "home" },
  });
  await until(() => h.server.handler.stats.runningInvocations === 0, "the result");
  const result = await h.json(`/invocations/${id}/result`);
  assertEquals(result.status, 200);
  assertEquals((result.body.data as Record<string, unknown>).result, {
    status: "succeeded",
    outputs: { pose: "home" },
  });
  // Resume after event 9: events 10 and 11, then the end.
  const resumed = await new SseReader(
    await h.fetch(`/invocations/${id}/events`, { headers: { "last-event-id": "9" } }),
  ).rest();
  assertEquals(resumed.map((m) => m.id ?? m.event), ["10", "11", "end"]);
  await h.close();
});

Deno.test("http: cancel an Action (202), stop a Session (202), the wrong control is 409; GET /invocations lists both", async () => {
  const h = await startHarness({ stepMs: 20 });
  const move = await h.json(`/tools/${ENDPOINT}/move:invoke`, { ...POST, body: "{}" });
  const moveId = (move.body.data as Record<string, unknown>).invocation_id as string;
  const policy = await h.json(`/tools/${ENDPOINT}/policy:invoke`, { ...POST, body: "{}" });
  assertEquals(policy.status, 202);
  const policyId = (policy.body.data as Record<string, unknown>).invocation_id as string;

  const listed = await h.json("/invocations");
  const rows = (listed.body.data as { invocations: Record<string, unknown>[] }).invocations;
  assertEquals(rows.map((row) => [row.invocation_id, row.operation, row.phase, row.caller_id]), [
    [moveId, "move", "running", "anonymous"],
    [policyId, "policy", "running", "anonymous"],
  ]);
  const status = await h.json(`/invocations/${policyId}`);
  assertEquals(status.status, 200);
  assertEquals(
    ((status.body.data as Record<string, unknown>).status as Record<string, unknown>).phase,
    "running",
  );
  const pending = await h.json(`/invocations/${policyId}/result`);
  assertEquals([pending.status, (pending.body.data as Record<string, unknown>).phase], [
    202,
    "running",
  ]);

  const wrong = await h.json(`/invocations/${policyId}/cancel`, POST);
  assertEquals(wrong.status, 409);
  assertEquals((wrong.body.error as Record<string, unknown>).code, "FORGE_TOOL_REQUEST_CONFLICT");
  const cancelled = await h.json(`/invocations/${moveId}/cancel`, {
    ...POST,
    body: JSON.stringify({ reason: "operator" }),
  });
  assertEquals(cancelled.status, 202);
  assertEquals(
    ((cancelled.body.data as Record<string, unknown>).control as Record<string, unknown>).status,
    "accepted",
  );
  const stopped = await h.json(`/invocations/${policyId}/stop`, POST);
  assertEquals(stopped.status, 202);
  await until(() => h.server.handler.stats.runningInvocations === 0, "both ends");
  const moveResult = await h.json(`/invocations/${moveId}/result`);
  assertEquals(
    ((moveResult.body.data as Record<string, unknown>).result as Record<string, unknown>).status,
    "cancelled",
  );
  const policyResult = await h.json(`/invocations/${policyId}/result`);
  assertEquals(
    ((policyResult.body.data as Record<string, unknown>).result as Record<string, unknown>).status,
    "stopped",
  );
  const again = await h.json(`/invocations/${moveId}/cancel`, POST);
  assertEquals(again.status, 409);
  assertEquals(h.gateway.pendingExchanges, 0);
  await h.close();
});

Deno.test("http: Last-Event-ID before the kept window is 410; a bad one 400", async () => {
  const h = await startHarness({ maxEventsPerInvocation: 4 });
  const move = await h.json(`/tools/${ENDPOINT}/move:invoke`, { ...POST, body: "{}" });
  const id = (move.body.data as Record<string, unknown>).invocation_id as string;
  await until(() => h.server.handler.stats.runningInvocations === 0, "the end");
  // 12 events, 4 kept: 8..11.
  const gone = await h.json(`/invocations/${id}/events`, { headers: { "last-event-id": "2" } });
  assertEquals(gone.status, 410);
  assertEquals(gone.body.error, {
    code: "FORGE_TOOL_EVENTS_EXPIRED",
    message: `events after 2 of invocation '${id}' are no longer kept (the oldest kept is 8); ` +
      `read GET /invocations/${id} for its status and result`,
    retryable: false,
    details: { first_retained_sequence: 8, last_event_id: 2 },
  });
  const edge = await new SseReader(
    await h.fetch(`/invocations/${id}/events`, { headers: { "last-event-id": "7" } }),
  ).rest();
  assertEquals(edge.map((m) => m.id ?? m.event), ["8", "9", "10", "11", "end"]);
  const bad = await h.json(`/invocations/${id}/events`, { headers: { "last-event-id": "x" } });
  assertEquals(bad.status, 400);
  await h.close();
});

Deno.test("http: the handler answers without a socket; unknown route 404 and wrong method 405, as JSON", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const handler = toolGatewayHttpHandler(gateway, { logger: () => {} });
  const nothing = await handler(new Request("http://gw/nothing"));
  assertEquals(nothing.status, 404);
  assertEquals((await nothing.json()).error.code, "FORGE_TOOL_ROUTE_NOT_FOUND");
  const method = await handler(new Request("http://gw/tools", { method: "DELETE" }));
  assertEquals(method.status, 405);
  assertEquals((await method.json()).msg, "DELETE is not allowed on /tools");
  const unknown = await handler(new Request("http://gw/invocations/nope"));
  assertEquals(unknown.status, 404);
  assertEquals((await unknown.json()).error.code, "FORGE_TOOL_INVOCATION_NOT_FOUND");
  await handler.close();
  await gateway.close();
});

Deno.test("http: the store is bounded: all running is 503 busy, an ended one gives way", async () => {
  const h = await startHarness({ maxInvocations: 2, retentionMs: 60_000, stepMs: 200 });
  const start = async (operation = "policy") =>
    await h.json(`/tools/${ENDPOINT}/${operation}:invoke`, { ...POST, body: "{}" });
  const idOf = (answer: { body: Record<string, unknown> }) =>
    (answer.body.data as Record<string, unknown>).invocation_id as string;
  const first = idOf(await start());
  // The demo's policy runs one at a time: the endpoint's own bound is a 503 too.
  const capacity = await start();
  assertEquals([capacity.status, (capacity.body.error as Record<string, unknown>).code], [
    503,
    "FORGE_ENDPOINT_CAPACITY",
  ]);
  const second = idOf(await start("move"));
  const busy = await start();
  assertEquals(busy.status, 503);
  assertEquals(busy.body.error, {
    code: "FORGE_TOOL_GATEWAY_BUSY",
    message: "2 invocations are running ('maxInvocations'); retry when one ends",
    retryable: true,
    details: {},
  });
  await h.json(`/invocations/${first}/stop`, POST);
  await until(() => h.server.handler.stats.runningInvocations === 1, "the first to end");
  const third = idOf(await start());
  // The ended one gave way; the running one stays.
  assertEquals((await h.json(`/invocations/${first}`)).status, 404);
  const ids =
    ((await h.json("/invocations")).body.data as { invocations: { invocation_id: string }[] })
      .invocations.map((row) => row.invocation_id);
  assertEquals(ids, [second, third]);
  await h.close();
  assertEquals(h.server.handler.stats.invocations, 0);
});

Deno.test("http: extraRoutes mount before the Tool API, behind the tokens unless public", async () => {
  const h = await startHarness({
    tokens: { "token-1234567890": "ops" },
    extraRoutes: [
      {
        method: "GET",
        pathname: "/metrics",
        handler: (_r, { callerId }) => new Response(`m ${callerId}`),
      },
      { method: "GET", pathname: "/", public: true, handler: () => new Response("status page") },
    ],
  });
  assertEquals((await h.fetch("/metrics")).status, 401);
  const metrics = await h.fetch("/metrics", {
    headers: { authorization: "Bearer token-1234567890" },
  });
  assertEquals([metrics.status, await metrics.text()], [200, "m ops"]);
  const page = await h.fetch("/");
  assertEquals([page.status, await page.text()], [200, "status page"]);
  await h.close();
});

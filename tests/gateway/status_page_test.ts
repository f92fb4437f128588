// The status page without a browser: GET / is one self-contained page (strict CSP whose hashes
// match its inline style and script, nosniff, under 16 KiB, public with tokens), and GET /events
// streams a snapshot, Registry records and only the requesting caller's invocation changes.
import { assert, assertEquals, assertThrows } from "@std/assert";
import { ToolGateway, toolGatewayHttpHandler } from "../../gateway.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { FakeClock } from "../_helpers.ts";
import { HostedEndpoint } from "./_hosted.ts";
import { ENDPOINT, type SseMessage, SseReader, until } from "./http_helpers.ts";

const TOKENS = { "token-a": "alice", "token-b": "bob" };

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return `'sha256-${btoa(String.fromCharCode(...new Uint8Array(digest)))}'`;
}

function get(path: string, token?: string): Request {
  return new Request(`http://gateway${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
}

Deno.test("status page: GET / is one self-contained page, strict CSP by hashes, nosniff, < 16 KiB", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const handler = toolGatewayHttpHandler(gateway, { tokens: TOKENS, logger: () => {} });
  // Public with tokens configured: the page holds no data.
  const response = await handler(get("/"));
  assertEquals(response.status, 200);
  assertEquals(response.headers.get("content-type"), "text/html; charset=utf-8");
  assertEquals(response.headers.get("x-content-type-options"), "nosniff");
  assertEquals(response.headers.get("cache-control"), "no-store");
  const html = await response.text();
  const bytes = new TextEncoder().encode(html).length;
  assert(bytes < 16 * 1024, `the page is ${bytes} bytes`);
  const styles = [...html.matchAll(/<style>([^]*?)<\/style>/g)].map((m) => m[1]);
  const scripts = [...html.matchAll(/<script>([^]*?)<\/script>/g)].map((m) => m[1]);
  assertEquals([styles.length, scripts.length], [1, 1]);
  // Nothing loaded from elsewhere, and no data written as markup.
  assertEquals(
    /\ssrc=|\shref=|innerHTML|outerHTML|insertAdjacentHTML|document\.write/.test(html),
    false,
  );
  assertEquals(
    response.headers.get("content-security-policy"),
    `default-src 'none'; script-src ${await sha256(scripts[0])}; style-src ${await sha256(
      styles[0],
    )}; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; ` +
      "frame-ancestors 'none'",
  );
  // Its feed is not public.
  const feed = await handler(get("/events"));
  assertEquals(feed.status, 401);
  await feed.body?.cancel();
  await handler.close();

  const off = toolGatewayHttpHandler(gateway, { statusPage: false, logger: () => {} });
  assertEquals((await (await off(get("/"))).json()).error.code, "FORGE_TOOL_ROUTE_NOT_FOUND");
  assertEquals((await (await off(get("/events"))).json()).error.code, "FORGE_TOOL_ROUTE_NOT_FOUND");
  await off.close();
  assertThrows(
    () => toolGatewayHttpHandler(gateway, { statusPage: "yes" as unknown as boolean }),
    TypeError,
    "Cannot serve the gateway over HTTP as 'statusPage' must be a boolean: current value is \"yes\"",
  );
  await gateway.close();
});

/** The next message that is not a keep-alive comment. */
async function next(reader: SseReader): Promise<SseMessage & { json: Record<string, unknown> }> {
  for (;;) {
    const message = await reader.next();
    if (message === undefined) throw new Error("the feed ended");
    if (message.comment === undefined) return { ...message, json: JSON.parse(message.data!) };
  }
}

Deno.test("status page: GET /events streams a snapshot, Registry records and only the caller's invocations", async () => {
  const clock = new FakeClock();
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, clock, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(1).createHandler({ endpointInstanceId: "demo-1" }),
  );
  hosted.register();
  const handler = toolGatewayHttpHandler(gateway, {
    tokens: TOKENS,
    clock,
    retentionMs: 1,
    logger: () => {},
  });
  const alice = new SseReader(await handler(get("/events", "token-a")));
  const bob = new SseReader(await handler(get("/events", "token-b")));
  assertEquals(handler.stats.subscribers, 2);
  const snapshot = await next(alice);
  assertEquals([snapshot.id, snapshot.event], ["0", "snapshot"]);
  assertEquals(snapshot.json, {
    registry_revision: 1,
    endpoints: [{
      endpoint_id: ENDPOINT,
      state: "registered",
      lease_left_ms: 30_000,
      reported_state: null,
    }],
    invocations: [],
  });
  assertEquals((await next(bob)).event, "snapshot");

  const started = await handler(
    new Request(`http://gateway/tools/${ENDPOINT}/move:invoke`, {
      method: "POST",
      headers: { authorization: "Bearer token-a" },
      body: "{}",
    }),
  );
  assertEquals(started.status, 202);
  const id = (await started.json()).data.invocation_id as string;
  const created = await next(alice);
  assertEquals([created.id, created.event, created.json.kind], ["1", "invocation", "created"]);
  const invocation = created.json.invocation as Record<string, unknown>;
  assertEquals(
    [invocation.invocation_id, invocation.operation, invocation.phase, invocation.caller_id],
    [id, "move", "running", "alice"],
  );
  const records: Record<string, unknown>[] = [];
  for (let message = await next(alice);; message = await next(alice)) {
    assertEquals([message.id, message.event], [String(records.length + 2), "invocation"]);
    records.push(message.json);
    if (message.json.kind === "forgotten") break;
  }
  // progress 0, 0.1 ... 1.0, executor_completed; ended; forgotten after the retention.
  assertEquals(records.length, 14);
  assertEquals(records[0], {
    kind: "event",
    invocation_id: id,
    sequence: 0,
    event_type: "progress",
    phase: "running",
  });
  assertEquals(records[11], {
    kind: "event",
    invocation_id: id,
    sequence: 11,
    event_type: "executor_completed",
    phase: "running",
  });
  assertEquals(records.slice(12), [
    { kind: "ended", invocation_id: id, phase: "succeeded" },
    { kind: "forgotten", invocation_id: id },
  ]);

  // A Registry change reaches both; bob's next message is it: none of alice's invocation.
  hosted.unregister();
  const expected = {
    kind: "unregistered",
    revision: 2,
    endpoint_id: ENDPOINT,
    endpoint_instance_id: "demo-1",
    route_id: "demo",
  };
  const aliceRegistry = await next(alice);
  assertEquals([aliceRegistry.id, aliceRegistry.event, aliceRegistry.json], [
    "16",
    "registry",
    expected,
  ]);
  const bobRegistry = await next(bob);
  assertEquals([bobRegistry.id, bobRegistry.event, bobRegistry.json], ["1", "registry", expected]);

  // A reader that goes away frees its subscription; close ends the others.
  await bob.cancel();
  assertEquals(handler.stats.subscribers, 1);
  await handler.close();
  assertEquals(await alice.next(), undefined);
  assertEquals(handler.stats.subscribers, 0);
  await hosted.close();
  await gateway.close();
});

Deno.test("status page: a feed reader too far behind gets one overflow record and its stream ends", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(1).createHandler({ endpointInstanceId: "demo-1" }),
  );
  const handler = toolGatewayHttpHandler(gateway, {
    maxEventsPerInvocation: 4,
    logger: () => {},
  });
  const feed = await handler(get("/events"));
  assertEquals(handler.stats.subscribers, 1);
  // Nobody reads: the snapshot and then Registry records queue up until the bound.
  for (let i = 0; i < 8; i++) {
    hosted.register();
    hosted.unregister();
  }
  assertEquals(handler.stats.subscribers, 0);
  const messages = await new SseReader(feed).rest();
  assertEquals(messages.map((m) => m.event), [
    "snapshot",
    "registry",
    "registry",
    "registry",
    "registry",
    "registry",
    "overflow",
  ]);
  assertEquals(messages.map((m) => m.id), ["0", "1", "2", "3", "4", "5", "6"]);
  assertEquals(JSON.parse(messages[6].data!), { dropped_after: 4 });
  await handler.close();
  await hosted.close();
  await gateway.close();
});

Deno.test("status page: at maxSubscribers GET /events is 503 and counts with the invocation streams", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const handler = toolGatewayHttpHandler(gateway, { maxSubscribers: 1, logger: () => {} });
  const first = await handler(get("/events"));
  const second = await handler(get("/events"));
  assertEquals(second.status, 503);
  assertEquals((await second.json()).error.code, "FORGE_TOOL_GATEWAY_BUSY");
  await first.body!.cancel();
  await until(() => handler.stats.subscribers === 0, "the release");
  await handler.close();
  await gateway.close();
});

// Bad input to the Gateway Tool API: bodies over the limit (declared and streamed), non-JSON
// and non-object bodies, unknown fields, bad timeout_ms and caller_id, slow and never-finished
// bodies (408), the deadline (504), an SSE client that goes away, keep-alives, option errors.
import { assertEquals, assertThrows } from "@std/assert";
import { makeRegistrationEnvelope } from "../../wire.ts";
import { ToolGateway, toolGatewayHttpHandler } from "../../gateway.ts";
import { demoDescriptor } from "../../examples/endpoint.ts";
import { ENDPOINT, SseReader, startHarness, until } from "./http_helpers.ts";

const INVOKE = `/tools/${ENDPOINT}/detect:invoke`;

function post(body: string) {
  return { method: "POST", body, headers: { "content-type": "application/json" } };
}

Deno.test("http input: body over maxBodyBytes is 413, declared or streamed without Content-Length", async () => {
  const h = await startHarness({ maxBodyBytes: 1024 });
  const declared = await h.json(
    INVOKE,
    post(JSON.stringify({ arguments: { x: "a".repeat(2000) } })),
  );
  assertEquals(declared, {
    status: 413,
    body: {
      ok: false,
      msg: "request body is larger than 1024 bytes ('maxBodyBytes'); send a smaller body",
      error: {
        code: "FORGE_TOOL_BODY_TOO_LARGE",
        message: "request body is larger than 1024 bytes ('maxBodyBytes'); send a smaller body",
        retryable: false,
        details: { max_body_bytes: 1024 },
      },
    },
  });
  // A streamed body: no Content-Length, chunks of 512 bytes, never-ending past the limit.
  const chunk = new TextEncoder().encode(" ".repeat(512));
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ < 8) controller.enqueue(chunk);
      else controller.close();
    },
  });
  const streamed = await h.fetch(INVOKE, {
    method: "POST",
    body: stream,
    // @ts-ignore: fetch's request-streaming option
    duplex: "half",
  });
  assertEquals(streamed.status, 413);
  assertEquals((await streamed.json()).error.code, "FORGE_TOOL_BODY_TOO_LARGE");
  await h.close();
});

Deno.test("http input: non-JSON, non-object, unknown field, bad arguments, timeout_ms and caller_id are 400", async () => {
  const h = await startHarness();
  const cases: [string, string][] = [
    ["{not json", "request body must be a JSON object"],
    ["[1,2]", "request body must be a JSON object"],
    ['"text"', "request body must be a JSON object"],
    ["", "request body must be a JSON object"],
    ['{"arguments":{},"x":1,"a":2}', "unknown request field(s): 'a', 'x'"],
    ['{"arguments":[1]}', "arguments must be a JSON object"],
    ['{"caller_id":"  "}', "caller_id must be a non-empty string when provided"],
    ['{"timeout_ms":0}', "timeout_ms must be a positive integer at most 300000: got 0"],
    ['{"timeout_ms":1.5}', "timeout_ms must be a positive integer at most 300000: got 1.5"],
    ['{"timeout_ms":true}', "timeout_ms must be a positive integer at most 300000: got true"],
    ['{"timeout_ms":300001}', "timeout_ms must be a positive integer at most 300000: got 300001"],
  ];
  for (const [body, msg] of cases) {
    const answer = await h.json(INVOKE, post(body));
    assertEquals(answer, {
      status: 400,
      body: {
        ok: false,
        msg,
        error: { code: "FORGE_TOOL_BAD_REQUEST", message: msg, retryable: false, details: {} },
      },
    }, body);
  }
  assertEquals(h.server.handler.stats.invocations, 0);
  await h.close();
});

Deno.test("http input: a never-finished body times out with 408 after bodyTimeoutMs", async () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  const handler = toolGatewayHttpHandler(gateway, { bodyTimeoutMs: 30, logger: () => {} });
  let cancelled = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"argu'));
    },
    cancel() {
      cancelled = true;
    },
  });
  const response = await handler(
    new Request(`http://gw${INVOKE}`, { method: "POST", body, duplex: "half" } as RequestInit),
  );
  assertEquals(response.status, 408);
  assertEquals(await response.json(), {
    ok: false,
    msg:
      "the request body did not arrive within 30 ms ('bodyTimeoutMs'); send the whole body at once",
    error: {
      code: "FORGE_TOOL_BODY_TIMEOUT",
      message:
        "the request body did not arrive within 30 ms ('bodyTimeoutMs'); send the whole body at once",
      retryable: true,
      details: { body_timeout_ms: 30 },
    },
  });
  assertEquals(cancelled, true);
  await handler.close();
  await gateway.close();
});

Deno.test("http input: a Query past timeout_ms is 504 FORGE_TOOL_INVOKE_TIMEOUT; the gateway's tables drain", async () => {
  // A registered provider that never answers.
  const gateway = new ToolGateway({
    routes: { demo: ENDPOINT },
    logger: () => {},
    exchangeTimeoutMs: 50,
  });
  gateway.attachRoute("demo", () => {});
  gateway.receive(
    "demo",
    makeRegistrationEnvelope(demoDescriptor, { endpointInstanceId: "silent-1", requestId: "r-1" }),
  );
  const handler = toolGatewayHttpHandler(gateway, { logger: () => {} });
  const response = await handler(
    new Request(`http://gw${INVOKE}`, { method: "POST", body: '{"timeout_ms":20}' }),
  );
  assertEquals(response.status, 504);
  const body = await response.json();
  assertEquals([body.error.code, body.error.retryable], ["FORGE_TOOL_INVOKE_TIMEOUT", true]);
  assertEquals(body.error.details.client_code, "FORGE_CLIENT_DEADLINE_EXCEEDED");
  await until(() => gateway.pendingExchanges === 0, "the exchange timeout");
  await handler.close();
  await gateway.close();
});

Deno.test("http input: an SSE client that disconnects frees its subscription; keep-alive comments flow", async () => {
  const h = await startHarness({ keepAliveMs: 10 });
  const started = await h.json(`/tools/${ENDPOINT}/policy:invoke`, post("{}"));
  const id = (started.body.data as Record<string, unknown>).invocation_id as string;
  const readers = await Promise.all(
    [0, 1, 2].map(async () => new SseReader(await h.fetch(`/invocations/${id}/events`))),
  );
  await until(() => h.server.handler.stats.subscribers === 3, "three subscribers");
  // The first sees a heartbeat and a keep-alive.
  const seen = new Set<string>();
  while (seen.size < 2) {
    const message = (await readers[0].next())!;
    seen.add(message.comment !== undefined ? "comment" : message.event!);
  }
  assertEquals([...seen].sort(), ["comment", "heartbeat"]);
  await readers[0].cancel();
  await readers[1].cancel();
  await until(() => h.server.handler.stats.subscribers === 1, "two unsubscribed");
  await h.json(`/invocations/${id}/stop`, { method: "POST" });
  const rest = await readers[2].rest();
  assertEquals(rest.at(-1)!.event, "end");
  assertEquals(JSON.parse(rest.at(-1)!.data!).phase, "stopped");
  assertEquals(h.server.handler.stats.subscribers, 0);
  await h.close();
});

Deno.test("http input: option errors name the option and show the value", () => {
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger: () => {} });
  assertThrows(
    () => toolGatewayHttpHandler(gateway, { maxBodyBytes: 0 }),
    RangeError,
    "Cannot serve the gateway over HTTP as 'maxBodyBytes' must be a positive integer: current value is 0",
  );
  assertThrows(
    () => toolGatewayHttpHandler(gateway, { defaultTimeoutMs: 10, maxTimeoutMs: 5 }),
    RangeError,
    "Cannot serve the gateway over HTTP as 'defaultTimeoutMs' must be at most 'maxTimeoutMs' (5): current value is 10",
  );
  assertThrows(
    () => toolGatewayHttpHandler(gateway, { tokens: { t: "" } }),
    TypeError,
    'must be a non-empty string: current value is ""',
  );
  gateway.close();
});

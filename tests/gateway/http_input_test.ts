// Bad input to the Gateway Tool API: bodies over the limit (declared and streamed), non-JSON
// and non-object bodies, unknown fields, bad timeout_ms and caller_id, slow and never-finished
// bodies (408), the deadline (504), an SSE client that goes away, keep-alives, option errors.
import { assertEquals, assertThrows } from "@std/assert";
import { encodeEnvelope, makeRegistrationEnvelope } from "../../wire.ts";
import { serveToolGateway, ToolGateway, toolGatewayHttpHandler } from "../../gateway.ts";
import type { ToolLogRecord } from "../../mod.ts";
import { demoDescriptor } from "../../examples/endpoint.ts";
import { DemoProvider, ENDPOINT, SseReader, startHarness, until } from "./http_helpers.ts";

const INVOKE = `/tools/${ENDPOINT}/detect:invoke`;

/** The answer to a request the service refuses as bad input: 400 with `msg`, in Forge's shape. */
function badRequest(msg: string) {
  return {
    status: 400,
    body: {
      ok: false,
      msg,
      error: { code: "FORGE_TOOL_BAD_REQUEST", message: msg, retryable: false, details: {} },
    },
  };
}

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
    // A float token is not an integer there, whatever its value (Forge Gateway: isinstance int).
    ['{"timeout_ms":1000.0}', "timeout_ms must be a positive integer at most 300000: got 1000.0"],
    ['{"timeout_ms":1e3}', "timeout_ms must be a positive integer at most 300000: got 1000.0"],
    ['{"timeout_ms":1e300}', "timeout_ms must be a positive integer at most 300000: got 1e+300"],
    // An integer token past 2^53 is shown as received, not as the float JSON.parse rounds it to.
    [
      '{"timeout_ms":123456789012345678901234567890}',
      "timeout_ms must be a positive integer at most 300000: got 123456789012345678901234567890",
    ],
    // A longer one is refused without parsing its digits (a million of them cost 55 ms as a
    // bigint); one of 309 digits or more is no float Infinity (a not-finite value before).
    [
      `{"timeout_ms":${"9".repeat(100_000)}}`,
      "timeout_ms must be a positive integer at most 300000: got an integer of more than 40 digits",
    ],
    [
      `{"arguments":{"n":-${"9".repeat(100_000)}}}`,
      "arguments.n integer exceeds interoperable range ±9007199254740991",
    ],
    ['{"arguments":{"f":-1e999}}', "arguments.f floating-point values must be finite"],
    // Python's str.strip() whitespace, as Forge's Gateway checks it (U+001C is whitespace there).
    ['{"caller_id":"\\u001c"}', "caller_id must be a non-empty string when provided"],
    // What the request's models refuse: the caller's 400, not the gateway failing (a 500 before).
    ['{"caller_id":"\\ud800"}', "caller_id must contain valid Unicode scalar values"],
    [
      '{"arguments":{"n":123456789012345678901234567890}}',
      "arguments.n integer exceeds interoperable range ±9007199254740991",
    ],
    ['{"arguments":{"a":"\\ud800"}}', "arguments.a must contain valid Unicode scalar values"],
    ['{"arguments":{"\\udc00":1}}', "arguments keys must contain valid Unicode scalar values"],
    // Forge Gateway's order: caller_id, timeout_ms, then the request's models (context, request).
    [
      '{"caller_id":"\\ud800","timeout_ms":0}',
      "timeout_ms must be a positive integer at most 300000: got 0",
    ],
    [
      '{"arguments":{"a":"\\ud800"},"caller_id":"\\udc00"}',
      "caller_id must contain valid Unicode scalar values",
    ],
  ];
  for (const [body, msg] of cases) {
    const answer = await h.json(INVOKE, post(body));
    assertEquals(answer, badRequest(msg), body);
  }
  assertEquals(h.server.handler.stats.invocations, 0);
  await h.close();
});

Deno.test("http input: the arguments' numbers reach the provider as Forge Gateway reads their tokens", async () => {
  // Python's json keeps a float token a float: 1e300 is no integer out of range there, -0.0 stays
  // -0.0 and is written back so; the integer token -0 is the integer 0.
  const logs: ToolLogRecord[] = [];
  const logger = (record: ToolLogRecord) => logs.push(record);
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger });
  const sent: string[] = [];
  let provider: DemoProvider | undefined = undefined;
  gateway.attachRoute("demo", (envelope) => {
    if (envelope.messageType === "tool.invoke.request") {
      sent.push(new TextDecoder().decode(encodeEnvelope(envelope)));
    }
    provider?.deliver(envelope);
  });
  provider = new DemoProvider(gateway, 5, logger);
  await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the registration");
  const server = serveToolGateway(gateway, { port: 0, logger });
  try {
    const response = await fetch(
      `http://127.0.0.1:${server.addr.port}${INVOKE}`,
      post(
        '{"arguments":{"big":1e300,"classes":["cube"],"f":1.5,"neg":-0.0,"small":-1E+300,"z":-0}}',
      ),
    );
    assertEquals(response.status, 200);
    assertEquals((await response.json()).data.response.result.status, "succeeded");
    assertEquals(sent.length, 1);
    const args = sent[0].slice(sent[0].indexOf('"arguments":'), sent[0].indexOf(',"context"'));
    assertEquals(
      args,
      '"arguments":{"big":1e+300,"classes":["cube"],"f":1.5,"neg":-0.0,"small":-1e+300,"z":0}',
    );
  } finally {
    await server.close();
    await server.finished;
    await provider.stop();
    await gateway.close();
  }
});

Deno.test("http input: a malformed escape in the path is read as Forge Gateway's server reads it: a 404, never a 500", async () => {
  const h = await startHarness();
  // urllib.parse.unquote's readings (Python 3.12): a % that starts no escape is kept as written,
  // escaped bytes that are not UTF-8 become U+FFFD (one per maximal ill-formed subsequence).
  const cases: [string, string, string, string][] = [
    ["POST", "/tools/%zz/detect:invoke", "FORGE_TOOL_ENDPOINT_UNKNOWN", "%zz"],
    ["GET", "/tools/%", "FORGE_TOOL_ENDPOINT_UNKNOWN", "%"],
    ["GET", "/tools/%25%%41", "FORGE_TOOL_ENDPOINT_UNKNOWN", "%%A"],
    ["GET", "/tools/%C3%A9%", "FORGE_TOOL_ENDPOINT_UNKNOWN", "é%"],
    ["GET", "/tools/%E2%82%AC%E2%82", "FORGE_TOOL_ENDPOINT_UNKNOWN", "€\ufffd"],
    ["GET", "/tools/%C0%AFx", "FORGE_TOOL_ENDPOINT_UNKNOWN", "\ufffd\ufffdx"],
    // An encoded surrogate is three ill-formed bytes.
    ["GET", "/invocations/%ED%A0%80", "FORGE_TOOL_INVOCATION_NOT_FOUND", "\ufffd\ufffd\ufffd"],
    ["POST", "/invocations/%FF/cancel", "FORGE_TOOL_INVOCATION_NOT_FOUND", "\ufffd"],
  ];
  for (const [method, path, code, decoded] of cases) {
    const answer = await h.json(path, method === "POST" ? post("{}") : { method });
    assertEquals(
      [answer.status, (answer.body.error as Record<string, unknown>).code],
      [404, code],
      path,
    );
    const details = (answer.body.error as { details: Record<string, unknown> }).details;
    assertEquals(details.endpoint_id ?? details.invocation_id, decoded, path);
  }
  // The operation part: "detect:invoke\ufffd" does not end with ":invoke".
  const target = await h.json(`/tools/${ENDPOINT}/detect%3Ainvoke%E0%A4`, post("{}"));
  assertEquals([target.status, (target.body.error as Record<string, unknown>).code], [
    404,
    "FORGE_TOOL_ROUTE_NOT_FOUND",
  ]);
  // Bad input, not a defect of the gateway (a URIError answered 500 before): nothing logged.
  assertEquals(h.logs.filter((record) => record.event === "gateway.http_failed"), []);
  await h.close();
  // A caller that has no token learns nothing of the path: 401 comes first.
  const guarded = await startHarness({ tokens: { "token-a": "caller-a" } });
  assertEquals((await guarded.json("/invocations/%zz", { method: "GET" })).status, 401);
  assertEquals(
    (await guarded.json("/invocations/%zz", { method: "GET", token: "token-a" })).status,
    404,
  );
  await guarded.close();
});

Deno.test("http input: a control reason the Wire refuses is 400 and the invocation runs on", async () => {
  const h = await startHarness({ stepMs: 20 });
  const move = await h.json(`/tools/${ENDPOINT}/move:invoke`, post("{}"));
  const id = (move.body.data as Record<string, unknown>).invocation_id as string;
  const cases: [string, string][] = [
    ['{"reason":7}', "reason must be a string when provided"],
    // The control request's rules: a 500 (the gateway failing) before.
    ['{"reason":""}', "reason must be a non-empty string when provided"],
    ['{"reason":" \\t"}', "reason must be a non-empty string when provided"],
    ['{"reason":"\\ud800"}', "reason must contain only valid Unicode scalar values"],
  ];
  for (const [body, msg] of cases) {
    assertEquals(await h.json(`/invocations/${id}/cancel`, post(body)), badRequest(msg), body);
  }
  const running = await h.json(`/invocations/${id}`);
  assertEquals((running.body.data as Record<string, unknown>).phase, "running");
  const cancelled = await h.json(`/invocations/${id}/cancel`, post('{"reason":"operator"}'));
  assertEquals(cancelled.status, 202);
  assertEquals(h.logs.filter((record) => record.event === "gateway.http_failed"), []);
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

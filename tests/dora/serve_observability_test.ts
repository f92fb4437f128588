// Observability: one ToolLogger reaches every part (binding, runner, serve, lifecycle,
// registration, health, registry, gateway, gateway node, client, client transports), each record
// names its event and the ids it concerns; lineLogger adapts a (level, message) line logger.
import { assertEquals, assertStrictEquals, assertStringIncludes, assertThrows } from "@std/assert";
import {
  consoleLogger,
  InProcessToolClientTransport,
  lineLogger,
  ToolAccepted,
  ToolEndpointClient,
  type ToolLogger,
  type ToolLogRecord,
  ToolResult,
} from "../../mod.ts";
import { makeRegistrationEnvelope } from "../../wire.ts";
import {
  EndpointHealthReporter,
  EndpointNodeLifecycle,
  EndpointRegistration,
  EndpointRegistry,
} from "../../node.ts";
import { ToolGateway } from "../../gateway.ts";
import {
  DoraToolEndpointBinding,
  LoopbackDataflow,
  runToolEndpointNode,
  runToolGatewayNode,
  serveToolEndpoint,
} from "../../dora.ts";
import { FakeClock } from "../_helpers.ts";
import {
  armEndpoint,
  DESCRIPTOR,
  ENDPOINT,
  INSTANCE as ARM_INSTANCE,
} from "../client/_fixtures.ts";
import {
  ACTION,
  actionHandler,
  INSTANCE,
  invokeFor,
  QUERY,
  queryDescriptor,
  queryHandler,
} from "../handler/_fakes.ts";

/** A logger that keeps every record. */
function recorder(): { readonly records: ToolLogRecord[]; readonly logger: ToolLogger } {
  const records: ToolLogRecord[] = [];
  return { records, logger: (record) => void records.push(record) };
}

/** The records' `level event` pairs, in order. */
function events(records: readonly ToolLogRecord[]): string[] {
  return records.map((record) => `${record.level} ${record.event}`);
}

/** A Query provider whose result cannot be encoded within the binding's 1 KiB limit. */
const HUGE_QUERY = {
  query: () => new ToolResult({ status: "succeeded", outputs: { blob: "x".repeat(4096) } }),
};

Deno.test("handler: the logger option defaults to consoleLogger and is readable", () => {
  assertStrictEquals(queryHandler(HUGE_QUERY, { logger: undefined }).logger, consoleLogger);
  const { logger } = recorder();
  assertStrictEquals(queryHandler(HUGE_QUERY, { logger }).logger, logger);
});

Deno.test("binding: an unencodable response is a binding.response_unencodable record with the request's ids", async () => {
  const { records, logger } = recorder();
  const binding = new DoraToolEndpointBinding(queryHandler(HUGE_QUERY, { logger }), {
    maxMessageBytes: 1024,
  });
  await binding.dispatchInput(
    (await import("../../dora.ts")).toolEnvelopeToMessage(invokeFor(QUERY)),
  );
  assertEquals(events(records), ["error binding.response_unencodable"]);
  const [record] = records;
  assertEquals(
    [record.endpointId, record.operation, record.invocationId, record.attemptId, record.requestId],
    ["vision.yolo", "detect", "invocation-1", "attempt-1", "request-1"],
  );
  assertEquals(
    record.message,
    "the tool.invoke.response could not be encoded; a correlated tool.error answers instead",
  );
  assertEquals((record.error as { code?: string }).code, "FORGE_PROTOCOL_MESSAGE_TOO_LARGE");
});

Deno.test("binding: its own logger option wins over the handler's", async () => {
  const { toolEnvelopeToMessage } = await import("../../dora.ts");
  const handlerLog = recorder();
  const bindingLog = recorder();
  const handler = queryHandler(HUGE_QUERY, { logger: handlerLog.logger });
  await new DoraToolEndpointBinding(handler, { maxMessageBytes: 1024, logger: bindingLog.logger })
    .dispatchInput(toolEnvelopeToMessage(invokeFor(QUERY)));
  assertEquals(events(bindingLog.records), ["error binding.response_unencodable"]);
  assertEquals(handlerLog.records, []);
  assertThrows(
    () => new DoraToolEndpointBinding(handler, { logger: 5 as never }),
    TypeError,
    "Cannot create a DoraToolEndpointBinding as 'logger' must be a function: current value is 5",
  );
});

Deno.test("binding: an acceptance too large to send is reported once, as undelivered, with the handler's execution.unknown", async () => {
  const { toolEnvelopeToMessage } = await import("../../dora.ts");
  const { records, logger } = recorder();
  const handler = actionHandler({
    start: () => new ToolAccepted({ details: { blob: "x".repeat(2048) } }),
    cancel: () => {},
    status: () => {},
    result: () => {},
  }, { logger });
  const binding = new DoraToolEndpointBinding(handler, {
    maxMessageBytes: 1024,
    eventSink: () => {},
  });
  await binding.dispatchInput(toolEnvelopeToMessage(invokeFor(ACTION)));
  assertEquals(events(records), ["warn execution.unknown", "error binding.acceptance_undelivered"]);
  assertEquals(records[1].requestId, "request-1");
  assertEquals(
    ((records[1].error as Error).cause as { code?: string }).code,
    "FORGE_PROTOCOL_MESSAGE_TOO_LARGE",
  );
  assertEquals(handler.metrics.operations.move.unknown, 1);
});

Deno.test("registry: a throwing onChange is a registry.listener_failed record", () => {
  const { records, logger } = recorder();
  const failure = new Error("listener down");
  const registry = new EndpointRegistry({
    routes: { yolo: "vision.yolo" },
    onChange: () => {
      throw failure;
    },
    logger,
  });
  registry.handle(
    makeRegistrationEnvelope(queryDescriptor(), {
      endpointInstanceId: INSTANCE,
      requestId: "register-1",
    }),
    "yolo",
  );
  assertEquals(events(records), ["error registry.listener_failed"]);
  assertEquals(records[0].endpointId, "vision.yolo");
  assertStrictEquals(records[0].error, failure);
  assertEquals(
    records[0].message,
    "onChange failed for registered of instance instance-1 (revision 1)",
  );
  assertThrows(
    () => new EndpointRegistry({ routes: {}, logger: "x" as never }),
    TypeError,
    "'logger'",
  );
});

Deno.test("registration: a lost attempt is a registration.lost record, a rejection registration.rejected", () => {
  const { records, logger } = recorder();
  const clock = new FakeClock();
  const registry = new EndpointRegistry({ routes: { yolo: "another.endpoint" } });
  let mode: "throw" | "registry" = "throw";
  const registration: EndpointRegistration = new EndpointRegistration({
    descriptor: queryDescriptor(),
    endpointInstanceId: INSTANCE,
    clock,
    jitter: 0,
    backoff: { initialMs: 100, factor: 2, maxMs: 1000 },
    logger,
    send: (envelope) => {
      if (mode === "throw") throw new Error("transport down");
      registration.receive(registry.handle(envelope, "yolo"));
    },
  });
  registration.start();
  assertEquals(events(records), ["warn registration.lost"]);
  assertEquals(records[0].endpointId, "vision.yolo");
  assertEquals((records[0].error as Error).message, "transport down");
  mode = "registry";
  clock.advance(100);
  assertEquals(events(records), ["warn registration.lost", "warn registration.rejected"]);
  assertEquals((records[1].error as { code: string }).code, "FORGE_PROTOCOL_ROUTE_MISMATCH");
  void registration.stop({ timeoutMs: 0 });
});

Deno.test("health: a failing details() callback is one health.callback_failed record to the handler's logger", () => {
  const { records, logger } = recorder();
  const reporter = new EndpointHealthReporter({
    handler: queryHandler(HUGE_QUERY, { logger }),
    send: () => {},
    clock: new FakeClock(),
    details: () => {
      throw new Error("no details");
    },
  });
  reporter.start();
  reporter.check();
  assertEquals(events(records), ["error health.callback_failed"]);
  assertEquals(records[0].message, "the details() callback failed; the snapshot reports degraded");
  assertEquals(records[0].endpointId, "vision.yolo");
  reporter.stop();
});

Deno.test("lifecycle: its logger reaches registration and health; by default the handler's", () => {
  for (const own of [true, false]) {
    const handlerLog = recorder();
    const nodeLog = recorder();
    const clock = new FakeClock();
    const lifecycle = new EndpointNodeLifecycle({
      handler: queryHandler(HUGE_QUERY, { logger: handlerLog.logger }),
      clock,
      send: (envelope) => {
        if (envelope.messageType === "endpoint.register") throw new Error("down");
      },
      health: {
        degraded: () => {
          throw new Error("sensor");
        },
      },
      logger: own ? nodeLog.logger : undefined,
    });
    lifecycle.start();
    const expected = ["warn registration.lost", "error health.callback_failed"];
    assertEquals(events((own ? nodeLog : handlerLog).records).sort(), expected.sort());
    assertEquals((own ? handlerLog : nodeLog).records, []);
    lifecycle.health.stop();
    void lifecycle.registration.stop({ timeoutMs: 0 });
  }
});

Deno.test("runner: its logger receives node.request_failed with the error, and replaces the transport log", async () => {
  const { records, logger } = recorder();
  const flow = new LoopbackDataflow();
  const failure = new Error("boom");
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: () => Promise.reject(failure),
    logger,
  });
  await flow.input("tick", new Uint8Array(0));
  await flow.request(new Uint8Array([1]));
  await flow.stop();
  await done;
  const failures = records.filter((record) => record.event !== "node.dora_event");
  assertEquals(events(failures), ["debug node.input_ignored", "error node.request_failed"]);
  assertStrictEquals(failures[1].error, failure);
  assertEquals(failures[1].message, "request 1 (1 bytes) failed: Error: boom");
  assertEquals(flow.logs, [], "the transport log is the default only without a logger");
  assertThrows(
    () =>
      runToolEndpointNode({
        transport: flow.transport,
        handle: () => Promise.resolve(),
        logger: 1 as never,
      }),
    TypeError,
    "Cannot create a ToolEndpointNode as 'logger' must be a function: current value is 1",
  );
});

Deno.test("serve: the handler's logger reaches the runner; the default handler logger keeps the Dora log", async () => {
  const { records, logger } = recorder();
  const flow = new LoopbackDataflow();
  const serving = serveToolEndpoint(queryHandler(HUGE_QUERY, { logger }), {
    transport: flow.transport,
  });
  await flow.request(new Uint8Array([1, 2, 3]));
  await flow.stop();
  await serving;
  assertEquals(
    events(records).filter((line) => !line.startsWith("debug")),
    ["error node.request_failed"],
  );
  assertEquals(flow.logs, []);
});

Deno.test("gateway: its logger receives gateway.dropped records", () => {
  const { records, logger } = recorder();
  const gateway = new ToolGateway({ routes: { yolo: "vision.yolo" }, logger });
  gateway.receive("yolo", new Uint8Array([1, 2, 3]) as never);
  assertEquals(events(records), ["warn gateway.dropped"]);
  assertEquals(gateway.stats.dropped, 1);
  assertThrows(
    () => new ToolGateway({ routes: {}, logger: 1 as never }),
    TypeError,
    "Cannot create a ToolGateway as 'logger' must be a function: current value is 1",
  );
});

Deno.test("lineLogger: hands each record to the line logger as consoleLogger's text", () => {
  const lines: string[] = [];
  const logger = lineLogger((level, message) => lines.push(`${level}|${message}`));
  logger({ level: "info", event: "a.b", message: "hello" });
  logger({
    level: "error",
    event: "binding.dispatch_failed",
    message: "failed",
    endpointId: "vision.yolo",
    requestId: "r-1",
    error: "not an Error",
  });
  assertEquals(lines, [
    "info|[a.b] hello",
    'error|[binding.dispatch_failed] failed (endpoint=vision.yolo, request=r-1) "not an Error"',
  ]);
  assertThrows(
    () => lineLogger(1 as never),
    TypeError,
    "Cannot create a line logger as 'write' must be a function: current value is 1",
  );
});

Deno.test("runner: by default warnings and errors reach the transport log as consoleLogger's text", async () => {
  const flow = new LoopbackDataflow();
  const done = runToolEndpointNode({
    transport: flow.transport,
    handle: () => Promise.reject("boom"),
  });
  await flow.input("tick", new Uint8Array(0));
  await flow.request(new Uint8Array([1]));
  await flow.stop();
  await done;
  assertEquals(flow.logs, [{
    level: "error",
    message: '[node.request_failed] request 1 (1 bytes) failed: boom "boom"',
  }]);
});

Deno.test("serve: its logger reaches the binding, the runner and the lifecycle, not the handler's", async () => {
  const handlerLog = recorder();
  const nodeLog = recorder();
  const flow = new LoopbackDataflow();
  const serving = serveToolEndpoint(queryHandler(HUGE_QUERY, { logger: handlerLog.logger }), {
    transport: flow.transport,
    maxMessageBytes: 1024,
    lifecycle: {
      registration: { responseTimeoutMs: 1 },
      unregisterTimeoutMs: 1,
      health: {
        degraded: () => {
          throw new Error("sensor");
        },
      },
    },
    logger: nodeLog.logger,
  });
  const { encodeToolEnvelopeIpc } = await import("../../dora.ts");
  await flow.request(encodeToolEnvelopeIpc(invokeFor(QUERY)));
  await flow.request(new Uint8Array([1, 2, 3]));
  await flow.stop();
  await serving;
  const seen = new Set(events(nodeLog.records));
  for (
    const expected of [
      "error binding.response_unencodable",
      "error node.request_failed",
      "error health.callback_failed",
    ]
  ) {
    assertEquals(seen.has(expected), true, `${expected} in ${[...seen].join(", ")}`);
  }
  assertEquals(handlerLog.records.filter((record) => !record.event.startsWith("execution.")), []);
  assertEquals(flow.logs, []);
});

Deno.test("gateway node: an undecodable caller request is a gateway_node.caller_input_undecodable record", async () => {
  for (const own of [true, false]) {
    const { records, logger } = recorder();
    const flow = new LoopbackDataflow();
    const running = runToolGatewayNode(new ToolGateway({ routes: {}, logger: () => {} }), {
      transport: flow.transport,
      callers: { planner_request: "planner_response" },
      logger: own ? logger : undefined,
    });
    await flow.input("planner_request", new Uint8Array([1, 2, 3]));
    await flow.stop();
    assertEquals((await running).invalidCallerInputs, 1);
    if (own) {
      assertEquals(events(records), ["warn gateway_node.caller_input_undecodable"]);
      assertEquals(flow.logs, []);
    } else {
      // The default: the transport's log, as the text consoleLogger writes.
      assertEquals(flow.logs.length, 1);
      assertEquals(flow.logs[0].level, "warn");
      assertStringIncludes(
        flow.logs[0].message,
        "[gateway_node.caller_input_undecodable] dropped undecodable request on caller input " +
          "'planner_request': ",
      );
    }
  }
});

Deno.test("client: a control that fails in the background is a client.background_failed record", async () => {
  const arm = armEndpoint();
  const inner = new InProcessToolClientTransport(arm.handler);
  const { records, logger } = recorder();
  const client = new ToolEndpointClient({
    transport: {
      connect: (deliver) => inner.connect(deliver),
      send: (request) =>
        request.messageType === "tool.control.request"
          ? Promise.reject(new Error("link down"))
          : inner.send(request),
    },
    endpointId: ENDPOINT,
    endpointInstanceId: ARM_INSTANCE,
    descriptor: DESCRIPTOR,
    logger,
  });
  const controller = new AbortController();
  const move = await client.invoke("move", { steps: 100_000, stepMs: 5 }, {
    signal: controller.signal,
  });
  controller.abort();
  while (records.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
  assertEquals(events(records), ["error client.background_failed"]);
  assertEquals(
    [records[0].endpointId, records[0].invocationId, records[0].attemptId],
    [ENDPOINT, move.key.invocationId, move.key.attemptId],
  );
  await client.close();
  await arm.handler.close({ graceMs: 0 });
  assertThrows(
    () => new ToolEndpointClient({ transport: inner, endpointId: ENDPOINT, logger: 1 as never }),
    TypeError,
    "'logger' must be a function: current value is 1",
  );
});

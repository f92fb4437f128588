/**
 * Every delay that comes from an option or a deadline is honoured beyond 2^31 − 1 ms: the global
 * `setTimeout` would fire such a timer after about 1 ms. Each test sets one option to 2^31 ms or
 * more and checks, over a short real wait, that what the timer guards did not happen early (and
 * that no `setTimeout` was asked for a delay it clamps).
 */
import { assertEquals } from "@std/assert";
import {
  InProcessToolClientTransport,
  type ToolClientTransport,
  ToolContext,
  ToolEndpointClient,
  type ToolEndpointClientOptions,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  type ToolEventRecord,
  ToolExecutionKey,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../../mod.ts";
import {
  EndpointRegistryResponse,
  makeEndpointRegistryResponseEnvelope,
  makeInvokeRequestEnvelope,
  makeRegistrationEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import { EndpointRegistration } from "../../node.ts";
import { ToolGateway } from "../../gateway.ts";
import { MAX_TIMER_DELAY_MS } from "../../src/_internal/timers.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT } from "../client/_fixtures.ts";

/** A short real wait: a clamped (1 ms) timer fires dozens of times in it. */
const WAIT_MS = 50;
const wait = (ms = WAIT_MS) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `body` with the global `setTimeout` wrapped to record each delay asked for (the timers
 * still run), and returns the delays that `setTimeout` would clamp to 1 ms.
 */
async function clampedDelays(body: () => Promise<void>): Promise<number[]> {
  const real = globalThis.setTimeout;
  const clamped: number[] = [];
  globalThis.setTimeout = ((callback: () => void, delay?: number) => {
    if (typeof delay === "number" && delay > MAX_TIMER_DELAY_MS) clamped.push(delay);
    return real(callback, delay);
  }) as typeof setTimeout;
  try {
    await body();
  } finally {
    globalThis.setTimeout = real;
  }
  return clamped;
}

// --- Client -------------------------------------------------------------------------------------

/** The in-process transport with answers dropped on the way back when `drop` says so. */
class DroppingTransport implements ToolClientTransport {
  readonly requests: ToolEnvelope[] = [];
  drop: (message: ToolEnvelope) => boolean = () => false;
  readonly #inner: InProcessToolClientTransport;

  constructor(inner: InProcessToolClientTransport) {
    this.#inner = inner;
  }

  connect(deliver: (message: ToolEnvelope) => void): void {
    this.#inner.connect((message) => {
      if (!this.drop(message)) deliver(message);
    });
  }

  resolveInstance = (): string | Promise<string> => this.#inner.resolveInstance();

  send(request: ToolEnvelope): Promise<void> {
    this.requests.push(request);
    return this.#inner.send(request);
  }
}

function client(options: Omit<ToolEndpointClientOptions, "transport" | "endpointId">) {
  const arm = armEndpoint();
  const transport = new DroppingTransport(new InProcessToolClientTransport(arm.handler));
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
    ...options,
  });
  return { arm, client, transport };
}

function count(transport: DroppingTransport, type: string): number {
  return transport.requests.filter((request) => request.messageType === type).length;
}

Deno.test("client timeoutMs 2^40: an unanswered exchange stays pending, its timer is not re-armed every 1 ms", async () => {
  const { arm, client: c, transport } = client({ timeoutMs: 2 ** 40 });
  transport.drop = () => true;
  let settled = false;
  const clamped = await clampedDelays(async () => {
    const query = c.query("echo", {}).finally(() => (settled = true));
    query.catch(() => {});
    await wait();
    assertEquals([settled, c.stats.pendingExchanges], [false, 1]);
    await c.close();
    await query.catch(() => {});
  });
  assertEquals(clamped, []);
  await arm.handler.close({ graceMs: 10 });
});

Deno.test("client pollIntervalMs 2^31: result() polls once, not every 1 ms", async () => {
  const { arm, client: c, transport } = client({ pollIntervalMs: 2 ** 31, timeoutMs: 1000 });
  transport.drop = (message) => message.messageType === "tool.event";
  const move = await c.invoke("move", { steps: 100_000, stepMs: 5 });
  const clamped = await clampedDelays(async () => {
    const result = move.result();
    await wait();
    assertEquals(count(transport, "tool.result.request"), 1);
    await move.cancel();
    transport.drop = () => false;
    await c.close();
    await result.catch(() => {});
  });
  assertEquals(clamped, []);
  await arm.handler.close({ graceMs: 10 });
});

Deno.test("client reorderWindowMs 2^31: an event after a gap is held, not released after 1 ms", async () => {
  const { arm, client: c, transport } = client({
    reorderWindowMs: 2 ** 31,
    pollIntervalMs: 2 ** 31,
  });
  // The first event (sequence 0) is lost: every later one waits for it.
  transport.drop = (message) => message.messageType === "tool.event" && message.sequence === 0;
  const move = await c.invoke("move", { steps: 100_000, stepMs: 2 });
  const records: ToolEventRecord[] = [];
  const clamped = await clampedDelays(async () => {
    const reading = (async () => {
      for await (const record of move.events) records.push(record);
    })();
    await wait();
    assertEquals(records, []);
    await move.cancel();
    await c.close();
    await reading.catch(() => {});
  });
  assertEquals(clamped, []);
  await arm.handler.close({ graceMs: 10 });
});

Deno.test("client reorderWindowMs 2^31: after a polled result the stream stays open for late events", async () => {
  const { arm, client: c, transport } = client({ reorderWindowMs: 2 ** 31, timeoutMs: 1000 });
  transport.drop = (message) => message.messageType === "tool.event";
  const move = await c.invoke("move", { steps: 0 });
  let ended = false;
  const clamped = await clampedDelays(async () => {
    assertEquals((await move.result()).status, "succeeded");
    const reading = (async () => {
      for await (const _ of move.events) { /* none arrive */ }
      ended = true;
    })();
    await wait();
    assertEquals(ended, false);
    await c.close();
    await reading.catch(() => {});
  });
  assertEquals(clamped, []);
  await arm.handler.close({ graceMs: 10 });
});

// --- Gateway and registration (through SYSTEM_CLOCK) ----------------------------------------------

const YOLO = "vision.yolo";
const yolo = new ToolEndpointDescriptor({
  protocolVersion: TOOL_ENDPOINT_PROTOCOL,
  endpointId: YOLO,
  operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
});

Deno.test("gateway exchangeTimeoutMs 2^31: an unanswered exchange is not forgotten after 1 ms", async () => {
  const logs: string[] = [];
  const sent: ToolEnvelope[] = [];
  const answers: ToolEnvelope[] = [];
  const clamped = await clampedDelays(async () => {
    const gateway = new ToolGateway({
      routes: { detector: YOLO },
      exchangeTimeoutMs: 2 ** 31,
      leaseTtlMs: 2 ** 40,
      logger: ({ level, message }) => logs.push(`${level}: ${message}`),
    });
    gateway.attachRoute("detector", (envelope) => {
      sent.push(envelope);
    });
    gateway.receive(
      "detector",
      makeRegistrationEnvelope(yolo, { endpointInstanceId: "instance-1", requestId: "reg-1" }),
    );

    const caller = gateway.connect();
    caller.connect((message) => answers.push(message));
    await caller.send(
      makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        new ToolContext({
          executionKey: new ToolExecutionKey({ invocationId: "inv-1", attemptId: "att-1" }),
          toolId: "forge.tool.detect",
          implementationId: "test",
          endpointId: YOLO,
          operation: "detect",
        }),
        { requestId: "invoke-1", endpointInstanceId: undefined },
      ),
    );
    await wait();
    assertEquals(gateway.pendingExchanges, 1);
    // The lease of 2^40 ms did not expire either: the endpoint is still routed.
    assertEquals(gateway.registry.lookup(YOLO)?.endpointInstanceId, "instance-1");
    await gateway.close();
  });
  assertEquals(clamped, []);
  assertEquals(logs.filter((line) => line.includes("no answer within")), []);
  assertEquals(answers.filter((answer) => answer.messageType === "tool.error").length <= 1, true);
  assertEquals(sent.map((envelope) => envelope.messageType), [
    "endpoint.registry.response",
    "tool.invoke.request",
  ]);
});

Deno.test("registration leaseTtlMs 2^40: the node registers once, not every ~2 ms", async () => {
  const sent: ToolEnvelope[] = [];
  const clamped = await clampedDelays(async () => {
    const registration: EndpointRegistration = new EndpointRegistration({
      descriptor: yolo,
      endpointInstanceId: "instance-1",
      send: (envelope) => {
        sent.push(envelope);
        registration.receive(makeEndpointRegistryResponseEnvelope(
          new EndpointRegistryResponse({
            operation: envelope.messageType === "endpoint.register" ? "register" : "unregister",
            status: "accepted",
            registryRevision: sent.length,
            leaseTtlMs: envelope.messageType === "endpoint.register" ? 2 ** 40 : undefined,
          }),
          envelope,
        ));
      },
    });
    registration.start();
    await wait();
    assertEquals(registration.state, "registered");
    await registration.stop();
  });
  assertEquals(clamped, []);
  assertEquals(sent.map((envelope) => envelope.messageType), [
    "endpoint.register",
    "endpoint.unregister",
  ]);
});

// --- Handler close ------------------------------------------------------------------------------

Deno.test("handler close graceMs 2^31 waits for a running call instead of ~1 ms", async () => {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "robot.slow",
      operations: [new ToolOperationDescriptor({ name: "run", semantics: "query" })],
    }),
    {
      endpointInstanceId: "slow-1",
      operations: {
        // The provider ignores the abort and answers only when the test says so.
        run: { query: () => finished.then(() => new ToolResult({ status: "succeeded" })) },
      },
    },
  );
  let closed = false;
  const clamped = await clampedDelays(async () => {
    const answer = handler.handleInvoke(
      makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        new ToolContext({
          executionKey: new ToolExecutionKey({ invocationId: "inv-1", attemptId: "att-1" }),
          toolId: "forge.tool.run",
          implementationId: "test",
          endpointId: "robot.slow",
          operation: "run",
        }),
        { requestId: "invoke-1", endpointInstanceId: "slow-1" },
      ),
    );
    await Promise.resolve();
    const closing = handler.close({ graceMs: 2 ** 31 }).then(() => (closed = true));
    await wait();
    assertEquals(closed, false);
    finish();
    await closing;
    assertEquals((await answer).messageType, "tool.invoke.response");
  });
  assertEquals(closed, true);
  assertEquals(clamped, []);
});

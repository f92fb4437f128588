// ToolEndpointClient through a ToolGateway against the real handler served on loopback
// dataflows: routing by endpoint id, a Dora caller of the gateway node, instance replacement and
// lease expiry in the middle of an execution, as the client sees them.
import { assert, assertEquals, assertInstanceOf, assertRejects } from "@std/assert";
import {
  ToolCallError,
  ToolClientError,
  ToolEndpointClient,
  type ToolEndpointClientOptions,
  type ToolError,
  type ToolEventRecord,
  type ToolInvocation,
} from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import { ToolGateway, type ToolGatewayOptions } from "../../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolClientTransport,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  type ServeLifecycleSettings,
  serveToolEndpoint,
} from "../../dora.ts";
import { createDemoHandler, demoDescriptor, demoEndpoint } from "../../examples/endpoint.ts";
import { startGatewayLoopback } from "../../examples/gateway_loopback.ts";
import { FakeClock, recordingLogger } from "../_helpers.ts";

const ENDPOINT = demoDescriptor.endpointId;

async function until(condition: () => boolean, what: string): Promise<void> {
  // Bounded by turns of the event loop, not by time.
  for (let turn = 0; turn < 2000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** A ToolError's fields, to compare with a literal. */
function plain(error: ToolError | undefined) {
  if (error === undefined) return undefined;
  const { code, message, retryable, details } = error;
  return { code, message, retryable, details };
}

async function collect(invocation: ToolInvocation): Promise<ToolEventRecord[]> {
  const records: ToolEventRecord[] = [];
  for await (const record of invocation.events) records.push(record);
  return records;
}

/** One provider process on the gateway's route `demo`: a loopback dataflow and its node. */
class Process {
  readonly flow = new LoopbackDataflow();
  readonly node: ReturnType<typeof serveToolEndpoint>;
  readonly #pumping: Promise<void>;
  /** The handler's records (a killed process logs what it could not publish). */
  readonly recorder = recordingLogger();

  constructor(gateway: ToolGateway, instance: string, lifecycle: ServeLifecycleSettings = {}) {
    const handler = demoEndpoint(5, this.recorder.logger).createHandler({
      endpointInstanceId: instance,
    });
    this.node = serveToolEndpoint(handler, {
      transport: this.flow.transport,
      lifecycle: { unregisterTimeoutMs: 50, ...lifecycle },
      graceMs: 50,
      logger: this.recorder.logger,
    });
    this.#pumping = (async () => {
      for (let out = await this.flow.nextOutput(); out; out = await this.flow.nextOutput()) {
        gateway.receive("demo", decodeToolEnvelopeIpc(out.data));
      }
    })();
  }

  /** What the gateway sends on the route reaches this process while it lives. */
  deliver(envelope: ToolEnvelope): void {
    if (this.flow.isClosed) return;
    this.flow.request(encodeToolEnvelopeIpc(envelope)).catch(() => undefined);
  }

  /** The process dies: its dataflow closes under it, it never unregisters. */
  async kill(): Promise<void> {
    await this.flow.transport.close();
    await this.node;
    await this.#pumping;
  }

  /** Stop: the node shuts down and unregisters. */
  async stop(): Promise<void> {
    await this.flow.stop();
    await this.node;
    await this.#pumping;
  }
}

/** A gateway with route `demo`, whose link reaches whichever process runs now. */
function gatewayWithRoute(options: Partial<ToolGatewayOptions> = {}) {
  const logs: string[] = [];
  const gateway = new ToolGateway({
    routes: { demo: ENDPOINT },
    logger: ({ level, message }) => logs.push(`${level}: ${message}`),
    ...options,
  });
  const route = { current: undefined as Process | undefined };
  gateway.attachRoute("demo", (envelope) => route.current?.deliver(envelope));
  return { gateway, route, logs };
}

function clientOf(gateway: ToolGateway, options: Partial<ToolEndpointClientOptions> = {}) {
  return new ToolEndpointClient({
    transport: gateway.connect(),
    endpointId: ENDPOINT,
    descriptor: demoDescriptor,
    pollIntervalMs: 5,
    maxPollIntervalMs: 20,
    ...options,
  });
}

Deno.test("gateway client: Query, Action and Session through gateway.connect() to the real handler", async () => {
  const { gateway, route, logs } = gatewayWithRoute();
  const client = clientOf(gateway);
  // Nothing registered yet: the call fails before anything is sent, retryable.
  const early = await assertRejects(() => client.query("detect", {}), ToolCallError);
  assertEquals([early.error.code, early.error.retryable], ["FORGE_ENDPOINT_UNAVAILABLE", true]);
  assertEquals([early.exchange, early.outcome], ["invoke", "not_sent"]);
  assertEquals(client.stats.sent, 0);

  route.current = new Process(gateway, "process-1");
  await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the registration");
  const detected = await client.query("detect", { classes: ["cube"] });
  assertEquals(detected.outputs, {
    objects: [{ class: "cube", score: 0.9, box: [0, 20, 32, 32] }],
  });

  // Action to completion: events in order after the acceptance, the result from the last one.
  const move = await client.invoke("move", { target: "home" }, { invocationId: "move-1" });
  assertEquals(move.endpointInstanceId, "process-1");
  const events = await collect(move);
  assertEquals(events.map((record) => record.sequence), events.map((_, index) => index));
  assertEquals(events.length, 12); // progress 0, 0.1 ... 1.0, executor_completed
  assertEquals(events.at(-1)!.event.type, "executor_completed");
  assertEquals((await move.result()).outputs, { pose: "home" });

  // Action cancelled mid-way, Session stopped.
  const shelf = await client.invoke("move", { target: "shelf" });
  for await (const record of shelf.events) {
    if (record.sequence === 1) assertEquals((await shelf.cancel("operator")).status, "accepted");
  }
  assertEquals((await shelf.result()).status, "cancelled");
  const policy = await client.invoke("policy", { task: "pick" });
  assertEquals((await policy.status()).phase, "running");
  assertEquals((await policy.stop("done")).status, "accepted");
  assertEquals((await policy.result()).status, "stopped");

  await client.close();
  await route.current.stop();
  assertEquals(gateway.registry.lookup(ENDPOINT), undefined); // unregistered at shutdown
  assertEquals(gateway.pendingExchanges, 0);
  assertEquals(gateway.stats.dropped, 0, logs.join("\n"));
  assertEquals(client.stats.uncorrelated + client.stats.mismatched + client.stats.invalid, 0);
  await gateway.close();
});

Deno.test("gateway client: a call before any registration rejects with the retryable ToolCallError FORGE_ENDPOINT_UNAVAILABLE, not sent", async () => {
  // Regression: resolveInstance threw a bare ToolEndpointError, whose code and retryable were
  // undefined, instead of the error the gateway answers such a call with.
  const { gateway } = gatewayWithRoute();
  const client = clientOf(gateway);
  for (const call of [() => client.query("detect", {}), () => client.invoke("move", {})]) {
    const error = await assertRejects(call, ToolCallError);
    assertEquals([error.code, error.retryable, error.kind], [
      "FORGE_ENDPOINT_UNAVAILABLE",
      true,
      "error",
    ]);
    assertEquals(plain(error.error), {
      code: "FORGE_ENDPOINT_UNAVAILABLE",
      message: "endpoint 'robot.demo' has no current instance",
      retryable: true,
      details: { endpoint_id: ENDPOINT },
    });
  }
  // Nothing left the client.
  assertEquals(client.stats.sent, 0);
  assertEquals(gateway.stats.unavailable, 2);
  await client.close();
  await gateway.close();
});

Deno.test("gateway client: a Dora caller of the gateway node gets its events (IPC bytes on both hops)", async () => {
  // Regression: the caller names no instance, so its events (which carry the instance that runs
  // the execution) were counted as mismatched and never reached the invocation.
  const gateway = new ToolGateway({ routes: { detector: ENDPOINT }, logger: () => {} });
  const edges: string[] = [];
  const flow = startGatewayLoopback({
    gateway,
    handler: createDemoHandler("detector-1", 5),
    serve: { lifecycle: { unregisterTimeoutMs: 300 }, logger: () => {} },
    tap: (edge) => edges.push(edge),
  });
  const transport = new DoraToolClientTransport(flow.planner);
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    descriptor: demoDescriptor,
  });
  await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the registration");

  const move = await client.invoke("move", { target: "home" });
  assertEquals(move.endpointInstanceId, undefined);
  const events = await collect(move);
  assertEquals(events.map((record) => record.event.type), [
    ...Array(11).fill("progress"),
    "executor_completed",
  ]);
  assertEquals(events.map((record) => record.sequence), events.map((_, index) => index));
  assertEquals((await move.result()).outputs, { pose: "home" });
  // Status and result of the execution reach the instance that runs it.
  assertEquals((await move.status()).phase, "completed");
  assertEquals(client.stats.mismatched, 0);

  await client.close();
  const stats = await flow.stop();
  assertEquals(stats.gatewayNode.gateway.dropped, 0);
  // Every message crossed both hops as IPC bytes: one request each way, answered back.
  assertEquals(
    edges.filter((edge) => edge === "planner→gateway").length,
    edges.filter((edge) => edge === "gateway→detector").length -
      2, // the Registry's answers to register and unregister
  );
  assert(transport.stats.delivered >= 15, JSON.stringify(transport.stats));
});

Deno.test("gateway client: invocation.result() resolves unknown when the provider instance is replaced", async () => {
  const { gateway, route } = gatewayWithRoute();
  const client = clientOf(gateway);
  const first = route.current = new Process(gateway, "process-1");
  await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the registration");
  const policy = await client.invoke("policy", { task: "pick" }, { invocationId: "policy-1" });
  assertEquals(policy.endpointInstanceId, "process-1");

  // process-1 dies without unregistering; what the gateway sends it is lost, so the result
  // request waits at the gateway ...
  await first.kill();
  const waiting = policy.result();
  await until(() => gateway.pendingExchanges === 1, "the forwarded result request");
  // ... until a new process start registers on the same route and replaces the instance.
  const second = route.current = new Process(gateway, "process-2");
  const unknown = {
    code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    message: "endpoint instance 'process-1' of 'robot.demo' was replaced by 'process-2'; " +
      "the outcome of the execution cannot be recovered",
    retryable: false,
    details: { endpoint_instance_id: "process-1", current_endpoint_instance_id: "process-2" },
  };
  const result = await waiting;
  assertEquals(result.status, "unknown");
  assertEquals(plain(result.error), unknown);
  assertEquals(await policy.result(), result);
  // The execution is terminal as far as anyone can know; process-2 never hears of it.
  const status = await policy.status();
  assertEquals([status.phase, plain(status.error)], ["unknown", unknown]);
  assertEquals((await policy.stop("late")).status, "terminal");

  // New work goes to process-2.
  const detected = await client.query("detect", { classes: ["cup"] });
  assertEquals(detected.status, "succeeded");
  const next = await client.invoke("policy", {});
  assertEquals(next.endpointInstanceId, "process-2");
  assertEquals((await next.stop()).status, "accepted");
  assertEquals((await next.result()).status, "stopped");

  await client.close();
  await second.stop();
  // The killed process could publish neither the Session's terminal event nor its unregister.
  assertEquals([...new Set(first.recorder.events())].sort(), [
    "error event.sink_failed",
    "error node.publish_failed",
    "error node.shutdown_hook_failed",
    "warn event.terminal_refused",
    "warn provider.aborted",
    "warn registration.unregister_failed",
  ]);
  assertEquals(second.recorder.events(), []);
  await gateway.close();
});

Deno.test("gateway client: lease expiry mid-execution is a retryable error, and status/result work again once the same instance re-registers", async () => {
  const gatewayClock = new FakeClock();
  const nodeClock = new FakeClock();
  const { gateway, route, logs } = gatewayWithRoute({ clock: gatewayClock, leaseTtlMs: 1000 });
  const client = clientOf(gateway);
  const process = route.current = new Process(gateway, "process-1", { clock: nodeClock });
  await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the registration");
  const policy = await client.invoke("policy", { task: "pick" }, { invocationId: "policy-1" });

  // A status request waits at the gateway when the lease runs out (the node's renewals are late:
  // its clock does not move).
  const status = policy.status();
  gatewayClock.advance(1000);
  assertEquals(gateway.registry.lookup(ENDPOINT), undefined);
  const expired = await assertRejects(() => status, ToolCallError);
  assertEquals(plain(expired.error), {
    code: "FORGE_ENDPOINT_UNAVAILABLE",
    message: "the lease of endpoint instance 'process-1' of 'robot.demo' expired",
    retryable: true,
    details: { endpoint_id: ENDPOINT },
  });
  // The result is asked while the instance is gone: the same retryable error, now as a result.
  const gone = await assertRejects(() => policy.result(), ToolCallError);
  assertEquals([gone.code, gone.retryable, gone.error.message], [
    "FORGE_ENDPOINT_UNAVAILABLE",
    true,
    "endpoint instance 'process-1' of 'robot.demo' is not registered",
  ]);

  // The node renews (its clock reaches the renewal): the same instance registers again, and the
  // very same handle works again — status, stop, result and the rest of its events.
  nodeClock.advance(600);
  await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the re-registration");
  assertEquals((await policy.status()).phase, "running");
  assertEquals((await policy.stop("done")).status, "accepted");
  const result = await policy.result();
  assertEquals(result.status, "stopped");
  const events = await collect(policy);
  assertEquals(events.at(-1)?.event.type, "stopped");
  assertEquals(events.map((record) => record.sequence), events.map((_, index) => index));
  assertEquals(policy.eventGaps, 0);

  await client.close();
  await process.stop();
  // A late answer of process-1 to the status that expired is dropped by the gateway, nothing else.
  assertEquals(
    logs.filter((line) => line.startsWith("warn: dropped")).length,
    gateway.stats.dropped,
  );
  assert(gateway.stats.dropped <= 1, logs.join("\n"));
  await gateway.close();
});

Deno.test("gateway client: the gateway's answers are ToolCallErrors the client never retries", async () => {
  const { gateway } = gatewayWithRoute();
  const client = clientOf(gateway, { endpointInstanceId: "ghost" });
  // Pinned to an instance that is not registered: a correlated tool.error, sent once.
  const error = await assertRejects(() => client.query("detect", {}), ToolCallError);
  // One family: a ToolCallError is a ToolClientError (code, retryable, outcome).
  assertInstanceOf(error, ToolClientError);
  assertEquals(error.outcome, "not_admitted");
  assertEquals([error.code, error.retryable, error.kind], [
    "FORGE_ENDPOINT_UNAVAILABLE",
    true,
    "error",
  ]);
  assertEquals([client.stats.sent, client.stats.resent], [1, 0]);
  await client.close();
  await gateway.close();
});

// The endpoint node lifecycle on a fake monotonic clock (no real sleeps): the ordered shutdown and
// the node's routing of registry responses and health checks.
import { assert, assertEquals, assertInstanceOf, assertStrictEquals } from "@std/assert";
import { ToolError } from "../../mod.ts";
import { invokeResponseFromPayload, type ToolEnvelope } from "../../wire.ts";
import { EndpointNodeLifecycle, EndpointRegistry } from "../../node.ts";
import { FakeClock } from "../_helpers.ts";
import {
  accepted,
  BlockingQuery,
  ENDPOINT,
  handlerWith,
  invoke,
  ROUTE,
  settle,
  statusOf,
} from "./_node_fixtures.ts";

// ---------------------------------------------------------------------------------------------
// The node: shutdown ordering

Deno.test("shutdown: stop admitting, settle in-flight work, one unavailable, unregister, close", async () => {
  const clock = new FakeClock();
  const registry = new EndpointRegistry({ routes: { [ROUTE]: ENDPOINT }, clock });
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const log: string[] = [];
  const node: EndpointNodeLifecycle = new EndpointNodeLifecycle({
    handler,
    clock,
    random: () => 0.5,
    health: { periodMs: 60_000 },
    send: (envelope) => {
      if (envelope.messageType === "endpoint.status") {
        const [state, active] = statusOf(envelope);
        log.push(`status ${state} ${active}`);
        return;
      }
      log.push(envelope.messageType);
      const response = registry.handle(envelope, ROUTE);
      // The Registry answers asynchronously, as over a real transport.
      queueMicrotask(() => {
        log.push(`response ${response.payload.operation} ${response.payload.status}`);
        node.receive(response);
      });
    },
    closeTransport: () => void log.push("close transport"),
  });
  node.start();
  await settle();
  assertStrictEquals(node.phase, "running");
  assertStrictEquals(node.registration.state, "registered");
  const inFlight = invoke(handler).then((response) => {
    log.push(`in-flight settled ${invokeResponseFromPayload(response.payload).constructor.name}`);
  });
  await settle();
  log.push("-- shutdown");
  const done = node.shutdown();
  assertStrictEquals(node.shutdown(), done);
  assertStrictEquals(node.phase, "shutting_down");
  await settle();
  // Admission stopped: a new invoke is refused while the old one still runs.
  const refused = invokeResponseFromPayload((await invoke(handler)).payload);
  assertInstanceOf(refused, ToolError);
  assertStrictEquals(refused.code, "FORGE_ENDPOINT_UNAVAILABLE");
  // Renewals continue while in-flight work settles (the lease keeps results reachable).
  clock.advance(15_000);
  await settle();
  log.push("-- release");
  query.release();
  const response = await done;
  await inFlight;
  assertEquals(log, [
    "endpoint.register",
    "status ready 0",
    "response register accepted",
    "-- shutdown",
    "endpoint.register",
    "response register accepted",
    "-- release",
    "in-flight settled ToolResult",
    "status unavailable 0",
    "endpoint.unregister",
    "response unregister accepted",
    "close transport",
  ]);
  assertStrictEquals(response?.status, "accepted");
  assertStrictEquals(response?.registryRevision, 2);
  assertStrictEquals(registry.lookup(ENDPOINT), undefined);
  assertStrictEquals(node.phase, "stopped");
  assertStrictEquals(node.registration.state, "stopped");
  assertStrictEquals(clock.pending, 0);
});

Deno.test("shutdown closes the transport even when the unregister response is lost", async () => {
  const clock = new FakeClock();
  const log: string[] = [];
  const node = new EndpointNodeLifecycle({
    handler: handlerWith({ detect: new BlockingQuery() }),
    clock,
    unregisterTimeoutMs: 300,
    send: (envelope) => void log.push(envelope.messageType),
    closeTransport: () => void log.push("close transport"),
  });
  node.start();
  const done = node.shutdown();
  await settle();
  assertEquals(log, [
    "endpoint.register",
    "endpoint.status",
    "endpoint.status",
    "endpoint.unregister",
  ]);
  clock.advance(300);
  assertStrictEquals(await done, undefined);
  assertEquals(log.at(-1), "close transport");
  assertStrictEquals(node.phase, "stopped");
});

Deno.test("the node feeds registry responses and forwards health checks", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const sent: ToolEnvelope[] = [];
  const node = new EndpointNodeLifecycle({
    handler,
    clock,
    send: (envelope) => void sent.push(envelope),
  });
  assertStrictEquals(node.check(), false); // not started
  node.start();
  assert(node.receive(accepted(sent[0], 9)));
  assertStrictEquals(node.registration.registryRevision, 9);
  assertStrictEquals(node.receive(sent[1]), false); // a status is not a registry response
  const call = invoke(handler);
  await settle();
  assert(node.check());
  assertEquals(statusOf(sent.at(-1)!), ["busy", 1]);
  query.release();
  await call;
  node.start(); // no-op once running
  const done = node.shutdown();
  await settle();
  node.receive(accepted(sent.at(-1)!, 10));
  assertStrictEquals((await done)?.registryRevision, 10);
  assertStrictEquals(handler.state.closed, true);
});

// Registry changes observable on the gateway: JSON-ready records of registrations, replacements,
// state changes, unregistrations and expiry (no record per renewal), as listeners and as a
// bounded async iterator whose slow consumer gets one counted gap.
import { assertEquals } from "@std/assert";
import { EndpointStatus, makeEndpointStatusEnvelope } from "../../wire.ts";
import { type GatewayRegistryEvent, ToolGateway } from "../../gateway.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { FakeClock } from "../_helpers.ts";
import { HostedEndpoint } from "./_hosted.ts";

const ENDPOINT = "robot.demo";

function host(gateway: ToolGateway, instance: string) {
  return new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(5).createHandler({ endpointInstanceId: instance }),
  );
}

Deno.test("registry events: registered, renewal (none), state, replaced, unregistered, expired", async () => {
  const clock = new FakeClock();
  const gateway = new ToolGateway({
    routes: { demo: ENDPOINT },
    clock,
    leaseTtlMs: 1000,
    logger: () => {},
  });
  const seen: GatewayRegistryEvent[] = [];
  const unwatch = gateway.watchRegistry((event) => seen.push(event));
  const first = host(gateway, "demo-1");
  first.register();
  clock.advance(100);
  first.register(); // a renewal: no record
  const status = (state: "ready" | "degraded", instance: string) =>
    gateway.receive(
      "demo",
      makeEndpointStatusEnvelope(
        new EndpointStatus({ endpointId: ENDPOINT, state, activeInvocations: 0 }),
        { endpointInstanceId: instance },
      ),
    );
  status("ready", "demo-1");
  status("ready", "demo-1"); // the same state: no record
  status("degraded", "demo-1");
  first.unregister();
  first.register();
  // Another process start on the route.
  await first.close();
  const second = host(gateway, "demo-2");
  second.register();
  clock.advance(1000);
  unwatch();
  assertEquals(gateway.registryWatchers, 0);
  assertEquals(JSON.parse(JSON.stringify(seen)), seen);
  assertEquals(seen, [
    {
      kind: "registered",
      revision: 1,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-1",
      route_id: "demo",
      lease_deadline_ms: 1000,
    },
    {
      kind: "state",
      revision: 1,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-1",
      state: "ready",
      active_invocations: 0,
    },
    {
      kind: "state",
      revision: 1,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-1",
      state: "degraded",
      active_invocations: 0,
    },
    {
      kind: "unregistered",
      revision: 2,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-1",
      route_id: "demo",
    },
    {
      kind: "registered",
      revision: 3,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-1",
      route_id: "demo",
      lease_deadline_ms: 1100,
    },
    {
      kind: "replaced",
      revision: 4,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-2",
      route_id: "demo",
      previous_endpoint_instance_id: "demo-1",
      lease_deadline_ms: 1100,
    },
    {
      kind: "expired",
      revision: 5,
      endpoint_id: ENDPOINT,
      endpoint_instance_id: "demo-2",
      route_id: "demo",
    },
  ]);
  await gateway.close();
  await second.close();
});

Deno.test("registry events iterator: a slow consumer loses the oldest records with one counted gap", async () => {
  const clock = new FakeClock();
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, clock, logger: () => {} });
  const events = gateway.registryEvents({ maxBuffered: 2 });
  const endpoint = host(gateway, "demo-1");
  for (let i = 0; i < 3; i++) {
    endpoint.register();
    endpoint.unregister();
  } // six records, two kept
  const read = async () => (await events.next()).value;
  assertEquals(await read(), { kind: "gap", dropped: 4 });
  assertEquals((await read()).kind, "registered");
  assertEquals(((await read()) as { revision: number }).revision, 6);
  // A waiting consumer gets the next record as it happens.
  const next = events.next();
  endpoint.register();
  assertEquals(((await next).value as { revision: number }).revision, 7);
  assertEquals(gateway.registryWatchers, 1);
  assertEquals(await events.return!(), { value: undefined, done: true });
  assertEquals(gateway.registryWatchers, 0);
  // A signal ends an iteration, waiting or not.
  const controller = new AbortController();
  const other = gateway.registryEvents({ signal: controller.signal });
  const pending = other.next();
  controller.abort();
  assertEquals(await pending, { value: undefined, done: true });
  assertEquals(gateway.registryWatchers, 0);
  await gateway.close();
  await endpoint.close();
});

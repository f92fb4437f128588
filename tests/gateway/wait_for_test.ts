// ToolGateway.waitFor: resolves with the Registry record once the endpoint registers (at once
// when it is), rejects retryable FORGE_ENDPOINT_UNAVAILABLE at its timeout (the gateway's clock)
// and with the signal's reason on abort, and leaves no timer or watcher behind.
import { assertEquals, assertRejects, assertStrictEquals } from "@std/assert";
import { ToolCallError } from "../../mod.ts";
import { ToolGateway } from "../../gateway.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { FakeClock } from "../_helpers.ts";
import { HostedEndpoint } from "./_hosted.ts";

const ENDPOINT = "robot.demo";

function setup() {
  const clock = new FakeClock();
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, clock, logger: () => {} });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(5).createHandler({ endpointInstanceId: "demo-1" }),
  );
  return { clock, gateway, hosted };
}

Deno.test("waitFor resolves with the record when the endpoint registers, and at once when it is", async () => {
  const { clock, gateway, hosted } = setup();
  const timersBefore = clock.pending;
  const waiting = gateway.waitFor(ENDPOINT, { timeoutMs: 10_000 });
  assertEquals(gateway.registryWatchers, 1);
  hosted.register();
  const record = await waiting;
  assertEquals([record.endpointId, record.endpointInstanceId], [ENDPOINT, "demo-1"]);
  assertStrictEquals(record.descriptor, gateway.registry.lookup(ENDPOINT)!.descriptor);
  assertEquals(gateway.registryWatchers, 0);
  // The registration arms the lease timer; the wait's own timer is gone.
  assertEquals(clock.pending, timersBefore + 1);
  assertStrictEquals(await gateway.waitFor(ENDPOINT), gateway.registry.lookup(ENDPOINT));
  assertEquals(gateway.registryWatchers, 0);
  await gateway.close();
  await hosted.close();
});

Deno.test("waitFor rejects retryable FORGE_ENDPOINT_UNAVAILABLE at its timeout", async () => {
  const { clock, gateway, hosted } = setup();
  const waiting = gateway.waitFor(ENDPOINT, { timeoutMs: 2_500 });
  clock.advance(2_499);
  assertEquals(gateway.registryWatchers, 1);
  clock.advance(1);
  const error = await assertRejects(() => waiting, ToolCallError);
  assertEquals(
    [error.error.code, error.error.message, error.retryable],
    [
      "FORGE_ENDPOINT_UNAVAILABLE",
      "endpoint 'robot.demo' registered no instance within 2500 ms",
      true,
    ],
  );
  assertEquals(error.error.details, { endpoint_id: ENDPOINT });
  assertEquals([gateway.registryWatchers, clock.pending], [0, 0]);
  await gateway.close();
  await hosted.close();
});

Deno.test("waitFor rejects with the signal's reason on abort and at close, leaving nothing behind", async () => {
  const { clock, gateway, hosted } = setup();
  const controller = new AbortController();
  const waiting = gateway.waitFor(ENDPOINT, { signal: controller.signal, timeoutMs: 60_000 });
  const reason = new Error("the operator gave up");
  controller.abort(reason);
  assertStrictEquals(await waiting.catch((e) => e), reason);
  assertEquals([gateway.registryWatchers, clock.pending], [0, 0]);
  // An aborted signal rejects at once.
  assertStrictEquals(
    await gateway.waitFor(ENDPOINT, { signal: controller.signal }).catch((e) => e),
    reason,
  );
  // Without a timeout the wait ends at close.
  const forever = gateway.waitFor(ENDPOINT);
  await gateway.close();
  const closed = await assertRejects(() => forever, ToolCallError);
  assertEquals([closed.error.code, closed.error.message], [
    "FORGE_ENDPOINT_UNAVAILABLE",
    "the gateway closed",
  ]);
  assertEquals([gateway.registryWatchers, clock.pending], [0, 0]);
  await hosted.close();
});

Deno.test("waitFor options name the option and the value received", async () => {
  const { gateway, hosted } = setup();
  const error = await assertRejects(() => gateway.waitFor(ENDPOINT, { timeoutMs: -1 }), RangeError);
  assertEquals(
    error.message,
    "Cannot wait for an endpoint as 'timeoutMs' must be a non-negative number: current value is -1",
  );
  await gateway.close();
  await hosted.close();
});

// gatewayClient: a ToolEndpointClient through the gateway whose descriptor is the one the
// endpoint's current instance registered, read from the Registry at each call (issue 19 item 3):
// a Query/Action mix-up and an undeclared operation are refused before sending, a re-registered
// descriptor takes effect on the next call, and an unregistered endpoint rejects at once with
// the retryable FORGE_ENDPOINT_UNAVAILABLE. Against the real handler (tests/gateway/_hosted.ts).
import { assertEquals, assertInstanceOf, assertRejects, assertThrows } from "@std/assert";
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  ToolCallError,
  ToolClientError,
} from "../../mod.ts";
import { gatewayClient, ToolGateway } from "../../gateway.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { FakeClock } from "../_helpers.ts";
import { HostedEndpoint } from "./_hosted.ts";

const ENDPOINT = "robot.demo";

function setup() {
  const gateway = new ToolGateway({
    routes: { demo: ENDPOINT },
    clock: new FakeClock(),
    logger: () => {},
  });
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(1).createHandler({ endpointInstanceId: "demo-1", logger: () => {} }),
  );
  return { gateway, hosted };
}

Deno.test("gatewayClient calls the endpoint with the Registry's descriptor, no descriptor argument", async () => {
  const { gateway, hosted } = setup();
  hosted.register();
  const client = gatewayClient(gateway, ENDPOINT, { callerId: "ui", logger: () => {} });
  assertEquals(client.endpointId, ENDPOINT);
  const result = await client.query("detect", { classes: ["cup"] });
  assertEquals(result.status, "succeeded");
  assertEquals(result.outputs, { objects: [{ class: "cup", score: 0.9, box: [0, 20, 32, 32] }] });
  const invocation = await client.invoke("move", { target: "home" });
  assertEquals((await invocation.result()).status, "succeeded");
  await invocation[Symbol.asyncDispose]();
  await client.close();
  await gateway.close();
  await hosted.close();
});

Deno.test("gatewayClient refuses a Query/Action mix-up and an unknown operation before sending", async () => {
  const { gateway, hosted } = setup();
  hosted.register();
  const client = gatewayClient(gateway, ENDPOINT, { logger: () => {} });
  const wrongQuery = await assertRejects(() => client.query("move"), ToolClientError);
  assertEquals([wrongQuery.code, wrongQuery.outcome], ["FORGE_CLIENT_WRONG_SEMANTICS", "not_sent"]);
  const wrongInvoke = await assertRejects(() => client.invoke("detect"), ToolClientError);
  assertEquals(
    [wrongInvoke.code, wrongInvoke.outcome],
    ["FORGE_CLIENT_WRONG_SEMANTICS", "not_sent"],
  );
  const unknown = await assertRejects(() => client.query("fly"), ToolClientError);
  assertEquals(
    [unknown.code, unknown.outcome, unknown.message],
    [
      "FORGE_CLIENT_UNKNOWN_OPERATION",
      "not_sent",
      "FORGE_CLIENT_UNKNOWN_OPERATION: operation 'fly' is not in the descriptor of 'robot.demo' (it declares 'detect', " +
      "'move', 'policy')",
    ],
  );
  // Nothing reached the gateway's router, let alone the provider.
  assertEquals([gateway.stats.forwarded, client.stats.sent], [0, 0]);
  await client.close();
  await gateway.close();
  await hosted.close();
});

Deno.test("gatewayClient rejects retryable FORGE_ENDPOINT_UNAVAILABLE while the endpoint is not registered", async () => {
  const { gateway, hosted } = setup();
  const client = gatewayClient(gateway, ENDPOINT, { logger: () => {} });
  for (const call of [() => client.query("detect"), () => client.invoke("move")]) {
    const error = await assertRejects(call, ToolCallError);
    assertEquals(
      [error.error.code, error.retryable, error.kind, error.outcome, error.exchange],
      ["FORGE_ENDPOINT_UNAVAILABLE", true, "error", "not_sent", "invoke"],
    );
  }
  assertEquals([gateway.stats.unavailable, client.stats.sent], [2, 0]);
  // Once it registers, the same client calls it; unregistered again, it is unavailable again.
  hosted.register();
  assertEquals((await client.query("detect")).status, "succeeded");
  hosted.unregister();
  const again = await assertRejects(() => client.query("detect"), ToolCallError);
  assertEquals(again.error.code, "FORGE_ENDPOINT_UNAVAILABLE");
  await client.close();
  await gateway.close();
  await hosted.close();
});

Deno.test("gatewayClient follows a re-registered descriptor on the next call", async () => {
  const { gateway, hosted } = setup();
  hosted.register();
  const client = gatewayClient(gateway, ENDPOINT, { logger: () => {} });
  assertEquals((await client.query("detect")).status, "succeeded");
  // A new instance replaces the old one with a descriptor where `detect` is an Action and
  // `scan` is a new Query.
  hosted.unregister();
  await hosted.close();
  const next = new HostedEndpoint(
    gateway,
    "demo",
    defineEndpoint({
      endpointId: ENDPOINT,
      operations: {
        detect: defineAction(() => ({ objects: [] })),
        scan: defineQuery(() => ({ lines: 3 })),
      },
    }).createHandler({ endpointInstanceId: "demo-2", logger: () => {} }),
  );
  next.register();
  const wrong = await assertRejects(() => client.query("detect"), ToolClientError);
  assertEquals(wrong.code, "FORGE_CLIENT_WRONG_SEMANTICS");
  assertEquals((await client.query("scan")).outputs, { lines: 3 });
  const moved = await assertRejects(() => client.invoke("move"), ToolClientError);
  assertEquals(moved.code, "FORGE_CLIENT_UNKNOWN_OPERATION");
  await client.close();
  await gateway.close();
  await next.close();
});

Deno.test("gatewayClient checks its options and binds ownership to its callerId", async () => {
  const { gateway, hosted } = setup();
  assertThrows(
    () => gatewayClient(gateway, ENDPOINT, null as never),
    TypeError,
    "Cannot create a gateway client as 'options' must be an object: current value is null",
  );
  hosted.register();
  const owner = gatewayClient(gateway, ENDPOINT, { callerId: "ui", logger: () => {} });
  const other = gatewayClient(gateway, ENDPOINT, { callerId: "script", logger: () => {} });
  const invocation = await owner.invoke("move", {}, { invocationId: "inv-1", attemptId: "a-1" });
  // Another caller's client does not see the execution.
  const error = await assertRejects(
    () => other.invoke("move", {}, { invocationId: "inv-1", attemptId: "a-1" }),
    ToolCallError,
  );
  assertInstanceOf(error, ToolCallError);
  assertEquals([error.kind, error.error.code], ["rejected", "FORGE_PROTOCOL_DEDUP_CONFLICT"]);
  assertEquals((await invocation.result()).status, "succeeded");
  await invocation[Symbol.asyncDispose]();
  await owner.close();
  await other.close();
  await gateway.close();
  await hosted.close();
});

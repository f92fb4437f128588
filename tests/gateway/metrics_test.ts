// gatewayMetrics: the Prometheus text exposition of a gateway after a known sequence of calls,
// parsed and compared exactly.
import { assertEquals } from "@std/assert";
import { ToolContext, ToolExecutionKey, ToolRequest } from "../../mod.ts";
import {
  makeInvokeRequestEnvelope,
  makeStatusRequestEnvelope,
  type ToolEnvelope,
} from "../../wire.ts";
import { gatewayMetrics, ToolGateway } from "../../gateway.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";
import { FakeClock } from "../_helpers.ts";
import { HostedEndpoint } from "./_hosted.ts";

const ENDPOINT = "robot.demo";

/** `name{labels} value` lines of the exposition, comments left out. */
function samples(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return out;
}

function context(operation: string, invocationId: string): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: `forge.tool.${operation}`,
    implementationId: "demo",
    endpointId: ENDPOINT,
    operation,
  });
}

Deno.test("gatewayMetrics exposes exact counters, rejections by code, gauges and latency", async () => {
  const clock = new FakeClock();
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, clock, logger: () => {} });
  const metrics = gatewayMetrics(gateway);
  assertEquals(metrics.contentType, "text/plain; version=0.0.4; charset=utf-8");
  const caller = gateway.connect();
  const received: ToolEnvelope[] = [];
  caller.connect((m) => received.push(m));
  const invoke = (id: string) =>
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: { classes: ["cube"] } }),
      context("detect", id),
      {
        requestId: id,
        endpointInstanceId: undefined,
      },
    );
  // No instance yet: one FORGE_ENDPOINT_UNAVAILABLE.
  await caller.send(invoke("q-0"));
  const hosted = new HostedEndpoint(
    gateway,
    "demo",
    demoEndpoint(5).createHandler({ endpointInstanceId: "demo-1" }),
  );
  hosted.register();
  // Two Queries answered by the endpoint, one status nobody invoked (not found).
  await caller.send(invoke("q-1"));
  await caller.send(invoke("q-2"));
  await caller.send(
    makeStatusRequestEnvelope(context("move", "nobody"), {
      requestId: "s-1",
      endpointInstanceId: undefined,
    }),
  );
  for (let turn = 0; turn < 100 && received.length < 4; turn++) {
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  assertEquals(received.length, 4);
  metrics.setSubscribers(3);
  const values = samples(await metrics.text());
  assertEquals(
    {
      forwarded: values.forge_gateway_forwarded_total,
      answered: values.forge_gateway_answered_total,
      events: values.forge_gateway_events_total,
      unavailable: values.forge_gateway_unavailable_total,
      unknown: values.forge_gateway_unknown_total,
      management: values.forge_gateway_management_total,
      dropped: values.forge_gateway_dropped_total,
      refused: values.forge_gateway_refused_total,
    },
    {
      forwarded: 2,
      answered: 2,
      events: 0,
      unavailable: 1,
      unknown: 0,
      management: 1,
      dropped: 0,
      refused: 1,
    },
  );
  assertEquals(values['forge_gateway_rejections_total{code="FORGE_ENDPOINT_UNAVAILABLE"}'], 1);
  assertEquals(
    values['forge_gateway_rejections_total{code="FORGE_ENDPOINT_EXECUTION_NOT_FOUND"}'],
    1,
  );
  assertEquals(values.forge_gateway_open_executions, 0);
  assertEquals(values.forge_gateway_pending_exchanges, 0);
  assertEquals(values.forge_gateway_sse_subscribers, 3);
  // The fake clock did not move: both Queries in the smallest bucket.
  const query = 'request_type="tool.invoke.request"';
  assertEquals(values[`forge_gateway_exchange_duration_seconds_count{${query}}`], 2);
  assertEquals(
    values[`forge_gateway_exchange_duration_seconds_bucket{le="0.0005",${query}}`],
    2,
  );
  assertEquals(values[`forge_gateway_exchange_duration_seconds_sum{${query}}`], 0);
  metrics.close();
  await gateway.close();
  await hosted.close();
});

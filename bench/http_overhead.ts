/**
 * What the HTTP service adds per request, in one run: `GET /tools` and a Query (`detect`) through
 * the Tool API over real HTTP on 127.0.0.1 (`fetch`, keep-alive), through the same handler without
 * a socket, and the same Query with the in-process client through `gateway.connect()`. Rounds
 * alternate the cases; it prints requests/s, p50 and p99 of each, and the ratios to the in-process
 * client. Not a `*_bench.ts` suite (it needs `--allow-net`, which `deno task bench` does not give).
 *
 * ```sh
 * deno run --allow-read --allow-env --allow-ffi --allow-net=127.0.0.1 bench/http_overhead.ts [requests]
 * ```
 *
 * @module
 */
import { ToolEndpointClient } from "../mod.ts";
import { serveToolGateway, ToolGateway, toolGatewayHttpHandler } from "../gateway.ts";
import { startGatewayLoopback } from "../examples/gateway_loopback.ts";
import { createDemoHandler, demoDescriptor } from "../examples/endpoint.ts";

const N = Number(Deno.args[0] ?? 2000);
const ROUNDS = 5;

const gateway = new ToolGateway({ routes: { detector: "robot.demo" }, logger: () => {} });
const flow = startGatewayLoopback({
  gateway,
  handler: createDemoHandler("bench-1", 5),
  serve: { lifecycle: { unregisterTimeoutMs: 300 }, logger: () => {} },
});
while (gateway.registry.lookup("robot.demo") === undefined) {
  await new Promise((resolve) => setTimeout(resolve, 5));
}
const server = serveToolGateway(gateway, { port: 0, logger: () => {} });
const handler = toolGatewayHttpHandler(gateway, { logger: () => {} });
const base = `http://127.0.0.1:${server.addr.port}`;
const client = new ToolEndpointClient({
  transport: gateway.connect(),
  endpointId: "robot.demo",
  descriptor: demoDescriptor,
  logger: () => {},
});
const body = JSON.stringify({ arguments: { classes: ["cube"] } });
const invokePath = "/tools/robot.demo/detect:invoke";

const cases: Record<string, () => Promise<unknown>> = {
  "in-process client Query": () => client.query("detect", { classes: ["cube"] }),
  "handler Query (no socket)": async () =>
    await (await handler(new Request(`http://gw${invokePath}`, { method: "POST", body }))).text(),
  "HTTP Query": async () =>
    await (await fetch(`${base}${invokePath}`, { method: "POST", body })).text(),
  "handler GET /tools (no socket)": async () =>
    await (await handler(new Request("http://gw/tools"))).text(),
  "HTTP GET /tools": async () => await (await fetch(`${base}/tools`)).text(),
};
const samples: Record<string, number[]> = Object.fromEntries(
  Object.keys(cases).map((k) => [k, []]),
);
for (const run of Object.values(cases)) for (let i = 0; i < 200; i++) await run(); // warm-up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, run] of Object.entries(cases)) {
    for (let i = 0; i < N / ROUNDS; i++) {
      const start = performance.now();
      await run();
      samples[name].push(performance.now() - start);
    }
  }
}
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const baseline = samples["in-process client Query"].toSorted((a, b) => a - b);
console.log(`${N} sequential requests per case, ${ROUNDS} alternating rounds`);
for (const [name, values] of Object.entries(samples)) {
  const sorted = values.toSorted((a, b) => a - b);
  const total = values.reduce((a, b) => a + b, 0);
  console.log(
    `${name.padEnd(32)} ${(values.length / (total / 1000)).toFixed(0).padStart(7)} req/s  ` +
      `p50 ${quantile(sorted, 0.5).toFixed(3)} ms  p99 ${quantile(sorted, 0.99).toFixed(3)} ms  ` +
      `p50 x${(quantile(sorted, 0.5) / quantile(baseline, 0.5)).toFixed(2)} of in-process`,
  );
}
await client.close();
await handler.close();
await server.close();
await flow.stop();
await gateway.close();

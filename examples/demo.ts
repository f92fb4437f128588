/**
 * The README's demo: the dataflow of `gateway_dataflow.yml` on embedded loopback dataflows. A
 * planner calls the endpoint `robot.demo` (detector Query, arm Action, policy Session) through a
 * {@linkcode ToolGateway} node with the public {@linkcode ToolEndpointClient}; it names the
 * endpoint, never an instance. The endpoint node registers with the gateway's Registry (and renews
 * a short lease while it serves), reports its health, answers, and unregisters when stopped.
 * Every message crosses both hops (planner ⇄ gateway, gateway ⇄ endpoint) as a ToolMessage in
 * Arrow IPC bytes, and is printed as it crosses. A latency run without the trace follows, and a
 * summary of its percentiles.
 *
 * Run it with `deno task demo`.
 *
 * @module
 */
import { ToolEndpointClient, type ToolInvocation } from "../mod.ts";
import {
  endpointRegistryResponseFromPayload,
  endpointStatusFromEnvelope,
  type ToolEnvelope,
} from "../wire.ts";
import { ToolGateway } from "../gateway.ts";
import { decodeToolEnvelopeIpc, DoraToolClientTransport } from "../dora.ts";
import { createDemoHandler, demoDescriptor } from "./endpoint.ts";
import { type GatewayEdge, startGatewayLoopback } from "./gateway_loopback.ts";

const INSTANCE = "demo-instance-1";
const ENDPOINT = demoDescriptor.endpointId;
const LATENCY_RUNS = { query: 20, action: 10, session: 10 } as const;

const started = performance.now();
const elapsed = () => `${(performance.now() - started).toFixed(1).padStart(7)} ms`;

/** How each edge is drawn in the trace. */
const ARROWS: Readonly<Record<GatewayEdge, string>> = {
  "planner→gateway": "==>",
  "gateway→detector": "-->",
  "detector→gateway": "<--",
  "gateway→planner": "<==",
};

/** One line of the trace for `envelope`. */
function describe(envelope: ToolEnvelope): string {
  const type = envelope.messageType;
  if (type === "endpoint.registry.response") {
    const response = endpointRegistryResponseFromPayload(envelope.payload);
    const lease = response.leaseTtlMs === undefined ? "" : `, lease ${response.leaseTtlMs} ms`;
    return `${type} ${response.operation} ${response.status} ` +
      `(revision ${response.registryRevision}${lease})`;
  }
  if (type === "endpoint.status") {
    const status = endpointStatusFromEnvelope(envelope);
    return `${type} ${status.state} (active ${status.activeInvocations})`;
  }
  if (type.startsWith("endpoint.")) {
    return `${type} ${envelope.endpointId} instance ${envelope.endpointInstanceId}`;
  }
  const payload = JSON.stringify(envelope.payload);
  const text = payload.length > 90 ? `${payload.slice(0, 87)}...` : payload;
  const sequence = envelope.sequence === undefined ? "" : ` #${envelope.sequence}`;
  const request = envelope.requestId === undefined ? "" : ` [${envelope.requestId}]`;
  const instance = envelope.endpointInstanceId === undefined
    ? ""
    : ` @${envelope.endpointInstanceId}`;
  return `${type}${sequence} ${envelope.operation}/${envelope.invocationId}${request}${instance} ${text}`;
}

// --- the dataflow ------------------------------------------------------------------------------

/** Off during the latency run: only the node's management messages are printed then. */
let tracing = true;
/** When each event left the endpoint node, by invocation id and sequence (for the latency run). */
const eventSentAt = new Map<string, number>();

const gateway = new ToolGateway({
  routes: { detector: ENDPOINT },
  // Renewed every ~200 ms (a tenth of the lease), so the trace shows renewals while a loaded
  // machine that stalls the demo for a second still keeps the registration.
  leaseTtlMs: 2000,
  logger: ({ level, message }) => {
    if (level !== "debug") console.log(`${elapsed()}  [gateway ${level}] ${message}`);
  },
});
const dataflow = startGatewayLoopback({
  gateway,
  handler: createDemoHandler(INSTANCE),
  serve: {
    lifecycle: {
      registration: { renewFraction: 0.1 },
      health: { periodMs: 200 },
      unregisterTimeoutMs: 300,
    },
    logger: ({ level, message }) => {
      if (level !== "debug") console.log(`${elapsed()}  [node ${level}] ${message}`);
    },
  },
  tap: (edge, bytes) => {
    const envelope = decodeToolEnvelopeIpc(bytes);
    if (edge === "detector→gateway" && envelope.messageType === "tool.event") {
      eventSentAt.set(`${envelope.invocationId}#${envelope.sequence}`, performance.now());
    }
    if (tracing || !envelope.messageType.startsWith("tool.")) {
      console.log(`${elapsed()}  ${ARROWS[edge]} ${describe(envelope)}  (${bytes.length} B IPC)`);
    }
  },
});
let ids = 0;
const client = new ToolEndpointClient({
  transport: new DoraToolClientTransport(dataflow.planner),
  endpointId: ENDPOINT,
  descriptor: demoDescriptor,
  callerId: "planner",
  generateId: () => `id-${++ids}`,
});

// --- latency samples ---------------------------------------------------------------------------

type Semantics = "Query" | "Action" | "Session";
type Measure = "invoke" | "end" | "event";
const samples = new Map<string, number[]>();
function sample(semantics: Semantics, measure: Measure, ms: number): void {
  const key = `${semantics} ${measure}`;
  samples.set(key, [...(samples.get(key) ?? []), ms]);
}

/**
 * Reads the events of `invocation` (recording their delivery time) and ends it with `end` once
 * `after` events arrived; returns the event types and, when it ended it, the end → terminal time.
 */
async function follow(
  semantics: Semantics,
  invocation: ToolInvocation,
  end: { readonly after: number; readonly send: () => Promise<unknown> } | undefined,
): Promise<string[]> {
  const types: string[] = [];
  let endSentAt: number | undefined;
  for await (const { sequence, event } of invocation.events) {
    const now = performance.now();
    const sent = eventSentAt.get(`${invocation.key.invocationId}#${sequence}`);
    if (sent !== undefined) sample(semantics, "event", now - sent);
    types.push(event.type);
    if (endSentAt !== undefined && (event.type === "cancelled" || event.type === "stopped")) {
      sample(semantics, "end", now - endSentAt);
    }
    if (end !== undefined && types.length === end.after) {
      endSentAt = performance.now();
      await end.send();
    }
  }
  return types;
}

async function timed<T>(semantics: Semantics, call: () => Promise<T>): Promise<T> {
  const before = performance.now();
  const value = await call();
  sample(semantics, "invoke", performance.now() - before);
  return value;
}

// --- the script --------------------------------------------------------------------------------

console.log("Legend (every message is one ToolMessage as Arrow IPC bytes):");
console.log(
  "  ==>  planner -> gateway   the client's request; it names the endpoint, not an instance",
);
console.log(
  "  -->  gateway -> endpoint  routed to the current instance under the gateway's own id,",
);
console.log("                            and the Registry's answers");
console.log("  <--  endpoint -> gateway  answers, events, register / status / unregister");
console.log("  <==  gateway -> planner   the answer with the planner's own headers, and events");
console.log("");

console.log("== Registration: the endpoint node announces itself to the gateway's Registry");
for (let turn = 0; gateway.registry.lookup(ENDPOINT) === undefined; turn++) {
  if (turn === 1000) throw new Error("the endpoint never registered");
  await new Promise((resolve) => setTimeout(resolve, 5));
}

console.log("== Query: detector");
await client.query("detect", { classes: ["cube", "cylinder"] }, { invocationId: "detect-1" });

console.log("== Action: arm moves to 'home', completes with progress events");
const move = await client.invoke("move", { target: "home" }, { invocationId: "move-1" });
await move.status();
await follow("Action", move, undefined);
await move.result();

console.log("== Action: a second move, cancelled by the operator after two progress events");
const shelf = await client.invoke("move", { target: "shelf" }, { invocationId: "move-2" });
await follow("Action", shelf, { after: 2, send: () => shelf.cancel("operator request") });
await shelf.result();

console.log("== Session: policy runs with heartbeats until stopped after three");
const policy = await client.invoke("policy", { task: "pick cube" }, { invocationId: "policy-1" });
await follow("Session", policy, { after: 3, send: () => policy.stop("done") });
await policy.result();

console.log(
  `== Latency run (tool messages not traced): ${LATENCY_RUNS.query} Queries, ${LATENCY_RUNS.action} Actions ` +
    `cancelled after one event, ${LATENCY_RUNS.session} Sessions stopped after one event`,
);
tracing = false;
samples.clear();
for (let i = 1; i <= LATENCY_RUNS.query; i++) {
  await timed("Query", () => client.query("detect", { classes: ["cube"] }));
}
for (let i = 1; i <= LATENCY_RUNS.action; i++) {
  const run = await timed("Action", () => client.invoke("move", { target: `bin-${i}` }));
  await follow("Action", run, { after: 1, send: () => run.cancel() });
  await run.result();
}
for (let i = 1; i <= LATENCY_RUNS.session; i++) {
  const run = await timed("Session", () => client.invoke("policy", { task: `sort-${i}` }));
  await follow("Session", run, { after: 1, send: () => run.stop() });
  await run.result();
}
tracing = true;

console.log("== Stop: the endpoint node shuts down gracefully and unregisters, then the gateway");
await client.close();
const stats = await dataflow.stop();
console.log(
  `${elapsed()}  endpoint node stopped (${stats.detector.stopReason}): ` +
    `${stats.detector.requests} requests, ${stats.detector.responses} messages published, ` +
    `${stats.detector.errors} errors`,
);
const routed = stats.gatewayNode.gateway;
console.log(
  `${elapsed()}  gateway node stopped (${stats.gatewayNode.stopReason}): ${routed.forwarded} ` +
    `requests forwarded, ${routed.answered} answers and ${routed.events} events routed back, ` +
    `${routed.management} Registry decisions, ${routed.dropped} dropped`,
);

// --- the latency summary -----------------------------------------------------------------------

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}

function cell(semantics: Semantics, measure: Measure): string {
  const values = [...(samples.get(`${semantics} ${measure}`) ?? [])].sort((a, b) => a - b);
  if (values.length === 0) return "-";
  const p50 = percentile(values, 0.5).toFixed(2);
  const p99 = percentile(values, 0.99).toFixed(2);
  return `p50 ${p50} ms, p99 ${p99} ms (n=${values.length})`;
}

const rows: string[][] = [
  ["semantics", "invoke -> answered", "cancel/stop -> terminal event", "event delivery"],
  ...(["Query", "Action", "Session"] as const).map((semantics) => [
    semantics,
    cell(semantics, "invoke"),
    cell(semantics, "end"),
    cell(semantics, "event"),
  ]),
];
const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
console.log(
  "\nLatency of the run through the gateway, both hops as IPC bytes (invoke -> answered: the " +
    "result of a Query, the acceptance of an Action or Session; event delivery: from the " +
    "endpoint node's output to the planner's read):\n",
);
for (const [index, row] of rows.entries()) {
  console.log(`| ${row.map((text, column) => text.padEnd(widths[column])).join(" | ")} |`);
  if (index === 0) console.log(`|${widths.map((width) => "-".repeat(width + 2)).join("|")}|`);
}

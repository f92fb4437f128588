// Requests after Stop: serveToolEndpoint is stopped and, at once, more requests arrive, on the
// in-process loopback dataflow and on the FFI transport over the C double of the dora node API.
// The node may be idle or busy (slow Actions, Queries) when Stop comes; the shutdown hook
// (handler.close) may settle before, while or after the late requests are read.
//
// Invariant: every request the node reads is answered exactly once (handled, or refused with
// FORGE_ENDPOINT_UNAVAILABLE by the closing handler), never only logged; nothing is answered
// that was not read; serving ends by itself for the documented reason, and nothing is abandoned.
import fc from "fast-check";
import {
  decodeToolMessageIpc,
  encodeToolMessageIpc,
  LoopbackDataflow,
  openDoraNode,
  serveToolEndpoint,
  type ToolEndpointNodeStats,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../../dora.ts";
import type { ToolEnvelope } from "../../wire.ts";
import { type AnyTarget, describeError, type FuzzTarget, invariant } from "./_common.ts";
import { hex, unhex } from "../_helpers.ts";
import { ENDPOINT, fuzzEndpoint, INSTANCE, type OperationName, requestOf } from "./_endpoint.ts";
import { buildDouble } from "./ffi.ts";

/** One request of a scenario: what it asks and how long its provider takes. */
export interface LateRequest {
  readonly operation: OperationName;
  readonly delayMs: number;
}

/** A scenario: requests before Stop (in flight at Stop), then requests right after it. */
export interface AfterStopScenario {
  readonly before: readonly LateRequest[];
  readonly after: readonly LateRequest[];
  /** serveToolEndpoint's request codec. */
  readonly codec: "fast" | "generic";
}

const lateRequestArb: fc.Arbitrary<LateRequest> = fc.record({
  operation: fc.constantFrom("detect", "move", "serve" as const),
  delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 30 })),
});

/** Up to 3 requests in flight at Stop, and 1 to 6 arriving right after it. */
export function afterStopArb(): fc.Arbitrary<AfterStopScenario> {
  return fc.record({
    before: fc.array(lateRequestArb, { maxLength: 3 }),
    after: fc.array(lateRequestArb, { minLength: 1, maxLength: 6 }),
    codec: fc.constantFrom("fast", "generic" as const),
  });
}

function requestBytes(request: LateRequest, n: number): Uint8Array {
  const envelope = requestOf({
    kind: "invoke",
    operation: request.operation,
    endpointId: ENDPOINT,
    instance: INSTANCE,
    command: "cancel",
    invocationId: `inv-${n}`,
    requestId: `req-${n}`,
    arguments: { delayMs: request.delayMs },
  });
  return encodeToolMessageIpc(toolEnvelopeToMessage(envelope));
}

/** The request ids answered, in order, and every other output's type (events go after Stop). */
function answersOf(outputs: readonly Uint8Array[]): string[] {
  const answered: string[] = [];
  for (const bytes of outputs) {
    let envelope: ToolEnvelope;
    try {
      envelope = toolMessageToEnvelope(decodeToolMessageIpc(bytes));
    } catch (error) {
      throw new Error(`an output does not decode: ${describeError(error)}`);
    }
    if (envelope.messageType !== "tool.event") answered.push(envelope.requestId!);
  }
  return answered;
}

/** Checks the invariant for the requests read (`read`, by id) and the answers sent. */
function checkAnswered(
  read: readonly string[],
  answered: readonly string[],
  stats: ToolEndpointNodeStats,
  counters: Record<string, number>,
  lateIds: ReadonlySet<string>,
): void {
  const count = (name: string, n = 1) => (counters[name] = (counters[name] ?? 0) + n);
  invariant(stats.stopReason === "stop", () => `stopped for ${stats.stopReason}`);
  invariant(stats.abandoned === 0, () => `${stats.abandoned} requests abandoned`);
  invariant(stats.sendFailures === 0, () => `${stats.sendFailures} failed sends`);
  invariant(
    stats.requests === read.length,
    () => `${stats.requests} handler calls for ${read.length} requests read`,
  );
  const times = new Map<string, number>();
  for (const id of answered) times.set(id, (times.get(id) ?? 0) + 1);
  for (const id of read) {
    invariant(times.get(id) === 1, () => `request ${id} read, answered ${times.get(id) ?? 0}×`);
  }
  invariant(
    answered.length === read.length,
    () => `${answered.length} answers for ${read.length} requests read`,
  );
  count("requests read after Stop", read.filter((id) => lateIds.has(id)).length);
  count("late requests not read", lateIds.size - read.filter((id) => lateIds.has(id)).length);
  count("scenarios passed");
}

/** The loopback form: Stop and the late requests are delivered without waiting for the node. */
export async function runLoopbackAfterStop(
  scenario: AfterStopScenario,
  counters: Record<string, number> = {},
): Promise<void> {
  const endpoint = fuzzEndpoint();
  const flow = new LoopbackDataflow();
  const consoleError = console.error;
  console.error = () => {};
  try {
    const serving = serveToolEndpoint(endpoint.handler, {
      transport: flow.transport,
      codec: scenario.codec,
      graceMs: 3000,
      logger: () => {},
    });
    let n = 0;
    const early = scenario.before.map((request) => flow.request(requestBytes(request, ++n)));
    await Promise.all(early);
    const lateIds = new Set<string>();
    const deliveries = [flow.stop()];
    for (const request of scenario.after) {
      deliveries.push(flow.request(requestBytes(request, ++n)));
      lateIds.add(`req-${n}`);
    }
    const stats = await serving;
    await Promise.all([...endpoint.action.pending, ...endpoint.session.pending]);
    const taken = await Promise.allSettled(deliveries.slice(1));
    const read = [
      ...scenario.before.map((_, i) => `req-${i + 1}`),
      ...taken.flatMap((result, i) =>
        result.status === "fulfilled" ? [`req-${scenario.before.length + i + 1}`] : []
      ),
    ];
    checkAnswered(
      read,
      answersOf(flow.sent.map((output) => output.data)),
      stats,
      counters,
      lateIds,
    );
  } finally {
    console.error = consoleError;
  }
}

let sessions = 0;

/** The FFI form: the double's script is the requests before, `stop`, the requests after. */
export async function runFfiAfterStop(
  scenario: AfterStopScenario,
  counters: Record<string, number> = {},
): Promise<void> {
  const double = await buildDouble();
  if (double === null) {
    counters["skipped: no C compiler"] = (counters["skipped: no C compiler"] ?? 0) + 1;
    return;
  }
  sessions++;
  const lines: string[] = [];
  const inputs: string[] = []; // the event of each script line: a request id or "stop"
  let n = 0;
  const lateIds = new Set<string>();
  for (const request of scenario.before) {
    lines.push(`input tool_request ${hex(requestBytes(request, ++n))}`);
    inputs.push(`req-${n}`);
  }
  lines.push("stop");
  inputs.push("stop");
  for (const request of scenario.after) {
    lines.push(`input tool_request ${hex(requestBytes(request, ++n))}`);
    inputs.push(`req-${n}`);
    lateIds.add(`req-${n}`);
  }
  const script = `${double.work}/after_stop_${sessions}.txt`;
  const recordPath = `${double.work}/after_stop_record_${sessions}.txt`;
  await Deno.writeTextFile(script, lines.join("\n") + "\n");
  const env = ["DORA_DOUBLE_SCRIPT", "DORA_DOUBLE_RECORD", "DORA_DOUBLE_NEXT_DELAY_US"] as const;
  const saved = env.map((name) => Deno.env.get(name));
  Deno.env.set("DORA_DOUBLE_SCRIPT", script);
  Deno.env.set("DORA_DOUBLE_RECORD", recordPath);
  Deno.env.set("DORA_DOUBLE_NEXT_DELAY_US", "300");
  let transport;
  try {
    transport = await openDoraNode({ libraryPath: double.lib });
  } finally {
    env.forEach((name, i) => {
      if (saved[i] === undefined) Deno.env.delete(name);
      else Deno.env.set(name, saved[i]!);
    });
  }
  const endpoint = fuzzEndpoint();
  const consoleError = console.error;
  console.error = () => {};
  let stats: ToolEndpointNodeStats;
  try {
    stats = await serveToolEndpoint(endpoint.handler, {
      transport,
      codec: scenario.codec,
      graceMs: 3000,
      logger: () => {},
    });
  } finally {
    console.error = consoleError;
  }
  await Promise.all([...endpoint.action.pending, ...endpoint.session.pending]);
  const recordText = await Deno.readTextFile(recordPath);
  await Deno.remove(script);
  await Deno.remove(recordPath);
  const outputs: Uint8Array[] = [];
  let events = 0;
  for (const line of recordText.split("\n")) {
    const [kind, a, b] = line.split(" ");
    if (kind === "output") {
      invariant(a === "tool_response", () => `output on ${a}`);
      outputs.push(unhex(b));
    } else if (kind === "events") events = Number(a);
    else if (
      ["double_frees", "invalid_frees", "use_after_free", "unfreed", "overlaps"].includes(kind)
    ) {
      invariant(Number(a) === 0, () => `${kind}: ${a}`);
    }
  }
  // The double returns its script's events in order: the node read the first `events` of them.
  const read = inputs.slice(0, events).filter((event) => event !== "stop");
  checkAnswered(read, answersOf(outputs), stats, counters, lateIds);
}

/** Requests after Stop on the loopback dataflow. */
export const loopbackAfterStopTarget: FuzzTarget<AfterStopScenario> = {
  name: "loopback_after_stop",
  arbitrary: afterStopArb,
  check: runLoopbackAfterStop,
  async: true,
  batchSize: 50,
  timeBoundMs: 5000,
};

/** Requests after Stop on the FFI transport over the C double. */
export const ffiAfterStopTarget: FuzzTarget<AfterStopScenario> = {
  name: "ffi_after_stop",
  arbitrary: afterStopArb,
  check: runFfiAfterStop,
  async: true,
  batchSize: 20,
  timeBoundMs: 5000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [loopbackAfterStopTarget, ffiAfterStopTarget];

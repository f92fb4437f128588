// FFI faults: serveToolEndpoint on the real FFI transport (src/dora/ffi.ts) over the C double of
// the dora node API (tests/fixtures/dora_double.c, built with `cc`), driven by random scripts:
// valid and untrusted requests, corrupted IPC bytes, empty and giant inputs, inputs on other ids,
// events of unknown and raw types, input-closed and error events, failing dora_send_output calls,
// pauses, and a Stop (or the end of the stream) arriving anywhere, also mid-request.
//
// Invariants: serving ends by itself within a bound, for the documented reason (Stop, or the end
// of the stream); every native event is freed exactly once and no send or log overlaps a pending
// dora_next_event; nothing is abandoned; only trusted requests are answered, each at most once,
// and every one that is not answered is accounted for by a failed send; every Action/Session
// event goes out after its response, in sequence order; and every accepted Action/Session (they
// run until the shutdown's grace is over) ends with exactly one terminal event before the library
// closes, unless a failed send ate it.
import fc from "fast-check";
import {
  decodeToolMessageIpc,
  encodeToolMessageIpc,
  openDoraNode,
  serveToolEndpoint,
  toolEnvelopeToMessage,
  toolMessageCarrierSize,
  toolMessageToEnvelope,
} from "../../dora.ts";
import type { ToolEnvelope } from "../../wire.ts";
import {
  type AnyTarget,
  type Budget,
  describeError,
  type FuzzTarget,
  invariant,
  runTarget,
  type TargetReport,
} from "./_common.ts";
import { hex, unhex } from "../_helpers.ts";
import { ENDPOINT, fuzzEndpoint, INSTANCE, requestOf, type RequestSpec } from "./_endpoint.ts";
import { applyMutations, jsonObjectArb, mutationArb } from "../_gen.ts";

const FIXTURE = new URL("../fixtures/dora_double.c", import.meta.url);
const MAX_MESSAGE_BYTES = 4096;
const MAX_CARRIER_BYTES = 8192;

// ---------------------------------------------------------------------------------------------
// The C double

let built: Promise<{ lib: string; work: string } | null> | undefined;

/** Compiles the double once per process; `null` when there is no C compiler. */
export function buildDouble(): Promise<{ lib: string; work: string } | null> {
  return built ??= (async () => {
    try {
      const { success } = await new Deno.Command("cc", { args: ["--version"], stdout: "null" })
        .output();
      if (!success) return null;
    } catch {
      return null;
    }
    const work = await Deno.makeTempDir({ prefix: "fuzz_dora_double_" });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(work, { recursive: true });
      } catch {
        // best effort
      }
    });
    const lib = `${work}/libdora_double.so`;
    const { success, stderr } = await new Deno.Command("cc", {
      args: ["-shared", "-fPIC", "-o", lib, FIXTURE.pathname, "-lpthread"],
      stderr: "piped",
    }).output();
    if (!success) {
      throw new Error(`compiling the dora double failed:\n${new TextDecoder().decode(stderr)}`);
    }
    // Inputs larger than the carrier limit: one just over it, one of 3 MiB.
    await Deno.writeFile(`${work}/over.bin`, new Uint8Array(MAX_CARRIER_BYTES + 1).fill(0x41));
    const huge = new Uint8Array(3 * 1024 * 1024);
    for (let i = 0; i < huge.length; i++) huge[i] = (i * 131 + (i >>> 8)) & 0xff;
    await Deno.writeFile(`${work}/huge.bin`, huge);
    return { lib, work };
  })();
}

interface DoubleRecord {
  readonly counters: Map<string, number>;
  readonly outputs: { id: string; data: Uint8Array }[];
}

function parseRecord(text: string): DoubleRecord {
  const counters = new Map<string, number>();
  const outputs: { id: string; data: Uint8Array }[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const [kind, a, ...rest] = line.split(" ");
    if (kind === "output") {
      outputs.push({ id: a, data: rest[0] === "-" ? new Uint8Array(0) : unhex(rest[0]) });
    } else if (kind !== "log") counters.set(kind, Number(a));
  }
  return { counters, outputs };
}

// ---------------------------------------------------------------------------------------------
// Scripts

/** One directive of a fuzzed script. */
export type FfiStep =
  | { readonly kind: "request"; readonly request: RequestSpec }
  | { readonly kind: "garbage"; readonly request: RequestSpec; readonly mutations: unknown[] }
  | { readonly kind: "empty" }
  | { readonly kind: "giant"; readonly which: "over" | "huge" }
  | { readonly kind: "other-input"; readonly bytes: Uint8Array }
  | { readonly kind: "event"; readonly type: "stop" | "input_closed" | "error" | "unknown" | "end" }
  | { readonly kind: "raw-event"; readonly type: number }
  | { readonly kind: "fail-send"; readonly nth: number }
  | { readonly kind: "sleep"; readonly ms: number };

/** A script: its directives (a Stop or the end may come anywhere; the script ends the stream). */
export interface FfiSchedule {
  /** serveToolEndpoint's request codec. */
  readonly codec: "fast" | "generic";
  readonly steps: readonly FfiStep[];
}

const requestArb: fc.Arbitrary<RequestSpec> = fc.record({
  kind: fc.constantFrom("invoke", "invoke", "invoke", "status", "result", "control" as const),
  operation: fc.constantFrom("detect", "detect", "move", "serve", "nope"),
  endpointId: fc.oneof({ weight: 6, arbitrary: fc.constant(ENDPOINT) }, fc.constant("forge.other")),
  instance: fc.oneof(
    { weight: 6, arbitrary: fc.constant(INSTANCE as string | null) },
    fc.constantFrom("instance-2", null),
  ),
  invocationId: fc.constantFrom("inv-1", "inv-2", "inv-3", "inv-4"),
  requestId: fc.constant("placeholder"),
  arguments: fc
    .record({
      data: jsonObjectArb,
      early: fc.integer({ min: 0, max: 3 }),
      late: fc.integer({ min: 0, max: 2 }),
      delayMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
    })
    .map((args) => ({ ...args })),
  command: fc.constantFrom("cancel", "stop" as const),
});

const ffiStepArb: fc.Arbitrary<FfiStep> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({ kind: fc.constant("request" as const), request: requestArb }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("garbage" as const),
      request: requestArb,
      mutations: fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "empty" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("giant" as const),
      which: fc.constantFrom("over", "over", "huge" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("other-input" as const),
      bytes: fc.uint8Array({ maxLength: 16 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("event" as const),
      type: fc.constantFrom("stop", "input_closed", "error", "unknown", "end" as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("raw-event" as const),
      type: fc.constantFrom(-1, 5, 42, 2147483647),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("fail-send" as const),
      nth: fc.integer({ min: 1, max: 8 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("sleep" as const),
      ms: fc.integer({ min: 1, max: 20 }),
    }),
  },
);

/** Random scripts of 1 to 16 directives. */
export function ffiScheduleArb(): fc.Arbitrary<FfiSchedule> {
  return fc.record({
    codec: fc.constantFrom("fast", "generic" as const),
    steps: fc.array(ffiStepArb, { minLength: 1, maxLength: 16 }),
  });
}

// ---------------------------------------------------------------------------------------------
// Running one script

let sessions = 0;

/**
 * The request id the node may answer for these request bytes: the bytes decode under the
 * node's limits to an execution request on the trusted route; otherwise `undefined`.
 */
function trustedRequestId(bytes: Uint8Array): string | undefined {
  try {
    const batch = decodeToolMessageIpc(bytes, { maxBytes: MAX_CARRIER_BYTES });
    if (toolMessageCarrierSize(batch) > MAX_CARRIER_BYTES) return undefined;
    const request = toolMessageToEnvelope(batch, {
      maxMessageBytes: Number.MAX_SAFE_INTEGER,
      maxPayloadJsonBytes: MAX_MESSAGE_BYTES,
    });
    const executionRequest = request.messageType === "tool.invoke.request" ||
      request.messageType === "tool.status.request" ||
      request.messageType === "tool.result.request" ||
      request.messageType === "tool.control.request";
    const trusted = executionRequest && request.endpointId === ENDPOINT &&
      request.endpointInstanceId === INSTANCE &&
      ["detect", "move", "serve"].includes(request.operation!);
    return trusted ? request.requestId : undefined;
  } catch {
    return undefined;
  }
}

/** Runs one script; throws on the first violated invariant. */
export async function runFfiSchedule(
  schedule: FfiSchedule,
  counters: Record<string, number> = {},
): Promise<void> {
  const count = (name: string, n = 1) => (counters[name] = (counters[name] ?? 0) + n);
  const double = await buildDouble();
  if (double === null) {
    count("skipped: no C compiler");
    return;
  }
  sessions++;
  const lines: string[] = [];
  const allowed = new Map<string, number>(); // request id -> answers it may get
  const expected = new Set<string>(); // intact trusted requests: each must be answered
  let requestInputs = 0;
  let stopped: "stop" | "end-of-stream" | undefined;
  let n = 0;
  for (const step of schedule.steps) {
    if (stopped !== undefined) break;
    switch (step.kind) {
      case "request":
      case "garbage": {
        const requestId = `req-${++n}`;
        const envelope = requestOf({ ...step.request, requestId });
        let bytes = encodeToolMessageIpc(toolEnvelopeToMessage(envelope));
        if (step.kind === "garbage") {
          bytes = applyMutations(bytes, new Uint8Array(0), step.mutations as never[]);
          count("corrupted requests");
        }
        lines.push(`input tool_request ${bytes.length === 0 ? "-" : hex(bytes)}`);
        requestInputs++;
        // What the node reads from these bytes decides whether it may answer (a corrupted
        // stream may still decode, even to another request id).
        const id = trustedRequestId(bytes);
        if (id !== undefined) {
          allowed.set(id, (allowed.get(id) ?? 0) + 1);
          if (step.kind === "request") expected.add(id);
        }
        break;
      }
      case "empty":
        lines.push("input tool_request -");
        requestInputs++;
        break;
      case "giant":
        lines.push(`input tool_request @${double.work}/${step.which}.bin`);
        requestInputs++;
        break;
      case "other-input":
        lines.push(`input camera/image ${step.bytes.length === 0 ? "-" : hex(step.bytes)}`);
        break;
      case "event":
        if (step.type === "stop") {
          lines.push("stop");
          stopped = "stop";
        } else if (step.type === "end") {
          lines.push("end");
          stopped = "end-of-stream";
        } else lines.push(step.type);
        break;
      case "raw-event":
        lines.push(`raw_event ${step.type}`);
        break;
      case "fail-send":
        lines.push(`fail_send ${step.nth}`);
        break;
      case "sleep":
        lines.push(`sleep ${step.ms}`);
        break;
    }
  }
  const script = `${double.work}/script_${sessions}.txt`;
  const recordPath = `${double.work}/record_${sessions}.txt`;
  await Deno.writeTextFile(script, lines.join("\n") + "\n");
  // The double reads its environment in init_dora_context_from_env; restore it afterwards so
  // other users of the double in this process see their own settings.
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
  const logs: string[] = [];
  const started = performance.now();
  // The binding serve builds reports endpoint failures with console.error: keep them quiet.
  const consoleError = console.error;
  console.error = () => {};
  const serving = serveToolEndpoint(endpoint.handler, {
    transport,
    maxMessageBytes: MAX_MESSAGE_BYTES,
    maxCarrierBytes: MAX_CARRIER_BYTES,
    // Long enough for any request's work (delays are at most 40 ms and end at the abort); the
    // Actions and Sessions of this endpoint never end by themselves, so each one still running
    // at shutdown converges to unknown when the grace runs out.
    graceMs: 300,
    codec: schedule.codec,
    logger: ({ level, message }) => void logs.push(`${level}: ${message}`),
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stats = await Promise.race([
    serving,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("serving did not end within 10 s")), 10_000);
    }),
  ]).finally(() => {
    clearTimeout(timer);
    console.error = consoleError;
  });
  const elapsed = performance.now() - started;
  await Promise.all([...endpoint.action.pending, ...endpoint.session.pending]);
  const record = parseRecord(await Deno.readTextFile(recordPath));
  await Deno.remove(script);
  await Deno.remove(recordPath);

  // Serving ended for the documented reason.
  invariant(
    stats.stopReason === (stopped ?? "end-of-stream"),
    () => `stopped for ${stats.stopReason}, expected ${stopped ?? "end-of-stream"}`,
  );
  invariant(
    stats.requests === requestInputs,
    () => `${stats.requests} of ${requestInputs} requests`,
  );
  invariant(stats.abandoned === 0, () => `${stats.abandoned} requests abandoned`);
  // Native memory discipline.
  const c = (name: string) => record.counters.get(name) ?? -1;
  invariant(c("frees") === c("events"), () => `${c("frees")} frees of ${c("events")} events`);
  invariant(c("free_calls") === c("events"), "free_dora_event not called once per event");
  for (const name of ["double_frees", "invalid_frees", "use_after_free", "unfreed", "overlaps"]) {
    invariant(c(name) === 0, () => `${name}: ${c(name)}`);
  }
  invariant(c("concurrent_next") === 0, "two dora_next_event calls at once");

  // Outputs: only trusted requests answered, at most once; events after their response.
  const answers = new Map<string, number>();
  const responded = new Set<string>(); // invocation ids whose invoke response went out
  const acceptedInvocations = new Set<string>();
  const terminalEvents = new Map<string, number>(); // invocation id -> terminal events sent
  const nextSequence = new Map<string, number>();
  for (const output of record.outputs) {
    invariant(output.id === "tool_response", () => `output on ${output.id}`);
    let envelope: ToolEnvelope;
    try {
      envelope = toolMessageToEnvelope(decodeToolMessageIpc(output.data));
    } catch (error) {
      throw new Error(`an output does not decode: ${describeError(error)}`);
    }
    if (envelope.messageType === "tool.event") {
      const inv = envelope.invocationId!;
      invariant(responded.has(inv), () => `event of ${inv} before its invoke response`);
      const expected = nextSequence.get(inv) ?? 0;
      invariant(envelope.sequence! >= expected, () => `event of ${inv} out of order`);
      if (envelope.sequence! > expected) {
        invariant(c("send_failures") > 0, () => `event gap for ${inv} without a failed send`);
      }
      nextSequence.set(inv, envelope.sequence! + 1);
      const type = (envelope.payload as { type: string }).type;
      if (type !== "progress" && type !== "heartbeat") {
        terminalEvents.set(inv, (terminalEvents.get(inv) ?? 0) + 1);
      }
      count("events sent");
      continue;
    }
    const id = envelope.requestId!;
    answers.set(id, (answers.get(id) ?? 0) + 1);
    invariant(
      answers.get(id)! <= (allowed.get(id) ?? 0),
      () => `request ${id} answered ${answers.get(id)} times (untrusted, invalid or twice)`,
    );
    if (envelope.messageType === "tool.invoke.response") {
      responded.add(envelope.invocationId!);
      if (envelope.payload.outcome === "accepted") acceptedInvocations.add(envelope.invocationId!);
    }
    count(`answered ${envelope.messageType}`);
  }
  // Shutdown with running executions: each accepted one ended with exactly one terminal event
  // before the library closed (a failed send may have eaten it; never two).
  for (const inv of acceptedInvocations) {
    const n = terminalEvents.get(inv) ?? 0;
    invariant(n <= 1, () => `${n} terminal events for ${inv}`);
    invariant(
      n === 1 || c("send_failures") > 0,
      () => `accepted execution ${inv} ended without a terminal event`,
    );
  }
  count("accepted executions ended", acceptedInvocations.size);
  const unanswered = [...expected].filter((id) => !answers.has(id)).length;
  invariant(
    unanswered <= c("send_failures"),
    () => `${unanswered} trusted requests unanswered with ${c("send_failures")} failed sends`,
  );
  count(`scripts passed (${schedule.codec} codec)`);
  count("script directives", lines.length);
  count("send failures injected", Math.max(0, c("send_failures")));
  count("native events", c("events"));
  if (stopped === "stop") count("stopped by Stop");
  if (elapsed > 3000) count("slow scripts (> 3 s)");
}

/** The FFI faults target: one script per input. */
export const ffiTarget: FuzzTarget<FfiSchedule> = {
  name: "ffi_faults",
  arbitrary: ffiScheduleArb,
  check: runFfiSchedule,
  async: true,
  batchSize: 20,
  timeBoundMs: 5000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [ffiTarget];

/** Runs every target of this module under `budget`. */
export async function run(budget: Budget): Promise<TargetReport[]> {
  return [await runTarget(ffiTarget, budget)];
}

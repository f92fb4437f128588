// Fuzz target of DoraToolEndpointBinding.dispatchInput: random and mutated carriers of execution
// requests (right and wrong routes, hostile arguments, oversize requests, broken columns and
// payloads, other message types) against a fresh "forge.fuzz" handler.
//
// Invariants: a carrier that does not convert, or converts to another route, is raised (a
// ToolProtocolError; a RangeError only for a message that is not an execution request, the
// handler's documented route check) and nothing is published or returned. A request on the
// trusted route is answered exactly once, correlated, within the message limit; an Action or
// Session invoke's events follow its response, numbered from 0 without gaps; a Query echoes its
// arguments key for key ("__proto__" included) and nothing pollutes Object.prototype.
import fc from "fast-check";
import type { RecordBatch } from "apache-arrow";
import { ToolResult } from "../../mod.ts";
import {
  encodedEnvelopeSize,
  invokeResponseFromPayload,
  type ToolEnvelope,
  ToolProtocolError,
  validateResponseCorrelation,
} from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  decodeToolMessageIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  toolEnvelopeToMessage,
  toolMessageCarrierSize,
  toolMessageToEnvelope,
} from "../../dora.ts";
import {
  type AnyTarget,
  type Budget,
  describeError,
  type FuzzTarget,
  invariant,
  runTarget,
  type TargetReport,
  tick,
} from "./_common.ts";
import {
  ENDPOINT,
  fuzzEndpoint,
  INSTANCE,
  OPERATIONS,
  requestOf,
  type RequestSpec,
} from "./_endpoint.ts";
import {
  applyMutations,
  envelopeArb,
  jsonObjectArb,
  type Mutation,
  mutationArb,
  ownObject,
} from "../_gen.ts";
import {
  carrierFromSpec,
  type CarrierSpec,
  type CellEdit,
  cellEditArb,
  editSpec,
  sequenceArb,
  specBytes,
  specOf,
} from "./carrier.ts";
import { assertNoPollution, canon } from "./wire.ts";

const EXECUTION_REQUESTS = new Set([
  "tool.invoke.request",
  "tool.status.request",
  "tool.result.request",
  "tool.control.request",
]);

/** One input of dispatch_input. */
export interface DispatchInput {
  /** The request the carrier started from (a RequestSpec) or another message's carrier. */
  readonly carrier: CarrierSpec;
  /** The binding's maxMessageBytes. */
  readonly maxMessageBytes: number;
}

const steeringArb: fc.Arbitrary<Record<string, unknown>> = fc
  .record({
    base: jsonObjectArb,
    early: fc.option(fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom(4, 5)), {
      nil: undefined,
    }),
    late: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    fault: fc.constantFrom(undefined, undefined, undefined, "throw", "reject"),
    pad: fc.oneof(
      { weight: 4, arbitrary: fc.constant(0) },
      fc.integer({ min: 0, max: 1100 }),
      fc.integer({ min: 3000, max: 4200 }),
    ),
  })
  .map(({ base, early, late, fault, pad }) => {
    const entries: [string, unknown][] = Object.entries(base);
    if (early !== undefined) entries.push(["early", early]);
    if (late !== undefined) entries.push(["late", late]);
    if (fault !== undefined) entries.push([fault, true]);
    if (pad > 0) entries.push(["pad", "x".repeat(pad)]);
    // Later duplicates win, as JSON would; ownObject keeps "__proto__" a key.
    return ownObject([...new Map(entries)]);
  });

const requestSpecArb: fc.Arbitrary<RequestSpec> = fc.record({
  kind: fc.constantFrom("invoke", "invoke", "status", "result", "control" as const),
  operation: fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...Object.keys(OPERATIONS)) },
    { weight: 1, arbitrary: fc.constantFrom("nope", "Detect", "detect ") },
  ),
  endpointId: fc.oneof(
    { weight: 8, arbitrary: fc.constant(ENDPOINT) },
    { weight: 1, arbitrary: fc.constantFrom("forge.other", "forge.fuzz ", "FORGE.FUZZ") },
  ),
  instance: fc.oneof(
    { weight: 8, arbitrary: fc.constant(INSTANCE) },
    { weight: 1, arbitrary: fc.constantFrom(null, "instance-2", "instance-1\u0000") },
  ),
  invocationId: fc.constantFrom("inv-1", "inv-2", "inv-3"),
  requestId: fc.constantFrom("r-1", "r-2"),
  arguments: steeringArb,
  command: fc.constantFrom("cancel", "stop" as const),
});

function dispatchArb(): fc.Arbitrary<DispatchInput> {
  const fromRequest = fc
    .tuple(
      requestSpecArb,
      fc.oneof(
        { weight: 4, arbitrary: fc.constant([] as CellEdit[]) },
        { weight: 1, arbitrary: fc.array(cellEditArb, { minLength: 1, maxLength: 2 }) },
      ),
      fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, sequenceArb),
    )
    .map(([spec, edits, sequence]) =>
      editSpec(specOf(requestOf(spec)), edits, sequence === undefined ? {} : { sequence })
    );
  const other = envelopeArb.map(specOf);
  return fc.record({
    carrier: fc.oneof({ weight: 6, arbitrary: fromRequest }, { weight: 1, arbitrary: other }),
    maxMessageBytes: fc.constantFrom(1024, 4096, 1048576),
  });
}

function decodeAll(batches: readonly RecordBatch[]): ToolEnvelope[] {
  return batches.map((batch) => toolMessageToEnvelope(batch));
}

async function checkDispatch(input: DispatchInput, counters: Record<string, number>) {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const endpoint = fuzzEndpoint({ maxEarlyEvents: 4 });
  const published: RecordBatch[] = [];
  const binding = new DoraToolEndpointBinding(endpoint.handler, {
    maxMessageBytes: input.maxMessageBytes,
    eventSink: (batch) => void published.push(batch),
    logger: () => void count("endpoint failures reported"),
  });
  const value = carrierFromSpec(input.carrier);

  // The oracle: what the binding reads before it answers (size, carrier rules, route).
  let request: ToolEnvelope | undefined;
  let expectRaise: "protocol" | "not-a-request" | undefined;
  if (toolMessageCarrierSize(value) > binding.maxCarrierBytes) expectRaise = "protocol";
  else {
    try {
      request = toolMessageToEnvelope(value, {
        maxMessageBytes: Number.MAX_SAFE_INTEGER,
        maxPayloadJsonBytes: binding.maxMessageBytes,
      });
    } catch (error) {
      invariant(error instanceof ToolProtocolError, () => `carrier: ${describeError(error)}`);
      expectRaise = "protocol";
    }
  }
  if (request !== undefined) {
    if (!EXECUTION_REQUESTS.has(request.messageType)) expectRaise = "not-a-request";
    else if (
      request.endpointId !== ENDPOINT || request.endpointInstanceId !== INSTANCE ||
      !Object.hasOwn(OPERATIONS, request.operation!)
    ) expectRaise = "protocol";
  }

  let returned: RecordBatch[] | undefined;
  let raised: unknown;
  try {
    returned = await binding.dispatchInput(value);
  } catch (error) {
    raised = error ?? new Error("undefined was thrown");
  }
  // Let late events go out, then stop the execution's timers.
  for (let i = 0; i < 3; i++) await tick();
  await Promise.all([...endpoint.action.pending, ...endpoint.session.pending]);
  await endpoint.handler.close({ graceMs: 50 });

  if (expectRaise !== undefined) {
    invariant(returned === undefined, "an untrusted or invalid carrier was answered");
    invariant(published.length === 0, "an untrusted or invalid carrier caused a publication");
    if (expectRaise === "protocol") {
      invariant(
        raised instanceof ToolProtocolError,
        () => `expected a ToolProtocolError, got ${describeError(raised)}`,
      );
      count(`raised ${raised.code}`);
    } else {
      invariant(
        raised instanceof ToolProtocolError &&
          (raised.code !== "FORGE_PROTOCOL_UNKNOWN_MESSAGE_TYPE" || raised.path === "message_type"),
        () => `a non-request message raised ${describeError(raised)}`,
      );
      count(`raised ${raised.code} for ${request!.messageType}`);
    }
    assertNoPollution();
    return;
  }
  invariant(raised === undefined, () => `a trusted request raised ${describeError(raised)}`);
  const answers = [...decodeAll(returned!), ...decodeAll(published)];
  const responses = answers.filter((message) => message.messageType !== "tool.event");
  invariant(responses.length === 1, () => `${responses.length} responses to one request`);
  const response = responses[0];
  invariant(answers[0] === response, "an event was published before the response");
  validateResponseCorrelation(request!, response);
  for (const message of answers) {
    invariant(
      encodedEnvelopeSize(message) <= binding.maxMessageBytes,
      "a message exceeds maxMessageBytes",
    );
  }
  const events = answers.filter((message) => message.messageType === "tool.event");
  events.forEach((event, i) => {
    invariant(event.sequence === i, () => `event ${i} has sequence ${event.sequence}`);
    invariant(
      event.invocationId === request!.invocationId && event.operation === request!.operation,
      "an event of another execution",
    );
  });
  count(`answered ${response.messageType}`);
  if (events.length > 0) count("events published");
  // A Query echoes its arguments: hostile keys stay plain data end to end.
  if (
    request!.messageType === "tool.invoke.request" && request!.operation === "detect" &&
    response.messageType === "tool.invoke.response"
  ) {
    const outcome = invokeResponseFromPayload(response.payload);
    if (outcome instanceof ToolResult && outcome.status === "succeeded") {
      const args = (request!.payload as { arguments: unknown }).arguments;
      invariant(
        canon(outcome.outputs.echo) === canon(args),
        "the echoed arguments differ from the request's",
      );
      count("query echoes compared");
    }
  }
  assertNoPollution();
}

/** dispatchInput with random and mutated carriers. */
export const dispatchInputTarget: FuzzTarget<DispatchInput> = {
  name: "dispatch_input",
  arbitrary: dispatchArb,
  check: checkDispatch,
  inputBytes: (input) => specBytes(input.carrier),
  async: true,
  batchSize: 150,
};

// ---------------------------------------------------------------------------------------------
// dispatch_ipc: the binding's fast IPC entry against the generic path.
//
// dispatchIpc(bytes) promises what decodeToolMessageIpc(bytes, { maxBytes: maxCarrierBytes })
// followed by dispatchInput does, "with the same barrier, fallbacks and errors". Two twin
// handlers get the same request, one through each entry: they must raise the same error (class,
// code, message) or publish and return the same messages in the same order. The carrier limit is
// put right at, one under and one over the carrier's size, so the two size checks must agree.

/** One input of dispatch_ipc. */
export interface DispatchIpcInput {
  readonly request: RequestSpec;
  /** Which encoder wrote the bytes. */
  readonly encoder: "fast" | "generic";
  readonly mutations: readonly Mutation[];
  readonly maxMessageBytes: number;
  /** maxCarrierBytes relative to the decoded carrier's size (none: the default). */
  readonly carrierDelta: number | null;
}

function dispatchIpcArb(): fc.Arbitrary<DispatchIpcInput> {
  return fc.record({
    request: requestSpecArb,
    encoder: fc.constantFrom("fast", "generic" as const),
    mutations: fc.oneof(
      { weight: 2, arbitrary: fc.constant([] as Mutation[]) },
      { weight: 1, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 2 }) },
    ),
    maxMessageBytes: fc.constantFrom(1024, 4096, 1048576),
    carrierDelta: fc.oneof(
      { weight: 2, arbitrary: fc.constant(null) },
      fc.constantFrom(-1, 0, 1),
    ),
  });
}

function errorText(error: unknown): string {
  if (error instanceof ToolProtocolError) {
    return `${error.constructor.name} ${error.code}: ${error.message} @ ${String(error.path)}`;
  }
  return describeError(error);
}

async function checkDispatchIpc(input: DispatchIpcInput, counters: Record<string, number>) {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const envelope = requestOf(input.request);
  const encoded = input.encoder === "fast"
    ? encodeToolEnvelopeIpc(envelope)
    : encodeToolMessageIpc(toolEnvelopeToMessage(envelope));
  const bytes = applyMutations(encoded, new Uint8Array(0), input.mutations);
  let maxCarrierBytes: number | undefined;
  if (input.carrierDelta !== null) {
    try {
      const size = toolMessageCarrierSize(decodeToolMessageIpc(bytes, { maxBytes: 1 << 24 }));
      maxCarrierBytes = Math.max(input.maxMessageBytes, size + input.carrierDelta);
    } catch {
      maxCarrierBytes = undefined;
    }
  }
  const run = async (entry: "ipc" | "arrow") => {
    const endpoint = fuzzEndpoint({ maxEarlyEvents: 4 });
    const published: ToolEnvelope[] = [];
    const binding = new DoraToolEndpointBinding(endpoint.handler, {
      maxMessageBytes: input.maxMessageBytes,
      maxCarrierBytes,
      eventSink: (batch) => void published.push(toolMessageToEnvelope(batch)),
      ipcEventSink: (ipc) => void published.push(decodeToolEnvelopeIpc(ipc)),
      logger: () => {},
    });
    let result: string;
    try {
      if (entry === "ipc") {
        const out = await binding.dispatchIpc(bytes);
        published.push(...out.map((ipc) => decodeToolEnvelopeIpc(ipc)));
      } else {
        const batch = decodeToolMessageIpc(bytes, { maxBytes: binding.maxCarrierBytes });
        const out = await binding.dispatchInput(batch);
        published.push(...out.map((batch) => toolMessageToEnvelope(batch)));
      }
      result = "answered";
    } catch (error) {
      invariant(
        error instanceof ToolProtocolError || error instanceof RangeError,
        () => `dispatch (${entry}) raised ${describeError(error)}`,
      );
      result = `raised ${errorText(error)}`;
    }
    for (let i = 0; i < 3; i++) await tick();
    await Promise.all([...endpoint.action.pending, ...endpoint.session.pending]);
    await endpoint.handler.close({ graceMs: 50 });
    return `${result}\n${published.map((m) => canon(m.toWireObject())).join("\n")}`;
  };
  const viaIpc = await run("ipc");
  const viaArrow = await run("arrow");
  invariant(
    viaIpc === viaArrow,
    () => `dispatchIpc and dispatchInput differ:\n  ipc:   ${viaIpc}\n  arrow: ${viaArrow}`,
  );
  count(viaIpc.startsWith("answered") ? "answered alike" : "raised alike");
  if (maxCarrierBytes !== undefined) {
    count(`carrier limit ${input.carrierDelta! >= 0 ? "+" : ""}${input.carrierDelta}`);
  }
  assertNoPollution();
}

/** dispatchIpc against decodeToolMessageIpc + dispatchInput. */
export const dispatchIpcTarget: FuzzTarget<DispatchIpcInput> = {
  name: "dispatch_ipc",
  arbitrary: dispatchIpcArb,
  check: checkDispatchIpc,
  async: true,
  batchSize: 150,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [dispatchInputTarget, dispatchIpcTarget];

/** Runs every target of this module under `budget`. */
export async function run(budget: Budget): Promise<TargetReport[]> {
  const reports: TargetReport[] = [];
  for (const target of targets) reports.push(await runTarget(target, budget));
  return reports;
}

/**
 * The carrier hot path of a Dora node, for a typical `tool.invoke.request` and a 64 KiB payload,
 * each case beside the others in one run:
 *
 * - IPC bytes → validated envelope: apache-arrow's generic reader + `toolMessageToEnvelope` +
 *   typed validation (the baseline), the fast codec (`decodeToolEnvelopeIpc`) + the same typed
 *   validation, the strict Wire decode of the same envelope's JSON bytes (`decodeEnvelope`,
 *   strict + typed), and the floor: bare `JSON.parse(TextDecoder)` of the `payload_json` bytes.
 * - envelope → IPC bytes: `toolEnvelopeToMessage` + apache-arrow's writer (the baseline), the
 *   fast codec (`encodeToolEnvelopeIpc`), the Wire encode (`encodeEnvelope`), and the floor:
 *   `TextEncoder(JSON.stringify)` of the payload.
 * - the full node round trip (request bytes → binding → Query handler → response bytes): the
 *   generic codec around `dispatchInput` (the baseline) and the fast codec (`dispatchIpc`).
 *
 * `deno bench` prints each case's time, iterations per second and ratio to its group's baseline;
 * `deno task bench` adds a summary of the key ratios (bench/summary.ts).
 */
import {
  decodeEnvelope,
  encodeEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  type ToolEnvelope,
  ToolOperationDescriptor,
  type ToolRequest,
  ToolResult,
  validateMessageEnvelope,
} from "../mod.ts";
import {
  decodeToolEnvelopeIpc,
  decodeToolMessageIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../dora.ts";
import { largeRequest, typicalRequest } from "./_payloads.ts";

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();
/** The carrier's `payload_json` bytes of an envelope (what the fast decoder parses in place). */
function payloadJsonBytes(envelope: ToolEnvelope): Uint8Array {
  const batch = toolEnvelopeToMessage(envelope);
  return textEncoder.encode(batch.getChild("payload_json")!.get(0) as string);
}

/** A Query endpoint that answers every invoke with a small result. */
function binding(): DoraToolEndpointBinding {
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "vision.yolo",
      operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
    }),
    {
      endpointInstanceId: "instance-1",
      operations: {
        detect: {
          query: (request: ToolRequest) =>
            new ToolResult({
              status: "succeeded",
              outputs: { detections: 3, camera: request.arguments.camera ?? null },
            }),
        },
      },
    },
  );
  return new DoraToolEndpointBinding(handler);
}

const cases = [["typical", typicalRequest], ["64KiB", largeRequest]] as const;

for (const [name, envelope] of cases) {
  // deno bench warms a case up for only 10 ms: long enough to start, not to reach the optimised
  // steady state a node serving a stream of requests runs in, nor to collect the garbage the case
  // before left. Every case gets this many warmup iterations first (about a second at most).
  const warmup = name === "typical" ? 3000 : 300;
  // At 64 KiB deno bench's half-second budget holds a few hundred iterations: measure more, so a
  // noisy neighbour moves the average less.
  const n = name === "typical" ? undefined : 1000;
  const ipc = encodeToolMessageIpc(toolEnvelopeToMessage(envelope));
  const wire = encodeEnvelope(envelope);
  const payload = payloadJsonBytes(envelope);
  const plainPayload = JSON.parse(textDecoder.decode(payload));
  // The fast path reads what apache-arrow writes, and the reverse: no bench of a wrong answer.
  const decoded = decodeToolEnvelopeIpc(ipc);
  const reencoded = toolMessageToEnvelope(decodeToolMessageIpc(encodeToolEnvelopeIpc(envelope)));
  if (JSON.stringify(decoded.toWireObject()) !== JSON.stringify(envelope.toWireObject())) {
    throw new Error(`fast decode of ${name} differs`);
  }
  if (JSON.stringify(reencoded.toWireObject()) !== JSON.stringify(envelope.toWireObject())) {
    throw new Error(`fast encode of ${name} differs`);
  }

  const decodeGroup = `carrier decode ${name}`;
  Deno.bench({
    name:
      `generic: apache-arrow IPC read + toolMessageToEnvelope + typed ${name} (${ipc.length} B)`,
    group: decodeGroup,
    baseline: true,
    fn: () => {
      validateMessageEnvelope(toolMessageToEnvelope(decodeToolMessageIpc(ipc)));
    },
  });
  Deno.bench({
    name: `fast: decodeToolEnvelopeIpc + typed ${name}`,
    group: decodeGroup,
    warmup,
    n,
    fn: () => {
      validateMessageEnvelope(decodeToolEnvelopeIpc(ipc));
    },
  });
  Deno.bench({
    name: `Wire: decodeEnvelope (strict + typed) ${name} (${wire.length} B)`,
    group: decodeGroup,
    warmup,
    n,
    fn: () => {
      decodeEnvelope(wire);
    },
  });
  Deno.bench({
    name: `floor: JSON.parse(TextDecoder) of payload_json ${name} (${payload.length} B)`,
    group: decodeGroup,
    warmup,
    n,
    fn: () => {
      JSON.parse(textDecoder.decode(payload));
    },
  });

  const encodeGroup = `carrier encode ${name}`;
  Deno.bench({
    name: `generic: toolEnvelopeToMessage + apache-arrow IPC write ${name}`,
    group: encodeGroup,
    warmup,
    n,
    baseline: true,
    fn: () => {
      encodeToolMessageIpc(toolEnvelopeToMessage(envelope));
    },
  });
  Deno.bench({
    name: `fast: encodeToolEnvelopeIpc ${name}`,
    group: encodeGroup,
    warmup,
    n,
    fn: () => {
      encodeToolEnvelopeIpc(envelope);
    },
  });
  Deno.bench({
    name: `Wire: encodeEnvelope (validated, sorted) ${name}`,
    group: encodeGroup,
    warmup,
    n,
    fn: () => {
      encodeEnvelope(envelope);
    },
  });
  Deno.bench({
    name: `floor: TextEncoder(JSON.stringify) of the payload ${name}`,
    group: encodeGroup,
    warmup,
    n,
    fn: () => {
      textEncoder.encode(JSON.stringify(plainPayload));
    },
  });

  const roundTripGroup = `node round trip ${name}`;
  const generic = binding();
  const fast = binding();
  Deno.bench({
    name: `generic: IPC read → dispatchInput → Query → IPC write ${name}`,
    group: roundTripGroup,
    warmup,
    n,
    baseline: true,
    fn: async () => {
      const batch = decodeToolMessageIpc(ipc, { maxBytes: generic.maxCarrierBytes });
      for (const response of await generic.dispatchInput(batch)) encodeToolMessageIpc(response);
    },
  });
  Deno.bench({
    name: `fast: dispatchIpc → Query → IPC bytes ${name}`,
    group: roundTripGroup,
    warmup,
    n,
    fn: async () => {
      await fast.dispatchIpc(ipc);
    },
  });
}

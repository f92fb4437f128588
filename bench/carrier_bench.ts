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
 *   generic codec around `dispatchInput` (the baseline) and the fast codec (`dispatchIpc`), and
 *   the bare floor of any node round trip: read the IPC message header (continuation marker and
 *   metadata length), `JSON.parse` the `payload_json` bytes in place, call a function,
 *   `JSON.stringify` its answer and write it behind an IPC message header; and the same parts
 *   composed by hand in one loop on fresh objects (decode, dispatch, encode the response), which
 *   the summary compares the round trip with too.
 * - the fast round trip's parts, each alone: `decodeToolEnvelopeIpc` of the request,
 *   `handler.dispatch` of the decoded request, `encodeToolEnvelopeIpc` of its response (the
 *   summary compares the round trip with their sum: what the binding adds between the hops).
 *
 * `deno bench` prints each case's time, iterations per second and ratio to its group's baseline;
 * `deno task bench` adds a summary of the key ratios (bench/summary.ts). One iteration handles
 * `TYPICAL_PER_ITERATION` (16) typical messages, or one 64 KiB message, in every case, so that
 * all cases are timed the same way (see _payloads.ts).
 */
import {
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolOperationDescriptor,
  type ToolRequest,
  ToolResult,
} from "../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
  validateMessageEnvelope,
} from "../wire.ts";
import {
  decodeToolEnvelopeIpc,
  decodeToolMessageIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  toolEnvelopeToMessage,
  toolMessageToEnvelope,
} from "../dora.ts";
import { largeRequest, TYPICAL_PER_ITERATION, typicalRequest } from "./_payloads.ts";
import { warmedUp } from "./_steady.ts";

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();
/** The carrier's `payload_json` bytes of an envelope (what the fast decoder parses in place). */
function payloadJsonBytes(envelope: ToolEnvelope): Uint8Array {
  const batch = toolEnvelopeToMessage(envelope);
  return textEncoder.encode(batch.getChild("payload_json")!.get(0) as string);
}

/** Where `needle` starts in `haystack` (the bench's own setup; -1 when absent). */
function indexOfBytes(haystack: Uint8Array, needle: Uint8Array): number {
  outer: for (let at = 0; at + needle.length <= haystack.length; at++) {
    for (let i = 0; i < needle.length; i++) if (haystack[at + i] !== needle[i]) continue outer;
    return at;
  }
  throw new Error("payload_json not found in the IPC bytes");
}

/**
 * The bare floor of a node round trip: the IPC message header read (continuation marker,
 * metadata length), `JSON.parse` of the payload bytes, one function call, `JSON.stringify` of
 * its answer, and the answer written behind an IPC message header.
 */
function floorRoundTrip(
  bytes: Uint8Array,
  payloadAt: number,
  payloadLength: number,
  call: (value: unknown) => unknown,
): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getInt32(0, true) !== -1 || view.getInt32(4, true) <= 0) throw new Error("not IPC");
  const value = JSON.parse(
    textDecoder.decode(bytes.subarray(payloadAt, payloadAt + payloadLength)),
  );
  const text = JSON.stringify(call(value));
  const out = new Uint8Array(8 + 3 * text.length);
  const outView = new DataView(out.buffer);
  const { written } = textEncoder.encodeInto(text, out.subarray(8));
  outView.setInt32(0, -1, true);
  outView.setInt32(4, written, true);
  return out.subarray(0, 8 + written);
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
  // before left. Every case's first call warms it up (see _steady.ts), and every case gets at
  // least n measured calls (with n set, deno bench times for 10 ms instead of 500 beyond them).
  const k = name === "typical" ? TYPICAL_PER_ITERATION : 1;
  const each = k === 1 ? "" : ` ×${k}`;
  const n = 1000;
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
      `generic: apache-arrow IPC read + toolMessageToEnvelope + typed ${name} (${ipc.length} B)${each}`,
    group: decodeGroup,
    baseline: true,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) {
        validateMessageEnvelope(toolMessageToEnvelope(decodeToolMessageIpc(ipc)));
      }
    }),
  });
  Deno.bench({
    name: `fast: decodeToolEnvelopeIpc + typed ${name}${each}`,
    group: decodeGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) validateMessageEnvelope(decodeToolEnvelopeIpc(ipc));
    }),
  });
  Deno.bench({
    name: `Wire: decodeEnvelope (strict + typed) ${name} (${wire.length} B)${each}`,
    group: decodeGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) decodeEnvelope(wire);
    }),
  });
  Deno.bench({
    name: `floor: JSON.parse(TextDecoder) of payload_json ${name} (${payload.length} B)${each}`,
    group: decodeGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) JSON.parse(textDecoder.decode(payload));
    }),
  });

  const encodeGroup = `carrier encode ${name}`;
  Deno.bench({
    name: `generic: toolEnvelopeToMessage + apache-arrow IPC write ${name}${each}`,
    group: encodeGroup,
    n,
    baseline: true,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) encodeToolMessageIpc(toolEnvelopeToMessage(envelope));
    }),
  });
  Deno.bench({
    name: `fast: encodeToolEnvelopeIpc ${name}${each}`,
    group: encodeGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) encodeToolEnvelopeIpc(envelope);
    }),
  });
  Deno.bench({
    name: `Wire: encodeEnvelope (validated, sorted) ${name}${each}`,
    group: encodeGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) encodeEnvelope(envelope);
    }),
  });
  Deno.bench({
    name: `floor: TextEncoder(JSON.stringify) of the payload ${name}${each}`,
    group: encodeGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) textEncoder.encode(JSON.stringify(plainPayload));
    }),
  });

  const roundTripGroup = `node round trip ${name}`;
  const generic = binding();
  const fast = binding();
  Deno.bench({
    name: `generic: IPC read → dispatchInput → Query → IPC write ${name}${each}`,
    group: roundTripGroup,
    n,
    baseline: true,
    fn: warmedUp(async () => {
      for (let i = 0; i < k; i++) {
        const batch = decodeToolMessageIpc(ipc, { maxBytes: generic.maxCarrierBytes });
        for (const response of await generic.dispatchInput(batch)) encodeToolMessageIpc(response);
      }
    }),
  });
  Deno.bench({
    name: `fast: dispatchIpc → Query → IPC bytes ${name}${each}`,
    group: roundTripGroup,
    n,
    fn: warmedUp(async () => {
      for (let i = 0; i < k; i++) await fast.dispatchIpc(ipc);
    }),
  });

  // The floor: what any node answering IPC bytes with IPC bytes does at the least, on the same
  // request bytes (the payload is found once, here; the answer is the response's payload).
  const payloadAt = indexOfBytes(ipc, payload);
  const answer = (await fast.handler.dispatch(decodeToolEnvelopeIpc(ipc)))[0].payload;
  const floorCall = (value: unknown) => value === undefined ? undefined : answer;
  Deno.bench({
    name: `floor: IPC header read + JSON.parse + call + JSON.stringify + IPC write ${name}${each}`,
    group: roundTripGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) floorRoundTrip(ipc, payloadAt, payload.length, floorCall);
    }),
  });

  // The same parts composed by hand in one loop, on fresh objects as the binding has them (the
  // request decoded each time, its own response encoded): the round trip ÷ this is what the
  // binding adds between the hops, measured in the round trip's own conditions. Parts timed alone
  // (below) each run hot on the same objects, which the composed loop and the binding never do.
  const composed = binding();
  Deno.bench({
    name:
      `composed: decodeToolEnvelopeIpc → handler.dispatch → encodeToolEnvelopeIpc ${name}${each}`,
    group: roundTripGroup,
    n,
    fn: warmedUp(async () => {
      for (let i = 0; i < k; i++) {
        const [answer] = await composed.handler.dispatch(decodeToolEnvelopeIpc(ipc));
        encodeToolEnvelopeIpc(answer);
      }
    }),
  });

  // The fast round trip's parts, each timed alone: what the binding adds on top is their sum's
  // complement (the summary's "node round trip / sum of its parts").
  const partsGroup = `node round trip parts ${name}`;
  const parts = binding();
  const request = decodeToolEnvelopeIpc(ipc);
  const [response] = await parts.handler.dispatch(request);
  Deno.bench({
    name: `part: decodeToolEnvelopeIpc (request) ${name}${each}`,
    group: partsGroup,
    n,
    baseline: true,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) decodeToolEnvelopeIpc(ipc);
    }),
  });
  Deno.bench({
    name: `part: handler.dispatch (Query) ${name}${each}`,
    group: partsGroup,
    n,
    fn: warmedUp(async () => {
      for (let i = 0; i < k; i++) await parts.handler.dispatch(request);
    }),
  });
  Deno.bench({
    name: `part: encodeToolEnvelopeIpc (response) ${name}${each}`,
    group: partsGroup,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) encodeToolEnvelopeIpc(response);
    }),
  });
}

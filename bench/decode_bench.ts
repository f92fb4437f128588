/**
 * The decode path under hostile or unusual input, each case beside a `JSON.parse` baseline measured
 * in the same run:
 *
 * - refusing a request of about 1 MiB addressed to another endpoint instance, through the fast IPC
 *   path (`dispatchIpc`) and the generic Arrow path (`dispatchInput` of a decoded batch): the route
 *   is checked on the header columns before `payload_json` is parsed, so a refusal costs a small
 *   fraction of one parse of the payload;
 * - the strict Wire decode of a message whose payload holds one object with 10^4 or 10^5 keys
 *   (decode time stays a constant factor of `JSON.parse` as the key count grows).
 *
 * Not part of `deno task bench` (bench/summary.ts): run it on its own with
 * `deno bench --allow-read --allow-env --allow-ffi bench/decode_bench.ts`.
 *
 * @module
 */
import {
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  makeInvokeRequestEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
} from "../wire.ts";
import {
  decodeToolMessageIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  toolEnvelopeToMessage,
} from "../dora.ts";
import { benchContext } from "./_payloads.ts";
import { warmedUp } from "./_steady.ts";

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();

const binding = new DoraToolEndpointBinding(
  new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "vision.yolo",
      operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
    }),
    {
      endpointInstanceId: "instance-1",
      operations: { detect: { query: () => new ToolResult({ status: "succeeded" }) } },
    },
  ),
);

/** About 1 MB of detections: the largest request the default 1 MiB limit admits. */
function largeArguments(): Record<string, unknown> {
  const items: unknown[] = [];
  for (let i = 0, size = 0; size < 1_000_000; i++) {
    const item = { id: i, label: `object-${i}`, score: 0.5 + (i % 500) / 1000, box: [i % 640, 7] };
    size += JSON.stringify(item).length + 1;
    items.push(item);
  }
  return { items };
}

const elsewhere = makeInvokeRequestEnvelope(
  new ToolRequest({ arguments: largeArguments() }),
  benchContext,
  { requestId: "request-1", endpointInstanceId: "instance-2" },
);
const ipc = encodeToolEnvelopeIpc(elsewhere);
const batch = decodeToolMessageIpc(ipc, { maxBytes: binding.maxCarrierBytes });
const payloadJson = textEncoder.encode(
  toolEnvelopeToMessage(elsewhere).getChild("payload_json")!.get(0) as string,
);

/** Awaits a refusal; an answer would be a wrong result to bench. */
async function refused(dispatch: () => Promise<unknown>): Promise<void> {
  try {
    await dispatch();
  } catch {
    return;
  }
  throw new Error("a request for another instance was answered");
}

const refusalGroup = "refuse 1 MiB request for another instance";
Deno.bench({
  name: `floor: JSON.parse(TextDecoder) of payload_json (${payloadJson.length} B)`,
  group: refusalGroup,
  baseline: true,
  n: 100,
  fn: warmedUp(() => {
    JSON.parse(textDecoder.decode(payloadJson));
  }),
});
Deno.bench({
  name: `fast: dispatchIpc refusal (${ipc.length} B IPC)`,
  group: refusalGroup,
  n: 100,
  fn: warmedUp(async () => await refused(() => binding.dispatchIpc(ipc))),
});
Deno.bench({
  name: "generic: apache-arrow IPC read + dispatchInput refusal",
  group: refusalGroup,
  n: 100,
  fn: warmedUp(async () =>
    await refused(() =>
      binding.dispatchInput(decodeToolMessageIpc(ipc, { maxBytes: binding.maxCarrierBytes }))
    )
  ),
});
Deno.bench({
  name: "generic: dispatchInput refusal of the decoded batch",
  group: refusalGroup,
  n: 100,
  fn: warmedUp(async () => await refused(() => binding.dispatchInput(batch))),
});

for (const keys of [10_000, 100_000]) {
  const args: Record<string, number> = {};
  for (let i = 0; i < keys; i++) args[`k${i}`] = i;
  const envelope = makeInvokeRequestEnvelope(new ToolRequest({ arguments: args }), benchContext, {
    requestId: "request-1",
    endpointInstanceId: "instance-1",
  });
  const options = { maxMessageBytes: 1 << 30 };
  const bytes = encodeEnvelope(envelope, options);
  const group = `decode ${keys} keys`;
  const n = keys === 10_000 ? 100 : 20;
  Deno.bench({
    name: `JSON.parse(TextDecoder) ${keys} keys (${bytes.length} B)`,
    group,
    baseline: true,
    n,
    fn: warmedUp(() => {
      JSON.parse(textDecoder.decode(bytes));
    }),
  });
  Deno.bench({
    name: `decodeEnvelope (strict + typed) ${keys} keys`,
    group,
    n,
    fn: warmedUp(() => {
      decodeEnvelope(bytes, options);
    }),
  });
}

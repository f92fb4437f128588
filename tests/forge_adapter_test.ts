// The Forge interop adapter (examples/forge_adapter/): its Python conversion tests, run through
// Deno against IPC bytes made by this project's own encoders, and the bytes it writes back
// decoded again here. Skipped when python3 or pyarrow is absent (`pip install pyarrow`).
import { assert, assertEquals, assertMatch } from "@std/assert";
import { decodeEnvelope, encodeEnvelope, type ToolEnvelope } from "../wire.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  toolEnvelopeToMessage,
} from "../dora.ts";
import {
  EVENT_HEADERS,
  eventText,
  hasPyarrow,
  MAX,
  PROTOCOL,
  text,
  unregisterText,
  wireText,
} from "./_helpers.ts";

const ADAPTER = new URL("../examples/forge_adapter/", import.meta.url).pathname;
const PYARROW = hasPyarrow();

const INVOKE_HEADERS = {
  protocol: PROTOCOL,
  message_type: "tool.invoke.request",
  request_id: "request-1",
  invocation_id: "invocation-1",
  attempt_id: "attempt-1",
  endpoint_id: "vision.yolo",
  endpoint_instance_id: "instance-1",
  operation: "detect",
};
const INVOKE_PAYLOAD =
  '{"arguments":{"class":"方块","nested":{"z":[1,2.5,null,true],"a":"\\u00e9"}},' +
  '"context":{"implementation_id":"yolo","metadata":{},"tool_id":"forge.tool.detect"}}';
const { endpoint_instance_id: _, ...UNRESOLVED_HEADERS } = INVOKE_HEADERS;

/** Wire texts of the messages sent through the adapter, by vector name. */
const MESSAGES: Record<string, string> = {
  invoke_request: wireText(INVOKE_HEADERS, INVOKE_PAYLOAD),
  invoke_null_instance: wireText(
    { ...UNRESOLVED_HEADERS, request_id: "unresolved-1" },
    INVOKE_PAYLOAD,
  ),
  event_max_sequence: wireText(
    { ...EVENT_HEADERS, sequence: MAX },
    '{"data":{"label":"方块 😀"},"type":"progress"}',
  ),
  event_sequence_0: eventText('{"fraction":0.5}'),
  unregister: unregisterText(),
};

/** The carrier columns the adapter must read for `envelope`, and its payload. */
function expectedColumns(envelope: ToolEnvelope): Record<string, unknown> {
  return {
    protocol: envelope.protocol,
    message_type: envelope.messageType,
    request_id: envelope.requestId ?? null,
    invocation_id: envelope.invocationId ?? null,
    attempt_id: envelope.attemptId ?? null,
    endpoint_id: envelope.endpointId,
    endpoint_instance_id: envelope.endpointInstanceId ?? null,
    operation: envelope.operation ?? null,
    sequence: envelope.sequence ?? null,
    payload: envelope.payload,
  };
}

/** Runs the Python tests; with `vectors`, also the one that converts the streams in it. */
async function runPythonTests(vectors?: string): Promise<string> {
  const output = await new Deno.Command("python3", {
    args: ["-m", "unittest", "-v", "test_forge_adapter"],
    cwd: ADAPTER,
    env: {
      PYTHONDONTWRITEBYTECODE: "1",
      ...(vectors === undefined ? {} : { FORGE_ADAPTER_VECTORS: vectors }),
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const report = text(output.stderr) + text(output.stdout);
  assertEquals(output.code, 0, report);
  return report;
}

Deno.test({
  name: "forge adapter: our IPC bytes become Forge StructArrays and come back unchanged",
  ignore: !PYARROW,
  async fn() {
    const vectors = await Deno.makeTempDir({ prefix: "forge_adapter_" });
    try {
      const envelopes = new Map<string, ToolEnvelope>();
      for (const [name, wire] of Object.entries(MESSAGES)) {
        const envelope = decodeEnvelope(wire);
        // Both of our encoders: the fast one (the Dora node's) and apache-arrow's writer.
        for (
          const [suffix, bytes] of [
            ["fast", encodeToolEnvelopeIpc(envelope)],
            ["arrow", encodeToolMessageIpc(toolEnvelopeToMessage(envelope))],
          ] as const
        ) {
          envelopes.set(`${name}.${suffix}`, envelope);
          await Deno.writeFile(`${vectors}/${name}.${suffix}.arrows`, bytes);
          await Deno.writeTextFile(
            `${vectors}/${name}.${suffix}.json`,
            JSON.stringify(expectedColumns(envelope)),
          );
        }
      }
      const report = await runPythonTests(vectors);
      assertMatch(report, /test_project_bytes \(.*\) \.\.\. ok/);
      assertMatch(report, /Ran \d+ tests/);
      assert(!/FAIL|ERROR/.test(report), report);
      // What the adapter writes for the endpoint decodes to the very same Wire message.
      for (const [name, envelope] of envelopes) {
        const bytes = await Deno.readFile(`${vectors}/${name}.out.arrows`);
        assertEquals(
          text(encodeEnvelope(decodeToolEnvelopeIpc(bytes))),
          text(encodeEnvelope(envelope)),
        );
      }
    } finally {
      await Deno.remove(vectors, { recursive: true });
    }
  },
});

Deno.test({
  name: "forge adapter: the Python tests refuse bad streams, and the node loop converts and drops",
  ignore: !PYARROW,
  async fn() {
    const report = await runPythonTests();
    for (
      const test of [
        "test_compressed_streams_are_refused_before_decompression",
        "test_size_is_checked_before_reading",
        "test_two_batches_or_rows_are_refused",
        "test_another_schema_is_refused",
        "test_garbage_empty_and_truncated_bytes",
        "test_struct_inputs_of_another_shape_are_refused",
        "test_the_conversions_import_without_dora",
        "test_converts_both_ways_drops_bad_messages_and_stops",
      ]
    ) assertMatch(report, new RegExp(`${test} \\(.*\\) \\.\\.\\. ok`));
  },
});

// ToolEndpointClient as a Dora node through the FFI shim, driven by the C test double of the dora
// C node API (tests/fixtures/dora_double.c). The double replays answers of the real handler: the
// same calls first run in process (deterministic ids) and record what the handler answered and
// after how many requests; the script then plays those answers back as `tool_response` inputs.
import { assertEquals } from "@std/assert";
import {
  InProcessToolClientTransport,
  type ToolClientTransport,
  ToolEndpointClient,
  type ToolEventRecord,
} from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  DoraToolClientTransport,
  encodeToolEnvelopeIpc,
  openDoraNode,
} from "../../dora.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT, INSTANCE } from "../client/_fixtures.ts";
import { hex, unhex } from "../_helpers.ts";

const FIXTURE = new URL("../fixtures/dora_double.c", import.meta.url);

async function hasCompiler(): Promise<boolean> {
  try {
    const { success } = await new Deno.Command("cc", { args: ["--version"], stdout: "null" })
      .output();
    return success;
  } catch {
    return false;
  }
}

const CC = await hasCompiler();
if (!CC) {
  console.warn("dora/client_transport_ffi_test: no C compiler `cc` on PATH; the tests are skipped");
}

const WORK = CC ? await Deno.makeTempDir({ prefix: "client_dora_double_" }) : "";
globalThis.addEventListener("unload", () => {
  try {
    if (WORK !== "") Deno.removeSync(WORK, { recursive: true });
  } catch {
    // best effort
  }
});

async function compile(): Promise<string> {
  const out = `${WORK}/libdora_double.so`;
  const { success, stderr } = await new Deno.Command("cc", {
    args: ["-shared", "-fPIC", "-o", out, FIXTURE.pathname, "-lpthread"],
    stderr: "piped",
  }).output();
  if (!success) {
    throw new Error(`compiling the dora double failed:\n${new TextDecoder().decode(stderr)}`);
  }
  return out;
}

const LIB = CC ? await compile() : "";

/** Deterministic ids: the same calls make the same requests in both runs. */
function counter(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}-${++n}`;
}

/** Records every request sent and every message delivered, with the requests sent before it. */
class RecordingTransport implements ToolClientTransport {
  readonly inner: InProcessToolClientTransport;
  readonly requests: ToolEnvelope[] = [];
  readonly delivered: { after: number; message: ToolEnvelope }[] = [];

  constructor(inner: InProcessToolClientTransport) {
    this.inner = inner;
  }

  connect(deliver: (message: ToolEnvelope) => void): void {
    this.inner.connect((message) => {
      this.delivered.push({ after: this.requests.length, message });
      deliver(message);
    });
  }

  send(request: ToolEnvelope): Promise<void> {
    this.requests.push(request);
    return this.inner.send(request);
  }
}

/** The calls both runs make. */
async function scenario(client: ToolEndpointClient): Promise<string[]> {
  const seen: string[] = [];
  const result = await client.query("echo", { n: 1 }, {
    invocationId: "inv-q",
    attemptId: "att-q",
    requestId: "req-q",
  });
  seen.push(`query:${result.status}:${JSON.stringify(result.outputs)}`);
  const move = await client.invoke("move", { steps: 2 }, {
    invocationId: "inv-m",
    attemptId: "att-m",
    requestId: "req-m",
  });
  const records: ToolEventRecord[] = [];
  for await (const record of move.events) records.push(record);
  seen.push(...records.map((r) => `event:${r.sequence}:${r.event.type}`));
  seen.push(`result:${(await move.result()).status}`);
  return seen;
}

const CLIENT_OPTIONS = {
  endpointId: ENDPOINT,
  endpointInstanceId: INSTANCE,
  descriptor: DESCRIPTOR,
  // No timer-driven poll: only the terminal event asks for the result, in both runs.
  pollIntervalMs: 60_000,
  timeoutMs: 10_000,
} as const;

Deno.test({
  name: "client dora ffi: query and action through the FFI node replay the handler's answers",
  ignore: !CC,
  fn: async () => {
    // 1. In process: what the handler answers, and after which request.
    const arm = armEndpoint();
    const recording = new RecordingTransport(new InProcessToolClientTransport(arm.handler));
    const reference = new ToolEndpointClient({
      ...CLIENT_OPTIONS,
      transport: recording,
      generateId: counter("id"),
    });
    const expected = await scenario(reference);
    await reference.close();
    await arm.handler.close({ graceMs: 100 });

    // 2. The script: each answer after the request it follows, then stop.
    const lines: string[] = [];
    for (const { after, message } of recording.delivered) {
      lines.push(`wait_for_output ${after}`);
      lines.push(`input tool_response ${hex(encodeToolEnvelopeIpc(message))}`);
    }
    lines.push(`wait_for_output ${recording.requests.length}`, "stop");
    const script = `${WORK}/script.txt`;
    const record = `${WORK}/record.txt`;
    await Deno.writeTextFile(script, lines.join("\n") + "\n");
    Deno.env.set("DORA_DOUBLE_SCRIPT", script);
    Deno.env.set("DORA_DOUBLE_RECORD", record);

    // 3. The same calls as a Dora node.
    const node = await openDoraNode({ libraryPath: LIB });
    const transport = new DoraToolClientTransport(node);
    const client = new ToolEndpointClient({
      ...CLIENT_OPTIONS,
      transport,
      generateId: counter("id"),
    });
    const seen = await scenario(client);
    await transport.done;
    await client.close();
    assertEquals(seen, expected);
    assertEquals(seen, [
      'query:succeeded:{"echo":{"n":1}}',
      "event:0:progress",
      "event:1:progress",
      "event:2:executor_completed",
      "result:succeeded",
    ]);
    assertEquals(client.stats.uncorrelated + client.stats.mismatched + client.stats.invalid, 0);
    assertEquals(transport.stats.undecodable, 0);

    // 4. What the node sent: the same requests, byte for byte, on tool_request.
    const outputs = (await Deno.readTextFile(record)).split("\n")
      .filter((line) => line.startsWith("output "))
      .map((line) => line.split(" "));
    assertEquals(outputs.map(([, id]) => id), recording.requests.map(() => "tool_request"));
    assertEquals(
      outputs.map(([, , data]) => hex(encodeToolEnvelopeIpc(decodeToolEnvelopeIpc(unhex(data))))),
      recording.requests.map((request) => hex(encodeToolEnvelopeIpc(request))),
    );
    const counters = new Map(
      (await Deno.readTextFile(record)).split("\n").filter((line) => /^[a-z_]+ \d+$/.test(line))
        .map((line) => line.split(" ") as [string, string]),
    );
    assertEquals(counters.get("overlaps"), "0", "no send while dora_next_event was pending");
    assertEquals(counters.get("unfreed"), "0");
    assertEquals(counters.get("double_frees"), "0");
  },
});

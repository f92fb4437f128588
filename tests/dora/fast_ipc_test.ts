// The fast ToolMessage IPC codec against apache-arrow's generic path (the reference): seeded
// differential tests in both directions over thousands of envelopes of all 14 message types,
// carrier rows that break every rule, pyarrow-written streams (committed fixtures, and live when
// python3 with pyarrow is installed), mutated and truncated streams, the binding's dispatchIpc and
// the node runner. "Same outcome" means the same envelope, or an error of the same class with the
// same code, message and path.
import {
  assert,
  assertEquals,
  AssertionError,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import {
  type Data,
  Int64,
  makeData,
  RecordBatch,
  RecordBatchReader,
  RecordBatchStreamWriter,
  Struct,
  Utf8,
} from "apache-arrow";
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  encodedEnvelopeSize,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  TOOL_MESSAGE_TYPES,
  type ToolEnvelope,
  type ToolMessageType,
  ToolProtocolError,
  validateMessageEnvelope,
} from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  decodeToolMessageIpc,
  DoraToolEndpointBinding,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  LoopbackDataflow,
  serveToolEndpoint,
  TOOL_MESSAGE_SCHEMA,
  toolEnvelopeToMessage,
  toolMessageCarrierSize,
  toolMessageToEnvelope,
} from "../../dora.ts";
import { readToolMessageRow } from "../../src/dora/_fast_ipc_read.ts";
import { checkToolMessageStream } from "../../src/dora/ipc.ts";
import { parseStrictJsonBytes } from "../../src/wire/_json_decode.ts";
import { hasPyarrow, hex, MAX, silentLogger, unhex } from "../_helpers.ts";
import {
  type Gen,
  idString,
  jsonObject,
  randomSample,
  requestOptions,
  SeededRandom,
  toolContext,
} from "../_gen.ts";

const SEED = 0xfa57_1dc0;
const PER_TYPE = 220;
const RAW_ROWS = 3000;
const FIXTURES = new URL("../fixtures/pyarrow/", import.meta.url);
const utf8 = new TextEncoder();

// ---------------------------------------------------------------------------------------------
// Generators (tests/_gen.ts)

/** A typed-valid envelope of `messageType` (optional headers absent as often as present). */
function envelopeOf(g: Gen, messageType: ToolMessageType): ToolEnvelope {
  return randomSample(g, messageType).envelope;
}

/** An invoke request whose payload is about `bytes` bytes of (mostly ASCII) text. */
function sizedRequest(g: Gen, bytes: number, nonAscii: boolean): ToolEnvelope {
  const chunk = nonAscii ? "方块ü😀-" : "abcdefgh";
  const text = chunk.repeat(Math.ceil(bytes / utf8.encode(chunk).length));
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { text, n: g.rng.int(0, 1000) } }),
    toolContext(g),
    requestOptions(g),
  );
}

// ---------------------------------------------------------------------------------------------
// Outcomes

type Outcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: string };

function describeError(error: unknown): string {
  if (error instanceof ToolProtocolError) {
    return `ToolProtocolError ${error.code}: ${error.message} (path ${String(error.path)})`;
  }
  if (error instanceof Error) return `${error.constructor.name}: ${error.message}`;
  return `thrown ${String(error)}`;
}

function outcome(fn: () => unknown): Outcome {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
}

/** An envelope as comparable data: every header and the payload (with its key order). */
function envelopeData(envelope: ToolEnvelope): unknown {
  return {
    wire: envelope.toWireObject(),
    keys: JSON.stringify(envelope.payload),
    frozen: Object.isFrozen(envelope),
  };
}

function assertSameOutcome(actual: Outcome, expected: Outcome, what: string): void {
  if (actual.ok !== expected.ok) {
    throw new AssertionError(
      `${what}: fast ${actual.ok ? "accepted" : `rejected (${actual.error})`}, generic ${
        expected.ok ? "accepted" : `rejected (${expected.error})`
      }`,
    );
  }
  if (!actual.ok || !expected.ok) {
    assertStrictEquals(
      (actual as { error: string }).error,
      (expected as { error: string }).error,
      what,
    );
    return;
  }
  assertEquals(
    envelopeData(actual.value as ToolEnvelope),
    envelopeData(expected.value as ToolEnvelope),
    what,
  );
}

interface DecodeOptions {
  readonly maxBytes?: number;
  readonly maxMessageBytes?: number;
  readonly maxPayloadJsonBytes?: number;
}

function genericDecode(bytes: Uint8Array, options: DecodeOptions = {}): ToolEnvelope {
  return toolMessageToEnvelope(decodeToolMessageIpc(bytes, options), options);
}

/** Decodes `bytes` both ways and checks the outcomes are the same; returns it. */
function assertSameDecode(bytes: Uint8Array, what: string, options: DecodeOptions = {}): Outcome {
  const fast = outcome(() => decodeToolEnvelopeIpc(bytes, options));
  const generic = outcome(() => genericDecode(bytes, options));
  assertSameOutcome(fast, generic, what);
  return fast;
}

/** Row 0 of every column as apache-arrow reads it (strings, bigints, nulls). */
const exactText = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Row 0 of every column as apache-arrow materialises it: strings decoded from its buffers exactly
 * (apache-arrow's own `get()` drops a leading U+FEFF), bigints, nulls.
 */
function cells(bytes: Uint8Array): unknown[] {
  const batch = decodeToolMessageIpc(bytes);
  return batch.schema.fields.map((_, i) => {
    const column = batch.getChildAt(i)!;
    if (column.get(0) === null) return null;
    if (i === 8) return column.get(0);
    const data = column.data[0];
    const offsets = data.valueOffsets as Int32Array;
    return exactText.decode((data.values as Uint8Array).subarray(offsets[0], offsets[1]));
  });
}

function schemaOf(bytes: Uint8Array): unknown {
  const batch = decodeToolMessageIpc(bytes);
  return batch.schema.fields.map((field) => [
    field.name,
    String(field.type),
    field.nullable,
    field.metadata.size,
  ]);
}

const EXPECTED_SCHEMA = TOOL_MESSAGE_SCHEMA.fields.map((field) => [
  field.name,
  String(field.type),
  field.nullable,
  0,
]);

// ---------------------------------------------------------------------------------------------
// Envelope -> IPC -> envelope, both ways, over every message type

const TYPES = [...TOOL_MESSAGE_TYPES].sort();
const counts = { envelopes: 0, mutations: 0, sizes: 0 };

function checkEnvelope(envelope: ToolEnvelope, what: string, maxMessageBytes?: number): void {
  const options = maxMessageBytes === undefined ? {} : { maxMessageBytes };
  const fastBytes = outcome(() => encodeToolEnvelopeIpc(envelope, options));
  const genericBytes = outcome(() =>
    encodeToolMessageIpc(toolEnvelopeToMessage(envelope, options))
  );
  assertStrictEquals(fastBytes.ok, genericBytes.ok, `${what}: encode outcome`);
  if (!fastBytes.ok || !genericBytes.ok) {
    assertStrictEquals(
      (fastBytes as { error: string }).error,
      (genericBytes as { error: string }).error,
      `${what}: encode error`,
    );
    return;
  }
  const fast = fastBytes.value as Uint8Array;
  const generic = genericBytes.value as Uint8Array;
  // apache-arrow reads the fast bytes to the values it wrote itself.
  assertEquals(schemaOf(fast), EXPECTED_SCHEMA, `${what}: schema`);
  assertEquals(cells(fast), cells(generic), `${what}: column values`);
  // Both decoders read both streams to the envelope.
  const expected = { ok: true, value: envelope } as const;
  assertSameOutcome(
    outcome(() => genericDecode(fast, options)),
    expected,
    `${what}: generic(fast)`,
  );
  assertSameOutcome(assertSameDecode(fast, `${what}: fast bytes`, options), expected, what);
  assertSameOutcome(assertSameDecode(generic, `${what}: arrow bytes`, options), expected, what);
  // The in-memory carrier size the binding checks is the one apache-arrow's batch has.
  for (const bytes of [fast, generic]) {
    const row = readToolMessageRow(bytes, checkToolMessageStream(bytes, bytes.length));
    assert(row !== undefined, `${what}: the fast path reads the stream`);
    assertStrictEquals(row.carrierSize, toolMessageCarrierSize(decodeToolMessageIpc(bytes)));
  }
  counts.envelopes++;
}

Deno.test("fast and generic codecs agree on thousands of envelopes of all 14 types", () => {
  const g = { rng: new SeededRandom(SEED), indexKeys: true };
  for (const messageType of TYPES) {
    for (let i = 0; i < PER_TYPE; i++) {
      const envelope = envelopeOf(g, messageType);
      validateMessageEnvelope(envelope);
      checkEnvelope(envelope, `${messageType} #${i}`);
    }
  }
  assert(counts.envelopes >= TYPES.length * PER_TYPE);
});

Deno.test("every nullable column is null somewhere, and non-ASCII is everywhere", () => {
  // What the generator covers, so the differential test above means what it says.
  const g = { rng: new SeededRandom(SEED), indexKeys: true };
  const nulls = new Set<string>();
  let nonAscii = 0;
  for (const messageType of TYPES) {
    for (let i = 0; i < 40; i++) {
      const envelope = envelopeOf(g, messageType);
      const values = cells(encodeToolEnvelopeIpc(envelope));
      values.forEach((value, column) => {
        if (value === null) nulls.add(TOOL_MESSAGE_SCHEMA.fields[column].name);
      });
      const text = JSON.stringify(values, (_, v) => typeof v === "bigint" ? 0 : v);
      if ([...text].some((c) => c.charCodeAt(0) >= 0x80)) {
        nonAscii++;
      }
    }
  }
  assertEquals(
    [...nulls].sort(),
    TOOL_MESSAGE_SCHEMA.fields.filter((field) => field.nullable).map((field) => field.name).sort(),
  );
  assert(nonAscii > 100);
});

Deno.test("payloads from tiny to past the limit: same bytes-to-values, same size errors", () => {
  const g = { rng: new SeededRandom(SEED + 1), indexKeys: true };
  const limit = 8192;
  for (const nonAscii of [false, true]) {
    for (let target = 0; target < limit + 256; target += nonAscii ? 61 : 37) {
      const envelope = sizedRequest(g, target, nonAscii);
      checkEnvelope(envelope, `sized ${target}`, limit);
      // Exactly at and one byte under the envelope's own size.
      const size = encodedEnvelopeSize(envelope);
      checkEnvelope(envelope, `sized ${target} at its size`, size);
      if (size > 1) checkEnvelope(envelope, `sized ${target} under its size`, size - 1);
      const bytes = encodeToolEnvelopeIpc(envelope);
      for (const maxMessageBytes of [size - 1, size]) {
        if (maxMessageBytes < 1) continue;
        assertSameDecode(bytes, `decode sized ${target} limit ${maxMessageBytes}`, {
          maxMessageBytes,
        });
      }
      for (const maxPayloadJsonBytes of [target, target + 40]) {
        if (maxPayloadJsonBytes < 1) continue;
        assertSameDecode(bytes, `decode sized ${target} payload ${maxPayloadJsonBytes}`, {
          maxPayloadJsonBytes,
        });
      }
      assertSameDecode(bytes, `decode sized ${target} stream limit`, { maxBytes: bytes.length });
      assertSameDecode(bytes, `decode sized ${target} stream limit - 1`, {
        maxBytes: bytes.length - 1,
      });
      counts.sizes++;
    }
  }
  // Near the default 1 MiB limit: exactly at it, and one byte past it.
  const mib = 1024 * 1024;
  const ctx = toolContext(g);
  const request = (n: number) =>
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: { text: "a".repeat(n) } }), ctx, {
      requestId: "near-limit",
      endpointInstanceId: undefined,
    });
  const n = mib - encodedEnvelopeSize(request(0));
  assertStrictEquals(encodedEnvelopeSize(request(n)), mib);
  checkEnvelope(request(n), "exactly 1 MiB");
  checkEnvelope(request(n + 1), "1 MiB + 1");
  assertThrows(() => encodeToolEnvelopeIpc(request(n + 1)), ToolProtocolError, "exceeds limit");
  assert(counts.sizes > 300);
});

Deno.test("the encoder's logical size is the Wire size, and its bytes round-trip through pyarrow's layout rules", () => {
  const g = { rng: new SeededRandom(SEED + 2), indexKeys: true };
  for (let i = 0; i < 300; i++) {
    const envelope = envelopeOf(g, g.rng.pick(TYPES));
    const size = encodedEnvelopeSize(envelope);
    encodeToolEnvelopeIpc(envelope, { maxMessageBytes: size });
    assertThrows(
      () => encodeToolEnvelopeIpc(envelope, { maxMessageBytes: size - 1 }),
      ToolProtocolError,
      `message size ${size} exceeds limit ${size - 1}`,
    );
    const bytes = encodeToolEnvelopeIpc(envelope);
    assertLayout(bytes);
  }
});

/** The documented layout: V5, 8-byte aligned messages and buffers, markers, EOS. */
function assertLayout(bytes: Uint8Array): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let position = 0;
  for (let message = 0; message < 2; message++) {
    assertStrictEquals(view.getInt32(position, true), -1, "continuation marker");
    const metadataLength = view.getInt32(position + 4, true);
    assertStrictEquals(metadataLength % 8, 0, "metadata length is a multiple of 8");
    const layout = checkToolMessageStream(bytes, bytes.length);
    assertStrictEquals(message === 0 ? layout.schemaVersion : layout.batchVersion, 4, "V5");
    position += 8 + metadataLength;
    if (message === 1) {
      assertStrictEquals(layout.bodyStart, position);
      assertStrictEquals(layout.bodyLength % 8, 0);
      for (let i = 0; i < layout.buffers.length; i += 2) {
        assertStrictEquals(layout.buffers[i] % 8, 0, "buffers are 8-byte aligned");
      }
      position += layout.bodyLength;
    }
  }
  assertEquals([...bytes.subarray(position)], [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0], "EOS");
}

// ---------------------------------------------------------------------------------------------
// Carrier rows that break the rules, written by apache-arrow

type Cell = Uint8Array | null;

function utf8Column(value: Cell): Data {
  return value === null
    ? makeData({
      type: new Utf8(),
      length: 1,
      nullCount: 1,
      nullBitmap: new Uint8Array([0]),
      valueOffsets: new Int32Array([0, 0]),
      data: new Uint8Array(0),
    })
    : makeData({
      type: new Utf8(),
      length: 1,
      nullCount: 0,
      valueOffsets: new Int32Array([0, value.length]),
      data: value,
    });
}

function int64Column(value: bigint | null): Data {
  return value === null
    ? makeData({
      type: new Int64(),
      length: 1,
      nullCount: 1,
      nullBitmap: new Uint8Array([0]),
      data: new BigInt64Array(1),
    })
    : makeData({ type: new Int64(), length: 1, nullCount: 0, data: new BigInt64Array([value]) });
}

function carrierBytes(row: readonly (Cell | bigint)[]): Uint8Array {
  const children = row.map((cell, i) =>
    i === 8 ? int64Column(cell as bigint | null) : utf8Column(cell as Cell)
  );
  const data = makeData({
    type: new Struct(TOOL_MESSAGE_SCHEMA.fields),
    length: 1,
    nullCount: 0,
    children,
  });
  return encodeToolMessageIpc(new RecordBatch(TOOL_MESSAGE_SCHEMA, data));
}

const BAD_UTF8 = [
  [0xff],
  [0xc0, 0x80],
  [0xed, 0xa0, 0x80],
  [0x61, 0xe6, 0x96],
  [0xef, 0xbb, 0xbf, 0x61],
].map((bytes) => new Uint8Array(bytes));

function deepJson(levels: number, empty: boolean): string {
  const inner = empty ? "[]" : "[1]";
  return `{"a":${"[".repeat(levels - 2)}${inner}${"]".repeat(levels - 2)}}`;
}

const PAYLOAD_TEXTS = [
  "{}",
  " { } ",
  '{"b":1,"a":[1,2,{"c":null}]}',
  '{\n  "a": "x",\n  "b": [true, false]\n}',
  '{"a":1,"a":2}',
  '{"a":NaN}',
  '{"a":Infinity}',
  '{"a":1e999}',
  '{"a":1e16}',
  '{"a":1E15,"b":-2.5e-3}',
  '{"a":12345678901234567.5}',
  '{"a":9007199254740991}',
  '{"a":9007199254740992}',
  '{"a":-0}',
  '{"a":-0.0}',
  '{"a":"\\ud800"}',
  '{"a":"\\ud83d\\ude00"}',
  '{"\\u0061":1}',
  '{"__proto__":{"x":1}}',
  "[]",
  "null",
  '"text"',
  "{",
  '{"a":1}x',
  "\ufeff{}",
  "",
  '{"a":"方块"}',
  deepJson(63, false),
  deepJson(64, false),
  deepJson(65, false),
  deepJson(65, true),
  deepJson(66, true),
  deepJson(66, false),
  `{"a":"${"x".repeat(300)}"}`,
];

function rawRow(g: Gen): (Cell | bigint)[] {
  const { rng } = g;
  const text = (value: string) => utf8.encode(value);
  const id = (): Cell => {
    const roll = rng.next();
    if (roll < 0.06) return null;
    if (roll < 0.1) return text(rng.pick(["", " ", "\t\n", "\u3000", "\u00a0"]));
    if (roll < 0.13) return rng.pick(BAD_UTF8);
    return text(idString(g));
  };
  const messageType = rng.bool(0.92)
    ? rng.pick(TYPES)
    : rng.pick(["tool.heartbeat", "", "TOOL.EVENT"]);
  const management = messageType.startsWith("endpoint.");
  const event = messageType === "tool.event";
  // Mostly a row that satisfies the header matrix, so later rules are reached too.
  const valid = rng.bool(0.6);
  const header = (present: boolean): Cell => valid ? (present ? text(idString(g)) : null) : id();
  const row: (Cell | bigint)[] = [
    rng.bool(0.95)
      ? text(TOOL_ENDPOINT_PROTOCOL)
      : rng.pick([null, text("forge.tool.endpoint/v1"), BAD_UTF8[0]]),
    rng.bool(0.97) ? text(messageType) : rng.pick([null, BAD_UTF8[2]]),
    header(!event && messageType !== "endpoint.status"),
    header(!management),
    header(!management),
    valid || rng.bool(0.8) ? text(idString(g)) : id(),
    valid && management ? text(idString(g)) : id(),
    header(!management),
    valid
      ? (event ? BigInt(rng.pick([0, MAX, rng.int(0, MAX)])) : null)
      : rng.pick([null, 0n, -1n, BigInt(MAX), BigInt(MAX) + 1n, -(2n ** 63n), 2n ** 63n - 1n]),
    rng.bool(0.03)
      ? null
      : rng.bool(0.04)
      ? rng.pick(BAD_UTF8)
      : rng.bool(0.5)
      ? text(rng.pick(PAYLOAD_TEXTS))
      : text(JSON.stringify(jsonObject(g))),
  ];
  return row;
}

Deno.test("carrier rows breaking every rule: the same envelope or the same error, in the same order", () => {
  const g = { rng: new SeededRandom(SEED + 3), indexKeys: true };
  let accepted = 0;
  for (let i = 0; i < RAW_ROWS; i++) {
    const bytes = carrierBytes(rawRow(g));
    const options: DecodeOptions = g.rng.bool(0.2)
      ? {
        maxMessageBytes: g.rng.int(100, 2000),
        maxPayloadJsonBytes: g.rng.bool() ? g.rng.int(1, 400) : undefined,
      }
      : {};
    if (assertSameDecode(bytes, `raw row #${i}`, options).ok) accepted++;
  }
  // Both accepted and rejected rows are well represented.
  assert(accepted > RAW_ROWS / 10 && accepted < RAW_ROWS * 0.9, `accepted ${accepted}`);
});

Deno.test("payload_json texts at every carrier rule, one by one", () => {
  const g = { rng: new SeededRandom(SEED + 4), indexKeys: true };
  const envelope = envelopeOf(g, "tool.invoke.request");
  const base = cells(encodeToolEnvelopeIpc(envelope)).map((value) =>
    typeof value === "string" ? utf8.encode(value) : value as bigint | null
  );
  for (const payload of [...PAYLOAD_TEXTS.map((text) => utf8.encode(text)), ...BAD_UTF8]) {
    const row = [...base];
    row[9] = payload;
    assertSameDecode(carrierBytes(row), `payload_json ${JSON.stringify(String(payload))}`);
  }
});

Deno.test("the strict decoder's fast path never adopts a number the size bound cannot cover", () => {
  // _carrier_rules.ts proves the compact encoding of an adopted payload no longer than
  // payload_json because the strict decoder's fast path sends every number with an exponent, or
  // with a fraction after 16 or more integer digits, to the exact path. Pin that contract here.
  for (const text of ['{"a":1e5}', '{"a":1E5}', '{"a":2.5e-3}', '{"a":12345678901234567.5}']) {
    assertStrictEquals(parseStrictJsonBytes(utf8.encode(text)).normalized, false, text);
  }
  // 15 integer digits and a fraction: binary64 may round such a value to an integer, so it
  // takes the exact path too (which marks integral floats); 14 digits and .5 stay fast.
  assertStrictEquals(
    parseStrictJsonBytes(utf8.encode('{"a":123456789012345.5}')).normalized,
    false,
  );
  assertStrictEquals(parseStrictJsonBytes(utf8.encode('{"a":12345678901234.5}')).normalized, true);
});

// ---------------------------------------------------------------------------------------------
// pyarrow-written streams

Deno.test("pyarrow fixtures decode the same way on both paths", async () => {
  const seen: string[] = [];
  for await (const entry of Deno.readDir(FIXTURES)) {
    if (!entry.name.endsWith(".arrows")) continue;
    const bytes = await Deno.readFile(new URL(entry.name, FIXTURES));
    const result = assertSameDecode(bytes, entry.name);
    seen.push(`${entry.name}:${result.ok ? "ok" : "rejected"}`);
    if (entry.name.startsWith("compressed") || entry.name.startsWith("dictionary")) {
      assert(!result.ok, `${entry.name} must be rejected`);
    }
  }
  seen.sort();
  assertEquals(seen, [
    "compressed_zstd.arrows:rejected",
    "dictionary_column.arrows:rejected",
    "event_max_sequence.arrows:ok",
    "event_sequence_0.arrows:ok",
    "invoke_null_instance.arrows:ok",
    "invoke_request.arrows:ok",
    "two_batches.arrows:rejected",
  ]);
});

const PYARROW = hasPyarrow();

// Reads streams (hex) and prints their rows; writes rows as streams with pyarrow's own writer.
const PYARROW_SCRIPT = `
import json, sys
import pyarrow as pa
job = json.load(open(sys.argv[1]))
schema = pa.schema([
    pa.field("protocol", pa.string(), nullable=False),
    pa.field("message_type", pa.string(), nullable=False),
    pa.field("request_id", pa.string(), nullable=True),
    pa.field("invocation_id", pa.string(), nullable=True),
    pa.field("attempt_id", pa.string(), nullable=True),
    pa.field("endpoint_id", pa.string(), nullable=False),
    pa.field("endpoint_instance_id", pa.string(), nullable=True),
    pa.field("operation", pa.string(), nullable=True),
    pa.field("sequence", pa.int64(), nullable=True),
    pa.field("payload_json", pa.string(), nullable=False),
])
read = []
for stream in job["read"]:
    table = pa.ipc.open_stream(bytes.fromhex(stream)).read_all()
    table.validate(full=True)
    assert table.schema.equals(schema), table.schema
    row = [table.column(i)[0].as_py() for i in range(table.num_columns)]
    row[8] = None if row[8] is None else str(row[8])
    read.append({"rows": table.num_rows, "row": row})
written = []
for row in job["write"]:
    row[8] = None if row[8] is None else int(row[8])
    batch = pa.RecordBatch.from_arrays(
        [pa.array([row[i]], type=schema.field(i).type) for i in range(len(schema))], schema=schema)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(batch)
    written.append(sink.getvalue().to_pybytes().hex())
json.dump({"read": read, "written": written, "version": pa.__version__}, sys.stdout)
`;

Deno.test({
  name: "pyarrow reads fast-encoded streams to the same values, and its streams decode the same",
  ignore: !PYARROW,
  fn: async () => {
    const g = { rng: new SeededRandom(SEED + 5), indexKeys: true };
    const envelopes: ToolEnvelope[] = [];
    for (const messageType of TYPES) {
      for (let i = 0; i < 12; i++) envelopes.push(envelopeOf(g, messageType));
    }
    envelopes.push(sizedRequest(g, 70_000, true));
    const streams = envelopes.map((envelope) => encodeToolEnvelopeIpc(envelope));
    const rows = streams.map((bytes) =>
      cells(bytes).map((value) => typeof value === "bigint" ? String(value) : value)
    );
    const job = await Deno.makeTempFile({ suffix: ".json" });
    try {
      await Deno.writeTextFile(job, JSON.stringify({ read: streams.map(hex), write: rows }));
      const output = await new Deno.Command("python3", { args: ["-c", PYARROW_SCRIPT, job] })
        .output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert(output.success, stderr);
      const result = JSON.parse(new TextDecoder().decode(output.stdout)) as {
        read: { rows: number; row: unknown[] }[];
        written: string[];
      };
      result.read.forEach((read, i) => {
        assertStrictEquals(read.rows, 1);
        assertEquals(read.row, rows[i], `pyarrow read of ${envelopes[i].messageType} #${i}`);
      });
      result.written.forEach((stream, i) => {
        const bytes = unhex(stream);
        const decoded = assertSameDecode(bytes, `pyarrow-written #${i}`);
        assertSameOutcome(decoded, { ok: true, value: envelopes[i] }, `pyarrow-written #${i}`);
      });
    } finally {
      await Deno.remove(job);
    }
  },
});

// ---------------------------------------------------------------------------------------------
// Mutated, truncated and extended streams

function smallStreams(): [string, Uint8Array][] {
  const g = { rng: new SeededRandom(SEED + 6), indexKeys: true };
  const event = makeEventEnvelope(
    new ToolEvent({ type: "progress", data: { f: 0.5, t: "方" } }),
    new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId: "i", attemptId: "a" }),
      toolId: "t",
      implementationId: "m",
      endpointId: "e",
      operation: "o",
    }),
    { sequence: 7, endpointInstanceId: undefined },
  );
  const unregister = makeUnregisterEnvelope({
    endpointId: "e",
    endpointInstanceId: "n",
    requestId: "r",
  });
  const invoke = envelopeOf(g, "tool.invoke.request");
  return [
    ["fast event", encodeToolEnvelopeIpc(event)],
    ["arrow event", encodeToolMessageIpc(toolEnvelopeToMessage(event))],
    ["fast unregister", encodeToolEnvelopeIpc(unregister)],
    ["arrow invoke", encodeToolMessageIpc(toolEnvelopeToMessage(invoke))],
  ];
}

Deno.test("a byte changed at every offset: the fast path rejects exactly when apache-arrow does", () => {
  for (const [name, stream] of smallStreams()) {
    for (let offset = 0; offset < stream.length; offset++) {
      const original = stream[offset];
      for (const value of [original ^ 0xff, original ^ 0x01, original ^ 0x80, 0, 0x7f]) {
        if (value === original) continue;
        const mutated = stream.slice();
        mutated[offset] = value;
        assertSameDecode(mutated, `${name}: byte ${offset} ${original} -> ${value}`);
        counts.mutations++;
      }
    }
  }
  assert(counts.mutations > 10_000, `${counts.mutations} mutations`);
});

Deno.test("truncation at every length and appended bytes are judged the same way", () => {
  let checked = 0;
  for (const [name, stream] of smallStreams()) {
    for (let length = 0; length < stream.length; length++) {
      assertSameDecode(stream.subarray(0, length), `${name}: truncated to ${length}`);
      checked++;
    }
    const withoutEos = stream.subarray(0, stream.length - 8);
    const suffixes = [
      [0],
      [0, 0, 0, 0],
      [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0],
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
      [...stream],
      [...stream.subarray(0, 300)],
    ];
    for (const [i, suffix] of suffixes.entries()) {
      for (const base of [stream, withoutEos]) {
        const extended = new Uint8Array([...base, ...suffix]);
        assertSameDecode(extended, `${name}: appended #${i} (${base.length})`);
        checked++;
      }
    }
    // An unaligned view of the same bytes reads the same.
    const shifted = new Uint8Array(stream.length + 3);
    shifted.set(stream, 3);
    assertSameDecode(shifted.subarray(3), `${name}: unaligned view`);
  }
  assert(checked > 1000);
});

Deno.test("variants apache-arrow reads differently take the generic path and agree", () => {
  const envelope = makeUnregisterEnvelope({
    endpointId: "e",
    endpointInstanceId: "n",
    requestId: "r",
  });
  const bytes = encodeToolEnvelopeIpc(envelope);
  // Misaligned offsets buffer: apache-arrow's Int32Array view throws; the fast path defers.
  const misaligned = bytes.slice();
  const buffersAt = buffersVector(misaligned);
  const view = new DataView(misaligned.buffer);
  view.setInt32(buffersAt + 16 * 1, view.getInt32(buffersAt + 16 * 1, true) + 2, true);
  assertStrictEquals(
    readToolMessageRow(misaligned, checkToolMessageStream(misaligned, 1e6)),
    undefined,
  );
  assertSameDecode(misaligned, "misaligned offsets");
  // apache-arrow's own writer in the pre-0.15 framing (no continuation markers).
  const batch = toolEnvelopeToMessage(envelope);
  const writer = new RecordBatchStreamWriter({ writeLegacyIpcFormat: true });
  writer.write(batch);
  writer.finish();
  const v4 = writer.toUint8Array(true);
  assertStrictEquals(new DataView(v4.buffer, v4.byteOffset).getInt32(0, true) > 0, true);
  assertSameOutcome(assertSameDecode(v4, "legacy writer"), { ok: true, value: envelope }, "v4");
  assert([...RecordBatchReader.from(v4)].length === 1);
});

/** The position in `bytes` of the record batch's first buffer entry. */
function buffersVector(bytes: Uint8Array): number {
  const layout = checkToolMessageStream(bytes, bytes.length);
  return layout.batch.base + layout.batch.vector(layout.batchTable, 2, 16).start;
}

// ---------------------------------------------------------------------------------------------
// The binding and the node

function handlerFor(semantics: "query" | "action") {
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "vision.yolo",
    operations: [
      semantics === "query"
        ? new ToolOperationDescriptor({ name: "detect", semantics })
        : new ToolOperationDescriptor({
          name: "detect",
          semantics,
          statusSupported: true,
          maxConcurrency: 4,
        }),
    ],
  });
  const operations = semantics === "query"
    ? {
      detect: {
        query: (request: ToolRequest) =>
          new ToolResult({ status: "succeeded", outputs: { echo: request.arguments } }),
      },
    }
    : {
      detect: {
        start: async (_r: ToolRequest, _c: ToolContext, events: ToolEventEmitter) => {
          await events.emit(new ToolEvent({ type: "progress", data: { step: 1 } }));
          setTimeout(() => {
            events.emit(new ToolEvent({ type: "progress", data: { step: 2 } })).catch(() => {});
          }, 0);
          return new ToolAccepted();
        },
        cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
        status: () => new ToolExecutionStatus({ phase: "running" }),
        result: () => new ToolResultResponse({ status: "pending" }),
      },
    };
  // Actions left running at close converge to unknown: expected here, not printed.
  return new ToolEndpointHandler(descriptor, {
    endpointInstanceId: "instance-1",
    logger: silentLogger,
    operations,
  });
}

function invokeFor(
  args: Record<string, unknown>,
  requestId = "request-1",
  endpointInstanceId = "instance-1",
): ToolEnvelope {
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: args }),
    new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId: `inv-${requestId}`, attemptId: "a" }),
      toolId: "forge.tool.detect",
      implementationId: "yolo",
      endpointId: "vision.yolo",
      operation: "detect",
    }),
    { requestId, endpointInstanceId },
  );
}

/** Dispatches `bytes` through dispatchIpc and through the generic path; both outcomes. */
async function bothDispatches(
  semantics: "query" | "action",
  bytes: Uint8Array,
  options: { maxMessageBytes?: number; maxCarrierBytes?: number } = {},
): Promise<[unknown, unknown]> {
  const run = async (fast: boolean) => {
    const published: unknown[] = [];
    const binding = new DoraToolEndpointBinding(handlerFor(semantics), {
      ...options,
      logger: () => {},
      eventSink: (batch) => void published.push(toolMessageToEnvelope(batch).toWireObject()),
      ipcEventSink: (out) => void published.push(decodeToolEnvelopeIpc(out).toWireObject()),
    });
    try {
      const returned = fast
        ? (await binding.dispatchIpc(bytes)).map((out) => decodeToolEnvelopeIpc(out))
        : (await binding.dispatchInput(
          decodeToolMessageIpc(bytes, { maxBytes: binding.maxCarrierBytes }),
        )).map((batch) => toolMessageToEnvelope(batch));
      await new Promise((resolve) => setTimeout(resolve, 5));
      await binding.handler.close({ graceMs: 100 });
      return { returned: returned.map((envelope) => envelope.toWireObject()), published };
    } catch (error) {
      return { error: describeError(error) };
    }
  };
  return [await run(true), await run(false)];
}

Deno.test("dispatchIpc answers exactly as decode + dispatchInput + encode", async () => {
  const invoke = invokeFor({ class: "cube", text: "方块" });
  const cases: [string, "query" | "action", Uint8Array, Record<string, number>][] = [
    ["query", "query", encodeToolEnvelopeIpc(invoke), {}],
    ["query, arrow-written", "query", encodeToolMessageIpc(toolEnvelopeToMessage(invoke)), {}],
    ["action with events", "action", encodeToolEnvelopeIpc(invoke), {}],
    [
      "too large for the request limit",
      "query",
      encodeToolEnvelopeIpc(invokeFor({ t: "x".repeat(900) })),
      {
        maxMessageBytes: 1024,
      },
    ],
    ["response too large", "query", encodeToolEnvelopeIpc(invokeFor({ t: "x".repeat(400) })), {
      maxMessageBytes: 1024,
    }],
    ["carrier too large", "query", encodeToolEnvelopeIpc(invoke), {
      maxMessageBytes: 1024,
      maxCarrierBytes: 1024,
    }],
    ["stream too large", "query", encodeToolEnvelopeIpc(invokeFor({ t: "y".repeat(2000) })), {
      maxMessageBytes: 1024,
      maxCarrierBytes: 1500,
    }],
    ["another route", "query", encodeToolEnvelopeIpc(invokeFor({}, "r", "instance-2")), {}],
    [
      "not an execution request",
      "query",
      encodeToolEnvelopeIpc(makeUnregisterEnvelope({
        endpointId: "vision.yolo",
        endpointInstanceId: "instance-1",
        requestId: "r",
      })),
      {},
    ],
    ["truncated", "query", encodeToolEnvelopeIpc(invoke).subarray(0, 700), {}],
  ];
  for (const [name, semantics, bytes, options] of cases) {
    const [fast, generic] = await bothDispatches(semantics, bytes, options);
    assertEquals(fast, generic, name);
  }
  const mutated = encodeToolEnvelopeIpc(invoke);
  for (let offset = 0; offset < mutated.length; offset += 7) {
    const copy = mutated.slice();
    copy[offset] ^= 0x5a;
    const [fast, generic] = await bothDispatches("query", copy);
    assertEquals(fast, generic, `mutated at ${offset}`);
  }
});

Deno.test("dispatchIpc refuses non-bytes, and an Action needs ipcEventSink", async () => {
  const binding = new DoraToolEndpointBinding(handlerFor("action"), {
    eventSink: () => {},
    logger: () => {},
  });
  let error: unknown;
  try {
    await binding.dispatchIpc({} as never);
  } catch (caught) {
    error = caught;
  }
  assert(error instanceof TypeError);
  assertStrictEquals(error.message, "dispatchIpc expects IPC bytes (a Uint8Array or ArrayBuffer)");
  error = undefined;
  try {
    await binding.dispatchIpc(encodeToolEnvelopeIpc(invokeFor({})));
  } catch (caught) {
    error = caught;
  }
  assert(error instanceof Error);
  assertStrictEquals(
    error.message,
    "Action or Session dispatch requires an asynchronous event_sink publisher",
  );
  assertThrows(
    () => new DoraToolEndpointBinding(handlerFor("query"), { ipcEventSink: 1 as never }),
    TypeError,
    "Cannot create a DoraToolEndpointBinding as 'ipcEventSink' must be a function: current value " +
      "is 1",
  );
  await binding.handler.close({ graceMs: 10 });
});

async function serveOnce(codec: "fast" | "generic", requests: Uint8Array[]): Promise<unknown[]> {
  const flow = new LoopbackDataflow();
  const served = serveToolEndpoint(handlerFor("action"), {
    transport: flow.transport,
    codec,
    logger: () => {},
  });
  for (const request of requests) await flow.request(request);
  const outputs: string[] = [];
  // Each invoke publishes its response and two events; the bad bytes get nothing.
  for (let i = 0; i < 6; i++) {
    const output = await flow.nextOutput();
    const envelope = decodeToolEnvelopeIpc(output!.data);
    outputs.push(JSON.stringify(envelope.toWireObject()));
  }
  await flow.stop();
  await served;
  // Per invocation: the response first, then the events in sequence order.
  for (const requestId of ["request-1", "request-2"]) {
    const own = outputs.map((text) => JSON.parse(text)).filter((wire) =>
      wire.invocation_id === `inv-${requestId}`
    );
    assertEquals(own.map((wire) => wire.message_type), [
      "tool.invoke.response",
      "tool.event",
      "tool.event",
    ]);
    assertEquals(own.slice(1).map((wire) => wire.sequence), [0, 1]);
  }
  return outputs.sort();
}

Deno.test("serveToolEndpoint publishes the same messages with the fast and the generic codec", async () => {
  const requests = [
    encodeToolEnvelopeIpc(invokeFor({ n: 1 }, "request-1")),
    new Uint8Array([1, 2, 3]), // bad bytes: no answer, the node keeps serving
    encodeToolMessageIpc(toolEnvelopeToMessage(invokeFor({ n: 2 }, "request-2"))),
  ];
  const fast = await serveOnce("fast", requests);
  const generic = await serveOnce("generic", requests);
  assertEquals(fast, generic);
  assertStrictEquals(fast.length, 6);
  assertThrows(
    () =>
      serveToolEndpoint(handlerFor("query"), {
        transport: new LoopbackDataflow().transport,
        codec: "x" as never,
      }),
    RangeError,
  );
});

Deno.test("options and arguments fail as the generic path does", () => {
  const bytes = encodeToolEnvelopeIpc(makeUnregisterEnvelope({
    endpointId: "e",
    endpointInstanceId: "n",
    requestId: "r",
  }));
  for (const options of [{ maxBytes: 0 }, { maxMessageBytes: 1.5 }, { maxPayloadJsonBytes: -1 }]) {
    assertSameDecode(bytes, JSON.stringify(options), options as DecodeOptions);
    assertSameDecode(
      bytes.subarray(0, 10),
      `truncated ${JSON.stringify(options)}`,
      options as DecodeOptions,
    );
  }
  assertThrows(
    () => decodeToolEnvelopeIpc("x" as never),
    TypeError,
    "decodeToolEnvelopeIpc expects IPC bytes",
  );
  assertThrows(
    () => encodeToolEnvelopeIpc({} as never),
    TypeError,
    "envelope must be a ToolEnvelope",
  );
  assertThrows(
    () =>
      encodeToolEnvelopeIpc(
        makeUnregisterEnvelope({ endpointId: "e", endpointInstanceId: "n", requestId: "r" }),
        { maxMessageBytes: 0 },
      ),
    RangeError,
    "Cannot encode a ToolEnvelope as IPC as 'maxMessageBytes' must be a positive integer: " +
      "current value is 0",
  );
  // An ArrayBuffer and other views are read like a Uint8Array.
  assertSameOutcome(
    outcome(() => decodeToolEnvelopeIpc(bytes.slice().buffer)),
    outcome(() => genericDecode(bytes)),
    "ArrayBuffer",
  );
});

Deno.test("fast IPC decode: the payload is deeply frozen, on the fast path and on the exact path", () => {
  // Regression: payload_json's fast-path parse was adopted as JSON.parse built it, mutable.
  const unfrozen = (value: unknown, path = "payload"): string[] => {
    if (typeof value !== "object" || value === null) return [];
    const out = Object.isFrozen(value) ? [] : [path];
    for (const [key, item] of Object.entries(value)) out.push(...unfrozen(item, `${path}.${key}`));
    return out;
  };
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId: "i-1", attemptId: "a-1" }),
    toolId: "forge.tool.detect",
    implementationId: "yolo",
    endpointId: "vision.yolo",
    operation: "detect",
    metadata: { trace: { id: "t" } },
  });
  // 0.5 keeps the fast path; 1.5e-7 (written with an exponent) takes the exact one.
  for (const score of [0.5, 1.5e-7]) {
    const envelope = makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: { classes: ["cube", { shape: [1, 2] }], score } }),
      context,
      { requestId: "r-1", endpointInstanceId: "instance-1" },
    );
    const decoded = decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(envelope));
    assertEquals(decoded.payload, envelope.payload);
    assertEquals(unfrozen(decoded.payload), [], String(score));
    assertThrows(() => {
      (decoded.payload.arguments as Record<string, unknown>).score = 0;
    }, TypeError);
  }
});

Deno.test("header values with a non-ASCII character at every position of the writer's steps", () => {
  // The writer copies ASCII four units a step and hands a value with any other unit to the
  // encoder: a character past 0x7F at each offset of each step, and a surrogate pair, of values
  // 1 to 11 units long, reach apache-arrow as the same bytes and decode to the same envelope.
  let checked = 0;
  for (const special of ["é", "\u0800", "\u{1f916}"]) {
    for (let length = 1; length <= 11; length++) {
      for (let at = 0; at + special.length <= length; at++) {
        const value = "r".repeat(at) + special + "s".repeat(length - at - special.length);
        const context = new ToolContext({
          executionKey: new ToolExecutionKey({ invocationId: `i${value}`, attemptId: value }),
          toolId: "forge.tool.detect",
          implementationId: "yolo",
          endpointId: value,
          operation: `op${value}`,
        });
        const envelope = makeInvokeRequestEnvelope(
          new ToolRequest({ arguments: {} }),
          context,
          { requestId: value, endpointInstanceId: `x${value}` },
        );
        checkEnvelope(envelope, JSON.stringify(value));
        checked++;
      }
    }
  }
  assertStrictEquals(checked, 2 * 66 + 55);
});

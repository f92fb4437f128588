// The ToolMessage Arrow carrier and its IPC framing: the reference's carrier tests
// (forge_msgs test_tool_message.py, adapted to E4: no heartbeat, nullable endpoint_instance_id),
// exact-schema variants, pyarrow-written streams, and bounded decoding of bad bytes.
import {
  assert,
  assertEquals,
  assertInstanceOf,
  assertStrictEquals,
  assertThrows,
  fail,
} from "@std/assert";
import {
  type Data,
  Dictionary,
  Field,
  Int32,
  Int64,
  LargeUtf8,
  makeData,
  makeVector,
  RecordBatch,
  RecordBatchFileWriter,
  RecordBatchReader,
  RecordBatchStreamWriter,
  Schema,
  Struct,
  Table,
  tableToIPC,
  Utf8,
  Utf8View,
  vectorFromArray,
} from "apache-arrow";
import { ToolEvent, ToolRequest } from "../../mod.ts";
import {
  encodeEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeUnregisterEnvelope,
  ToolEnvelope,
  ToolProtocolError,
  validateMessageEnvelope,
} from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  decodeToolMessageIpc,
  encodeToolMessageIpc,
  TOOL_MESSAGE_SCHEMA,
  toolEnvelopeToMessage,
  toolMessageCarrierSize,
  toolMessageToEnvelope,
} from "../../dora.ts";
import { CARRIER_COLUMN } from "../../src/dora/_carrier_rules.ts";
import { assertProtocolError, CODES, context, MAX, PROTOCOL, text } from "../_helpers.ts";
import { SeededRandom } from "../_gen.ts";

// ---------------------------------------------------------------------------------------------
// Fixtures

const INVOKE_PAYLOAD_JSON =
  '{"arguments":{"class":"cube"},"context":{"implementation_id":"yolo","metadata":{},"tool_id":"forge.tool.detect"}}';

/** The reference's `_request()`: an invoke for vision.yolo/detect on instance-1. */
function invokeRequest(
  args: Record<string, unknown> = { class: "cube" },
  options: { requestId?: string; endpointInstanceId?: string | null } = {},
): ToolEnvelope {
  return makeInvokeRequestEnvelope(new ToolRequest({ arguments: args }), context(), {
    requestId: options.requestId ?? "request-1",
    endpointInstanceId: options.endpointInstanceId === null
      ? undefined
      : options.endpointInstanceId ?? "instance-1",
  });
}

function progressEvent(sequence = 0): ToolEnvelope {
  return makeEventEnvelope(
    new ToolEvent({ type: "progress", data: { fraction: 0.5 } }),
    context(),
    { endpointInstanceId: "instance-1", sequence },
  );
}

type Cell = string | bigint | null;

const INVOKE_ROW: Readonly<Record<string, Cell>> = Object.freeze({
  protocol: PROTOCOL,
  message_type: "tool.invoke.request",
  request_id: "request-1",
  invocation_id: "invocation-1",
  attempt_id: "attempt-1",
  endpoint_id: "vision.yolo",
  endpoint_instance_id: "instance-1",
  operation: "detect",
  sequence: null,
  payload_json: INVOKE_PAYLOAD_JSON,
});

const EVENT_ROW: Readonly<Record<string, Cell>> = Object.freeze({
  ...INVOKE_ROW,
  message_type: "tool.event",
  request_id: null,
  sequence: 0n,
  payload_json: '{"data":{"fraction":0.5},"type":"progress"}',
});

const UNREGISTER_ROW: Readonly<Record<string, Cell>> = Object.freeze({
  ...INVOKE_ROW,
  message_type: "endpoint.unregister",
  request_id: "unregister-1",
  invocation_id: null,
  attempt_id: null,
  operation: null,
  payload_json: "{}",
});

function column(field: Field, value: Cell): Data {
  const converted = typeof value === "bigint" && field.type instanceof Int32
    ? Number(value)
    : value;
  return vectorFromArray([converted] as unknown[], field.type).data[0];
}

function batchOf(fields: readonly Field[], columns: readonly Data[], rows = 1): RecordBatch {
  const data = makeData({
    type: new Struct([...fields]),
    length: rows,
    nullCount: 0,
    children: [...columns],
  });
  return new RecordBatch(new Schema([...fields]), data);
}

/**
 * A carrier built column by column with apache-arrow (no validation on the way), so tests can
 * write rows and schemas the carrier must refuse.
 */
function carrier(
  changes: Partial<Record<string, Cell>> = {},
  fields: readonly Field[] = TOOL_MESSAGE_SCHEMA.fields,
  base: Readonly<Record<string, Cell>> = INVOKE_ROW,
): RecordBatch {
  const row = { ...base, ...changes };
  return batchOf(fields, fields.map((field) => column(field, row[field.name] ?? null)));
}

/** The carrier schema with field `index` replaced. */
function withField(index: number, field: Field): Field[] {
  const fields = [...TOOL_MESSAGE_SCHEMA.fields];
  fields[index] = field;
  return fields;
}

/** A Utf8 column holding raw bytes (possibly not UTF-8). */
function rawUtf8(bytes: Uint8Array): Data {
  return makeData({
    type: new Utf8(),
    length: 1,
    nullCount: 0,
    valueOffsets: new Int32Array([0, bytes.length]),
    data: bytes,
  });
}

function fixture(name: string): Promise<Uint8Array> {
  return Deno.readFile(new URL(`../fixtures/pyarrow/${name}.arrows`, import.meta.url));
}

/** Runs `fn`; it may return, or throw a ToolProtocolError, and nothing else. */
function onlyProtocolErrors(fn: () => unknown, label: string): boolean {
  try {
    fn();
    return true;
  } catch (error) {
    if (!(error instanceof ToolProtocolError)) {
      fail(`${label}: expected a ToolProtocolError, got ${error}`);
    }
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Schema and conversion (V4 1-3)

Deno.test("TOOL_MESSAGE_SCHEMA has the ten columns of tool.v1.yaml and is frozen", () => {
  assertEquals(
    TOOL_MESSAGE_SCHEMA.fields.map((field) => [field.name, String(field.type), field.nullable]),
    [
      ["protocol", "Utf8", false],
      ["message_type", "Utf8", false],
      ["request_id", "Utf8", true],
      ["invocation_id", "Utf8", true],
      ["attempt_id", "Utf8", true],
      ["endpoint_id", "Utf8", false],
      ["endpoint_instance_id", "Utf8", true],
      ["operation", "Utf8", true],
      ["sequence", "Int64", true],
      ["payload_json", "Utf8", false],
    ],
  );
  assert(Object.isFrozen(TOOL_MESSAGE_SCHEMA));
  assert(Object.isFrozen(TOOL_MESSAGE_SCHEMA.fields));
  assert(TOOL_MESSAGE_SCHEMA.fields.every((field) => Object.isFrozen(field)));
});

Deno.test("the carrier rules' column index table names the columns of TOOL_MESSAGE_SCHEMA", () => {
  // The rules declare the indices by name (no import of the schema): pin them to its order.
  assertEquals(
    Object.entries(CARRIER_COLUMN),
    TOOL_MESSAGE_SCHEMA.fields.map((field, index) => [field.name, index]),
  );
});

Deno.test("carrier round trips a RecordBatch, a single-batch Table and IPC bytes", () => {
  for (
    const envelope of [
      invokeRequest(),
      progressEvent(),
      invokeRequest({}, { requestId: "unresolved-1", endpointInstanceId: null }),
      makeUnregisterEnvelope({
        endpointId: "vision.yolo",
        endpointInstanceId: "instance-1",
        requestId: "unregister-1",
      }),
    ]
  ) {
    const batch = toolEnvelopeToMessage(envelope);
    assertEquals(batch.schema.fields, TOOL_MESSAGE_SCHEMA.fields);
    assertStrictEquals(batch.numRows, 1);
    assertEquals(toolMessageToEnvelope(batch), envelope);
    assertEquals(toolMessageToEnvelope(new Table(batch)), envelope);
    assertEquals(
      toolMessageToEnvelope(decodeToolMessageIpc(encodeToolMessageIpc(batch))),
      envelope,
    );
  }
});

Deno.test("carrier round trips a Struct vector and Struct data built from the batch", () => {
  const envelope = invokeRequest();
  const batch = toolEnvelopeToMessage(envelope);
  const struct = makeData({
    type: new Struct(batch.schema.fields),
    length: 1,
    nullCount: 0,
    children: batch.data.children,
  });
  assertEquals(toolMessageToEnvelope(makeVector(struct)), envelope);
  assertEquals(toolMessageToEnvelope(struct), envelope);
  assertEquals(toolMessageToEnvelope(makeVector(batch.data)), envelope);
});

Deno.test("payload_json is compact, sorted by key and raw UTF-8", () => {
  const envelope = new ToolEnvelope({
    messageType: "tool.event",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
    operation: "detect",
    sequence: 3,
    payload: { type: "progress", data: { z: 1, text: "方块", a: [] } },
  });
  const batch = toolEnvelopeToMessage(envelope);
  assertStrictEquals(
    batch.getChild("payload_json")?.get(0),
    '{"data":{"a":[],"text":"方块","z":1},"type":"progress"}',
  );
  assertStrictEquals(batch.getChild("sequence")?.get(0), 3n);
  assertStrictEquals(batch.getChild("request_id")?.get(0), null);
  // The column holds exactly the payload text of the Wire encoding.
  const wire = text(encodeEnvelope(envelope));
  assert(wire.includes(`"payload":${batch.getChild("payload_json")?.get(0)},`));
  assertEquals(toolMessageToEnvelope(batch).payload, {
    type: "progress",
    data: { a: [], text: "方块", z: 1 },
  }); // With a request id and no sequence after the payload, too.
  const invoke = toolEnvelopeToMessage(invokeRequest({ class: "方块" }));
  const invokeJson = invoke.getChild("payload_json")?.get(0) as string;
  assertStrictEquals(
    invokeJson,
    '{"arguments":{"class":"方块"},"context":{"implementation_id":"yolo","metadata":{},"tool_id":"forge.tool.detect"}}',
  );
  assert(
    text(encodeEnvelope(invokeRequest({ class: "方块" }))).includes(
      `"payload":${invokeJson},"protocol"`,
    ),
  );
});

// ---------------------------------------------------------------------------------------------
// Carrier rules (V4 4-6)

Deno.test("management and event header rules of the carrier", () => {
  const M = CODES.INVALID_MESSAGE;
  assertProtocolError(
    () => toolMessageToEnvelope(carrier({ invocation_id: "i" }, undefined, UNREGISTER_ROW)),
    M,
    {
      path: "invocation_id",
      message: "invocation_id must be null for endpoint management messages",
    },
  );
  for (
    const [name, changes] of [["attempt_id", { attempt_id: "a" }], ["operation", {
      operation: "o",
    }], ["sequence", { sequence: 0n }]] as const
  ) {
    assertProtocolError(
      () => toolMessageToEnvelope(carrier(changes, undefined, UNREGISTER_ROW)),
      M,
      {
        path: name,
        message: `${name} must be null for endpoint management messages`,
      },
    );
  }
  for (
    const messageType of ["endpoint.register", "endpoint.unregister", "endpoint.registry.response"]
  ) {
    assertProtocolError(
      () =>
        toolMessageToEnvelope(
          carrier({ message_type: messageType, request_id: null }, undefined, UNREGISTER_ROW),
        ),
      M,
      {
        path: "request_id",
        message: "request_id must be non-null for endpoint management exchanges",
      },
    );
  }
  assertProtocolError(
    () => toolMessageToEnvelope(carrier({ endpoint_instance_id: null }, undefined, UNREGISTER_ROW)),
    M,
    {
      path: "endpoint_instance_id",
      message: "endpoint_instance_id must be non-null for endpoint management messages",
    },
  );
  // Unsolicited endpoint.status: no request id; round trips (its typed payload is not checked).
  const status = toolMessageToEnvelope(
    carrier({ message_type: "endpoint.status", request_id: null }, undefined, UNREGISTER_ROW),
  );
  assertStrictEquals(status.messageType, "endpoint.status");
  assertStrictEquals(status.requestId, undefined);
  assertProtocolError(
    () =>
      toolMessageToEnvelope(
        carrier({ message_type: "endpoint.status" }, undefined, UNREGISTER_ROW),
      ),
    M,
    { path: "request_id", message: "request_id must be null for unsolicited endpoint.status" },
  );
  assertProtocolError(
    () => toolMessageToEnvelope(carrier({ sequence: null }, undefined, EVENT_ROW)),
    M,
    {
      path: "sequence",
      message: "sequence must be non-null for tool.event",
    },
  );
  assertProtocolError(
    () => toolMessageToEnvelope(carrier({ request_id: "r" }, undefined, EVENT_ROW)),
    M,
    {
      path: "request_id",
      message: "request_id must be null for tool.event",
    },
  );
  assertProtocolError(() => toolMessageToEnvelope(carrier({ request_id: null })), M, {
    path: "request_id",
    message: "request_id must be non-null for non-event Tool execution messages",
  });
  // E4: a Tool execution message may omit the instance (pre-routing form).
  const unresolved = toolMessageToEnvelope(carrier({ endpoint_instance_id: null }));
  assertStrictEquals(unresolved.endpointInstanceId, undefined);
});

Deno.test("identity, sequence and protocol rules of the carrier", () => {
  const M = CODES.INVALID_MESSAGE;
  for (const value of ["", "\u00a0", " \t", "\u3000"]) {
    assertProtocolError(() => toolMessageToEnvelope(carrier({ endpoint_id: value })), M, {
      path: "endpoint_id",
      message: "endpoint_id must be non-empty when present",
    });
    assertProtocolError(() => toolMessageToEnvelope(carrier({ operation: value })), M, {
      path: "operation",
      message: "operation must be non-empty when present",
    });
  }
  // U+FEFF and U+200B are not blank.
  assertStrictEquals(toolMessageToEnvelope(carrier({ request_id: "\ufeff" })).requestId, "\ufeff");
  for (const name of ["invocation_id", "attempt_id", "operation"]) {
    assertProtocolError(() => toolMessageToEnvelope(carrier({ [name]: null })), M, {
      path: name,
      message: `${name} must be non-null for Tool execution messages`,
    });
  }
  assertProtocolError(() => toolMessageToEnvelope(carrier({ sequence: 0n })), M, {
    path: "sequence",
    message: "sequence must be null for non-event messages",
  });
  for (const sequence of [BigInt(MAX) + 1n, -1n, -(2n ** 63n)]) {
    assertProtocolError(
      () => toolMessageToEnvelope(carrier({ sequence }, undefined, EVENT_ROW)),
      M,
      {
        path: "sequence",
        message: `sequence must be in [0, ${MAX}]`,
      },
    );
  }
  const last = toolMessageToEnvelope(carrier({ sequence: BigInt(MAX) }, undefined, EVENT_ROW));
  assertStrictEquals(last.sequence, MAX);
  assertProtocolError(
    () => toolMessageToEnvelope(carrier({ protocol: "forge.tool.endpoint/v1" })),
    CODES.UNSUPPORTED_VERSION,
    { path: "protocol", message: `protocol must equal '${PROTOCOL}'` },
  );
  assertProtocolError(
    () =>
      toolMessageToEnvelope(
        carrier({ message_type: "endpoint.heartbeat" }, undefined, UNREGISTER_ROW),
      ),
    CODES.UNKNOWN_MESSAGE_TYPE,
    {
      path: "message_type",
      message: "message_type must be one of the v1alpha1 message types, found 'endpoint.heartbeat'",
    },
  );
});

Deno.test("payload_json must be a strict JSON object", () => {
  const cases: [string, string, string][] = [
    ["[]", CODES.INVALID_PAYLOAD, "payload_json must be a JSON object"],
    ["not-json", CODES.INVALID_JSON, "payload_json must be valid strict JSON: Expecting value"],
    ['{"value":NaN}', CODES.INVALID_JSON, "non-finite JSON number is not allowed: NaN"],
    [
      '{"value":1e999}',
      CODES.INVALID_PAYLOAD,
      "payload_json.value floating-point values must be finite",
    ],
    [`{"value":${MAX + 1}}`, CODES.INVALID_JSON, "integer exceeds interoperable range"],
    ['{"a":1,"a":2}', CODES.DUPLICATE_KEY, "duplicate JSON object key: 'a'"],
    [
      '{"\\ud800":1}',
      CODES.INVALID_PAYLOAD,
      "payload_json object keys must contain only valid Unicode",
    ],
    ['{"a":"\\udc00"}', CODES.INVALID_PAYLOAD, "payload_json.a must contain only valid Unicode"],
    ["\ufeff{}", CODES.INVALID_JSON, "payload_json must be valid strict JSON"],
    ["{} x", CODES.INVALID_JSON, "Extra data: line 1 column 4"],
    ["", CODES.INVALID_JSON, "payload_json must be valid strict JSON"],
  ];
  for (const [payload, code, includes] of cases) {
    const error = assertProtocolError(
      () => toolMessageToEnvelope(carrier({ payload_json: payload })),
      code,
      { path: "payload_json", includes },
    );
    assert(error.message.startsWith("payload_json"), error.message);
  }
});

Deno.test("payload_json nesting is bounded at depth 64, on both parse paths", () => {
  const nested = (depth: number) => {
    let value = "1";
    for (let i = 0; i < depth; i++) value = `[${value}]`;
    return value;
  };
  // The payload object is depth 0, "x" depth 1, so `nested(63)` puts the scalar at depth 64.
  const ok = toolMessageToEnvelope(carrier({ payload_json: `{"x":${nested(63)}}` }));
  assert(Array.isArray(ok.payload.x));
  for (const payload of [`{"x":${nested(64)}}`, `{"x":${nested(64)},"y":"\\u0041"}`]) {
    assertProtocolError(
      () => toolMessageToEnvelope(carrier({ payload_json: payload })),
      CODES.INVALID_PAYLOAD,
      {
        path: "payload_json",
        includes: "JSON nesting exceeds 64",
      },
    );
  }
  // Far deeper than any parser recursion: still only a ToolProtocolError.
  const deep = "[".repeat(200_000) + "]".repeat(200_000);
  assertThrows(
    () => toolMessageToEnvelope(carrier({ payload_json: `{"x":${deep}}` })),
    ToolProtocolError,
  );
});

Deno.test("a __proto__ key in payload_json stays plain data", () => {
  for (
    const payload of [
      '{"arguments":{"__proto__":{"polluted":true}},"context":{"implementation_id":"yolo","metadata":{},"tool_id":"t"}}',
      // An escaped key takes the exact parser.
      '{"arguments":{"\\u005f_proto__":{"polluted":true}},"context":{"implementation_id":"yolo","metadata":{},"tool_id":"t"}}',
    ]
  ) {
    const envelope = toolMessageToEnvelope(carrier({ payload_json: payload }));
    const args = envelope.payload.arguments as Record<string, unknown>;
    assert(Object.hasOwn(args, "__proto__"));
    assertStrictEquals(Object.getPrototypeOf(args), Object.prototype);
    assertEquals(Object.keys(args), ["__proto__"]);
    assertStrictEquals((args as { polluted?: unknown }).polluted, undefined);
    assertStrictEquals(({} as { polluted?: unknown }).polluted, undefined);
    // And it survives the way back.
    const again = toolMessageToEnvelope(toolEnvelopeToMessage(envelope));
    assert(Object.hasOwn(again.payload.arguments as object, "__proto__"));
  }
});

Deno.test("invalid UTF-8 and nulls in non-nullable columns are carrier violations", () => {
  const bad = new Uint8Array([0x66, 0xff, 0x6f]);
  const fields = TOOL_MESSAGE_SCHEMA.fields;
  const columns = fields.map((field) => column(field, INVOKE_ROW[field.name]));
  for (const [index, name] of [[2, "request_id"], [5, "endpoint_id"]] as const) {
    const broken = [...columns];
    broken[index] = rawUtf8(bad);
    assertProtocolError(
      () => toolMessageToEnvelope(batchOf(fields, broken)),
      CODES.INVALID_MESSAGE,
      {
        path: name,
        message: `${name} must contain valid Unicode scalar values`,
      },
    );
  }
  const brokenPayload = [...columns];
  brokenPayload[9] = rawUtf8(new Uint8Array([0x7b, 0xc0, 0x7d]));
  assertProtocolError(
    () => toolMessageToEnvelope(batchOf(fields, brokenPayload)),
    CODES.INVALID_JSON,
    {
      path: "payload_json",
      message: "payload_json must be valid UTF-8",
    },
  );
  // A non-nullable field whose data holds a null anyway.
  for (const name of ["protocol", "message_type", "endpoint_id", "payload_json"]) {
    assertProtocolError(
      () => toolMessageToEnvelope(carrier({ [name]: null })),
      CODES.INVALID_MESSAGE,
      {
        path: name,
        message: `${name} must be non-null`,
      },
    );
  }
});

Deno.test("toolMessageToEnvelope returns a frozen envelope decoded afresh each call", () => {
  const batch = toolEnvelopeToMessage(invokeRequest());
  const first = toolMessageToEnvelope(batch);
  const second = toolMessageToEnvelope(batch);
  assert(Object.isFrozen(first));
  assertThrows(() => {
    (first as { requestId: string }).requestId = "changed";
  }, TypeError);
  assertStrictEquals(first.requestId, "request-1");
  assert(first !== second && first.payload !== second.payload);
  assertEquals(first, second);
});

// ---------------------------------------------------------------------------------------------
// Shape and exact schema (V4 8-10 and variants)

Deno.test("a carrier must hold exactly one row", () => {
  const M = CODES.INVALID_MESSAGE;
  const one = "ToolMessage RecordBatch must contain exactly one row";
  const fields = TOOL_MESSAGE_SCHEMA.fields;
  const empty = batchOf(fields, fields.map((field) => vectorFromArray([], field.type).data[0]), 0);
  assertProtocolError(() => toolMessageToEnvelope(empty), M, { message: one });
  const rows = fields.map((field) =>
    vectorFromArray([INVOKE_ROW[field.name], INVOKE_ROW[field.name]] as unknown[], field.type)
      .data[0]
  );
  const twoRows = batchOf(fields, rows, 2);
  assertProtocolError(() => toolMessageToEnvelope(twoRows), M, { message: one });
  assertProtocolError(() => toolMessageToEnvelope(makeVector(twoRows.data)), M, { message: one });
  // A one-row slice of it is a carrier.
  assertEquals(toolMessageToEnvelope(twoRows.slice(1, 2)), invokeRequest());
});

Deno.test("a Table must hold exactly one RecordBatch", () => {
  const batch = toolEnvelopeToMessage(invokeRequest());
  const message = "ToolMessage Table must contain exactly one RecordBatch";
  assertProtocolError(
    () => toolMessageToEnvelope(new Table([batch, batch])),
    CODES.INVALID_MESSAGE,
    {
      message,
    },
  );
  assertProtocolError(
    () => toolMessageToEnvelope(new Table(TOOL_MESSAGE_SCHEMA)),
    CODES.INVALID_MESSAGE,
    {
      message,
    },
  );
});

Deno.test("the schema must match TOOL_MESSAGE_SCHEMA exactly", () => {
  const mismatch = "ToolMessage RecordBatch schema must exactly match TOOL_MESSAGE_SCHEMA";
  const fields = TOOL_MESSAGE_SCHEMA.fields;
  const variants: [string, Field[]][] = [
    ["LargeUtf8 payload_json", withField(9, new Field("payload_json", new LargeUtf8(), false))],
    ["Utf8View protocol", withField(0, new Field("protocol", new Utf8View(), false))],
    ["Int32 sequence", withField(8, new Field("sequence", new Int32(), true))],
    ["nullable protocol", withField(0, new Field("protocol", new Utf8(), true))],
    ["non-nullable request_id", withField(2, new Field("request_id", new Utf8(), false))],
    ["renamed column", withField(3, new Field("invocation", new Utf8(), true))],
    ["reordered columns", [fields[1], fields[0], ...fields.slice(2)]],
    ["missing column", fields.slice(0, 9)],
    ["extra column", [...fields, new Field("timestamp", new Int64(), true)]],
  ];
  for (const [label, variant] of variants) {
    const error = assertProtocolError(
      () => toolMessageToEnvelope(carrier({}, variant)),
      CODES.INVALID_MESSAGE,
      { message: mismatch },
    );
    assert(error, label);
  }
  // Dictionary-encoded message_type.
  const dictionaryType = new Dictionary(new Utf8(), new Int32());
  const dictionary = makeData({
    type: dictionaryType,
    length: 1,
    nullCount: 0,
    data: new Int32Array([0]),
    dictionary: vectorFromArray(["tool.invoke.request"], new Utf8()),
  });
  const dictionaryFields = withField(1, new Field("message_type", dictionaryType, false));
  const columns = dictionaryFields.map((field, i) =>
    i === 1 ? dictionary : column(field, INVOKE_ROW[field.name])
  );
  assertProtocolError(
    () => toolMessageToEnvelope(batchOf(dictionaryFields, columns)),
    CODES.INVALID_MESSAGE,
    {
      message: mismatch,
    },
  );
  // Metadata is ignored, on the schema and on fields.
  const tagged = fields.map((field) =>
    new Field(field.name, field.type, field.nullable, new Map([["k", "v"]]))
  );
  const withMetadata = new RecordBatch(
    new Schema(tagged, new Map([["origin", "test"]])),
    carrier({}, tagged).data,
  );
  assertEquals(toolMessageToEnvelope(withMetadata), invokeRequest());
});

Deno.test("column data that does not match its declared type is refused", () => {
  const fields = TOOL_MESSAGE_SCHEMA.fields;
  const columns = fields.map((field) => column(field, INVOKE_ROW[field.name]));
  // Schema says Utf8, the data is LargeUtf8.
  columns[9] = vectorFromArray([INVOKE_PAYLOAD_JSON], new LargeUtf8()).data[0];
  assertProtocolError(
    () => toolMessageToEnvelope(batchOf(fields, columns)),
    CODES.INVALID_MESSAGE,
    {
      message: "ToolMessage RecordBatch schema must exactly match TOOL_MESSAGE_SCHEMA",
    },
  );
});

Deno.test("maxPayloadJsonBytes counts raw bytes before parsing", () => {
  const padded = INVOKE_PAYLOAD_JSON + " ".repeat(128);
  const size = new TextEncoder().encode(padded).length;
  assertProtocolError(
    () => toolMessageToEnvelope(carrier({ payload_json: padded }), { maxPayloadJsonBytes: 64 }),
    CODES.MESSAGE_TOO_LARGE,
    { path: "payload_json", message: `payload_json size ${size} exceeds limit 64` },
  );
  // Even invalid JSON is refused by size first.
  assertProtocolError(
    () =>
      toolMessageToEnvelope(carrier({ payload_json: "x".repeat(65) }), { maxPayloadJsonBytes: 64 }),
    CODES.MESSAGE_TOO_LARGE,
  );
  // UTF-8 bytes, not UTF-16 units.
  const wide = `{"text":"${"方".repeat(20)}"}`; // 71 bytes, 31 UTF-16 units
  assertProtocolError(
    () =>
      toolMessageToEnvelope(carrier({ payload_json: wide }, undefined, UNREGISTER_ROW), {
        maxPayloadJsonBytes: 64,
      }),
    CODES.MESSAGE_TOO_LARGE,
    { message: "payload_json size 71 exceeds limit 64" },
  );
  assertEquals(
    toolMessageToEnvelope(carrier({ payload_json: padded }), { maxPayloadJsonBytes: size }),
    invokeRequest(),
  );
  for (const [bad, shown] of [[true, "true"], [0, "0"], [-1, "-1"], [1.5, "1.5"], ["64", '"64"']]) {
    assertThrows(
      () => toolMessageToEnvelope(carrier(), { maxPayloadJsonBytes: bad as unknown as number }),
      RangeError,
      "Cannot decode a ToolMessage as 'maxPayloadJsonBytes' must be a positive integer: " +
        `current value is ${shown}`,
    );
  }
});

Deno.test("the logical size limit applies after the carrier rules", () => {
  const batch = toolEnvelopeToMessage(invokeRequest());
  const size = encodeEnvelope(invokeRequest()).length;
  assertStrictEquals(size, 370);
  assertProtocolError(
    () => toolMessageToEnvelope(batch, { maxMessageBytes: 369 }),
    CODES.MESSAGE_TOO_LARGE,
    {
      message: "message size 370 exceeds limit 369",
    },
  );
  assertEquals(toolMessageToEnvelope(batch, { maxMessageBytes: 370 }), invokeRequest());
  // Whitespace in payload_json does not count: the logical size is the compact encoding.
  const padded = carrier({ payload_json: INVOKE_PAYLOAD_JSON + " ".repeat(500) });
  assertEquals(toolMessageToEnvelope(padded, { maxMessageBytes: 370 }), invokeRequest());
  assertThrows(
    () => toolMessageToEnvelope(batch, { maxMessageBytes: 0 }),
    RangeError,
    "Cannot decode a ToolMessage as 'maxMessageBytes' must be a positive integer: current value is 0",
  );
});

Deno.test("toolMessageToEnvelope refuses values that are not Arrow carriers", () => {
  const message = "toolMessageToEnvelope expects an arrow RecordBatch, Table, or Struct vector";
  const batch = toolEnvelopeToMessage(invokeRequest());
  for (
    const value of [
      {},
      null,
      undefined,
      "x",
      encodeToolMessageIpc(batch),
      batch.schema,
      batch.getChild("protocol"),
      batch.data.children[0],
    ]
  ) {
    assertThrows(() => toolMessageToEnvelope(value as never), TypeError, message);
  }
});

Deno.test("a null Struct row is refused", () => {
  const batch = toolEnvelopeToMessage(invokeRequest());
  const struct = makeData({
    type: new Struct(batch.schema.fields),
    length: 1,
    nullCount: 1,
    nullBitmap: new Uint8Array([0]),
    children: batch.data.children,
  });
  assertProtocolError(() => toolMessageToEnvelope(makeVector(struct)), CODES.INVALID_MESSAGE, {
    message: "ToolMessage Struct vector row must not be null",
  });
});

// ---------------------------------------------------------------------------------------------
// Envelope -> carrier

Deno.test("toolEnvelopeToMessage checks its argument, the limit, the typed payload, then size", () => {
  assertThrows(
    () => toolEnvelopeToMessage({} as never),
    TypeError,
    "envelope must be a ToolEnvelope",
  );
  for (const bad of [0, -1, true, 1.5]) {
    assertThrows(
      () => toolEnvelopeToMessage(invokeRequest(), { maxMessageBytes: bad as unknown as number }),
      RangeError,
      "Cannot convert a ToolEnvelope to a ToolMessage as 'maxMessageBytes' must be a positive " +
        `integer: current value is ${bad}`,
    );
  }
  // A typed-invalid payload is reported as such even when it is also too large.
  const invalid = new ToolEnvelope({
    messageType: "tool.invoke.response",
    requestId: "request-1",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
    operation: "detect",
    payload: { ["x".repeat(5000)]: true },
  });
  assertProtocolError(
    () => toolEnvelopeToMessage(invalid, { maxMessageBytes: 1024 }),
    CODES.INVALID_PAYLOAD,
  );
  assertProtocolError(
    () => toolEnvelopeToMessage(invokeRequest(), { maxMessageBytes: 369 }),
    CODES.MESSAGE_TOO_LARGE,
    {
      message: "message size 370 exceeds limit 369",
    },
  );
  assertStrictEquals(toolEnvelopeToMessage(invokeRequest(), { maxMessageBytes: 370 }).numRows, 1);
});

Deno.test("toolMessageCarrierSize sums every buffer behind the value", () => {
  const batch = toolEnvelopeToMessage(invokeRequest());
  let expected = 0;
  for (const child of batch.data.children) {
    for (const buffer of [child.valueOffsets, child.values, child.nullBitmap]) {
      expected += (buffer as ArrayBufferView | undefined)?.byteLength ?? 0;
    }
  }
  const size = toolMessageCarrierSize(batch);
  assertStrictEquals(size, expected);
  assert(size >= new TextEncoder().encode(INVOKE_PAYLOAD_JSON).length);
  assertStrictEquals(toolMessageCarrierSize(new Table(batch)), size);
  assertStrictEquals(toolMessageCarrierSize(makeVector(batch.data)), size);
  assertStrictEquals(toolMessageCarrierSize(batch.data), size);
  const padded = carrier({ payload_json: INVOKE_PAYLOAD_JSON + " ".repeat(2048) });
  assert(toolMessageCarrierSize(padded) > 2048);
  assertThrows(() => toolMessageCarrierSize({} as never), TypeError);
});

// ---------------------------------------------------------------------------------------------
// IPC

Deno.test("pyarrow-written streams decode to the expected envelopes", async () => {
  assertEquals(
    toolMessageToEnvelope(decodeToolMessageIpc(await fixture("invoke_request"))),
    invokeRequest(),
  );
  assertEquals(
    toolMessageToEnvelope(decodeToolMessageIpc(await fixture("event_sequence_0"))),
    progressEvent(),
  );
  assertEquals(
    toolMessageToEnvelope(decodeToolMessageIpc(await fixture("invoke_null_instance"))),
    invokeRequest({}, { requestId: "unresolved-1", endpointInstanceId: null }),
  );
  const last = toolMessageToEnvelope(decodeToolMessageIpc(await fixture("event_max_sequence")));
  assertStrictEquals(last.sequence, MAX);
  assertEquals(last.payload, { type: "progress", data: { label: "方块" } });
  // What we write, pyarrow wrote too: same schema bytes aside, the same batch.
  const ours = decodeToolMessageIpc(encodeToolMessageIpc(toolEnvelopeToMessage(invokeRequest())));
  const theirs = decodeToolMessageIpc(await fixture("invoke_request"));
  assertEquals(
    ours.toArray().map((row) => row.toJSON()),
    theirs.toArray().map((row) => row.toJSON()),
  );
});

Deno.test("pyarrow streams with two batches, compression or dictionaries are refused", async () => {
  const M = CODES.INVALID_MESSAGE;
  const twoBatches = await fixture("two_batches");
  assertProtocolError(() => decodeToolMessageIpc(twoBatches), M, {
    message: "ToolMessage IPC stream must contain exactly one RecordBatch",
  });
  const compressed = await fixture("compressed_zstd");
  assertProtocolError(() => decodeToolMessageIpc(compressed), M, {
    message: "ToolMessage IPC stream must not use body compression",
  });
  const dictionary = await fixture("dictionary_column");
  assertProtocolError(() => decodeToolMessageIpc(dictionary), M, {
    message: "ToolMessage IPC stream must not contain dictionary-encoded columns",
  });
});

Deno.test("IPC round trip against apache-arrow's own reader and writer", () => {
  const envelope = progressEvent(7);
  const batch = toolEnvelopeToMessage(envelope);
  const bytes = encodeToolMessageIpc(batch);
  // Schema, one batch, end-of-stream marker.
  assertEquals([...bytes.subarray(bytes.length - 8)], [255, 255, 255, 255, 0, 0, 0, 0]);
  const read = [...RecordBatchReader.from(bytes)];
  assertStrictEquals(read.length, 1);
  assertEquals(toolMessageToEnvelope(read[0]), envelope);
  // Streams apache-arrow writes decode too, with and without the end-of-stream marker.
  assertEquals(
    toolMessageToEnvelope(decodeToolMessageIpc(tableToIPC(new Table(batch), "stream"))),
    envelope,
  );
  assertEquals(
    toolMessageToEnvelope(
      decodeToolMessageIpc(RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true)),
    ),
    envelope,
  );
  assertEquals(
    toolMessageToEnvelope(decodeToolMessageIpc(bytes.subarray(0, bytes.length - 8))),
    envelope,
  );
  assertEquals(toolMessageToEnvelope(decodeToolMessageIpc(bytes.slice().buffer)), envelope);
});

Deno.test("IPC streams without exactly one batch, or in file format, are refused", () => {
  const M = CODES.INVALID_MESSAGE;
  const batch = toolEnvelopeToMessage(invokeRequest());
  assertProtocolError(
    () => decodeToolMessageIpc(tableToIPC(new Table([batch, batch]), "stream")),
    M,
    {
      message: "ToolMessage IPC stream must contain exactly one RecordBatch",
    },
  );
  assertProtocolError(
    () => decodeToolMessageIpc(tableToIPC(new Table(TOOL_MESSAGE_SCHEMA), "stream")),
    M,
    {
      message: "ToolMessage IPC stream must contain exactly one RecordBatch",
    },
  );
  assertProtocolError(() => decodeToolMessageIpc(new Uint8Array(0)), M, {
    message: "ToolMessage IPC stream must start with a schema",
  });
  assertProtocolError(
    () => decodeToolMessageIpc(new Uint8Array([255, 255, 255, 255, 0, 0, 0, 0])),
    M,
  );
  assertThrows(
    () => decodeToolMessageIpc(RecordBatchFileWriter.writeAll([batch]).toUint8Array(true)),
    ToolProtocolError,
  );
  // Bytes after the end-of-stream marker.
  const bytes = encodeToolMessageIpc(batch);
  const trailing = new Uint8Array(bytes.length + 3);
  trailing.set(bytes);
  assertProtocolError(() => decodeToolMessageIpc(trailing), M, { includes: "trailing bytes" });
  // A two-row batch is refused at the IPC layer already.
  const fields = TOOL_MESSAGE_SCHEMA.fields;
  const twoRows = batchOf(
    fields,
    fields.map((field) =>
      vectorFromArray([INVOKE_ROW[field.name], INVOKE_ROW[field.name]] as unknown[], field.type)
        .data[0]
    ),
    2,
  );
  assertProtocolError(() => decodeToolMessageIpc(tableToIPC(new Table(twoRows), "stream")), M, {
    message: "ToolMessage RecordBatch must contain exactly one row",
  });
});

Deno.test("IPC size is checked before anything is read", () => {
  const bytes = encodeToolMessageIpc(toolEnvelopeToMessage(invokeRequest()));
  assertProtocolError(
    () => decodeToolMessageIpc(bytes, { maxBytes: bytes.length - 1 }),
    CODES.MESSAGE_TOO_LARGE,
    {
      message: `IPC stream size ${bytes.length} exceeds limit ${bytes.length - 1}`,
    },
  );
  assertProtocolError(
    () => decodeToolMessageIpc(new Uint8Array(4096), { maxBytes: 1024 }),
    CODES.MESSAGE_TOO_LARGE,
  );
  assertEquals(
    toolMessageToEnvelope(decodeToolMessageIpc(bytes, { maxBytes: bytes.length })),
    invokeRequest(),
  );
  for (const bad of [0, -1, true, 2.5]) {
    assertThrows(
      () => decodeToolMessageIpc(bytes, { maxBytes: bad as unknown as number }),
      RangeError,
    );
  }
  assertThrows(() => decodeToolMessageIpc("bytes" as never), TypeError);
  assertThrows(
    () => decodeToolMessageIpc(toolEnvelopeToMessage(invokeRequest()) as never),
    TypeError,
  );
});

Deno.test("encodeToolMessageIpc writes only ToolMessage carriers", () => {
  assertThrows(() => encodeToolMessageIpc({} as never), TypeError);
  assertThrows(
    () => encodeToolMessageIpc(carrier({}, withField(8, new Field("sequence", new Int32(), true)))),
    RangeError,
  );
  const fields = TOOL_MESSAGE_SCHEMA.fields;
  const empty = batchOf(fields, fields.map((field) => vectorFromArray([], field.type).data[0]), 0);
  assertThrows(() => encodeToolMessageIpc(empty), RangeError);
});

Deno.test("truncated IPC streams fail only with ToolProtocolError", () => {
  const bytes = encodeToolMessageIpc(toolEnvelopeToMessage(invokeRequest()));
  let decoded = 0;
  for (let length = 0; length < bytes.length; length++) {
    const ok = onlyProtocolErrors(
      () => decodeToolMessageIpc(bytes.slice(0, length)),
      `prefix ${length}`,
    );
    if (ok) decoded++;
  }
  // Only the stream without its end-of-stream marker (or a partial marker) still decodes.
  assert(decoded <= 8, `decoded ${decoded} prefixes`);
});

Deno.test("corrupted IPC bytes fail only with ToolProtocolError, all the way to the envelope", async () => {
  const streams = [
    encodeToolMessageIpc(toolEnvelopeToMessage(invokeRequest())),
    encodeToolMessageIpc(toolEnvelopeToMessage(progressEvent())),
    await fixture("invoke_null_instance"),
  ];
  let survived = 0;
  for (const bytes of streams) {
    for (let i = 0; i < bytes.length; i++) {
      for (const mask of [0x01, 0x80, 0xff]) {
        const mutated = bytes.slice();
        mutated[i] ^= mask;
        const label = `byte ${i} ^ ${mask}`;
        onlyProtocolErrors(() => {
          const batch = decodeToolMessageIpc(mutated);
          survived++;
          toolMessageToEnvelope(batch);
        }, label);
      }
    }
  }
  assert(survived > 0);
});

Deno.test("random bytes fail only with ToolProtocolError", () => {
  const rng = new SeededRandom(0x5eed);
  const next = () => rng.next();
  const valid = encodeToolMessageIpc(toolEnvelopeToMessage(invokeRequest()));
  for (let round = 0; round < 400; round++) {
    const length = Math.floor(next() * 2048);
    const bytes = new Uint8Array(length);
    for (let i = 0; i < length; i++) bytes[i] = Math.floor(next() * 256);
    // Half the rounds keep a valid prefix so the garbage reaches deeper.
    if (round % 2 === 1) {
      bytes.set(valid.subarray(0, Math.min(length, Math.floor(next() * valid.length))));
    }
    onlyProtocolErrors(() => toolMessageToEnvelope(decodeToolMessageIpc(bytes)), `round ${round}`);
  }
});

Deno.test("an IPC-decoded carrier is checked like any other", () => {
  const wrongSchema = tableToIPC(
    new Table(carrier({}, withField(8, new Field("sequence", new Int32(), true)))),
    "stream",
  );
  assertProtocolError(
    () => toolMessageToEnvelope(decodeToolMessageIpc(wrongSchema)),
    CODES.INVALID_MESSAGE,
    {
      message: "ToolMessage RecordBatch schema must exactly match TOOL_MESSAGE_SCHEMA",
    },
  );
  const badRow = tableToIPC(
    new Table(carrier({ request_id: null }, undefined, INVOKE_ROW)),
    "stream",
  );
  assertProtocolError(
    () => toolMessageToEnvelope(decodeToolMessageIpc(badRow)),
    CODES.INVALID_MESSAGE,
    {
      path: "request_id",
    },
  );
  assertInstanceOf(decodeToolMessageIpc(badRow), RecordBatch);
});

/** The absolute position of field `index` of the flatbuffer table at `table` (0 when absent). */
function fbField(view: DataView, table: number, index: number): number {
  const vtable = table - view.getInt32(table, true);
  const slot = 4 + 2 * index;
  if (slot >= view.getInt16(vtable, true)) return 0;
  const offset = view.getInt16(vtable + slot, true);
  return offset === 0 ? 0 : table + offset;
}

Deno.test("a corrupted metadata vector length is refused before apache-arrow loops over it", () => {
  const batch = toolEnvelopeToMessage(invokeRequest());
  const tagged = new RecordBatch(
    new Schema(TOOL_MESSAGE_SCHEMA.fields, new Map([["origin", "test"]])),
    batch.data,
  );
  const bytes = encodeToolMessageIpc(tagged);
  assertEquals(toolMessageToEnvelope(decodeToolMessageIpc(bytes)), invokeRequest());
  // Find the schema's custom_metadata vector (Message.header -> Schema.custom_metadata) and claim
  // 2^30 entries: apache-arrow alone would iterate a billion times over zero bytes.
  const metadataLength = new DataView(bytes.buffer).getInt32(4, true);
  const metadata = bytes.slice(8, 8 + metadataLength);
  const view = new DataView(metadata.buffer);
  const message = view.getInt32(0, true);
  const headerField = fbField(view, message, 2);
  const schema = headerField + view.getInt32(headerField, true);
  const metadataField = fbField(view, schema, 2);
  const vector = metadataField + view.getInt32(metadataField, true);
  assertStrictEquals(view.getInt32(vector, true), 1);
  const corrupted = bytes.slice();
  new DataView(corrupted.buffer).setInt32(8 + vector, 2 ** 30, true);
  assertProtocolError(() => decodeToolMessageIpc(corrupted), CODES.INVALID_MESSAGE, {
    message: "invalid Arrow IPC stream: message metadata is out of bounds",
  });
});

Deno.test("payload_json: an integral float token in an integer field is refused on both paths", () => {
  const row = {
    ...UNREGISTER_ROW,
    message_type: "endpoint.registry.response",
    request_id: "r-1",
    payload_json:
      '{"lease_ttl_ms":1000,"operation":"register","registry_revision":1.0,"status":"accepted"}',
  };
  const batch = carrier({}, undefined, row);
  const ipc = encodeToolMessageIpc(batch);
  const refused = {
    message: "registry_revision must be in [0, 9007199254740991]",
    path: "payload",
  };
  assertProtocolError(
    () => validateMessageEnvelope(toolMessageToEnvelope(batch)),
    CODES.INVALID_PAYLOAD,
    refused,
  );
  assertProtocolError(
    () => validateMessageEnvelope(decodeToolEnvelopeIpc(ipc)),
    CODES.INVALID_PAYLOAD,
    refused,
  );
  // The integer itself is accepted on both.
  const fine = carrier({ payload_json: row.payload_json.replace("1.0", "1") }, undefined, row);
  validateMessageEnvelope(toolMessageToEnvelope(fine));
  validateMessageEnvelope(decodeToolEnvelopeIpc(encodeToolMessageIpc(fine)));
});

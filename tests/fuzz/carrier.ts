// Fuzz targets of the Dora carrier: the generic decoders (decodeToolMessageIpc and
// toolMessageToEnvelope) and the fast IPC codec (decodeToolEnvelopeIpc, encodeToolEnvelopeIpc).
//
// carrier_ipc: valid envelopes round-trip through carrier and IPC bytes; mutated IPC bytes and
// random bytes decode or fail with a ToolProtocolError, never anything else.
// carrier_columns: carriers built column by column (invalid UTF-8, nulls, blanks, wrong headers,
// out-of-range sequences, mutated payload_json, wrong schemas, 0 or 2 rows, every accepted Arrow
// shape) convert or fail with a ToolProtocolError; when the schema is exact, the same carrier
// through IPC bytes gives the same answer.
import fc from "fast-check";
import {
  type Data,
  Field,
  Int32,
  Int64,
  makeData,
  makeVector,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Utf8,
} from "apache-arrow";
import {
  decodeEnvelope,
  encodeEnvelope,
  type ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import {
  decodeToolEnvelopeIpc,
  decodeToolMessageIpc,
  encodeToolEnvelopeIpc,
  encodeToolMessageIpc,
  TOOL_MESSAGE_SCHEMA,
  toolEnvelopeToMessage,
  type ToolMessageArrowValue,
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
} from "./_common.ts";
import {
  applyMutations,
  envelopeArb,
  idArb,
  type Mutation,
  mutationArb,
  noiseArb,
} from "../_gen.ts";
import { assertNoPollution, canon } from "./wire.ts";

const encoder = new TextEncoder();

function only<T>(fn: () => T, where: string): T | ToolProtocolError {
  try {
    return fn();
  } catch (error) {
    if (error instanceof ToolProtocolError) return error;
    const name = error instanceof Error ? error.constructor.name : typeof error;
    throw new Error(`${where} let ${name} escape: ${String(error)}`);
  }
}

function outcome(result: ToolEnvelope | ToolProtocolError): string {
  if (result instanceof ToolProtocolError) return `error ${result.code}: ${result.message}`;
  return `envelope ${canon(result.toWireObject())}`;
}

// ---------------------------------------------------------------------------------------------
// Carriers from a column spec

/** The nine Utf8 columns of a carrier, in schema order (sequence is separate). */
export const UTF8_COLUMNS = [
  "protocol",
  "message_type",
  "request_id",
  "invocation_id",
  "attempt_id",
  "endpoint_id",
  "endpoint_instance_id",
  "operation",
  "payload_json",
] as const;

/** A column name of the carrier. */
export type Utf8Column = typeof UTF8_COLUMNS[number];

/** A schema change that makes the carrier's schema differ from TOOL_MESSAGE_SCHEMA. */
export type SchemaEdit =
  | { readonly op: "rename"; readonly column: number; readonly name: string }
  | { readonly op: "nullable"; readonly column: number }
  | { readonly op: "drop"; readonly column: number }
  | { readonly op: "swap"; readonly column: number; readonly other: number }
  | { readonly op: "int32-sequence" }
  | { readonly op: "int64-column"; readonly column: number };

/** A carrier described column by column (JSON-able through the tagged form). */
export interface CarrierSpec {
  /** Row-0 bytes of each Utf8 column, or `null`. */
  readonly utf8: Readonly<Record<Utf8Column, Uint8Array | null>>;
  /** Row-0 sequence, or `null`. */
  readonly sequence: bigint | null;
  /** Schema edits (none: the exact schema). */
  readonly schema: readonly SchemaEdit[];
  /** Rows (1 for a valid carrier). */
  readonly rows: number;
  /** The Arrow shape handed over. */
  readonly shape: "batch" | "table" | "vector" | "data";
}

/** The bytes a spec's columns hold (for the time bound). */
export function specBytes(spec: CarrierSpec): number {
  let total = 0;
  for (const name of UTF8_COLUMNS) total += spec.utf8[name]?.length ?? 0;
  return total * Math.max(1, spec.rows);
}

/** The spec of a valid carrier of `envelope`. */
export function specOf(envelope: ToolEnvelope): CarrierSpec {
  const batch = toolEnvelopeToMessage(envelope);
  const utf8 = {} as Record<Utf8Column, Uint8Array | null>;
  for (const name of UTF8_COLUMNS) {
    const value = batch.getChild(name)?.get(0) as string | null | undefined;
    utf8[name] = value === null || value === undefined ? null : encoder.encode(value);
  }
  const sequence = batch.getChild("sequence")?.get(0) as bigint | null | undefined;
  return { utf8, sequence: sequence ?? null, schema: [], rows: 1, shape: "batch" };
}

function utf8Data(value: Uint8Array | null, rows: number): Data {
  if (value === null) {
    return makeData({
      type: new Utf8(),
      length: rows,
      nullCount: rows,
      nullBitmap: new Uint8Array(Math.max(1, Math.ceil(rows / 8))),
      valueOffsets: new Int32Array(rows + 1),
      data: new Uint8Array(0),
    });
  }
  const offsets = new Int32Array(rows + 1);
  const data = new Uint8Array(value.length * rows);
  for (let r = 0; r < rows; r++) {
    data.set(value, r * value.length);
    offsets[r + 1] = (r + 1) * value.length;
  }
  return makeData({ type: new Utf8(), length: rows, nullCount: 0, valueOffsets: offsets, data });
}

function int64Data(value: bigint | null, rows: number): Data {
  const data = new BigInt64Array(rows).fill(value ?? 0n);
  return value === null
    ? makeData({
      type: new Int64(),
      length: rows,
      nullCount: rows,
      nullBitmap: new Uint8Array(Math.max(1, Math.ceil(rows / 8))),
      data,
    })
    : makeData({ type: new Int64(), length: rows, nullCount: 0, data });
}

function int32Data(value: bigint | null, rows: number): Data {
  const data = new Int32Array(rows).fill(Number(BigInt.asIntN(32, value ?? 0n)));
  return value === null
    ? makeData({
      type: new Int32(),
      length: rows,
      nullCount: rows,
      nullBitmap: new Uint8Array(Math.max(1, Math.ceil(rows / 8))),
      data,
    })
    : makeData({ type: new Int32(), length: rows, nullCount: 0, data });
}

/** Builds the Arrow value a spec describes (no validation on the way). */
export function carrierFromSpec(spec: CarrierSpec): ToolMessageArrowValue {
  const rows = spec.rows;
  let fields: Field[] = [...TOOL_MESSAGE_SCHEMA.fields];
  let columns: Data[] = fields.map((field) =>
    field.name === "sequence"
      ? int64Data(spec.sequence, rows)
      : utf8Data(spec.utf8[field.name as Utf8Column], rows)
  );
  for (const edit of spec.schema) {
    const i = "column" in edit ? edit.column % fields.length : 0;
    switch (edit.op) {
      case "rename":
        fields[i] = new Field(edit.name, fields[i].type, fields[i].nullable);
        break;
      case "nullable":
        fields[i] = new Field(fields[i].name, fields[i].type, !fields[i].nullable);
        break;
      case "drop":
        fields = fields.filter((_, k) => k !== i);
        columns = columns.filter((_, k) => k !== i);
        break;
      case "swap": {
        const j = edit.other % fields.length;
        [fields[i], fields[j]] = [fields[j], fields[i]];
        [columns[i], columns[j]] = [columns[j], columns[i]];
        break;
      }
      case "int32-sequence": {
        const k = fields.findIndex((field) => field.name === "sequence");
        if (k >= 0) {
          fields[k] = new Field("sequence", new Int32(), true);
          columns[k] = int32Data(spec.sequence, rows);
        }
        break;
      }
      case "int64-column":
        fields[i] = new Field(fields[i].name, new Int64(), fields[i].nullable);
        columns[i] = int64Data(7n, rows);
        break;
    }
  }
  const data = makeData({
    type: new Struct(fields),
    length: rows,
    nullCount: 0,
    children: columns,
  });
  const batch = new RecordBatch(new Schema(fields), data);
  switch (spec.shape) {
    case "table":
      return new Table(batch);
    case "vector":
      return makeVector(data) as unknown as ToolMessageArrowValue;
    case "data":
      return data as unknown as ToolMessageArrowValue;
    default:
      return batch;
  }
}

/** A replacement value of one Utf8 column. */
export type CellEdit =
  | { readonly column: number; readonly to: "null" }
  | { readonly column: number; readonly to: "bytes"; readonly bytes: Uint8Array }
  | { readonly column: number; readonly to: "text"; readonly text: string }
  | { readonly column: number; readonly to: "mutate"; readonly mutations: Mutation[] };

const INVALID_UTF8 = [
  Uint8Array.of(0xff),
  Uint8Array.of(0xc3),
  Uint8Array.of(0xed, 0xa0, 0x80),
  Uint8Array.of(0xef, 0xbb, 0xbf, 0x61),
  Uint8Array.of(0xf4, 0x90, 0x80, 0x80),
];

const HEADER_TEXT = [
  "",
  " ",
  "\u00a0",
  "\u3000",
  "forge.tool.endpoint/v1alpha1",
  "forge.tool.endpoint/v1alpha2",
  "tool.invoke.request",
  "tool.status.request",
  "tool.event",
  "endpoint.register",
  "endpoint.status",
  "tool.nonsense",
  "instance-1",
  "vision.yolo",
];

/** A random edit of one Utf8 column. */
export const cellEditArb: fc.Arbitrary<CellEdit> = fc.oneof(
  fc.record({ column: fc.nat({ max: 8 }), to: fc.constant("null" as const) }),
  fc.record({
    column: fc.nat({ max: 8 }),
    to: fc.constant("bytes" as const),
    bytes: fc.oneof(fc.constantFrom(...INVALID_UTF8), noiseArb),
  }),
  fc.record({
    column: fc.nat({ max: 8 }),
    to: fc.constant("text" as const),
    text: fc.oneof(fc.constantFrom(...HEADER_TEXT), idArb),
  }),
  fc.record({
    column: fc.constant(8),
    to: fc.constant("mutate" as const),
    mutations: fc.array(mutationArb, { minLength: 1, maxLength: 3 }),
  }),
);

/** A random schema edit. */
export const schemaEditArb: fc.Arbitrary<SchemaEdit> = fc.oneof(
  fc.record({
    op: fc.constant("rename" as const),
    column: fc.nat({ max: 9 }),
    name: fc.constantFrom("payload", "Protocol", "", "sequence"),
  }),
  fc.record({ op: fc.constant("nullable" as const), column: fc.nat({ max: 9 }) }),
  fc.record({ op: fc.constant("drop" as const), column: fc.nat({ max: 9 }) }),
  fc.record({
    op: fc.constant("swap" as const),
    column: fc.nat({ max: 9 }),
    other: fc.nat({ max: 9 }),
  }),
  fc.record({ op: fc.constant("int32-sequence" as const) }),
  fc.record({ op: fc.constant("int64-column" as const), column: fc.nat({ max: 9 }) }),
);

/** A spec with some cells edited. */
export function editSpec(
  spec: CarrierSpec,
  edits: readonly CellEdit[],
  changes: Partial<CarrierSpec> = {},
): CarrierSpec {
  const utf8 = { ...spec.utf8 };
  for (const edit of edits) {
    const name = UTF8_COLUMNS[edit.column % UTF8_COLUMNS.length];
    switch (edit.to) {
      case "null":
        utf8[name] = null;
        break;
      case "bytes":
        utf8[name] = edit.bytes;
        break;
      case "text":
        utf8[name] = encoder.encode(edit.text);
        break;
      case "mutate":
        utf8[name] = applyMutations(
          utf8[name] ?? new Uint8Array(0),
          new Uint8Array(0),
          edit.mutations,
        );
        break;
    }
  }
  return { ...spec, utf8, ...changes };
}

/** Sequence values around the carrier's bounds. */
export const sequenceArb: fc.Arbitrary<bigint | null> = fc.oneof(
  fc.constant(null),
  fc.constantFrom(0n, -1n, 9007199254740991n, 9007199254740992n, -(2n ** 63n), 2n ** 63n - 1n),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
);

// ---------------------------------------------------------------------------------------------
// carrier_ipc

/** One input of carrier_ipc. */
export interface IpcInput {
  readonly valid: boolean;
  readonly bytes: Uint8Array;
}

function ipcArb(): fc.Arbitrary<IpcInput> {
  const valid = envelopeArb.map((envelope) =>
    encodeToolMessageIpc(toolEnvelopeToMessage(envelope))
  );
  const mutated = fc
    .tuple(valid, valid, fc.array(mutationArb, { minLength: 1, maxLength: 3 }))
    .map(([bytes, other, mutations]) => applyMutations(bytes, other, mutations));
  return fc.oneof(
    { weight: 1, arbitrary: valid.map((bytes) => ({ valid: true, bytes })) },
    { weight: 6, arbitrary: mutated.map((bytes) => ({ valid: false, bytes })) },
    { weight: 1, arbitrary: noiseArb.map((bytes) => ({ valid: false, bytes })) },
  );
}

/** The generic decoder chain on IPC bytes: bytes → batch → envelope (or a protocol error). */
export function genericDecode(
  bytes: Uint8Array,
  maxBytes?: number,
): ToolEnvelope | ToolProtocolError {
  const batch = only(() => decodeToolMessageIpc(bytes, { maxBytes }), "decodeToolMessageIpc");
  if (batch instanceof ToolProtocolError) return batch;
  return only(() => toolMessageToEnvelope(batch), "toolMessageToEnvelope");
}

function checkIpc(input: IpcInput, counters: Record<string, number>): void {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const decoded = genericDecode(input.bytes);
  checkFastDecoder(input.bytes, decoded, counters);
  if (input.valid) {
    invariant(!(decoded instanceof ToolProtocolError), () => `valid IPC rejected: ${decoded}`);
    // Round trip: the Wire bytes of the decoded envelope re-encode to the same IPC bytes.
    const again = encodeToolMessageIpc(toolEnvelopeToMessage(decoded));
    invariant(
      again.length === input.bytes.length && again.every((b, i) => b === input.bytes[i]),
      "a valid carrier does not round-trip through IPC byte for byte",
    );
    encodeEnvelope(decoded);
    count("valid round trips");
    return;
  }
  if (decoded instanceof ToolProtocolError) count(`rejected ${decoded.code}`);
  else {
    count("mutants decoded");
    // A decoded carrier converts back (or reports a typed-payload ToolProtocolError).
    only(() => toolEnvelopeToMessage(decoded), "toolEnvelopeToMessage");
  }
  assertNoPollution();
}

/** The generic IPC + carrier decoders under mutated and valid IPC bytes. */
export const carrierIpcTarget: FuzzTarget<IpcInput> = {
  name: "carrier_ipc",
  arbitrary: ipcArb,
  check: checkIpc,
  inputBytes: (input) => input.bytes.length,
  batchSize: 200,
};

// ---------------------------------------------------------------------------------------------
// carrier_columns

/** One input of carrier_columns. */
export interface ColumnsInput {
  readonly spec: CarrierSpec;
}

function columnsArb(): fc.Arbitrary<ColumnsInput> {
  return fc
    .record({
      envelope: envelopeArb,
      edits: fc.array(cellEditArb, { maxLength: 3 }),
      sequence: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: sequenceArb },
      ),
      schema: fc.oneof(
        { weight: 5, arbitrary: fc.constant([] as SchemaEdit[]) },
        { weight: 1, arbitrary: fc.array(schemaEditArb, { minLength: 1, maxLength: 2 }) },
      ),
      rows: fc.oneof({ weight: 8, arbitrary: fc.constant(1) }, fc.constantFrom(0, 2)),
      shape: fc.constantFrom("batch", "table", "vector", "data" as const),
    })
    .map(({ envelope, edits, sequence, schema, rows, shape }) => {
      const base = specOf(envelope);
      return {
        spec: editSpec(base, edits, {
          schema,
          rows,
          shape,
          ...(sequence === undefined ? {} : { sequence }),
        }),
      };
    });
}

function checkColumns(input: ColumnsInput, counters: Record<string, number>): void {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const value = carrierFromSpec(input.spec);
  const decoded = only(() => toolMessageToEnvelope(value), "toolMessageToEnvelope");
  if (decoded instanceof ToolProtocolError) count(`rejected ${decoded.code}`);
  else count("converted");
  if (input.spec.schema.length === 0 && input.spec.rows === 1) {
    // The same carrier as IPC bytes gives the same answer (the IPC size bound aside: the carrier
    // has none of its own without maxPayloadJsonBytes).
    const batch = carrierFromSpec({ ...input.spec, shape: "batch" }) as RecordBatch;
    const viaIpc = genericDecode(encodeToolMessageIpc(batch), Number.MAX_SAFE_INTEGER);
    invariant(
      outcome(viaIpc) === outcome(decoded),
      () => `carrier and IPC bytes disagree: ${outcome(decoded)} vs ${outcome(viaIpc)}`,
    );
  }
  assertNoPollution();
}

/** toolMessageToEnvelope on carriers built column by column. */
export const carrierColumnsTarget: FuzzTarget<ColumnsInput> = {
  name: "carrier_columns",
  arbitrary: columnsArb,
  check: checkColumns,
  inputBytes: (input) => specBytes(input.spec),
  batchSize: 200,
};

// ---------------------------------------------------------------------------------------------
// fast_ipc: the fast IPC codec (src/dora/fast_ipc.ts) against the generic path.
//
// decodeToolEnvelopeIpc promises what toolMessageToEnvelope(decodeToolMessageIpc(bytes)) gives
// for every input: the same envelope, or the same error (class, code, message and path).
// checkFastDecoder holds it to that on every carrier_ipc input (bytes apache-arrow wrote, and
// their mutants); fast_ipc does the same on the fast encoder's own layout and its mutants, and
// compares the two encoders (same checks, bytes that decode to the same envelope).

function errorKey(error: unknown): string {
  if (error instanceof ToolProtocolError) {
    return `${error.constructor.name} ${error.code}: ${error.message} @ ${String(error.path)}`;
  }
  return `${(error as Error)?.constructor?.name}: ${(error as Error)?.message}`;
}

function fastOutcome(fn: () => ToolEnvelope): string {
  try {
    return outcome(fn());
  } catch (error) {
    if (!(error instanceof ToolProtocolError)) {
      throw new Error(`the fast IPC decoder let ${describeError(error)} escape`);
    }
    return `error ${errorKey(error)}`;
  }
}

function genericOutcome(bytes: Uint8Array, maxBytes?: number): string {
  const result = genericDecode(bytes, maxBytes);
  return result instanceof ToolProtocolError ? `error ${errorKey(result)}` : outcome(result);
}

function checkFastDecoder(
  bytes: Uint8Array,
  _generic: ToolEnvelope | ToolProtocolError,
  counters: Record<string, number>,
): void {
  const fast = fastOutcome(() => decodeToolEnvelopeIpc(bytes));
  const generic = genericOutcome(bytes);
  invariant(
    fast === generic,
    () => `fast and generic decoders disagree:\n  fast:    ${fast}\n  generic: ${generic}`,
  );
  counters["fast decoder agreed"] = (counters["fast decoder agreed"] ?? 0) + 1;
}

/** One input of fast_ipc. */
export interface FastIpcInput {
  /** The encoder's input: envelope bytes on the Wire (decoded with decodeEnvelope). */
  readonly wire: Uint8Array;
  /** The message limit handed to both encoders. */
  readonly maxMessageBytes: number;
  /** Mutations of the fast encoder's bytes (none: the intact stream). */
  readonly mutations: readonly Mutation[];
}

function fastIpcArb(): fc.Arbitrary<FastIpcInput> {
  return fc.record({
    wire: envelopeArb.map((envelope) => encodeEnvelope(envelope)),
    maxMessageBytes: fc.constantFrom(256, 1024, 4096, 1048576),
    mutations: fc.oneof(
      { weight: 1, arbitrary: fc.constant([] as Mutation[]) },
      { weight: 4, arbitrary: fc.array(mutationArb, { minLength: 1, maxLength: 3 }) },
    ),
  });
}

function checkFastIpc(input: FastIpcInput, counters: Record<string, number>): void {
  const count = (name: string) => (counters[name] = (counters[name] ?? 0) + 1);
  const envelope = decodeEnvelope(input.wire);
  const options = { maxMessageBytes: input.maxMessageBytes };
  // The two encoders make the same checks in the same order.
  let fastBytes: Uint8Array | undefined;
  let fastError: unknown;
  try {
    fastBytes = encodeToolEnvelopeIpc(envelope, options);
  } catch (error) {
    fastError = error;
  }
  let genericBytes: Uint8Array | undefined;
  let genericError: unknown;
  try {
    genericBytes = encodeToolMessageIpc(toolEnvelopeToMessage(envelope, options));
  } catch (error) {
    genericError = error;
  }
  invariant(
    (fastBytes === undefined) === (genericBytes === undefined),
    () => `the encoders disagree: fast ${errorKey(fastError)}, generic ${errorKey(genericError)}`,
  );
  if (fastBytes === undefined) {
    invariant(
      errorKey(fastError) === errorKey(genericError),
      () => `the encoders fail differently: ${errorKey(fastError)} vs ${errorKey(genericError)}`,
    );
    count(`both encoders refused (${(fastError as ToolProtocolError).code ?? "other"})`);
    return;
  }
  // Both encodings read back to the envelope, through both decoders.
  const expected = outcome(envelope);
  for (const bytes of [fastBytes, genericBytes!]) {
    invariant(genericOutcome(bytes) === expected, "the generic path misreads an encoding");
    invariant(
      fastOutcome(() => decodeToolEnvelopeIpc(bytes)) === expected,
      "the fast path misreads an encoding",
    );
  }
  count("encodings agreed");
  if (input.mutations.length === 0) return;
  // Mutants of the fast layout: the decoders agree on every one.
  const mutated = applyMutations(fastBytes, genericBytes!, input.mutations);
  const fast = fastOutcome(() => decodeToolEnvelopeIpc(mutated));
  const generic = genericOutcome(mutated);
  invariant(
    fast === generic,
    () => `fast and generic decoders disagree:\n  fast:    ${fast}\n  generic: ${generic}`,
  );
  count(fast.startsWith("error") ? "mutants rejected by both" : "mutants decoded by both");
  assertNoPollution();
}

/** The fast IPC codec against the generic decoders and encoder. */
export const fastIpcTarget: FuzzTarget<FastIpcInput> = {
  name: "fast_ipc",
  arbitrary: fastIpcArb,
  check: checkFastIpc,
  inputBytes: (input) => input.wire.length,
  batchSize: 200,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [
  carrierIpcTarget,
  carrierColumnsTarget,
  fastIpcTarget,
];

/** Runs every target of this module under `budget`. */
export async function run(budget: Budget): Promise<TargetReport[]> {
  const reports: TargetReport[] = [];
  for (const target of targets) reports.push(await runTarget(target, budget));
  return reports;
}

/**
 * The Arrow IPC format's constants, in one place for the IPC readers (ipc.ts) and the fast codec
 * (fast_ipc.ts): the flatbuffers enums of `Message.fbs` and `Schema.fbs`, every table field
 * slot (vtable index) the carrier code reads or writes, named after the schema's field, and the
 * sizes of the framing and of the structs stored inline in vectors.
 *
 * A slot is the field's position in its table's declaration (the vtable holds its offset at
 * `4 + 2 * slot`); union fields take two slots, the type tag first (`header_type` then
 * `header`).
 *
 * @module
 */

/** `MetadataVersion` (Schema.fbs): the version of the IPC metadata of a message. */
export const MetadataVersion = {
  /** 0.8.0 – 0.17 (the first version of the current IPC format). */
  V4: 3,
  /** 1.0.0 and later (reads V4; changes only the Union buffer layout). */
  V5: 4,
} as const;

/** `MessageHeader` (Message.fbs): the union tag of a message's header. */
export const MessageHeader = {
  /** A Schema: the columns of the record batches that follow. */
  Schema: 1,
  /** A dictionary for a dictionary-encoded column. */
  DictionaryBatch: 2,
  /** A record batch: the rows' field nodes and buffers. */
  RecordBatch: 3,
} as const;

/** `Type` (Schema.fbs): the union tags of the column types the carrier code names. */
export const Type = {
  /** Signed or unsigned integers of 8 to 64 bits. */
  Int: 2,
  /** UTF-8 strings with 32-bit offsets. */
  Utf8: 5,
} as const;

/**
 * The union tags of the nested types (Schema.fbs), which a ToolMessage never holds: List,
 * Struct_, Union, FixedSizeList, Map, LargeList, RunEndEncoded, ListView, LargeListView.
 */
export const NESTED_TYPES: ReadonlySet<number> = new Set([12, 13, 14, 16, 17, 21, 22, 25, 26]);

/** `Endianness` (Schema.fbs). */
export const Endianness = {
  /** Little-endian: the only byte order the carrier accepts. */
  Little: 0,
} as const;

/** Field slots of the `Message` table (Message.fbs). */
export const MessageSlot = {
  /** `version: MetadataVersion` (int16). */
  version: 0,
  /** `header_type: MessageHeader` (uint8), the tag of the `header` union. */
  headerType: 1,
  /** `header: MessageHeader` (a table: Schema or RecordBatch). */
  header: 2,
  /** `bodyLength: long` (int64), the bytes of body following the metadata. */
  bodyLength: 3,
  /** `custom_metadata: [KeyValue]`. */
  customMetadata: 4,
} as const;

/** Field slots of the `Schema` table (Schema.fbs). */
export const SchemaSlot = {
  /** `endianness: Endianness` (int16). */
  endianness: 0,
  /** `fields: [Field]`. */
  fields: 1,
  /** `custom_metadata: [KeyValue]`. */
  customMetadata: 2,
  /** `features: [Feature]` (int64 each). */
  features: 3,
} as const;

/** Field slots of the `Field` table (Schema.fbs). */
export const FieldSlot = {
  /** `name: string`. */
  name: 0,
  /** `nullable: bool` (uint8). */
  nullable: 1,
  /** `type_type: Type` (uint8), the tag of the `type` union. */
  typeType: 2,
  /** `type: Type` (a table: Int, Utf8, …). */
  type: 3,
  /** `dictionary: DictionaryEncoding` (a table; absent unless dictionary-encoded). */
  dictionary: 4,
  /** `children: [Field]`. */
  children: 5,
  /** `custom_metadata: [KeyValue]`. */
  customMetadata: 6,
} as const;

/** Field slots of the `Int` type table (Schema.fbs). */
export const IntSlot = {
  /** `bitWidth: int` (int32). */
  bitWidth: 0,
  /** `is_signed: bool` (uint8). */
  isSigned: 1,
} as const;

/** Field slots of the `KeyValue` table (Schema.fbs). */
export const KeyValueSlot = {
  /** `key: string`. */
  key: 0,
  /** `value: string`. */
  value: 1,
} as const;

/** Field slots of the `RecordBatch` table (Message.fbs). */
export const RecordBatchSlot = {
  /** `length: long` (int64), the number of rows. */
  length: 0,
  /** `nodes: [FieldNode]` (structs of `FIELD_NODE_BYTES`). */
  nodes: 1,
  /** `buffers: [Buffer]` (structs of `BUFFER_BYTES`). */
  buffers: 2,
  /** `compression: BodyCompression` (a table; absent when uncompressed). */
  compression: 3,
  /** `variadicBufferCounts: [long]`. */
  variadicBufferCounts: 4,
} as const;

/** A `FieldNode` struct: `length: long`, then `null_count: long`. */
export const FIELD_NODE_BYTES = 16;
/** A `Buffer` struct: `offset: long`, then `length: long`. */
export const BUFFER_BYTES = 16;
/** The byte size of a flatbuffers offset (a table, string or vector reference). */
export const OFFSET_BYTES = 4;
/** The continuation marker that starts a framed message (0xFFFFFFFF read as an int32). */
export const CONTINUATION_MARKER = -1;
/** A message's framing: the continuation marker and the int32 metadata length. */
export const MESSAGE_PREFIX_BYTES = 8;
/** The end-of-stream marker's size: a continuation marker and a zero metadata length. */
export const END_OF_STREAM_BYTES = 8;

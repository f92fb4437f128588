/**
 * The in-memory size of an Arrow ToolMessage carrier value (the analogue of pyarrow's `nbytes`),
 * the bound checked before a carrier is read.
 *
 * @module
 */
import {
  type Data,
  isArrowData,
  isArrowRecordBatch,
  isArrowTable,
  isArrowVector,
  type RecordBatch,
} from "apache-arrow";
import type { ToolMessageArrowValue } from "./carrier.ts";

function dataBytes(data: Data | undefined, seen: Set<Data>): number {
  if (data === undefined || data === null || seen.has(data)) return 0;
  seen.add(data);
  let total = 0;
  const buffers = [data.valueOffsets, data.values, data.nullBitmap, data.typeIds] as unknown[];
  for (const buffer of buffers) {
    if (ArrayBuffer.isView(buffer)) total += buffer.byteLength;
  }
  for (const buffer of data.variadicBuffers ?? []) total += buffer?.byteLength ?? 0;
  for (const child of data.children ?? []) total += dataBytes(child, seen);
  for (const chunk of (data.dictionary as { data?: Data[] } | undefined)?.data ?? []) {
    total += dataBytes(chunk, seen);
  }
  return total;
}

/**
 * The in-memory size of an Arrow carrier value: the byte length of every buffer (validity
 * bitmaps, value offsets, data, view buffers, dictionaries) behind a record batch, a table or a
 * Struct vector — the analogue of pyarrow's `nbytes`. A sliced value counts the buffers it keeps
 * alive. Other values are a `TypeError`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ToolEnvelope } from "@forge/tool/wire";
 * import { toolEnvelopeToMessage, toolMessageCarrierSize } from "@forge/tool/dora";
 * const batch = toolEnvelopeToMessage(
 *   new ToolEnvelope({
 *     messageType: "endpoint.unregister",
 *     requestId: "unregister-1",
 *     endpointId: "vision.yolo",
 *     endpointInstanceId: "instance-1",
 *   }),
 * );
 * assertEquals(toolMessageCarrierSize(batch) > 0, true);
 * ```
 */
export function toolMessageCarrierSize(value: ToolMessageArrowValue): number {
  const seen = new Set<Data>();
  if (isArrowRecordBatch(value)) return dataBytes((value as RecordBatch).data, seen);
  if (isArrowTable(value) || isArrowVector(value)) {
    let total = 0;
    for (const chunk of (value as { readonly data: readonly Data[] }).data) {
      total += dataBytes(chunk, seen);
    }
    return total;
  }
  if (isArrowData(value)) return dataBytes(value as Data, seen);
  throw new TypeError(
    "toolMessageCarrierSize expects an arrow RecordBatch, Table, or Struct vector",
  );
}

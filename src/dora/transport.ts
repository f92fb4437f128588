/**
 * The event/output transport a Dora node runs on, shared by the FFI node (`ffi.ts`) and the
 * in-process loopback dataflow (`loopback.ts`), and the NTP64 timestamp conversions of Dora's
 * hybrid logical clock.
 *
 * @module
 */

/** An event delivered to a Dora node, as the C node API distinguishes them. */
export type DoraEvent =
  | {
    /** An input arrived. */
    readonly type: "input";
    /** The input id as declared in the dataflow YAML (decoded from UTF-8). */
    readonly id: string;
    /** The input bytes: an owned copy, valid after the native event was freed. */
    readonly data: Uint8Array;
    /** The input's Dora timestamp in Unix epoch milliseconds (0 when Dora gave none). */
    readonly timestampMs: number;
  }
  | {
    /** The dataflow asks the node to stop; the event stream ends soon after. */
    readonly type: "stop";
  }
  | {
    /** An input stream closed (the C API does not say which). */
    readonly type: "input-closed";
  }
  | {
    /** Dora reported an error (the C API carries no text). */
    readonly type: "error";
  }
  | {
    /** An event type this node API does not know. */
    readonly type: "unknown";
  };

/** The kind of a {@linkcode DoraEvent}. */
export type DoraEventType = DoraEvent["type"];

/**
 * What a Dora node needs from its dataflow: the next event, and a way to send outputs.
 *
 * Implementations: `openDoraNode` (the dora C node API through FFI) and
 * `LoopbackDataflow.transport` (an in-process dataflow for tests and for running without Dora).
 * At most one {@linkcode DoraTransport.nextEvent} call is pending at a time.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { type DoraTransport, LoopbackDataflow } from "@forge/tool/dora";
 * const flow = new LoopbackDataflow();
 * const transport: DoraTransport = flow.transport; // or `await openDoraNode()` under Dora
 * const delivered = flow.request(new Uint8Array([7])).then(() => flow.stop());
 * for (let event = await transport.nextEvent(); event; event = await transport.nextEvent()) {
 *   if (event.type === "stop") break;
 *   if (event.type === "input") await transport.sendOutput("echo", event.data);
 * }
 * await delivered;
 * await transport.close();
 * assertEquals(flow.sent.map((output) => output.id), ["echo"]);
 * ```
 */
export interface DoraTransport {
  /** The next event; `null` once all event streams closed (or the transport was closed). */
  nextEvent(): Promise<DoraEvent | null>;
  /**
   * Sends `data` on the output `id`. Resolves once Dora accepted the bytes; rejects with an
   * `Error` naming the output id when the send failed or the transport is closed.
   */
  sendOutput(id: string, data: Uint8Array): Promise<void>;
  /**
   * Ends the reading: a pending {@linkcode DoraTransport.nextEvent} resolves as soon as the
   * transport can end it (with `null`, or with the event it already took), and every later call
   * resolves `null` at once; sending still works until {@linkcode DoraTransport.close}. A
   * shutting-down node calls it so that the last read it issued ends without closing the
   * transport first, and the event that read returned can still be answered. Optional: without
   * it, the node waits for a pending read up to its grace period.
   */
  stopReading?(): void;
  /** Writes a line to the dataflow's log, when the transport has one. */
  log?(level: string, message: string): void;
  /**
   * Releases the transport. Waits for a pending {@linkcode DoraTransport.nextEvent} first, and
   * settles every queued send; calling it again returns the same promise.
   */
  close(): Promise<void>;
}

const TWO_POW_32 = 0x1_0000_0000n;
const U64_MAX = 0xffff_ffff_ffff_ffffn;

/**
 * Converts a Dora NTP64 timestamp (a u64: high 32 bits seconds since the Unix epoch, low 32 bits
 * the binary fraction of a second) to Unix epoch milliseconds, rounding the fraction down.
 * The result is exact: every NTP64 value maps to an integer below 2^53.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { ntp64ToEpochMs } from "@forge/tool/dora";
 * assertEquals(ntp64ToEpochMs((1_700_000_000n << 32n) | 0x8000_0000n), 1_700_000_000_500);
 * ```
 */
export function ntp64ToEpochMs(timestamp: bigint): number {
  if (typeof timestamp !== "bigint" || timestamp < 0n || timestamp > U64_MAX) {
    throw new RangeError(`an NTP64 timestamp is a u64 bigint, got ${String(timestamp)}`);
  }
  const seconds = timestamp >> 32n;
  const fraction = timestamp & (TWO_POW_32 - 1n);
  return Number(seconds * 1000n + ((fraction * 1000n) >> 32n));
}

/**
 * Converts Unix epoch milliseconds (a non-negative integer below 2^32 seconds) to the smallest
 * NTP64 timestamp that {@linkcode ntp64ToEpochMs} maps back to the same millisecond.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { epochMsToNtp64, ntp64ToEpochMs } from "@forge/tool/dora";
 * assertEquals(ntp64ToEpochMs(epochMsToNtp64(1_700_000_000_123)), 1_700_000_000_123);
 * ```
 */
export function epochMsToNtp64(epochMs: number): bigint {
  if (!isNtp64EpochMs(epochMs)) {
    throw new RangeError(`epoch milliseconds must be an integer in [0, 2^32 s), got ${epochMs}`);
  }
  const ms = BigInt(epochMs);
  const seconds = ms / 1000n;
  const rest = ms % 1000n;
  // ceil(rest * 2^32 / 1000): the first fraction whose floor(fraction * 1000 / 2^32) is `rest`.
  const fraction = (rest * TWO_POW_32 + 999n) / 1000n;
  return (seconds << 32n) | fraction;
}

/**
 * @internal Whether `epochMs` is a millisecond {@linkcode epochMsToNtp64} converts: a
 * non-negative integer below 2^32 seconds.
 */
export function isNtp64EpochMs(epochMs: number): boolean {
  return Number.isSafeInteger(epochMs) && epochMs >= 0 && epochMs < 4294967296000;
}

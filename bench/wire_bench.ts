/**
 * Wire codec: strict decode + typed validation, and encode, of a typical `tool.invoke.request`
 * and of a 64 KiB payload, each beside its baseline measured in the same run — the bare
 * `JSON.parse(new TextDecoder().decode(bytes))` and `TextEncoder` + `JSON.stringify` of the same
 * message. `deno bench` prints each case's ratio to its group's baseline.
 *
 * One bench iteration handles {@linkcode TYPICAL_PER_ITERATION} typical messages (one 64 KiB
 * message), on both sides. `deno bench` times a function call by call when its warmup calls
 * averaged over 10 µs, and otherwise in batches of 10,000 calls; one typical message sits near
 * that threshold, so a baseline and its case could land on either side of it and be timed
 * differently (the call-by-call side paying the timer's cost on every call), which swung the
 * ratio between runs on a loaded machine. With 16 messages per call both sides are timed the
 * same way, and the timer's cost is small beside a call.
 *
 * @module
 */
import { decodeEnvelope, encodeEnvelope } from "../mod.ts";
import { largeRequest, typicalRequest } from "./_payloads.ts";

/** Typical messages decoded or encoded per bench iteration (the ratio does not depend on it). */
export const TYPICAL_PER_ITERATION = 16;

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();

for (const [name, envelope] of [["typical", typicalRequest], ["64KiB", largeRequest]] as const) {
  const bytes = encodeEnvelope(envelope);
  const plain = JSON.parse(textDecoder.decode(bytes));
  const k = name === "typical" ? TYPICAL_PER_ITERATION : 1;
  const each = k === 1 ? "" : ` ×${k}`;
  // The same warmup and minimum sample count on both sides of a group.
  const n = name === "typical" ? 5_000 : 1_000;
  const warmup = n / 10;
  Deno.bench({
    name: `JSON.parse(TextDecoder) ${name} (${bytes.length} B)${each}`,
    group: `decode ${name}`,
    baseline: true,
    n,
    warmup,
    fn: () => {
      for (let i = 0; i < k; i++) JSON.parse(textDecoder.decode(bytes));
    },
  });
  Deno.bench({
    name: `decodeEnvelope (strict + typed) ${name}${each}`,
    group: `decode ${name}`,
    n,
    warmup,
    fn: () => {
      for (let i = 0; i < k; i++) decodeEnvelope(bytes);
    },
  });
  Deno.bench({
    name: `TextEncoder(JSON.stringify) ${name}${each}`,
    group: `encode ${name}`,
    baseline: true,
    n,
    warmup,
    fn: () => {
      for (let i = 0; i < k; i++) textEncoder.encode(JSON.stringify(plain));
    },
  });
  Deno.bench({
    name: `encodeEnvelope (validated, sorted) ${name}${each}`,
    group: `encode ${name}`,
    n,
    warmup,
    fn: () => {
      for (let i = 0; i < k; i++) encodeEnvelope(envelope);
    },
  });
}

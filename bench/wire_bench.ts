/**
 * Wire codec: strict decode + typed validation, and encode, of a typical `tool.invoke.request`
 * and of a 64 KiB payload, each beside its baseline measured in the same run — the bare
 * `JSON.parse(new TextDecoder().decode(bytes))` and `TextEncoder` + `JSON.stringify` of the same
 * message. `deno bench` prints each case's ratio to its group's baseline.
 *
 * One bench iteration handles `TYPICAL_PER_ITERATION` (16) typical messages, or one 64 KiB
 * message, on both sides of a group, so that both are timed the same way (see _payloads.ts).
 *
 * @module
 */
import { decodeEnvelope, encodeEnvelope } from "../wire.ts";
import { largeRequest, TYPICAL_PER_ITERATION, typicalRequest } from "./_payloads.ts";
import { warmedUp } from "./_steady.ts";

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();

for (const [name, envelope] of [["typical", typicalRequest], ["64KiB", largeRequest]] as const) {
  const bytes = encodeEnvelope(envelope);
  const plain = JSON.parse(textDecoder.decode(bytes));
  const k = name === "typical" ? TYPICAL_PER_ITERATION : 1;
  const each = k === 1 ? "" : ` ×${k}`;
  // The same warmup (the first call's, see _steady.ts) and minimum sample count on both sides.
  const n = name === "typical" ? 5_000 : 1_000;
  Deno.bench({
    name: `JSON.parse(TextDecoder) ${name} (${bytes.length} B)${each}`,
    group: `decode ${name}`,
    baseline: true,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) JSON.parse(textDecoder.decode(bytes));
    }),
  });
  Deno.bench({
    name: `decodeEnvelope (strict + typed) ${name}${each}`,
    group: `decode ${name}`,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) decodeEnvelope(bytes);
    }),
  });
  Deno.bench({
    name: `TextEncoder(JSON.stringify) ${name}${each}`,
    group: `encode ${name}`,
    baseline: true,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) textEncoder.encode(JSON.stringify(plain));
    }),
  });
  Deno.bench({
    name: `encodeEnvelope (validated, sorted) ${name}${each}`,
    group: `encode ${name}`,
    n,
    fn: warmedUp(() => {
      for (let i = 0; i < k; i++) encodeEnvelope(envelope);
    }),
  });
}

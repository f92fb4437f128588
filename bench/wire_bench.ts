/**
 * Wire codec: strict decode + typed validation, and encode, of a typical `tool.invoke.request`
 * and of a 64 KiB payload, each beside its baseline measured in the same run — the bare
 * `JSON.parse(new TextDecoder().decode(bytes))` and `TextEncoder` + `JSON.stringify` of the same
 * message. `deno bench` prints each case's ratio to its group's baseline.
 *
 * Every case runs a fixed warmup and a fixed number of iterations (the same for a case and its
 * baseline), so both sides reach the optimizing compiler and get the same sample budget; left to
 * its own calibration, `deno bench` gave the two sides very different sample counts on a loaded
 * machine and the ratio swung by ±30 % from run to run.
 */
import { decodeEnvelope, encodeEnvelope } from "../mod.ts";
import { largeRequest, typicalRequest } from "./_payloads.ts";

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();

for (const [name, envelope] of [["typical", typicalRequest], ["64KiB", largeRequest]] as const) {
  const bytes = encodeEnvelope(envelope);
  const plain = JSON.parse(textDecoder.decode(bytes));
  const n = name === "typical" ? 100_000 : 1_000;
  const warmup = n / 10;
  Deno.bench({
    name: `JSON.parse(TextDecoder) ${name} (${bytes.length} B)`,
    group: `decode ${name}`,
    baseline: true,
    n,
    warmup,
    fn: () => {
      JSON.parse(textDecoder.decode(bytes));
    },
  });
  Deno.bench({
    name: `decodeEnvelope (strict + typed) ${name}`,
    group: `decode ${name}`,
    n,
    warmup,
    fn: () => {
      decodeEnvelope(bytes);
    },
  });
  Deno.bench({
    name: `TextEncoder(JSON.stringify) ${name}`,
    group: `encode ${name}`,
    baseline: true,
    n,
    warmup,
    fn: () => {
      textEncoder.encode(JSON.stringify(plain));
    },
  });
  Deno.bench({
    name: `encodeEnvelope (validated, sorted) ${name}`,
    group: `encode ${name}`,
    n,
    warmup,
    fn: () => {
      encodeEnvelope(envelope);
    },
  });
}

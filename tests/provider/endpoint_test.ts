// mod.ts runs beyond Deno: bundle it and run a Query, an Action and a Session built with the
// provider definitions on the machine's Node.js (skipped when `node` is absent).
import { assertEquals } from "@std/assert";

async function nodeVersion(): Promise<string | undefined> {
  try {
    const output = await new Deno.Command("node", { args: ["--version"], stdout: "piped" })
      .output();
    return output.success ? new TextDecoder().decode(output.stdout).trim() : undefined;
  } catch {
    return undefined;
  }
}

const version = await nodeVersion();

/** Lines of `source` that use `Deno.` with no `typeof Deno` / `globalThis.Deno` guard nearby. */
function unguardedDenoUses(source: string): string[] {
  const lines = source.split("\n");
  return lines.flatMap((line, i) => {
    if (!/\bDeno\./.test(line)) return [];
    const context = lines.slice(Math.max(0, i - 3), i + 1).join("\n");
    return /typeof Deno|globalThis\.Deno/.test(context) ? [] : [line.trim()];
  });
}

Deno.test({
  name: "the bundled mod.ts runs a Query, an Action and a Session on Node.js",
  ignore: version === undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "forge-tool-node-" });
    try {
      const bundle = `${dir}/mod.js`;
      const root = new URL("../../", import.meta.url);
      const bundled = await new Deno.Command(Deno.execPath(), {
        args: [
          "bundle",
          "--quiet",
          "--format",
          "esm",
          "-o",
          bundle,
          "tests/fixtures/node/mod_and_wire.ts",
        ],
        cwd: root,
        stderr: "piped",
      }).output();
      assertEquals(bundled.success, true, new TextDecoder().decode(bundled.stderr));
      assertEquals(unguardedDenoUses(await Deno.readTextFile(bundle)), []);
      const run = await new Deno.Command("node", {
        args: [new URL("../fixtures/node/run_endpoint.mjs", import.meta.url).pathname, bundle],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assertEquals(run.success, true, new TextDecoder().decode(run.stderr));
      const out = JSON.parse(new TextDecoder().decode(run.stdout));
      assertEquals(out, {
        query: { objects: ["cube"] },
        invalid: "FORGE_ENDPOINT_INVALID_ARGUMENTS",
        actionOutcome: "accepted",
        cancel: "accepted",
        sessionOutcome: "accepted",
        stop: "accepted",
        actionResult: ["cancelled", { travelled: 0.25 }],
        sessionResult: ["stopped", { followed: true }],
        events: [
          ["m-1", 0, "progress"],
          ["m-1", 1, "cancelled"],
          ["s-1", 0, "stopped"],
        ],
        logged: [],
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

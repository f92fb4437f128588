// Doc examples that can fail: every `ts` example in a public module asserts what it shows and
// imports only public entry points (the rule of std's _tools/check_docs.ts). `deno test --doc`
// runs them; this test keeps an example without an assertion from slipping in.
import { assertEquals } from "@std/assert";

// Examples that cannot run here, with the reason.
const IGNORED_EXAMPLES: Readonly<Record<string, string>> = {
  "src/dora/ffi.ts": "openDoraNode needs a dora daemon and the dora C node API library",
  "src/dora/client_transport.ts": "DoraToolClientTransport's example opens a real Dora node",
};

async function* sourceFiles(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* sourceFiles(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

interface Example {
  readonly file: string;
  readonly line: number;
  readonly fence: string;
  readonly code: string;
}

function examplesOf(file: string, text: string): Example[] {
  const examples: Example[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^\s*\*\s*```(ts.*)$/.exec(lines[i]);
    if (open === null) continue;
    let end = i + 1;
    while (end < lines.length && !/^\s*\*\s*```\s*$/.test(lines[end])) end++;
    const code = lines.slice(i + 1, end).map((line) => line.replace(/^\s*\*\s?/, "")).join("\n");
    examples.push({ file, line: i + 1, fence: open[1].trim(), code });
    i = end;
  }
  return examples;
}

async function allExamples(): Promise<Example[]> {
  const files = ["mod.ts", "wire.ts", "node.ts", "gateway.ts", "dora.ts"];
  for await (const file of sourceFiles("src")) files.push(file);
  const examples: Example[] = [];
  for (const file of files.sort()) {
    examples.push(...examplesOf(file, await Deno.readTextFile(file)));
  }
  return examples;
}

Deno.test("every doc example asserts what it shows", async () => {
  const examples = await allExamples();
  const missing = examples
    .filter((example) => example.fence === "ts" && !/\bassert\w*\(/.test(example.code))
    .map((example) => `${example.file}:${example.line}`);
  assertEquals(missing, []);
});

Deno.test("doc examples import only public entry points", async () => {
  const internal = (await allExamples())
    .filter((example) => /from\s+"\.{1,2}\//.test(example.code))
    .map((example) => `${example.file}:${example.line}`);
  assertEquals(internal, []);
});

Deno.test("only the listed examples are skipped, each for its reason", async () => {
  const ignored = (await allExamples())
    .filter((example) => example.fence !== "ts")
    .map((example) => example.file);
  assertEquals([...new Set(ignored)].sort(), Object.keys(IGNORED_EXAMPLES).sort());
});

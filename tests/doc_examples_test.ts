// Doc examples that can fail: every `ts` example in a public module asserts what it shows and
// imports only public entry points (the rule of std's _tools/check_docs.ts). `deno test --doc`
// runs them; this test keeps an example without an assertion from slipping in.
import { assertEquals } from "@std/assert";

// Examples that cannot run here, with the reason.
const IGNORED_EXAMPLES: Readonly<Record<string, string>> = {
  "src/dora/ffi.ts": "openDoraNode needs a dora daemon and the dora C node API library",
  "src/dora/client_transport.ts": "DoraToolClientTransport's example opens a real Dora node",
  "README.md": "serving over openDoraNode needs a dora daemon and the dora C node API library",
};

// The Markdown pages whose `ts` blocks run as doc tests (`deno test --doc README.md docs/`).
async function markdownFiles(): Promise<string[]> {
  const files = ["README.md"];
  for await (const entry of Deno.readDir("docs")) {
    if (entry.isFile && entry.name.endsWith(".md")) files.push(`docs/${entry.name}`);
  }
  return files.sort();
}

function markdownExamplesOf(file: string, text: string): Example[] {
  const examples: Example[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(ts.*)$/.exec(lines[i]);
    if (open === null) continue;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    examples.push({
      file,
      line: i + 1,
      fence: open[1].trim(),
      code: lines.slice(i + 1, end).join("\n"),
    });
    i = end;
  }
  return examples;
}

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
  for (const file of await markdownFiles()) {
    examples.push(...markdownExamplesOf(file, await Deno.readTextFile(file)));
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

// GitHub's heading anchors: lower case, punctuation dropped, each space a hyphen; a repeated
// heading gets -1, -2, ...
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutCodeBlocks(text).split("\n")) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading === null) continue;
    const slug = heading[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

function withoutCodeBlocks(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```\s*$/gm, "");
}

function directoryOf(file: string): string {
  const slash = file.lastIndexOf("/");
  return slash < 0 ? "" : file.slice(0, slash + 1);
}

function normalize(path: string): string {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "..") parts.pop();
    else if (part !== "." && part !== "") parts.push(part);
  }
  return parts.join("/");
}

/** Every relative link of `file` that names no existing file or no heading of it. */
async function brokenLinksOf(file: string, text: string): Promise<string[]> {
  const broken: string[] = [];
  for (const [, target] of withoutCodeBlocks(text).matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
    const hash = target.indexOf("#");
    const path = hash < 0 ? target : target.slice(0, hash);
    const anchor = hash < 0 ? undefined : target.slice(hash + 1);
    const resolved = path === "" ? file : normalize(directoryOf(file) + path);
    let content = text;
    if (path !== "") {
      try {
        const info = await Deno.stat(resolved);
        content = info.isFile ? await Deno.readTextFile(resolved) : "";
      } catch {
        broken.push(`${file}: ${target} (no such file)`);
        continue;
      }
    }
    if (anchor !== undefined && !anchorsOf(content).has(anchor)) {
      broken.push(`${file}: ${target} (no such heading)`);
    }
  }
  return broken;
}

Deno.test("every relative link in README.md and docs/ names an existing file and heading", async () => {
  const broken: string[] = [];
  for (const file of await markdownFiles()) {
    broken.push(...await brokenLinksOf(file, await Deno.readTextFile(file)));
  }
  assertEquals(broken, []);
});

Deno.test("the link check sees a missing file, a missing heading and a repeated heading", async () => {
  const text = "# Top\n\n## A b, c\n\n## A b, c\n\n```md\n[in code](nowhere.md)\n```\n" +
    "[ok](#a-b-c-1) [ok](docs/wire.md#the-wire) [no](#a-b-c-2) [no](docs/nowhere.md) " +
    "[web](https://example.com/x.md)\n";
  assertEquals(await brokenLinksOf("README.md", text), [
    "README.md: #a-b-c-2 (no such heading)",
    "README.md: docs/nowhere.md (no such file)",
  ]);
});

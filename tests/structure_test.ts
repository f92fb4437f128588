/**
 * The structure rules of DESIGN.md that code review alone would let slip: where shared internals
 * live, which module state remains, the one header matrix, the one Wire JSON layout, and the
 * explicit decode modes.
 */
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import {
  type Data,
  type Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  vectorFromArray,
} from "apache-arrow";
import { ToolEndpointError, ToolError } from "../mod.ts";
import {
  decodeEnvelope,
  endpointDescriptorFromPayload,
  TOOL_MESSAGE_TYPE_VALUES,
  TOOL_MESSAGE_TYPES,
  ToolEnvelope,
  type ToolEnvelopeInit,
  type ToolMessageType,
  ToolProtocolError,
  toolResultFromPayload,
} from "../wire.ts";
import { TOOL_MESSAGE_SCHEMA, toolEnvelopeToMessage, toolMessageToEnvelope } from "../dora.ts";
import {
  encodeJson,
  envelopeFromJson,
  envelopeHeaderBound,
  envelopeHeaderBytes,
  envelopeJson,
  envelopeJsonParts,
  utf8Length,
} from "../src/wire/codec.ts";
import { HEADER_MATRIX, type HeaderRule } from "../src/wire/header_matrix.ts";
import {
  canonicalHeight,
  canonicalNeedsWriter,
  copyJson,
  modelFaults,
} from "../src/_internal/json.ts";
import { bytes, PROTOCOL, text } from "./_helpers.ts";

const SRC = new URL("../src/", import.meta.url);

/** Every TypeScript module under src/, as paths relative to src/. */
async function sourceFiles(dir = SRC, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) {
      out.push(...await sourceFiles(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`));
    } else if (entry.name.endsWith(".ts")) {
      out.push(`${prefix}${entry.name}`);
    }
  }
  return out.sort();
}

interface ImportEdge {
  readonly from: string;
  readonly to: string;
  readonly typeOnly: boolean;
}

/** The relative imports and re-exports of every module under src/, resolved against src/. */
async function importEdges(): Promise<ImportEdge[]> {
  const edges: ImportEdge[] = [];
  const pattern = /^(import|export)(\s+type)?\s[^;]*?from\s+"(\.{1,2}\/[^"]+)";/gms;
  for (const file of await sourceFiles()) {
    const source = await Deno.readTextFile(new URL(file, SRC));
    for (const match of source.matchAll(pattern)) {
      const resolved = new URL(match[3], new URL(file, SRC)).href.slice(SRC.href.length);
      edges.push({ from: file, to: resolved, typeOnly: match[2] !== undefined });
    }
  }
  return edges;
}

function folderOf(path: string): string {
  return path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
}

Deno.test("structure: a _file.ts is imported only from its own folder", async () => {
  const crossing = (await importEdges()).filter((edge) => {
    const name = edge.to.slice(edge.to.lastIndexOf("/") + 1);
    return name.startsWith("_") && folderOf(edge.to) !== folderOf(edge.from);
  }).map((edge) => `${edge.from} -> ${edge.to}`);
  assertEquals(crossing, []);
});

Deno.test("structure: src/_internal imports only itself and the constants", async () => {
  const outward = (await importEdges())
    .filter((edge) => edge.from.startsWith("_internal/") && !edge.to.startsWith("_internal/"))
    .map((edge) => edge.to);
  assertEquals([...new Set(outward)], ["endpoint/constants.ts"]);
});

Deno.test("structure: errors.ts has no run-time import, so it cannot be part of a cycle", async () => {
  const edges = (await importEdges()).filter((edge) => edge.from === "endpoint/errors.ts");
  assertEquals(edges, [{ from: "endpoint/errors.ts", to: "endpoint/models.ts", typeOnly: true }]);
});

Deno.test("structure: no run-time import cycle among the modules of src/", async () => {
  const graph = new Map<string, string[]>();
  for (const edge of await importEdges()) {
    if (edge.typeOnly) continue;
    graph.set(edge.from, [...graph.get(edge.from) ?? [], edge.to]);
  }
  const state = new Map<string, "visiting" | "done">();
  const cycles: string[] = [];
  const visit = (node: string, trail: string[]): void => {
    if (state.get(node) === "done") return;
    if (state.get(node) === "visiting") {
      cycles.push([...trail.slice(trail.indexOf(node)), node].join(" -> "));
      return;
    }
    state.set(node, "visiting");
    for (const next of graph.get(node) ?? []) visit(next, [...trail, node]);
    state.set(node, "done");
  };
  for (const node of graph.keys()) visit(node, []);
  assertEquals(cycles, []);
});

Deno.test("structure: only the long-delay helper calls the global setTimeout", async () => {
  // A raw setTimeout fires a delay beyond 2^31 - 1 ms after about 1 ms; every timer goes through
  // src/_internal/timers.ts (SYSTEM_CLOCK too). A NodeClock's `clock.setTimeout(...)` is a method
  // call and allowed; an interface method declaration (`setTimeout(...): T;`) is no call.
  const calls: string[] = [];
  for (const file of await sourceFiles()) {
    if (file === "_internal/timers.ts") continue;
    const source = (await Deno.readTextFile(new URL(file, SRC)))
      .replace(/"(?:[^"\\\n]|\\.)*"/g, '""')
      .replace(/\/\*[\s\S]*?\*\//g, "")
      .replace(/\/\/[^\n]*/g, "");
    const pattern = /(?:(?<![\w$#.])|globalThis\.)(?:setTimeout|setInterval)\s*\(/g;
    for (const match of source.matchAll(pattern)) {
      // Skip a declaration: the parenthesis closes and a return type follows.
      let depth = 0;
      let end = match.index + match[0].length - 1;
      for (; end < source.length; end++) {
        if (source[end] === "(") depth++;
        else if (source[end] === ")" && --depth === 0) break;
      }
      if (/^\s*:/.test(source.slice(end + 1))) continue;
      calls.push(`${file}: ${match[0]}`);
    }
  }
  assertEquals(calls, []);
});

const ENTRY_POINTS = ["mod.ts", "wire.ts", "node.ts", "gateway.ts", "dora.ts", "mcp.ts"] as const;
const ROOT = new URL("../", import.meta.url);

/** The JSON that `deno <args>` prints (doc --json, info --json). */
async function denoJson(...args: string[]): Promise<Record<string, unknown>> {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdout: "piped",
    stderr: "null",
  }).output();
  assert(output.success, `deno ${args.join(" ")} failed`);
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

/** The names an entry point exports, as `deno doc --json` lists them. */
async function exportedNames(entry: string): Promise<string[]> {
  const doc = await denoJson("doc", "--json", entry);
  const [module] = Object.values(doc.nodes as Record<string, { symbols: { name: string }[] }>);
  return module.symbols.map((symbol) => symbol.name).sort();
}

Deno.test("entry points: @forge/tool exports at most 60 names, and no name is exported twice", async () => {
  const owners = new Map<string, string[]>();
  const counts: Record<string, number> = {};
  for (const entry of ENTRY_POINTS) {
    const names = await exportedNames(entry);
    counts[entry] = names.length;
    for (const name of names) owners.set(name, [...owners.get(name) ?? [], entry]);
  }
  assert(counts["mod.ts"] <= 60, `mod.ts exports ${counts["mod.ts"]} names`);
  const twice = [...owners].filter(([, entries]) => entries.length > 1);
  assertEquals(twice, []);
  // The binding's "already checked" path and the envelope's skip-validation mode stay internal.
  for (
    const internal of [
      "typedFactoryEnvelope",
      "checkTypedEnvelope",
      "validateExecutionResult",
    ]
  ) {
    assertEquals(owners.get(internal), undefined, internal);
  }
});

Deno.test("entry points: explicit export lists, no `export *` and no tracker comments", async () => {
  for (const entry of ENTRY_POINTS) {
    const source = await Deno.readTextFile(new URL(entry, ROOT));
    assertEquals(source.match(/^export (type )?\*/gm), null, entry);
    assertEquals(source.match(/^\/\/ ---/gm), null, entry);
  }
});

Deno.test("entry points: mod.ts, wire.ts and node.ts reach no npm package and no Deno.dlopen", async () => {
  for (const entry of ["mod.ts", "wire.ts", "node.ts"]) {
    const info = await denoJson("info", "--json", entry);
    const modules = (info.modules as { specifier: string }[]).map((module) => module.specifier);
    assertEquals(modules.filter((specifier) => !specifier.startsWith(ROOT.href)), [], entry);
    for (const specifier of modules) {
      const source = await Deno.readTextFile(new URL(specifier));
      assert(!source.includes("Deno.dlopen"), `${entry} reaches Deno.dlopen in ${specifier}`);
    }
  }
});

Deno.test("structure: the module-level mutable state left is the listed, explained set", async () => {
  // Module state is a `let`/`var`, a weak collection (a memo keyed by objects), or a `const`
  // record declared with an object type, on one line or several (a memo whose fields are
  // reassigned). The strict
  // decoder's fixed typed-array scratch buffers (src/wire/_json_scan.ts: written before they are
  // read within one scan, never read across calls) are no state and are not matched, nor is
  // envelope.ts's typedMark, the accessor of ToolEnvelope's private mark that the class's static
  // block sets once when the module is evaluated.
  const patterns = [
    /^(?:export\s+)?(?:let|var)\s+(\w+)/gm,
    /^(?:export\s+)?const\s+(\w+)(?::[^=\n]*)?\s*=\s*new\s+Weak(?:Map|Set)\b/gm,
    /^(?:export\s+)?const\s+(\w+)\s*:\s*\{\s*$/gm,
    /^(?:export\s+)?const\s+(\w+)\s*:\s*\{[^=\n]*\}\s*=/gm,
  ];
  const found: string[] = [];
  for (const file of await sourceFiles()) {
    const source = await Deno.readTextFile(new URL(file, SRC));
    for (const pattern of patterns) {
      for (const match of source.matchAll(pattern)) found.push(`${file}:${match[1]}`);
    }
  }
  assertEquals(found.sort(), [
    // The carrier rules' table of repeating header strings (_header_strings.ts): 256 short ASCII
    // values (protocol, message types, endpoint, instance and operation names) read before,
    // each hit confirmed byte by byte.
    "dora/_header_strings.ts:repeatedHeaders",
    // The fast encoder's output buffer (_output_slab.ts): small IPC streams are regions of one
    // shared 64 KiB buffer, each handed out once, instead of an ArrayBuffer each.
    "dora/_output_slab.ts:slab",
    // The IPC readers' schema memo (ipc.ts and _fast_ipc_read.ts share this one object): it skips
    // the checks of a schema message whose bytes already passed them.
    "dora/ipc.ts:schemaMemo",
    // Each handler's parts (_state.ts), registered by its constructor and keyed weakly by it, so
    // a health check reads the handler's load without building a state snapshot.
    "handler/_state.ts:parts",
  ]);
});

Deno.test("structure: a canonical value carries its facts itself, invisibly and unforgeably", () => {
  const canonical = copyJson({ b: [1, { c: 1e-7 }], a: "x" }, "value", modelFaults);
  const plain = { a: "x", b: [1, { c: 1e-7 }] };
  assertEquals(canonicalHeight(canonical), 3);
  assert(canonicalNeedsWriter(canonical as object));
  assertStrictEquals(copyJson(canonical, "value", modelFaults), canonical);
  // Invisible to JSON, key enumeration, for-in, deep equality and structuredClone.
  assertEquals(JSON.stringify(canonical), JSON.stringify(plain));
  assertEquals(Object.keys(canonical as object), ["a", "b"]);
  const seen: string[] = [];
  for (const key in canonical as object) seen.push(key);
  assertEquals(seen, ["a", "b"]);
  assertEquals(canonical, plain);
  const clone = structuredClone(canonical);
  assertEquals(clone, plain);
  assertEquals(canonicalHeight(clone), undefined);
  // Only the copy's roots are marked, and a plain value never is.
  assertEquals(canonicalHeight((canonical as { b: object }).b), undefined);
  assertEquals(canonicalHeight(plain), undefined);
  assert(canonicalNeedsWriter(plain));

  // Nothing on a canonical value can be copied onto another: no symbol, no extra own property.
  // A spread copy, an object with its prototype, or a Proxy (of a plain or a canonical value) is
  // still copied and checked.
  assertEquals(Object.getOwnPropertySymbols(canonical), []);
  assertEquals(Object.getOwnPropertyNames(canonical), ["a", "b"]);
  const bad = "\ud800";
  const forgeries: object[] = [
    { ...(canonical as object), bad },
    Object.assign(Object.create(Object.getPrototypeOf(canonical)), canonical, { bad }),
    new Proxy({ bad }, {}),
    new Proxy(canonical as object, {}),
  ];
  for (const forged of forgeries) {
    assertEquals(canonicalHeight(forged), undefined);
    assert(canonicalNeedsWriter(forged));
  }
  for (const forged of forgeries.slice(0, 3)) {
    assertThrows(
      () => copyJson(forged, "value", modelFaults),
      RangeError,
      "value.bad must contain valid Unicode scalar values",
    );
  }
  const copied = copyJson(forgeries[3], "value", modelFaults);
  assert(copied !== forgeries[3]);
  assertEquals(copied, plain);
  assertEquals(canonicalHeight(copied), 3);
});

// ---------------------------------------------------------------------------------------------
// One header matrix

const HEADERS = [
  "request_id",
  "invocation_id",
  "attempt_id",
  "operation",
  "endpoint_instance_id",
  "sequence",
] as const;
type Header = typeof HEADERS[number];

function ruleOf(messageType: ToolMessageType, header: Header): HeaderRule {
  const row = HEADER_MATRIX[messageType];
  switch (header) {
    case "request_id":
      return row.requestId;
    case "endpoint_instance_id":
      return row.endpointInstanceId;
    case "sequence":
      return row.sequence;
    default:
      return row.execution;
  }
}

const VALUES: Readonly<Record<Header, string | number>> = {
  request_id: "request-1",
  invocation_id: "invocation-1",
  attempt_id: "attempt-1",
  operation: "detect",
  endpoint_instance_id: "instance-1",
  sequence: 0,
};

/** Whether each of the three readers accepts the headers `present` for `messageType`. */
function verdicts(messageType: ToolMessageType, present: ReadonlySet<Header>) {
  const has = (header: Header) => present.has(header) ? VALUES[header] : undefined;
  const init = {
    messageType,
    endpointId: "vision.yolo",
    requestId: has("request_id"),
    invocationId: has("invocation_id"),
    attemptId: has("attempt_id"),
    operation: has("operation"),
    endpointInstanceId: has("endpoint_instance_id"),
    sequence: has("sequence"),
  } as ToolEnvelopeInit;
  const wire: Record<string, unknown> = {
    protocol: PROTOCOL,
    message_type: messageType,
    endpoint_id: "vision.yolo",
    payload: {},
  };
  for (const header of present) wire[header] = VALUES[header];
  const row: Record<string, unknown> = {
    protocol: PROTOCOL,
    message_type: messageType,
    endpoint_id: "vision.yolo",
    payload_json: "{}",
  };
  for (const header of present) {
    row[header] = header === "sequence" ? 0n : VALUES[header];
  }
  const columns: Data[] = TOOL_MESSAGE_SCHEMA.fields.map((field: Field) =>
    vectorFromArray([row[field.name] ?? null], field.type).data[0]
  );
  const fields = [...TOOL_MESSAGE_SCHEMA.fields];
  const batch = new RecordBatch(
    new Schema(fields),
    makeData({ type: new Struct(fields), length: 1, nullCount: 0, children: columns }),
  );
  const accepts = (read: () => unknown) => {
    try {
      read();
      return true;
    } catch (error) {
      if (!(error instanceof ToolProtocolError)) throw error;
      return false;
    }
  };
  return {
    constructor: accepts(() => new ToolEnvelope(init)),
    decoder: accepts(() => envelopeFromJson(wire, false)),
    carrier: accepts(() => toolMessageToEnvelope(batch)),
  };
}

Deno.test("header matrix: the envelope, the decoder and the carrier accept exactly what the table allows", () => {
  assertEquals(Object.keys(HEADER_MATRIX), [...TOOL_MESSAGE_TYPE_VALUES]);
  let cases = 0;
  for (const messageType of TOOL_MESSAGE_TYPES) {
    for (let mask = 0; mask < 1 << HEADERS.length; mask++) {
      const present = new Set(HEADERS.filter((_, bit) => (mask & (1 << bit)) !== 0));
      const allowed = HEADERS.every((header) => {
        const rule = ruleOf(messageType, header);
        return rule === "optional" || (rule === "required") === present.has(header);
      });
      const expected = { constructor: allowed, decoder: allowed, carrier: allowed };
      assertEquals(verdicts(messageType, present), expected, `${messageType} ${[...present]}`);
      cases++;
    }
  }
  assertEquals(cases, 14 * 64);
});

// ---------------------------------------------------------------------------------------------
// One Wire JSON layout

const AWKWARD = [
  'a,"payload":{"x":1},"protocol":"b',
  'quote " backslash \\ tab \t nul \u0000',
  "non-ASCII é 中 😀",
  "\u2028 line separator",
];

Deno.test("layout: head + payload + tail is the envelope text, and the sizes follow from it", () => {
  for (const value of AWKWARD) {
    const envelopes = [
      new ToolEnvelope({
        messageType: "tool.event",
        invocationId: value,
        attemptId: value,
        endpointId: value,
        endpointInstanceId: value,
        operation: value,
        sequence: 12345,
        payload: { data: { text: value, tiny: 1e-7, "10": 1 }, type: "progress" },
      }),
      new ToolEnvelope({
        messageType: "tool.invoke.response",
        requestId: value,
        invocationId: value,
        attemptId: value,
        endpointId: value,
        operation: value,
        payload: {
          outcome: "completed",
          result: { status: "succeeded", outputs: { [value]: [value, -0.00001] } },
        },
      }),
    ];
    for (const envelope of envelopes) {
      const parts = envelopeJsonParts(envelope);
      const textOf = envelopeJson(envelope);
      assertStrictEquals(parts.head + parts.payload + parts.tail, textOf);
      assertStrictEquals(parts.payload, encodeJson(envelope.payload, "payload"));
      assert(parts.head.endsWith('"payload":'));
      assert(parts.tail.startsWith(',"protocol":'));
      assertEquals(JSON.parse(textOf).payload, JSON.parse(parts.payload));
      const headerBytes = envelopeHeaderBytes(envelope);
      assertStrictEquals(headerBytes, utf8Length(textOf) - utf8Length(parts.payload));
      assert(envelopeHeaderBound(envelope) >= headerBytes);
      // The carrier's payload_json is the payload part, even when a header value spells
      // `,"payload":` (the text used to be searched for that marker).
      const batch = toolEnvelopeToMessage(envelope);
      assertStrictEquals(batch.getChildAt(9)!.get(0), parts.payload);
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Explicit modes instead of module globals

Deno.test("envelope: a second constructor argument never skips a check or the copy", () => {
  const init: ToolEnvelopeInit = {
    messageType: "endpoint.unregister",
    requestId: "unregister-\ud800",
    endpointId: "vision.yolo",
    endpointInstanceId: "instance-1",
  };
  const Construct = ToolEnvelope as unknown as new (init: unknown, mode: unknown) => ToolEnvelope;
  for (const mode of ["checked", "decoded", Symbol("checked payload"), true]) {
    const error = assertThrows(() => new Construct(init, mode), ToolProtocolError);
    assertEquals([error.path, error.message], [
      "request_id",
      "must contain only valid Unicode scalar values",
    ]);
    const payload = { z: 1, a: [1] };
    const envelope = new Construct({ ...init, requestId: "unregister-1", payload }, mode);
    assert(envelope.payload !== payload);
    assertEquals(Object.keys(envelope.payload), ["a", "z"]);
    assert(Object.isFrozen(envelope.payload));
  }
});

Deno.test("decoders: adopted JSON fields are plain frozen objects, never the adoption marker", () => {
  const result = toolResultFromPayload({ status: "succeeded", outputs: { b: { c: 1 }, a: [] } });
  assertStrictEquals(Object.getPrototypeOf(result.outputs), Object.prototype);
  assert(Object.isFrozen(result.outputs) && Object.isFrozen(result.outputs.b));
  assertEquals(Object.keys(result.outputs), ["a", "b"]);
  // A decoded invoke request: the envelope's payload is taken from the strict decoder as it is;
  // the models built from it copy it into frozen values.
  const request = decodeEnvelope(
    text(bytes(
      '{"attempt_id":"a","endpoint_id":"e","invocation_id":"i","message_type":"tool.invoke.request",' +
        '"operation":"op","payload":{"arguments":{"k":{"v":1}},"context":{"implementation_id":"x",' +
        '"metadata":{"m":1},"tool_id":"t"}},"protocol":"' + PROTOCOL + '","request_id":"r"}',
    )),
  );
  assertEquals(request.payload, {
    arguments: { k: { v: 1 } },
    context: { implementation_id: "x", metadata: { m: 1 }, tool_id: "t" },
  });
});

Deno.test("errors: ToolEndpointError tells a ToolError from a look-alike without importing the models", () => {
  const error = new ToolError({ code: "BUSY", message: "not admitted" });
  assertStrictEquals(new ToolEndpointError(error).error, error);
  const lookAlike = { code: "BUSY", message: "not admitted", retryable: false, details: {} };
  for (const brand of [Symbol("forge.tool.ToolError"), Symbol.for("forge.tool.ToolError")]) {
    assertThrows(
      () => new ToolEndpointError({ ...lookAlike, [brand]: true } as never),
      TypeError,
      "error must be a ToolError",
    );
  }
});

Deno.test("repr: the descriptor version message quotes the value as Python's repr does", () => {
  const operations = [{
    name: "detect",
    semantics: "query",
    cancellable: false,
    stoppable: false,
    status_supported: false,
    max_concurrency: 1,
  }];
  const cases: [unknown, string][] = [
    [null, "None"],
    [true, "True"],
    ["it's", `"it's"`],
    ["v2", "'v2'"],
    [2, "2"],
  ];
  for (const [found, repr] of cases) {
    const error = assertThrows(
      () =>
        endpointDescriptorFromPayload({
          descriptor: { protocol_version: found, endpoint_id: "vision.yolo", operations },
        }),
      ToolProtocolError,
    );
    assertEquals(
      [error.code, error.message],
      ["FORGE_PROTOCOL_UNSUPPORTED_VERSION", `expected '${PROTOCOL}', found ${repr}`],
    );
  }
});

// ---------------------------------------------------------------------------------------------
// gwmove (issue 18 §2.3): the gateway router on envelopes in src/gateway/, Dora framing at the edge

Deno.test("gateway: gateway.ts reaches no npm package but prom-client, no Deno.dlopen and no src/dora/ module", async () => {
  const info = await denoJson("info", "--json", "gateway.ts");
  const modules = (info.modules as { specifier: string }[]).map((module) => module.specifier);
  // router (issue 19 §4): the metrics exposition is prom-client's, imported by metrics.ts only.
  const outside = modules.filter((specifier) => !specifier.startsWith(ROOT.href));
  const packages = new Set(outside.map((specifier) => specifier.match(/^npm:\/?(@?[^@/]+)/)?.[1]));
  assertEquals([...packages], ["prom-client"], outside.join("\n"));
  const dora = new URL("src/dora/", ROOT).href;
  assertEquals(modules.filter((specifier) => specifier.startsWith(dora)), []);
  assert(modules.includes(new URL("src/gateway/gateway.ts", ROOT).href), modules.join("\n"));
  for (const specifier of modules.filter((specifier) => specifier.startsWith(ROOT.href))) {
    const source = await Deno.readTextFile(new URL(specifier));
    assert(!source.includes("Deno.dlopen"), `gateway.ts reaches Deno.dlopen in ${specifier}`);
    assert(!/from\s+["'](?:npm:)?apache-arrow/.test(source), `${specifier} imports apache-arrow`);
  }
});

Deno.test("gateway: src/gateway/ files stay under 500 lines and its _x.ts modules stay private", async () => {
  const files = await sourceFiles();
  const gateway = files.filter((file) => file.startsWith("gateway/"));
  assert(gateway.length >= 6, gateway.join(", "));
  for (const file of gateway) {
    const lines = (await Deno.readTextFile(new URL(file, SRC))).split("\n").length;
    assert(lines <= 500, `src/${file} has ${lines} lines`);
  }
  for (const file of files.filter((file) => !file.startsWith("gateway/"))) {
    const source = await Deno.readTextFile(new URL(file, SRC));
    assertEquals(source.match(/["'][./]*gateway\/_\w+\.ts["']/g), null, `src/${file}`);
  }
});

Deno.test("gateway: the edge hooks of the router stay internal to the package", async () => {
  for (const entry of ENTRY_POINTS) {
    const names = await exportedNames(entry);
    for (const internal of ["attachFramedRoute", "receiveFramed", "describeEnvelope"]) {
      assert(!names.includes(internal), `${entry} exports ${internal}`);
    }
    assert(!names.includes("serveGatewayLoopbackRoute"), entry);
  }
});

// ---------------------------------------------------------------------------------------------
// src/provider/ along its seams (issue 18 §2.4)

/** Every .ts file under `dir` (relative to the repository root), recursively. */
async function tsFilesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(new URL(dir, ROOT))) {
    const path = `${dir}${entry.name}`;
    if (entry.isDirectory) out.push(...await tsFilesUnder(`${path}/`));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

Deno.test("structure: no module in src/provider/ is over 500 lines", async () => {
  const long: string[] = [];
  for (const file of await tsFilesUnder("src/provider/")) {
    const lines = (await Deno.readTextFile(new URL(file, ROOT))).split("\n").length - 1;
    if (lines > 500) long.push(`${file}: ${lines}`);
  }
  assertEquals(long, []);
});

Deno.test("structure: nothing outside src/provider/ (and its tests) imports src/provider/_*", async () => {
  const files = [
    ...ENTRY_POINTS,
    ...await tsFilesUnder("src/"),
    ...await tsFilesUnder("tests/"),
    ...await tsFilesUnder("bench/"),
    ...await tsFilesUnder("examples/"),
  ].filter((file) => !file.startsWith("src/provider/") && !file.startsWith("tests/provider/"));
  const pattern = /(?:import|export)[^;]*?from\s+"([^"]+)";/gs;
  const crossing: string[] = [];
  for (const file of files) {
    const base = new URL(file, ROOT);
    for (const match of (await Deno.readTextFile(base)).matchAll(pattern)) {
      if (!match[1].startsWith(".")) continue;
      const target = new URL(match[1], base).href.slice(ROOT.href.length);
      if (target.startsWith("src/provider/_")) crossing.push(`${file} -> ${target}`);
    }
  }
  assertEquals(crossing, []);
});

// --- MCP: one entry point imports the SDK -------------------------------------------------------

Deno.test("structure: only src/mcp/ and mcp.ts import the MCP SDK; the other entries reach none of it", async () => {
  const sdk = /from\s+"(?:npm:)?@modelcontextprotocol\/sdk/;
  const importers: string[] = [];
  for (const file of await sourceFiles()) {
    if (sdk.test(await Deno.readTextFile(new URL(file, SRC)))) importers.push(`src/${file}`);
  }
  for (const entry of ENTRY_POINTS) {
    if (sdk.test(await Deno.readTextFile(new URL(entry, ROOT)))) importers.push(entry);
  }
  assertEquals(importers.filter((file) => !file.startsWith("src/mcp/")), []);
  assert(importers.includes("src/mcp/server.ts"));
  for (const entry of ENTRY_POINTS.filter((entry) => entry !== "mcp.ts")) {
    const info = await denoJson("info", "--json", entry);
    const modules = (info.modules as { specifier: string }[]).map((module) => module.specifier);
    assertEquals(
      modules.filter((specifier) => specifier.includes("modelcontextprotocol")),
      [],
      entry,
    );
    assertEquals(modules.filter((specifier) => specifier.includes("/src/mcp/")), [], entry);
  }
});

// ---------------------------------------------------------------------------------------------
// Tests mirror src/ (issue 18 §5), one generator library, the wire.ts surface

/** The `/`-separated paths, relative to the repository, of the files under `dir`. */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(new URL(`${dir}/`, ROOT))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) out.push(...await filesUnder(path));
    else if (entry.isFile) out.push(path);
  }
  return out.sort();
}

// The repo-level suites at tests/ top; every module suite lives in its tests/<folder>/.
const TOP_LEVEL_TESTS = [
  "bench_summary_test.ts",
  "doc_examples_test.ts",
  "examples_test.ts",
  "forge_adapter_test.ts",
  "fuzz_test.ts",
  "structure_test.ts",
];

Deno.test("tests mirror src: a *_test.ts lives in tests/<folder>/ of a src/<folder>/, or is a listed top-level suite", async () => {
  const folders = new Set<string>();
  for await (const entry of Deno.readDir(new URL("src/", ROOT))) {
    if (entry.isDirectory) folders.add(entry.name);
  }
  const misplaced: string[] = [];
  const top: string[] = [];
  for (const path of await filesUnder("tests")) {
    if (!path.endsWith("_test.ts")) continue;
    const parts = path.split("/");
    if (parts.length === 2) top.push(parts[1]);
    else if (parts.length !== 3 || !folders.has(parts[1])) misplaced.push(path);
  }
  assertEquals(misplaced, []);
  // Exactly the listed suites: an unlisted one is misplaced, a listed one that is gone is rot.
  assertEquals(top.sort(), [...TOP_LEVEL_TESTS]);
});

// The factories of the 14 message types (tool.error has two: bare and correlated).
const ENVELOPE_FACTORIES = [
  "makeRegistrationEnvelope",
  "makeUnregisterEnvelope",
  "makeEndpointRegistryResponseEnvelope",
  "makeEndpointStatusEnvelope",
  "makeInvokeRequestEnvelope",
  "makeInvokeResponseEnvelope",
  "makeStatusRequestEnvelope",
  "makeStatusResponseEnvelope",
  "makeResultRequestEnvelope",
  "makeResultResponseEnvelope",
  "makeControlRequestEnvelope",
  "makeControlResponseEnvelope",
  "makeEventEnvelope",
  "makeErrorEnvelope",
  "makeErrorResponseEnvelope",
];

Deno.test("one generator library: only tests/_gen.ts builds envelopes of all 14 message types", async () => {
  // A file that calls every factory builds all 14 types: the generator library, and the
  // factories' own suite. Any other such file under tests/ or tools/ is a second generator.
  const allowed = ["tests/_gen.ts", "tests/wire/factories_test.ts"];
  const builders: string[] = [];
  for (const path of [...await filesUnder("tests"), ...await filesUnder("tools")]) {
    if (!path.endsWith(".ts") || path.startsWith("tests/fixtures/")) continue;
    const source = await Deno.readTextFile(new URL(path, ROOT));
    if (ENVELOPE_FACTORIES.every((name) => source.includes(`${name}(`))) builders.push(path);
  }
  assertEquals(builders.filter((path) => !allowed.includes(path)), []);
  assert(builders.includes("tests/_gen.ts"), "tests/_gen.ts builds every message type");
  for (const gone of ["tests/_random.ts", "tests/fuzz/_gen.ts"]) {
    assertEquals(await Deno.stat(new URL(gone, ROOT)).then(() => gone, () => undefined), undefined);
  }
});

Deno.test("wire.ts: 145 names, the Wire plus the types @forge/tool signatures name", async () => {
  const names = await exportedNames("wire.ts");
  assertEquals(names.length, 145);
  // The signature types are documented in wire.ts's module doc; each keeps its doc comment.
  const source = await Deno.readTextFile(new URL("wire.ts", ROOT));
  for (const name of ["Awaitable", "DispatchOptions", "ToolOperations", "ToolClientErrorInit"]) {
    assert(names.includes(name), name);
    assert(source.includes(`\`${name}\``), `wire.ts's module doc names ${name}`);
  }
  // No public signature names isStandardSchema (a function): it left the entry in 1.0.
  assert(!names.includes("isStandardSchema"), "isStandardSchema stays internal");
});

// --- src/client (issue 18 §2.1) ------------------------------------------------------------------

/** Every TypeScript file of the repository outside node_modules and .git, relative to the root. */
async function repositoryFiles(dir = ROOT, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    if (entry.isDirectory) {
      out.push(
        ...await repositoryFiles(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`),
      );
    } else if (entry.name.endsWith(".ts")) {
      out.push(`${prefix}${entry.name}`);
    }
  }
  return out.sort();
}

Deno.test("structure: no file in src/client is over 500 lines; one over 400 says why it stays whole", async () => {
  const over: string[] = [];
  for (const file of await sourceFiles(new URL("client/", SRC), "client/")) {
    const source = await Deno.readTextFile(new URL(file, SRC));
    const lines = source.split("\n").length - 1;
    if (lines > 500) over.push(`${file}: ${lines} lines`);
    else if (lines > 400 && !/^\/\/ [^\n]*whole/.test(source)) {
      over.push(`${file}: ${lines} lines without a header saying why it stays whole`);
    }
  }
  assertEquals(over, []);
});

Deno.test("structure: nothing outside src/client (and its tests/client mirror) imports src/client/_*", async () => {
  const pattern = /^(?:import|export)[^;]*?from\s+"(\.{1,2}\/[^"]+)";/gms;
  const crossing: string[] = [];
  for (const file of await repositoryFiles()) {
    if (file.startsWith("src/client/") || file.startsWith("tests/client/")) continue;
    const source = await Deno.readTextFile(new URL(file, ROOT));
    for (const match of source.matchAll(pattern)) {
      const target = new URL(match[1], new URL(file, ROOT)).href.slice(ROOT.href.length);
      if (target.startsWith("src/client/_")) crossing.push(`${file} -> ${target}`);
    }
  }
  assertEquals(crossing, []);
});

// ---------------------------------------------------------------------------------------------
// dora/ and node/ (issue 18 §2.7): file sizes, stays-whole headers, private modules.

/** The files of src/dora/ and src/node/ allowed above 500 lines. None are left. */
const DORA_NODE_OVER_500: readonly string[] = [];
/** The files of src/dora/ and src/node/ above 400 lines: each says why it stays whole. */
const DORA_NODE_STAYS_WHOLE = [
  "dora/binding.ts",
  "dora/carrier.ts",
  "dora/ipc.ts",
  "dora/runner.ts",
  "node/registration.ts",
  "node/registry.ts",
];
/** src/dora/gateway.ts is moving to src/gateway/ (another branch); its size is judged there. */
const DORA_NODE_ELSEWHERE = ["dora/gateway.ts"];

async function doraNodeLineCounts(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const file of await sourceFiles()) {
    if (!/^(dora|node)\//.test(file) || DORA_NODE_ELSEWHERE.includes(file)) continue;
    const source = await Deno.readTextFile(new URL(file, SRC));
    counts.set(file, source.split("\n").length - (source.endsWith("\n") ? 1 : 0));
  }
  return counts;
}

Deno.test("structure: no module of src/dora/ or src/node/ is over 500 lines but the listed ones", async () => {
  const over = [...await doraNodeLineCounts()].filter(([, lines]) => lines > 500)
    .map(([file]) => file);
  assertEquals(over, [...DORA_NODE_OVER_500]);
});

Deno.test("structure: a module of src/dora/ or src/node/ above 400 lines starts by saying why it stays whole", async () => {
  const long: string[] = [];
  for (const [file, lines] of await doraNodeLineCounts()) {
    if (lines <= 400) continue;
    long.push(file);
    const first = (await Deno.readTextFile(new URL(file, SRC))).split("\n", 1)[0];
    assert(/^\/\/ Stays whole: \S/.test(first), `${file} (${lines} lines) has no header: ${first}`);
  }
  assertEquals(long, DORA_NODE_STAYS_WHOLE);
});

Deno.test("structure: only src/dora/ (and tests/dora/) import src/dora/_*, only src/node/ (and tests/node/) src/node/_*", async () => {
  const crossing = (await importEdges()).filter((edge) =>
    /^(dora|node)\/_/.test(edge.to) && folderOf(edge.to) !== folderOf(edge.from)
  ).map((edge) => `${edge.from} -> ${edge.to}`);
  const tests = new URL("./", import.meta.url);
  const outside: string[] = [];
  const walk = async (dir: URL, prefix: string) => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isDirectory) {
        if (entry.name !== "node_modules") {
          await walk(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`);
        }
      } else if (entry.name.endsWith(".ts")) {
        const source = await Deno.readTextFile(new URL(entry.name, dir));
        for (const match of source.matchAll(/from\s+"[./]*\/src\/(dora|node)\/_[^"]*"/g)) {
          if (prefix !== `${match[1]}/`) outside.push(`tests/${prefix}${entry.name}`);
        }
      }
    }
  };
  await walk(tests, "");
  assertEquals([...crossing, ...outside], []);
});

// ---------------------------------------------------------------------------------------------
// The gateway's HTTP service (issue 19 §1): on Deno.serve + URLPattern, layered on the router

Deno.test("gateway http: only src/gateway/http.ts calls Deno.serve, and the router imports no HTTP module", async () => {
  const files = await sourceFiles();
  const serving = [];
  for (const file of files) {
    const source = await Deno.readTextFile(new URL(file, SRC));
    if (/Deno\.serve\s*\(/.test(source)) serving.push(file);
  }
  assertEquals(serving, ["gateway/http.ts"]);
  const http = /^gateway\/(?:_?http\w*|_store)\.ts$/;
  const routerFiles = files.filter((file) => file.startsWith("gateway/") && !http.test(file));
  assert(routerFiles.includes("gateway/gateway.ts"), routerFiles.join(", "));
  for (const file of routerFiles) {
    const source = await Deno.readTextFile(new URL(file, SRC));
    assertEquals(source.match(/from\s+["']\.\/(?:_?http\w*|_store)\.ts["']/g), null, `src/${file}`);
  }
});

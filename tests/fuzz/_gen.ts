// Arbitraries shared by the fuzz targets: JSON values with hostile keys, valid envelopes of all
// 14 message types, and byte-level mutations of valid messages (flips, truncations, splices of
// two valid messages, deep nesting, huge numbers, surrogates, oversize).
import fc from "fast-check";
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  EndpointRegistryResponse,
  EndpointStatus,
  makeControlRequestEnvelope,
  makeControlResponseEnvelope,
  makeEndpointRegistryResponseEnvelope,
  makeEndpointStatusEnvelope,
  makeErrorEnvelope,
  makeErrorResponseEnvelope,
  makeEventEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import { MAX } from "../_helpers.ts";

/** Keys that are dangerous in JavaScript objects, array-index-like keys, and the empty key. */
export const HOSTILE_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "toJSON",
  "",
  "0",
  "10",
  "4294967295",
  "-1",
  "a.b",
];

const TEXT_UNITS = [
  ..."abcxyz019 ",
  "\u0000",
  "\u001f",
  '"',
  "\\",
  "/",
  "\u007f",
  "\u0080",
  "é",
  "方",
  "\u2028",
  "\ufeff",
  "\uffff",
  "😀",
  "\u{10ffff}",
];

/** Text without lone surrogates, with escapes, controls and astral characters. */
export const textArb: fc.Arbitrary<string> = fc.string({
  unit: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...TEXT_UNITS) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  ),
  maxLength: 12,
});

/** A non-blank identifier (a visible first character) without lone surrogates. */
export const idArb: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(..."abcdefghijklmnopqrstuvwxyzABCXYZ0123456789é方😀"),
    fc.string({ unit: fc.constantFrom(..."abz09-._:/ \u00a0é方😀\u200b"), maxLength: 10 }),
  )
  .map(([first, rest]) => first + rest);

/** An object key: mostly text, sometimes a hostile key. */
export const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: textArb },
  { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_KEYS) },
);

/** A finite float that is not an integer (integral floats do not re-encode byte for byte). */
const floatArb = fc
  .double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 })
  .filter((x) => !Number.isInteger(x));

/** A safe integer, never -0. */
const intArb = fc
  .oneof(
    fc.integer({ min: -1000, max: 1000 }),
    fc.constantFrom(0, 1, -1, MAX, -MAX, 2 ** 31, -(2 ** 32)),
    fc.maxSafeInteger(),
  )
  .map((x) => (x === 0 ? 0 : x));

/** Builds an object with own data properties (so "__proto__" is a key, not a prototype). */
export function ownObject(
  entries: readonly (readonly [string, unknown])[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    Object.defineProperty(out, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

const jsonTie = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    intArb,
    floatArb,
    textArb,
    fc.array(tie("value"), { maxLength: 4 }),
    tie("object"),
  ),
  object: fc
    .uniqueArray(fc.tuple(keyArb, tie("value")), { maxLength: 5, selector: ([key]) => key })
    .map(ownObject),
}));

/** A JSON object of random depth and content (unique keys, interoperable values). */
export const jsonObjectArb = jsonTie.object as fc.Arbitrary<Record<string, unknown>>;

const contextArb = fc
  .record({
    invocationId: idArb,
    attemptId: idArb,
    toolId: idArb,
    implementationId: idArb,
    endpointId: idArb,
    operation: idArb,
    callerId: fc.option(idArb, { nil: undefined }),
    deadlineMs: fc.option(fc.oneof(fc.constant(0), fc.constant(MAX), fc.maxSafeNat()), {
      nil: undefined,
    }),
    metadata: jsonObjectArb,
  })
  .map((init) =>
    new ToolContext({
      executionKey: new ToolExecutionKey({
        invocationId: init.invocationId,
        attemptId: init.attemptId,
      }),
      toolId: init.toolId,
      implementationId: init.implementationId,
      endpointId: init.endpointId,
      operation: init.operation,
      callerId: init.callerId,
      deadlineMs: init.deadlineMs,
      metadata: init.metadata,
    })
  );

const errorArb = fc
  .record({ code: idArb, message: idArb, retryable: fc.boolean(), details: jsonObjectArb })
  .map((init) => new ToolError(init));

const resultArb: fc.Arbitrary<ToolResult> = fc
  .record({
    status: fc.constantFrom("succeeded", "failed", "cancelled", "stopped", "unknown" as const),
    outputs: jsonObjectArb,
    error: errorArb,
  })
  .map(({ status, outputs, error }) =>
    status === "failed" || status === "unknown"
      ? new ToolResult({ status, outputs, error })
      : new ToolResult({ status, outputs })
  );

const statusArb: fc.Arbitrary<ToolExecutionStatus> = fc
  .record({
    phase: fc.constantFrom(
      "accepted",
      "running",
      "stopping",
      "completed",
      "failed",
      "cancelled",
      "stopped",
      "unknown" as const,
    ),
    details: jsonObjectArb,
    error: errorArb,
  })
  .map(({ phase, details, error }) =>
    phase === "failed" || phase === "unknown"
      ? new ToolExecutionStatus({ phase, details, error })
      : new ToolExecutionStatus({ phase, details })
  );

const requestOptionsArb = fc.record({
  requestId: idArb,
  endpointInstanceId: fc.option(idArb, { nil: undefined, freq: 3 }),
});

const descriptorArb = fc
  .record({
    endpointId: idArb,
    operations: fc.uniqueArray(
      fc.record({
        name: idArb,
        semantics: fc.constantFrom("query", "action", "session" as const),
        flag: fc.boolean(),
        maxConcurrency: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.constant(MAX)),
      }),
      { minLength: 1, maxLength: 3, selector: (operation) => operation.name },
    ),
  })
  .map(({ endpointId, operations }) =>
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId,
      operations: operations.map(({ name, semantics, flag, maxConcurrency }) =>
        semantics === "query"
          ? new ToolOperationDescriptor({ name, semantics, maxConcurrency })
          : new ToolOperationDescriptor({
            name,
            semantics,
            cancellable: semantics === "action" && flag,
            stoppable: semantics === "session" && flag,
            statusSupported: true,
            maxConcurrency,
          })
      ),
    })
  );

/** A valid envelope of any of the 14 message types, built through the factories. */
export const envelopeArb: fc.Arbitrary<ToolEnvelope> = fc.oneof(
  fc.tuple(descriptorArb, idArb, idArb).map(([descriptor, instance, requestId]) =>
    makeRegistrationEnvelope(descriptor, { endpointInstanceId: instance, requestId })
  ),
  fc.tuple(idArb, idArb, idArb).map(([endpointId, instance, requestId]) =>
    makeUnregisterEnvelope({ endpointId, endpointInstanceId: instance, requestId })
  ),
  fc
    .tuple(idArb, idArb, idArb, fc.boolean(), fc.maxSafeNat(), fc.integer({ min: 1, max: MAX }))
    .map(([endpointId, instance, requestId, rejected, revision, ttl]) => {
      const request = makeUnregisterEnvelope({
        endpointId,
        endpointInstanceId: instance,
        requestId,
      });
      void ttl;
      return makeEndpointRegistryResponseEnvelope(
        rejected
          ? new EndpointRegistryResponse({
            operation: "unregister",
            status: "rejected",
            registryRevision: revision,
            error: new ToolError({ code: "X", message: "no", retryable: false }),
          })
          : new EndpointRegistryResponse({
            operation: "unregister",
            status: "accepted",
            registryRevision: revision,
          }),
        request,
      );
    }),
  fc
    .record({
      endpointId: idArb,
      state: fc.constantFrom("ready", "busy", "degraded", "unavailable" as const),
      activeInvocations: fc.maxSafeNat(),
      details: jsonObjectArb,
      instance: idArb,
    })
    .map(({ instance, ...init }) =>
      makeEndpointStatusEnvelope(new EndpointStatus(init), { endpointInstanceId: instance })
    ),
  fc.tuple(jsonObjectArb, contextArb, requestOptionsArb).map(([args, context, options]) =>
    makeInvokeRequestEnvelope(new ToolRequest({ arguments: args }), context, options)
  ),
  fc
    .tuple(contextArb, requestOptionsArb, fc.oneof(resultArb, errorArb, jsonObjectArb))
    .map(([context, options, outcome]) => {
      const request = makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: {} }),
        context,
        options,
      );
      const value = outcome instanceof ToolResult || outcome instanceof ToolError
        ? outcome
        : new ToolAccepted({ details: outcome });
      return makeInvokeResponseEnvelope(value, request);
    }),
  fc.tuple(contextArb, requestOptionsArb).map(([context, options]) =>
    makeStatusRequestEnvelope(context, options)
  ),
  fc.tuple(contextArb, requestOptionsArb, statusArb).map(([context, options, status]) =>
    makeStatusResponseEnvelope(status, makeStatusRequestEnvelope(context, options))
  ),
  fc.tuple(contextArb, requestOptionsArb).map(([context, options]) =>
    makeResultRequestEnvelope(context, options)
  ),
  fc
    .tuple(contextArb, requestOptionsArb, fc.option(resultArb, { nil: undefined }), fc.boolean())
    .map(([context, options, result, notFound]) =>
      makeResultResponseEnvelope(
        result !== undefined
          ? new ToolResultResponse({ status: "available", result })
          : new ToolResultResponse({ status: notFound ? "not_found" : "pending" }),
        makeResultRequestEnvelope(context, options),
      )
    ),
  fc
    .tuple(
      contextArb,
      requestOptionsArb,
      fc.constantFrom("cancel", "stop" as const),
      fc.option(idArb),
    )
    .map(([context, options, command, reason]) =>
      makeControlRequestEnvelope(command, context, { ...options, reason: reason ?? undefined })
    ),
  fc
    .tuple(
      contextArb,
      requestOptionsArb,
      fc.constantFrom("cancel", "stop" as const),
      fc.constantFrom("accepted", "rejected", "terminal", "unsupported" as const),
      jsonObjectArb,
      errorArb,
    )
    .map(([context, options, command, status, details, error]) =>
      makeControlResponseEnvelope(
        status === "rejected"
          ? new ToolControlResponse({ command, status, details, error })
          : new ToolControlResponse({ command, status, details }),
        makeControlRequestEnvelope(command, context, options),
      )
    ),
  fc
    .tuple(
      contextArb,
      fc.option(idArb, { nil: undefined, freq: 3 }),
      fc.oneof(fc.constant(0), fc.constant(MAX), fc.maxSafeNat()),
      fc.constantFrom(
        "progress",
        "heartbeat",
        "executor_completed",
        "executor_failed",
        "cancelled",
        "stopped" as const,
      ),
      jsonObjectArb,
    )
    .map(([context, instance, sequence, type, data]) =>
      makeEventEnvelope(new ToolEvent({ type, data }), context, {
        endpointInstanceId: instance,
        sequence,
      })
    ),
  fc.tuple(contextArb, requestOptionsArb, errorArb, fc.boolean()).map(
    ([context, options, error, correlated]) =>
      correlated
        ? makeErrorResponseEnvelope(error, makeResultRequestEnvelope(context, options))
        : makeErrorEnvelope(error, context, options),
  ),
);

// ---------------------------------------------------------------------------------------------
// Byte mutations

const encoder = new TextEncoder();

/** Bytes the JSON grammar and UTF-8 care about. */
const INTERESTING = [
  0x22,
  0x5c,
  0x7b,
  0x7d,
  0x5b,
  0x5d,
  0x2c,
  0x3a,
  0x30,
  0x39,
  0x2d,
  0x2b,
  0x2e,
  0x65,
  0x4e,
  0x20,
  0x09,
  0x0a,
  0x00,
  0x1f,
  0x7f,
  0x80,
  0xbf,
  0xc0,
  0xc3,
  0xe6,
  0xed,
  0xef,
  0xf0,
  0xf4,
  0xf8,
  0xff,
];

/** Fragments that stress the strict rules: surrogates, huge numbers, literals, BOM, escapes. */
const FRAGMENTS = [
  '"\\ud800"',
  '"\\udc00\\ud800"',
  '"\\ud83d\\ude00"',
  "\xed\xa0\x80", // raw UTF-8 of U+D800 (invalid UTF-8), as Latin-1 code units
  "\xef\xbb\xbf", // BOM
  "9007199254740992",
  "-9007199254740992",
  "9007199254740991",
  "1e400",
  "-1e400",
  "1e-400",
  "123456789012345678901234567890",
  "0.000000000000000000000000000001e-300",
  "-0",
  "-0.0",
  "1.0",
  "NaN",
  "Infinity",
  "-Infinity",
  "true",
  "null",
  '"__proto__":{"polluted":1}',
  '"constructor":{"prototype":{"polluted":1}}',
  '"a":1,"a":2',
  '"\\u0061":1,"a":2',
  "\\u0000",
  "\\",
  '"',
  "{}",
  "[]",
  ",",
  ":",
];

/** One mutation of a byte string; positions are taken modulo the current length. */
export type Mutation =
  | { readonly op: "flip"; readonly at: number; readonly bit: number }
  | { readonly op: "set"; readonly at: number; readonly byte: number }
  | { readonly op: "truncate"; readonly at: number }
  | { readonly op: "insert"; readonly at: number; readonly bytes: Uint8Array }
  | { readonly op: "delete"; readonly at: number; readonly length: number }
  | { readonly op: "duplicate"; readonly at: number; readonly length: number }
  | { readonly op: "splice"; readonly at: number; readonly from: number; readonly length: number }
  | { readonly op: "fragment"; readonly at: number; readonly fragment: number }
  | { readonly op: "nest"; readonly at: number; readonly depth: number; readonly open: string }
  | { readonly op: "digits"; readonly at: number; readonly digits: number }
  | { readonly op: "pad"; readonly at: number; readonly length: number; readonly byte: number };

const positionArb = fc.nat({ max: 1 << 20 });

/** A random mutation (biased towards the interesting ones). */
export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("flip" as const), at: positionArb, bit: fc.nat({ max: 7 }) }),
  fc.record({
    op: fc.constant("set" as const),
    at: positionArb,
    byte: fc.oneof(fc.constantFrom(...INTERESTING), fc.nat({ max: 255 })),
  }),
  fc.record({ op: fc.constant("truncate" as const), at: positionArb }),
  fc.record({
    op: fc.constant("insert" as const),
    at: positionArb,
    bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
  }),
  fc.record({
    op: fc.constant("delete" as const),
    at: positionArb,
    length: fc.integer({ min: 1, max: 16 }),
  }),
  fc.record({
    op: fc.constant("duplicate" as const),
    at: positionArb,
    length: fc.integer({ min: 1, max: 64 }),
  }),
  fc.record({
    op: fc.constant("splice" as const),
    at: positionArb,
    from: positionArb,
    length: fc.integer({ min: 1, max: 256 }),
  }),
  fc.record({
    op: fc.constant("fragment" as const),
    at: positionArb,
    fragment: fc.nat({ max: FRAGMENTS.length - 1 }),
  }),
  fc.record({
    op: fc.constant("nest" as const),
    at: positionArb,
    depth: fc.oneof(fc.integer({ min: 60, max: 70 }), fc.integer({ min: 1, max: 5000 })),
    open: fc.constantFrom("[", "{", '{"a":', "[[{}", "[1,"),
  }),
  fc.record({
    op: fc.constant("digits" as const),
    at: positionArb,
    digits: fc.oneof(fc.integer({ min: 15, max: 20 }), fc.integer({ min: 300, max: 5000 })),
  }),
  fc.record({
    op: fc.constant("pad" as const),
    at: positionArb,
    length: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1 << 19, max: 1 << 21 })),
    byte: fc.constantFrom(0x20, 0x0a, 0x5b, 0x30, 0x61),
  }),
);

function latin1(text: string): Uint8Array {
  // FRAGMENTS hold raw bytes as \x escapes: encode code units below 256 as single bytes.
  if ([...text].every((c) => c.charCodeAt(0) < 0x80)) return encoder.encode(text);
  return Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff);
}

function splice(bytes: Uint8Array, at: number, remove: number, insert: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length - remove + insert.length);
  out.set(bytes.subarray(0, at));
  out.set(insert, at);
  out.set(bytes.subarray(at + remove), at + insert.length);
  return out;
}

/** Applies `mutations` to `source`; `other` is a second valid message spliced in by "splice". */
export function applyMutations(
  source: Uint8Array,
  other: Uint8Array,
  mutations: readonly Mutation[],
): Uint8Array {
  let bytes = source;
  for (const m of mutations) {
    const at = bytes.length === 0 ? 0 : m.at % (bytes.length + 1);
    switch (m.op) {
      case "flip":
        if (bytes.length > 0) {
          bytes = bytes.slice();
          bytes[at % bytes.length] ^= 1 << m.bit;
        }
        break;
      case "set":
        if (bytes.length > 0) {
          bytes = bytes.slice();
          bytes[at % bytes.length] = m.byte;
        }
        break;
      case "truncate":
        bytes = bytes.slice(0, at);
        break;
      case "insert":
        bytes = splice(bytes, at, 0, m.bytes);
        break;
      case "delete":
        bytes = splice(bytes, at, Math.min(m.length, bytes.length - at), new Uint8Array(0));
        break;
      case "duplicate":
        bytes = splice(bytes, at, 0, bytes.slice(at, at + m.length));
        break;
      case "splice": {
        const from = other.length === 0 ? 0 : m.from % other.length;
        bytes = splice(bytes, at, 0, other.subarray(from, from + m.length));
        break;
      }
      case "fragment":
        bytes = splice(bytes, at, 0, latin1(FRAGMENTS[m.fragment]));
        break;
      case "nest": {
        const open = encoder.encode(m.open);
        const run = new Uint8Array(open.length * m.depth);
        for (let i = 0; i < m.depth; i++) run.set(open, i * open.length);
        bytes = splice(bytes, at, 0, run);
        break;
      }
      case "digits": {
        const run = new Uint8Array(m.digits).fill(0x39);
        run[0] = 0x31;
        bytes = splice(bytes, at, 0, run);
        break;
      }
      case "pad":
        bytes = splice(bytes, at, 0, new Uint8Array(m.length).fill(m.byte));
        break;
    }
  }
  return bytes;
}

/** Random bytes biased towards JSON structure and UTF-8 lead bytes. */
export const noiseArb: fc.Arbitrary<Uint8Array> = fc
  .array(fc.oneof(fc.constantFrom(...INTERESTING), fc.nat({ max: 255 })), { maxLength: 96 })
  .map((values) => Uint8Array.from(values));

// ---------------------------------------------------------------------------------------------
// Structural (JSON tree) edits: keep the document well-formed JSON, break the Wire's rules

/** One edit of a JSON tree; `at` picks a node modulo the node count. */
export type TreeEdit =
  | { readonly op: "delete"; readonly at: number }
  | { readonly op: "replace"; readonly at: number; readonly value: unknown }
  | { readonly op: "rename"; readonly at: number; readonly key: string }
  | { readonly op: "add"; readonly at: number; readonly key: string; readonly value: unknown }
  | { readonly op: "wrap"; readonly at: number };

const oddValueArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    0,
    -1,
    MAX,
    MAX + 1,
    -(MAX + 1),
    1e300,
    1.5,
    "",
    " ",
    "\ud800",
    "x\udc00y",
    "forge.tool.endpoint/v1alpha1",
    "tool.event",
    "tool.invoke.request",
    "endpoint.register",
    [],
    {},
  ),
  textArb,
  jsonObjectArb,
  fc.integer(),
);

/** A random tree edit. */
export const treeEditArb: fc.Arbitrary<TreeEdit> = fc.oneof(
  fc.record({ op: fc.constant("delete" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("replace" as const), at: fc.nat(), value: oddValueArb }),
  fc.record({ op: fc.constant("rename" as const), at: fc.nat(), key: keyArb }),
  fc.record({ op: fc.constant("add" as const), at: fc.nat(), key: keyArb, value: oddValueArb }),
  fc.record({ op: fc.constant("wrap" as const), at: fc.nat() }),
);

type Slot = { parent: Record<string, unknown> | unknown[]; key: string | number };

function slots(value: unknown, out: Slot[]): Slot[] {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out.push({ parent: value, key: i });
      slots(item, out);
    });
  } else if (typeof value === "object" && value !== null) {
    for (const key of Object.keys(value)) {
      out.push({ parent: value as Record<string, unknown>, key });
      slots((value as Record<string, unknown>)[key], out);
    }
  }
  return out;
}

function containers(value: unknown, out: (Record<string, unknown> | unknown[])[]) {
  if (typeof value !== "object" || value === null) return out;
  out.push(value as Record<string, unknown>);
  for (const item of Object.values(value)) containers(item, out);
  return out;
}

function deepCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(deepCopy);
  if (typeof value === "object" && value !== null) {
    return ownObject(Object.entries(value).map(([key, item]) => [key, deepCopy(item)]));
  }
  return value;
}

/** Applies tree edits to a copy of `root` (a Wire object) and returns the edited copy. */
export function applyTreeEdits(root: unknown, edits: readonly TreeEdit[]): unknown {
  const tree = deepCopy(root);
  for (const edit of edits) {
    if (edit.op === "add") {
      const all = containers(tree, []);
      const target = all[edit.at % all.length];
      if (Array.isArray(target)) target.push(deepCopy(edit.value));
      else {Object.defineProperty(target, edit.key, {
          value: deepCopy(edit.value),
          enumerable: true,
          writable: true,
          configurable: true,
        });}
      continue;
    }
    const all = slots(tree, []);
    if (all.length === 0) continue;
    const { parent, key } = all[edit.at % all.length];
    const record = parent as Record<string | number, unknown>;
    switch (edit.op) {
      case "delete":
        if (Array.isArray(parent)) parent.splice(key as number, 1);
        else delete record[key];
        break;
      case "replace":
        record[key] = deepCopy(edit.value);
        break;
      case "rename":
        if (!Array.isArray(parent)) {
          const value = record[key];
          delete record[key];
          Object.defineProperty(parent, edit.key, {
            value,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        break;
      case "wrap":
        record[key] = [record[key]];
        break;
    }
  }
  return tree;
}

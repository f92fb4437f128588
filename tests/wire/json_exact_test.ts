// The strict JSON decoder's exact path (src/wire/_json_exact.ts): numbers, Unicode scalar values,
// nesting, syntax and positions, field stages and precedence (notes d.3 steps 3–8, i.12) and
// "__proto__" as data, through decodeEnvelope with exact codes, messages and paths. Stays whole
// (over 400 lines): one suite per rule set of the exact parser.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  invokeRequestFromEnvelope,
  makeInvokeRequestEnvelope,
  ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import {
  assertProtocolError,
  bytes,
  CODES,
  context,
  EVENT_HEADERS,
  eventText,
  MAX,
  PROTOCOL,
  text,
  UNREGISTER_HEADERS,
  unregisterText,
  wireText,
} from "../_helpers.ts";
import { parseStrictJsonText } from "../../src/wire/_json_decode.ts";
import { MAX_PARSE_NESTING } from "../../src/wire/_json_exact.ts";
import { decodeData, INT_RANGE } from "./_fixtures.ts";

/** The length of `value` in code points (Python's `len`). */
function codePoints(value: string): number {
  return [...value].length;
}

// ---------------------------------------------------------------------------------------------
// Numbers

Deno.test("NaN, Infinity and -Infinity literals are INVALID_JSON", () => {
  for (const literal of ["NaN", "Infinity", "-Infinity"]) {
    const message = `non-finite JSON number is not allowed: ${literal}`;
    assertProtocolError(() => decodeEnvelope(eventText(`{"v":${literal}}`)), CODES.INVALID_JSON, {
      message,
    });
    assertProtocolError(() => decodeEnvelope(eventText(`[1,${literal}]`)), CODES.INVALID_JSON, {
      message,
    });
    assertProtocolError(() => decodeEnvelope(literal), CODES.INVALID_JSON, { message });
  }
  // Other spellings are plain syntax errors.
  for (const spelling of ["nan", "inf", "+1", ".5", "01", "1.", "-", "1e", "0x10"]) {
    assertProtocolError(() => decodeEnvelope(eventText(`{"v":${spelling}}`)), CODES.INVALID_JSON);
  }
});

Deno.test("integer tokens are range-checked exactly", () => {
  assertStrictEquals((decodeData(`{"v":${MAX}}`) as { v: number }).v, MAX);
  assertStrictEquals((decodeData(`{"v":-${MAX}}`) as { v: number }).v, -MAX);
  for (
    const token of [
      "9007199254740992",
      "-9007199254740992",
      "9007199254740993",
      "18014398509481984",
      "100000000000000000000",
      "-99999999999999999999999999",
    ]
  ) {
    assertProtocolError(() => decodeEnvelope(eventText(`{"v":${token}}`)), CODES.INVALID_JSON, {
      message: INT_RANGE,
    });
    assertProtocolError(() => decodeEnvelope(eventText(`[${token}]`)), CODES.INVALID_JSON, {
      message: INT_RANGE,
    });
  }
  // Also in a header.
  assertProtocolError(
    () => decodeEnvelope(eventText("{}").replace('"sequence":0', '"sequence":9007199254740992')),
    CODES.INVALID_JSON,
    { message: INT_RANGE },
  );
});

Deno.test("huge integer tokens cannot be parsed safely", () => {
  for (const token of ["9".repeat(5000), "-" + "9".repeat(5000), "1" + "0".repeat(4300)]) {
    assertProtocolError(
      () => decodeEnvelope(unregisterText(`{"value":${token}}`)),
      CODES.INVALID_JSON,
      {
        message: "integer cannot be parsed safely",
      },
    );
  }
  // Up to Python's 4300-digit conversion limit the token is parsed, then range-checked.
  assertProtocolError(
    () => decodeEnvelope(unregisterText(`{"value":${"9".repeat(4300)}}`)),
    CODES.INVALID_JSON,
    { message: INT_RANGE },
  );
});

Deno.test("float tokens are not range-checked but must be finite", () => {
  assertStrictEquals(
    (decodeData('{"v":9007199254740993.0}') as { v: number }).v,
    9007199254740992,
  );
  assertStrictEquals((decodeData('{"v":1.5e300}') as { v: number }).v, 1.5e300);
  assertStrictEquals((decodeData('{"v":1e2}') as { v: number }).v, 100);
  assertStrictEquals((decodeData('{"v":1.0}') as { v: number }).v, 1);
  assertStrictEquals((decodeData('{"v":-2.5E-3}') as { v: number }).v, -0.0025);
  for (const token of ["1e999", "-1e999", "1E400", "123456789e400"]) {
    assertProtocolError(
      () => decodeEnvelope(unregisterText(`{"value":${token}}`)),
      CODES.INVALID_PAYLOAD,
      {
        path: "payload.value",
        message: "floating-point values must be finite",
      },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(eventText('{"list":[1,1e999]}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.data.list[1]",
      message: "floating-point values must be finite",
    },
  );
});

Deno.test("-0 decodes to 0", () => {
  for (const data of ['{"v":-0}', '{"\\u0076":-0}']) {
    const value = (decodeData(data) as { v: number }).v;
    assert(Object.is(value, 0), `${data} decodes to +0`);
  }
  const encoded = text(encodeEnvelope(decodeEnvelope(eventText('{"v":-0}'))));
  assert(encoded.includes('"data":{"v":0}'));
});

/** A valid tool.invoke.request with empty arguments and deadline_ms 1800000000000, as text. */
function invokeText(): string {
  return text(encodeEnvelope(makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    context("vision.yolo", "detect", { deadlineMs: 1_800_000_000_000 }),
    { requestId: "request-1", endpointInstanceId: "instance-1" },
  )));
}

Deno.test("a float token is not an integer in the Wire's integer fields, even when integral", () => {
  // Python's isinstance(value, int) refuses 1.0, 0e0 and -0.0 from float tokens although they
  // equal integers; each integer field gives the error it gives any other non-integer there.
  const seq = { message: "must be an integer in [0, 9007199254740991]", path: "sequence" };
  // The last two are written with other digits but are integers as binary64 reads them.
  for (
    const token of [
      "1.0",
      "0e0",
      "1E0",
      "-0.0",
      "0.000",
      "3.0e0",
      "1.0000000000000001",
      "0.99999999999999999",
    ]
  ) {
    assertProtocolError(
      () => decodeEnvelope(eventText("{}").replace('"sequence":0', `"sequence":${token}`)),
      CODES.INVALID_MESSAGE,
      seq,
    );
  }
  assertEquals(decodeEnvelope(eventText("{}").replace('"sequence":0', '"sequence":7')).sequence, 7);
  // On a message without a sequence, a float one is still "present".
  assertProtocolError(
    () => decodeEnvelope(unregisterText().replace('"protocol"', '"sequence":1.0,"protocol"')),
    CODES.INVALID_MESSAGE,
    { message: "must be omitted for endpoint management messages", path: "sequence" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeText().replace('"protocol"', '"sequence":0.0,"protocol"')),
    CODES.INVALID_MESSAGE,
    { message: "must be omitted for non-event messages", path: "sequence" },
  );
  // Payload integer fields: deadline_ms, active_invocations, registry_revision, lease_ttl_ms and
  // max_concurrency.
  const invoke = invokeText().replace(
    '"deadline_ms":1800000000000',
    '"deadline_ms":1800000000000.0',
  );
  assert(invoke.includes('"deadline_ms":1800000000000.0'));
  assertProtocolError(() => decodeEnvelope(invoke), CODES.INVALID_PAYLOAD, {
    message:
      "deadline_ms must be a non-negative Unix epoch millisecond not greater than 9007199254740991",
    path: "payload.context",
  });
  const status = (n: string) =>
    `{"endpoint_id":"e","endpoint_instance_id":"x","message_type":"endpoint.status",` +
    `"payload":{"status":{"active_invocations":${n},"details":{},"state":"ready"}},` +
    `"protocol":"${PROTOCOL}"}`;
  assertEquals(decodeEnvelope(status("2")).payload, {
    status: { active_invocations: 2, details: {}, state: "ready" },
  });
  assertProtocolError(() => decodeEnvelope(status("2.0")), CODES.INVALID_PAYLOAD, {
    message: "active_invocations must be in [0, 9007199254740991]",
    path: "payload.status",
  });
  const registry = (revision: string, ttl: string) =>
    `{"endpoint_id":"e","endpoint_instance_id":"x","message_type":"endpoint.registry.response",` +
    `"payload":{"lease_ttl_ms":${ttl},"operation":"register","registry_revision":${revision},` +
    `"status":"accepted"},"protocol":"${PROTOCOL}","request_id":"r"}`;
  assertProtocolError(() => decodeEnvelope(registry("1.0", "1e3")), CODES.INVALID_PAYLOAD, {
    message: "registry_revision must be in [0, 9007199254740991]",
    path: "payload",
  });
  assertProtocolError(() => decodeEnvelope(registry("1", "1e3")), CODES.INVALID_PAYLOAD, {
    message: "lease_ttl_ms must be in [1, 9007199254740991] when provided",
    path: "payload",
  });
  const register = (maxConcurrency: string) =>
    `{"endpoint_id":"e","endpoint_instance_id":"x","message_type":"endpoint.register",` +
    `"payload":{"descriptor":{"endpoint_id":"e","operations":[{"cancellable":false,` +
    `"max_concurrency":${maxConcurrency},"name":"op","semantics":"query","status_supported":false,` +
    `"stoppable":false}],"protocol_version":"${PROTOCOL}"}},"protocol":"${PROTOCOL}",` +
    `"request_id":"r"}`;
  assertEquals(decodeEnvelope(register("4")).messageType, "endpoint.register");
  assertProtocolError(() => decodeEnvelope(register("4.0")), CODES.INVALID_PAYLOAD, {
    message: "max_concurrency must be in [1, 9007199254740991]",
    path: "payload.descriptor.operations[0]",
  });
  // Elsewhere a float token is plain data: the same number (written back as an integer, the
  // documented divergence), and a member named like an integer field is not one.
  const args = decodeEnvelope(
    invokeText().replace(
      '"arguments":{}',
      '"arguments":{"deadline_ms":1.0,"list":[2.0],"sequence":0e0}',
    ),
  );
  assertEquals(args.payload.arguments, { deadline_ms: 1, list: [2], sequence: 0 });
  assertEquals(
    new TextDecoder().decode(encodeEnvelope(args)).match(/"arguments":\{[^}]*\}/)?.[0],
    '"arguments":{"deadline_ms":1,"list":[2],"sequence":0}',
  );
});

// ---------------------------------------------------------------------------------------------
// Unicode scalar values

Deno.test("escaped lone surrogates are rejected where they land", () => {
  for (const escape of ["\\ud800", "\\udc00", "\\udc00\\ud800", "\\ud800\\u0041", "x\\uDBFF"]) {
    assertProtocolError(
      () => decodeEnvelope(unregisterText(`{"value":"${escape}"}`)),
      CODES.INVALID_PAYLOAD,
      { path: "payload.value", message: "must contain only valid Unicode scalar values" },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(unregisterText('{"\\ud800":1}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload",
      message: "object keys must contain only valid Unicode scalar values",
    },
  );
  assertProtocolError(
    () => decodeEnvelope(eventText('{"a":{"\\udfff":1}}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.data.a",
      message: "object keys must contain only valid Unicode scalar values",
    },
  );
  assertProtocolError(
    () => decodeEnvelope(eventText('{"a":["ok","\\ud800"]}')),
    CODES.INVALID_PAYLOAD,
    {
      path: "payload.data.a[1]",
      message: "must contain only valid Unicode scalar values",
    },
  );
  for (const field of ["endpoint_id", "endpoint_instance_id", "request_id"]) {
    assertProtocolError(
      () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, [field]: "x\ud800" })),
      CODES.INVALID_MESSAGE,
      { path: field, message: "must contain only valid Unicode scalar values" },
    );
  }
  for (const field of ["invocation_id", "attempt_id", "operation"]) {
    assertProtocolError(
      () =>
        decodeEnvelope(
          wireText({ ...EVENT_HEADERS, [field]: "\udc00" }, '{"data":{},"type":"progress"}'),
        ),
      CODES.INVALID_MESSAGE,
      { path: field, message: "must contain only valid Unicode scalar values" },
    );
  }
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, protocol: "\ud800" })),
    CODES.UNSUPPORTED_VERSION,
    { path: "protocol", message: "expected 'forge.tool.endpoint/v1alpha1', found '\\ud800'" },
  );
});

Deno.test("an escaped surrogate pair is one astral character", () => {
  assertEquals(decodeData('{"s":"\\ud83d\\ude00","t":"\\uD834\\uDD1E"}'), { s: "😀", t: "𝄞" });
  assertEquals(decodeData('{"\\ud83d\\ude00":1}'), { "😀": 1 });
  const envelope = decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, request_id: "r-😀" }));
  assertStrictEquals(envelope.requestId, "r-\u{1F600}");
  // Written back raw.
  assert(
    text(encodeEnvelope(decodeEnvelope(eventText('{"s":"\\ud83d\\ude00"}')))).includes('"s":"😀"'),
  );
});

// ---------------------------------------------------------------------------------------------
// Nesting

/** `levels` nested `{"a": …}` objects around `leaf`; `key` is how the key is spelled. */
function nestedObjects(levels: number, leaf: string, key = '"a"'): string {
  return `{${key}:`.repeat(levels) + leaf + "}".repeat(levels);
}

Deno.test("payload nesting: depth 64 passes, depth 65 is INVALID_PAYLOAD with the full path", () => {
  // The event's data is at depth 1, so a leaf under m nested objects is at depth 1 + m.
  for (const key of ['"a"', '"\\u0061"']) {
    for (const leaf of ["1", "{}", "[]", '"s"']) {
      decodeEnvelope(eventText(nestedObjects(63, leaf, key)));
      assertProtocolError(
        () => decodeEnvelope(eventText(nestedObjects(64, leaf, key))),
        CODES.INVALID_PAYLOAD,
        { path: "payload.data" + ".a".repeat(64), message: "JSON nesting exceeds 64" },
      );
    }
  }
  // Arrays count the same way ("a" is at depth 2, so m arrays put the leaf at depth 2 + m).
  decodeEnvelope(eventText(`{"a":${"[".repeat(62)}1${"]".repeat(62)}}`));
  assertProtocolError(
    () => decodeEnvelope(eventText(`{"a":${"[".repeat(63)}1${"]".repeat(63)}}`)),
    CODES.INVALID_PAYLOAD,
    { path: "payload.data.a" + "[0]".repeat(63), message: "JSON nesting exceeds 64" },
  );
  // Unregister's payload members are at depth 1.
  assertProtocolError(
    () => decodeEnvelope(unregisterText(nestedObjects(65, "1"))),
    CODES.INVALID_PAYLOAD,
    { path: "payload" + ".a".repeat(65), message: "JSON nesting exceeds 64" },
  );
  // Far deeper than 64 but within the parser: still the payload rule, at the first level past 64.
  assertProtocolError(
    () => decodeEnvelope(unregisterText(`{"a":${"[".repeat(500)}${"]".repeat(500)}}`)),
    CODES.INVALID_PAYLOAD,
    { path: "payload.a" + "[0]".repeat(64), message: "JSON nesting exceeds 64" },
  );
});

Deno.test("parser resource limits end in a ToolProtocolError", () => {
  const brackets = "[".repeat(1048576);
  const objects = '{"a":'.repeat(Math.floor(1048576 / 5));
  for (const input of [brackets, objects, "[".repeat(2000) + "]".repeat(2000)]) {
    const error = assertThrows(() => decodeEnvelope(input), ToolProtocolError);
    assertStrictEquals(error.code, CODES.INVALID_JSON);
    const fromBytes = assertThrows(() => decodeEnvelope(bytes(input)), ToolProtocolError);
    assertStrictEquals(fromBytes.code, CODES.INVALID_JSON);
  }
  const bigger = assertThrows(
    () => decodeEnvelope("[".repeat(4 * 1048576), { maxMessageBytes: 4 * 1048576 }),
    ToolProtocolError,
  );
  assertStrictEquals(bigger.code, CODES.INVALID_JSON);
  // Deep nesting inside a valid envelope's payload.
  const [head, tail] = unregisterText('{"a":@}').split("@");
  const inside = assertThrows(
    () => decodeEnvelope(head + "[".repeat(100000) + "]".repeat(100000) + tail),
    ToolProtocolError,
  );
  assertStrictEquals(inside.code, CODES.INVALID_JSON);
});

Deno.test("the exact parser follows MAX_PARSE_NESTING containers and names the one past it", () => {
  const depth = MAX_PARSE_NESTING;
  const arrays = "[".repeat(depth) + "]".repeat(depth);
  assertEquals(JSON.stringify(parseStrictJsonText(arrays).value), arrays);
  const objects = '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
  assertEquals(JSON.stringify(parseStrictJsonText(objects).value), objects);
  // An empty container counts too: the bound is checked before its contents are read.
  const cases: [string, string][] = [
    ["[".repeat(depth) + "[]" + "]".repeat(depth), "array"],
    ['{"a":'.repeat(depth) + "{}" + "}".repeat(depth), "object"],
    ["[".repeat(depth) + "{}" + "]".repeat(depth), "object"],
    ['{"a":'.repeat(depth) + "[" + "}".repeat(depth), "array"],
  ];
  for (const [input, kind] of cases) {
    assertProtocolError(() => parseStrictJsonText(input), CODES.INVALID_JSON, {
      message:
        `maximum recursion depth exceeded while decoding a JSON ${kind} from a unicode string`,
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Syntax, top level, whitespace

Deno.test("trailing data is INVALID_JSON at its line and column", () => {
  const wire = eventText("{}");
  assertProtocolError(() => decodeEnvelope(wire + " x"), CODES.INVALID_JSON, {
    message: "Extra data",
    path: `line 1 column ${wire.length + 2}`,
  });
  assertProtocolError(() => decodeEnvelope(wire + wire), CODES.INVALID_JSON, {
    message: "Extra data",
    path: `line 1 column ${wire.length + 1}`,
  });
  assertProtocolError(() => decodeEnvelope(wire + "\n\n  }"), CODES.INVALID_JSON, {
    message: "Extra data",
    path: "line 3 column 3",
  });
  // Columns count code points, as Python does.
  const astral = eventText('{"s":"😀😀"}');
  assertProtocolError(() => decodeEnvelope(astral + "x"), CODES.INVALID_JSON, {
    message: "Extra data",
    path: `line 1 column ${codePoints(astral) + 1}`,
  });
  assertProtocolError(() => decodeEnvelope(bytes(astral + "x")), CODES.INVALID_JSON, {
    path: `line 1 column ${codePoints(astral) + 1}`,
  });
  // Trailing JSON whitespace is fine.
  decodeEnvelope(wire + " \t\r\n");
});

Deno.test("syntax errors carry the parser message and position", () => {
  const cases: [string, string, string][] = [
    ["", "Expecting value", "line 1 column 1"],
    ["{", "Expecting property name enclosed in double quotes", "line 1 column 2"],
    ['{"a"}', "Expecting ':' delimiter", "line 1 column 5"],
    ['{"a":1 "b":2}', "Expecting ',' delimiter", "line 1 column 8"],
    ['{"a":1,}', "Expecting property name enclosed in double quotes", "line 1 column 8"],
    ['{"a":[1,]}', "Expecting value", "line 1 column 9"],
    ['{"a":"x', "Unterminated string starting at", "line 1 column 6"],
    ['{"a":"\\q"}', "Invalid \\escape", "line 1 column 7"],
    ['{"a":"\t"}', "Invalid control character at", "line 1 column 7"],
    ["{'a':1}", "Expecting property name enclosed in double quotes", "line 1 column 2"],
  ];
  for (const [input, message, path] of cases) {
    assertProtocolError(() => decodeEnvelope(input), CODES.INVALID_JSON, { message, path });
  }
});

Deno.test("a non-object top level is INVALID_MESSAGE", () => {
  for (const input of ["[]", "1", "null", '"s"', "true", "[{}]", " 1.5 "]) {
    assertProtocolError(() => decodeEnvelope(input), CODES.INVALID_MESSAGE, {
      message: "top-level JSON value must be an object",
    });
  }
});

Deno.test("JSON whitespace is only space, tab, LF and CR", () => {
  const wire = eventText('{"list":[1,"two",{"k":null}]}');
  const expected = decodeEnvelope(wire).toWireObject();
  // Space, tab, LF and CR around every token are fine.
  const spaced = wire.replace(/([{}[\],:])/g, " \t$1\r\n ");
  assertEquals(decodeEnvelope(spaced).toWireObject(), expected);
  assertEquals(
    decodeEnvelope(JSON.stringify(JSON.parse(wire), null, "\t")).toWireObject(),
    expected,
  );
  // Anything else between tokens is a syntax error.
  for (const space of ["\u00a0", "\u000b", "\u000c", "\u2028", "\u3000", "\u0085", "\u001f"]) {
    assertProtocolError(() => decodeEnvelope("{" + space + wire.slice(1)), CODES.INVALID_JSON, {
      message: "Expecting property name enclosed in double quotes",
      path: "line 1 column 2",
    });
    assertProtocolError(() => decodeEnvelope(space + wire), CODES.INVALID_JSON, {
      message: "Expecting value",
      path: "line 1 column 1",
    });
    assertProtocolError(() => decodeEnvelope(wire + space), CODES.INVALID_JSON, {
      message: "Extra data",
      path: `line 1 column ${wire.length + 1}`,
    });
    assertProtocolError(
      () => decodeEnvelope(wire.replace('"list":', `"list":${space}`)),
      CODES.INVALID_JSON,
      { message: "Expecting value" },
    );
  }
});

// ---------------------------------------------------------------------------------------------
// Field stages and precedence (notes d.3 steps 3–8 and i.12)

const INVOKE_WIRE: Readonly<Record<string, unknown>> = Object.freeze({
  protocol: PROTOCOL,
  message_type: "tool.invoke.request",
  request_id: "request-1",
  invocation_id: "invocation-1",
  attempt_id: "attempt-1",
  endpoint_id: "vision.yolo",
  endpoint_instance_id: "instance-1",
  operation: "detect",
  payload: {
    arguments: {},
    context: { tool_id: "forge.tool.detect", implementation_id: "yolo", metadata: {} },
  },
});

/** The invoke Wire text with fields changed (`undefined` removes a field). */
function invokeWith(changes: Record<string, unknown>, payloadJson?: string): string {
  const object: Record<string, unknown> = { ...INVOKE_WIRE, ...changes };
  for (const key of Object.keys(object)) if (object[key] === undefined) delete object[key];
  if (payloadJson === undefined) return JSON.stringify(object);
  const { payload: _, ...headers } = object;
  return wireText(headers, payloadJson);
}

Deno.test("the base invoke of the precedence tests is valid", () => {
  assertEquals(decodeEnvelope(invokeWith({})).toWireObject(), INVOKE_WIRE);
  assertEquals(
    decodeEnvelope(invokeWith({}, JSON.stringify(INVOKE_WIRE.payload))).toWireObject(),
    INVOKE_WIRE,
  );
});

interface Rule {
  readonly name: string;
  /** Header changes that break this rule (`undefined` removes a field). */
  readonly changes: Record<string, unknown>;
  /** A raw payload JSON that breaks this rule, when the rule is about the payload. */
  readonly payload?: string;
  readonly code: string;
  readonly expected: { path?: string | null; message?: string };
}

const CONTEXT_JSON = '{"implementation_id":"yolo","metadata":{},"tool_id":"forge.tool.detect"}';
const V2 = "forge.tool.endpoint/v2";

// The rules of i.12, highest precedence first.
const RULES: readonly Rule[] = [
  {
    name: "unknown field",
    changes: { bogus: 1 },
    code: CODES.INVALID_MESSAGE,
    expected: { message: "unknown envelope fields: bogus" },
  },
  {
    name: "missing field",
    changes: { endpoint_id: undefined },
    code: CODES.INVALID_MESSAGE,
    expected: { message: "missing envelope fields: endpoint_id" },
  },
  {
    name: "explicit null",
    changes: { request_id: null },
    code: CODES.INVALID_MESSAGE,
    expected: { message: "optional fields must be omitted rather than null: request_id" },
  },
  {
    name: "protocol",
    changes: { protocol: V2 },
    code: CODES.UNSUPPORTED_VERSION,
    expected: { path: "protocol", message: `expected '${PROTOCOL}', found '${V2}'` },
  },
  {
    name: "message_type",
    changes: { message_type: "tool.bogus" },
    code: CODES.UNKNOWN_MESSAGE_TYPE,
    expected: { path: "message_type", message: "unsupported message type: 'tool.bogus'" },
  },
  {
    name: "payload type",
    changes: { payload: [] },
    code: CODES.INVALID_PAYLOAD,
    expected: { path: "payload", message: "must be a JSON object" },
  },
  {
    name: "endpoint_id",
    changes: { endpoint_id: " " },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "endpoint_id", message: "must be a non-empty string" },
  },
  {
    name: "endpoint_instance_id",
    changes: { endpoint_instance_id: "" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "endpoint_instance_id", message: "must be a non-empty string" },
  },
  {
    name: "invocation_id",
    changes: { invocation_id: "\t" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "invocation_id", message: "must be a non-empty string" },
  },
  {
    name: "attempt_id",
    changes: { attempt_id: 1 },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "attempt_id", message: "must be a non-empty string" },
  },
  {
    name: "operation",
    changes: { operation: "\u3000" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "operation", message: "must be a non-empty string" },
  },
  {
    name: "request_id",
    changes: { request_id: "" },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "request_id", message: "must be a non-empty string" },
  },
  {
    name: "sequence",
    changes: { sequence: 0 },
    code: CODES.INVALID_MESSAGE,
    expected: { path: "sequence", message: "must be omitted for non-event messages" },
  },
  {
    name: "payload normalisation",
    changes: {},
    payload: `{"arguments":{"x":1e999},"context":${CONTEXT_JSON}}`,
    code: CODES.INVALID_PAYLOAD,
    expected: { path: "payload.arguments.x", message: "floating-point values must be finite" },
  },
  {
    name: "typed payload",
    changes: {},
    payload: '{"arguments":{}}',
    code: CODES.INVALID_PAYLOAD,
    expected: { path: "payload", message: "missing fields: context" },
  },
];

Deno.test("precedence (i.12): each rule fires alone", async (t) => {
  for (const rule of RULES) {
    await t.step(rule.name, () => {
      assertProtocolError(
        () => decodeEnvelope(invokeWith(rule.changes, rule.payload)),
        rule.code,
        rule.expected,
      );
    });
  }
});

Deno.test("precedence (i.12): one case per adjacent pair of rules", async (t) => {
  for (let i = 0; i + 1 < RULES.length; i++) {
    const winner = RULES[i];
    const loser = RULES[i + 1];
    await t.step(`${winner.name} > ${loser.name}`, () => {
      // Both payload rules at once: a non-finite value in a payload that also lacks context.
      const payload = winner.payload !== undefined && loser.payload !== undefined
        ? '{"arguments":{"x":1e999}}'
        : winner.payload ?? loser.payload;
      const input = invokeWith({ ...loser.changes, ...winner.changes }, payload);
      assertProtocolError(() => decodeEnvelope(input), winner.code, winner.expected);
    });
  }
});

Deno.test("field stages list fields sorted, and events and management order their own checks", () => {
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ zeta: 1, alpha: 2, "é": 3 })),
    CODES.INVALID_MESSAGE,
    { message: "unknown envelope fields: alpha, zeta, é" },
  );
  assertProtocolError(
    () =>
      decodeEnvelope(invokeWith({
        protocol: undefined,
        payload: undefined,
        message_type: undefined,
        endpoint_instance_id: undefined,
      })),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_instance_id, message_type, payload, protocol" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ request_id: null, attempt_id: null, sequence: null })),
    CODES.INVALID_MESSAGE,
    {
      message: "optional fields must be omitted rather than null: attempt_id, request_id, sequence",
    },
  );
  // tool.event: request_id present is refused before the sequence is looked at.
  const event = wireText(
    { ...EVENT_HEADERS, request_id: "r", sequence: -1 },
    '{"data":{},"type":"progress"}',
  );
  assertProtocolError(() => decodeEnvelope(event), CODES.INVALID_MESSAGE, {
    path: "request_id",
    message: "must be omitted for tool.event",
  });
  // endpoint.status: request_id before the forbidden execution fields.
  const status = wireText({
    ...UNREGISTER_HEADERS,
    message_type: "endpoint.status",
    request_id: "s",
    invocation_id: "i",
  });
  assertProtocolError(() => decodeEnvelope(status), CODES.INVALID_MESSAGE, {
    path: "request_id",
    message: "must be omitted for unsolicited endpoint.status",
  });
  // Management: forbidden fields in order invocation_id, attempt_id, operation, sequence.
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, sequence: 0, operation: "o" })),
    CODES.INVALID_MESSAGE,
    { path: "operation", message: "must be omitted for endpoint management messages" },
  );
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, sequence: 0, attempt_id: "a" })),
    CODES.INVALID_MESSAGE,
    { path: "attempt_id" },
  );
});

Deno.test("the instance is required unless message_type is a string starting with 'tool.'", () => {
  assertProtocolError(
    () =>
      decodeEnvelope(invokeWith({ message_type: "tool-invoke", endpoint_instance_id: undefined })),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_instance_id" },
  );
  assertProtocolError(
    () =>
      decodeEnvelope(invokeWith({ message_type: "tool.bogus", endpoint_instance_id: undefined })),
    CODES.UNKNOWN_MESSAGE_TYPE,
    { path: "message_type", message: "unsupported message type: 'tool.bogus'" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ message_type: 5, endpoint_instance_id: undefined })),
    CODES.INVALID_MESSAGE,
    { message: "missing envelope fields: endpoint_instance_id" },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ message_type: 5 })),
    CODES.UNKNOWN_MESSAGE_TYPE,
    { path: "message_type", message: "unsupported message type: 5" },
  );
  // A valid tool.* type may omit it.
  assertStrictEquals(
    decodeEnvelope(invokeWith({ endpoint_instance_id: undefined })).endpointInstanceId,
    undefined,
  );
});

Deno.test("explicit null in a required field fails at that field's check", () => {
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ endpoint_id: null })),
    CODES.INVALID_MESSAGE,
    {
      path: "endpoint_id",
      message: "must be a non-empty string",
    },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ protocol: null })),
    CODES.UNSUPPORTED_VERSION,
    {
      path: "protocol",
      message: `expected '${PROTOCOL}', found None`,
    },
  );
  assertProtocolError(
    () => decodeEnvelope(invokeWith({ message_type: null })),
    CODES.UNKNOWN_MESSAGE_TYPE,
    { path: "message_type", message: "unsupported message type: None" },
  );
  assertProtocolError(() => decodeEnvelope(invokeWith({ payload: null })), CODES.INVALID_PAYLOAD, {
    path: "payload",
    message: "must be a JSON object",
  });
  assertProtocolError(
    () => decodeEnvelope(wireText({ ...UNREGISTER_HEADERS, endpoint_instance_id: null })),
    CODES.INVALID_MESSAGE,
    { message: "optional fields must be omitted rather than null: endpoint_instance_id" },
  );
});

// ---------------------------------------------------------------------------------------------
// "__proto__" is data

Deno.test('"__proto__" in a payload is an own data property, never a prototype', () => {
  const payload =
    '{"arguments":{"__proto__":{"polluted":1}},"context":{"implementation_id":"yolo",' +
    '"metadata":{},"tool_id":"forge.tool.detect"}}';
  // The second spelling forces the decoder's exact path (an escaped key).
  for (const spelled of [payload, payload.replace('"tool_id"', '"\\u0074ool_id"')]) {
    const envelope = decodeEnvelope(invokeWith({}, spelled));
    const args = envelope.payload.arguments as Record<string, unknown>;
    assertStrictEquals(Object.getPrototypeOf(args), Object.prototype);
    assert(Object.hasOwn(args, "__proto__"));
    assertEquals(Object.keys(args), ["__proto__"]);
    assertEquals(args.__proto__, { polluted: 1 });
    // deno-lint-ignore no-explicit-any
    assertStrictEquals(({} as any).polluted, undefined);
    // deno-lint-ignore no-explicit-any
    assertStrictEquals((args as any).polluted, undefined);
    // Through the typed adapter into the model.
    const { request } = invokeRequestFromEnvelope(envelope);
    assertStrictEquals(Object.getPrototypeOf(request.arguments), Object.prototype);
    assert(Object.hasOwn(request.arguments, "__proto__"));
    assertEquals(request.arguments.__proto__, { polluted: 1 });
    // And back out.
    const encoded = text(encodeEnvelope(envelope));
    assert(encoded.includes('"arguments":{"__proto__":{"polluted":1}}'), encoded);
  }
  // A constructed envelope copies it as data, too.
  const constructed = new ToolEnvelope({
    messageType: "tool.invoke.request",
    requestId: "request-1",
    invocationId: "invocation-1",
    attemptId: "attempt-1",
    endpointId: "vision.yolo",
    operation: "detect",
    payload: JSON.parse(payload),
  });
  const args = constructed.payload.arguments as Record<string, unknown>;
  assertStrictEquals(Object.getPrototypeOf(args), Object.prototype);
  assert(Object.hasOwn(args, "__proto__"));
  assert(text(encodeEnvelope(constructed)).includes('"__proto__":{"polluted":1}'));
  // deno-lint-ignore no-explicit-any
  assertStrictEquals(({} as any).polluted, undefined);
});

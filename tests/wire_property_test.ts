// Property tests of the Wire codec: random valid envelopes of all 14 message types (built with
// the factories and typed adapters) survive encode -> decode -> encode exactly, and mutated
// encodings only ever decode or fail with a ToolProtocolError. Seeded and deterministic.
import { assert, assertEquals, AssertionError, assertStrictEquals } from "@std/assert";
import {
  controlRequestFromPayload,
  controlResponseFromPayload,
  decodeEnvelope,
  encodedEnvelopeSize,
  encodeEnvelope,
  EndpointRegistryResponse,
  endpointRegistryResponseFromPayload,
  EndpointStatus,
  endpointStatusFromEnvelope,
  errorFromPayload,
  eventFromPayload,
  invokeRequestFromEnvelope,
  invokeResponseFromPayload,
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
  resultResponseFromPayload,
  statusResponseFromPayload,
  TOOL_ENDPOINT_PROTOCOL,
  TOOL_MESSAGE_TYPES,
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  type ToolEnvelope,
  ToolError,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  type ToolMessageType,
  ToolOperationDescriptor,
  ToolProtocolError,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
  validateManagementResponseCorrelation,
  validateMessageEnvelope,
  validateRegistrationEnvelope,
  validateResponseCorrelation,
} from "../mod.ts";
import { CODES, MAX, SeededRandom } from "./_helpers.ts";

const PER_TYPE = 300;
const SEED = 0x5eed_2026;

// ---------------------------------------------------------------------------------------------
// Generators over a seeded fast-check source (SeededRandom in _helpers.ts)

// Characters of identifiers: never all blank, never a lone surrogate. Includes characters that
// are NOT blank for the reference (U+200B, U+FEFF, U+180E, U+2060, U+001C) and non-ASCII.
const ID_START = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  "é",
  "ß",
  "Ω",
  "方",
  "块",
  "😀",
  "𝄞",
  "\u200b",
  "\ufeff",
  "\u2060",
  "\u001c",
  '"',
  "\\",
];
const ID_REST = [...ID_START, "-", ".", "_", ":", "/", " ", "\u00a0", "\t", "\u3000"];

// Characters of payload strings: anything but a lone surrogate.
const STRING_CHARS = [
  ..."abcxyz019 ",
  ...Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)),
  '"',
  "\\",
  "/",
  "'",
  "\u007f",
  "\u0080",
  "\u00a0",
  "é",
  "方块",
  "\u2028",
  "\u2029",
  "\ufeff",
  "\ue000",
  "\uffff",
  "😀",
  "𝄞",
  "\u{10FFFF}",
];

const SPECIAL_KEYS = ["", "__proto__", "constructor", "toJSON", "hasOwnProperty", "a.b", "[0]"];
const INDEX_KEYS = ["0", "1", "9", "10", "42", "4294967294", "007", "-1", "1.5"];

interface Gen {
  rng: SeededRandom;
  /** Whether object keys may look like array indices ("0", "10", …). */
  indexKeys: boolean;
}

function idString(g: Gen): string {
  const { rng } = g;
  let out = rng.pick(ID_START);
  const length = rng.int(0, 11);
  for (let i = 0; i < length; i++) out += rng.pick(ID_REST);
  return out;
}

function anyString(g: Gen): string {
  const { rng } = g;
  let out = "";
  const length = rng.int(0, 16);
  for (let i = 0; i < length; i++) out += rng.pick(STRING_CHARS);
  return out;
}

function key(g: Gen): string {
  const { rng } = g;
  const roll = rng.next();
  if (roll < 0.08) return rng.pick(SPECIAL_KEYS);
  if (g.indexKeys && roll < 0.3) return rng.pick(INDEX_KEYS);
  return anyString(g);
}

function integer(g: Gen): number {
  const { rng } = g;
  const roll = rng.next();
  let value: number;
  if (roll < 0.15) value = rng.pick([0, 1, -1, MAX, -MAX, MAX - 1, 2 ** 31, -(2 ** 32)]);
  else if (roll < 0.6) value = rng.int(-1000, 1000);
  else value = rng.int(-MAX, MAX);
  return value === 0 ? 0 : value; // never -0
}

function float(g: Gen): number {
  const { rng } = g;
  for (;;) {
    const roll = rng.next();
    const value = roll < 0.1
      ? rng.pick([0.5, -0.5, 1e-7, 5e-324, 0.1, 2.5e-300, 1000000000000000.5, -1.5e-10])
      : (rng.next() * 2 - 1) * 10 ** rng.int(-30, 15);
    if (Number.isFinite(value) && !Number.isInteger(value)) return value;
  }
}

function scalar(g: Gen): unknown {
  switch (g.rng.int(0, 5)) {
    case 0:
      return null;
    case 1:
      return g.rng.bool();
    case 2:
      return integer(g);
    case 3:
      return float(g);
    default:
      return anyString(g);
  }
}

/** A random JSON value nested at most `depth` more levels. */
function jsonValue(g: Gen, depth: number): unknown {
  const roll = g.rng.next();
  if (depth <= 0 || roll < 0.45) return scalar(g);
  if (roll < 0.7) {
    return Array.from({ length: g.rng.int(0, 4) }, () => jsonValue(g, depth - 1));
  }
  return jsonObject(g, depth - 1);
}

/** A random JSON object whose members nest at most `depth` more levels. */
function jsonObject(g: Gen, depth = g.rng.int(0, 9)): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const count = g.rng.int(0, 5);
  for (let i = 0; i < count; i++) {
    Object.defineProperty(out, key(g), {
      value: jsonValue(g, depth),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function maybe<T>(g: Gen, make: () => T, p = 0.5): T | undefined {
  return g.rng.bool(p) ? make() : undefined;
}

function context(g: Gen): ToolContext {
  return new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId: idString(g), attemptId: idString(g) }),
    toolId: idString(g),
    implementationId: idString(g),
    endpointId: idString(g),
    operation: idString(g),
    callerId: maybe(g, () => idString(g)),
    deadlineMs: maybe(g, () => g.rng.pick([0, MAX, g.rng.int(0, MAX)])),
    metadata: jsonObject(g),
  });
}

function toolError(g: Gen): ToolError {
  return new ToolError({
    code: idString(g),
    message: idString(g),
    retryable: g.rng.bool(),
    details: jsonObject(g),
  });
}

function toolResult(g: Gen): ToolResult {
  const status = g.rng.pick(["succeeded", "failed", "cancelled", "stopped", "unknown"] as const);
  const outputs = jsonObject(g);
  return status === "failed" || status === "unknown"
    ? new ToolResult({ status, outputs, error: toolError(g) })
    : new ToolResult({ status, outputs });
}

function executionStatus(g: Gen): ToolExecutionStatus {
  const phase = g.rng.pick(
    [
      "accepted",
      "running",
      "stopping",
      "completed",
      "failed",
      "cancelled",
      "stopped",
      "unknown",
    ] as const,
  );
  const details = jsonObject(g);
  return phase === "failed" || phase === "unknown"
    ? new ToolExecutionStatus({ phase, details, error: toolError(g) })
    : new ToolExecutionStatus({ phase, details });
}

function resultResponse(g: Gen): ToolResultResponse {
  const status = g.rng.pick(["pending", "available", "not_found"] as const);
  return status === "available"
    ? new ToolResultResponse({ status, result: toolResult(g) })
    : new ToolResultResponse({ status });
}

function controlResponse(g: Gen, command: "cancel" | "stop"): ToolControlResponse {
  const status = g.rng.pick(["accepted", "rejected", "terminal", "unsupported"] as const);
  const details = jsonObject(g);
  return status === "rejected"
    ? new ToolControlResponse({ command, status, details, error: toolError(g) })
    : new ToolControlResponse({ command, status, details });
}

function descriptor(g: Gen): ToolEndpointDescriptor {
  const names = new Set<string>();
  const count = g.rng.int(1, 4);
  while (names.size < count) names.add(idString(g));
  const operations = [...names].map((name) => {
    const semantics = g.rng.pick(["query", "action", "session"] as const);
    const maxConcurrency = g.rng.pick([1, MAX, g.rng.int(1, 64)]);
    if (semantics === "query") {
      return new ToolOperationDescriptor({ name, semantics, maxConcurrency });
    }
    return new ToolOperationDescriptor({
      name,
      semantics,
      cancellable: semantics === "action" && g.rng.bool(),
      stoppable: semantics === "session" && g.rng.bool(),
      statusSupported: true,
      maxConcurrency,
    });
  });
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: idString(g),
    operations,
  });
}

function registryResponse(g: Gen, operation: "register" | "unregister"): EndpointRegistryResponse {
  const registryRevision = g.rng.pick([0, MAX, g.rng.int(0, MAX)]);
  if (g.rng.bool(0.3)) {
    return new EndpointRegistryResponse({
      operation,
      status: "rejected",
      registryRevision,
      error: toolError(g),
    });
  }
  return new EndpointRegistryResponse({
    operation,
    status: "accepted",
    registryRevision,
    leaseTtlMs: operation === "register" ? g.rng.pick([1, MAX, g.rng.int(1, 600_000)]) : undefined,
  });
}

function requestOptions(g: Gen) {
  return {
    requestId: idString(g),
    endpointInstanceId: maybe(g, () => idString(g), 0.7),
  };
}

/** What a random envelope is expected to decode back into, besides its Wire object. */
interface Sample {
  envelope: ToolEnvelope;
  /** Decodes the typed value from a (decoded) envelope. */
  typed: (envelope: ToolEnvelope) => unknown;
  /** The typed value the envelope was built from. */
  expected: unknown;
  /** The request it answers, for a correlation check. */
  request?: ToolEnvelope;
}

function sample(g: Gen, messageType: ToolMessageType): Sample {
  const ctx = context(g);
  switch (messageType) {
    case "endpoint.register": {
      const value = descriptor(g);
      return {
        envelope: makeRegistrationEnvelope(value, {
          endpointInstanceId: idString(g),
          requestId: idString(g),
        }),
        typed: validateRegistrationEnvelope,
        expected: value,
      };
    }
    case "endpoint.unregister":
      return {
        envelope: makeUnregisterEnvelope({
          endpointId: idString(g),
          endpointInstanceId: idString(g),
          requestId: idString(g),
        }),
        typed: (envelope) => envelope.payload,
        expected: {},
      };
    case "endpoint.registry.response": {
      const register = g.rng.bool();
      const request = register
        ? makeRegistrationEnvelope(descriptor(g), {
          endpointInstanceId: idString(g),
          requestId: idString(g),
        })
        : makeUnregisterEnvelope({
          endpointId: idString(g),
          endpointInstanceId: idString(g),
          requestId: idString(g),
        });
      const value = registryResponse(g, register ? "register" : "unregister");
      return {
        envelope: makeEndpointRegistryResponseEnvelope(value, request),
        typed: (envelope) => endpointRegistryResponseFromPayload(envelope.payload),
        expected: value,
        request,
      };
    }
    case "endpoint.status": {
      const value = new EndpointStatus({
        endpointId: idString(g),
        state: g.rng.pick(["ready", "busy", "degraded", "unavailable"] as const),
        activeInvocations: g.rng.pick([0, MAX, g.rng.int(0, 100)]),
        details: jsonObject(g),
      });
      return {
        envelope: makeEndpointStatusEnvelope(value, { endpointInstanceId: idString(g) }),
        typed: endpointStatusFromEnvelope,
        expected: value,
      };
    }
    case "tool.invoke.request": {
      const request = new ToolRequest({ arguments: jsonObject(g) });
      return {
        envelope: makeInvokeRequestEnvelope(request, ctx, requestOptions(g)),
        typed: invokeRequestFromEnvelope,
        expected: { request, context: ctx },
      };
    }
    case "tool.invoke.response": {
      const request = makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: jsonObject(g) }),
        ctx,
        requestOptions(g),
      );
      const roll = g.rng.int(0, 2);
      const value = roll === 0
        ? toolResult(g)
        : roll === 1
        ? new ToolAccepted({ details: jsonObject(g) })
        : toolError(g);
      return {
        envelope: makeInvokeResponseEnvelope(value, request),
        typed: (envelope) => invokeResponseFromPayload(envelope.payload),
        expected: value,
        request,
      };
    }
    case "tool.status.request":
      return {
        envelope: makeStatusRequestEnvelope(ctx, requestOptions(g)),
        typed: (envelope) => envelope.payload,
        expected: {},
      };
    case "tool.status.response": {
      const request = makeStatusRequestEnvelope(ctx, requestOptions(g));
      const value = executionStatus(g);
      return {
        envelope: makeStatusResponseEnvelope(value, request),
        typed: (envelope) => statusResponseFromPayload(envelope.payload),
        expected: value,
        request,
      };
    }
    case "tool.result.request":
      return {
        envelope: makeResultRequestEnvelope(ctx, requestOptions(g)),
        typed: (envelope) => envelope.payload,
        expected: {},
      };
    case "tool.result.response": {
      const request = makeResultRequestEnvelope(ctx, requestOptions(g));
      const value = resultResponse(g);
      return {
        envelope: makeResultResponseEnvelope(value, request),
        typed: (envelope) => resultResponseFromPayload(envelope.payload),
        expected: value,
        request,
      };
    }
    case "tool.control.request": {
      const command = g.rng.pick(["cancel", "stop"] as const);
      const reason = maybe(g, () => idString(g));
      return {
        envelope: makeControlRequestEnvelope(command, ctx, { ...requestOptions(g), reason }),
        typed: (envelope) => controlRequestFromPayload(envelope.payload),
        expected: { command, reason },
      };
    }
    case "tool.control.response": {
      const command = g.rng.pick(["cancel", "stop"] as const);
      const request = makeControlRequestEnvelope(command, ctx, requestOptions(g));
      const value = controlResponse(g, command);
      return {
        envelope: makeControlResponseEnvelope(value, request),
        typed: (envelope) => controlResponseFromPayload(envelope.payload),
        expected: value,
        request,
      };
    }
    case "tool.event": {
      const value = new ToolEvent({
        type: g.rng.pick(
          [
            "progress",
            "heartbeat",
            "executor_completed",
            "executor_failed",
            "cancelled",
            "stopped",
          ] as const,
        ),
        data: jsonObject(g),
      });
      return {
        envelope: makeEventEnvelope(value, ctx, {
          endpointInstanceId: maybe(g, () => idString(g), 0.7),
          sequence: g.rng.pick([0, MAX, g.rng.int(0, 1000)]),
        }),
        typed: (envelope) => eventFromPayload(envelope.payload),
        expected: value,
      };
    }
    case "tool.error": {
      const value = toolError(g);
      if (g.rng.bool()) {
        return {
          envelope: makeErrorEnvelope(value, ctx, requestOptions(g)),
          typed: (envelope) => errorFromPayload(envelope.payload),
          expected: value,
        };
      }
      const request = makeResultRequestEnvelope(ctx, requestOptions(g));
      return {
        envelope: makeErrorResponseEnvelope(value, request),
        typed: (envelope) => errorFromPayload(envelope.payload),
        expected: value,
        request,
      };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips

const TYPES = [...TOOL_MESSAGE_TYPES].sort();

function describe(value: Uint8Array | string): string {
  const source = typeof value === "string" ? value : new TextDecoder().decode(value);
  return JSON.stringify(source.length > 600 ? source.slice(0, 600) + "…" : source);
}

/** Compares two strings by Unicode code point (Python's string order). */
function byCodePoint(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0)!);
  const y = [...b].map((c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}

/**
 * Walks compact JSON text and checks that every object's keys appear in strictly increasing
 * code point order (an independent check of the encoder's sort; the engine's own object order
 * puts array-index-like keys first).
 */
function assertKeysSorted(json: string): void {
  const stack: { keys: string[] | undefined; expectKey: boolean }[] = [];
  let i = 0;
  while (i < json.length) {
    const c = json[i];
    if (c === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === "\\" ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top?.keys !== undefined && top.expectKey) {
        const key = JSON.parse(json.slice(i, j + 1)) as string;
        const previous = top.keys[top.keys.length - 1];
        if (previous !== undefined && byCodePoint(previous, key) >= 0) {
          throw new AssertionError(
            `keys out of code point order: ${JSON.stringify(previous)} before ${
              JSON.stringify(key)
            } in ${describe(json)}`,
          );
        }
        top.keys.push(key);
        top.expectKey = false;
      }
      i = j + 1;
      continue;
    }
    if (c === "{") stack.push({ keys: [], expectKey: true });
    else if (c === "[") stack.push({ keys: undefined, expectKey: false });
    else if (c === "}" || c === "]") stack.pop();
    else if (c === ",") {
      const top = stack[stack.length - 1];
      if (top.keys !== undefined) top.expectKey = true;
    }
    i++;
  }
}

function checkRoundTrip(item: Sample, useText: boolean): void {
  const { envelope } = item;
  const encoded = encodeEnvelope(envelope);
  assertKeysSorted(new TextDecoder().decode(encoded));
  assertStrictEquals(encodedEnvelopeSize(envelope), encoded.length);
  const input = useText ? new TextDecoder().decode(encoded) : encoded;
  let decoded: ToolEnvelope;
  try {
    decoded = decodeEnvelope(input, { maxMessageBytes: encoded.length });
  } catch (error) {
    throw new AssertionError(`decode failed (${String(error)}) for ${describe(encoded)}`);
  }
  assertEquals(decoded.toWireObject(), envelope.toWireObject(), describe(encoded));
  assertEquals(decoded, envelope);
  const again = encodeEnvelope(decoded);
  assertEquals(again, encoded, `re-encoding differs for ${describe(encoded)}`);
  validateMessageEnvelope(decoded);
  assertEquals(item.typed(decoded), item.expected);
  if (item.request !== undefined) {
    if (item.request.messageType.startsWith("endpoint.")) {
      validateManagementResponseCorrelation(item.request, decoded);
    } else {
      validateResponseCorrelation(item.request, decoded);
    }
  }
  let tooLarge = false;
  try {
    decodeEnvelope(input, { maxMessageBytes: encoded.length - 1 });
  } catch (error) {
    tooLarge = error instanceof ToolProtocolError && error.code === CODES.MESSAGE_TOO_LARGE;
  }
  assert(tooLarge, "one byte under the size is MESSAGE_TOO_LARGE");
}

function roundTrips(indexKeys: boolean, seed: number) {
  return async (t: Deno.TestContext) => {
    for (const [index, messageType] of TYPES.entries()) {
      await t.step(messageType, () => {
        const g: Gen = { rng: new SeededRandom(seed + index), indexKeys };
        for (let i = 0; i < PER_TYPE; i++) {
          const item = sample(g, messageType);
          assertStrictEquals(item.envelope.messageType, messageType);
          try {
            checkRoundTrip(item, i % 3 === 0);
          } catch (error) {
            if (error instanceof AssertionError || error instanceof Error) {
              error.message = `[seed ${seed + index}, sample ${i}] ${error.message}`;
            }
            throw error;
          }
        }
      });
    }
  };
}

Deno.test(
  `property: ${PER_TYPE} random envelopes per message type round-trip byte-exactly`,
  roundTrips(false, SEED),
);

Deno.test(
  'property: round trips with array-index-like object keys ("0", "10", …) keep code point order',
  roundTrips(true, SEED + 1000),
);

// ---------------------------------------------------------------------------------------------
// Mutations

const INTERESTING_BYTES = [
  0x22, // "
  0x5c, // \
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
  0x4e, // N
  0x20,
  0x09,
  0x0a,
  0x00,
  0x1f,
  0x7f,
  0x80,
  0xc3,
  0xe6,
  0xed,
  0xef,
  0xf0,
  0xff,
];

function mutate(rng: SeededRandom, source: Uint8Array): Uint8Array {
  const bytes = Array.from(source);
  const edits = rng.int(1, 3);
  for (let e = 0; e < edits; e++) {
    const at = rng.int(0, Math.max(0, bytes.length - 1));
    const byte = rng.bool() ? rng.pick(INTERESTING_BYTES) : rng.int(0, 255);
    switch (rng.int(0, 6)) {
      case 0: // replace a byte
        bytes[at] = byte;
        break;
      case 1: // flip one bit
        bytes[at] ^= 1 << rng.int(0, 7);
        break;
      case 2: // truncate
        bytes.length = at;
        break;
      case 3: // insert
        bytes.splice(at, 0, byte);
        break;
      case 4: // delete a run
        bytes.splice(at, rng.int(1, 8));
        break;
      case 5: { // duplicate a run (may duplicate keys)
        const length = rng.int(1, 40);
        bytes.splice(at, 0, ...bytes.slice(at, at + length));
        break;
      }
      default: { // swap two bytes
        const other = rng.int(0, Math.max(0, bytes.length - 1));
        [bytes[at], bytes[other]] = [bytes[other], bytes[at]];
      }
    }
  }
  return new Uint8Array(bytes);
}

/** Decodes `input`; returns whether it decoded. Anything but a ToolProtocolError fails. */
function decodeOrProtocolError(input: Uint8Array | string): ToolEnvelope | undefined {
  try {
    return decodeEnvelope(input);
  } catch (error) {
    if (error instanceof ToolProtocolError) return undefined;
    const name = error instanceof Error ? error.constructor.name : typeof error;
    throw new AssertionError(
      `decodeEnvelope threw ${name} (${String(error)}) for ${describe(input)}`,
    );
  }
}

Deno.test("property: mutated encodings decode or fail with a ToolProtocolError", async (t) => {
  for (const [index, messageType] of TYPES.entries()) {
    await t.step(messageType, () => {
      const g: Gen = { rng: new SeededRandom(SEED + 5000 + index), indexKeys: false };
      const rng = new SeededRandom(SEED + 9000 + index);
      let decodedCount = 0;
      let rejectedCount = 0;
      for (let i = 0; i < 60; i++) {
        const encoded = encodeEnvelope(sample(g, messageType).envelope);
        for (let m = 0; m < 12; m++) {
          const mutated = mutate(rng, encoded);
          const decoded = decodeOrProtocolError(mutated);
          if (decoded === undefined) {
            rejectedCount++;
            continue;
          }
          decodedCount++;
          // A decoded envelope is valid: re-encoding it is either exact or a ToolProtocolError,
          // and what it re-encodes to decodes to the same Wire object.
          let again: Uint8Array | undefined;
          try {
            again = encodeEnvelope(decoded);
          } catch (error) {
            if (!(error instanceof ToolProtocolError)) throw error;
          }
          if (again !== undefined) {
            assertEquals(decodeEnvelope(again).toWireObject(), decoded.toWireObject());
          }
        }
      }
      assert(rejectedCount > 0, "some mutations are rejected");
      assert(decodedCount + rejectedCount === 720);
    });
  }
});

Deno.test("property: mutated text (with lone surrogates) decodes or fails with a ToolProtocolError", () => {
  const g: Gen = { rng: new SeededRandom(SEED + 7), indexKeys: true };
  const rng = new SeededRandom(SEED + 8);
  const units = [
    "\ud800",
    "\udfff",
    "\ufeff",
    "\u00a0",
    "\u000b",
    '"',
    "\\",
    "{",
    "}",
    "\u0000",
    "😀",
  ];
  for (let i = 0; i < 400; i++) {
    const wire = new TextDecoder().decode(encodeEnvelope(sample(g, rng.pick(TYPES)).envelope));
    const at = rng.int(0, wire.length);
    const mutated = rng.bool(0.2)
      ? wire.slice(0, at) // may split a surrogate pair
      : wire.slice(0, at) + rng.pick(units) + wire.slice(at + rng.int(0, 2));
    decodeOrProtocolError(mutated);
  }
});

Deno.test("property: random byte strings decode or fail with a ToolProtocolError", () => {
  const rng = new SeededRandom(SEED + 11);
  for (let i = 0; i < 2000; i++) {
    const length = rng.int(0, 64);
    const bytes = new Uint8Array(length);
    for (let k = 0; k < length; k++) {
      bytes[k] = rng.bool(0.7) ? rng.pick(INTERESTING_BYTES) : rng.int(0, 255);
    }
    assertStrictEquals(decodeOrProtocolError(bytes), undefined);
  }
});

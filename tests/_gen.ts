// The one generator library of the property and fuzz suites (not a test file itself; issue 18
// §5). Stays whole (over 400 lines): every generator of the 14 message types lives here, so a
// change to a message's shape is made in one file. Two styles over the same models and factories:
// - the seeded source (`SeededRandom`) and the plain seeded builders on it: JSON values with
//   hostile keys and strings, typed models, and typed-valid envelopes of all 14 message types with
//   what each decodes back into (`randomSample`), for suites that build inputs imperatively
//   (tests/wire/codec_property_test.ts, the carrier and soak suites);
// - the fast-check arbitraries the fuzz harness composes (tests/fuzz/*): JSON values with hostile
//   keys, valid envelopes of all 14 message types (`envelopeArb`), and byte-level mutations of
//   valid messages (flips, truncations, splices of two valid messages, deep nesting, huge
//   numbers, surrogates, oversize).
// Both are reproducible: the same seed gives the same values (fast-check's `seed` for the
// arbitraries, the constructor's for `SeededRandom`).
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
} from "../mod.ts";
import {
  controlRequestFromPayload,
  controlResponseFromPayload,
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
  type ToolEnvelope,
  type ToolMessageType,
  validateRegistrationEnvelope,
} from "../wire.ts";
import { MAX } from "./_helpers.ts";

// ---------------------------------------------------------------------------------------------
// The seeded source

/**
 * A seeded source of random values drawn from fast-check: the same seed gives the same sequence,
 * for suites that build their inputs imperatively (the fuzz harness composes arbitraries
 * instead). It draws uniform 32-bit words from fast-check in blocks, so a draw costs about what a
 * hand-written PRNG's does; integers and the unit interval are uniform.
 */
export class SeededRandom {
  readonly #draw: fc.GeneratorValue;
  #words: Uint32Array = new Uint32Array(0);
  #at = 0;

  constructor(seed: number) {
    this.#draw = fc.sample(fc.gen(), { seed: seed | 0, numRuns: 1 })[0];
  }

  /** A uniform 32-bit unsigned integer. */
  u32(): number {
    if (this.#at === this.#words.length) {
      this.#words = this.#draw(wordBlock);
      this.#at = 0;
    }
    return this.#words[this.#at++];
  }

  /** A uniform number in `[0, 1)` with 53 random bits. */
  next(): number {
    return ((this.u32() >>> 5) * 2 ** 26 + (this.u32() >>> 6)) / 2 ** 53;
  }

  /** A uniform integer in `[lo, hi]` (both safe integers). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** `true` with probability `p`. */
  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  /** One of `items`, uniformly. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }
}

const WORD_BLOCK = 4096;

function wordBlock(): fc.Arbitrary<Uint32Array> {
  return fc.noBias(fc.uint32Array({ minLength: WORD_BLOCK, maxLength: WORD_BLOCK }));
}

// ---------------------------------------------------------------------------------------------
// Values, models and envelopes

// Characters of identifiers: never all blank, never a lone surrogate. Includes characters that
// are NOT blank for the reference (U+200B, U+FEFF, U+180E, U+2060, U+001C) and non-ASCII.
const ID_START = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  "\u0001",
  "\u007f",
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
const ID_REST = [...ID_START, "-", ".", "_", ":", "/", " ", "\u00a0", "\t", "\n", "\u3000"];

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

export interface Gen {
  readonly rng: SeededRandom;
  /** Whether object keys may look like array indices ("0", "10", …). */
  readonly indexKeys: boolean;
}

export function idString(g: Gen): string {
  const { rng } = g;
  let out = rng.pick(ID_START);
  const length = rng.bool(0.1) ? rng.int(60, 90) : rng.int(0, 11);
  for (let i = 0; i < length; i++) out += rng.pick(ID_REST);
  return out;
}

export function anyString(g: Gen): string {
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
export function jsonValue(g: Gen, depth: number): unknown {
  const roll = g.rng.next();
  if (depth <= 0 || roll < 0.45) return scalar(g);
  if (roll < 0.7) {
    return Array.from({ length: g.rng.int(0, 4) }, () => jsonValue(g, depth - 1));
  }
  return jsonObject(g, depth - 1);
}

/** A random JSON object whose members nest at most `depth` more levels. */
export function jsonObject(g: Gen, depth = g.rng.int(0, 9)): Record<string, unknown> {
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

export function maybe<T>(g: Gen, make: () => T, p = 0.5): T | undefined {
  return g.rng.bool(p) ? make() : undefined;
}

export function toolContext(g: Gen): ToolContext {
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

export function toolError(g: Gen): ToolError {
  return new ToolError({
    code: idString(g),
    message: idString(g),
    retryable: g.rng.bool(),
    details: jsonObject(g),
  });
}

export function toolResult(g: Gen): ToolResult {
  const status = g.rng.pick(["succeeded", "failed", "cancelled", "stopped", "unknown"] as const);
  const outputs = jsonObject(g);
  return status === "failed" || status === "unknown"
    ? new ToolResult({ status, outputs, error: toolError(g) })
    : new ToolResult({ status, outputs });
}

export function executionStatus(g: Gen): ToolExecutionStatus {
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

export function resultResponse(g: Gen): ToolResultResponse {
  const status = g.rng.pick(["pending", "available", "not_found"] as const);
  return status === "available"
    ? new ToolResultResponse({ status, result: toolResult(g) })
    : new ToolResultResponse({ status });
}

export function controlResponse(g: Gen, command: "cancel" | "stop"): ToolControlResponse {
  const status = g.rng.pick(["accepted", "rejected", "terminal", "unsupported"] as const);
  const details = jsonObject(g);
  return status === "rejected"
    ? new ToolControlResponse({ command, status, details, error: toolError(g) })
    : new ToolControlResponse({ command, status, details });
}

export function endpointDescriptor(g: Gen): ToolEndpointDescriptor {
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

export function registryResponse(
  g: Gen,
  operation: "register" | "unregister",
): EndpointRegistryResponse {
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

export function requestOptions(g: Gen) {
  return {
    requestId: idString(g),
    endpointInstanceId: maybe(g, () => idString(g), 0.7),
  };
}

/** What a random envelope is expected to decode back into, besides its Wire object. */
export interface Sample {
  envelope: ToolEnvelope;
  /** Decodes the typed value from a (decoded) envelope. */
  typed: (envelope: ToolEnvelope) => unknown;
  /** The typed value the envelope was built from. */
  expected: unknown;
  /** The request it answers, for a correlation check. */
  request?: ToolEnvelope;
}

export function randomSample(g: Gen, messageType: ToolMessageType): Sample {
  const ctx = toolContext(g);
  switch (messageType) {
    case "endpoint.register": {
      const value = endpointDescriptor(g);
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
        ? makeRegistrationEnvelope(endpointDescriptor(g), {
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
          sequence: g.rng.pick([0, MAX, g.rng.int(0, 1000), g.rng.int(0, MAX)]),
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
// The fast-check arbitraries of the fuzz harness

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

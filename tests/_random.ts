// The seeded random generators of the property suites (not a test file itself): a seeded source
// of values drawn from fast-check, and on it JSON values with hostile keys and strings, typed
// models, and typed-valid envelopes of all 14 message types with what each decodes back into.
// The fuzz harness (tests/fuzz/_gen.ts) composes fast-check arbitraries instead.
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

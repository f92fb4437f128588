// The response factories adopt the canonical payload of models their constructors built
// (src/wire/_built_payloads.ts): the envelope must encode byte for byte as the copied and
// validated payload of today's path, and a forged or look-alike model must take that path.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { ToolAccepted, ToolError, ToolExecutionStatus, ToolResult } from "../../mod.ts";
import {
  controlResponseFromPayload,
  controlResponseToPayload,
  decodeEnvelope,
  encodeEnvelope,
  errorFromPayload,
  errorToPayload,
  invokeRequestFromEnvelope,
  invokeRequestToPayload,
  invokeResponseFromPayload,
  invokeResponseToPayload,
  makeControlRequestEnvelope,
  makeControlResponseEnvelope,
  makeErrorResponseEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  resultResponseFromPayload,
  resultResponseToPayload,
  statusResponseFromPayload,
  statusResponseToPayload,
  ToolEnvelope,
  ToolProtocolError,
  validateMessageEnvelope,
} from "../../wire.ts";
import {
  builtControlResponsePayload,
  builtErrorPayload,
  builtInvokeRequestPayload,
  builtInvokeResponsePayload,
  builtResultResponsePayload,
  builtStatusResponsePayload,
} from "../../src/wire/_built_payloads.ts";
import { adoptJsonObject, canonicalHeight } from "../../src/_internal/json.ts";
import { builtAnswerOf, isFactoryTyped } from "../../src/wire/envelope.ts";
import { ToolContext, ToolExecutionKey, ToolRequest } from "../../mod.ts";
import * as gen from "../_gen.ts";
import { context as contextOf } from "../_helpers.ts";
import { SeededRandom } from "../_gen.ts";

// Array-index keys included: the writer flag they set must survive the built path.
function makeGen(seed: number): gen.Gen {
  return { rng: new SeededRandom(seed), indexKeys: true };
}

/** Today's path: the adapter's payload, copied by the envelope, then the typed validation. */
function slowEnvelope(
  messageType: ToolEnvelope["messageType"],
  payload: object,
  request: ToolEnvelope,
): ToolEnvelope {
  const envelope = new ToolEnvelope({
    messageType,
    requestId: request.requestId,
    invocationId: request.invocationId,
    attemptId: request.attemptId,
    endpointId: request.endpointId,
    endpointInstanceId: request.endpointInstanceId,
    operation: request.operation,
    payload,
  });
  validateMessageEnvelope(envelope);
  return envelope;
}

const decoder = new TextDecoder();

function assertSameBytes(fast: ToolEnvelope, slow: ToolEnvelope, label: string): void {
  const a = encodeEnvelope(fast);
  const b = encodeEnvelope(slow);
  assertEquals(decoder.decode(a), decoder.decode(b), label);
  assertEquals(a, b, label);
  assertEquals(Object.keys(fast.payload), Object.keys(slow.payload), label);
  assertEquals(canonicalHeight(fast.payload), canonicalHeight(slow.payload), label);
  // The whole envelope, not only its bytes: the same own fields in the same order, frozen, and
  // marked as a factory's (the answer to a built request takes its headers as they are).
  assertEquals(Object.entries(fast), Object.entries(slow), label);
  assert(Object.isFrozen(fast), label);
  assert(isFactoryTyped(fast), label);
}

Deno.test("built response payloads encode byte for byte as the copied and validated ones", () => {
  let fastCount = 0;
  for (let seed = 1; seed <= 400; seed++) {
    const g = makeGen(seed);
    const context = gen.toolContext(g);
    const options = { requestId: gen.idString(g), endpointInstanceId: gen.idString(g) };
    const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, options);
    const status = makeStatusRequestEnvelope(context, options);
    const result = makeResultRequestEnvelope(context, options);
    const command = g.rng.pick(["cancel", "stop"] as const);
    const control = makeControlRequestEnvelope(command, context, options);
    const answers = [
      gen.toolResult(g),
      new ToolAccepted({ details: gen.jsonObject(g) }),
      new ToolAccepted(),
      gen.toolError(g),
    ];
    for (const answer of answers) {
      assert(builtInvokeResponsePayload(answer) !== undefined);
      assertSameBytes(
        makeInvokeResponseEnvelope(answer, invoke),
        slowEnvelope("tool.invoke.response", invokeResponseToPayload(answer), invoke),
        `seed ${seed} invoke`,
      );
      fastCount++;
    }
    const phase = gen.executionStatus(g);
    assert(builtStatusResponsePayload(phase) !== undefined);
    assertSameBytes(
      makeStatusResponseEnvelope(phase, status),
      slowEnvelope("tool.status.response", statusResponseToPayload(phase), status),
      `seed ${seed} status`,
    );
    const lookup = gen.resultResponse(g);
    assert(builtResultResponsePayload(lookup) !== undefined);
    assertSameBytes(
      makeResultResponseEnvelope(lookup, result),
      slowEnvelope("tool.result.response", resultResponseToPayload(lookup), result),
      `seed ${seed} result`,
    );
    const answer = gen.controlResponse(g, command);
    assert(builtControlResponsePayload(answer) !== undefined);
    assertSameBytes(
      makeControlResponseEnvelope(answer, control),
      slowEnvelope("tool.control.response", controlResponseToPayload(answer), control),
      `seed ${seed} control`,
    );
    const error = gen.toolError(g);
    assert(builtErrorPayload(error) !== undefined);
    assertSameBytes(
      makeErrorResponseEnvelope(error, invoke),
      slowEnvelope("tool.error", errorToPayload(error), invoke),
      `seed ${seed} error`,
    );
    fastCount += 4;
  }
  assertEquals(fastCount, 400 * 8);
});

Deno.test("a payload that only JSON.stringify would write wrongly keeps its writer flag", () => {
  const g = makeGen(7);
  const context = gen.toolContext(g);
  const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
    requestId: "request-1",
    endpointInstanceId: undefined,
  });
  for (const outputs of [{ small: 1e-7 }, { "0": true, b: [1e-5] }, { n: { "7": null } }]) {
    const answer = new ToolResult({ status: "succeeded", outputs });
    assertSameBytes(
      makeInvokeResponseEnvelope(answer, invoke),
      slowEnvelope("tool.invoke.response", invokeResponseToPayload(answer), invoke),
      JSON.stringify(outputs),
    );
  }
});

Deno.test("a forged or foreign model takes the copying and validating path", () => {
  const g = makeGen(3);
  const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), gen.toolContext(g), {
    requestId: "request-1",
    endpointInstanceId: undefined,
  });
  // Object.create(prototype) with bad fields passes instanceof but carries no mark.
  const forged = Object.assign(Object.create(ToolResult.prototype), {
    status: "exploded",
    outputs: {},
  }) as ToolResult;
  assertStrictEquals(builtInvokeResponsePayload(forged), undefined);
  assertThrows(
    () => makeInvokeResponseEnvelope(forged, invoke),
    Error,
    "unsupported tool result status",
  );
  // A genuine result holding a forged error (the error brand is on the prototype).
  const badError = Object.assign(Object.create(ToolError.prototype), {
    code: "",
    message: "m",
    retryable: false,
    details: {},
  }) as ToolError;
  const holding = new ToolResult({ status: "failed", error: badError });
  assertStrictEquals(builtInvokeResponsePayload(holding), undefined);
  assertThrows(() => makeInvokeResponseEnvelope(holding, invoke), Error, "code");
  // A subclass instance and a Proxy of a genuine model carry no mark either.
  class Loud extends ToolExecutionStatus {}
  assertStrictEquals(builtStatusResponsePayload(new Loud({ phase: "running" })), undefined);
  const proxied = new Proxy(new ToolResult({ status: "succeeded" }), {});
  assertStrictEquals(builtInvokeResponsePayload(proxied), undefined);
  // A model adopted from a decoded payload whose JSON field is not canonical is copied.
  const plain = Object.freeze({ b: 1, a: 2 });
  const adopted = new ToolResult({ status: "succeeded", outputs: adoptJsonObject(plain) });
  assertStrictEquals(builtInvokeResponsePayload(adopted), undefined);
  assertSameBytes(
    makeInvokeResponseEnvelope(adopted, invoke),
    slowEnvelope("tool.invoke.response", invokeResponseToPayload(adopted), invoke),
    "adopted",
  );
});

Deno.test("the answer to a forged or proxied request takes the checked path", () => {
  const g = makeGen(5);
  const context = gen.toolContext(g);
  const genuine = makeStatusRequestEnvelope(context, {
    requestId: "request-1",
    endpointInstanceId: undefined,
  });
  const status = new ToolExecutionStatus({ phase: "running" });
  // Object.create(prototype) passes instanceof but was never checked by the constructor: its
  // blank request id and lone surrogate must be refused as a hand-built envelope's are.
  for (
    const [field, value, path, message] of [
      ["requestId", " ", "request_id", "must be a non-empty string"],
      ["invocationId", "\ud800", "invocation_id", "must contain only valid Unicode scalar values"],
    ] as const
  ) {
    const forged = Object.assign(Object.create(ToolEnvelope.prototype), {
      ...genuine,
      [field]: value,
    }) as ToolEnvelope;
    const error = assertThrows(() => makeStatusResponseEnvelope(status, forged), ToolProtocolError);
    assertEquals([error.code, error.path, error.message], [
      "FORGE_PROTOCOL_INVALID_MESSAGE",
      path,
      message,
    ]);
  }
  // A Proxy of a genuine request carries no brand either; its answer is still the same message.
  const proxied = new Proxy(genuine, {});
  assertSameBytes(
    makeStatusResponseEnvelope(status, proxied),
    makeStatusResponseEnvelope(status, genuine),
    "proxied",
  );
});

Deno.test("every acceptance without details shares one payload, encoded as the copied one", () => {
  const first = builtInvokeResponsePayload(new ToolAccepted())!;
  assertStrictEquals(builtInvokeResponsePayload(new ToolAccepted({}))!, first);
  assert(Object.isFrozen(first) && Object.isFrozen(first.accepted));
  assertEquals(canonicalHeight(first), 2);
  assertEquals(first, invokeResponseToPayload(new ToolAccepted()));
  // Details make their own payload.
  const detailed = builtInvokeResponsePayload(new ToolAccepted({ details: { eta_s: 3 } }))!;
  assert(detailed !== first);
  assertEquals(detailed, { accepted: { details: { eta_s: 3 } }, outcome: "accepted" });
  const request = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    gen.toolContext(makeGen(7)),
    { requestId: "request-1", endpointInstanceId: "instance-1" },
  );
  const response = makeInvokeResponseEnvelope(new ToolAccepted(), request);
  assertStrictEquals(response.payload, first);
  assertEquals(
    new TextDecoder().decode(encodeEnvelope(response)).includes(
      '"payload":{"accepted":{"details":{}},"outcome":"accepted"}',
    ),
    true,
  );
});

/** Today's path for an invoke request: the adapter's payload, copied, then the typed validation. */
function slowInvokeRequest(
  request: ToolRequest,
  context: ToolContext,
  options: { requestId: string; endpointInstanceId: string | undefined },
): ToolEnvelope {
  const envelope = new ToolEnvelope({
    messageType: "tool.invoke.request",
    requestId: options.requestId,
    invocationId: context.invocationId,
    attemptId: context.attemptId,
    endpointId: context.endpointId,
    endpointInstanceId: options.endpointInstanceId,
    operation: context.operation,
    payload: invokeRequestToPayload(request, context),
  });
  validateMessageEnvelope(envelope);
  return envelope;
}

/** The fields of a plain context (for subclasses and forgeries of ToolContext). */
const CONTEXT_INIT = {
  executionKey: new ToolExecutionKey({ invocationId: "i", attemptId: "a" }),
  toolId: "t",
  implementationId: "m",
  endpointId: "e",
  operation: "o",
};

/** A value nested `height` levels deep: `{a: {a: ... {}}}`. */
function nested(height: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < height; i++) value = { a: value };
  return value;
}

Deno.test("built invoke request payloads encode byte for byte as the copied and validated ones", () => {
  for (let seed = 1; seed <= 600; seed++) {
    const g = makeGen(seed);
    const context = gen.toolContext(g);
    const request = new ToolRequest({ arguments: gen.jsonObject(g) });
    const options = {
      requestId: gen.idString(g),
      endpointInstanceId: g.rng.bool() ? gen.idString(g) : undefined,
    };
    assert(builtInvokeRequestPayload(request, context) !== undefined, `seed ${seed}`);
    assertSameBytes(
      makeInvokeRequestEnvelope(request, context, options),
      slowInvokeRequest(request, context, options),
      `seed ${seed}`,
    );
  }
  // -0 as a deadline, no metadata, empty arguments.
  const context = contextOf("vision.yolo", "detect", { deadlineMs: -0 });
  const options = { requestId: "r", endpointInstanceId: undefined };
  const request = new ToolRequest({ arguments: {} });
  assertSameBytes(
    makeInvokeRequestEnvelope(request, context, options),
    slowInvokeRequest(request, context, options),
    "-0 deadline",
  );
});

Deno.test("an invoke request whose arguments or metadata reach the depth bound takes the checked path", () => {
  const contextWith = (metadata: object) => contextOf("vision.yolo", "detect", { metadata });
  const options = { requestId: "r", endpointInstanceId: "x" };
  // Arguments sit at depth 1 and metadata at depth 2 of the payload, whose bound is 64.
  const cases = [
    { request: new ToolRequest({ arguments: nested(63) }), context: contextWith({}), built: true },
    { request: new ToolRequest({ arguments: nested(64) }), context: contextWith({}), built: false },
    { request: new ToolRequest({ arguments: {} }), context: contextWith(nested(62)), built: true },
    { request: new ToolRequest({ arguments: {} }), context: contextWith(nested(63)), built: false },
  ];
  for (const [i, { request, context, built }] of cases.entries()) {
    assertStrictEquals(builtInvokeRequestPayload(request, context) !== undefined, built, `${i}`);
    if (built) {
      assertSameBytes(
        makeInvokeRequestEnvelope(request, context, options),
        slowInvokeRequest(request, context, options),
        `case ${i}`,
      );
    } else {
      const fast = assertThrows(
        () => makeInvokeRequestEnvelope(request, context, options),
        ToolProtocolError,
      );
      const slow = assertThrows(
        () => slowInvokeRequest(request, context, options),
        ToolProtocolError,
      );
      assertEquals([fast.code, fast.message, fast.path], [slow.code, slow.message, slow.path]);
    }
  }
});

Deno.test("a forged or subclassed request or context takes the copying and validating path", () => {
  const init = CONTEXT_INIT;
  class OtherContext extends ToolContext {}
  class OtherRequest extends ToolRequest {}
  const context = new ToolContext(init);
  const request = new ToolRequest({ arguments: { x: 1 } });
  const forgedRequest = Object.create(ToolRequest.prototype, {
    arguments: { value: { x: 1 }, enumerable: true },
  }) as ToolRequest;
  const forgedContext = Object.create(ToolContext.prototype, {
    ...Object.getOwnPropertyDescriptors(context),
    toolId: { value: "", enumerable: true },
  }) as ToolContext;
  const options = { requestId: "r", endpointInstanceId: undefined };
  for (
    const [name, r, c] of [
      ["subclassed context", request, new OtherContext(init)],
      ["subclassed request", new OtherRequest({ arguments: { x: 1 } }), context],
      ["forged request", forgedRequest, context],
    ] as const
  ) {
    assertStrictEquals(builtInvokeRequestPayload(r, c), undefined, name);
    assertSameBytes(
      makeInvokeRequestEnvelope(r, c, options),
      slowInvokeRequest(r, c, options),
      name,
    );
  }
  // A forged context with a blank tool id is refused by the typed validation, as before.
  assertStrictEquals(builtInvokeRequestPayload(request, forgedContext), undefined);
  const error = assertThrows(
    () => makeInvokeRequestEnvelope(request, forgedContext, options),
    ToolProtocolError,
  );
  assertStrictEquals(error.path, "payload.context");
});

Deno.test("an invoke request of built models reads back as those models, equal to the decoded ones", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const g = makeGen(seed);
    const context = gen.toolContext(g);
    const request = new ToolRequest({ arguments: gen.jsonObject(g) });
    const envelope = makeInvokeRequestEnvelope(request, context, {
      requestId: gen.idString(g),
      endpointInstanceId: undefined,
    });
    const parts = invokeRequestFromEnvelope(envelope);
    assertStrictEquals(parts.request, request, `seed ${seed}`);
    assertStrictEquals(parts.context, context, `seed ${seed}`);
    // What a provider receives for the same bytes from elsewhere: the same values.
    const decoded = invokeRequestFromEnvelope(decodeEnvelope(encodeEnvelope(envelope)));
    assert(decoded.context !== context);
    assertEquals(decoded.request, request, `seed ${seed}`);
    assertEquals(
      [decoded.context, decoded.context.invocationId, decoded.context.attemptId],
      [context, context.invocationId, context.attemptId],
      `seed ${seed}`,
    );
  }
  // Models no constructor of theirs built are read back from the payload, checked.
  class OtherContext extends ToolContext {}
  const other = new OtherContext(CONTEXT_INIT);
  const request = new ToolRequest({ arguments: { x: 1 } });
  const parts = invokeRequestFromEnvelope(
    makeInvokeRequestEnvelope(request, other, { requestId: "r", endpointInstanceId: undefined }),
  );
  assert(parts.context !== other && !(parts.context instanceof OtherContext));
  assert(parts.request !== request);
  assertEquals([parts.context.toolId, parts.request.arguments], ["t", { x: 1 }]);
});

Deno.test("a response built from a built answer keeps it, equal to what its payload decodes to", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const g = makeGen(seed);
    const context = gen.toolContext(g);
    const options = { requestId: gen.idString(g), endpointInstanceId: gen.idString(g) };
    const invoke = makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, options);
    const command = g.rng.pick(["cancel", "stop"] as const);
    const cases: [ToolEnvelope, object, (payload: unknown) => unknown][] = [];
    for (const answer of [gen.toolResult(g), new ToolAccepted({ details: gen.jsonObject(g) })]) {
      cases.push([makeInvokeResponseEnvelope(answer, invoke), answer, invokeResponseFromPayload]);
    }
    const status = gen.executionStatus(g);
    cases.push([
      makeStatusResponseEnvelope(status, makeStatusRequestEnvelope(context, options)),
      status,
      statusResponseFromPayload,
    ]);
    const lookup = gen.resultResponse(g);
    cases.push([
      makeResultResponseEnvelope(lookup, makeResultRequestEnvelope(context, options)),
      lookup,
      resultResponseFromPayload,
    ]);
    const control = gen.controlResponse(g, command);
    cases.push([
      makeControlResponseEnvelope(control, makeControlRequestEnvelope(command, context, options)),
      control,
      controlResponseFromPayload,
    ]);
    const error = gen.toolError(g);
    cases.push([makeErrorResponseEnvelope(error, invoke), error, errorFromPayload]);
    for (const [envelope, model, decode] of cases) {
      const label = `seed ${seed} ${envelope.messageType}`;
      assertStrictEquals(builtAnswerOf(envelope), model, label);
      assertEquals(decode(envelope.payload), model, label);
      // The same message from bytes carries no model: its reader builds one.
      assertStrictEquals(builtAnswerOf(decodeEnvelope(encodeEnvelope(envelope))), undefined);
    }
  }
  // An answer no constructor of its built keeps nothing.
  class OtherResult extends ToolResult {}
  const invoke = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    new ToolContext(CONTEXT_INIT),
    { requestId: "r", endpointInstanceId: undefined },
  );
  const response = makeInvokeResponseEnvelope(new OtherResult({ status: "succeeded" }), invoke);
  assertStrictEquals(builtAnswerOf(response), undefined);
  assertStrictEquals(builtAnswerOf(invoke), undefined);
});

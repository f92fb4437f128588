// Answering one request (src/handler/_dispatch.ts): an invoke request's payload is validated and
// its models built in one pass, and the error it answers a bad payload with is exactly the one
// validateMessageEnvelope reports (code, message, path), first error first.
import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { type ToolEnvelope, ToolProtocolError, validateMessageEnvelope } from "../../wire.ts";
import { controlFor, invokeFor, resultFor, statusFor } from "./_fakes.ts";
import { replaceEnvelope } from "../_helpers.ts";
import { CA, cell, CQ, Scripted } from "./_scripted.ts";

const GOOD_CONTEXT = { tool_id: "forge.tool.detect", implementation_id: "impl", metadata: {} };

/** The invoke request of `target` with `payload` in place of its own. */
function withPayload(target: typeof CQ, payload: Record<string, unknown>): ToolEnvelope {
  return replaceEnvelope(invokeFor(target), { payload });
}

const BAD_PAYLOADS: [string, Record<string, unknown>][] = [
  ["blank tool_id", { arguments: {}, context: { ...GOOD_CONTEXT, tool_id: " " } }],
  ["tool_id not a string", { arguments: {}, context: { ...GOOD_CONTEXT, tool_id: 7 } }],
  ["blank implementation_id", {
    arguments: {},
    context: { ...GOOD_CONTEXT, implementation_id: "\t" },
  }],
  ["empty caller_id", { arguments: {}, context: { ...GOOD_CONTEXT, caller_id: "" } }],
  ["negative deadline", { arguments: {}, context: { ...GOOD_CONTEXT, deadline_ms: -1 } }],
  ["fractional deadline", { arguments: {}, context: { ...GOOD_CONTEXT, deadline_ms: 1.5 } }],
  [
    "two bad fields: the first reported",
    { arguments: {}, context: { ...GOOD_CONTEXT, implementation_id: "", deadline_ms: -1 } },
  ],
  ["metadata not a mapping", { arguments: {}, context: { ...GOOD_CONTEXT, metadata: [] } }],
  ["unknown context field", { arguments: {}, context: { ...GOOD_CONTEXT, extra: 1 } }],
  ["arguments not a mapping", { arguments: [1], context: GOOD_CONTEXT }],
  ["context missing", { arguments: {} }],
];

for (const target of [CQ, CA]) {
  Deno.test(`a bad ${target.operation} invoke payload is answered with validateMessageEnvelope's error`, async () => {
    const query = new Scripted();
    const action = new Scripted();
    const handler = cell({ query, action });
    for (const [label, payload] of BAD_PAYLOADS) {
      const request = withPayload(target, payload);
      const expected = assertThrows(() => validateMessageEnvelope(request), ToolProtocolError);
      const [answer] = await handler.dispatch(request);
      assertEquals(answer.messageType, "tool.error", label);
      assertEquals(answer.payload.error, {
        code: expected.code,
        message: expected.message,
        retryable: false,
        details: expected.path === undefined ? {} : { path: expected.path },
      }, label);
    }
    // No provider was called, and a good payload is still answered by the provider.
    assertStrictEquals(query.calls.query + action.calls.start, 0);
    const [answer] = await handler.dispatch(
      withPayload(target, { arguments: {}, context: GOOD_CONTEXT }),
    );
    assertEquals(answer.messageType, "tool.invoke.response");
    await handler.close({ graceMs: 0 });
  });
}

/** `request` with `field` replaced on an object the envelope's constructor never checked. */
function forged(request: ToolEnvelope, field: "invocationId" | "attemptId", value: string) {
  return Object.assign(Object.create(Object.getPrototypeOf(request)), {
    ...request,
    [field]: value,
  }) as ToolEnvelope;
}

Deno.test("a forged request's execution key is checked: no provider sees a bad key", async () => {
  // Object.create(prototype) passes instanceof and the route check, but its invocation_id and
  // attempt_id never passed the envelope's constructor: the key built from them is checked.
  const query = new Scripted();
  const action = new Scripted();
  const handler = cell({ query, action });
  const requests = [
    invokeFor(CQ),
    invokeFor(CA),
    statusFor(CA),
    resultFor(CA),
    controlFor(CA, "cancel"),
  ];
  for (const request of requests) {
    for (const [field, value] of [["invocationId", "\ud800"], ["attemptId", " "]] as const) {
      const label = `${request.messageType} ${field}`;
      const outcome = await handler.dispatch(forged(request, field, value)).then(
        (answers) => answers.map((answer) => answer.messageType).join(),
        (error) => error.constructor.name,
      );
      // An invoke's bad key is an invalid payload, whose answer to a forged request is refused
      // (ToolProtocolError); a status, result or control key is the key's own RangeError.
      const expected = request.messageType === "tool.invoke.request"
        ? "ToolProtocolError"
        : "RangeError";
      assertEquals(outcome, expected, label);
    }
  }
  assertEquals(action.calls, { query: 0, start: 0, cancel: 0, stop: 0, status: 0, result: 0 });
  assertStrictEquals(query.calls.query, 0);
  assertEquals(handler.state.retainedExecutions, 0);
  await handler.close({ graceMs: 0 });
});

// A copy of an envelope with another request id and instance (src/wire/envelope.ts
// `envelopeReheaded`, the gateway's forwarded requests and re-addressed answers): the same
// envelope `new ToolEnvelope` builds from the source's fields, the two new headers checked by
// the constructor's rules and errors, the source's models kept only for a validated copy, and a
// forged source checked in full.
import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import {
  ToolAccepted,
  ToolControlResponse,
  ToolError,
  ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  makeControlRequestEnvelope,
  makeControlResponseEnvelope,
  makeErrorResponseEnvelope,
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeResultRequestEnvelope,
  makeResultResponseEnvelope,
  makeStatusRequestEnvelope,
  makeStatusResponseEnvelope,
  ToolEnvelope,
  ToolProtocolError,
} from "../../wire.ts";
import {
  builtAnswerOf,
  builtInvokeRequestParts,
  envelopeReheaded,
  isFactoryTyped,
} from "../../src/wire/envelope.ts";
import { context as helperContext } from "../_helpers.ts";

const context = helperContext();
const ids = { requestId: "request-1", endpointInstanceId: "instance-1" };

function sources(): ToolEnvelope[] {
  const invoke = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { x: 1.5 } }),
    context,
    ids,
  );
  const status = makeStatusRequestEnvelope(context, ids);
  const result = makeResultRequestEnvelope(context, ids);
  const cancel = makeControlRequestEnvelope("cancel", context, ids);
  const built = [
    invoke,
    status,
    result,
    cancel,
    makeInvokeResponseEnvelope(new ToolAccepted(), invoke),
    makeInvokeResponseEnvelope(new ToolResult({ status: "succeeded", outputs: { n: 2 } }), invoke),
    makeStatusResponseEnvelope(new ToolExecutionStatus({ phase: "running" }), status),
    makeResultResponseEnvelope(new ToolResultResponse({ status: "pending" }), result),
    makeControlResponseEnvelope(
      new ToolControlResponse({ command: "cancel", status: "accepted" }),
      cancel,
    ),
    makeErrorResponseEnvelope(new ToolError({ code: "E", message: "m", retryable: false }), status),
  ];
  // And each decoded from its bytes (not built by a factory: its payload is the decoder's).
  return [...built, ...built.map((envelope) => decodeEnvelope(encodeEnvelope(envelope)))];
}

/** The envelope the checked constructor builds from `source`'s fields with the new headers. */
function checkedCopy(
  source: ToolEnvelope,
  requestId: string | undefined,
  endpointInstanceId: string | undefined,
): ToolEnvelope {
  return new ToolEnvelope({
    messageType: source.messageType,
    requestId,
    invocationId: source.invocationId,
    attemptId: source.attemptId,
    endpointId: source.endpointId,
    endpointInstanceId,
    operation: source.operation,
    payload: source.payload,
  });
}

Deno.test("envelopeReheaded builds what the constructor builds from the source's fields", () => {
  for (const source of sources()) {
    for (const instance of ["instance-2", undefined]) {
      for (const validated of [false, true]) {
        const copy = envelopeReheaded(source, "request-1@gateway-7", instance, validated);
        const expected = checkedCopy(source, "request-1@gateway-7", instance);
        assertEquals({ ...copy }, { ...expected });
        assertEquals(Object.isFrozen(copy), true);
        assertEquals(encodeEnvelope(copy), encodeEnvelope(expected));
        assertEquals(isFactoryTyped(copy), validated);
      }
    }
  }
});

Deno.test("envelopeReheaded keeps the source's models for a validated copy only", () => {
  const [invoke] = sources();
  const parts = builtInvokeRequestParts(invoke)!;
  const validated = envelopeReheaded(invoke, "request-1@gateway-1", "instance-2", true);
  assertStrictEquals(builtInvokeRequestParts(validated), parts);
  assertEquals(builtInvokeRequestParts(envelopeReheaded(invoke, "r", "i", false)), undefined);
  const response = makeInvokeResponseEnvelope(new ToolAccepted(), invoke);
  const answer = builtAnswerOf(response)!;
  assertStrictEquals(
    builtAnswerOf(envelopeReheaded(response, "request-9", undefined, true)),
    answer,
  );
});

Deno.test("envelopeReheaded checks the two new headers with the constructor's codes, paths and order", () => {
  const [invoke] = sources();
  const cases: [string | undefined, string | undefined, string, string][] = [
    [undefined, "instance-1", "request_id", "must be a non-empty string"],
    [" ", "instance-1", "request_id", "must be a non-empty string"],
    ["bad\ud800", "instance-1", "request_id", "must contain only valid Unicode scalar values"],
    ["request-1", "", "endpoint_instance_id", "must be a non-empty string"],
    [
      "request-1",
      "bad\udfff",
      "endpoint_instance_id",
      "must contain only valid Unicode scalar values",
    ],
    // Both bad: the instance is reported first, as the constructor checks it first.
    ["", "\t", "endpoint_instance_id", "must be a non-empty string"],
  ];
  for (const [requestId, instance, path, message] of cases) {
    for (const validated of [false, true]) {
      const error = assertThrows(
        () => envelopeReheaded(invoke, requestId, instance, validated),
        ToolProtocolError,
      );
      const expected = assertThrows(
        () => checkedCopy(invoke, requestId, instance),
        ToolProtocolError,
      );
      assertEquals([error.code, error.path, error.message], [
        expected.code,
        path,
        expected.message,
      ]);
      assertEquals(error.message.includes(message), true, error.message);
    }
  }
});

Deno.test("envelopeReheaded checks a forged source in full, as the constructor checks its fields", () => {
  const [invoke] = sources();
  // An object that passes `instanceof` but that no constructor built: its headers are not
  // trusted, and a blank endpoint_id is refused.
  const forged = Object.assign(Object.create(ToolEnvelope.prototype), {
    ...invoke,
    endpointId: " ",
  });
  const error = assertThrows(
    () => envelopeReheaded(forged, "request-1", "instance-1", true),
    ToolProtocolError,
  );
  assertEquals(error.path, "endpoint_id");
  const fine = Object.assign(Object.create(ToolEnvelope.prototype), { ...invoke });
  const copy = envelopeReheaded(fine, "request-2", "instance-1", false);
  assertEquals({ ...copy }, { ...checkedCopy(invoke, "request-2", "instance-1") });
});

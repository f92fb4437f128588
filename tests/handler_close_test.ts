import { assertEquals, assertInstanceOf, assertRejects } from "@std/assert";
import {
  ToolContext,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolExecutionKey,
  type ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  type ToolResultResponse,
} from "../mod.ts";
import {
  errorFromPayload,
  invokeResponseFromPayload,
  makeInvokeRequestEnvelope,
  makeStatusRequestEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
} from "../wire.ts";
import { silentLogger } from "./_helpers.ts";

const never = <T>() => new Promise<T>(() => {});

function setup() {
  const handler = new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "robot",
      operations: [
        new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          cancellable: true,
          statusSupported: true,
        }),
      ],
    }),
    {
      endpointInstanceId: "instance-1",
      logger: silentLogger, // close() abandons calls on purpose: its warnings are expected
      operations: {
        detect: { query: () => never<ToolResult>() },
        move: {
          start: () => never(),
          cancel: () => new ToolControlResponse({ command: "cancel", status: "accepted" }),
          status: () => never<ToolExecutionStatus>(),
          result: () => never<ToolResultResponse>(),
        },
      },
    },
  );
  const request = (operation: string, invocationId: string, requestId: string) => {
    const context = new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
      toolId: "tool",
      implementationId: "impl",
      endpointId: "robot",
      operation,
    });
    return {
      invoke: makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
        requestId,
        endpointInstanceId: "instance-1",
      }),
      status: makeStatusRequestEnvelope(context, { requestId, endpointInstanceId: "instance-1" }),
    };
  };
  return { handler, request };
}

Deno.test("close() answers every request still waiting on a provider once its grace ran out", async () => {
  const { handler, request } = setup();
  const query = handler.dispatch(request("detect", "q-1", "r-1").invoke);
  const start = handler.dispatch(request("move", "m-1", "r-2").invoke);
  const duplicate = handler.dispatch(request("move", "m-1", "r-3").invoke);
  const status = handler.dispatch(request("move", "m-2", "r-4").status);
  await handler.close({ graceMs: 20 });

  const [queryAnswer] = await query;
  const queryResult = invokeResponseFromPayload(queryAnswer.payload);
  assertInstanceOf(queryResult, ToolResult);
  assertEquals([queryResult.status, queryResult.error?.code], [
    "unknown",
    "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
  ]);

  for (const [answer] of [await start, await duplicate]) {
    const result = invokeResponseFromPayload(answer.payload);
    assertInstanceOf(result, ToolResult);
    assertEquals([result.status, result.error?.code], [
      "unknown",
      "FORGE_ENDPOINT_OUTCOME_UNKNOWN",
    ]);
  }
  assertEquals((await duplicate)[0].requestId, "r-3");

  const [statusAnswer] = await status;
  assertEquals(statusAnswer.messageType, "tool.error");
  assertEquals(errorFromPayload(statusAnswer.payload).code, "FORGE_ENDPOINT_UNAVAILABLE");
  assertEquals(handler.state.permitsInUse.move, 0);
  assertEquals(handler.state.activeQueries.detect, 0);
});

Deno.test("close() refuses a graceMs that is not a non-negative finite number, showing it", async () => {
  const { handler, request } = setup();
  const start = handler.dispatch(request("move", "m-1", "r-1").invoke);
  for (
    const [graceMs, shown] of [[NaN, "NaN"], [-1, "-1"], [Infinity, "Infinity"], ["10", '"10"']]
  ) {
    const error = await assertRejects(
      () => handler.close({ graceMs: graceMs as number }),
      RangeError,
    );
    assertEquals(
      error.message,
      `Cannot close the handler as 'graceMs' must be a non-negative finite number: current value is ${shown}`,
    );
    // Refused before anything changed: the handler still admits, nothing converged.
    assertEquals(handler.state.closed, false);
    assertEquals(handler.state.permitsInUse.move, 1);
  }
  // 0 is no grace: what is still running converges to unknown at once.
  await handler.close({ graceMs: 0 });
  const result = invokeResponseFromPayload((await start)[0].payload);
  assertInstanceOf(result, ToolResult);
  assertEquals(result.status, "unknown");
  assertEquals(handler.state.closed, true);
});

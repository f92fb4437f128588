// Port of the reference's tests/test_protocols.py (1 test): structural fakes satisfy the provider SPI.
import { assert, assertEquals, assertStrictEquals } from "@std/assert";
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  ToolEvent,
  ToolExecutionKey,
  ToolExecutionStatus,
  type ToolExecutionStatusInit,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../src/endpoint/models.ts";
import type {
  ActionToolEndpoint,
  QueryToolEndpoint,
  SessionToolEndpoint,
  ToolCallOptions,
  ToolEventEmitter,
} from "../../src/endpoint/spi.ts";

class CollectingEmitter implements ToolEventEmitter {
  readonly events: ToolEvent[] = [];

  emit(event: ToolEvent): Promise<void> {
    this.events.push(event);
    return Promise.resolve();
  }
}

function key(attemptId = "attempt-1"): ToolExecutionKey {
  return new ToolExecutionKey({ invocationId: "invocation-1", attemptId });
}

function context(endpointId: string, operation: string, attemptId = "attempt-1"): ToolContext {
  return new ToolContext({
    executionKey: key(attemptId),
    toolId: "forge.tool.test",
    implementationId: "fake",
    endpointId,
    operation,
  });
}

class FakeQuery implements QueryToolEndpoint {
  query(
    request: ToolRequest,
    context: ToolContext,
    _options: ToolCallOptions,
  ): Promise<ToolResult> {
    assert(context.executionKey.equals(key()));
    assertEquals(context.executionKey, key());
    return Promise.resolve(
      new ToolResult({ status: "succeeded", outputs: { arguments: { ...request.arguments } } }),
    );
  }
}

class FakeAction implements ActionToolEndpoint {
  readonly phases = new Map<string, string>();

  async start(
    _request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    _options: ToolCallOptions,
  ): Promise<ToolAccepted> {
    this.phases.set(context.executionKey.id, "running");
    await events.emit(new ToolEvent({ type: "progress", data: { fraction: 0.5 } }));
    return new ToolAccepted();
  }

  cancel(
    key: ToolExecutionKey,
    reason: string | undefined,
    _options: ToolCallOptions,
  ): Promise<ToolControlResponse> {
    assertStrictEquals(reason, "operator request");
    this.phases.set(key.id, "cancelled");
    return Promise.resolve(new ToolControlResponse({ command: "cancel", status: "accepted" }));
  }

  status(key: ToolExecutionKey, _options: ToolCallOptions): Promise<ToolExecutionStatus> {
    const phase = this.phases.get(key.id) as ToolExecutionStatusInit["phase"];
    return Promise.resolve(new ToolExecutionStatus({ phase } as ToolExecutionStatusInit));
  }

  result(key: ToolExecutionKey, _options: ToolCallOptions): Promise<ToolResultResponse> {
    if (this.phases.get(key.id) !== "cancelled") {
      return Promise.resolve(new ToolResultResponse({ status: "pending" }));
    }
    return Promise.resolve(
      new ToolResultResponse({
        status: "available",
        result: new ToolResult({ status: "cancelled" }),
      }),
    );
  }
}

class FakeSession implements SessionToolEndpoint {
  readonly phases = new Map<string, string>();

  async start(
    request: ToolRequest,
    context: ToolContext,
    events: ToolEventEmitter,
    _options: ToolCallOptions,
  ): Promise<ToolAccepted> {
    assertStrictEquals(request.arguments["task"], "pick cube");
    this.phases.set(context.executionKey.id, "running");
    await events.emit(new ToolEvent({ type: "heartbeat" }));
    return new ToolAccepted();
  }

  stop(
    key: ToolExecutionKey,
    reason: string | undefined,
    _options: ToolCallOptions,
  ): Promise<ToolControlResponse> {
    assertStrictEquals(reason, "test complete");
    this.phases.set(key.id, "stopped");
    return Promise.resolve(new ToolControlResponse({ command: "stop", status: "accepted" }));
  }

  status(key: ToolExecutionKey, _options: ToolCallOptions): Promise<ToolExecutionStatus> {
    const phase = this.phases.get(key.id) as ToolExecutionStatusInit["phase"];
    return Promise.resolve(new ToolExecutionStatus({ phase } as ToolExecutionStatusInit));
  }

  result(key: ToolExecutionKey, _options: ToolCallOptions): Promise<ToolResultResponse> {
    if (this.phases.get(key.id) !== "stopped") {
      return Promise.resolve(new ToolResultResponse({ status: "pending" }));
    }
    return Promise.resolve(
      new ToolResultResponse({
        status: "available",
        result: new ToolResult({ status: "stopped" }),
      }),
    );
  }
}

Deno.test("async query action and session contract calls", async () => {
  const query: QueryToolEndpoint = new FakeQuery();
  const action: ActionToolEndpoint = new FakeAction();
  const session: SessionToolEndpoint = new FakeSession();
  const emitter = new CollectingEmitter();
  const options: ToolCallOptions = { signal: new AbortController().signal };

  const queryResult = await query.query(
    new ToolRequest({ arguments: { value: 1 } }),
    context("fake.query", "query"),
    options,
  );
  const actionContext = context("motion.trajectory", "execute");
  await action.start(
    new ToolRequest({ arguments: { trajectory: [] } }),
    actionContext,
    emitter,
    options,
  );
  const actionStatus = await action.status(actionContext.executionKey, options);
  const actionControl = await action.cancel(
    actionContext.executionKey,
    "operator request",
    options,
  );
  const actionResult = await action.result(actionContext.executionKey, options);

  const sessionContext = context("policy.lerobot", "execute");
  await session.start(
    new ToolRequest({ arguments: { task: "pick cube" } }),
    sessionContext,
    emitter,
    options,
  );
  const sessionStatus = await session.status(sessionContext.executionKey, options);
  const sessionControl = await session.stop(sessionContext.executionKey, "test complete", options);
  const sessionResult = await session.result(sessionContext.executionKey, options);

  const secondAttempt = context("policy.lerobot", "execute", "attempt-2");
  await session.start(
    new ToolRequest({ arguments: { task: "pick cube" } }),
    secondAttempt,
    emitter,
    options,
  );

  assertEquals(queryResult.outputs, { arguments: { value: 1 } });
  assertStrictEquals(actionStatus.phase, "running");
  assertStrictEquals(actionControl.status, "accepted");
  assertEquals(
    actionResult,
    new ToolResultResponse({
      status: "available",
      result: new ToolResult({ status: "cancelled" }),
    }),
  );
  assertStrictEquals(sessionStatus.phase, "running");
  assertStrictEquals(sessionControl.status, "accepted");
  assertEquals(
    sessionResult,
    new ToolResultResponse({ status: "available", result: new ToolResult({ status: "stopped" }) }),
  );
  assertStrictEquals((await session.status(secondAttempt.executionKey, options)).phase, "running");
  // The first attempt is a distinct execution: it stays stopped.
  assertStrictEquals((await session.status(sessionContext.executionKey, options)).phase, "stopped");
  assertEquals(emitter.events.map((event) => event.type), ["progress", "heartbeat", "heartbeat"]);
});

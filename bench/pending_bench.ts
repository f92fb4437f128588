/**
 * The cost of one healthy Query round trip through `dispatch` while many provider calls hang:
 * 0 (the baseline), 12,000 and 50,000 Queries that never settle are pending on the same handler
 * (with deadlines enforced, so every pending call also holds a deadline timer). The cost of one
 * call must not depend on how many others are pending. It also prints how long admitting the hung
 * Queries took.
 *
 * ```sh
 * deno bench --allow-read --allow-env bench/pending_bench.ts
 * ```
 */
import {
  ToolContext,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolExecutionKey,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../mod.ts";
import { makeInvokeRequestEnvelope, TOOL_ENDPOINT_PROTOCOL, type ToolEnvelope } from "../wire.ts";

const done = new ToolResult({ status: "succeeded", outputs: { ok: true } });
const WIDE = Number.MAX_SAFE_INTEGER;
const FAR = Date.now() + 3_600_000;

function handler(): ToolEndpointHandler {
  return new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: "vision.yolo",
      operations: [
        new ToolOperationDescriptor({ name: "hang", semantics: "query", maxConcurrency: WIDE }),
        new ToolOperationDescriptor({ name: "detect", semantics: "query", maxConcurrency: WIDE }),
      ],
    }),
    {
      endpointInstanceId: "instance-1",
      enforceDeadlines: true,
      operations: {
        hang: { query: () => new Promise<ToolResult>(() => {}) },
        detect: { query: () => done },
      },
    },
  );
}

function request(operation: string, invocationId: string): ToolEnvelope {
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
    toolId: "forge.tool.detect",
    implementationId: "yolo",
    endpointId: "vision.yolo",
    operation,
    deadlineMs: FAR,
  });
  return makeInvokeRequestEnvelope(new ToolRequest({ arguments: {} }), context, {
    requestId: `r-${invocationId}`,
    endpointInstanceId: "instance-1",
  });
}

const healthy = request("detect", "healthy");

async function withPending(pending: number): Promise<ToolEndpointHandler> {
  const target = handler();
  const begin = performance.now();
  for (let i = 0; i < pending; i++) target.dispatch(request("hang", `hang-${i}`));
  // One healthy round trip lets every hung admission reach its provider call.
  await target.dispatch(healthy);
  const ms = performance.now() - begin;
  if (pending > 0) {
    console.log(
      `admitting ${pending.toLocaleString("en-US")} hung Queries took ${ms.toFixed(0)} ms ` +
        `(active ${target.state.activeQueries.hang})`,
    );
  }
  return target;
}

// One loaded handler at a time, built on a case's first call and closed before the next case's,
// so no case pays for the garbage of another; the setup is outside the measured span.
let loaded: { pending: number; target: ToolEndpointHandler } | undefined;
async function loadedWith(pending: number): Promise<ToolEndpointHandler> {
  if (loaded?.pending !== pending) {
    await loaded?.target.close({ graceMs: 0 });
    loaded = { pending, target: await withPending(pending) };
  }
  return loaded.target;
}

for (const pending of [0, 12_000, 50_000]) {
  Deno.bench({
    name: `healthy Query with ${pending.toLocaleString("en-US")} hung Queries pending`,
    group: "query round trip under load",
    baseline: pending === 0,
    fn: async (b) => {
      const target = await loadedWith(pending);
      b.start();
      await target.dispatch(healthy);
      b.end();
    },
  });
}

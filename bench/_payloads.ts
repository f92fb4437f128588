/**
 * Shared benchmark inputs: a typical `tool.invoke.request` and one with a 64 KiB payload.
 *
 * @module
 */
import { ToolContext, ToolExecutionKey, ToolRequest } from "../mod.ts";
import { makeInvokeRequestEnvelope, type ToolEnvelope } from "../wire.ts";

/** The context of every benchmark request. */
export const benchContext: ToolContext = new ToolContext({
  executionKey: new ToolExecutionKey({ invocationId: "invocation-1", attemptId: "attempt-1" }),
  toolId: "forge.tool.detect",
  implementationId: "yolo",
  endpointId: "vision.yolo",
  operation: "detect",
  callerId: "planner",
  deadlineMs: 1_800_000_000_000,
  metadata: { trace_id: "4bf92f3577b34da6a3ce929d0e0e4736" },
});

/** A typical detection request: about 330 bytes of payload. */
export const typicalRequest: ToolEnvelope = makeInvokeRequestEnvelope(
  new ToolRequest({
    arguments: {
      camera: "wrist_rgb",
      classes: ["cube", "cylinder", "gripper"],
      confidence: 0.35,
      max_detections: 16,
      roi: { x: 120, y: 64, width: 320, height: 240 },
    },
  }),
  benchContext,
  { requestId: "request-1", endpointInstanceId: "instance-1" },
);

function largeArguments(): Record<string, unknown> {
  const detections: unknown[] = [];
  let size = 0;
  for (let i = 0; size < 64 * 1024; i++) {
    const item = {
      id: i,
      label: `object-${i}`,
      score: 0.5 + (i % 500) / 1000,
      box: [i % 640, (i * 7) % 480, 32 + (i % 64), 24 + (i % 48)],
      tags: ["tracked", i % 2 === 0 ? "stable" : "moving"],
    };
    size += JSON.stringify(item).length + 1;
    detections.push(item);
  }
  return { detections, frame: "wrist_rgb/000123", note: "方块 and ünïcödé text" };
}

/** A request whose payload is about 64 KiB. */
export const largeRequest: ToolEnvelope = makeInvokeRequestEnvelope(
  new ToolRequest({ arguments: largeArguments() }),
  benchContext,
  { requestId: "request-2", endpointInstanceId: "instance-1" },
);

/**
 * Typical messages handled per bench iteration, on both sides of every group (a 64 KiB message is
 * one per iteration). `deno bench` times a function call by call when its warmup calls averaged
 * over 10 µs, and otherwise in batches of 10,000 calls; one typical message sits near that
 * threshold, so a baseline and its case could land on either side of it and be timed
 * differently (the call-by-call side paying the timer's cost on every call). With 16 messages
 * per call, and a first call that warms the case up (see _steady.ts), every case is timed call by
 * call, and the timer's cost is small beside a call.
 */
export const TYPICAL_PER_ITERATION = 16;

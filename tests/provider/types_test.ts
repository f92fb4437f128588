// Type-level checks, proven by `deno check` (every `@ts-expect-error` line must be an error, or
// the check fails): nominal models, and validated argument types flowing into the functions.
import { assertEquals } from "@std/assert";
import { z } from "zod";
import {
  defineAction,
  defineQuery,
  type JsonObject,
  jsonSchema,
  ToolAccepted,
  ToolControlResponse,
  ToolEvent,
  ToolExecutionStatus,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";

Deno.test("a plain object satisfies none of the nominal models", () => {
  // @ts-expect-error a ToolResult is nominal
  const result: ToolResult = { status: "succeeded", outputs: {}, error: undefined };
  // @ts-expect-error a ToolAccepted is nominal
  const accepted: ToolAccepted = { details: {} };
  // @ts-expect-error a ToolExecutionStatus is nominal
  const status: ToolExecutionStatus = { phase: "running", error: undefined, details: {} };
  // @ts-expect-error a ToolControlResponse is nominal
  const control: ToolControlResponse = {
    command: "cancel",
    status: "accepted",
    error: undefined,
    details: {},
  };
  // @ts-expect-error a ToolResultResponse is nominal
  const lookup: ToolResultResponse = { status: "pending", result: undefined };
  // @ts-expect-error a ToolEvent is nominal
  const event: ToolEvent = { type: "progress", data: {} };
  // The constructed ones are, and they compare equal to the same shape at run time.
  const real: ToolResult = new ToolResult({ status: "succeeded" });
  assertEquals([result, accepted, status, control, lookup, event].length, 6);
  assertEquals(real.status, "succeeded");
  const models: unknown[] = [
    new ToolAccepted(),
    new ToolExecutionStatus({ phase: "running" }),
    new ToolControlResponse({ command: "cancel", status: "accepted" }),
    new ToolResultResponse({ status: "pending" }),
    new ToolEvent({ type: "progress" }),
  ];
  // The brand is type-only: no extra own property at run time.
  assertEquals(models.map((m) => Object.keys(m as object).some((k) => k.includes("Brand"))), [
    false,
    false,
    false,
    false,
    false,
  ]);
});

Deno.test("the validated argument type flows into the function's parameter", () => {
  const move = defineAction(
    { arguments: z.object({ target: z.string(), speed: z.number().default(1) }) },
    (args) => {
      const target: string = args.target;
      const speed: number = args.speed;
      // @ts-expect-error 'missing' is not a property of the validated type
      args.missing;
      return { target, speed };
    },
  );
  const detect = defineQuery(
    { arguments: jsonSchema<{ class: string }>({ type: "object", required: ["class"] }) },
    (args) => {
      const name: string = args.class;
      // @ts-expect-error class is a string
      const wrong: number = args.class;
      return { name, wrong };
    },
  );
  const plain = defineQuery((args) => {
    const untyped: JsonObject = args;
    return { untyped };
  });
  assertEquals([move.semantics, detect.semantics, plain.semantics], ["action", "query", "query"]);
});

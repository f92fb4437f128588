// Argument validation of the provider definitions: a real Standard Schema library (zod), the
// JSON Schema subset, asynchronous validators, and validators that throw.
import { assertEquals, assertInstanceOf, assertThrows } from "@std/assert";
import { z } from "zod";
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  jsonSchema,
  type StandardSchemaV1,
  type ToolLogRecord,
} from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import {
  acceptedOutcome,
  ACTION,
  completedResult,
  INSTANCE,
  invokeFor,
  QUERY,
  rejectedError,
} from "../handler/_fakes.ts";

function serve(
  target: { endpointId: string; operation: string },
  definition: Parameters<typeof defineEndpoint>[0]["operations"][string],
) {
  const records: ToolLogRecord[] = [];
  const handler = defineEndpoint({
    endpointId: target.endpointId,
    operations: { [target.operation]: definition },
    logger: (record) => records.push(record),
  }).createHandler({ endpointInstanceId: INSTANCE });
  const first = async (request: ToolEnvelope) => (await handler.dispatch(request))[0];
  return { first, records };
}

Deno.test("zod: invalid arguments are rejected before execution with each issue and its path", async () => {
  let calls = 0;
  const { first } = serve(
    ACTION,
    defineAction(
      { arguments: z.object({ target: z.string(), joints: z.array(z.number()) }) },
      () => void calls++,
    ),
  );
  const error = rejectedError(
    await first(invokeFor(ACTION, { arguments: { target: 3, joints: [0.1, "x"] } })),
  );
  assertEquals(error.code, "FORGE_ENDPOINT_INVALID_ARGUMENTS");
  assertEquals(error.retryable, false);
  assertEquals(
    error.message,
    "arguments are invalid (2 issues): target: Expected string, received number",
  );
  assertEquals(error.details, {
    issues: [
      { path: ["target"], message: "Expected string, received number" },
      { path: ["joints", 1], message: "Expected number, received string" },
    ],
  });
  assertEquals(calls, 0);
});

Deno.test("zod: the function receives the validated (transformed) value", async () => {
  const { first } = serve(
    QUERY,
    defineQuery(
      { arguments: z.object({ class: z.string(), limit: z.number().default(5) }) },
      (args) => ({ class: args.class.toUpperCase(), limit: args.limit }),
    ),
  );
  const result = completedResult(await first(invokeFor(QUERY)));
  assertEquals(result.outputs, { class: "CUBE", limit: 5 });
});

Deno.test("an asynchronous Standard Schema is awaited before the function runs", async () => {
  const refine = z.object({ target: z.string() }).refine(async (v) => {
    await Promise.resolve();
    return v.target !== "forbidden";
  }, "target is forbidden");
  const { first } = serve(
    ACTION,
    defineAction({ arguments: refine }, (args) => ({ t: args.target })),
  );
  acceptedOutcome(await first(invokeFor(ACTION)));
  const error = rejectedError(
    await first(invokeFor(ACTION, { invocationId: "i-2", arguments: { target: "forbidden" } })),
  );
  assertEquals(error.details, { issues: [{ path: [], message: "target is forbidden" }] });
  assertEquals(error.message, "arguments are invalid (1 issue): target is forbidden");
});

Deno.test("a validator that throws rejects with FORGE_ENDPOINT_INTERNAL and is logged with the key", async () => {
  const cause = new Error("schema bug");
  const broken: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: () => {
        throw cause;
      },
    },
  };
  const { first, records } = serve(QUERY, defineQuery({ arguments: broken }, () => ({})));
  const error = rejectedError(await first(invokeFor(QUERY)));
  assertEquals([error.code, error.message], [
    "FORGE_ENDPOINT_INTERNAL",
    "the argument validator failed",
  ]);
  assertEquals(records.map((r) => [r.event, r.invocationId, r.error]), [
    ["arguments.validator_failed", "invocation-1", cause],
  ]);
});

Deno.test("issue paths in object form and symbol keys become JSON paths", async () => {
  const schema: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: () => ({
        issues: [{ message: "bad", path: [{ key: "a" }, 0, Symbol.for("s")] }],
      }),
    },
  };
  const { first } = serve(QUERY, defineQuery({ arguments: schema }, () => ({})));
  const error = rejectedError(await first(invokeFor(QUERY)));
  assertEquals(error.details, { issues: [{ path: ["a", 0, "Symbol(s)"], message: "bad" }] });
});

Deno.test("at most 100 issues are listed; the message gives the total", async () => {
  const schema: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: () => ({
        issues: Array.from({ length: 250 }, (_, i) => ({ message: `m${i}`, path: [i] })),
      }),
    },
  };
  const { first } = serve(QUERY, defineQuery({ arguments: schema }, () => ({})));
  const error = rejectedError(await first(invokeFor(QUERY)));
  assertEquals((error.details.issues as unknown[]).length, 100);
  assertEquals(error.message, "arguments are invalid (250 issues): 0: m0");
});

Deno.test("a raw JSON Schema is accepted as the arguments option", async () => {
  const { first } = serve(
    QUERY,
    defineQuery({
      arguments: {
        type: "object",
        properties: { class: { enum: ["cube", "sphere"] } },
        required: ["class"],
        additionalProperties: false,
      },
    }, (args) => ({ got: args.class })),
  );
  assertEquals(completedResult(await first(invokeFor(QUERY))).outputs, { got: "cube" });
  const error = rejectedError(
    await first(invokeFor(QUERY, { arguments: { class: "cone", extra: 1 } })),
  );
  assertEquals(error.details, {
    issues: [
      { path: ["class"], message: 'must be one of ["cube","sphere"]' },
      { path: ["extra"], message: "no value is allowed here" },
    ],
  });
});

Deno.test("jsonSchema validates type, properties, required, items, enum, const, bounds", () => {
  const schema = jsonSchema({
    type: "object",
    properties: {
      n: { type: "integer", minimum: 1, maximum: 3 },
      xs: { type: "array", items: { type: ["number", "null"] } },
      mode: { const: "fast" },
      nested: { type: "object", additionalProperties: { type: "boolean" } },
    },
    required: ["n", "mode"],
  });
  const validate = (value: unknown) => schema["~standard"].validate(value);
  assertEquals(validate({ n: 2, mode: "fast", xs: [1.5, null], nested: { a: true } }), {
    value: { n: 2, mode: "fast", xs: [1.5, null], nested: { a: true } },
  });
  assertEquals(validate({ n: 1.5, xs: [1, "x"], nested: { a: 1 } }), {
    issues: [
      { message: "missing required property 'mode'", path: ["mode"] },
      { message: "must be of type integer", path: ["n"] },
      { message: "must be of type number or null", path: ["xs", 1] },
      { message: "must be of type boolean", path: ["nested", "a"] },
    ],
  });
  assertEquals(validate({ n: 4, mode: "slow" }), {
    issues: [
      { message: "must be <= 3", path: ["n"] },
      { message: 'must equal "fast"', path: ["mode"] },
    ],
  });
  assertEquals(validate([]), { issues: [{ message: "must be of type object", path: [] }] });
  assertEquals(schema.jsonSchema.required, ["n", "mode"]);
  assertEquals(Object.isFrozen(schema.jsonSchema.properties), true);
});

Deno.test("jsonSchema refuses keywords it cannot check, and malformed values, when built", () => {
  const pattern = assertThrows(
    () => jsonSchema({ type: "string", pattern: "^a" } as never),
    TypeError,
  );
  assertEquals(
    pattern.message,
    `Cannot build a JSON Schema validator as schema.pattern is not a supported keyword: current value is "^a"`,
  );
  const nested = assertThrows(
    () => jsonSchema({ properties: { a: { minimum: "1" as unknown as number } } }),
    TypeError,
  );
  assertEquals(
    nested.message,
    `Cannot build a JSON Schema validator as schema.properties.a.minimum must be a finite number: current value is "1"`,
  );
  assertInstanceOf(assertThrows(() => jsonSchema({ type: "text" as never })), TypeError);
  assertInstanceOf(assertThrows(() => jsonSchema({ required: [1] as never })), TypeError);
});

Deno.test("a definition's arguments option must be a schema", () => {
  const error = assertThrows(
    () => defineQuery({ arguments: "object" as never }, () => ({})),
    TypeError,
  );
  assertEquals(
    error.message,
    `Cannot define a query as 'arguments' must be a Standard Schema or a JSON Schema: current value is "object"`,
  );
});

Deno.test("a validator answering a malformed result, or unrepresentable issues, never crashes the dispatch", async () => {
  const shapes: unknown[] = [undefined, 42, { issues: "bad" }];
  for (const shape of shapes) {
    const schema: StandardSchemaV1 = {
      "~standard": { version: 1, vendor: "test", validate: () => shape as never },
    };
    const { first, records } = serve(QUERY, defineQuery({ arguments: schema }, () => ({})));
    const error = rejectedError(await first(invokeFor(QUERY)));
    assertEquals(error.code, "FORGE_ENDPOINT_INTERNAL");
    assertEquals(records.map((r) => r.event), ["arguments.validator_failed"]);
  }
  const lone: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: () => ({ issues: [{ message: "bad \ud800", path: ["x"] }] }),
    },
  };
  const { first } = serve(ACTION, defineAction({ arguments: lone }, () => ({})));
  const error = rejectedError(await first(invokeFor(ACTION)));
  assertEquals([error.code, error.message], [
    "FORGE_ENDPOINT_INVALID_ARGUMENTS",
    "arguments are invalid (1 issue)",
  ]);
});

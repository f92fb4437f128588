// What a definition exposes at run time beyond the Wire descriptor: its description and the
// JSON Schemas of its arguments and outputs (`jsonSchema()`, a plain JSON Schema, the Standard
// JSON Schema extension), and `defineEndpoint`'s `definitions` record.
import { assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { z } from "zod";
import * as z4 from "zod/v4";
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  defineSession,
  jsonSchema,
  type StandardSchemaV1,
} from "../../mod.ts";

/** A Standard Schema with the Standard JSON Schema extension; `calls` records each conversion. */
function withJsonSchema(
  convert: (options: { target: string }) => unknown,
  calls: unknown[],
): StandardSchemaV1 {
  return {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: (value: unknown) => ({ value }),
      jsonSchema: {
        input: (options: { target: string }) => {
          calls.push(["input", options]);
          return convert(options);
        },
        output: (options: { target: string }) => {
          calls.push(["output", options]);
          return { type: "object", title: "output side" };
        },
      },
    } as StandardSchemaV1["~standard"],
  };
}

Deno.test("definition: description and JSON Schemas from jsonSchema() and a plain JSON Schema", () => {
  const given = { type: "object" as const, properties: { x: { type: "number" as const } } };
  const detect = defineQuery(
    { description: "Finds things.", arguments: jsonSchema(given), outputs: { required: ["n"] } },
    () => ({ n: 1 }),
  );
  given.properties.x.type = "string" as "number";
  assertEquals(detect.semantics, "query");
  assertEquals(detect.description, "Finds things.");
  assertEquals(detect.argumentsJsonSchema, {
    type: "object",
    properties: { x: { type: "number" } },
  });
  assertEquals(detect.outputsJsonSchema, { required: ["n"] });
  assertEquals(Object.isFrozen(detect.argumentsJsonSchema), true);
  assertEquals(Object.isFrozen(detect.outputsJsonSchema?.required), true);
  // The descriptor is unchanged: the Wire has no place for a description or schemas.
  assertEquals(
    Object.keys(detect.operationDescriptor("detect")).includes("description"),
    false,
  );
});

Deno.test("definition: without options, nothing is known", () => {
  for (
    const definition of [defineQuery(() => {}), defineAction(() => {}), defineSession(() => {})]
  ) {
    assertEquals(
      [definition.description, definition.argumentsJsonSchema, definition.outputsJsonSchema],
      [undefined, undefined, undefined],
    );
  }
});

Deno.test("definition: a Standard Schema's JSON Schema extension gives its input side, draft 2020-12", () => {
  const calls: unknown[] = [];
  const schema = withJsonSchema(() => ({ type: "object", required: ["target"] }), calls);
  const move = defineAction({ arguments: schema, outputs: schema }, () => ({}));
  assertEquals(move.argumentsJsonSchema, { type: "object", required: ["target"] });
  assertEquals(move.outputsJsonSchema, { type: "object", required: ["target"] });
  assertEquals(calls, [
    ["input", { target: "draft-2020-12" }],
    ["input", { target: "draft-2020-12" }],
  ]);
});

Deno.test("definition: a converter that throws or returns no JSON object leaves the schema undefined", () => {
  const throwing = withJsonSchema(() => {
    throw new Error("unsupported");
  }, []);
  const notJson = withJsonSchema(() => ({ type: "object", bad: () => 1 }), []);
  const notObject = withJsonSchema(() => "object", []);
  for (const schema of [throwing, notJson, notObject]) {
    const follow = defineSession({ arguments: schema, outputs: schema }, () => ({}));
    assertEquals([follow.argumentsJsonSchema, follow.outputsJsonSchema], [undefined, undefined]);
  }
});

Deno.test("definition: zod 3.25 schemas (v3 and v4 mode) offer no JSON Schema: undefined", () => {
  const v3 = defineQuery({ arguments: z.object({ x: z.string() }) }, () => ({}));
  const v4 = defineQuery({ arguments: z4.object({ x: z4.string() }) }, () => ({}));
  assertEquals([v3.argumentsJsonSchema, v4.argumentsJsonSchema], [undefined, undefined]);
});

Deno.test("definition: a description that is not a non-blank string is refused", () => {
  assertThrows(
    () => defineQuery({ description: 3 as unknown as string }, () => ({})),
    TypeError,
    "Cannot define a query as 'description' must be a non-blank string: current value is 3",
  );
  assertThrows(
    () => defineAction({ description: " " }, () => ({})),
    TypeError,
    `Cannot define an action as 'description' must be a non-blank string: current value is " "`,
  );
});

Deno.test("defineEndpoint: definitions is the record given, frozen, in descriptor order", () => {
  const pose = defineQuery({ description: "The pose." }, () => ({}));
  const move = defineAction(() => ({}));
  const operations = { pose, move };
  const endpoint = defineEndpoint({ endpointId: "arm", operations });
  assertEquals(Object.keys(endpoint.definitions), ["pose", "move"]);
  assertStrictEquals(endpoint.definitions.pose, pose);
  assertStrictEquals(endpoint.definitions.move, move);
  assertEquals(Object.isFrozen(endpoint.definitions), true);
  delete (operations as Partial<typeof operations>).pose;
  assertEquals(Object.keys(endpoint.definitions), ["pose", "move"]);
  assertEquals(endpoint.definitions.pose.description, "The pose.");
});

// The typed client of `ToolEndpointClient.for`: type-level checks (proven by `deno check`, every
// `@ts-expect-error` line must be an error) and a run through the in-process transport.
import { assertEquals, assertInstanceOf, assertRejects, assertThrows } from "@std/assert";
import { z } from "zod";
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  defineSession,
  InProcessToolClientTransport,
  jsonSchema,
  type StandardSchemaV1,
  ToolClientError,
  ToolEndpointClient,
  type ToolLogRecord,
} from "../../mod.ts";

function arm() {
  return defineEndpoint({
    endpointId: "robot.arm",
    logger: () => {},
    operations: {
      position: defineQuery(
        {
          arguments: jsonSchema<{ joint: number }>({
            type: "object",
            properties: { joint: { type: "integer" } },
            required: ["joint"],
          }),
        },
        ({ joint }) => ({ angle: joint * 10, label: `joint ${joint}` }),
      ),
      home: defineQuery(() => ({ at: "home" })),
      move: defineAction(
        { arguments: z.object({ target: z.string(), speed: z.number().default(1) }) },
        async ({ target, speed }, { progress }) => {
          await progress({ fraction: 1 });
          return { reached: target, speed };
        },
      ),
      follow: defineSession(async (_args, { signal }) => {
        await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      }),
    },
  });
}

function clientOf(definition: ReturnType<typeof arm>) {
  const handler = definition.createHandler({ endpointInstanceId: "arm-1" });
  const client = ToolEndpointClient.for(definition, {
    transport: new InProcessToolClientTransport(handler),
    logger: () => {},
  });
  return { handler, client };
}

Deno.test("typed client: names, arguments and outputs are checked at compile time", async () => {
  const definition = arm();
  const { handler, client } = clientOf(definition);
  // Type-only: never called, the checks are deno check's.
  const compileOnly = async () => {
    // @ts-expect-error 'elbow' is not an operation of the endpoint
    await client.query("elbow", { joint: 1 });
    // @ts-expect-error 'move' is an Action: query() takes Query names only
    await client.query("move", { target: "a" });
    // @ts-expect-error 'position' is a Query: invoke() takes Action and Session names only
    await client.invoke("position", { joint: 1 });
    // @ts-expect-error joint is a number
    await client.query("position", { joint: "one" });
    // @ts-expect-error joint is required
    await client.query("position", {});
    // @ts-expect-error target is required
    await client.invoke("move", { speed: 2 });
    const result = await client.query("position", { joint: 1 });
    if (result.status === "succeeded") {
      const angle: number = result.outputs.angle;
      // @ts-expect-error label is a string
      const wrong: number = result.outputs.label;
      return [angle, wrong];
    }
    const moved = await (await client.invoke("move", { target: "a" })).result();
    if (moved.status === "succeeded") {
      const reached: string = moved.outputs.reached;
      // @ts-expect-error speed is a number
      const speed: string = moved.outputs.speed;
      return [reached, speed];
    }
    // Arguments may be left out where any object fits.
    const home = await client.query("home");
    if (home.status === "succeeded") {
      // @ts-expect-error at is a string
      const at: number = home.outputs.at;
      return [at];
    }
    // An output is typed only once the result is known to have succeeded.
    // @ts-expect-error angle may be any JSON value before narrowing
    const early: number = result.outputs.angle;
    await client.invoke("follow");
    return [early];
  };
  assertEquals(typeof compileOnly, "function");
  // The untyped client keeps its signatures: any name, any object.
  const untyped: ToolEndpointClient = client as unknown as ToolEndpointClient;
  assertEquals(typeof untyped.query, "function");
  await client.close();
  await handler.close();
});

Deno.test("typed client: a Query and an Action run through the in-process transport", async () => {
  const definition = arm();
  const { handler, client } = clientOf(definition);
  assertInstanceOf(client, ToolEndpointClient);
  assertEquals(client.endpointId, "robot.arm");
  const result = await client.query("position", { joint: 3 });
  assertEquals([result.status, result.outputs], ["succeeded", { angle: 30, label: "joint 3" }]);
  const invocation = await client.invoke("move", { target: "shelf" });
  assertEquals(invocation.semantics, "action");
  const moved = await invocation.result();
  assertEquals([moved.status, moved.outputs], ["succeeded", { reached: "shelf", speed: 1 }]);
  // The descriptor came from the definition: a wrong name or semantics is refused before sending.
  const loose = client as unknown as ToolEndpointClient;
  const unknown = await assertRejects(() => loose.query("elbow"), ToolClientError);
  assertEquals([unknown.code, unknown.outcome], ["FORGE_CLIENT_UNKNOWN_OPERATION", "not_sent"]);
  const wrong = await assertRejects(() => loose.query("move", { target: "a" }), ToolClientError);
  assertEquals([wrong.code, wrong.outcome], ["FORGE_CLIENT_WRONG_SEMANTICS", "not_sent"]);
  await client.close();
  await handler.close();
  await definition.idle();
});

Deno.test("typed client: for() refuses what is not an endpoint definition, showing it", () => {
  const error = assertThrows(
    // @ts-expect-error not a definition
    () => ToolEndpointClient.for({}, { transport: {} }),
    TypeError,
  );
  assertEquals(
    error.message.startsWith("Cannot create a ToolEndpointClient as 'definition' must be"),
    true,
  );
});

Deno.test("outputs schema: outputs it rejects fail with FORGE_ENDPOINT_INVALID_OUTPUTS, issues logged", async () => {
  const records: ToolLogRecord[] = [];
  const definition = defineEndpoint({
    endpointId: "checked",
    logger: (record) => records.push(record),
    operations: {
      good: defineQuery(
        { outputs: jsonSchema({ type: "object", required: ["angle"] }) },
        () => ({ angle: 1 }),
      ),
      bad: defineQuery(
        {
          outputs: jsonSchema({
            type: "object",
            properties: { angle: { type: "number" } },
            required: ["angle"],
          }),
        },
        () => ({ angle: "one" }),
      ),
      move: defineAction(
        { outputs: z.object({ reached: z.boolean() }) },
        () => ({ reached: "yes" }),
      ),
      moved: defineAction({ outputs: z.object({ reached: z.boolean() }) }, () => ({
        reached: true,
      })),
    },
  });
  const handler = definition.createHandler({ endpointInstanceId: "checked-1" });
  const client = ToolEndpointClient.for(definition, {
    transport: new InProcessToolClientTransport(handler),
    logger: () => {},
  });
  const good = await client.query("good");
  assertEquals([good.status, good.outputs], ["succeeded", { angle: 1 }]);
  const bad = await client.query("bad");
  assertEquals([bad.status, bad.outputs, bad.error?.code, bad.error?.retryable], [
    "failed",
    {},
    "FORGE_ENDPOINT_INVALID_OUTPUTS",
    false,
  ]);
  assertEquals(
    bad.error?.message,
    "the provider function returned outputs its outputs schema rejects (1 issue)",
  );
  const move = await (await client.invoke("move")).result();
  assertEquals([move.status, move.error?.code], ["failed", "FORGE_ENDPOINT_INVALID_OUTPUTS"]);
  const moved = await (await client.invoke("moved")).result();
  assertEquals([moved.status, moved.outputs], ["succeeded", { reached: true }]);
  const invalid = records.filter((record) => record.event === "provider.invalid_outputs");
  assertEquals(invalid.map((record) => [record.level, record.operation]), [
    ["error", "bad"],
    ["error", "move"],
  ]);
  assertEquals(invalid[0].message.startsWith("FORGE_ENDPOINT_INVALID_OUTPUTS: "), true);
  assertEquals(invalid[0].message.includes("angle: "), true);
  await client.close();
  await handler.close();
  await definition.idle();
});

Deno.test("outputs schema: a throwing validator fails the result with FORGE_ENDPOINT_INTERNAL", async () => {
  const records: ToolLogRecord[] = [];
  const broken: StandardSchemaV1 = {
    "~standard": {
      version: 1,
      vendor: "test",
      validate: () => {
        throw new Error("validator bug");
      },
    },
  };
  const definition = defineEndpoint({
    endpointId: "broken",
    logger: (record) => records.push(record),
    operations: { read: defineQuery({ outputs: broken }, () => ({ x: 1 })) },
  });
  const handler = definition.createHandler({ endpointInstanceId: "broken-1" });
  const client = ToolEndpointClient.for(definition, {
    transport: new InProcessToolClientTransport(handler),
  });
  const result = await client.query("read");
  assertEquals([result.status, result.error?.code, result.error?.message], [
    "failed",
    "FORGE_ENDPOINT_INTERNAL",
    "the outputs validator failed",
  ]);
  assertEquals(records.map((record) => record.event), ["outputs.validator_failed"]);
  assertThrows(
    () => defineQuery({ outputs: 3 as unknown as StandardSchemaV1 }, () => ({})),
    TypeError,
    "Cannot define a query as 'outputs' must be a Standard Schema or a JSON Schema",
  );
  await client.close();
  await handler.close();
});

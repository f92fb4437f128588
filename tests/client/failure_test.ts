// The client's failure model (README "Callers", one test per row) against the real
// ToolEndpointHandler in process.
import { assertEquals, assertRejects } from "@std/assert";
import {
  defineEndpoint,
  defineQuery,
  InProcessToolClientTransport,
  jsonSchema,
  ToolCallError,
  ToolClientError,
  ToolEndpointClient,
  ToolEndpointError,
  ToolEndpointHandler,
  ToolError,
  ToolResult,
} from "../../mod.ts";
import { armEndpoint, ENDPOINT, INSTANCE } from "./_fixtures.ts";
import { silentLogger } from "../_helpers.ts";

// --- The failure model (README "Callers", one test per row) ---------------------------------------

/**
 * The same endpoint `robot.arm` with a Query `detect`, written as a define* definition or as an
 * SPI provider, each failing the same way; a client with or without the descriptor.
 */
function failing(
  how: "define" | "spi",
  fail: () => unknown,
  { descriptor = true }: { descriptor?: boolean } = {},
) {
  const defined = defineEndpoint({
    endpointId: ENDPOINT,
    operations: { detect: defineQuery(() => fail() as object) },
    logger: silentLogger,
  });
  const handler = how === "define"
    ? defined.createHandler({ endpointInstanceId: INSTANCE })
    : new ToolEndpointHandler(defined.descriptor, {
      endpointInstanceId: INSTANCE,
      logger: silentLogger,
      operations: { detect: { query: () => fail() as ToolResult } },
    });
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(handler),
    endpointId: ENDPOINT,
    ...(descriptor ? { descriptor: defined.descriptor } : {}),
  });
  return {
    client,
    close: async () => {
      await client.close();
      await handler.close();
    },
  };
}

const CAMERA_BUSY = new ToolError({
  code: "VISION_CAMERA_BUSY",
  message: "camera busy",
  retryable: true,
});

function summaryOf(error: ToolClientError) {
  return {
    family: error instanceof ToolClientError,
    code: error.code,
    retryable: error.retryable,
    outcome: error.outcome,
  };
}

Deno.test("failure model: a ToolEndpointError from a provider rejects the same, define* or SPI", async () => {
  // Regression: defineQuery resolved `failed` while the SPI provider's throw rejected.
  const seen: unknown[] = [];
  for (const how of ["define", "spi"] as const) {
    const { client, close } = failing(how, () => {
      throw new ToolEndpointError(CAMERA_BUSY);
    });
    const error = await assertRejects(() => client.query("detect", {}), ToolCallError);
    seen.push([how, error.kind, error.message, summaryOf(error)]);
    await close();
  }
  const expected = {
    family: true,
    code: "VISION_CAMERA_BUSY",
    retryable: true,
    outcome: "not_admitted",
  };
  assertEquals(seen, [
    ["define", "rejected", "VISION_CAMERA_BUSY: camera busy", expected],
    ["spi", "rejected", "VISION_CAMERA_BUSY: camera busy", expected],
  ]);
});

Deno.test("failure model: an established failed or unknown outcome resolves, never rejects", async () => {
  const { client, close } = failing("define", () => {
    throw new Error("the lens is cracked");
  });
  const result = await client.query("detect", {});
  assertEquals([result.status, result.error?.code], ["failed", "FORGE_ENDPOINT_INTERNAL"]);
  await close();
  const spi = failing("spi", () =>
    new ToolResult({
      status: "unknown",
      error: new ToolError({ code: "FORGE_ENDPOINT_OUTCOME_UNKNOWN", message: "lost" }),
    }));
  assertEquals((await spi.client.query("detect", {})).status, "unknown");
  await spi.close();
});

Deno.test("failure model: invalid arguments reject with FORGE_ENDPOINT_INVALID_ARGUMENTS, not admitted", async () => {
  const endpoint = defineEndpoint({
    endpointId: ENDPOINT,
    operations: {
      detect: defineQuery(
        { arguments: jsonSchema({ type: "object", required: ["class"] }) },
        () => ({}),
      ),
    },
    logger: silentLogger,
  });
  const handler = endpoint.createHandler({ endpointInstanceId: INSTANCE });
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(handler),
    endpointId: ENDPOINT,
    descriptor: endpoint.descriptor,
  });
  const error = await assertRejects(() => client.query("detect", {}), ToolCallError);
  assertEquals(summaryOf(error), {
    family: true,
    code: "FORGE_ENDPOINT_INVALID_ARGUMENTS",
    retryable: false,
    outcome: "not_admitted",
  });
  await client.close();
  await handler.close();
});

Deno.test("failure model: an operation the descriptor does not declare fails before sending", async () => {
  const { client, close } = failing("spi", () => new ToolResult({ status: "succeeded" }));
  const error = await assertRejects(() => client.query("detcet", {}), ToolClientError);
  assertEquals(summaryOf(error), {
    family: true,
    code: "FORGE_CLIENT_UNKNOWN_OPERATION",
    retryable: false,
    outcome: "not_sent",
  });
  assertEquals(
    error.message,
    "FORGE_CLIENT_UNKNOWN_OPERATION: operation 'detcet' is not in the descriptor of " +
      "'robot.arm' (it declares 'detect')",
  );
  assertEquals(client.stats.sent, 0);
  await close();
});

Deno.test("failure model: without a descriptor, the in-process handler's refusal is in the message", async () => {
  // Regression: FORGE_CLIENT_SEND_FAILED "the invoke request could not be sent", the reason
  // only in `cause`.
  const { client, close } = failing("spi", () => new ToolResult({ status: "succeeded" }), {
    descriptor: false,
  });
  const error = await assertRejects(() => client.query("detcet", {}), ToolClientError);
  assertEquals(summaryOf(error), {
    family: true,
    code: "FORGE_CLIENT_UNANSWERED",
    retryable: false,
    outcome: "not_admitted",
  });
  assertEquals(
    error.message,
    "FORGE_CLIENT_UNANSWERED: the endpoint handler refused the tool.invoke.request without " +
      "answering: FORGE_PROTOCOL_UNKNOWN_OPERATION: endpoint does not declare operation " +
      "'detcet' (at operation)",
  );
  await close();
  // A typo'd endpoint id, the same way.
  const arm = armEndpoint();
  const typo = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(arm.handler),
    endpointId: "robot.armm",
  });
  const route = await assertRejects(() => typo.query("echo", {}), ToolClientError);
  assertEquals(
    route.message,
    "FORGE_CLIENT_UNANSWERED: the endpoint handler refused the tool.invoke.request without " +
      "answering: FORGE_PROTOCOL_ROUTE_MISMATCH: request targets endpoint 'robot.armm', " +
      "expected 'robot.arm' (at endpoint_id)",
  );
  assertEquals(route.outcome, "not_admitted");
  await typo.close();
  await arm.handler.close();
});

Deno.test("failure model: an SPI provider that returns no ToolResult is unanswered, outcome unknown, reason in the message", async () => {
  const { client, close } = failing("spi", () => ({ boxes: [] }));
  const error = await assertRejects(() => client.query("detect", {}), ToolClientError);
  assertEquals(summaryOf(error), {
    family: true,
    code: "FORGE_CLIENT_UNANSWERED",
    retryable: false,
    outcome: "unknown",
  });
  assertEquals(
    error.message,
    "FORGE_CLIENT_UNANSWERED: the endpoint handler failed the tool.invoke.request without " +
      "answering: TypeError: QueryToolEndpoint.query() must return a ToolResult: current " +
      "value is an Object",
  );
  await close();
  // The define* provider wraps what its function returns: a non-object is an answered failure.
  const defined = failing("define", () => 42);
  const result = await defined.client.query("detect", {});
  assertEquals([result.status, result.error?.code], ["failed", "FORGE_ENDPOINT_INTERNAL"]);
  await defined.close();
});

Deno.test("failure model: a bare ToolEndpointError has code and retryable too", () => {
  const error = new ToolEndpointError(CAMERA_BUSY);
  assertEquals([error.code, error.retryable], ["VISION_CAMERA_BUSY", true]);
});

// The Gateway Tool API under bad input: sequences of requests with any method, paths built from
// valid and broken segments (stray `%`, escapes that are not UTF-8, encoded surrogates), bodies
// that are not JSON, not objects, or carry values no Forge message can (integers past 2^53 - 1,
// lone surrogates, deep nesting, non-finite numbers) in `arguments`, `caller_id`, `timeout_ms`
// and `reason`, and odd `Content-Type` and `Last-Event-ID` headers; against the demo endpoint on
// a loopback provider, so valid invocations run beside them.
//
// Invariant: the service answers every request as the caller's doing or as a success, never as
// its own failure: no 500 (`FORGE_TOOL_GATEWAY_FAILED`) and no `gateway.http_failed` record; every
// JSON answer has a boolean `ok` that matches its status, and an error answer a string code; and
// once the service closed, it holds no invocation and the gateway waits for no answer.
import fc from "fast-check";
import type { ToolLogRecord } from "../../mod.ts";
import { ToolGateway, toolGatewayHttpHandler } from "../../gateway.ts";
import { DemoProvider, ENDPOINT } from "../gateway/http_helpers.ts";
import { type AnyTarget, describeError, type FuzzTarget, invariant, tick } from "./_common.ts";

/** Stands for the id of the last invocation the scenario started (or an unknown one). */
const LAST_ID = "{last}";
/** Replaced in a body by an integer token past 2^53 - 1 (JSON.stringify cannot write one). */
const BIG = "__big_integer__";

/** One request of a scenario. */
export interface ApiRequest {
  readonly method: string;
  /** Segments after the first `/`; `{last}` is replaced by the last invocation's id. */
  readonly segments: readonly string[];
  /** The body's text, or `null` for none. */
  readonly body: string | null;
  readonly contentType: string | null;
  readonly lastEventId: string | null;
}

/** Strings the rules care about: blanks (Python's and JavaScript's), surrogates, controls. */
const trickyString = fc.oneof(
  fc.constantFrom("", " ", "\t", "\u001c", "\ufeff", "\u00a0", "\ud800", "a\udc00", "ok", "é"),
  fc.string({ maxLength: 8 }),
);

const trickyValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(BIG, 1e308, -0, 0.5, 2 ** 53, 9007199254740991, true, null),
  fc.integer(),
  trickyString,
  fc.constant(JSON.parse("[".repeat(70) + "]".repeat(70))),
);

const argumentsArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.dictionary(
    fc.oneof(trickyString, fc.constantFrom("steps", "classes", "target")),
    trickyValue,
    {
      maxKeys: 3,
    },
  ),
  fc.constantFrom([], "x", 3, null, { classes: ["cube"] }, { steps: 2 }),
);

/** A body: raw text, or a JSON object of the known fields (and sometimes another). */
const bodyArb: fc.Arbitrary<string | null> = fc.oneof(
  fc.constant(null),
  fc.constantFrom("", "{", "[]", "null", '"x"', "\ufeff{}", "{} {}", '{"arguments":{}}'),
  fc.record({
    arguments: argumentsArb,
    caller_id: fc.oneof(trickyString, fc.constant(5)),
    timeout_ms: fc.oneof(fc.integer({ min: -2, max: 400_000 }), fc.constantFrom("5", 1.5, 1e300)),
    reason: fc.oneof(trickyString, fc.constant(7)),
    extra: fc.constant(1),
  }, { requiredKeys: [] }).map((body) =>
    JSON.stringify(body).replaceAll(`"${BIG}"`, "1" + "0".repeat(30))
  ),
);

const segmentArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    ENDPOINT,
    "detect:invoke",
    "move:invoke",
    "policy:invoke",
    "nope:invoke",
    ":invoke",
    "%zz",
    "%",
    "%E0%A4",
    "%ED%A0%80",
    "%F0%9F%98%80",
    "",
  ),
  trickyString.filter((s) => s.isWellFormed()).map(encodeURIComponent),
);

const pathArb: fc.Arbitrary<readonly string[]> = fc.oneof(
  fc.constant(["tools"]),
  fc.tuple(fc.constant("tools"), segmentArb),
  fc.tuple(fc.constant("tools"), fc.oneof(fc.constant(ENDPOINT), segmentArb), segmentArb),
  fc.constant(["invocations"]),
  fc.tuple(fc.constant("invocations"), fc.oneof(fc.constant(LAST_ID), segmentArb)),
  fc.tuple(
    fc.constant("invocations"),
    fc.oneof(fc.constant(LAST_ID), segmentArb),
    fc.constantFrom("result", "cancel", "stop", "events", ""),
  ),
  fc.tuple(segmentArb),
);

/** A path to anything, an invoke of one of the demo's operations, or a control of the last. */
const anyPathArb: fc.Arbitrary<readonly string[]> = fc.oneof(
  pathArb,
  fc.constantFrom("detect", "move", "policy").map((op) => ["tools", ENDPOINT, `${op}:invoke`]),
  fc.constantFrom("cancel", "stop").map((command) => ["invocations", LAST_ID, command]),
);

const requestArb: fc.Arbitrary<ApiRequest> = fc.record({
  method: fc.constantFrom("GET", "POST", "POST", "POST", "PUT", "DELETE", "HEAD"),
  segments: anyPathArb,
  body: bodyArb,
  contentType: fc.constantFrom(null, "application/json", "text/plain", "application/json; x=1"),
  lastEventId: fc.constantFrom(null, "0", "-1", "abc", "99999999999999999999", " 2", "2.5"),
});

/** One to six requests; the first often starts an invocation the others can address. */
export function apiScenarioArb(): fc.Arbitrary<readonly ApiRequest[]> {
  const start = fc.record({
    method: fc.constant("POST"),
    segments: fc.constantFrom(
      ["tools", ENDPOINT, "move:invoke"],
      ["tools", ENDPOINT, "policy:invoke"],
      ["tools", ENDPOINT, "detect:invoke"],
    ),
    body: fc.constantFrom("{}", '{"arguments":{"steps":3}}'),
    contentType: fc.constant("application/json"),
    lastEventId: fc.constant(null),
  });
  return fc.tuple(
    fc.option(start, { nil: undefined }),
    fc.array(requestArb, { minLength: 1, maxLength: 5 }),
  )
    .map(([first, rest]) => (first === undefined ? rest : [first, ...rest]));
}

/** Runs one scenario against a fresh service and checks the invariant. */
async function runScenario(
  scenario: readonly ApiRequest[],
  counters: Record<string, number>,
): Promise<void> {
  const logs: ToolLogRecord[] = [];
  const logger = (record: ToolLogRecord) => void logs.push(record);
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger });
  const provider = new DemoProvider(gateway, 1, logger);
  gateway.attachRoute("demo", (envelope) => provider.deliver(envelope));
  for (let turn = 0; turn < 200 && gateway.registry.lookup(ENDPOINT) === undefined; turn++) {
    await tick();
  }
  const handler = toolGatewayHttpHandler(gateway, {
    logger,
    maxBodyBytes: 4096,
    bodyTimeoutMs: 1000,
    keepAliveMs: 1000,
  });
  let last = "unknown-invocation";
  try {
    for (const request of scenario) {
      const path = "/" + request.segments.map((s) => (s === LAST_ID ? last : s)).join("/");
      const headers = new Headers();
      if (request.contentType !== null) headers.set("content-type", request.contentType);
      if (request.lastEventId !== null) headers.set("last-event-id", request.lastEventId);
      const hasBody = request.body !== null && request.method !== "GET" &&
        request.method !== "HEAD";
      const response = await handler(
        new Request(`http://gateway.test${path}`, {
          method: request.method,
          headers,
          body: hasBody ? request.body : undefined,
        }),
      );
      const what = `${request.method} ${path} ${hasBody ? request.body : "(no body)"}`;
      counters[`status ${response.status}`] = (counters[`status ${response.status}`] ?? 0) + 1;
      invariant(response.status !== 500, () => `${what} was answered 500`);
      const type = response.headers.get("content-type") ?? "";
      if (!type.includes("application/json")) {
        await response.body?.cancel();
        continue;
      }
      const text = await response.text();
      if (request.method === "HEAD") continue;
      let body: { ok?: unknown; error?: { code?: unknown }; data?: { invocation_id?: unknown } };
      try {
        body = JSON.parse(text);
      } catch (error) {
        throw new Error(`${what}: the JSON answer does not parse: ${describeError(error)}`);
      }
      invariant(typeof body.ok === "boolean", () => `${what}: no boolean ok in ${text}`);
      invariant(
        body.ok === (response.status < 400),
        () => `${what}: ok ${body.ok} with status ${response.status}`,
      );
      if (!body.ok) {
        invariant(typeof body.error?.code === "string", () => `${what}: no error code in ${text}`);
      }
      if (typeof body.data?.invocation_id === "string") {
        last = encodeURIComponent(body.data.invocation_id);
      }
    }
    const failed = logs.filter((record) => record.event === "gateway.http_failed");
    invariant(failed.length === 0, () => `the service failed: ${failed[0].message}`);
  } finally {
    await handler.close();
    await provider.stop();
    await gateway.close();
  }
  invariant(handler.stats.invocations === 0, "the closed service still holds invocations");
  invariant(gateway.pendingExchanges === 0, "the gateway still waits for answers");
}

/** The Gateway Tool API under bad input. */
export const httpApiTarget: FuzzTarget<readonly ApiRequest[]> = {
  name: "http_api",
  arbitrary: apiScenarioArb,
  check: runScenario,
  async: true,
  batchSize: 50,
  timeBoundMs: 5000,
};

/** The targets of this module. */
export const targets: readonly AnyTarget[] = [httpApiTarget];

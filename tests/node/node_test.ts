// The endpoint node lifecycle on a fake monotonic clock (no real sleeps): the registration loop
// (renewal timing, backoff bounds, rejections, correlation, lease expiry and re-registration,
// stop), health snapshots (period, state changes), and the ordered shutdown.
import {
  assert,
  assertEquals,
  assertGreaterOrEqual,
  assertInstanceOf,
  assertLessOrEqual,
  assertMatch,
  assertStrictEquals,
  assertThrows,
} from "@std/assert";
import {
  ToolAccepted,
  ToolControlResponse,
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolError,
  ToolExecutionStatus,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  EndpointRegistryResponse,
  endpointStatusFromEnvelope,
  invokeResponseFromPayload,
  makeEndpointRegistryResponseEnvelope,
  makeInvokeRequestEnvelope,
  makeRegistrationEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import {
  EndpointHealthReporter,
  EndpointNodeLifecycle,
  EndpointRegistration,
  type EndpointRegistrationOptions,
  EndpointRegistry,
  endpointStateOf,
  newEndpointInstanceId,
} from "../../node.ts";
import { context, FakeClock, recordingLogger, silentLogger } from "../_helpers.ts";

/** Lets pending promise continuations run (no timers involved). */
async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

// ---------------------------------------------------------------------------------------------
// Fixtures

/** A default register `request_id`: the operation and a random (v4) UUID. */
const UUID_REQUEST_ID =
  /^register-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const ENDPOINT = "vision.yolo";
const ROUTE = "yolo/management";
const INSTANCE = "instance-1";

function descriptor(...operations: [string, number][]): ToolEndpointDescriptor {
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: ENDPOINT,
    operations: (operations.length === 0 ? [["detect", 1] as [string, number]] : operations).map((
      [name, maxConcurrency],
    ) => new ToolOperationDescriptor({ name, semantics: "query", maxConcurrency })),
  });
}

interface Sent {
  readonly at: number;
  readonly envelope: ToolEnvelope;
}

/** A registration loop whose sends are recorded and answered by `respond` (if it answers). */
function loop(
  clock: FakeClock,
  options: Partial<EndpointRegistrationOptions> = {},
  respond?: (request: ToolEnvelope) => ToolEnvelope | undefined,
) {
  const sent: Sent[] = [];
  const registration: EndpointRegistration = new EndpointRegistration({
    logger: silentLogger,
    descriptor: descriptor(),
    endpointInstanceId: INSTANCE,
    clock,
    random: () => 0.5,
    send: (envelope) => {
      sent.push({ at: clock.now(), envelope });
      const response = respond?.(envelope);
      if (response !== undefined) registration.receive(response);
    },
    ...options,
  });
  return { registration, sent };
}

function accepted(request: ToolEnvelope, revision = 1, leaseTtlMs = 30_000): ToolEnvelope {
  return makeEndpointRegistryResponseEnvelope(
    request.messageType === "endpoint.register"
      ? new EndpointRegistryResponse({
        operation: "register",
        status: "accepted",
        registryRevision: revision,
        leaseTtlMs,
      })
      : new EndpointRegistryResponse({
        operation: "unregister",
        status: "accepted",
        registryRevision: revision,
      }),
    request,
  );
}

function rejected(request: ToolEnvelope, code = "ENDPOINT_DESCRIPTOR_CHANGED"): ToolEnvelope {
  return makeEndpointRegistryResponseEnvelope(
    new EndpointRegistryResponse({
      operation: request.messageType === "endpoint.register" ? "register" : "unregister",
      status: "rejected",
      registryRevision: 4,
      error: new ToolError({ code, message: "rejected for the test" }),
    }),
    request,
  );
}

function times(sent: Sent[], type = "endpoint.register"): number[] {
  return sent.filter((item) => item.envelope.messageType === type).map((item) => item.at);
}

/** A Query that blocks until `release()` is called; counts calls. */
class BlockingQuery {
  calls = 0;
  #waiters: (() => void)[] = [];

  query(): Promise<ToolResult> {
    this.calls += 1;
    return new Promise((resolve) => {
      this.#waiters.push(() => resolve(new ToolResult({ status: "succeeded", outputs: {} })));
    });
  }

  release(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}

function handlerWith(
  operations: Record<string, BlockingQuery>,
  maxima: Record<string, number> = {},
): ToolEndpointHandler {
  return new ToolEndpointHandler(
    descriptor(
      ...Object.keys(operations).map((name) => [name, maxima[name] ?? 1] as [string, number]),
    ),
    { endpointInstanceId: INSTANCE, logger: silentLogger, operations },
  );
}

let invocations = 0;

function invoke(handler: ToolEndpointHandler, operation = "detect"): Promise<ToolEnvelope> {
  const n = ++invocations;
  return handler.handleInvoke(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context(ENDPOINT, operation, { invocationId: `invocation-${n}` }),
      { requestId: `request-${n}`, endpointInstanceId: INSTANCE },
    ),
  );
}

function statusOf(envelope: ToolEnvelope): [string, number] {
  const status = endpointStatusFromEnvelope(envelope);
  return [status.state, status.activeInvocations];
}

// ---------------------------------------------------------------------------------------------
// Registration: announce and renewal

Deno.test("start sends the handler's exact descriptor with this instance; acceptance registers", () => {
  const clock = new FakeClock();
  const states: string[] = [];
  const { registration, sent } = loop(clock, {
    onStateChange: (state, previous) => states.push(`${previous}->${state}`),
  });
  assertStrictEquals(registration.state, "unregistered");
  registration.start();
  assertStrictEquals(registration.state, "registering");
  assertEquals(sent.length, 1);
  const request = sent[0].envelope;
  assertStrictEquals(request.messageType, "endpoint.register");
  assertStrictEquals(request.endpointId, ENDPOINT);
  assertStrictEquals(request.endpointInstanceId, INSTANCE);
  assertMatch(request.requestId!, UUID_REQUEST_ID);
  assertEquals(request.payload, {
    descriptor: {
      protocol_version: TOOL_ENDPOINT_PROTOCOL,
      endpoint_id: ENDPOINT,
      operations: [{
        name: "detect",
        semantics: "query",
        cancellable: false,
        stoppable: false,
        status_supported: false,
        max_concurrency: 1,
      }],
    },
  });
  assert(registration.receive(accepted(request, 7, 20_000)));
  assertStrictEquals(registration.state, "registered");
  assertStrictEquals(registration.registryRevision, 7);
  assertStrictEquals(registration.leaseTtlMs, 20_000);
  assertStrictEquals(registration.lastError, undefined);
  assertEquals(states, ["unregistered->registering", "registering->registered"]);
  registration.start(); // idempotent while running
  assertEquals(sent.length, 1);
});

Deno.test("renewal goes out at lease × fraction after the accepted send, with new request ids", () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock, {}, (request) => accepted(request, 1, 30_000));
  registration.start();
  assertEquals(times(sent), [0]);
  clock.advance(14_999);
  assertEquals(times(sent), [0]);
  clock.advance(1);
  assertEquals(times(sent), [0, 15_000]);
  clock.advance(30_000);
  assertEquals(times(sent), [0, 15_000, 30_000, 45_000]);
  const ids = sent.map((item) => item.envelope.requestId!);
  for (const id of ids) assertMatch(id, UUID_REQUEST_ID);
  assertStrictEquals(new Set(ids).size, 4);
  assertStrictEquals(registration.state, "registered");
  assertStrictEquals(registration.attempts, 4);
});

Deno.test("renewal is anchored at the send time, not the response time", () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock);
  registration.start();
  clock.advance(2000); // the response takes 2 s
  registration.receive(accepted(sent[0].envelope, 1, 10_000));
  clock.advance(2999);
  assertEquals(times(sent), [0]);
  clock.advance(1);
  assertEquals(times(sent), [0, 5000]);
});

Deno.test("renewal jitter stays within fraction × (1 ± jitter) of the lease", () => {
  for (
    const [sample, expected] of [
      [0, 13_500], // 30 000 × 0.5 × 0.9
      [0.25, 14_250],
      [0.5, 15_000],
      [0.75, 15_750],
    ] as const
  ) {
    const clock = new FakeClock();
    const { registration, sent } = loop(clock, { random: () => sample, jitter: 0.1 });
    registration.start();
    registration.receive(accepted(sent[0].envelope));
    clock.advance(expected - 1);
    assertEquals(times(sent).length, 1, `sample ${sample}`);
    clock.advance(1);
    assertEquals(times(sent), [0, expected], `sample ${sample}`);
  }
  // The extreme sample stays below the upper bound and well before the lease ends.
  const clock = new FakeClock();
  const { registration, sent } = loop(clock, { random: () => 0.9999999, jitter: 0.1 });
  registration.start();
  registration.receive(accepted(sent[0].envelope));
  clock.advance(16_500);
  const renewal = times(sent)[1];
  assertGreaterOrEqual(renewal, 16_499);
  assertLessOrEqual(renewal, 16_500);
  // A different fraction.
  const other = new FakeClock();
  const custom = loop(other, { renewFraction: 0.25, jitter: 0 });
  custom.registration.start();
  custom.registration.receive(accepted(custom.sent[0].envelope, 1, 8000));
  other.advance(2000);
  assertEquals(times(custom.sent), [0, 2000]);
});

Deno.test("renewal options are validated", () => {
  const clock = new FakeClock();
  assertThrows(() => loop(clock, { renewFraction: 0 }), RangeError);
  assertThrows(() => loop(clock, { renewFraction: 1 }), RangeError);
  assertThrows(() => loop(clock, { jitter: 1 }), RangeError);
  assertThrows(() => loop(clock, { renewFraction: 0.95, jitter: 0.1 }), RangeError);
  assertThrows(() => loop(clock, { backoff: { initialMs: 100, maxMs: 50 } }), RangeError);
  assertThrows(() => loop(clock, { backoff: { factor: 0.5 } }), RangeError);
  assertThrows(() => loop(clock, { responseTimeoutMs: 0 }), RangeError);
  assertThrows(() => loop(clock, { endpointInstanceId: " " }), TypeError);
  // The message says what failed, names the option and shows the value.
  assertThrows(
    () => loop(clock, { renewFraction: 0 }),
    RangeError,
    "Cannot create an EndpointRegistration as 'renewFraction' must be a finite number in (0, 1): " +
      "current value is 0",
  );
  assertThrows(
    () => loop(clock, { backoff: { initialMs: 100, maxMs: 50 } }),
    RangeError,
    "'backoff.maxMs' must be a finite number in [100, Infinity]: current value is 50",
  );
  assertThrows(
    () => loop(clock, { renewFraction: 0.95, jitter: 0.1 }),
    RangeError,
    "'renewFraction' × (1 + 'jitter') must stay below 1: current values are 0.95 and 0.1",
  );
  assertThrows(
    () =>
      new EndpointHealthReporter({
        logger: silentLogger,
        handler: handlerWith({ detect: new BlockingQuery() }),
        send: () => {},
        periodMs: NaN,
      }),
    RangeError,
    "Cannot create an EndpointHealthReporter as 'periodMs' must be a finite number in " +
      "(0, Infinity): current value is NaN",
  );
});

// ---------------------------------------------------------------------------------------------
// Registration: retries

Deno.test("lost responses are retried with exponential backoff up to the cap", () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock, {
    jitter: 0,
    responseTimeoutMs: 1000,
    backoff: { initialMs: 100, factor: 2, maxMs: 1000 },
  });
  registration.start();
  clock.advance(10_000);
  // Each attempt waits 1000 ms for its response, then 100, 200, 400, 800, 1000, 1000 ms.
  assertEquals(times(sent), [0, 1100, 2300, 3700, 5500, 7500, 9500]);
  assertStrictEquals(registration.state, "retrying");
  assertInstanceOf(registration.lastError, Error);
  assertMatch((registration.lastError as Error).message, /within 1000 ms/);
  assertStrictEquals(registration.consecutiveFailures, 6);
  assertEquals(
    [1, 2, 3, 4, 5, 6, 7].map((n) => registration.backoffDelayMs(n)),
    [100, 200, 400, 800, 1000, 1000, 1000],
  );
});

Deno.test("backoff with jitter stays within [base × (1 − jitter), min(cap, base × (1 + jitter))]", () => {
  for (const sample of [0, 0.5, 0.9999999]) {
    const clock = new FakeClock();
    const { registration, sent } = loop(clock, {
      jitter: 0.5,
      random: () => sample,
      responseTimeoutMs: 1000,
      backoff: { initialMs: 200, factor: 3, maxMs: 2000 },
    });
    registration.start();
    clock.advance(30_000);
    const at = times(sent);
    for (let n = 1; n < at.length; n++) {
      const delay = at[n] - at[n - 1] - 1000;
      const base = Math.min(2000, 200 * 3 ** (n - 1));
      assertGreaterOrEqual(delay, base * 0.5 - 1e-6, `sample ${sample} retry ${n}`);
      assertLessOrEqual(delay, Math.min(2000, base * 1.5) + 1e-6, `sample ${sample} retry ${n}`);
    }
    if (sample === 0) assertStrictEquals(at[1] - at[0] - 1000, 100); // initial × (1 − 0.5)
    if (sample > 0.99) assertStrictEquals(at[at.length - 1] - at[at.length - 2] - 1000, 2000); // cap
  }
});

Deno.test("a rejected registration is retried with backoff and an acceptance resets it", () => {
  const clock = new FakeClock();
  let reject = 2;
  const { registration, sent } = loop(
    clock,
    { jitter: 0, backoff: { initialMs: 100, factor: 2, maxMs: 1000 } },
    (request) => (reject-- > 0 ? rejected(request) : accepted(request, 5, 10_000)),
  );
  registration.start();
  assertStrictEquals(registration.state, "retrying");
  assertStrictEquals(registration.registryRevision, 4); // the rejection's revision
  assertInstanceOf(registration.lastError, ToolError);
  assertStrictEquals((registration.lastError as ToolError).code, "ENDPOINT_DESCRIPTOR_CHANGED");
  clock.advance(100);
  assertStrictEquals(registration.state, "retrying");
  clock.advance(200);
  assertStrictEquals(registration.state, "registered");
  assertEquals(times(sent), [0, 100, 300]);
  assertStrictEquals(registration.registryRevision, 5);
  assertStrictEquals(registration.consecutiveFailures, 0);
  // The next failure starts from the initial delay again.
  reject = 1;
  clock.advance(5000); // renewal at 300 + 5000, rejected
  clock.advance(100);
  assertEquals(times(sent), [0, 100, 300, 5300, 5400]);
  assertStrictEquals(registration.state, "registered");
});

Deno.test("a send that throws or rejects counts as a lost attempt", async () => {
  const clock = new FakeClock();
  let mode: "throw" | "reject" | "ok" = "throw";
  const attempts: number[] = [];
  const registration: EndpointRegistration = new EndpointRegistration({
    logger: silentLogger,
    descriptor: descriptor(),
    endpointInstanceId: INSTANCE,
    clock,
    jitter: 0,
    backoff: { initialMs: 100, factor: 2, maxMs: 1000 },
    send: (envelope) => {
      attempts.push(clock.now());
      if (mode === "throw") throw new Error("transport down");
      if (mode === "reject") return Promise.reject(new Error("publish failed"));
      registration.receive(accepted(envelope));
    },
  });
  registration.start();
  assertStrictEquals(registration.state, "retrying");
  assertStrictEquals((registration.lastError as Error).message, "transport down");
  mode = "reject";
  clock.advance(100);
  await settle();
  assertStrictEquals((registration.lastError as Error).message, "publish failed");
  mode = "ok";
  clock.advance(200);
  assertEquals(attempts, [0, 100, 300]);
  assertStrictEquals(registration.state, "registered");
});

// ---------------------------------------------------------------------------------------------
// Registration: correlation

Deno.test("uncorrelated registry responses are ignored and counted", () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock, { responseTimeoutMs: 1000, jitter: 0 });
  // Nothing outstanding yet.
  assertStrictEquals(registration.receive(accepted(register("register-1"))), false);
  registration.start();
  const request = sent[0].envelope;
  const mismatched = [
    // Another exchange.
    accepted(register("register-99")),
    // Another instance.
    accepted(register(request.requestId!, "instance-2")),
    // An unregister answer to a register request (same exchange identity).
    accepted(
      makeUnregisterEnvelope({
        endpointId: ENDPOINT,
        endpointInstanceId: INSTANCE,
        requestId: request.requestId!,
      }),
    ),
  ];
  for (const response of mismatched) assertStrictEquals(registration.receive(response), false);
  assertStrictEquals(registration.uncorrelatedResponses, 4);
  assertStrictEquals(registration.state, "registering");
  assertStrictEquals(registration.registryRevision, undefined);
  // Non-registry messages are not counted.
  assertStrictEquals(registration.receive(sent[0].envelope), false);
  assertStrictEquals(registration.uncorrelatedResponses, 4);
  // A late answer to an attempt that timed out no longer correlates.
  clock.advance(1000);
  assertStrictEquals(registration.receive(accepted(request)), false);
  assertStrictEquals(registration.uncorrelatedResponses, 5);
  assertStrictEquals(registration.state, "retrying");
  // The answer to the outstanding retry does, once; a duplicate does not.
  clock.advance(1000);
  const retry = sent[1].envelope;
  assert(registration.receive(accepted(retry, 3)));
  assertStrictEquals(registration.receive(accepted(retry, 3)), false);
  assertStrictEquals(registration.uncorrelatedResponses, 6);
  assertStrictEquals(registration.state, "registered");
  assertStrictEquals(registration.registryRevision, 3);
});

Deno.test("request ids are unguessable: a response forged with a counter id is ignored", () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock, { responseTimeoutMs: 1000, jitter: 0 });
  registration.start();
  // Whatever can write to the node's input knows the endpoint and instance (they are on the
  // Wire) but not the request id: the ids a counter would give are all refused.
  for (const guess of ["register-0", "register-1", "register-2", "1", "register-undefined"]) {
    assertStrictEquals(registration.receive(accepted(register(guess))), false);
  }
  assertStrictEquals(registration.state, "registering");
  assertStrictEquals(registration.uncorrelatedResponses, 5);
  // Only the exact outstanding id is accepted.
  assert(registration.receive(accepted(sent[0].envelope)));
  assertStrictEquals(registration.state, "registered");
  registration.stop({ timeoutMs: 1 });
  const unregister = sent[1].envelope;
  assertStrictEquals(unregister.messageType, "endpoint.unregister");
  assertStrictEquals(
    registration.receive(
      accepted(
        makeUnregisterEnvelope({
          endpointId: ENDPOINT,
          endpointInstanceId: INSTANCE,
          requestId: "unregister-2",
        }),
      ),
    ),
    false,
  );
  assert(registration.receive(accepted(unregister)));
});

function register(requestId: string, instance = INSTANCE, desc = descriptor()): ToolEnvelope {
  return makeRegistrationEnvelope(desc, { endpointInstanceId: instance, requestId });
}

// ---------------------------------------------------------------------------------------------
// Registration against the Registry: lease expiry and re-registration

Deno.test("after the lease expires during an outage, the loop re-registers", () => {
  const clock = new FakeClock();
  const registry = new EndpointRegistry({
    routes: { [ROUTE]: ENDPOINT },
    leaseTtlMs: 10_000,
    clock,
  });
  let linkUp = true;
  const { registration, sent } = loop(
    clock,
    { jitter: 0, responseTimeoutMs: 500, backoff: { initialMs: 1000, factor: 2, maxMs: 4000 } },
    (request) => (linkUp ? registry.handle(request, ROUTE) : undefined),
  );
  registration.start();
  assertStrictEquals(registration.registryRevision, 1);
  clock.advance(5000); // renewal at 5000, equal descriptor: revision unchanged
  assertStrictEquals(registration.registryRevision, 1);
  assertStrictEquals(registry.lookup(ENDPOINT)?.leaseDeadlineMs, 15_000);
  linkUp = false;
  clock.advance(10_000); // renewal at 10 000 is lost; retries at 11 500, 14 000, 18 500...
  assertStrictEquals(registration.state, "retrying");
  assertStrictEquals(registry.lookup(ENDPOINT), undefined); // expired at 15 000
  assertStrictEquals(registry.revision, 2);
  linkUp = true;
  clock.advance(5000); // the retry at 18 500 gets through
  assertEquals(times(sent), [0, 5000, 10_000, 11_500, 14_000, 18_500]);
  assertStrictEquals(registration.state, "registered");
  assertStrictEquals(registration.registryRevision, 3); // expiry + re-registration
  assertStrictEquals(registry.lookup(ENDPOINT)?.registeredAtMs, 18_500);
});

Deno.test("a changed descriptor is accepted after the old instance's lease expires", () => {
  const clock = new FakeClock();
  const registry = new EndpointRegistry({
    routes: { [ROUTE]: ENDPOINT },
    leaseTtlMs: 10_000,
    clock,
  });
  // The current record: this instance with max_concurrency 4 (lease until 10 000).
  registry.handle(register("old-1", INSTANCE, descriptor(["detect", 4])), ROUTE);
  // The same instance now announces max_concurrency 2.
  const { registration } = loop(
    clock,
    {
      descriptor: descriptor(["detect", 2]),
      jitter: 0,
      backoff: { initialMs: 4000, factor: 1, maxMs: 4000 },
    },
    (request) => registry.handle(request, ROUTE),
  );
  registration.start();
  assertStrictEquals(registration.state, "retrying");
  assertStrictEquals((registration.lastError as ToolError).code, "ENDPOINT_DESCRIPTOR_CHANGED");
  clock.advance(8000); // retries at 4000 (still rejected) and 8000 (old lease ended at 10 000)
  assertStrictEquals(registration.state, "retrying");
  clock.advance(4000); // retry at 12 000: the record expired, the new descriptor is accepted
  assertStrictEquals(registration.state, "registered");
  assertStrictEquals(registration.registryRevision, 3);
});

// ---------------------------------------------------------------------------------------------
// Registration: stop

Deno.test("stop sends unregister, waits for its response and sends nothing afterwards", async () => {
  const clock = new FakeClock();
  const registry = new EndpointRegistry({ routes: { [ROUTE]: ENDPOINT }, clock });
  const { registration, sent } = loop(clock, {}, (request) => registry.handle(request, ROUTE));
  registration.start();
  const response = await registration.stop();
  assertStrictEquals(response?.operation, "unregister");
  assertStrictEquals(response?.status, "accepted");
  assertStrictEquals(response?.registryRevision, 2);
  assertStrictEquals(registration.state, "stopped");
  assertStrictEquals(registration.registryRevision, 2);
  assertEquals(sent.map((item) => item.envelope.messageType), [
    "endpoint.register",
    "endpoint.unregister",
  ]);
  assertMatch(sent[1].envelope.requestId!, /^unregister-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/);
  assertStrictEquals(clock.pending, 0);
  clock.advance(100_000);
  assertEquals(sent.length, 2);
  assertStrictEquals(registration.stop(), registration.stop());
  assertThrows(() => registration.start(), Error, "stopped");
});

Deno.test("stop gives up on a lost unregister response after its timeout", async () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock, { responseTimeoutMs: 2000 });
  registration.start();
  registration.receive(accepted(sent[0].envelope));
  let result: unknown = "pending";
  registration.stop({ timeoutMs: 700 }).then((value) => (result = value));
  await settle();
  assertStrictEquals(result, "pending");
  clock.advance(699);
  await settle();
  assertStrictEquals(result, "pending");
  clock.advance(1);
  await settle();
  assertStrictEquals(result, undefined);
  assertMatch((registration.lastError as Error).message, /unregister within 700 ms/);
});

Deno.test("stop abandons an outstanding register; its late answer is ignored", async () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock);
  registration.start();
  const stopping = registration.stop();
  const unregister = sent[1].envelope;
  assertStrictEquals(registration.receive(accepted(sent[0].envelope)), false);
  const rejection = rejected(unregister, "STALE_ENDPOINT_INSTANCE");
  assert(registration.receive(rejection));
  const response = await stopping;
  assertStrictEquals(response?.status, "rejected");
  assertStrictEquals((registration.lastError as ToolError).code, "STALE_ENDPOINT_INSTANCE");
  assertStrictEquals(registration.state, "stopped");
});

Deno.test("stop before start sends nothing", async () => {
  const clock = new FakeClock();
  const { registration, sent } = loop(clock);
  assertStrictEquals(await registration.stop(), undefined);
  assertEquals(sent, []);
  assertStrictEquals(registration.state, "stopped");
});

Deno.test("every process start gets a new endpoint instance ID", () => {
  const ids = new Set(Array.from({ length: 100 }, () => newEndpointInstanceId()));
  assertStrictEquals(ids.size, 100);
  for (const id of ids) assertMatch(id, /^epinst-[0-9a-f-]{36}$/);
  assertMatch(newEndpointInstanceId("yolo"), /^yolo-/);
  assertThrows(() => newEndpointInstanceId(""), TypeError);
});

// ---------------------------------------------------------------------------------------------
// Health

Deno.test("health sends a snapshot at start and every period", () => {
  const clock = new FakeClock();
  const handler = handlerWith({ detect: new BlockingQuery() });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 1000,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  clock.advance(3500);
  assertEquals(times(sent, "endpoint.status"), [0, 1000, 2000, 3000]);
  const first = sent[0].envelope;
  assertStrictEquals(first.endpointId, ENDPOINT);
  assertStrictEquals(first.endpointInstanceId, INSTANCE);
  assertStrictEquals(first.requestId, undefined);
  assertEquals(first.payload, { status: { state: "ready", active_invocations: 0, details: {} } });
  reporter.stop();
  clock.advance(5000);
  assertEquals(sent.length, 4);
  assertStrictEquals(clock.pending, 0);
});

Deno.test("health reports busy when every permit of every operation is in use", async () => {
  const clock = new FakeClock();
  const detect = new BlockingQuery();
  const track = new BlockingQuery();
  const handler = handlerWith({ detect, track }, { detect: 1, track: 2 });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 60_000,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  const calls = [invoke(handler, "detect"), invoke(handler, "track")];
  await settle();
  assertStrictEquals(reporter.check(), false); // track still has a free permit
  calls.push(invoke(handler, "track"));
  await settle();
  assertStrictEquals(reporter.check(), true);
  assertStrictEquals(reporter.check(), false); // no change, no snapshot
  detect.release();
  await settle();
  assertStrictEquals(reporter.check(), true);
  track.release();
  await Promise.all(calls);
  assertStrictEquals(reporter.check(), false);
  assertEquals(sent.map((item) => statusOf(item.envelope)), [
    ["ready", 0],
    ["busy", 3],
    ["ready", 2],
  ]);
  reporter.stop();
});

Deno.test("a state-change snapshot restarts the period", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 1000,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  clock.advance(600);
  const call = invoke(handler);
  await settle();
  reporter.check(); // busy at 600
  clock.advance(1500);
  assertEquals(times(sent, "endpoint.status"), [0, 600, 1600]);
  query.release();
  await call;
  reporter.stop();
});

Deno.test("health polls the handler state when pollMs is set", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 10_000,
    pollMs: 100,
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  const call = invoke(handler);
  await settle();
  clock.advance(250);
  query.release();
  await call;
  clock.advance(100);
  assertEquals(sent.map((item) => [item.at, ...statusOf(item.envelope)]), [
    [0, "ready", 0],
    [100, "busy", 1],
    [300, "ready", 0],
  ]);
  reporter.stop();
  assertStrictEquals(clock.pending, 0);
});

Deno.test("degraded and unavailable take precedence in that order", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  let degraded = false;
  const sent: Sent[] = [];
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler,
    clock,
    periodMs: 60_000,
    degraded: () => degraded,
    details: () => ({ camera: degraded ? "lost" : "ok" }),
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  const call = invoke(handler);
  await settle();
  assertStrictEquals(endpointStateOf(handler), "busy");
  degraded = true;
  reporter.check();
  assertStrictEquals(endpointStateOf(handler, { degraded: true }), "degraded");
  reporter.shuttingDown();
  assertStrictEquals(
    endpointStateOf(handler, { shuttingDown: true, degraded: true }),
    "unavailable",
  );
  assertEquals(sent.map((item) => statusOf(item.envelope)), [
    ["ready", 0],
    ["degraded", 1],
    ["unavailable", 1],
  ]);
  assertEquals(endpointStatusFromEnvelope(sent[1].envelope).details, { camera: "lost" });
  // A closed handler is unavailable by itself.
  const other = handlerWith({ detect: new BlockingQuery() });
  const closing = other.close({ graceMs: 0 });
  assertStrictEquals(endpointStateOf(other), "unavailable");
  await closing;
  query.release();
  await call;
  reporter.stop();
});

Deno.test("a details callback that throws or returns a NaN never escapes the period timer", () => {
  const clock = new FakeClock();
  const handler = handlerWith({ detect: new BlockingQuery() });
  const sent: Sent[] = [];
  const log = recordingLogger();
  let details: () => object = () => ({ temperature: 40 });
  const reporter = new EndpointHealthReporter({
    logger: log.logger,
    handler,
    clock,
    periodMs: 1000,
    details: () => details(),
    send: (envelope) => void sent.push({ at: clock.now(), envelope }),
  });
  reporter.start();
  details = () => {
    throw new Error("sensor gone");
  };
  clock.advance(1000); // the period timer: before the fix, the throw left the timer here
  details = () => ({ temperature: NaN });
  clock.advance(1000);
  // A check between periods does not call details(), and sends nothing while it keeps failing.
  assertStrictEquals(reporter.check(), false);
  details = () => ({ temperature: 41 });
  clock.advance(1000);
  assertEquals(sent.map((item) => item.envelope.payload), [
    { status: { state: "ready", active_invocations: 0, details: { temperature: 40 } } },
    { status: { state: "degraded", active_invocations: 0, details: {} } },
    { status: { state: "degraded", active_invocations: 0, details: {} } },
    { status: { state: "ready", active_invocations: 0, details: { temperature: 41 } } },
  ]);
  // One report per run of failures (the NaN came right after the throw: the same run).
  assertEquals(
    log.records.map((record) => [
      record.level,
      record.event,
      record.endpointId,
      record.message,
      (record.error as Error).message,
    ]),
    [[
      "error",
      "health.callback_failed",
      handler.descriptor.endpointId,
      "the details() callback failed; the snapshot reports degraded",
      "sensor gone",
    ]],
  );
  assertStrictEquals(reporter.running, true);
  assertStrictEquals(clock.pending, 1);
  reporter.stop();
});

Deno.test("a failing degraded callback is reported once per run", () => {
  const clock = new FakeClock();
  const handler = handlerWith({ detect: new BlockingQuery() });
  const log = recordingLogger();
  let fail = true;
  const reporter = new EndpointHealthReporter({
    logger: log.logger,
    handler,
    clock,
    periodMs: 1000,
    degraded: () => {
      if (fail) throw new Error("probe down");
      return false;
    },
    send: () => undefined,
  });
  reporter.start();
  clock.advance(3000);
  assertStrictEquals(reporter.lastState, "degraded");
  fail = false;
  assertStrictEquals(reporter.check(), true);
  assertStrictEquals(reporter.lastState, "ready");
  fail = true;
  clock.advance(1000);
  assertEquals(log.records.map((record) => record.message), [
    "the degraded() callback failed; the snapshot reports degraded",
    "the degraded() callback failed; the snapshot reports degraded",
  ]);
  assertEquals(log.events(), ["error health.callback_failed", "error health.callback_failed"]);
  reporter.stop();
  assertThrows(
    () => new EndpointHealthReporter({ handler, send: () => undefined, details: {} as never }),
    TypeError,
    "Cannot create an EndpointHealthReporter as 'details' must be a function: current value is",
  );
});

/** An Action endpoint whose executions stay running (their permits stay taken). */
function actionHandler(maxConcurrency: number, logger = silentLogger): ToolEndpointHandler {
  return new ToolEndpointHandler(
    new ToolEndpointDescriptor({
      protocolVersion: TOOL_ENDPOINT_PROTOCOL,
      endpointId: ENDPOINT,
      operations: [
        new ToolOperationDescriptor({
          name: "move",
          semantics: "action",
          statusSupported: true,
          maxConcurrency,
        }),
      ],
    }),
    {
      endpointInstanceId: INSTANCE,
      logger,
      operations: {
        move: {
          start: () => new ToolAccepted(),
          cancel: () => new ToolControlResponse({ command: "cancel", status: "unsupported" }),
          status: () => new ToolExecutionStatus({ phase: "running" }),
          result: () => new ToolResultResponse({ status: "pending" }),
        },
      },
    },
  );
}

function invokeMove(handler: ToolEndpointHandler, n: number): Promise<readonly ToolEnvelope[]> {
  return handler.dispatch(makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: {} }),
    context(ENDPOINT, "move", { invocationId: `move-${n}` }),
    { requestId: `request-move-${n}`, endpointInstanceId: INSTANCE },
  ));
}

Deno.test("watchState: one call per turn of permit changes; a throwing listener is logged", async () => {
  const log = recordingLogger();
  const handler = actionHandler(2, log.logger);
  const seen: number[] = [];
  const unwatch = handler.watchState(() => void seen.push(handler.state.permitsInUse.move));
  const unwatchFailing = handler.watchState(() => {
    throw new Error("listener down");
  });
  // Two admissions in one turn: one call, after both.
  await Promise.all([invokeMove(handler, 1), invokeMove(handler, 2)]);
  assertEquals(seen, [2]);
  assertStrictEquals(log.records.length, 1);
  assertMatch(log.records[0].message, /watchState listener failed/);
  assertStrictEquals((log.records[0].error as Error).message, "listener down");
  unwatch();
  unwatchFailing();
  await invokeMove(handler, 3); // refused at capacity: no permit taken, and nobody is watching
  await settle();
  assertEquals(seen, [2]);
  assertThrows(
    () => handler.watchState(undefined as never),
    TypeError,
    "Cannot watch the handler state as 'listener' must be a function: current value is undefined",
  );
});

Deno.test("a running node reports an Action permit taken with no check call", async () => {
  const handler = actionHandler(1);
  const states: string[] = [];
  const node = new EndpointNodeLifecycle({
    handler,
    unregisterTimeoutMs: 0,
    send: (envelope) => {
      if (envelope.messageType === "endpoint.status") states.push(statusOf(envelope)[0]);
    },
  });
  node.start();
  await invokeMove(handler, 1);
  await settle();
  assertEquals(states, ["ready", "busy"]);
  await node.shutdown();
  assertEquals(states, ["ready", "busy", "unavailable"]);
});

Deno.test("a failing status send is recorded, not thrown", async () => {
  const clock = new FakeClock();
  const reporter = new EndpointHealthReporter({
    logger: silentLogger,
    handler: handlerWith({ detect: new BlockingQuery() }),
    clock,
    send: () => Promise.reject(new Error("down")),
  });
  reporter.start();
  await settle();
  assertStrictEquals((reporter.lastError as Error).message, "down");
  assertStrictEquals(reporter.sent, 1);
  reporter.stop();
});

// ---------------------------------------------------------------------------------------------
// The node: shutdown ordering

Deno.test("shutdown: stop admitting, settle in-flight work, one unavailable, unregister, close", async () => {
  const clock = new FakeClock();
  const registry = new EndpointRegistry({ routes: { [ROUTE]: ENDPOINT }, clock });
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const log: string[] = [];
  const node: EndpointNodeLifecycle = new EndpointNodeLifecycle({
    handler,
    clock,
    random: () => 0.5,
    health: { periodMs: 60_000 },
    send: (envelope) => {
      if (envelope.messageType === "endpoint.status") {
        const [state, active] = statusOf(envelope);
        log.push(`status ${state} ${active}`);
        return;
      }
      log.push(envelope.messageType);
      const response = registry.handle(envelope, ROUTE);
      // The Registry answers asynchronously, as over a real transport.
      queueMicrotask(() => {
        log.push(`response ${response.payload.operation} ${response.payload.status}`);
        node.receive(response);
      });
    },
    closeTransport: () => void log.push("close transport"),
  });
  node.start();
  await settle();
  assertStrictEquals(node.phase, "running");
  assertStrictEquals(node.registration.state, "registered");
  const inFlight = invoke(handler).then((response) => {
    log.push(`in-flight settled ${invokeResponseFromPayload(response.payload).constructor.name}`);
  });
  await settle();
  log.push("-- shutdown");
  const done = node.shutdown();
  assertStrictEquals(node.shutdown(), done);
  assertStrictEquals(node.phase, "shutting_down");
  await settle();
  // Admission stopped: a new invoke is refused while the old one still runs.
  const refused = invokeResponseFromPayload((await invoke(handler)).payload);
  assertInstanceOf(refused, ToolError);
  assertStrictEquals(refused.code, "FORGE_ENDPOINT_UNAVAILABLE");
  // Renewals continue while in-flight work settles (the lease keeps results reachable).
  clock.advance(15_000);
  await settle();
  log.push("-- release");
  query.release();
  const response = await done;
  await inFlight;
  assertEquals(log, [
    "endpoint.register",
    "status ready 0",
    "response register accepted",
    "-- shutdown",
    "endpoint.register",
    "response register accepted",
    "-- release",
    "in-flight settled ToolResult",
    "status unavailable 0",
    "endpoint.unregister",
    "response unregister accepted",
    "close transport",
  ]);
  assertStrictEquals(response?.status, "accepted");
  assertStrictEquals(response?.registryRevision, 2);
  assertStrictEquals(registry.lookup(ENDPOINT), undefined);
  assertStrictEquals(node.phase, "stopped");
  assertStrictEquals(node.registration.state, "stopped");
  assertStrictEquals(clock.pending, 0);
});

Deno.test("shutdown closes the transport even when the unregister response is lost", async () => {
  const clock = new FakeClock();
  const log: string[] = [];
  const node = new EndpointNodeLifecycle({
    handler: handlerWith({ detect: new BlockingQuery() }),
    clock,
    unregisterTimeoutMs: 300,
    send: (envelope) => void log.push(envelope.messageType),
    closeTransport: () => void log.push("close transport"),
  });
  node.start();
  const done = node.shutdown();
  await settle();
  assertEquals(log, [
    "endpoint.register",
    "endpoint.status",
    "endpoint.status",
    "endpoint.unregister",
  ]);
  clock.advance(300);
  assertStrictEquals(await done, undefined);
  assertEquals(log.at(-1), "close transport");
  assertStrictEquals(node.phase, "stopped");
});

Deno.test("the node feeds registry responses and forwards health checks", async () => {
  const clock = new FakeClock();
  const query = new BlockingQuery();
  const handler = handlerWith({ detect: query });
  const sent: ToolEnvelope[] = [];
  const node = new EndpointNodeLifecycle({
    handler,
    clock,
    send: (envelope) => void sent.push(envelope),
  });
  assertStrictEquals(node.check(), false); // not started
  node.start();
  assert(node.receive(accepted(sent[0], 9)));
  assertStrictEquals(node.registration.registryRevision, 9);
  assertStrictEquals(node.receive(sent[1]), false); // a status is not a registry response
  const call = invoke(handler);
  await settle();
  assert(node.check());
  assertEquals(statusOf(sent.at(-1)!), ["busy", 1]);
  query.release();
  await call;
  node.start(); // no-op once running
  const done = node.shutdown();
  await settle();
  node.receive(accepted(sent.at(-1)!, 10));
  assertStrictEquals((await done)?.registryRevision, 10);
  assertStrictEquals(handler.state.closed, true);
});

// The registration loop on a fake monotonic clock (no real sleeps): renewal timing, backoff
// bounds, rejections, correlation, lease expiry and re-registration, stop.
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
import { ToolError } from "../../mod.ts";
import {
  makeRegistrationEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import {
  EndpointHealthReporter,
  EndpointRegistration,
  EndpointRegistry,
  newEndpointInstanceId,
} from "../../node.ts";
import { FakeClock, silentLogger } from "../_helpers.ts";
import {
  accepted,
  BlockingQuery,
  descriptor,
  ENDPOINT,
  handlerWith,
  INSTANCE,
  loop,
  rejected,
  ROUTE,
  settle,
  times,
  UUID_REQUEST_ID,
} from "./_node_fixtures.ts";

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

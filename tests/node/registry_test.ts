// The in-memory EndpointRegistry: every rule of PROTOCOL.md 8.5–8.6 with the exact response
// status, revision and error code, on an injected monotonic clock.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { ToolEndpointDescriptor, ToolOperationDescriptor } from "../../mod.ts";
import {
  decodeEnvelope,
  encodeEnvelope,
  endpointRegistryResponseFromPayload,
  makeRegistrationEnvelope,
  makeUnregisterEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  ToolEnvelope,
  ToolProtocolError,
  validateManagementResponseCorrelation,
} from "../../wire.ts";
import {
  descriptorsEqual,
  EndpointRegistry,
  type EndpointRegistryChange,
  type EndpointRegistryOptions,
} from "../../node.ts";
import { recordingLogger } from "../_helpers.ts";
import { SeededRandom } from "../_gen.ts";

const ROUTE = "yolo/management";
const OTHER_ROUTE = "arm/management";
const ENDPOINT = "vision.yolo";
const OTHER_ENDPOINT = "robot.arm";

function descriptor(
  endpointId = ENDPOINT,
  operations: { name: string; maxConcurrency?: number }[] = [{ name: "detect" }],
): ToolEndpointDescriptor {
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId,
    operations: operations.map((operation) =>
      new ToolOperationDescriptor({
        name: operation.name,
        semantics: "query",
        maxConcurrency: operation.maxConcurrency ?? 1,
      })
    ),
  });
}

let requests = 0;

function register(
  instance: string,
  desc: ToolEndpointDescriptor = descriptor(),
  requestId = `register-${++requests}`,
): ToolEnvelope {
  return makeRegistrationEnvelope(desc, { endpointInstanceId: instance, requestId });
}

function unregister(
  instance: string,
  endpointId = ENDPOINT,
  requestId = `unregister-${++requests}`,
): ToolEnvelope {
  return makeUnregisterEnvelope({ endpointId, endpointInstanceId: instance, requestId });
}

interface Fixture {
  registry: EndpointRegistry;
  clock: { t: number; now(): number };
  changes: EndpointRegistryChange[];
}

function fixture(options: Partial<EndpointRegistryOptions> = {}): Fixture {
  const clock = {
    t: 1000,
    now(): number {
      return this.t;
    },
  };
  const changes: EndpointRegistryChange[] = [];
  const registry = new EndpointRegistry({
    routes: { [ROUTE]: ENDPOINT, [OTHER_ROUTE]: OTHER_ENDPOINT },
    leaseTtlMs: 10_000,
    clock,
    onChange: (change) => changes.push(change),
    ...options,
  });
  return { registry, clock, changes };
}

/** Handles `request` on `route`, checks correlation, and returns the decoded decision. */
function decide(registry: EndpointRegistry, request: ToolEnvelope, route = ROUTE) {
  const response = registry.handle(request, route);
  validateManagementResponseCorrelation(request, response);
  // The response is a valid Wire message: it survives the strict codec.
  const decoded = decodeEnvelope(encodeEnvelope(response));
  return { envelope: response, ...endpointRegistryResponseFromPayload(decoded.payload) };
}

function snapshot(registry: EndpointRegistry) {
  return JSON.stringify([registry.revision, registry.records()]);
}

// ---------------------------------------------------------------------------------------------
// Register

Deno.test("register with no current instance accepts, establishes state and increments once", () => {
  const { registry, changes } = fixture();
  assertStrictEquals(registry.revision, 0);
  const request = register("instance-1");
  const decision = decide(registry, request);
  assertEquals(decision.envelope.payload, {
    operation: "register",
    status: "accepted",
    registry_revision: 1,
    lease_ttl_ms: 10_000,
  });
  assertStrictEquals(decision.envelope.requestId, request.requestId);
  assertStrictEquals(decision.envelope.endpointId, ENDPOINT);
  assertStrictEquals(decision.envelope.endpointInstanceId, "instance-1");
  assertStrictEquals(registry.revision, 1);
  const record = registry.lookup(ENDPOINT)!;
  assertEquals(
    {
      routeId: record.routeId,
      endpointId: record.endpointId,
      endpointInstanceId: record.endpointInstanceId,
      registeredAtMs: record.registeredAtMs,
      renewedAtMs: record.renewedAtMs,
      leaseDeadlineMs: record.leaseDeadlineMs,
    },
    {
      routeId: ROUTE,
      endpointId: ENDPOINT,
      endpointInstanceId: "instance-1",
      registeredAtMs: 1000,
      renewedAtMs: 1000,
      leaseDeadlineMs: 11_000,
    },
  );
  assertEquals(changes.map((change) => [change.kind, change.revision]), [["registered", 1]]);
  assert(Object.isFrozen(record));
});

Deno.test("an exactly equal descriptor from the current instance renews without a revision", () => {
  const { registry, clock, changes } = fixture();
  decide(registry, register("instance-1"));
  clock.t = 7000;
  // An independently built, equal descriptor.
  const decision = decide(registry, register("instance-1", descriptor()));
  assertEquals(decision.envelope.payload, {
    operation: "register",
    status: "accepted",
    registry_revision: 1,
    lease_ttl_ms: 10_000,
  });
  const record = registry.lookup(ENDPOINT)!;
  assertStrictEquals(record.registeredAtMs, 1000);
  assertStrictEquals(record.renewedAtMs, 7000);
  assertStrictEquals(record.leaseDeadlineMs, 17_000);
  assertStrictEquals(registry.revision, 1);
  assertEquals(changes.length, 1);
  // The renewed lease outlives the first one.
  clock.t = 12_000;
  assertStrictEquals(registry.lookup(ENDPOINT)?.endpointInstanceId, "instance-1");
});

Deno.test("a changed descriptor from the current instance is rejected without any effect", () => {
  const { registry, clock } = fixture();
  decide(registry, register("instance-1", descriptor(ENDPOINT, [{ name: "a" }, { name: "b" }])));
  const before = registry.lookup(ENDPOINT)!;
  clock.t = 5000;
  const changedRequests = [
    register("instance-1", descriptor(ENDPOINT, [{ name: "a" }, { name: "b", maxConcurrency: 2 }])),
    register("instance-1", descriptor(ENDPOINT, [{ name: "a" }])),
    // The same operations in another order are a different descriptor.
    register("instance-1", descriptor(ENDPOINT, [{ name: "b" }, { name: "a" }])),
  ];
  for (const request of changedRequests) {
    const decision = decide(registry, request);
    assertEquals(decision.envelope.payload, {
      operation: "register",
      status: "rejected",
      registry_revision: 1,
      error: {
        code: "ENDPOINT_DESCRIPTOR_CHANGED",
        message: "the current endpoint instance registered a different descriptor",
        retryable: false,
        details: {},
      },
    });
  }
  // Neither the descriptor nor the lease changed.
  assertStrictEquals(registry.lookup(ENDPOINT), before);
  assertStrictEquals(registry.revision, 1);
  clock.t = 11_000; // the original lease (1000 + 10 000) ran out: nothing renewed it
  assertStrictEquals(registry.lookup(ENDPOINT), undefined);
});

Deno.test("a different instance on the trusted route replaces atomically, revision once", () => {
  const { registry, clock, changes } = fixture();
  decide(registry, register("instance-1"));
  clock.t = 2000;
  const seen: (string | undefined)[] = [];
  const observing = new EndpointRegistry({
    routes: { [ROUTE]: ENDPOINT },
    clock,
    onChange: () => seen.push(observing.lookup(ENDPOINT)?.endpointInstanceId),
  });
  decide(observing, register("instance-1"));
  // The new instance may also bring a new descriptor.
  const changed = descriptor(ENDPOINT, [{ name: "detect", maxConcurrency: 8 }]);
  for (const target of [registry, observing]) {
    const decision = decide(target, register("instance-2", changed));
    assertEquals(decision.envelope.payload, {
      operation: "register",
      status: "accepted",
      registry_revision: 2,
      lease_ttl_ms: target === registry ? 10_000 : 30_000,
    });
  }
  const record = registry.lookup(ENDPOINT)!;
  assertStrictEquals(record.endpointInstanceId, "instance-2");
  assert(descriptorsEqual(record.descriptor, changed));
  assertStrictEquals(record.registeredAtMs, 2000);
  assertStrictEquals(record.leaseDeadlineMs, 12_000);
  const replaced = changes[1];
  assert(replaced.kind === "replaced");
  assertStrictEquals(replaced.previous.endpointInstanceId, "instance-1");
  assertStrictEquals(replaced.revision, 2);
  // No transient absent state: an observer inside the change sees only current instances.
  assertEquals(seen, ["instance-1", "instance-2"]);
  // Instance IDs carry no order: the earlier instance can take the route back.
  assertStrictEquals(decide(registry, register("instance-1")).registryRevision, 3);
  assertStrictEquals(registry.lookup(ENDPOINT)?.endpointInstanceId, "instance-1");
});

// ---------------------------------------------------------------------------------------------
// Unregister

Deno.test("unregister of the current instance removes it and increments once", () => {
  const { registry, changes } = fixture();
  decide(registry, register("instance-1"));
  const decision = decide(registry, unregister("instance-1"));
  assertEquals(decision.envelope.payload, {
    operation: "unregister",
    status: "accepted",
    registry_revision: 2,
  });
  assertStrictEquals(registry.lookup(ENDPOINT), undefined);
  assertEquals(registry.records(), []);
  assertEquals(changes.map((change) => [change.kind, change.revision]), [
    ["registered", 1],
    ["unregistered", 2],
  ]);
});

Deno.test("an authorized unregister with no current instance is accepted effect-idempotently", () => {
  const { registry, changes } = fixture();
  assertEquals(decide(registry, unregister("instance-1")).envelope.payload, {
    operation: "unregister",
    status: "accepted",
    registry_revision: 0,
  });
  decide(registry, register("instance-1"));
  decide(registry, unregister("instance-1"));
  // Repeating it (or sending it from any instance) changes nothing.
  for (const instance of ["instance-1", "instance-1", "instance-9"]) {
    assertEquals(decide(registry, unregister(instance)).envelope.payload, {
      operation: "unregister",
      status: "accepted",
      registry_revision: 2,
    });
  }
  assertStrictEquals(registry.revision, 2);
  assertEquals(changes.length, 2);
});

Deno.test("unregister from a stale instance is rejected without mutating current state", () => {
  const { registry } = fixture();
  decide(registry, register("instance-1"));
  decide(registry, register("instance-2"));
  const before = snapshot(registry);
  const decision = decide(registry, unregister("instance-1"));
  assertEquals(decision.envelope.payload, {
    operation: "unregister",
    status: "rejected",
    registry_revision: 2,
    error: {
      code: "STALE_ENDPOINT_INSTANCE",
      message: "endpoint instance is not current",
      retryable: false,
      details: {},
    },
  });
  assertStrictEquals(snapshot(registry), before);
  assertStrictEquals(registry.lookup(ENDPOINT)?.endpointInstanceId, "instance-2");
});

// ---------------------------------------------------------------------------------------------
// Lease expiry

Deno.test("lease expiry removes state and increments the revision once", () => {
  const { registry, clock, changes } = fixture();
  decide(registry, register("instance-1")); // deadline 11 000
  clock.t = 10_999;
  assertEquals(registry.expire(), []);
  assertStrictEquals(registry.nextLeaseDeadlineMs(), 11_000);
  assertStrictEquals(registry.lookup(ENDPOINT)?.endpointInstanceId, "instance-1");
  clock.t = 11_000;
  const expired = registry.expire();
  assertEquals(expired.map((record) => record.endpointInstanceId), ["instance-1"]);
  assertStrictEquals(registry.revision, 2);
  assertEquals(registry.expire(), []);
  assertStrictEquals(registry.revision, 2);
  assertStrictEquals(registry.nextLeaseDeadlineMs(), undefined);
  assertEquals(changes.map((change) => [change.kind, change.revision]), [
    ["registered", 1],
    ["expired", 2],
  ]);
});

Deno.test("expiry is applied before a decision: a late renewal re-registers (two increments)", () => {
  const { registry, clock, changes } = fixture();
  decide(registry, register("instance-1"));
  clock.t = 50_000; // nobody called expire()
  const decision = decide(registry, register("instance-1"));
  assertEquals(decision.envelope.payload, {
    operation: "register",
    status: "accepted",
    registry_revision: 3,
    lease_ttl_ms: 10_000,
  });
  assertEquals(changes.map((change) => [change.kind, change.revision]), [
    ["registered", 1],
    ["expired", 2],
    ["registered", 3],
  ]);
  assertStrictEquals(registry.lookup(ENDPOINT)?.registeredAtMs, 50_000);
});

Deno.test("after expiry an unregister is absent (accepted, no revision change)", () => {
  const { registry, clock } = fixture();
  decide(registry, register("instance-1"));
  clock.t = 11_000;
  assertEquals(decide(registry, unregister("instance-1")).envelope.payload, {
    operation: "unregister",
    status: "accepted",
    registry_revision: 2,
  });
});

Deno.test("each endpoint has its own lease", () => {
  const { registry, clock } = fixture();
  decide(registry, register("instance-1"));
  clock.t = 6000;
  decide(registry, register("arm-1", descriptor(OTHER_ENDPOINT)), OTHER_ROUTE);
  clock.t = 11_000;
  assertEquals(registry.records().map((record) => record.endpointId), [OTHER_ENDPOINT]);
  assertStrictEquals(registry.revision, 3);
  clock.t = 16_000;
  assertEquals(registry.records(), []);
  assertStrictEquals(registry.revision, 4);
});

Deno.test("leases end exactly at their deadlines, whatever the order of renewals and clock moves", () => {
  // The Registry skips its walk while the clock is before the earliest deadline it knows of; a
  // model that walks every record on every read says what each read must find. Renewals move a
  // deadline later, new instances and a clock that steps back put one earlier.
  const random = new SeededRandom(8);
  const { registry, clock } = fixture();
  const routes = [[ROUTE, ENDPOINT], [OTHER_ROUTE, OTHER_ENDPOINT]] as const;
  const model = new Map<string, { instance: string; deadline: number }>();
  const expireModel = () => {
    const ended: string[] = [];
    for (const [endpoint, record] of model) {
      if (record.deadline <= clock.t) (model.delete(endpoint), ended.push(endpoint));
    }
    return ended;
  };
  let steps = 0;
  for (let step = 0; step < 3000; step++) {
    const [route, endpoint] = random.pick(routes);
    const action = random.int(0, 9);
    if (action <= 3) {
      clock.t += random.int(-3000, 9000);
    } else if (action <= 6) {
      // A replacement by the other instance half the time; the Registry is then not asked.
      const instance = `${endpoint}-${random.int(1, 2)}`;
      const held = model.get(endpoint);
      const current = held !== undefined && held.deadline > clock.t ? held : undefined;
      if (current !== undefined && current.instance !== instance && random.int(0, 1) === 0) {
        continue;
      }
      expireModel();
      const decision = decide(registry, register(instance, descriptor(endpoint)), route);
      assertStrictEquals(decision.status, "accepted", JSON.stringify(decision.envelope.payload));
      model.set(endpoint, { instance, deadline: clock.t + 10_000 });
    } else if (action === 7) {
      const record = model.get(endpoint);
      if (record === undefined) continue;
      expireModel();
      decide(
        registry,
        unregister(model.get(endpoint)?.instance ?? record.instance, endpoint),
        route,
      );
      model.delete(endpoint);
    } else if (action === 8) {
      assertEquals(
        registry.expire().map((record) => record.endpointId).sort(),
        expireModel().sort(),
        `expire() at step ${step}, t=${clock.t}`,
      );
    } else {
      expireModel();
      assertStrictEquals(
        registry.lookup(endpoint)?.endpointInstanceId,
        model.get(endpoint)?.instance,
        `lookup at step ${step}, t=${clock.t}`,
      );
    }
    // Read without applying expiry: the records the Registry holds, expired ones included.
    const deadlines = [...model.values()].map((record) => record.deadline);
    assertStrictEquals(
      registry.nextLeaseDeadlineMs(),
      deadlines.length === 0 ? undefined : Math.min(...deadlines),
      `held at step ${step}`,
    );
    steps++;
  }
  assert(steps > 2500, `${steps} steps`);
});

// ---------------------------------------------------------------------------------------------
// Route authority

Deno.test("a route/endpoint mismatch is rejected without state change", () => {
  const { registry } = fixture();
  decide(registry, register("instance-1"));
  decide(registry, register("arm-1", descriptor(OTHER_ENDPOINT)), OTHER_ROUTE);
  const before = snapshot(registry);
  const routeError = (found: string) => ({
    code: "FORGE_PROTOCOL_ROUTE_MISMATCH",
    message: `route authorizes endpoint '${ENDPOINT}', not '${found}'`,
    retryable: false,
    details: {},
  });
  // A configured endpoint, but not the one this route authorizes.
  assertEquals(decide(registry, register("arm-2", descriptor(OTHER_ENDPOINT))).envelope.payload, {
    operation: "register",
    status: "rejected",
    registry_revision: 2,
    error: routeError(OTHER_ENDPOINT),
  });
  assertEquals(decide(registry, unregister("arm-1", OTHER_ENDPOINT)).envelope.payload, {
    operation: "unregister",
    status: "rejected",
    registry_revision: 2,
    error: routeError(OTHER_ENDPOINT),
  });
  assertEquals(decide(registry, unregister("x", "not.configured")).envelope.payload, {
    operation: "unregister",
    status: "rejected",
    registry_revision: 2,
    error: routeError("not.configured"),
  });
  // The descriptor endpoint is checked against the route too.
  const forged = new ToolEnvelope({
    messageType: "endpoint.register",
    requestId: "forged-1",
    endpointId: ENDPOINT,
    endpointInstanceId: "instance-3",
    payload: {
      descriptor: {
        protocol_version: TOOL_ENDPOINT_PROTOCOL,
        endpoint_id: OTHER_ENDPOINT,
        operations: [{
          name: "detect",
          semantics: "query",
          cancellable: false,
          stoppable: false,
          status_supported: false,
          max_concurrency: 1,
        }],
      },
    },
  });
  const decision = decide(registry, forged);
  assertStrictEquals(decision.status, "rejected");
  assertStrictEquals(decision.error?.code, "FORGE_PROTOCOL_ROUTE_MISMATCH");
  assertStrictEquals(
    decision.error?.message,
    `route authorizes endpoint '${ENDPOINT}', not descriptor endpoint '${OTHER_ENDPOINT}'`,
  );
  assertStrictEquals(snapshot(registry), before);
});

Deno.test("a request on an unconfigured route is refused without a response or state change", () => {
  const { registry } = fixture();
  decide(registry, register("instance-1"));
  const before = snapshot(registry);
  for (const request of [register("instance-2"), unregister("instance-1")]) {
    const error = assertThrows(() => registry.handle(request, "untrusted"), ToolProtocolError);
    assertStrictEquals(error.code, "FORGE_PROTOCOL_ROUTE_MISMATCH");
    assertStrictEquals(error.path, "route");
  }
  assertStrictEquals(snapshot(registry), before);
});

Deno.test("an invalid register or unregister payload is rejected on a trusted route", () => {
  const { registry } = fixture();
  const base = { requestId: "bad-1", endpointId: ENDPOINT, endpointInstanceId: "instance-1" };
  const badDescriptor = new ToolEnvelope({
    ...base,
    messageType: "endpoint.register",
    payload: { tool_spec: {} },
  });
  let decision = decide(registry, badDescriptor);
  assertStrictEquals(decision.status, "rejected");
  assertStrictEquals(decision.error?.code, "FORGE_PROTOCOL_INVALID_PAYLOAD");
  const otherVersion = new ToolEnvelope({
    ...base,
    messageType: "endpoint.register",
    payload: { descriptor: { protocol_version: "v0", endpoint_id: ENDPOINT, operations: [] } },
  });
  decision = decide(registry, otherVersion);
  assertStrictEquals(decision.error?.code, "FORGE_PROTOCOL_UNSUPPORTED_VERSION");
  const nonEmpty = new ToolEnvelope({
    ...base,
    messageType: "endpoint.unregister",
    payload: { reason: "bye" },
  });
  decision = decide(registry, nonEmpty);
  assertStrictEquals(decision.operation, "unregister");
  assertStrictEquals(decision.error?.code, "FORGE_PROTOCOL_INVALID_PAYLOAD");
  assertStrictEquals(registry.revision, 0);
  assertEquals(registry.records(), []);
});

// ---------------------------------------------------------------------------------------------
// Revision and request identity

Deno.test("request_id is correlation only, never a deduplication key", () => {
  const { registry } = fixture();
  const first = decide(registry, register("instance-1", descriptor(), "same"));
  const second = decide(registry, register("instance-2", descriptor(), "same"));
  const third = decide(registry, unregister("instance-2", ENDPOINT, "same"));
  assertEquals(
    [first.registryRevision, second.registryRevision, third.registryRevision],
    [1, 2, 3],
  );
});

Deno.test("the revision increments only where the protocol says", () => {
  const { registry, clock } = fixture();
  const revisions: number[] = [];
  const step = (request: ToolEnvelope) =>
    revisions.push(decide(registry, request).registryRevision);
  step(unregister("a")); // absent unregister: 0
  step(register("a")); // absent -> current: 1
  step(register("a")); // equal renewal: 1
  step(register("a", descriptor(ENDPOINT, [{ name: "x" }]))); // changed descriptor, rejected: 1
  step(unregister("b")); // stale unregister, rejected: 1
  step(register("b")); // replacement: 2
  step(unregister("b")); // matching unregister: 3
  step(unregister("b")); // absent unregister: 3
  step(register("c")); // 4
  clock.t += 10_000;
  revisions.push(registry.revision); // expiry: 5
  assertEquals(revisions, [0, 1, 1, 1, 1, 2, 3, 3, 4, 5]);
});

Deno.test("a fresh Registry (Gateway restart) starts empty at revision 0", () => {
  const { registry } = fixture();
  decide(registry, register("instance-1"));
  const restarted = fixture().registry;
  assertStrictEquals(restarted.revision, 0);
  assertEquals(restarted.records(), []);
  // Periodic registration restores availability.
  assertStrictEquals(decide(restarted, register("instance-1")).registryRevision, 1);
});

// ---------------------------------------------------------------------------------------------
// Configuration and misuse

Deno.test("the route table and lease are validated", () => {
  assertThrows(
    () => new EndpointRegistry({ routes: { a: ENDPOINT, b: ENDPOINT } }),
    RangeError,
    "more than one route",
  );
  assertThrows(() => new EndpointRegistry({ routes: { "": ENDPOINT } }), TypeError);
  assertThrows(() => new EndpointRegistry({ routes: { a: " " } }), TypeError);
  assertThrows(
    () => new EndpointRegistry({ routes: { a: ENDPOINT }, leaseTtlMs: 0 }),
    RangeError,
    "Cannot create an EndpointRegistry as 'leaseTtlMs' must be an integer in [1, 2^53 - 1]: " +
      "current value is 0",
  );
  assertThrows(
    () => new EndpointRegistry({ routes: { a: ENDPOINT }, leaseTtlMs: 1.5 }),
    RangeError,
  );
  const registry = new EndpointRegistry({ routes: new Map([[ROUTE, ENDPOINT]]) });
  assertEquals([...registry.routes], [[ROUTE, ENDPOINT]]);
  assertStrictEquals(registry.leaseTtlMs, 30_000);
});

Deno.test("the Registry takes register and unregister only; status is not a mutation", () => {
  const { registry } = fixture();
  const status = new ToolEnvelope({
    messageType: "endpoint.status",
    endpointId: ENDPOINT,
    endpointInstanceId: "instance-1",
    payload: { status: { state: "ready", active_invocations: 0, details: {} } },
  });
  assertThrows(() => registry.handle(status, ROUTE), RangeError);
  assertThrows(() => registry.handle({} as ToolEnvelope, ROUTE), TypeError);
  assertStrictEquals(registry.revision, 0);
});

// ---------------------------------------------------------------------------------------------
// A failing onChange listener

Deno.test("an onChange that throws loses neither the change nor the response", () => {
  const log = recordingLogger();
  const { registry } = fixture({
    onChange: (change) => {
      throw new Error(`listener down at ${change.kind}`);
    },
    logger: log.logger,
  });
  const registered = decide(registry, register("instance-1"));
  assertEquals([registered.status, registered.registryRevision], ["accepted", 1]);
  assertStrictEquals(registry.lookup(ENDPOINT)?.endpointInstanceId, "instance-1");
  const replaced = decide(registry, register("instance-2"));
  assertEquals([replaced.status, replaced.registryRevision], ["accepted", 2]);
  const removed = decide(registry, unregister("instance-2"));
  assertEquals([removed.status, removed.registryRevision], ["accepted", 3]);
  assertStrictEquals(registry.lookup(ENDPOINT), undefined);
  assertEquals(
    log.records.map((record) => [
      `${record.level} ${record.event} ${record.endpointId}`,
      record.message,
      (record.error as Error).message,
    ]),
    [
      [
        `error registry.listener_failed ${ENDPOINT}`,
        "onChange failed for registered of instance instance-1 (revision 1)",
        "listener down at registered",
      ],
      [
        `error registry.listener_failed ${ENDPOINT}`,
        "onChange failed for replaced of instance instance-2 (revision 2)",
        "listener down at replaced",
      ],
      [
        `error registry.listener_failed ${ENDPOINT}`,
        "onChange failed for unregistered of instance instance-2 (revision 3)",
        "listener down at unregistered",
      ],
    ],
  );
});

Deno.test("reads during expiry do not throw when onChange throws; every expiry counts once", () => {
  const log = recordingLogger();
  const { registry, clock } = fixture({
    onChange: (change) => {
      if (change.kind === "expired") throw new Error("listener down");
    },
    logger: log.logger,
  });
  decide(registry, register("instance-1"));
  decide(registry, register("arm-1", descriptor(OTHER_ENDPOINT)), OTHER_ROUTE);
  clock.t = 11_000;
  assertEquals(registry.records(), []);
  assertStrictEquals(registry.lookup(ENDPOINT), undefined);
  assertStrictEquals(registry.revision, 4);
  assertEquals(log.records.map((record) => `${record.event} ${record.endpointId}`), [
    `registry.listener_failed ${ENDPOINT}`,
    `registry.listener_failed ${OTHER_ENDPOINT}`,
  ]);
  const again = decide(registry, register("instance-1"));
  assertEquals([again.status, again.registryRevision], ["accepted", 5]);
});

Deno.test("onChange and logger must be functions", () => {
  assertThrows(
    () => fixture({ onChange: 1 as never }),
    TypeError,
    "Cannot create an EndpointRegistry as 'onChange' must be a function: current value is 1",
  );
  assertThrows(
    () => fixture({ logger: "log" as never }),
    TypeError,
    "'logger' must be a function: current value is \"log\"",
  );
});

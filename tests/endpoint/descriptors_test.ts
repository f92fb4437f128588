// Port of the reference's tests/test_descriptors.py (6 tests), plus exact-message, order and shape
// checks. Stays whole (over 400 lines): one suite of the descriptors' validation rules.
import { assert, assertEquals, assertStrictEquals, assertThrows } from "@std/assert";
import { TOOL_ENDPOINT_PROTOCOL } from "../../src/endpoint/constants.ts";
import { MAX } from "../_helpers.ts";
import {
  ToolEndpointDescriptor,
  type ToolEndpointDescriptorInit,
  ToolOperationDescriptor,
  type ToolOperationDescriptorInit,
} from "../../src/endpoint/models.ts";

const PROTOCOL_VERSION = "forge.tool.endpoint/v1alpha1";

/** Asserts that `fn` throws exactly an `errorClass` with exactly `message`. */
function assertThrowsExactly<E extends Error>(
  fn: () => unknown,
  errorClass: abstract new (...args: never[]) => E,
  message: string,
): void {
  const error = assertThrows(fn, errorClass);
  assertStrictEquals(error.constructor, errorClass);
  assertStrictEquals(error.message, message);
}

/** Removes `readonly` so a test can attempt an assignment. */
function mutable<T>(value: T): { -readonly [K in keyof T]: T[K] } {
  return value;
}

function moveOperation(): ToolOperationDescriptor {
  return new ToolOperationDescriptor({ name: "move", semantics: "action", statusSupported: true });
}

Deno.test("valid yolo query descriptor", () => {
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: PROTOCOL_VERSION,
    endpointId: "vision.yolo",
    operations: [
      new ToolOperationDescriptor({ name: "detect", semantics: "query", maxConcurrency: 4 }),
    ],
  });

  assertStrictEquals(descriptor.operations[0].semantics, "query");
  assertStrictEquals(descriptor.operations[0].maxConcurrency, 4);
});

Deno.test("valid lerobot session descriptor", () => {
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: PROTOCOL_VERSION,
    endpointId: "policy.lerobot",
    operations: [
      new ToolOperationDescriptor({
        name: "execute",
        semantics: "session",
        stoppable: true,
        statusSupported: true,
      }),
    ],
  });

  const operation = descriptor.operations[0];
  assertStrictEquals(operation.semantics, "session");
  assertStrictEquals(operation.cancellable, false);
  assertStrictEquals(operation.stoppable, true);
  assertStrictEquals(operation.statusSupported, true);
});

Deno.test("invalid endpoint descriptor", async (t) => {
  const cases: [string, Partial<ToolEndpointDescriptorInit>, string][] = [
    ["protocol_version", { protocolVersion: "" }, "protocol_version"],
    ["endpoint_id", { endpointId: "" }, "endpoint_id"],
    ["operations", { operations: [] }, "must not be empty"],
  ];
  for (const [label, override, message] of cases) {
    await t.step(label, () => {
      const values: ToolEndpointDescriptorInit = {
        protocolVersion: PROTOCOL_VERSION,
        endpointId: "robot.arm",
        operations: [moveOperation()],
        ...override,
      };
      assertThrows(() => new ToolEndpointDescriptor(values), RangeError, message);
    });
  }
});

Deno.test("operation descriptor rejects invalid concurrency", async (t) => {
  for (const maxConcurrency of [0, MAX + 1]) {
    await t.step(String(maxConcurrency), () => {
      assertThrows(
        () =>
          new ToolOperationDescriptor({
            name: "move",
            semantics: "action",
            statusSupported: true,
            maxConcurrency,
          }),
        RangeError,
        "max_concurrency",
      );
    });
  }
});

Deno.test("operation descriptor enforces semantics capability matrix", async (t) => {
  const cases: [Omit<ToolOperationDescriptorInit, "name">, string][] = [
    [{ semantics: "query", cancellable: true }, "query operations"],
    [{ semantics: "query", stoppable: true }, "query operations"],
    [{ semantics: "query", statusSupported: true }, "query operations"],
    [{ semantics: "action", stoppable: true, statusSupported: true }, "must not be stoppable"],
    [{ semantics: "action" }, "must support status"],
    [{ semantics: "session", cancellable: true, statusSupported: true }, "must not be cancellable"],
    [{ semantics: "session" }, "must support status"],
  ];
  for (const [init, message] of cases) {
    await t.step(JSON.stringify(init), () => {
      assertThrows(
        () => new ToolOperationDescriptor({ name: "execute", ...init }),
        RangeError,
        message,
      );
    });
  }
});

Deno.test("descriptor rejects duplicate operation names", () => {
  assertThrows(
    () =>
      new ToolEndpointDescriptor({
        protocolVersion: PROTOCOL_VERSION,
        endpointId: "vision.yolo",
        operations: [
          new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
          new ToolOperationDescriptor({ name: "detect", semantics: "query" }),
        ],
      }),
    RangeError,
    "unique",
  );
});

// ---------------------------------------------------------------------------------------------
// Beyond the reference

Deno.test("operation descriptor defaults and every capability combination the matrix allows", () => {
  const query = new ToolOperationDescriptor({ name: "detect", semantics: "query" });
  assertEquals(
    { ...query },
    {
      name: "detect",
      semantics: "query",
      cancellable: false,
      stoppable: false,
      statusSupported: false,
      maxConcurrency: 1,
    },
  );
  const action = new ToolOperationDescriptor({
    name: "move",
    semantics: "action",
    cancellable: true,
    statusSupported: true,
    maxConcurrency: MAX,
  });
  assertEquals(
    [action.cancellable, action.stoppable, action.statusSupported, action.maxConcurrency],
    [true, false, true, MAX],
  );
  const plainAction = new ToolOperationDescriptor({
    name: "move",
    semantics: "action",
    cancellable: false,
    statusSupported: true,
  });
  assertStrictEquals(plainAction.cancellable, false);
  const session = new ToolOperationDescriptor({
    name: "serve",
    semantics: "session",
    statusSupported: true,
  });
  assertEquals([session.cancellable, session.stoppable, session.statusSupported], [
    false,
    false,
    true,
  ]);
  // Explicitly passing undefined means "use the default".
  const explicit = new ToolOperationDescriptor({
    name: "detect",
    semantics: "query",
    cancellable: undefined,
    maxConcurrency: undefined,
  });
  assertEquals(explicit, query);
});

Deno.test("operation descriptor messages are the reference's, the TypeScript field named first", async (t) => {
  const cases: [string, () => unknown, typeof RangeError | typeof TypeError, string][] = [
    [
      "blank name",
      () => new ToolOperationDescriptor({ name: " \t", semantics: "query" }),
      RangeError,
      "name must be a non-empty string",
    ],
    [
      "non-string name",
      () => new ToolOperationDescriptor({ name: 7 as never, semantics: "query" }),
      RangeError,
      "name must be a non-empty string",
    ],
    [
      "lone surrogate name",
      () => new ToolOperationDescriptor({ name: "de\ud800tect", semantics: "query" }),
      RangeError,
      "name must contain valid Unicode scalar values",
    ],
    [
      "unknown semantics",
      () => new ToolOperationDescriptor({ name: "x", semantics: "stream" as never }),
      RangeError,
      "unsupported tool semantics: 'stream'",
    ],
    [
      "non-string semantics",
      () => new ToolOperationDescriptor({ name: "x", semantics: 1 as never }),
      RangeError,
      "unsupported tool semantics: 1",
    ],
    [
      "missing semantics",
      () => new ToolOperationDescriptor({ name: "x" } as never),
      RangeError,
      "unsupported tool semantics: undefined",
    ],
    [
      "cancellable not a bool",
      () => new ToolOperationDescriptor({ name: "x", semantics: "query", cancellable: 1 as never }),
      TypeError,
      "cancellable must be a bool",
    ],
    [
      "stoppable not a bool",
      () =>
        new ToolOperationDescriptor({ name: "x", semantics: "query", stoppable: "no" as never }),
      TypeError,
      "stoppable must be a bool",
    ],
    [
      "status_supported not a bool",
      () =>
        new ToolOperationDescriptor({
          name: "x",
          semantics: "query",
          statusSupported: null as never,
        }),
      TypeError,
      "statusSupported (status_supported) must be a bool",
    ],
    [
      "query with control",
      () => new ToolOperationDescriptor({ name: "x", semantics: "query", cancellable: true }),
      RangeError,
      "query operations do not support control or status",
    ],
    [
      "stoppable action",
      () =>
        new ToolOperationDescriptor({
          name: "x",
          semantics: "action",
          stoppable: true,
          statusSupported: true,
        }),
      RangeError,
      "action operations must not be stoppable",
    ],
    [
      "action without status",
      () => new ToolOperationDescriptor({ name: "x", semantics: "action" }),
      RangeError,
      "action operations must support status",
    ],
    [
      "cancellable session",
      () =>
        new ToolOperationDescriptor({
          name: "x",
          semantics: "session",
          cancellable: true,
          statusSupported: true,
        }),
      RangeError,
      "session operations must not be cancellable",
    ],
    [
      "session without status",
      () => new ToolOperationDescriptor({ name: "x", semantics: "session", stoppable: true }),
      RangeError,
      "session operations must support status",
    ],
    [
      "missing init",
      () => new ToolOperationDescriptor(undefined as never),
      TypeError,
      "ToolOperationDescriptor requires an init object",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
});

Deno.test("max_concurrency accepts only integral numbers in [1, 2^53 - 1]", async (t) => {
  const message = "maxConcurrency (max_concurrency) must be in [1, 9007199254740991]";
  const rejected: unknown[] = [0, -1, MAX + 1, 1.5, Number.NaN, Infinity, true, "2", 2n, null];
  for (const maxConcurrency of rejected) {
    await t.step(`rejects ${typeof maxConcurrency} ${String(maxConcurrency)}`, () => {
      assertThrowsExactly(
        () =>
          new ToolOperationDescriptor({
            name: "detect",
            semantics: "query",
            maxConcurrency: maxConcurrency as number,
          }),
        RangeError,
        message,
      );
    });
  }
  for (const maxConcurrency of [1, 2, MAX, 4.0]) {
    const descriptor = new ToolOperationDescriptor({
      name: "detect",
      semantics: "query",
      maxConcurrency,
    });
    assertStrictEquals(descriptor.maxConcurrency, maxConcurrency);
  }
});

Deno.test("operation descriptor checks run in the reference order", async (t) => {
  const cases: [string, () => unknown, typeof RangeError | typeof TypeError, string][] = [
    [
      "name before semantics",
      () => new ToolOperationDescriptor({ name: "", semantics: "bogus" as never }),
      RangeError,
      "name must be a non-empty string",
    ],
    [
      "semantics before flag types",
      () =>
        new ToolOperationDescriptor({
          name: "x",
          semantics: "bogus" as never,
          cancellable: 1 as never,
        }),
      RangeError,
      "unsupported tool semantics: 'bogus'",
    ],
    [
      "flags in order cancellable, stoppable, status_supported",
      () =>
        new ToolOperationDescriptor({
          name: "x",
          semantics: "action",
          stoppable: 0 as never,
          statusSupported: 0 as never,
        }),
      TypeError,
      "stoppable must be a bool",
    ],
    [
      "flag types before the matrix",
      () =>
        new ToolOperationDescriptor({
          name: "x",
          semantics: "query",
          cancellable: true,
          statusSupported: "yes" as never,
        }),
      TypeError,
      "statusSupported (status_supported) must be a bool",
    ],
    [
      "action: stoppable before status",
      () => new ToolOperationDescriptor({ name: "x", semantics: "action", stoppable: true }),
      RangeError,
      "action operations must not be stoppable",
    ],
    [
      "session: cancellable before status",
      () => new ToolOperationDescriptor({ name: "x", semantics: "session", cancellable: true }),
      RangeError,
      "session operations must not be cancellable",
    ],
    [
      "matrix before max_concurrency",
      () => new ToolOperationDescriptor({ name: "x", semantics: "action", maxConcurrency: 0 }),
      RangeError,
      "action operations must support status",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
});

Deno.test("endpoint descriptor messages and check order", async (t) => {
  const detect = new ToolOperationDescriptor({ name: "detect", semantics: "query" });
  const cases: [string, () => unknown, typeof RangeError | typeof TypeError, string][] = [
    [
      "blank protocol_version",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: "\u3000",
          endpointId: "e",
          operations: [detect],
        }),
      RangeError,
      "protocolVersion (protocol_version) must be a non-empty string",
    ],
    [
      "blank endpoint_id",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "",
          operations: [detect],
        }),
      RangeError,
      "endpointId (endpoint_id) must be a non-empty string",
    ],
    [
      "lone surrogate endpoint_id",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "\udfff",
          operations: [detect],
        }),
      RangeError,
      "endpointId (endpoint_id) must contain valid Unicode scalar values",
    ],
    [
      "empty operations",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "e",
          operations: [],
        }),
      RangeError,
      "operations must not be empty",
    ],
    [
      "non-descriptor element",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "e",
          operations: [detect, { ...detect } as never],
        }),
      TypeError,
      "operations must contain ToolOperationDescriptor values",
    ],
    [
      "non-iterable operations",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "e",
          operations: { 0: detect, length: 1 } as never,
        }),
      TypeError,
      "operations must contain ToolOperationDescriptor values",
    ],
    [
      "missing operations",
      () =>
        new ToolEndpointDescriptor({ protocolVersion: PROTOCOL_VERSION, endpointId: "e" } as never),
      TypeError,
      "operations must contain ToolOperationDescriptor values",
    ],
    [
      "duplicate names",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "e",
          operations: [detect, detect],
        }),
      RangeError,
      "operation names must be unique within an endpoint",
    ],
    [
      "protocol_version before endpoint_id",
      () => new ToolEndpointDescriptor({ protocolVersion: "", endpointId: "", operations: [] }),
      RangeError,
      "protocolVersion (protocol_version) must be a non-empty string",
    ],
    [
      "endpoint_id before operations",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: " ",
          operations: [],
        }),
      RangeError,
      "endpointId (endpoint_id) must be a non-empty string",
    ],
    [
      "element types before uniqueness",
      () =>
        new ToolEndpointDescriptor({
          protocolVersion: PROTOCOL_VERSION,
          endpointId: "e",
          operations: [detect, detect, "detect" as never],
        }),
      TypeError,
      "operations must contain ToolOperationDescriptor values",
    ],
    [
      "missing init",
      () => new ToolEndpointDescriptor(null as never),
      TypeError,
      "ToolEndpointDescriptor requires an init object",
    ],
  ];
  for (const [label, fn, errorClass, message] of cases) {
    await t.step(label, () => assertThrowsExactly(fn, errorClass, message));
  }
});

Deno.test("endpoint descriptor copies any iterable into a frozen array and looks operations up", () => {
  const detect = new ToolOperationDescriptor({ name: "detect", semantics: "query" });
  const move = moveOperation();
  const source = [detect, move];
  function* generate(): Generator<ToolOperationDescriptor> {
    yield detect;
    yield move;
  }
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "robot.arm",
    operations: source,
  });
  source.pop();
  assertEquals(descriptor.operations, [detect, move]);
  assert(Object.isFrozen(descriptor.operations));
  assertThrows(() => (descriptor.operations as ToolOperationDescriptor[]).push(detect), TypeError);
  assertStrictEquals(descriptor.operations.length, 2);
  assertStrictEquals(descriptor.operation("detect"), detect);
  assertStrictEquals(descriptor.operation("move"), move);
  assertStrictEquals(descriptor.operation("missing"), undefined);
  assertStrictEquals(descriptor.operation("__proto__"), undefined);

  const fromGenerator = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: "robot.arm",
    operations: generate(),
  });
  assertEquals(fromGenerator, descriptor);
  // The protocol version is only checked for shape here, not compared with the constant.
  assertStrictEquals(
    new ToolEndpointDescriptor({ protocolVersion: "v0", endpointId: "e", operations: [detect] })
      .protocolVersion,
    "v0",
  );
});

Deno.test("descriptors are frozen", () => {
  const operation = moveOperation();
  assert(Object.isFrozen(operation));
  assertThrows(() => {
    mutable(operation).maxConcurrency = 5;
  }, TypeError);
  assertStrictEquals(operation.maxConcurrency, 1);
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: PROTOCOL_VERSION,
    endpointId: "robot.arm",
    operations: [operation],
  });
  assert(Object.isFrozen(descriptor));
  assertThrows(() => {
    mutable(descriptor).endpointId = "other";
  }, TypeError);
  assertStrictEquals(descriptor.endpointId, "robot.arm");
  assertEquals(Object.keys(descriptor), ["protocolVersion", "endpointId", "operations"]);
});

/**
 * Fixtures of the endpoint node tests (tests/node/): a fake-clock registration loop, Registry
 * answers, a blocking Query handler and invoke helpers.
 */

import {
  ToolEndpointDescriptor,
  ToolEndpointHandler,
  ToolError,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../../mod.ts";
import {
  EndpointRegistryResponse,
  endpointStatusFromEnvelope,
  makeEndpointRegistryResponseEnvelope,
  makeInvokeRequestEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
  type ToolEnvelope,
} from "../../wire.ts";
import { EndpointRegistration, type EndpointRegistrationOptions } from "../../node.ts";
import { context, type FakeClock, silentLogger } from "../_helpers.ts";

/** Lets pending promise continuations run (no timers involved). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

// ---------------------------------------------------------------------------------------------
// Fixtures

/** A default register `request_id`: the operation and a random (v4) UUID. */
export const UUID_REQUEST_ID =
  /^register-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export const ENDPOINT = "vision.yolo";
export const ROUTE = "yolo/management";
export const INSTANCE = "instance-1";

export function descriptor(...operations: [string, number][]): ToolEndpointDescriptor {
  return new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: ENDPOINT,
    operations: (operations.length === 0 ? [["detect", 1] as [string, number]] : operations).map((
      [name, maxConcurrency],
    ) => new ToolOperationDescriptor({ name, semantics: "query", maxConcurrency })),
  });
}

export interface Sent {
  readonly at: number;
  readonly envelope: ToolEnvelope;
}

/** A registration loop whose sends are recorded and answered by `respond` (if it answers). */
export function loop(
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

export function accepted(request: ToolEnvelope, revision = 1, leaseTtlMs = 30_000): ToolEnvelope {
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

export function rejected(
  request: ToolEnvelope,
  code = "ENDPOINT_DESCRIPTOR_CHANGED",
): ToolEnvelope {
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

export function times(sent: Sent[], type = "endpoint.register"): number[] {
  return sent.filter((item) => item.envelope.messageType === type).map((item) => item.at);
}

/** A Query that blocks until `release()` is called; counts calls. */
export class BlockingQuery {
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

export function handlerWith(
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

export function invoke(handler: ToolEndpointHandler, operation = "detect"): Promise<ToolEnvelope> {
  const n = ++invocations;
  return handler.handleInvoke(
    makeInvokeRequestEnvelope(
      new ToolRequest({ arguments: {} }),
      context(ENDPOINT, operation, { invocationId: `invocation-${n}` }),
      { requestId: `request-${n}`, endpointInstanceId: INSTANCE },
    ),
  );
}

export function statusOf(envelope: ToolEnvelope): [string, number] {
  const status = endpointStatusFromEnvelope(envelope);
  return [status.state, status.activeInvocations];
}

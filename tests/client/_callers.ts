// In-process callers of the client suites (not a test file itself): a client over the real
// handler of the shared arm endpoint, optionally behind a transport that loses messages.
import {
  InProcessToolClientTransport,
  type ToolClientTransport,
  ToolEndpointClient,
  type ToolEndpointClientOptions,
  type ToolEventRecord,
  type ToolInvocation,
} from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import { armEndpoint, DESCRIPTOR, ENDPOINT } from "./_fixtures.ts";

export type ClientOptions = Omit<ToolEndpointClientOptions, "transport" | "endpointId">;

export function inProcess(options: ClientOptions = {}) {
  const arm = armEndpoint();
  const transport = new InProcessToolClientTransport(arm.handler);
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
    ...options,
  });
  return { arm, client };
}

export async function collect(invocation: ToolInvocation): Promise<ToolEventRecord[]> {
  const records: ToolEventRecord[] = [];
  for await (const record of invocation.events) records.push(record);
  return records;
}

export function summary(records: readonly ToolEventRecord[]): string[] {
  return records.map(({ sequence, event }) => `${sequence}:${event.type}`);
}

/**
 * Wraps the in-process transport with faults: `dropRequest` decides which requests are lost on
 * the way out, `dropResponse` which answers are lost on the way back.
 */
export class LossyTransport implements ToolClientTransport {
  readonly inner: InProcessToolClientTransport;
  readonly requests: ToolEnvelope[] = [];
  dropRequest: (request: ToolEnvelope) => boolean = () => false;
  dropResponse: (response: ToolEnvelope) => boolean = () => false;

  constructor(inner: InProcessToolClientTransport) {
    this.inner = inner;
  }

  connect(deliver: (message: ToolEnvelope) => void): void {
    this.inner.connect((message) => {
      if (!this.dropResponse(message)) deliver(message);
    });
  }

  resolveInstance: (endpointId: string) => string | Promise<string> = () =>
    this.inner.resolveInstance();

  send(request: ToolEnvelope): Promise<void> {
    this.requests.push(request);
    if (this.dropRequest(request)) return Promise.resolve();
    return this.inner.send(request);
  }
}

export function lossy(options: ClientOptions = {}) {
  const arm = armEndpoint();
  const transport = new LossyTransport(new InProcessToolClientTransport(arm.handler));
  const client = new ToolEndpointClient({
    transport,
    endpointId: ENDPOINT,
    descriptor: DESCRIPTOR,
    timeoutMs: 20,
    ...options,
  });
  return { arm, client, transport };
}

// Shared by the HTTP service tests: a ToolGateway with the demo endpoint registered from a
// provider node on a loopback dataflow, served over real HTTP on 127.0.0.1, and an SSE reader.
import type { ToolLogRecord } from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import {
  serveToolGateway,
  type ServeToolGatewayOptions,
  ToolGateway,
  type ToolGatewayServer,
} from "../../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  serveToolEndpoint,
} from "../../dora.ts";
import { demoEndpoint } from "../../examples/endpoint.ts";

export const ENDPOINT = "robot.demo";

export async function until(condition: () => boolean, what: string): Promise<void> {
  // Bounded by turns of the event loop, not by time.
  for (let turn = 0; turn < 4000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** The demo provider process on route `demo` (also the http_api fuzz target's). */
export class DemoProvider {
  readonly flow = new LoopbackDataflow();
  readonly node: ReturnType<typeof serveToolEndpoint>;
  readonly #pumping: Promise<void>;

  constructor(gateway: ToolGateway, stepMs: number, logger: (record: ToolLogRecord) => void) {
    const handler = demoEndpoint(stepMs, logger).createHandler({
      endpointInstanceId: "demo-1",
    });
    this.node = serveToolEndpoint(handler, {
      transport: this.flow.transport,
      lifecycle: { unregisterTimeoutMs: 50 },
      graceMs: 50,
      logger,
    });
    this.#pumping = (async () => {
      for (let out = await this.flow.nextOutput(); out; out = await this.flow.nextOutput()) {
        gateway.receive("demo", decodeToolEnvelopeIpc(out.data));
      }
    })();
  }

  deliver(envelope: ToolEnvelope): void {
    if (this.flow.isClosed) return;
    this.flow.request(encodeToolEnvelopeIpc(envelope)).catch(() => undefined);
  }

  async stop(): Promise<void> {
    await this.flow.stop();
    await this.node;
    await this.#pumping;
  }
}

/** A served gateway with the demo endpoint registered. */
export interface Harness {
  readonly gateway: ToolGateway;
  readonly server: ToolGatewayServer;
  readonly base: string;
  readonly logs: ToolLogRecord[];
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /** A JSON request; returns the status and the parsed body. */
  json(
    path: string,
    init?: RequestInit & { body?: string; token?: string },
  ): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

export async function startHarness(
  options: ServeToolGatewayOptions & { stepMs?: number; register?: boolean } = {},
): Promise<Harness> {
  const logs: ToolLogRecord[] = [];
  const logger = (record: ToolLogRecord) => logs.push(record);
  const gateway = new ToolGateway({ routes: { demo: ENDPOINT }, logger });
  let provider: DemoProvider | undefined;
  gateway.attachRoute("demo", (envelope) => provider?.deliver(envelope));
  if (options.register !== false) {
    provider = new DemoProvider(gateway, options.stepMs ?? 5, logger);
    await until(() => gateway.registry.lookup(ENDPOINT) !== undefined, "the registration");
  }
  const server = serveToolGateway(gateway, { port: 0, logger, ...options });
  const base = `http://127.0.0.1:${server.addr.port}`;
  const doFetch = (path: string, init?: RequestInit) => fetch(`${base}${path}`, init);
  return {
    gateway,
    server,
    base,
    logs,
    fetch: doFetch,
    async json(path, init = {}) {
      const headers = new Headers(init.headers);
      if (init.token !== undefined) headers.set("authorization", `Bearer ${init.token}`);
      if (init.body !== undefined) headers.set("content-type", "application/json");
      const response = await doFetch(path, { ...init, headers });
      const text = await response.text();
      return { status: response.status, body: JSON.parse(text) };
    },
    async close() {
      await server.close();
      await server.finished;
      await provider?.stop();
      await gateway.close();
    },
  };
}

/** One parsed SSE message. */
export interface SseMessage {
  readonly id?: string;
  readonly event?: string;
  readonly data?: string;
  readonly comment?: string;
}

/** Reads SSE messages from a response body, one at a time. */
export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";

  constructor(response: Response) {
    this.#reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next message, or `undefined` at the end of the stream. */
  async next(): Promise<SseMessage | undefined> {
    while (true) {
      const end = this.#buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = this.#buffer.slice(0, end);
        this.#buffer = this.#buffer.slice(end + 2);
        const message: Record<string, string> = {};
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) message.comment = line.slice(1).trim();
          else {
            const colon = line.indexOf(":");
            message[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
          }
        }
        return message;
      }
      const { done, value } = await this.#reader.read();
      if (done) return undefined;
      this.#buffer += value;
    }
  }

  /** Every message until the end (keep-alive comments left out). */
  async rest(): Promise<SseMessage[]> {
    const out: SseMessage[] = [];
    for (let message = await this.next(); message; message = await this.next()) {
      if (message.comment === undefined) out.push(message);
    }
    return out;
  }

  /** Stops reading (the client goes away). */
  cancel(): Promise<void> {
    return this.#reader.cancel();
  }
}

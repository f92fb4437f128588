// The counted scenario of tests/dora/gateway_hop_counts_test.ts: what the gateway node does to one Query on its way through (issue 20, part B): each message is
// decoded once, validated once (the gateway is one trust boundary), its payload copied once (the
// copy the gateway forwards, with its own request id) and encoded once, without a second typed
// validation at the encoder. Counted with V8's precise coverage (call counts per function, read
// through the inspector), so no production code carries a counter; only the gateway node's own
// work runs inside the counted window (the request and answer bytes are built before it, the
// output bytes decoded after it).
//
// Run by tests/dora/gateway_hop_counts_test.ts in a process of its own (the inspector needs
// `--allow-sys`); prints what it saw as JSON.
import { Session } from "node:inspector";
import {
  ToolContext,
  ToolEndpointDescriptor,
  ToolExecutionKey,
  ToolOperationDescriptor,
  ToolRequest,
  ToolResult,
} from "../../mod.ts";
import {
  makeInvokeRequestEnvelope,
  makeInvokeResponseEnvelope,
  makeRegistrationEnvelope,
  TOOL_ENDPOINT_PROTOCOL,
} from "../../wire.ts";
import { ToolGateway } from "../../gateway.ts";
import {
  decodeToolEnvelopeIpc,
  encodeToolEnvelopeIpc,
  LoopbackDataflow,
  runToolGatewayNode,
} from "../../dora.ts";

const YOLO = "vision.yolo";

/** The functions counted: name → the end of the path of the module that defines it. */
const COUNTED = {
  validateMessageEnvelope: "src/wire/validate.ts",
  checkTypedEnvelope: "src/wire/validate.ts",
  readInvokeRequest: "src/wire/invoke_request.ts",
  readInvokeResponse: "src/wire/execution_payloads.ts",
  ToolEnvelope: "src/wire/envelope.ts",
  copyJson: "src/_internal/json.ts",
  decodeToolEnvelopeIpc: "src/dora/fast_ipc.ts",
  encodeToolEnvelopeIpc: "src/dora/fast_ipc.ts",
  withExchange: "src/gateway/_records.ts",
} as const;
type Counted = keyof typeof COUNTED;

interface CoverageFunction {
  functionName: string;
  ranges: { count: number }[];
}
interface CoverageScript {
  url: string;
  functions: CoverageFunction[];
}

/** Call counts of {@linkcode COUNTED} through the inspector's precise coverage. */
class CallCounter {
  readonly #session = new Session();

  #post<T>(method: string, params: object = {}): Promise<T> {
    return new Promise((resolve, reject) =>
      this.#session.post(
        method,
        params,
        (error: Error | null, result?: object) => error ? reject(error) : resolve(result as T),
      )
    );
  }

  async start(): Promise<void> {
    this.#session.connect();
    await this.#post("Profiler.enable");
    await this.#post("Profiler.startPreciseCoverage", { callCount: true, detailed: true });
  }

  /** The calls since the last take (taking resets V8's counters). */
  async take(): Promise<Record<Counted, number>> {
    const { result } = await this.#post<{ result: CoverageScript[] }>(
      "Profiler.takePreciseCoverage",
    );
    const counts = Object.fromEntries(Object.keys(COUNTED).map((name) => [name, 0])) as Record<
      Counted,
      number
    >;
    for (const script of result) {
      for (const fn of script.functions) {
        const name = fn.functionName as Counted;
        if (Object.hasOwn(COUNTED, name) && script.url.endsWith(COUNTED[name])) {
          counts[name] += fn.ranges[0].count;
        }
      }
    }
    return counts;
  }

  async stop(): Promise<void> {
    await this.#post("Profiler.stopPreciseCoverage");
    await this.#post("Profiler.disable");
    this.#session.disconnect();
  }
}

function request(invocationId: string, requestId: string, instance?: string) {
  return makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { camera: "front", threshold: 0.5 } }),
    new ToolContext({
      executionKey: new ToolExecutionKey({ invocationId, attemptId: "attempt-1" }),
      toolId: YOLO,
      implementationId: YOLO,
      endpointId: YOLO,
      operation: "detect",
    }),
    { requestId, endpointInstanceId: instance },
  );
}

/** What one Query did: the ids seen on the gateway's outputs and the calls counted. */
export interface HopReport {
  readonly outputs: readonly string[];
  readonly forwarded: readonly (string | undefined)[];
  readonly answer: readonly unknown[];
  readonly counts: Record<Counted, number>;
}

/** Runs the scenario: a registration, a warm-up Query, then the counted Query. */
export async function countOneQuery(): Promise<HopReport> {
  const counter = new CallCounter();
  await counter.start();
  const flow = new LoopbackDataflow();
  const gateway = new ToolGateway({ routes: { detector: YOLO }, logger: () => {} });
  const running = runToolGatewayNode(gateway, {
    transport: flow.transport,
    callers: { planner_request: "planner_response" },
  });
  const descriptor = new ToolEndpointDescriptor({
    protocolVersion: TOOL_ENDPOINT_PROTOCOL,
    endpointId: YOLO,
    operations: [new ToolOperationDescriptor({ name: "detect", semantics: "query" })],
  });
  await flow.input(
    "detector_response",
    encodeToolEnvelopeIpc(
      makeRegistrationEnvelope(descriptor, { endpointInstanceId: "instance-1", requestId: "r-1" }),
    ),
  );
  const outputs = [(await flow.nextOutput())!.id];
  let report: HopReport | undefined;
  // A first Query warms the path up; the second is counted. The gateway names its exchanges
  // `<request id>@gateway-<n>`, so the provider's answer is built before the window.
  for (const n of [1, 2]) {
    const requestBytes = encodeToolEnvelopeIpc(request(`invoke-${n}`, `q-${n}`));
    const answerBytes = encodeToolEnvelopeIpc(
      makeInvokeResponseEnvelope(
        new ToolResult({ status: "succeeded", outputs: { detections: 3 } }),
        request(`invoke-${n}`, `q-${n}@gateway-${n}`, "instance-1"),
      ),
    );
    await counter.take();
    await flow.input("planner_request", requestBytes);
    const forwarded = (await flow.nextOutput())!;
    await flow.input("detector_response", answerBytes);
    const answered = (await flow.nextOutput())!;
    const counts = await counter.take();
    outputs.push(forwarded.id, answered.id);
    const sent = decodeToolEnvelopeIpc(forwarded.data);
    const answer = decodeToolEnvelopeIpc(answered.data);
    report = {
      outputs,
      forwarded: [sent.requestId, sent.endpointInstanceId],
      answer: [answer.messageType, answer.requestId, answer.payload],
      counts,
    };
  }
  await flow.stop();
  await running;
  await counter.stop();
  return report!;
}

if (import.meta.main) console.log(JSON.stringify(await countOneQuery()));

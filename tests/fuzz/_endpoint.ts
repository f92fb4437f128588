// The endpoint the dispatch, FFI and security targets serve: "forge.fuzz" on instance
// "instance-1", with a Query ("detect"), an Action ("move") and a Session ("serve").
//
// The providers are deterministic and steered by the request's arguments, so a fuzz input says
// what the provider does: detect echoes its arguments (or throws with {"throw": …}, rejects with
// {"reject": …}); move and serve emit `early` events before accepting, `late` events after, and
// wait `delayMs` before accepting.
import {
  ToolAccepted,
  ToolContext,
  ToolControlResponse,
  type ToolEndpointDescriptor,
  ToolEndpointError,
  ToolEndpointHandler,
  type ToolEndpointHandlerOptions,
  ToolError,
  ToolEvent,
  type ToolEventEmitter,
  ToolExecutionKey,
  ToolExecutionStatus,
  ToolRequest,
  ToolResult,
  ToolResultResponse,
} from "../../mod.ts";
import {
  makeControlRequestEnvelope,
  makeInvokeRequestEnvelope,
  makeResultRequestEnvelope,
  makeStatusRequestEnvelope,
  type ToolEnvelope,
} from "../../wire.ts";
import { cellDescriptor } from "../_helpers.ts";

/** The endpoint id. */
export const ENDPOINT = "forge.fuzz";
/** The provider instance. */
export const INSTANCE = "instance-1";
/** The declared operations and their semantics. */
export const OPERATIONS = { detect: "query", move: "action", serve: "session" } as const;
/** An operation name. */
export type OperationName = keyof typeof OPERATIONS;

/** The descriptor of "forge.fuzz". */
export function fuzzDescriptor(maxConcurrency = 4): ToolEndpointDescriptor {
  return cellDescriptor({ endpointId: ENDPOINT, maxConcurrency });
}

function smallInt(value: unknown, max: number): number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0
    ? Math.min(value, max)
    : 0;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
    const id = setTimeout(done, ms);
    function done() {
      clearTimeout(id);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** An Action or Session provider steered by the invoke's arguments. */
class SteeredExecution {
  readonly #command: "cancel" | "stop";
  /** Late emits still running (awaited by the checks). */
  readonly pending = new Set<Promise<unknown>>();
  /** Failures of late emits (published events must not count these). */
  readonly emitFailures: unknown[] = [];

  constructor(command: "cancel" | "stop") {
    this.#command = command;
  }

  async start(
    request: ToolRequest,
    _context: ToolContext,
    events: ToolEventEmitter,
    options: { signal: AbortSignal },
  ): Promise<ToolAccepted> {
    const args = request.arguments;
    if (args.throw !== undefined) throw new Error("provider start failed");
    if (args.reject !== undefined) {
      throw new ToolEndpointError(
        new ToolError({ code: "FUZZ_REJECTED", message: "rejected", retryable: false }),
      );
    }
    const early = smallInt(args.early, 40);
    for (let i = 0; i < early; i++) {
      await events.emit(new ToolEvent({ type: "progress", data: { i } }));
    }
    await sleep(smallInt(args.delayMs, 200), options.signal);
    const late = smallInt(args.late, 8);
    if (late > 0) {
      const emitting = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 0));
        for (let i = 0; i < late; i++) {
          await events.emit(new ToolEvent({ type: "heartbeat", data: { i } }));
        }
      })().catch((error) => void this.emitFailures.push(error));
      this.pending.add(emitting);
      emitting.finally(() => this.pending.delete(emitting));
    }
    return new ToolAccepted({ details: { echo: args } });
  }

  control(): Promise<ToolControlResponse> {
    return Promise.resolve(
      new ToolControlResponse({ command: this.#command, status: "accepted" }),
    );
  }

  cancel(): Promise<ToolControlResponse> {
    return this.control();
  }

  stop(): Promise<ToolControlResponse> {
    return this.control();
  }

  status(): Promise<ToolExecutionStatus> {
    return Promise.resolve(new ToolExecutionStatus({ phase: "running" }));
  }

  result(): Promise<ToolResultResponse> {
    return Promise.resolve(new ToolResultResponse({ status: "pending" }));
  }
}

/** The handler of "forge.fuzz" and its providers. */
export interface FuzzEndpoint {
  readonly handler: ToolEndpointHandler;
  readonly action: SteeredExecution;
  readonly session: SteeredExecution;
  /** Query calls made. */
  readonly queries: ToolRequest[];
}

/** A fresh handler of "forge.fuzz". */
export function fuzzEndpoint(
  options: Partial<Omit<ToolEndpointHandlerOptions, "operations">> & {
    maxConcurrency?: number;
  } = {},
): FuzzEndpoint {
  const { maxConcurrency, ...extras } = options;
  const action = new SteeredExecution("cancel");
  const session = new SteeredExecution("stop");
  const queries: ToolRequest[] = [];
  const handler = new ToolEndpointHandler(fuzzDescriptor(maxConcurrency), {
    endpointInstanceId: INSTANCE,
    // Provider failures are fuzz input: not printed (a target may pass its own logger).
    logger: () => {},
    ...extras,
    operations: {
      detect: {
        query(request: ToolRequest) {
          queries.push(request);
          const args = request.arguments;
          if (args.throw !== undefined) throw new Error("provider query failed");
          if (args.reject !== undefined) {
            throw new ToolEndpointError(
              new ToolError({ code: "FUZZ_REJECTED", message: "rejected", retryable: false }),
            );
          }
          return new ToolResult({ status: "succeeded", outputs: { echo: args } });
        },
      },
      move: action,
      serve: session,
    },
  });
  return { handler, action, session, queries };
}

/** What a fuzz request targets. */
export interface RequestSpec {
  readonly kind: "invoke" | "status" | "result" | "control";
  readonly operation: string;
  readonly endpointId: string;
  /** `null`: no instance (unresolved). */
  readonly instance: string | null;
  readonly invocationId: string;
  readonly requestId: string;
  readonly arguments: Record<string, unknown>;
  readonly command: "cancel" | "stop";
}

/** The envelope a {@linkcode RequestSpec} describes. */
export function requestOf(spec: RequestSpec): ToolEnvelope {
  const context = new ToolContext({
    executionKey: new ToolExecutionKey({ invocationId: spec.invocationId, attemptId: "a-1" }),
    toolId: "forge.tool.fuzz",
    implementationId: "fuzz",
    endpointId: spec.endpointId,
    operation: spec.operation,
  });
  const options = {
    requestId: spec.requestId,
    endpointInstanceId: spec.instance ?? undefined,
  };
  switch (spec.kind) {
    case "invoke":
      return makeInvokeRequestEnvelope(
        new ToolRequest({ arguments: spec.arguments }),
        context,
        options,
      );
    case "status":
      return makeStatusRequestEnvelope(context, options);
    case "result":
      return makeResultRequestEnvelope(context, options);
    case "control":
      return makeControlRequestEnvelope(spec.command, context, options);
  }
}

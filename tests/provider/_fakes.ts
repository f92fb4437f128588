/**
 * What the provider definition tests share: a handler for one definition with a recording logger
 * and an event sink, a one-response dispatch, and a function that returns on its signal.
 */
import { defineEndpoint, type ToolLogRecord } from "../../mod.ts";
import type { ToolEnvelope } from "../../wire.ts";
import { INSTANCE } from "../handler/_fakes.ts";

/** A logger that keeps every record. */
export function recorder(): { logger: (record: ToolLogRecord) => void; records: ToolLogRecord[] } {
  const records: ToolLogRecord[] = [];
  return { logger: (record) => records.push(record), records };
}

/** A handler for one operation of `target`, with a recording logger and an event sink. */
export function serve(
  target: { endpointId: string; operation: string },
  definition: Parameters<typeof defineEndpoint>[0]["operations"][string],
  extras: {
    maxRetainedExecutions?: number;
    enforceDeadlines?: boolean;
    now?: () => number;
    /** defineEndpoint's own `enforceDeadlines` (the handler's default). */
    definitionEnforceDeadlines?: boolean;
  } = {},
) {
  const { logger, records } = recorder();
  const endpoint = defineEndpoint({
    endpointId: target.endpointId,
    operations: { [target.operation]: definition },
    logger,
    maxRetainedExecutions: extras.maxRetainedExecutions,
    enforceDeadlines: extras.definitionEnforceDeadlines,
  });
  const events: ToolEnvelope[] = [];
  const handler = endpoint.createHandler({
    endpointInstanceId: INSTANCE,
    enforceDeadlines: extras.enforceDeadlines,
    now: extras.now,
  });
  const dispatch = (request: ToolEnvelope) =>
    handler.dispatch(request, { eventSink: (event) => void events.push(event) });
  return { endpoint, handler, dispatch, events, records };
}

export async function one(
  handler: { dispatch: (r: ToolEnvelope) => Promise<readonly ToolEnvelope[]> },
  request: ToolEnvelope,
) {
  const responses = await handler.dispatch(request);
  return responses[0];
}

/** A function that waits for its signal, then returns what it reached (the README's pattern). */
export function returnsOnAbort(outputs: object) {
  return async (_args: unknown, { signal }: { signal: AbortSignal }) => {
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return outputs;
  };
}

/**
 * The publication barrier of the Dora binding: an Action or Session invoke's response is
 * published and acknowledged before any of its events, events emitted before acceptance follow
 * in sequence order, later ones wait for the response, and an acceptance that does not reach the
 * caller abandons its execution. Private to `src/dora/`.
 *
 * @module
 */
import { FifoLock, withResolvers } from "../_internal/async.ts";
import { dispatchRouted, type ToolEndpointHandler } from "../handler/handler.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { correlatedInternalError, DISPATCH_FAILED, type OutputCodec } from "./_binding_codec.ts";

/** What the barrier needs of its binding (one object per binding, made once). */
export interface PublishPorts {
  /** The embedded handler. */
  readonly handler: ToolEndpointHandler;
  /** Encodes a response, or its correlated fallback (with `failure`), without reporting it. */
  readonly encodeResponse: <T>(
    codec: OutputCodec<T>,
    response: ToolEnvelope,
    request: ToolEnvelope,
  ) => { readonly message: T; readonly failure?: unknown };
  /** Encodes one event; a failure is raised. */
  readonly event: <T>(codec: OutputCodec<T>, event: ToolEnvelope) => T;
  /** Reports a failure as a `logger` record with the request's ids. */
  readonly report: (event: string, message: string, error: unknown, request: ToolEnvelope) => void;
}

/**
 * Dispatches an Action or Session invoke (the route is trusted, the size checked) with the
 * publication barrier and the fallbacks: everything goes out through the codec's sink.
 */
export async function publishStart<T>(
  codec: OutputCodec<T>,
  request: ToolEnvelope,
  ports: PublishPorts,
): Promise<T[]> {
  const sink = codec.sink;
  if (sink === undefined) {
    throw new Error("Action or Session dispatch requires an asynchronous event_sink publisher");
  }

  const gate = withResolvers<void>();
  let gateOpen = false;
  let publishFailed = false;
  let publishFailure: unknown;
  const publishLock = new FifoLock();

  const emitEvent = async (event: ToolEnvelope): Promise<void> => {
    await gate.promise;
    if (publishFailed) {
      throw new Error("Response publication failed; event was not published", {
        cause: publishFailure,
      });
    }
    const release = await publishLock.acquire();
    try {
      await sink(ports.event(codec, event));
    } finally {
      release();
    }
  };

  let messages: readonly ToolEnvelope[];
  try {
    messages = await dispatchRouted(ports.handler, request, { eventSink: emitEvent });
  } catch (error) {
    // A trusted request always gets an answer.
    ports.report("binding.dispatch_failed", DISPATCH_FAILED, error, request);
    messages = [correlatedInternalError(request)];
  }

  const release = await publishLock.acquire();
  // Closes the gate for good: the caller never learned of an acceptance, so the execution is
  // abandoned (aborted, converged, no events) before any waiting event is let through.
  const undelivered = (failure: unknown) => {
    publishFailed = true;
    publishFailure = failure;
    if (ports.handler.abandonInvoke(request)) {
      ports.report(
        "binding.acceptance_undelivered",
        "the acceptance did not reach the caller: the execution was aborted and its outcome " +
          "converged to unknown",
        new Error(
          "the acceptance did not reach the caller: the execution was aborted and its outcome " +
            "converged to unknown",
          { cause: failure },
        ),
        request,
      );
    }
    gateOpen = true;
    gate.resolve();
  };
  try {
    // An acceptance that cannot be encoded is reported once, as undelivered (its cause).
    const response = ports.encodeResponse(codec, messages[0], request);
    if ("failure" in response) {
      // The caller gets a correlated tool.error, not the acceptance: the execution must not
      // keep running behind it, and none of its events may follow the error.
      undelivered(response.failure);
      await sink(response.message);
      return [];
    }
    await sink(response.message);
    gateOpen = true;
    gate.resolve();
    for (let i = 1; i < messages.length; i++) await sink(ports.event(codec, messages[i]));
  } catch (error) {
    if (!gateOpen) undelivered(error);
    throw error;
  } finally {
    release();
  }
  return [];
}

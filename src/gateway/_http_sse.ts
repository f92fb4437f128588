// The SSE stream of one invocation's events (private to src/gateway/): `id:` is the event's
// sequence, `event:` its type, `data:` JSON; a `Last-Event-ID` resumes after that sequence from
// the events the store kept (410 when it is before that window); a comment every
// `keepAliveMs` keeps idle proxies from closing the stream; a final `event: end` carries the
// phase and result. A client that goes away (the body stream is cancelled) is unsubscribed at
// once, and so is one that reads so slowly that its queue passes the per-invocation bound.
import type { ToolEventRecord } from "../client/client.ts";
import { eventToPayload } from "../wire/execution_payloads.ts";
import { toolResultToPayload } from "../wire/outcome_payloads.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { badRequest, HttpErrorCodes, serviceError } from "./_http_errors.ts";
import type { EventSubscriber, StoredInvocation } from "./_store.ts";

const encoder = new TextEncoder();

function frame(record: ToolEventRecord): Uint8Array {
  const data = JSON.stringify({ sequence: record.sequence, ...eventToPayload(record.event) });
  return encoder.encode(`id: ${record.sequence}\nevent: ${record.event.type}\ndata: ${data}\n\n`);
}

function endFrame(entry: StoredInvocation): Uint8Array {
  const data = JSON.stringify({
    invocation_id: entry.id,
    phase: entry.phase,
    result: entry.result === undefined ? null : toolResultToPayload(entry.result),
  });
  return encoder.encode(`event: end\ndata: ${data}\n\n`);
}

const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

/** The `Last-Event-ID` of `request` as a sequence, -1 when absent, or a 400 response. */
function lastEventId(request: Request): number | Response {
  const header = request.headers.get("last-event-id");
  if (header === null || header.trim() === "") return -1;
  const value = Number(header);
  if (!Number.isSafeInteger(value) || value < 0) {
    return badRequest(
      `Last-Event-ID must be an event id this stream sent (a non-negative integer): got '${header}'`,
    );
  }
  return value;
}

/** The SSE response for `entry`'s events. */
export function eventStream(
  request: Request,
  entry: StoredInvocation,
  keepAliveMs: number,
  maxQueued: number,
): Response {
  const after = lastEventId(request);
  if (after instanceof Response) return after;
  const first = entry.firstKeptSequence;
  if (after + 1 < first) {
    return serviceError(
      HttpErrorCodes.EVENTS_EXPIRED,
      `events after ${after} of invocation '${entry.id}' are no longer kept (the oldest kept is ` +
        `${first}); read GET /invocations/${entry.id} for its status and result`,
      false,
      { first_retained_sequence: first, last_event_id: after },
    );
  }
  let subscriber: EventSubscriber | undefined;
  let keepAlive: LongTimeout | undefined;
  let closed = false;
  const stop = () => {
    closed = true;
    keepAlive?.clear();
    if (subscriber !== undefined) entry.unsubscribe(subscriber);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (bytes: Uint8Array): boolean => {
        if (closed) return false;
        if ((controller.desiredSize ?? 0) < -maxQueued) {
          // The reader is this far behind: end its stream rather than queue without bound.
          stop();
          controller.close();
          return false;
        }
        controller.enqueue(bytes);
        return true;
      };
      const finish = () => {
        if (closed) return;
        send(endFrame(entry));
        stop();
        controller.close();
      };
      for (const record of entry.eventsAfter(after)) send(frame(record));
      if (entry.ended) {
        finish();
        return;
      }
      const arm = () => {
        keepAlive = setLongTimeout(() => {
          if (send(KEEP_ALIVE)) arm();
        }, keepAliveMs);
      };
      subscriber = {
        event: (record) => {
          send(frame(record));
        },
        end: finish,
      };
      if (!entry.subscribe(subscriber)) {
        subscriber = undefined;
        closed = true;
        controller.error(new Error("too many subscribers"));
        return;
      }
      arm();
    },
    cancel() {
      stop();
    },
  });
  return sseResponse(stream);
}

/** The `200` response of an SSE stream: not cached, not buffered by a proxy. */
export function sseResponse(stream: ReadableStream<Uint8Array>): Response {
  return new Response(stream, {
    status: 200,
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}

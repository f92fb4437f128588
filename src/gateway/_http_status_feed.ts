// The live feed of the status page, `GET /events` (private to src/gateway/): one SSE stream of
// the Registry's changes and of the requesting caller's invocations. The first message is a
// `snapshot` (endpoints and the caller's invocations now), then `registry` messages (the
// gateway's snake_case GatewayRegistryEvent records) and `invocation` messages (created, event,
// ended, forgotten). `id:` counts the stream's messages (a reconnect gets a fresh snapshot, so
// Last-Event-ID is not needed); a comment every `keepAliveMs`; a reader more than `maxQueued`
// messages behind gets one `overflow` message and its stream ends. Each stream counts as one
// subscriber of the store (the service's `stats.subscribers`, bounded by `maxSubscribers`).
import type { ToolGateway } from "./gateway.ts";
import type { InvocationStore, StoreChange, StoredInvocation } from "./_store.ts";
import { type LongTimeout, setLongTimeout } from "../_internal/timers.ts";
import { sseResponse } from "./_http_sse.ts";

const encoder = new TextEncoder();
const KEEP_ALIVE = encoder.encode(": keep-alive\n\n");

/** What the feed needs from the service. */
export interface StatusFeedContext {
  readonly gateway: ToolGateway;
  readonly store: InvocationStore;
  /** The invocation as the Tool API shows it (`GET /invocations/{id}` without status). */
  readonly view: (entry: StoredInvocation) => Record<string, unknown>;
  /** The gateway's monotonic clock (lease deadlines are on it). */
  readonly now: () => number;
  readonly keepAliveMs: number;
  readonly maxQueued: number;
  /** The enders of the open feeds: the service calls each when it closes. */
  readonly open: Set<() => void>;
}

/** The endpoints of every configured route, as the snapshot lists them. */
function endpointSummaries(gateway: ToolGateway, now: number): Record<string, unknown>[] {
  return [...new Set(gateway.registry.routes.values())].sort().map((endpointId) => {
    const record = gateway.registry.lookup(endpointId);
    return {
      endpoint_id: endpointId,
      state: record === undefined ? "unavailable" : "registered",
      lease_left_ms: record === undefined
        ? null
        : Math.max(0, Math.round(record.leaseDeadlineMs - now)),
      reported_state: gateway.endpointStatus(endpointId)?.state ?? null,
    };
  });
}

/** The JSON record of a store change, as the feed sends it. */
function invocationRecord(
  change: StoreChange,
  view: StatusFeedContext["view"],
): Record<string, unknown> {
  const { entry } = change;
  switch (change.kind) {
    case "created":
      return { kind: "created", invocation: view(entry) };
    case "event":
      return {
        kind: "event",
        invocation_id: entry.id,
        sequence: change.record.sequence,
        event_type: change.record.event.type,
        phase: entry.phase,
      };
    case "ended":
      return { kind: "ended", invocation_id: entry.id, phase: entry.phase };
    case "forgotten":
      return { kind: "forgotten", invocation_id: entry.id };
  }
}

/**
 * The `GET /events` response for `callerId`, or `undefined` when the store is at
 * `maxSubscribers` (the caller answers 503).
 */
export function statusFeed(context: StatusFeedContext, callerId: string): Response | undefined {
  const { gateway, store } = context;
  if (!store.admitSubscriber()) return undefined;
  let sequence = 0;
  let closed = false;
  let keepAlive: LongTimeout | undefined;
  let unwatchStore = () => {};
  let unwatchRegistry = () => {};
  let end = () => {};
  const stop = () => {
    if (closed) return;
    closed = true;
    context.open.delete(end);
    keepAlive?.clear();
    unwatchStore();
    unwatchRegistry();
    store.releaseSubscriber();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (event: string, data: unknown) => {
        if (closed) return;
        if ((controller.desiredSize ?? 0) < -context.maxQueued) {
          // This far behind: tell it once and end, rather than queue without bound.
          controller.enqueue(
            encoder.encode(
              `id: ${sequence++}\nevent: overflow\ndata: ${
                JSON.stringify({ dropped_after: context.maxQueued })
              }\n\n`,
            ),
          );
          stop();
          controller.close();
          return;
        }
        controller.enqueue(
          encoder.encode(`id: ${sequence++}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
        );
      };
      end = () => {
        stop();
        controller.close();
      };
      context.open.add(end);
      send("snapshot", {
        registry_revision: gateway.registry.revision,
        endpoints: endpointSummaries(gateway, context.now()),
        invocations: store.list(callerId).map((entry) => context.view(entry)),
      });
      unwatchStore = store.watch((change) => {
        if (change.entry.callerId === callerId) {
          send("invocation", invocationRecord(change, context.view));
        }
      });
      unwatchRegistry = gateway.watchRegistry((event) => send("registry", event));
      const arm = () => {
        keepAlive = setLongTimeout(() => {
          if (closed) return;
          controller.enqueue(KEEP_ALIVE);
          arm();
        }, context.keepAliveMs);
      };
      arm();
    },
    cancel() {
      stop();
    },
  });
  return sseResponse(stream);
}

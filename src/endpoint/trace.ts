/**
 * Spans per invocation: the tracer type a handler accepts (the part of OpenTelemetry's `Tracer`
 * it uses, so no OpenTelemetry package is imported), and {@linkcode denoTracer}, Deno's built-in
 * OpenTelemetry tracer when it is enabled.
 *
 * @module
 */

/** A span attribute value. */
export type ToolSpanAttribute = string | number | boolean;

/** The part of an OpenTelemetry `Span` a handler uses. */
export interface ToolSpan {
  /** Sets one attribute. */
  setAttribute(key: string, value: ToolSpanAttribute): unknown;
  /** Ends the span. */
  end(): void;
}

/**
 * Starts spans: an OpenTelemetry `Tracer` fits (`trace.getTracer(...)` of
 * `@opentelemetry/api`, or {@linkcode denoTracer}). The handler starts one span per admitted
 * invocation, named `forge.tool <operation>`, with the attributes `forge.endpoint_id`,
 * `forge.operation`, `forge.invocation_id`, `forge.attempt_id`, `forge.request_id`, and ends it
 * with `forge.outcome` (`succeeded`, `failed`, `cancelled`, `stopped`, `unknown` or
 * `rejected`) when the outcome is established: a Query when its provider answers, an Action or
 * Session when its terminal result is (so the span covers the execution, not only `start()`).
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import type { ToolSpan, ToolTracer } from "@forge/tool/node";
 * const ended: string[] = [];
 * const tracer: ToolTracer = {
 *   startSpan: (name) => {
 *     const span: ToolSpan = { setAttribute: () => span, end: () => void ended.push(name) };
 *     return span;
 *   },
 * };
 * tracer.startSpan("forge.tool detect").end();
 * assertEquals(ended, ["forge.tool detect"]);
 * ```
 */
export interface ToolTracer {
  /** Starts a span (OpenTelemetry's `Tracer.startSpan`). */
  startSpan(
    name: string,
    options?: { readonly attributes?: Readonly<Record<string, ToolSpanAttribute>> },
  ): ToolSpan;
}

interface DenoTelemetry {
  readonly env?: { get(name: string): string | undefined };
  readonly telemetry?: { readonly tracerProvider?: { getTracer(name: string): ToolTracer } };
}

/**
 * Deno's built-in OpenTelemetry tracer (`Deno.telemetry.tracerProvider`) named `name`, when the
 * process runs on Deno with OpenTelemetry enabled (`OTEL_DENO=true`); otherwise `undefined`
 * (Node.js, OpenTelemetry off, or no permission to read `OTEL_DENO`). Pass it as the handler's
 * `tracer`: `{ tracer: denoTracer() }`.
 *
 * @example
 * ```ts
 * import { assertEquals } from "@std/assert";
 * import { denoTracer } from "@forge/tool/node";
 * // The doc tests run without OTEL_DENO: no tracer, and the handler traces nothing.
 * assertEquals(denoTracer(), undefined);
 * ```
 */
export function denoTracer(name = "@forge/tool"): ToolTracer | undefined {
  const deno = (globalThis as { Deno?: DenoTelemetry }).Deno;
  const provider = deno?.telemetry?.tracerProvider;
  if (provider === undefined || deno?.env === undefined) return undefined;
  let enabled: string | undefined;
  try {
    enabled = deno.env.get("OTEL_DENO");
  } catch {
    return undefined;
  }
  if (enabled !== "true" && enabled !== "1") return undefined;
  return provider.getTracer(name);
}

/**
 * Starts the span of one invocation, or returns `undefined` without a tracer or when the tracer
 * throws (tracing never breaks a dispatch). Internal.
 */
export function startInvocationSpan(
  tracer: ToolTracer | undefined,
  ids: {
    readonly endpointId?: string;
    readonly operation?: string;
    readonly invocationId?: string;
    readonly attemptId?: string;
    readonly requestId?: string;
  },
): ToolSpan | undefined {
  if (tracer === undefined) return undefined;
  try {
    return tracer.startSpan(`forge.tool ${ids.operation}`, {
      attributes: {
        "forge.endpoint_id": ids.endpointId ?? "",
        "forge.operation": ids.operation ?? "",
        "forge.invocation_id": ids.invocationId ?? "",
        "forge.attempt_id": ids.attemptId ?? "",
        "forge.request_id": ids.requestId ?? "",
      },
    });
  } catch {
    return undefined;
  }
}

/** Ends an invocation span with its `forge.outcome`; a throwing span is ignored. Internal. */
export function endInvocationSpan(span: ToolSpan | undefined, outcome: string): void {
  if (span === undefined) return;
  try {
    span.setAttribute("forge.outcome", outcome);
    span.end();
  } catch {
    // Tracing never breaks a dispatch.
  }
}

/**
 * The payload of `tool.invoke.request`: the {@linkcode ToolRequest} and the
 * {@linkcode ToolContext} it carries; the handler reads an invoke request with
 * {@linkcode invokeRequestFromEnvelope}, its validation and models in one pass.
 *
 * @module
 */
import { checkToolContextFields } from "../_internal/fields.ts";
import type { JsonObject } from "../_internal/json.ts";
import { ToolContext, ToolRequest } from "../endpoint/models.ts";
import { builtInvokeRequestParts, executionKeyOf, ToolEnvelope } from "./envelope.ts";
import {
  closedFields,
  construct,
  integerMember,
  isCanonicalPayload,
  jsonField,
  modelError,
  objectAt,
} from "./_payload_rules.ts";

/**
 * The payload form of a {@linkcode ToolContext}: `tool_id`, `implementation_id`, `metadata`, and
 * `caller_id` / `deadline_ms` when present. The execution identity, endpoint and operation
 * travel in the envelope headers, never here.
 */
export function toolContextToPayload(context: ToolContext): JsonObject {
  if (!(context instanceof ToolContext)) throw new TypeError("context must be a ToolContext");
  const out: Record<string, unknown> = {
    tool_id: context.toolId,
    implementation_id: context.implementationId,
    metadata: context.metadata,
  };
  if (context.callerId !== undefined) out.caller_id = context.callerId;
  if (context.deadlineMs !== undefined) out.deadline_ms = context.deadlineMs;
  return out as JsonObject;
}

/** The payload of `tool.invoke.request`: `{arguments, context}`. */
export function invokeRequestToPayload(request: ToolRequest, context: ToolContext): JsonObject {
  if (!(request instanceof ToolRequest)) throw new TypeError("request must be a ToolRequest");
  return { arguments: request.arguments, context: toolContextToPayload(context) };
}

/** The request and context an invoke request carries. */
export interface InvokeRequestParts {
  /** The tool arguments. */
  readonly request: ToolRequest;
  /** The context, with the execution identity taken from the envelope headers. */
  readonly context: ToolContext;
}

/**
 * Decodes the {@linkcode ToolRequest} and {@linkcode ToolContext} of a `tool.invoke.request`: its
 * closed schemas, then the models built from the checked members. The errors are
 * {@linkcode validateMessageEnvelope}'s: the `ToolContext` constructor runs the context checks
 * the validation runs (`checkToolContextFields`, in its order, reported at `payload.context`), and
 * nothing before it can fail for an envelope its constructor built (the execution key's fields
 * are its checked headers, the arguments a checked JSON object). The handler reads an invoke
 * request this way, so nothing is checked twice.
 */
export function invokeRequestFromEnvelope(envelope: ToolEnvelope): InvokeRequestParts {
  if (!(envelope instanceof ToolEnvelope) || envelope.messageType !== "tool.invoke.request") {
    throw new RangeError("envelope must be tool.invoke.request");
  }
  // A factory's envelope of a request and context their constructors built: those models.
  const built = builtInvokeRequestParts(envelope);
  if (built !== undefined) return built;
  // An envelope's payload is already normalized: canonical (frozen) payloads are shared, others
  // are copied by the models.
  const payload = objectAt(envelope.payload, "payload");
  return readInvokeRequest(envelope, payload, isCanonicalPayload(envelope))!;
}

/** The members of an invoke request's payload that passed its closed schemas. */
interface InvokeRequestFields {
  readonly args: Record<string, unknown>;
  readonly context: Record<string, unknown>;
  readonly metadata: Record<string, unknown>;
  readonly callerId: unknown;
  readonly deadlineMs: unknown;
}

/** The closed schemas of an invoke request's payload, and the members they let through. */
function invokeRequestFields(payload: Record<string, unknown>): InvokeRequestFields {
  closedFields(payload, "payload", INVOKE_REQUEST_FIELDS);
  const args = objectAt(payload.arguments, "payload.arguments");
  const context = objectAt(payload.context, "payload.context");
  closedFields(context, "payload.context", CONTEXT_FIELDS, CONTEXT_OPTIONAL_FIELDS);
  const metadata = objectAt(context.metadata, "payload.context.metadata");
  const callerId = context.caller_id ?? undefined;
  const deadlineMs = integerMember(context, "deadline_ms") ?? undefined;
  return { args, context, metadata, callerId, deadlineMs };
}

/**
 * The models' checks of an invoke request without building the models. The execution key's
 * fields, endpoint_id and operation are envelope headers, checked alike; the arguments and
 * metadata are plain objects of a checked payload.
 */
function checkInvokeRequestFields(envelope: ToolEnvelope, fields: InvokeRequestFields): void {
  try {
    checkToolContextFields(
      fields.context.tool_id,
      fields.context.implementation_id,
      envelope.endpointId,
      envelope.operation,
      fields.callerId,
      fields.deadlineMs,
    );
  } catch (error) {
    throw modelError(error, "payload.context");
  }
}

/** Builds the models of an invoke request from its checked fields, with `adopt` (see jsonField). */
function buildInvokeRequest(
  envelope: ToolEnvelope,
  fields: InvokeRequestFields,
  adopt: boolean,
): InvokeRequestParts {
  const { args, context, metadata, callerId, deadlineMs } = fields;
  const request = construct(
    "payload.arguments",
    () => new ToolRequest({ arguments: jsonField(args, adopt) }),
  );
  const toolContext = construct("payload.context", () =>
    new ToolContext({
      executionKey: executionKeyOf(envelope),
      toolId: context.tool_id as string,
      implementationId: context.implementation_id as string,
      endpointId: envelope.endpointId,
      operation: envelope.operation!,
      callerId: callerId as string | undefined,
      deadlineMs: deadlineMs as number | undefined,
      metadata: jsonField(metadata, adopt),
    }));
  return { request, context: toolContext };
}

/**
 * Reads an invoke request's payload: the closed schemas, then the models' checks, building the
 * models with `adopt` (see {@linkcode jsonField}). With `build` false (validation of an envelope,
 * whose headers and payload JSON are already checked) the checks run without building the
 * models, which would only be thrown away.
 */
export function readInvokeRequest(
  envelope: ToolEnvelope,
  payload: Record<string, unknown>,
  adopt: boolean,
  build = true,
): InvokeRequestParts | undefined {
  const fields = invokeRequestFields(payload);
  if (!build) {
    checkInvokeRequestFields(envelope, fields);
    return undefined;
  }
  return buildInvokeRequest(envelope, fields, adopt);
}

const INVOKE_REQUEST_FIELDS = ["arguments", "context"];
const CONTEXT_FIELDS = ["tool_id", "implementation_id", "metadata"];
const CONTEXT_OPTIONAL_FIELDS = ["caller_id", "deadline_ms"];

// Reading a request's inputs for the HTTP service (private to src/gateway/): its path parameters,
// decoded as Forge Gateway's server decodes them, and its body: at most `maxBodyBytes` (counted as
// the bytes arrive, so a streamed body without Content-Length is cut too), within `bodyTimeoutMs`,
// parsed as one JSON object whose fields are all known, then checked with the rules of the request
// it becomes. A bad body is the caller's 400 here, never a failure of the gateway further on.
import { setLongTimeout } from "../_internal/timers.ts";
import { checkedJsonObject, requireNonEmpty, wireMessageOf } from "../_internal/fields.ts";
import { isStripBlank } from "../_internal/text.ts";
import { isFloatMember, markFloatMember } from "../_internal/json.ts";
import { ToolProtocolError } from "../endpoint/errors.ts";
import type { ToolControlCommand } from "../endpoint/constants.ts";
import { controlRequestToPayload } from "../wire/execution_payloads.ts";
import { badRequest, HttpErrorCodes, serviceError } from "./_http_errors.ts";

const INVOKE_FIELDS: ReadonlySet<string> = new Set(["arguments", "caller_id", "timeout_ms"]);
const CONTROL_FIELDS: ReadonlySet<string> = new Set(["reason"]);

/** Decodes escaped bytes as UTF-8, each maximal ill-formed subsequence as one U+FFFD. */
const lenientUtf8 = new TextDecoder("utf-8", { ignoreBOM: true });
/** A run of `%XX` escapes. */
const ESCAPES = /(?:%[0-9A-Fa-f]{2})+/g;

/**
 * A path parameter decoded as Forge Gateway's server decodes the path (`urllib.parse.unquote`):
 * each run of `%XX` escapes is read as UTF-8, a byte sequence that is not UTF-8 becoming U+FFFD,
 * and a `%` that starts no escape (a stray `%`, `%zz`) kept as written. So a malformed escape
 * names an endpoint, operation or invocation that does not exist (a 404), never a failure.
 */
function unquote(value: string): string {
  if (!value.includes("%")) return value;
  return value.replace(ESCAPES, (run) => {
    const bytes = new Uint8Array(run.length / 3);
    for (let i = 0; i < bytes.length; i++) {
      bytes[i] = Number.parseInt(run.slice(3 * i + 1, 3 * i + 3), 16);
    }
    return lenientUtf8.decode(bytes);
  });
}

/** A route's path parameters, decoded (see {@linkcode unquote}). */
export function pathParameters(
  groups: Readonly<Record<string, string | undefined>>,
): Record<string, string | undefined> {
  const params: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(groups)) {
    params[name] = value === undefined ? undefined : unquote(value);
  }
  return params;
}

/** What `JSON.parse` hands a reviver beside a primitive value: the token it was read from. */
interface TokenContext {
  readonly source?: string;
}

/**
 * Reads each number of a body as Python's `json` reads its token, which Forge Gateway's checks
 * then see: an integer token past ±(2^53 − 1) becomes a bigint, so the request's models refuse
 * it by its exact value (`JSON.parse` would round it to a nearby number; one of more than 40
 * digits is refused by a stand-in, see {@linkcode LONG_INTEGER}); an integer token `-0`
 * is the integer 0; a float token with an integral value (`1000.0`, `1e300`, `-0.0`) stays a
 * number, marked as a float (see `markFloatMember`), so `timeout_ms` refuses it as Forge Gateway
 * refuses a float, while the arguments keep it and the Wire writes it back as that float.
 */
function readNumberToken(
  this: object,
  key: string,
  value: unknown,
  context?: TokenContext,
): unknown {
  // A fraction was a float token; an integral or infinite number may have been either.
  if (typeof value !== "number" || (Number.isFinite(value) && !Number.isInteger(value))) {
    return value;
  }
  const source = context?.source;
  if (source === undefined) return value;
  if (/[.eE]/.test(source)) {
    // A float token (`1e999` stays Infinity: the arguments refuse it as not finite).
    if (Number.isFinite(value)) markFloatMember(this, key);
    return value;
  }
  // An integer token (one of 309 digits or more is Infinity to JSON.parse).
  if (Number.isSafeInteger(value)) return value === 0 ? 0 : value;
  const negative = source.charCodeAt(0) === 0x2d;
  if (source.length - (negative ? 1 : 0) <= LONG_INTEGER_DIGITS) return BigInt(source);
  // Parsing a long digit string as a bigint costs more than linear time (55 ms for a million
  // digits): a body of such tokens would hold the event loop. Any stand-in past the range is
  // refused alike.
  return negative ? -LONG_INTEGER : LONG_INTEGER;
}

/** Integer tokens of more digits than this are read as {@linkcode LONG_INTEGER}, not parsed. */
const LONG_INTEGER_DIGITS = 40;
/** The stand-in of every integer token of more than {@linkcode LONG_INTEGER_DIGITS} digits. */
const LONG_INTEGER = 10n ** BigInt(LONG_INTEGER_DIGITS);

/** A body value for a message: a bigint (see {@linkcode readNumberToken}) as its digits. */
function shown(value: unknown): string {
  if (typeof value !== "bigint") return JSON.stringify(value);
  return value >= LONG_INTEGER || value <= -LONG_INTEGER
    ? `an integer of more than ${LONG_INTEGER_DIGITS} digits`
    : String(value);
}

/** The bounds of one body read. */
export interface BodyLimits {
  readonly maxBodyBytes: number;
  readonly bodyTimeoutMs: number;
}

/** A parsed body, or the error response to send instead. */
export type BodyOutcome =
  | { readonly ok: true; readonly value: Record<string, unknown> }
  | { readonly ok: false; readonly response: Response };

const NOT_AN_OBJECT = "request body must be a JSON object";

/**
 * Reads `request`'s body as a JSON object. `allowEmpty` reads an absent or empty body as `{}`.
 * `fields` are the names the body may carry; any other is a 400 naming them, as Forge's Gateway
 * words it: "unknown request field(s): 'x'".
 */
async function readJsonObject(
  request: Request,
  limits: BodyLimits,
  fields: ReadonlySet<string>,
  allowEmpty: boolean,
): Promise<BodyOutcome> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limits.maxBodyBytes) {
    return { ok: false, response: tooLarge(limits.maxBodyBytes) };
  }
  let text: string;
  if (request.body === null) {
    text = "";
  } else {
    const read = await readLimited(request.body, limits);
    if (typeof read !== "string") return { ok: false, response: read };
    text = read;
  }
  if (text.trim() === "") {
    return allowEmpty
      ? { ok: true, value: {} }
      : { ok: false, response: badRequest(NOT_AN_OBJECT) };
  }
  let value: unknown;
  try {
    value = JSON.parse(text, readNumberToken);
  } catch {
    return { ok: false, response: badRequest(NOT_AN_OBJECT) };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { ok: false, response: badRequest(NOT_AN_OBJECT) };
  }
  const unknown = Object.keys(value).filter((key) => !fields.has(key)).sort();
  if (unknown.length > 0) {
    return {
      ok: false,
      response: badRequest(
        // Forge Gateway's words, exactly.
        `unknown request field(s): ${unknown.map((key) => `'${key}'`).join(", ")}`,
      ),
    };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

function tooLarge(maxBodyBytes: number): Response {
  return serviceError(
    HttpErrorCodes.BODY_TOO_LARGE,
    `request body is larger than ${maxBodyBytes} bytes ('maxBodyBytes'); send a smaller body`,
    false,
    { max_body_bytes: maxBodyBytes },
  );
}

/** The body as text, or the 413 / 408 / 400 response; the stream is cancelled on every failure. */
async function readLimited(
  body: ReadableStream<Uint8Array>,
  limits: BodyLimits,
): Promise<string | Response> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  let timedOut = false;
  const timer = setLongTimeout(() => {
    timedOut = true;
    reader.cancel("body timeout").catch(() => undefined);
  }, limits.bodyTimeoutMs);
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (timedOut) break;
      if (done) break;
      total += value.byteLength;
      if (total > limits.maxBodyBytes) {
        reader.cancel("body too large").catch(() => undefined);
        return tooLarge(limits.maxBodyBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (!timedOut) return badRequest(`the request body could not be read: ${error}`);
  } finally {
    timer.clear();
    try {
      reader.releaseLock();
    } catch {
      // A read still pending after a cancel: the lock goes with the stream.
    }
  }
  if (timedOut) {
    return serviceError(
      HttpErrorCodes.BODY_TIMEOUT,
      `the request body did not arrive within ${limits.bodyTimeoutMs} ms ('bodyTimeoutMs'); ` +
        `send the whole body at once`,
      true,
      { body_timeout_ms: limits.bodyTimeoutMs },
    );
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return badRequest(`${NOT_AN_OBJECT} (the body is not UTF-8)`);
  }
}

/** A checked invoke body. */
export interface InvokeBody {
  readonly args: Record<string, unknown>;
  /** The body's `caller_id`, if given. */
  readonly callerId: string | undefined;
  /** The body's `timeout_ms`, if given. */
  readonly timeoutMs: number | undefined;
}

/**
 * Reads an invoke body (`arguments`, `caller_id`, `timeout_ms`) with Forge Gateway's 400
 * messages. `tokenCaller` is the authenticated caller when tokens are configured: a body
 * `caller_id` must then name it (409 otherwise).
 */
export async function readInvokeBody(
  request: Request,
  limits: BodyLimits & { readonly maxTimeoutMs: number },
  tokenCaller: string | undefined,
): Promise<{ ok: true; value: InvokeBody } | { ok: false; response: Response }> {
  const body = await readJsonObject(request, limits, INVOKE_FIELDS, false);
  if (!body.ok) return body;
  const fail = (response: Response) => ({ ok: false as const, response });
  const given = body.value.arguments ?? {};
  if (given === null || typeof given !== "object" || Array.isArray(given)) {
    return fail(badRequest("arguments must be a JSON object"));
  }
  const callerId = body.value.caller_id;
  // Forge Gateway's `caller_id.strip()`: Python's whitespace, not `String.prototype.trim()`'s.
  if (callerId !== undefined && (typeof callerId !== "string" || isStripBlank(callerId))) {
    return fail(badRequest("caller_id must be a non-empty string when provided"));
  }
  if (tokenCaller !== undefined && callerId !== undefined && callerId !== tokenCaller) {
    return fail(serviceError(
      HttpErrorCodes.REQUEST_CONFLICT,
      `caller_id '${callerId}' is not the caller this token authenticates; omit caller_id`,
    ));
  }
  const timeout = body.value.timeout_ms;
  const max = limits.maxTimeoutMs;
  if (
    timeout !== undefined &&
    (typeof timeout !== "number" || !Number.isSafeInteger(timeout) || timeout < 1 ||
      timeout > max || isFloatMember(body.value, "timeout_ms"))
  ) {
    // A float token with an integral value is shown as Python writes that float (`1000.0`).
    const float = isFloatMember(body.value, "timeout_ms") && Number.isSafeInteger(timeout);
    return fail(badRequest(
      `timeout_ms must be a positive integer at most ${max}: got ${shown(timeout)}${
        float ? ".0" : ""
      }`,
    ));
  }
  // Then what the request's models check, in Forge Gateway's order (its ToolContext, then its
  // ToolRequest: the Wire's JSON rules on the arguments) and in their words, before the endpoint is
  // looked up: the caller's 400, not a failure of the gateway. The checked arguments are a
  // canonical copy, which the client's request takes as it is.
  if (typeof callerId === "string") {
    try {
      requireNonEmpty(callerId, "caller_id");
    } catch (error) {
      return fail(badRequest(wireMessageOf(error as Error)));
    }
  }
  const args = checkedJsonObject(given, "arguments", true);
  if (args instanceof Error) return fail(badRequest(args.message));
  return {
    ok: true,
    value: {
      args,
      callerId: callerId as string | undefined,
      timeoutMs: timeout as number | undefined,
    },
  };
}

/**
 * Reads a cancel or stop body (`reason`, optional; an empty body is `{}`) and checks it with the
 * control request's own rules and words (`controlRequestToPayload`).
 */
export async function readControlBody(
  request: Request,
  limits: BodyLimits,
  command: ToolControlCommand,
): Promise<
  { ok: true; value: { reason: string | undefined } } | { ok: false; response: Response }
> {
  const body = await readJsonObject(request, limits, CONTROL_FIELDS, true);
  if (!body.ok) return body;
  const reason = body.value.reason;
  if (reason === undefined) return { ok: true, value: { reason } };
  if (typeof reason !== "string") {
    return { ok: false, response: badRequest("reason must be a string when provided") };
  }
  try {
    controlRequestToPayload(command, reason);
  } catch (error) {
    // A blank reason is its RangeError; a lone surrogate the Wire's fault at payload.reason.
    if (error instanceof RangeError) return { ok: false, response: badRequest(error.message) };
    if (error instanceof ToolProtocolError) {
      return { ok: false, response: badRequest(`reason ${error.message}`) };
    }
    throw error;
  }
  return { ok: true, value: { reason } };
}

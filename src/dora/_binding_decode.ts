/**
 * How the Dora binding reads a request: its limits (message, request and carrier sizes), the
 * bounded decode of an inbound carrier (Arrow value or IPC bytes) with the route check ahead of
 * the payload, and the size check of a trusted request. Private to `src/dora/`.
 *
 * @module
 */
import { isArrowData, isArrowRecordBatch, isArrowTable, isArrowVector } from "apache-arrow";
import { ToolErrorCodes, ToolProtocolError } from "../endpoint/errors.ts";
import type { ToolRequestRoute } from "../handler/handler.ts";
import { optionMessage, positiveIntegerOption } from "../_internal/options.ts";
import { maxMessageBytesOption } from "../wire/codec.ts";
import type { DoraToolEndpointBindingOptions } from "./binding_options.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import { type DecodedCarrier, envelopeFromRow } from "./_carrier_rules.ts";
import { carrierMessageSizeOver } from "./_carrier_size.ts";
import { carrierToEnvelope, type ToolMessageArrowValue } from "./carrier.ts";
import { toolMessageCarrierSize } from "./carrier_size.ts";
import { decodeCarrierIpc } from "./_fast_ipc_read.ts";
import { correlatedProtocolError } from "./_binding_codec.ts";

/** Bytes kept below `maxMessageBytes` for a request, as headroom for a correlated error. */
const CORRELATED_ERROR_RESERVE_BYTES = 512;
/** The smallest `maxMessageBytes` a binding accepts (room for correlated error responses). */
const MIN_BINDING_MESSAGE_BYTES = 1024;
/** What the default `maxCarrierBytes` adds to `maxMessageBytes`. */
const DEFAULT_CARRIER_OVERHEAD_BYTES = 65536;
const IPC_BYTES_MESSAGE =
  "DoraToolEndpointBinding does not accept IPC bytes; decode them upstream " +
  "under bounded framing and decompression limits";

/** The checked limits of one binding (one frozen object, read on every message). */
export interface BindingLimits {
  /** The logical encoded-message limit of every response and event. */
  readonly maxMessageBytes: number;
  /** The logical encoded-message limit of a request (`maxMessageBytes` − 512). */
  readonly maxRequestBytes: number;
  /** The in-memory Arrow carrier (and IPC stream) limit, checked before anything is read. */
  readonly maxCarrierBytes: number;
}

/**
 * Checks `maxMessageBytes` (a positive integer of at least 1024, `RangeError`) and
 * `maxCarrierBytes` (a positive integer of at least `maxMessageBytes`, `RangeError`), in that
 * order, and returns the binding's limits. `action` names the call in an error.
 */
export function bindingLimits(
  action: string,
  options: DoraToolEndpointBindingOptions,
): BindingLimits {
  const maximum = maxMessageBytesOption(action, options.maxMessageBytes);
  if (maximum < MIN_BINDING_MESSAGE_BYTES) {
    throw new RangeError(
      optionMessage(
        action,
        "maxMessageBytes",
        `at least ${MIN_BINDING_MESSAGE_BYTES} for correlated error responses`,
        maximum,
      ),
    );
  }
  const carrierMaximum = positiveIntegerOption(
    action,
    "maxCarrierBytes",
    options.maxCarrierBytes,
    maximum + DEFAULT_CARRIER_OVERHEAD_BYTES,
  );
  if (carrierMaximum < maximum) {
    throw new RangeError(
      optionMessage(
        action,
        "maxCarrierBytes",
        `at least 'maxMessageBytes' (${maximum})`,
        carrierMaximum,
      ),
    );
  }
  return Object.freeze({
    maxMessageBytes: maximum,
    maxRequestBytes: maximum - CORRELATED_ERROR_RESERVE_BYTES,
    maxCarrierBytes: carrierMaximum,
  });
}

/** The route check run on a carrier's header columns before its payload is parsed. */
export type RouteCheck = (route: ToolRequestRoute) => void;

function checkCarrierSize(size: number, limits: BindingLimits): void {
  if (size > limits.maxCarrierBytes) {
    throw new ToolProtocolError(
      ToolErrorCodes.MESSAGE_TOO_LARGE,
      `Arrow carrier size ${size} exceeds limit ${limits.maxCarrierBytes}`,
    );
  }
}

/**
 * Reads an inbound carrier (before route trust: every failure here is raised), with the route
 * check `trust` ahead of the payload.
 */
export function requestFromArrow(
  value: unknown,
  limits: BindingLimits,
  trust: RouteCheck,
): DecodedCarrier {
  if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
    throw new TypeError(IPC_BYTES_MESSAGE);
  }
  if (
    typeof SharedArrayBuffer !== "undefined" && value instanceof SharedArrayBuffer
  ) throw new TypeError(IPC_BYTES_MESSAGE);
  if (
    isArrowRecordBatch(value) || isArrowTable(value) || isArrowVector(value) || isArrowData(value)
  ) {
    checkCarrierSize(toolMessageCarrierSize(value as ToolMessageArrowValue), limits);
  }
  return carrierToEnvelope(value, limits.maxMessageBytes, trust);
}

/**
 * Reads inbound IPC bytes with the fast codec: what decoding them with `decodeToolMessageIpc`
 * and reading the batch with {@linkcode requestFromArrow} does.
 */
export function requestFromIpc(
  bytes: unknown,
  limits: BindingLimits,
  trust: RouteCheck,
): DecodedCarrier {
  const carrier = decodeCarrierIpc(bytes, "dispatchIpc", limits.maxCarrierBytes);
  if (carrier.row === undefined) return requestFromArrow(carrier.batch, limits, trust);
  checkCarrierSize(carrier.row.carrierSize, limits);
  return envelopeFromRow(carrier.row, limits.maxMessageBytes, trust);
}

/**
 * The correlated too-large answer to a trusted request beyond `maxRequestBytes` and the error it
 * answers, or `undefined` when the request fits.
 */
export function requestTooLarge(
  decoded: DecodedCarrier,
  limits: BindingLimits,
): { readonly fallback: ToolEnvelope; readonly error: ToolProtocolError } | undefined {
  // Once the route is trusted, accepted requests keep headroom for a later correlated failure.
  const size = carrierMessageSizeOver(decoded, limits.maxRequestBytes);
  if (size === undefined) return undefined;
  const error = new ToolProtocolError(
    ToolErrorCodes.MESSAGE_TOO_LARGE,
    `message size ${size} exceeds limit ${limits.maxRequestBytes}`,
  );
  const fallback = correlatedProtocolError(
    error,
    decoded.envelope,
    limits.maxMessageBytes,
    limits.maxRequestBytes,
  );
  return { fallback, error };
}

/**
 * The logical size of a decoded carrier's envelope, checked at the end of every carrier decode,
 * and the decode options that bound it. Private to `src/dora/`.
 *
 * @module
 */
import { positiveIntegerOption } from "../_internal/options.ts";
import {
  checkMessageSize,
  envelopeHeaderBound,
  envelopeJson,
  maxMessageBytesOption,
  utf8Length,
} from "../wire/codec.ts";
import type { ToolEnvelope } from "../wire/envelope.ts";
import type { DecodedCarrier } from "./_carrier_rules.ts";
import type { ToolMessageToEnvelopeOptions } from "./carrier.ts";

/**
 * @internal The logical encoded size of a decoded carrier's envelope when it exceeds `maximum`,
 * else `undefined`. Exact: the size is `utf8Length(envelopeJson(envelope))`, computed (with the
 * encoder's checks) unless the raw `payload_json` length proves it within `maximum`.
 */
export function carrierMessageSizeOver(
  decoded: DecodedCarrier,
  maximum: number,
): number | undefined {
  const { envelope } = decoded;
  if (decoded.narrow && envelopeHeaderBound(envelope) + decoded.payloadJsonBytes <= maximum) {
    return undefined;
  }
  const size = utf8Length(envelopeJson(envelope));
  return size > maximum ? size : undefined;
}

/**
 * @internal The options of `toolMessageToEnvelope`, checked (`RangeError`): the logical
 * message limit and the optional raw `payload_json` limit.
 */
export function carrierDecodeLimits(
  options: ToolMessageToEnvelopeOptions,
): { maxMessageBytes: number; maxPayloadJsonBytes: number | undefined } {
  const action = "decode a ToolMessage";
  const maxMessageBytes = maxMessageBytesOption(action, options.maxMessageBytes);
  const maxPayloadJsonBytes = options.maxPayloadJsonBytes === undefined
    ? undefined
    : positiveIntegerOption(action, "maxPayloadJsonBytes", options.maxPayloadJsonBytes, 0);
  return { maxMessageBytes, maxPayloadJsonBytes };
}

/** @internal The end of every carrier decode: the logical size check, then the envelope. */
export function checkedCarrierEnvelope(decoded: DecodedCarrier, maximum: number): ToolEnvelope {
  const size = carrierMessageSizeOver(decoded, maximum);
  if (size !== undefined) checkMessageSize(size, maximum);
  return decoded.envelope;
}

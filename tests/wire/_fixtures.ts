// Helpers of the strict JSON suites (not a test file itself).
import { decodeEnvelope } from "../../wire.ts";
import { eventText } from "../_helpers.ts";

/** The message of an integer token or value outside the interoperable range. */
export const INT_RANGE = "integer exceeds interoperable range ±9007199254740991";

/** Decodes a tool.event whose data is the raw JSON `dataJson` and returns the decoded data. */
export function decodeData(dataJson: string): unknown {
  return decodeEnvelope(eventText(dataJson)).payload.data;
}

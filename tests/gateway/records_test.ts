// The gateway's forwarded copy (src/gateway/_records.ts `withExchange`): a payload the Wire
// decoded keeps every value the Wire accepted, float tokens beyond the integer range included,
// whichever decoder read it and whether or not the source passed its typed validation. A copy
// that threw here would leave a Dora caller unanswered (`gateway_node.route_failed`).
import { assertEquals } from "@std/assert";
import { ToolRequest } from "../../mod.ts";
import { context as helperContext } from "../_helpers.ts";
import { decodeEnvelope, encodeEnvelope, makeInvokeRequestEnvelope } from "../../wire.ts";
import { decodeToolEnvelopeIpc, encodeToolEnvelopeIpc } from "../../dora.ts";
import { withExchange } from "../../src/gateway/_records.ts";

const context = helperContext();

/** A request whose arguments hold the float tokens no model constructor accepts. */
function floatTokens(filler: string): string {
  const built = makeInvokeRequestEnvelope(
    new ToolRequest({ arguments: { big: 12345, zero: 1.5, tiny: 2.5, filler } }),
    context,
    { requestId: "request-1", endpointInstanceId: undefined },
  );
  return new TextDecoder().decode(encodeEnvelope(built))
    .replace("12345", "1e300").replace("1.5", "-0.0").replace("2.5", "1e-7");
}

Deno.test("withExchange keeps float tokens of a decoded payload (JSON and IPC decoders, validated or not)", () => {
  // A typical payload and one past 64 KiB (the decoders take other paths for large payloads).
  const sources = ["", "x".repeat(70_000)].flatMap((filler) => {
    const fromJson = decodeEnvelope(floatTokens(filler));
    return [fromJson, decodeToolEnvelopeIpc(encodeToolEnvelopeIpc(fromJson))];
  });
  for (const source of sources) {
    for (const validated of [false, true]) {
      const copy = withExchange(source, "request-1@gateway-1", "instance-1", validated);
      assertEquals(copy.requestId, "request-1@gateway-1");
      assertEquals(copy.endpointInstanceId, "instance-1");
      const text = new TextDecoder().decode(encodeEnvelope(copy));
      for (const token of ['"big":1e+300,', '"tiny":1e-07,', '"zero":-0.0}']) {
        assertEquals(text.includes(token), true, `${token} in ${text.slice(0, 200)}`);
      }
    }
  }
});

/**
 * The hidden hooks of a transport edge that frames a route's messages
 * ({@linkcode attachFramedRoute}, {@linkcode receiveFramed}): the tokens only this folder can
 * build, so a route attached or a message received through the public methods of
 * {@linkcode ToolGateway} is always an envelope, validated on receipt.
 *
 * @module
 */
import type { ToolEnvelope } from "../wire/envelope.ts";
import type { ToolClientTransport } from "../client/transport.ts";
import type { ToolGateway } from "./gateway.ts";

// The module-private tokens of attachFramedRoute and receiveFramed (the hidden third arguments of
// attachRoute and receive): nothing outside this module can build one, so a route attached or a
// message received through the public methods is always an envelope, validated on receipt.
export class RouteFraming {
  constructor(readonly frame: (envelope: ToolEnvelope, maxMessageBytes?: number) => unknown) {}
}
export class FramedMessage {
  constructor(readonly decode: (maxMessageBytes?: number) => ToolEnvelope) {}
}

// The module-private token of sendValidated (the hidden second argument of a gateway caller's
// `send`): only an edge that validated the request itself can pass it.
const VALIDATED = Object.freeze({ validated: true });

/** True when `token` is the hidden argument of {@linkcode sendValidated}. */
export function isValidatedToken(token: unknown): boolean {
  return token === VALIDATED;
}

/** `attachRoute` with its hidden third argument (see RouteFraming). */
type FramedAttach = (
  routeId: string,
  send: (frame: never) => void | Promise<void>,
  framing: RouteFraming,
) => () => void;

/** `receive` with its hidden third argument (see FramedMessage). */
type FramedReceive = (routeId: string, envelope: undefined, framed: FramedMessage) => void;

/**
 * @internal {@linkcode ToolGateway.attachRoute} for a transport edge that frames the route's
 * messages: `frame` encodes each envelope once (with the gateway's `maxMessageBytes`; a
 * `ToolProtocolError` from it answers the caller, and nothing is sent), `send` carries the
 * frame. Never exported from the package's entry points.
 */
export function attachFramedRoute<T>(
  gateway: ToolGateway,
  routeId: string,
  frame: (envelope: ToolEnvelope, maxMessageBytes?: number) => T,
  send: (frame: T) => void | Promise<void>,
): () => void {
  return (gateway.attachRoute as unknown as FramedAttach).call(
    gateway,
    routeId,
    send as (frame: never) => void | Promise<void>,
    new RouteFraming(frame),
  );
}

/**
 * @internal {@linkcode ToolGateway.receive} of a framed message: `decode` decodes and validates
 * it (given the gateway's `maxMessageBytes`); what it throws drops the message as undecodable.
 * The router does not validate the envelope a second time. Never exported from the package's
 * entry points.
 */
export function receiveFramed(
  gateway: ToolGateway,
  routeId: string,
  decode: (maxMessageBytes?: number) => ToolEnvelope,
): void {
  (gateway.receive as unknown as FramedReceive).call(
    gateway,
    routeId,
    undefined,
    new FramedMessage(decode),
  );
}

/** A gateway caller's `send` with its hidden second argument (see VALIDATED). */
type ValidatedSend = (request: ToolEnvelope, token: unknown) => void | Promise<void>;

/**
 * @internal `caller.send(request)` on a caller of {@linkcode ToolGateway.connect} for an edge
 * that decoded `request` and ran its typed validation itself: the copy the gateway forwards is
 * marked validated, so the route's encoder does not validate it a second time. Never exported
 * from the package's entry points.
 */
export function sendValidated(
  caller: ToolClientTransport,
  request: ToolEnvelope,
): void | Promise<void> {
  return (caller.send as unknown as ValidatedSend).call(caller, request, VALIDATED);
}

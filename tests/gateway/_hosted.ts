// A real endpoint handler hosted on a gateway route in process: the route's sender dispatches
// each request to the handler and feeds its answers and events back through `receive`. Used by
// the ownership, discovery and metrics tests of the router.
import type { ToolEndpointHandler } from "../../mod.ts";
import { makeRegistrationEnvelope, makeUnregisterEnvelope, type ToolEnvelope } from "../../wire.ts";
import type { ToolGateway } from "../../gateway.ts";

/** Hosts `handler` on `route` of `gateway`; `register()` registers its instance there. */
export class HostedEndpoint {
  readonly #gateway: ToolGateway;
  readonly #route: string;
  readonly handler: ToolEndpointHandler;
  readonly #detach: () => void;
  #requests = 0;
  /** Registry answers the gateway sent on the route. */
  readonly registryAnswers: ToolEnvelope[] = [];

  constructor(gateway: ToolGateway, route: string, handler: ToolEndpointHandler) {
    this.#gateway = gateway;
    this.#route = route;
    this.handler = handler;
    this.#detach = gateway.attachRoute(route, async (envelope) => {
      if (envelope.messageType === "endpoint.registry.response") {
        this.registryAnswers.push(envelope);
        return;
      }
      const answers = await handler.dispatch(envelope, {
        eventSink: (event) => gateway.receive(route, event),
      });
      for (const answer of answers) gateway.receive(route, answer);
    });
  }

  /** Registers the handler's instance (and descriptor) on the route. */
  register(): void {
    this.#gateway.receive(
      this.#route,
      makeRegistrationEnvelope(this.handler.descriptor, {
        endpointInstanceId: this.handler.endpointInstanceId,
        requestId: `register-${++this.#requests}`,
      }),
    );
  }

  /** Unregisters the handler's instance. */
  unregister(): void {
    this.#gateway.receive(
      this.#route,
      makeUnregisterEnvelope({
        endpointId: this.handler.descriptor.endpointId,
        endpointInstanceId: this.handler.endpointInstanceId,
        requestId: `unregister-${++this.#requests}`,
      }),
    );
  }

  /** Detaches the route and closes the handler. */
  async close(): Promise<void> {
    this.#detach();
    await this.handler.close({ graceMs: 0 });
  }
}

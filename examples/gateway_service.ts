/**
 * The gateway as a service: the example endpoint `robot.demo` (detect Query, move Action, policy
 * Session) runs on an embedded loopback dataflow behind a {@linkcode ToolGateway} in this
 * process, and `serveToolGatewayService` serves the Tool API over HTTP and SSE, `GET /metrics`
 * and the MCP server at `/mcp` on one port, until SIGINT or SIGTERM; then it closes everything
 * (the endpoint unregisters) and exits 0.
 *
 * Run it with `deno task gateway [--port N] [--hostname H] [--step-ms N] [--token T=caller]...`
 * (port 8080, hostname 127.0.0.1, step 200 ms; without `--token` every request is the caller
 * `anonymous`). stdout gets one line, the address it listens on (`http://127.0.0.1:8080`); the
 * log goes to stderr.
 *
 * @module
 */
import { lineLogger, type ToolLogRecord } from "../mod.ts";
import { serveToolGatewayService } from "../mcp.ts";
import { startDemoGateway } from "./mcp_demo.ts";

/** The command line, checked. */
export interface GatewayServiceArgs {
  readonly port: number;
  readonly hostname: string;
  readonly stepMs: number;
  /** token -> caller id; empty for none. */
  readonly tokens: Readonly<Record<string, string>>;
}

const START = "start the gateway service";

function bad(name: string, requirement: string, value: string | undefined): never {
  throw new RangeError(
    `Cannot ${START} as '${name}' must be ${requirement}: current value is ${
      JSON.stringify(value)
    }`,
  );
}

/** Parses `--port N`, `--hostname H`, `--step-ms N` and repeated `--token T=caller`. */
export function parseGatewayServiceArgs(args: readonly string[]): GatewayServiceArgs {
  let port = 8080;
  let hostname = "127.0.0.1";
  let stepMs = 200;
  const tokens: Record<string, string> = {};
  const integer = (name: string, value: string | undefined, min: number, max: number) => {
    const n = Number(value);
    if (value === undefined || !/^\d+$/.test(value) || n < min || n > max) {
      bad(name, `an integer in [${min}, ${max}]`, value);
    }
    return n;
  };
  for (let i = 0; i < args.length; i += 2) {
    const [name, value] = [args[i], args[i + 1]];
    if (name === "--port") port = integer(name, value, 0, 65535);
    else if (name === "--step-ms") stepMs = integer(name, value, 1, 2 ** 31 - 1);
    else if (name === "--hostname") {
      if (value === undefined || value === "") bad(name, "a hostname", value);
      hostname = value;
    } else if (name === "--token") {
      const at = value?.indexOf("=") ?? -1;
      if (value === undefined || at < 1 || at === value.length - 1) {
        bad(name, "<token>=<caller id>", value);
      }
      tokens[value.slice(0, at)] = value.slice(at + 1);
    } else {
      bad("argument", "one of --port, --hostname, --step-ms, --token", name);
    }
  }
  return { port, hostname, stepMs, tokens };
}

if (import.meta.main) {
  const args = parseGatewayServiceArgs(Deno.args);
  const encoder = new TextEncoder();
  const lines = lineLogger((_level, line) => Deno.stderr.writeSync(encoder.encode(`${line}\n`)));
  const logger = (record: ToolLogRecord) => {
    if (record.level !== "debug") lines(record);
  };
  const demo = await startDemoGateway({ stepMs: args.stepMs, logger });
  const service = serveToolGatewayService(demo.gateway, {
    port: args.port,
    hostname: args.hostname,
    tokens: Object.keys(args.tokens).length > 0 ? args.tokens : undefined,
    mcp: { definitions: [demo.definition] },
    logger,
  });
  const { hostname, port } = service.addr;
  Deno.stdout.writeSync(encoder.encode(`http://${hostname}:${port}\n`));
  logger({
    level: "info",
    event: "gateway.service_ready",
    message: `robot.demo served at http://${hostname}:${port}: Tool API (/tools, /invocations), ` +
      `/metrics, /mcp; ${
        Object.keys(args.tokens).length > 0
          ? `${Object.keys(args.tokens).length} bearer token(s) configured`
          : "no tokens: every request is the caller 'anonymous'"
      }; SIGINT or SIGTERM stops it`,
  });
  const { promise: signalled, resolve } = Promise.withResolvers<Deno.Signal>();
  const onInt = () => resolve("SIGINT");
  const onTerm = () => resolve("SIGTERM");
  Deno.addSignalListener("SIGINT", onInt);
  Deno.addSignalListener("SIGTERM", onTerm);
  const signal = await signalled;
  Deno.removeSignalListener("SIGINT", onInt);
  Deno.removeSignalListener("SIGTERM", onTerm);
  logger({ level: "info", event: "gateway.service_stopping", message: `${signal}: stopping` });
  await service.close();
  await demo.stop();
  // Nothing is left running: the process ends here by itself, exit code 0.
}

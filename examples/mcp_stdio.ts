/**
 * The example endpoint `robot.demo` served to a desktop agent over MCP stdio: a
 * {@linkcode ToolGateway} in this process, the endpoint node on a loopback dataflow, and one MCP
 * server (caller id `stdio`) on stdin/stdout. Logs go to stderr, never stdout.
 *
 * Run it with `deno task mcp [--step-ms N]` (the Action and Session step, default 200 ms).
 *
 * @module
 */
import process from "node:process";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { lineLogger } from "../mod.ts";
import { createMcpServer } from "../mcp.ts";
import { startDemoGateway } from "./mcp_demo.ts";

function stepMs(args: readonly string[]): number {
  const at = args.indexOf("--step-ms");
  if (at === -1) return 200;
  const value = Number(args[at + 1]);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new RangeError(
      `Cannot start the MCP demo as '--step-ms' must be a positive integer: current value is ${
        JSON.stringify(args[at + 1])
      }`,
    );
  }
  return value;
}

const encoder = new TextEncoder();
const logger = lineLogger((_level, line) => Deno.stderr.writeSync(encoder.encode(`${line}\n`)));
const demo = await startDemoGateway({
  stepMs: stepMs(Deno.args),
  logger: (record) => {
    if (record.level !== "debug") logger(record);
  },
});
const mcp = createMcpServer(demo.gateway, {
  callerId: "stdio",
  definitions: [demo.definition],
  logger,
});
const transport = new StdioServerTransport();
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await mcp.close();
  await demo.stop();
  Deno.exit(0);
};
transport.onclose = () => void stop();
await mcp.server.connect(transport);
Deno.stderr.writeSync(encoder.encode("forge-tool MCP stdio server ready (robot.demo)\n"));
// The agent closed stdin: shut down (the endpoint unregisters).
process.stdin.on("end", () => void stop());
Deno.addSignalListener("SIGINT", () => void stop());
Deno.addSignalListener("SIGTERM", () => void stop());

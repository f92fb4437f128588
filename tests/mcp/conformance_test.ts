// The MCP project's own conformance suite (npm:@modelcontextprotocol/conformance) against the
// Streamable HTTP handler, for the scenarios that apply to a server whose tools come from a
// Registry (the other scenarios call fixed test tools, prompts or resources of a reference server).
import { assertEquals } from "@std/assert";
import { mcpHttpHandler } from "../../mcp.ts";
import { startDemo } from "./_setup.ts";

const SCENARIOS = ["server-initialize", "ping", "tools-list"] as const;

Deno.test("mcp conformance: initialize, ping and tools-list pass", async () => {
  const demo = await startDemo();
  const handler = mcpHttpHandler(demo.gateway, {
    definitions: [demo.definition],
    logger: () => {},
  });
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    (request) => handler(request, "conformance"),
  );
  const url = `http://127.0.0.1:${server.addr.port}/mcp`;
  const outputDir = await Deno.makeTempDir();
  try {
    for (const scenario of SCENARIOS) {
      const output = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "npm:@modelcontextprotocol/conformance@0.1.16",
          "server",
          "--url",
          url,
          "--scenario",
          scenario,
          "--output-dir",
          outputDir,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(output.stdout);
      assertEquals(
        [scenario, output.success, /Passed: 1\/1, 0 failed/.test(text)],
        [scenario, true, true],
        text + new TextDecoder().decode(output.stderr),
      );
    }
  } finally {
    await Deno.remove(outputDir, { recursive: true });
    await handler.close();
    await server.shutdown();
    await demo.stop();
  }
});

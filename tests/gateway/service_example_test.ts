// `deno task gateway` (examples/gateway_service.ts) as a subprocess on port 0: it prints its
// address as the only stdout line, serves GET /tools and a Query, and exits 0 on SIGTERM.
import { assertEquals, assertThrows } from "@std/assert";
import { parseGatewayServiceArgs } from "../../examples/gateway_service.ts";

Deno.test("gateway service example: address line, GET /tools, a Query over HTTP, SIGTERM exits 0", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "--allow-read",
      "--allow-env",
      "examples/gateway_service.ts",
      "--port",
      "0",
      "--step-ms",
      "10",
      "--token",
      "secret-a=agent-a",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let stdout = "";
  while (!stdout.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    stdout += value;
  }
  const address = stdout.slice(0, stdout.indexOf("\n"));
  assertEquals(/^http:\/\/127\.0\.0\.1:\d+$/.test(address), true, stdout);
  const headers = { authorization: "Bearer secret-a" };

  const unauthorized = await fetch(`${address}/tools`);
  assertEquals(unauthorized.status, 401);
  await unauthorized.body?.cancel();
  const tools = await (await fetch(`${address}/tools`, { headers })).json();
  assertEquals(tools.data.tools.map((tool: { endpoint_id: string }) => tool.endpoint_id), [
    "robot.demo",
  ]);
  const query = await fetch(`${address}/tools/robot.demo/detect:invoke`, {
    method: "POST",
    headers,
    body: JSON.stringify({ arguments: { classes: ["cube"] } }),
  });
  assertEquals(query.status, 200);
  const result = (await query.json()).data.response.result;
  assertEquals([result.status, result.outputs], ["succeeded", {
    objects: [{ class: "cube", score: 0.9, box: [0, 20, 32, 32] }],
  }]);

  child.kill("SIGTERM");
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    stdout += chunk.value;
  }
  const status = await child.status;
  const log = await stderr;
  assertEquals(status.code, 0, log);
  assertEquals(stdout, `${address}\n`);
  // The log says where it listens, that tokens are required, and that it stopped.
  assertEquals(log.includes(`gateway Tool API on ${address}; bearer tokens required`), true, log);
  assertEquals(log.includes("1 bearer token(s) configured"), true, log);
  assertEquals(log.includes("SIGTERM: stopping"), true, log);
});

Deno.test("gateway service example: the command line is checked, errors show the value", () => {
  assertEquals(parseGatewayServiceArgs([]), {
    port: 8080,
    hostname: "127.0.0.1",
    stepMs: 200,
    tokens: {},
  });
  assertEquals(
    parseGatewayServiceArgs(["--port", "0", "--token", "t1=a", "--token", "t2=b=c"]).tokens,
    { t1: "a", t2: "b=c" },
  );
  assertThrows(
    () => parseGatewayServiceArgs(["--port", "x"]),
    RangeError,
    `Cannot start the gateway service as '--port' must be an integer in [0, 65535]: current value is "x"`,
  );
  assertThrows(
    () => parseGatewayServiceArgs(["--token", "nocaller"]),
    RangeError,
    `'--token' must be <token>=<caller id>: current value is "nocaller"`,
  );
  assertThrows(
    () => parseGatewayServiceArgs(["--verbose"]),
    RangeError,
    `'argument' must be one of --port, --hostname, --step-ms, --token: current value is "--verbose"`,
  );
});

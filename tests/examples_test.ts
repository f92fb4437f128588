import { assert, assertEquals, assertStringIncludes } from "@std/assert";

Deno.test("the README demo runs the three semantics end to end through IPC bytes and exits 0", async () => {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      "--allow-env",
      new URL("../examples/demo.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const stdout = new TextDecoder().decode(output.stdout);
  assertEquals(output.code, 0, new TextDecoder().decode(output.stderr));
  assertStringIncludes(stdout, '<- tool.invoke.response detect/detect-1 {"outcome":"completed"');
  assertStringIncludes(stdout, 'type":"executor_completed"');
  assertStringIncludes(stdout, '"status":"cancelled"},"status":"available"');
  assertStringIncludes(stdout, '"type":"stopped"');
  assertStringIncludes(stdout, "node stopped (stop)");
  // Registration: register -> accepted with revision and lease -> renewals -> unregister.
  const lines = stdout.split("\n");
  const at = (text: string) => lines.findIndex((line) => line.includes(text));
  const accepted = at("-> endpoint.registry.response register accepted (revision 1, lease 250 ms)");
  const firstQuery = at("-> tool.invoke.request detect/detect-1");
  const unregistered = at("-> endpoint.registry.response unregister accepted (revision 2)");
  assert(at("<- endpoint.register robot.demo") >= 0 && accepted > 0, stdout);
  assert(accepted < firstQuery && firstQuery < unregistered, stdout);
  const renewals = lines.filter((line) => line.includes("<- endpoint.register robot.demo")).length;
  assert(renewals >= 2, `expected at least one renewal: ${stdout}`);
  assertStringIncludes(stdout, "<- endpoint.status ready");
  assertStringIncludes(stdout, "<- endpoint.status unavailable");
  assert(!stdout.includes("[node error]"), stdout);
  // Every Action event arrives after its accepted response, numbered from 0 without gaps.
  const acceptedMove = lines.findIndex((line) =>
    line.includes("<- tool.invoke.response move/move-1")
  );
  const sequences = lines
    .map((line, index) => ({ line, index }))
    .filter(({ line }) => line.includes("<- tool.event") && line.includes("move/move-1"))
    .map(({ line, index }) => {
      assert(index > acceptedMove, "event before its response");
      return Number(/#(\d+)/.exec(line)![1]);
    });
  assertEquals(sequences, sequences.map((_, i) => i));
});

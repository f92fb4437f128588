import { assert, assertEquals, assertMatch } from "@std/assert";

/** The trace lines of one edge (`==>`, `-->`, `<--`, `<==`), in order. */
function edge(lines: readonly string[], arrow: string): string[] {
  return lines.filter((line) =>
    / ms {2}(==>|-->|<--|<==) /.test(line) && line.includes(` ${arrow} `)
  );
}

/** `[id]` of a trace line, if any. */
function requestIdOf(line: string): string | undefined {
  return /\[([^\]]+)\]/.exec(line)?.[1];
}

/** The message types and sequence numbers of `invocation`'s events on one edge. */
function eventsOf(lines: readonly string[], arrow: string, invocation: string): string[] {
  return edge(lines, arrow)
    .filter((line) => line.includes(" tool.event #") && line.includes(` ${invocation} `))
    .map((line) => {
      const [, sequence, type] = /tool\.event #(\d+) .*"type":"([a-z_]+)"/.exec(line)!;
      return `${sequence}:${type}`;
    });
}

Deno.test("the README demo: planner -> gateway -> endpoint and back, IPC bytes on both hops, exits 0", async () => {
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
  const lines = stdout.split("\n");
  const at = (text: string) => lines.findIndex((line) => line.includes(text));

  // The legend explains the four arrows before anything is traced.
  for (const arrow of ["==>  planner -> gateway", "-->  gateway -> endpoint"]) {
    assert(at(arrow) >= 0 && at(arrow) < at("== Registration"), stdout);
  }
  for (const arrow of ["<--  endpoint -> gateway", "<==  gateway -> planner"]) {
    assert(at(arrow) >= 0 && at(arrow) < at("== Registration"), stdout);
  }
  const sections = [
    "== Registration",
    "== Query",
    "== Action: arm moves",
    "== Action: a second move",
    "== Session",
    "== Latency run",
    "== Stop",
  ].map(at);
  assertEquals(sections, [...sections].sort((a, b) => a - b), stdout);
  assert(sections[0] >= 0, stdout);

  // Registration first: register -> accepted with revision and lease, before the first request;
  // the lease is renewed while the node serves; unregister last.
  const registered = at(
    "--> endpoint.registry.response register accepted (revision 1, lease 2000 ms)",
  );
  assert(at("<-- endpoint.register robot.demo instance demo-instance-1") < registered, stdout);
  assert(registered < at("==> tool.invoke.request detect/detect-1"), stdout);
  assert(edge(lines, "<--").filter((line) => line.includes("endpoint.register ")).length >= 2);
  assert(at("<-- endpoint.status ready") >= 0, stdout);

  // Every request the planner sent went through the gateway once, under the gateway's own id and
  // with the instance filled in, and its answer came back with the planner's id and no instance.
  const requests = edge(lines, "==>");
  const count = (type: string) => requests.filter((line) => line.includes(` ${type} `)).length;
  // One invoke per call (a Query, two Actions, a Session), the one status asked, one cancel, one
  // stop; result requests: at least one per Action and Session (the client may poll more).
  assertEquals(
    [count("tool.invoke.request"), count("tool.status.request"), count("tool.control.request")],
    [4, 1, 2],
    stdout,
  );
  assert(count("tool.result.request") >= 3, stdout);
  for (const request of requests) {
    const id = requestIdOf(request)!;
    const forwarded = lines.findIndex((line) =>
      line.includes(" --> ") && requestIdOf(line)?.startsWith(`${id}@gateway-`) === true
    );
    const exchange = requestIdOf(lines[forwarded])!;
    assert(lines[forwarded].includes(" @demo-instance-1 "), lines[forwarded]);
    const answered = lines.findIndex((line) =>
      line.includes(" <-- ") && requestIdOf(line) === exchange
    );
    const returned = lines.findIndex((line) => line.includes(" <== ") && requestIdOf(line) === id);
    assert(lines.indexOf(request) < forwarded && forwarded < answered && answered < returned, id);
    assert(!lines[returned].includes(" @"), lines[returned]);
    assertEquals(lines.filter((line) => requestIdOf(line) === id).length, 2, id);
    assertEquals(lines.filter((line) => requestIdOf(line) === exchange).length, 2, exchange);
  }
  assertEquals(
    edge(lines, "-->").filter((line) => line.includes(" tool.")).length,
    requests.length,
  );

  // The Action's events arrive after its acceptance, numbered from 0 without gaps, on both hops.
  const completed = [
    ...Array.from({ length: 11 }, (_, i) => `${i}:progress`),
    "11:executor_completed",
  ];
  assertEquals(eventsOf(lines, "<--", "move/move-1"), completed);
  assertEquals(eventsOf(lines, "<==", "move/move-1"), completed);
  assert(
    at("<== tool.invoke.response move/move-1") < at("<== tool.event #0 move/move-1"),
    stdout,
  );
  for (const [invocation, last] of [["move/move-2", "cancelled"], ["policy/policy-1", "stopped"]]) {
    const events = eventsOf(lines, "<==", invocation);
    assertEquals(eventsOf(lines, "<--", invocation), events);
    assertEquals(events.map((event) => event.split(":")[0]), events.map((_, i) => String(i)));
    assert(events.length >= 3 && events.at(-1)!.endsWith(`:${last}`), events.join(" "));
  }
  assertMatch(stdout, /<== tool\.result\.response move\/move-2 .*"status":"cancelled"/);
  assertMatch(stdout, /<== tool\.result\.response policy\/policy-1 .*"status":"stopped"/);

  // Shutdown: one `unavailable` status, then the unregister and its answer, then both nodes stop.
  const unavailable = edge(lines, "<--").filter((line) =>
    line.includes("endpoint.status unavailable")
  );
  assertEquals(unavailable.length, 1, stdout);
  const unregister = at("<-- endpoint.unregister robot.demo instance demo-instance-1");
  const unregistered = at("--> endpoint.registry.response unregister accepted (revision 2)");
  assert(
    at("== Stop") < at("endpoint.status unavailable") &&
      at("endpoint.status unavailable") < unregister,
    stdout,
  );
  assert(unregister < unregistered && unregistered < at("endpoint node stopped (stop)"), stdout);
  assertMatch(
    stdout,
    /endpoint node stopped \(stop\): \d+ requests, \d+ messages published, 0 errors/,
  );
  assertMatch(stdout, /gateway node stopped \(stop\): .* 0 dropped/);
  assert(!/\[(node|gateway) (warn|error)\]/.test(stdout), stdout);

  // The latency summary: one row per semantics, with the sample counts of the run.
  const table = lines.filter((line) => line.startsWith("| "));
  assertEquals(table.length, 4, stdout);
  assertMatch(
    table[0],
    /^\| semantics +\| invoke -> answered +\| cancel\/stop -> terminal event +\| event delivery +\|$/,
  );
  const sample = (n: number) => `p50 [\\d.]+ ms, p99 [\\d.]+ ms \\(n=${n}\\)`;
  assertMatch(table[1], new RegExp(`^\\| Query +\\| ${sample(20)} +\\| - +\\| - +\\|$`));
  for (const row of [table[2], table[3]]) {
    assertMatch(
      row,
      new RegExp(`^\\| (Action |Session) +\\| ${sample(10)} +\\| ${sample(10)} +\\| p50 `),
    );
  }
});

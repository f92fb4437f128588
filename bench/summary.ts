/**
 * Runs the bench suites (`deno bench --json`, one process, one run) and prints every case beside
 * its group's baseline, then a short table of the key ratios: the Wire codec against bare
 * `JSON.parse`/`JSON.stringify`, the execution ledger against a bare `Map`, a Query round trip with
 * 50,000 hung Queries pending against one with none, the fast carrier codec against apache-arrow's
 * generic path, the fast codec at 64 KiB against the Wire codec, the node round trip against the
 * sum of its parts timed alone (what the binding adds between the hops), the client's Query
 * against the same Query dispatched by hand, and the client's Query through the gateway (in
 * process, and as a Dora caller of the gateway node) against the client's Query in process, and
 * the gateway node's Query against the sum of its parts timed alone (the Query routed in process,
 * the IPC of its four hops: what the dataflows, node runners and Dora edges add). The
 * Wire, carrier, node round trip, handler dispatch and client ratios are checked against the
 * targets they are held to.
 *
 * Figures are stable by construction, not by luck: the suites run in several rounds (separate
 * `deno bench` processes, 3 by default, `--rounds=N`), so a baseline and its case alternate from
 * round to round instead of one run deciding; every ratio is computed inside its round, and the
 * table shows the median of the rounds' ratios and their spread, `(max − min) ÷ median`. A target
 * is judged on the median while the spread is at most {@linkcode UNSTABLE_SPREAD} (25%). Past it
 * (a machine busy with other work), the target is judged only when every round falls on the same
 * side of it, and otherwise reads `unstable (spread X%)`, neither met nor missed (see
 * {@linkcode verdictOf}). `--quick` runs 2 rounds with `FORGE_BENCH_QUICK=1` (suites shorten their warm-up walks),
 * for development; the cases table shows each case's median average over the rounds.
 *
 * ```sh
 * deno task bench                                  # every suite in bench/, 3 rounds
 * deno task bench --quick                          # 2 short rounds
 * deno run -A bench/summary.ts bench/ledger_bench.ts --rounds=5 --save=run.json
 * deno run -A bench/summary.ts --from=run.json     # summarise saved rounds again
 * ```
 *
 * @module
 */

interface BenchStats {
  readonly n: number;
  readonly min: number;
  readonly avg: number;
  readonly p75: number;
  readonly p99: number;
}

interface BenchRecord {
  readonly origin: string;
  readonly group: string | null;
  readonly name: string;
  readonly baseline: boolean;
  readonly results: readonly { readonly ok?: BenchStats; readonly failed?: unknown }[];
}

interface BenchReport {
  readonly runtime: string;
  readonly cpu: string;
  readonly benches: readonly BenchRecord[];
}

const SUITES = [
  "bench/wire_bench.ts",
  "bench/ledger_bench.ts",
  "bench/pending_bench.ts",
  "bench/carrier_bench.ts",
  "bench/client_bench.ts",
];
const BENCH_FLAGS = ["--v8-flags=--expose-gc", "--allow-read", "--allow-env", "--allow-ffi"];

/**
 * The widest spread of a ratio over the rounds, `(max − min) ÷ median`, at which its target is
 * still judged: on a shared 2-core machine a quiet run's ratios move by 5–15% from round to
 * round, a busy one's by 30% and more.
 */
export const UNSTABLE_SPREAD = 0.25;

/**
 * The node round trip's target against its bare floor (docs/performance.md, "Node round trip and
 * gateway hop"): the floor parses and writes the payload once; the node also checks the carrier
 * and its headers, validates the request, runs the handler (models, ledger-free Query path,
 * deadline, metrics) and builds a validated response: about 2× the floor for the codec and
 * another 2–3× for the handler.
 */
const NODE_FLOOR_TARGET = 8;

/** Runs `deno bench --json` on `files`; module output (console logs) is echoed as it was. */
async function runBenches(
  files: readonly string[],
  round: string,
  quick: boolean,
): Promise<string> {
  console.error(`running deno bench on ${files.join(", ")} (round ${round}; this takes a while)…`);
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["bench", "--json", ...BENCH_FLAGS, ...files],
    env: quick ? { FORGE_BENCH_QUICK: "1" } : {},
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    console.log(text);
    throw new Error(`deno bench failed with exit code ${output.code}`);
  }
  return text;
}

/** Splits `deno bench --json` output into what the modules printed and the report. */
function parseReport(text: string): { printed: string; report: BenchReport } {
  const start = text.search(/^\{\s*"version"/m);
  if (start < 0) throw new Error("no deno bench JSON report in the output");
  return { printed: text.slice(0, start).trimEnd(), report: JSON.parse(text.slice(start)) };
}

function formatTime(ns: number): string {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

function formatRate(ns: number): string {
  return Math.round(1e9 / ns).toLocaleString("en-US");
}

function table(rows: readonly (readonly string[])[], right: readonly boolean[]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((row) => row[c].length)));
  const line = (row: readonly string[]) =>
    "| " + row.map((cell, c) => right[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))
      .join(" | ") +
    " |";
  const rule = "|" + widths.map((w, c) => (right[c] ? "-".repeat(w + 1) + ":" : "-".repeat(w + 2)))
    .join("|") +
    "|";
  return [line(rows[0]), rule, ...rows.slice(1).map(line)].join("\n");
}

function suiteOf(record: BenchRecord): string {
  return record.origin.split("/").pop()!.replace(/_bench\.ts$/, "");
}

/** Every case with its average, rate and ratio to its group's baseline. */
function printCases(report: BenchReport): void {
  const rows: string[][] = [["suite", "group", "case", "avg", "iter/s", "× baseline"]];
  const baselines = new Map<string, number>();
  for (const record of report.benches) {
    const stats = record.results[0]?.ok;
    if (record.baseline && stats !== undefined) {
      baselines.set(`${record.origin}#${record.group}`, stats.avg);
    }
  }
  for (const record of report.benches) {
    const stats = record.results[0]?.ok;
    const base = baselines.get(`${record.origin}#${record.group}`);
    rows.push([
      suiteOf(record),
      record.group ?? "",
      record.name,
      stats === undefined ? "failed" : formatTime(stats.avg),
      stats === undefined ? "" : formatRate(stats.avg),
      stats === undefined || base === undefined
        ? ""
        : record.baseline
        ? "baseline"
        : `${(stats.avg / base).toFixed(2)}×`,
    ]);
  }
  console.log(table(rows, [false, false, false, true, true, true]));
}

/** The average time of the case of `group` whose name starts with `prefix`. */
function avg(report: BenchReport, group: string, prefix: string): number | undefined {
  const record = report.benches.find((bench) =>
    bench.group === group && bench.name.startsWith(prefix)
  );
  return record?.results[0]?.ok?.avg;
}

/** The sum of the average times of every case of `group`, or `undefined` if one is missing. */
function sumOf(report: BenchReport, group: string): number | undefined {
  const records = report.benches.filter((bench) => bench.group === group);
  let sum = 0;
  for (const record of records) {
    const stats = record.results[0]?.ok;
    if (stats === undefined) return undefined;
    sum += stats.avg;
  }
  return records.length === 0 ? undefined : sum;
}

interface KeyRatio {
  readonly suite: string;
  readonly measure: string;
  readonly value: number | undefined;
  /** How the value reads: a cost relative to the reference (lower is better) or a speed-up. */
  readonly unit: "cost" | "speed-up";
  readonly target?: RatioTarget;
}

function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a / b;
}

function keyRatios(report: BenchReport): KeyRatio[] {
  const out: KeyRatio[] = [];
  for (const size of ["typical", "64KiB"]) {
    out.push({
      suite: "wire",
      measure: `decodeEnvelope ${size} / JSON.parse(TextDecoder)`,
      value: ratio(
        avg(report, `decode ${size}`, "decodeEnvelope"),
        avg(report, `decode ${size}`, "JSON.parse"),
      ),
      unit: "cost",
      target: { atMost: 2 },
    });
    out.push({
      suite: "wire",
      measure: `encodeEnvelope ${size} / TextEncoder(JSON.stringify)`,
      value: ratio(
        avg(report, `encode ${size}`, "encodeEnvelope"),
        avg(report, `encode ${size}`, "TextEncoder"),
      ),
      unit: "cost",
      target: { atMost: 3 },
    });
  }
  out.push(
    {
      suite: "ledger",
      measure: "Action invoke+status+result / bare Map",
      value: ratio(
        avg(report, "action round trip", "dispatch"),
        avg(report, "action round trip", "bare Map"),
      ),
      unit: "cost",
      target: { atMost: 4 },
    },
    {
      suite: "ledger",
      measure: "Session invoke+stop+status+result / bare Map",
      value: ratio(
        avg(report, "session round trip", "dispatch"),
        avg(report, "session round trip", "bare Map"),
      ),
      unit: "cost",
      target: { atMost: 4 },
    },
    {
      suite: "ledger",
      measure: "duplicate invoke replay / bare Map lookup",
      value: ratio(
        avg(report, "duplicate replay", "dispatch"),
        avg(report, "duplicate replay", "bare Map"),
      ),
      unit: "cost",
    },
    {
      suite: "ledger",
      measure: "Query invoke / bare call",
      value: ratio(
        avg(report, "query invoke", "dispatch"),
        avg(report, "query invoke", "bare call"),
      ),
      unit: "cost",
      target: { atMost: 25 },
    },
    {
      suite: "pending",
      measure: "Query round trip with 50,000 hung Queries pending / with none",
      value: ratio(
        avg(report, "query round trip under load", "healthy Query with 50,000"),
        avg(report, "query round trip under load", "healthy Query with 0"),
      ),
      unit: "cost",
    },
  );
  for (const size of ["typical", "64KiB"]) {
    const decode = `carrier decode ${size}`;
    const encode = `carrier encode ${size}`;
    const roundTrip = `node round trip ${size}`;
    const typical = size === "typical";
    out.push(
      {
        suite: "carrier",
        measure: `fast vs generic: IPC → validated envelope ${size}`,
        value: ratio(avg(report, decode, "generic"), avg(report, decode, "fast")),
        unit: "speed-up",
        target: typical ? { atLeast: 5 } : undefined,
      },
      {
        suite: "carrier",
        measure: `fast vs generic: envelope → IPC ${size}`,
        value: ratio(avg(report, encode, "generic"), avg(report, encode, "fast")),
        unit: "speed-up",
        target: typical ? { atLeast: 5 } : undefined,
      },
      {
        suite: "carrier",
        measure: `fast vs generic: node round trip ${size}`,
        value: ratio(avg(report, roundTrip, "generic"), avg(report, roundTrip, "fast")),
        unit: "speed-up",
        target: typical ? { atLeast: 5 } : undefined,
      },
      {
        suite: "carrier",
        measure: `fast IPC → validated envelope ${size} / Wire decodeEnvelope`,
        value: ratio(avg(report, decode, "fast"), avg(report, decode, "Wire")),
        unit: "cost",
        target: typical ? undefined : { atMost: 1.3 },
      },
      {
        suite: "carrier",
        measure: `fast envelope → IPC ${size} / Wire encodeEnvelope`,
        value: ratio(avg(report, encode, "fast"), avg(report, encode, "Wire")),
        unit: "cost",
        target: typical ? undefined : { atMost: 1.3 },
      },
      {
        suite: "carrier",
        measure: `node round trip ${size} (dispatchIpc) / sum of its parts timed alone`,
        value: ratio(
          avg(report, roundTrip, "fast"),
          sumOf(report, `node round trip parts ${size}`),
        ),
        unit: "cost",
        target: typical ? { atMost: 1.15 } : undefined,
      },
      {
        suite: "carrier",
        measure: `node round trip ${size} (dispatchIpc) / its parts composed by hand`,
        value: ratio(avg(report, roundTrip, "fast"), avg(report, roundTrip, "composed")),
        unit: "cost",
        target: typical ? { atMost: 1.15 } : undefined,
      },
      {
        suite: "carrier",
        measure: `node round trip ${size} (dispatchIpc) / bare floor (IPC header + JSON.parse + ` +
          `call + JSON.stringify + IPC write)`,
        value: ratio(avg(report, roundTrip, "fast"), avg(report, roundTrip, "floor")),
        unit: "cost",
        target: typical ? { atMost: NODE_FLOOR_TARGET } : undefined,
      },
      {
        suite: "carrier",
        measure: `fast IPC → validated envelope ${size} / JSON.parse floor`,
        value: ratio(avg(report, decode, "fast"), avg(report, decode, "floor")),
        unit: "cost",
      },
    );
  }
  out.push(
    {
      suite: "client",
      measure: "ToolEndpointClient.query / handler.dispatch by hand",
      value: ratio(
        avg(report, "client query", "ToolEndpointClient"),
        avg(report, "client query", "handler.dispatch"),
      ),
      unit: "cost",
      target: { atMost: 1.5 },
    },
    {
      suite: "client",
      measure: "client Query over the loopback (IPC both ways) / handler.dispatch by hand",
      value: ratio(
        avg(report, "client over loopback", "ToolEndpointClient.query over the loopback"),
        avg(report, "client over loopback", "handler.dispatch"),
      ),
      unit: "cost",
    },
    {
      suite: "client",
      measure: "client Query through gateway.connect() (IPC to the provider) / client in process",
      value: ratio(
        avg(report, "client over loopback", "ToolEndpointClient.query through gateway.connect"),
        avg(report, "client query", "ToolEndpointClient"),
      ),
      unit: "cost",
    },
    {
      suite: "client",
      measure: "client Query through the gateway node (IPC both hops) / client in process",
      value: ratio(
        avg(report, "client over loopback", "ToolEndpointClient.query through the gateway node"),
        avg(report, "client query", "ToolEndpointClient"),
      ),
      unit: "cost",
      // Issue 20's gateway hop target.
      target: { atMost: 6 },
    },
    {
      suite: "client",
      measure: "client Query routed by a gateway in process (no IPC) / client in process",
      value: ratio(
        avg(report, "gateway node parts", "part: ToolEndpointClient.query routed in process"),
        avg(report, "client query", "ToolEndpointClient"),
      ),
      unit: "cost",
    },
    {
      suite: "client",
      measure: "client Query through the gateway node / its parts timed alone (the Query routed " +
        "in process + the four hops' IPC)",
      value: ratio(
        avg(report, "client over loopback", "ToolEndpointClient.query through the gateway node"),
        sumOf(report, "gateway node parts"),
      ),
      unit: "cost",
      // Issue 20: caller → gateway → provider → caller over the loopback ÷ the sum of its parts.
      target: { atMost: 1.3 },
    },
  );
  return out.filter((row) => row.value !== undefined);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** One report whose every case holds its median average over the rounds' reports. */
function medianReport(reports: readonly BenchReport[]): BenchReport {
  const averages = new Map<string, number[]>();
  const keyOf = (record: BenchRecord) => `${record.origin}#${record.group}#${record.name}`;
  for (const report of reports) {
    for (const record of report.benches) {
      const stats = record.results[0]?.ok;
      if (stats === undefined) continue;
      const list = averages.get(keyOf(record)) ?? [];
      list.push(stats.avg);
      averages.set(keyOf(record), list);
    }
  }
  return {
    ...reports[0],
    benches: reports[0].benches.map((record) => {
      const list = averages.get(keyOf(record));
      const stats = record.results[0]?.ok;
      if (list === undefined || stats === undefined) return record;
      return { ...record, results: [{ ok: { ...stats, avg: median(list) } }] };
    }),
  };
}

/** A ratio's target: the value must be at least `atLeast` (a speed-up) or at most `atMost`. */
export interface RatioTarget {
  readonly atLeast?: number;
  readonly atMost?: number;
}

/**
 * The verdict on a ratio measured in several rounds, `values`, against `target`:
 *
 * - within {@linkcode UNSTABLE_SPREAD}, the median decides: `met` or `MISSED`;
 * - past it, a round alone could decide either way, so the median does not: the target is
 *   judged only when every round falls on the same side of it (`met in every round` or `MISSED
 *   in every round`), since no choice of round would then change the verdict; rounds on both
 *   sides read `unstable (spread X%)`, neither met nor missed.
 *
 * A ratio without a target has no verdict (tests/bench_summary_test.ts holds the cases).
 */
export function verdictOf(
  values: readonly number[],
  target: RatioTarget | undefined,
): { target: string; verdict: string } {
  if (target?.atLeast === undefined && target?.atMost === undefined) {
    return { target: "", verdict: "" };
  }
  const text = target.atLeast !== undefined ? `≥ ${target.atLeast}` : `≤ ${target.atMost}`;
  const meets = (value: number) =>
    target.atLeast !== undefined ? value >= target.atLeast : value <= target.atMost!;
  const middle = median(values);
  const spread = spreadOf(values);
  if (spread <= UNSTABLE_SPREAD) return { target: text, verdict: meets(middle) ? "met" : "MISSED" };
  if (values.every(meets)) return { target: text, verdict: "met in every round" };
  if (!values.some(meets)) return { target: text, verdict: "MISSED in every round" };
  return { target: text, verdict: `unstable (spread ${(spread * 100).toFixed(0)}%)` };
}

/** The spread of a ratio over its rounds: `(max − min) ÷ median`. */
export function spreadOf(values: readonly number[]): number {
  return (Math.max(...values) - Math.min(...values)) / median(values);
}

/** Prints the key ratios' medians and spreads over `reports`; true when no target was missed. */
function printKeyRatios(reports: readonly BenchReport[]): boolean {
  const rounds = reports.map(keyRatios);
  const rows: string[][] = [["suite", "ratio", "median", "min … max", "spread", "target", ""]];
  let met = true;
  for (const row of rounds[0]) {
    const values = rounds.map((ratios) =>
      ratios.find((other) => other.suite === row.suite && other.measure === row.measure)?.value
    ).filter((value): value is number => value !== undefined);
    const middle = median(values);
    const low = Math.min(...values);
    const high = Math.max(...values);
    const spread = spreadOf(values);
    const { target, verdict } = verdictOf(values, row.target);
    if (verdict.startsWith("MISSED")) met = false;
    rows.push([
      row.suite,
      `${row.measure} (${row.unit})`,
      `${middle.toFixed(2)}×`,
      `${low.toFixed(2)} … ${high.toFixed(2)}`,
      `${(spread * 100).toFixed(0)}%`,
      target,
      verdict,
    ]);
  }
  console.log(table(rows, [false, false, true, true, true, false, false]));
  return met;
}

/** The rounds' `deno bench --json` outputs of a `--save` file (or one run's raw output). */
function savedRounds(text: string): string[] {
  return text.trimStart().startsWith("[") ? JSON.parse(text) : [text];
}

if (import.meta.main) {
  const option = (name: string) =>
    Deno.args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
  const unknown = Deno.args.filter((arg) =>
    arg.startsWith("--") && arg !== "--quick" && !/^--(?:from|save|rounds)=/.test(arg)
  );
  if (unknown.length > 0) {
    throw new TypeError(
      `Cannot run the benches as ${JSON.stringify(unknown[0])} is not an option: the options ` +
        "are --quick, --rounds=N, --save=FILE and --from=FILE",
    );
  }
  const from = option("from");
  const save = option("save");
  const quick = Deno.args.includes("--quick");
  const roundsText = option("rounds") ?? (quick ? "2" : "3");
  const roundCount = Number(roundsText);
  if (!Number.isInteger(roundCount) || roundCount < 1) {
    throw new RangeError(
      `Cannot run the benches as '--rounds' must be a positive integer: current value is ${roundsText}`,
    );
  }
  const files = Deno.args.filter((arg) => !arg.startsWith("--"));
  const texts: string[] = [];
  if (from !== undefined) texts.push(...savedRounds(await Deno.readTextFile(from)));
  else {
    for (let round = 1; round <= roundCount; round++) {
      texts.push(
        await runBenches(files.length > 0 ? files : SUITES, `${round}/${roundCount}`, quick),
      );
    }
  }
  if (save !== undefined) await Deno.writeTextFile(save, JSON.stringify(texts));
  const parsed = texts.map(parseReport);
  const reports = parsed.map(({ report }) => report);
  for (const [index, { printed }] of parsed.entries()) {
    if (printed.length > 0) console.log(`round ${index + 1}:\n${printed}\n`);
  }
  const report = reports[0];
  console.log(
    `${report.runtime} on ${report.cpu} (${navigator.hardwareConcurrency} logical cores), ` +
      `${reports.length} round${reports.length === 1 ? "" : "s"}\n`,
  );
  printCases(medianReport(reports));
  console.log(
    "\nKey ratios: the median of the rounds' ratios of average times, their range and spread " +
      "((max − min) ÷ median; cost: a ÷ b, lower is better; speed-up: generic ÷ fast, higher is " +
      `better). A target is judged on the median while the spread is at most ` +
      `${UNSTABLE_SPREAD * 100}%; past it, only when every round falls on the same side of it.\n`,
  );
  const met = printKeyRatios(reports);
  if (!met) console.log("\nSome targets were missed by median over the rounds.");
}

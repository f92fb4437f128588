/**
 * Latency under load and event-loop pauses (issue 20, "Latency under load"), measured on a
 * handler built by `defineEndpoint` and served in process, called through a
 * `ToolEndpointClient` over the in-process transport.
 *
 * 1. Invoke latency idle and while 1,000 Actions run: `N` sequential Query invokes with nothing
 *    running, then with 1,000 Actions accepted and running (each waits on its signal); the same
 *    for an Action invoke (the time to its acceptance; each measured Action is cancelled and
 *    released outside the timed span). p50/p90/p99/max of each and p99(load) ÷ p99(idle)
 *    (target ≤ 1.5). Then the 1,000 Actions are cancelled and the probe checks everything
 *    drained: no permit in use, no open invocation, no pending exchange, every function settled.
 * 2. Event-loop pauses: a timer-drift probe (a 1 ms interval recording how late each tick comes)
 *    during a soak of Query invokes at a target rate of 20,000/s for 60 s (`--quick`: 10 s),
 *    issued in batches paced by the clock (each batch is the deficit against `rate × elapsed`,
 *    issued concurrently; the driver yields to the timer queue between batches). Reports the
 *    achieved rate, the longest pause, the count of pauses over 5 ms (target: none), the heap
 *    before and after (after a forced GC when `--expose-gc` is on).
 *
 * The probe runs its measurements in a child process with `--v8-flags=--expose-gc,--trace-gc`
 * and counts the GC pauses V8 reports (over 5 ms, and the longest) beside the timer drift.
 * Absolute times depend on the machine and its load; the ratio and the pause counts are the
 * figures to compare.
 *
 * ```sh
 * deno run -A bench/load_probe.ts            # full: N = 5,000, 60 s soak
 * deno run -A bench/load_probe.ts --quick    # N = 2,000, 10 s soak
 * deno run -A bench/load_probe.ts --json     # the figures as one JSON object, last stdout line
 * ```
 *
 * @module
 */
import {
  defineAction,
  defineEndpoint,
  defineQuery,
  InProcessToolClientTransport,
  ToolEndpointClient,
  type ToolInvocation,
  type ToolLogRecord,
} from "../mod.ts";
import process from "node:process";

const RUNNING_ACTIONS = 1000;
const PAUSE_MS = 5;
const TARGET_RATE = 20_000;
const TARGET_P99_RATIO = 1.5;

interface Percentiles {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

interface LatencyFigures {
  readonly idle: Percentiles;
  readonly load: Percentiles;
  readonly p99Ratio: number;
  /**
   * The process CPU time of each invoke (all threads), idle and under load: what the invoke
   * cost, without the time the process waited for a core on a shared machine.
   */
  readonly cpuIdle: Percentiles;
  readonly cpuLoad: Percentiles;
  readonly cpuP99Ratio: number;
}

interface SoakFigures {
  readonly seconds: number;
  readonly targetRate: number;
  readonly achievedRate: number;
  readonly invokes: number;
  readonly failures: number;
  readonly ticks: number;
  readonly nominalTickMs: number;
  readonly longestPauseMs: number;
  readonly pausesOver5ms: number;
  /** Pauses over 5 ms during which the process ran on a CPU at least half the time. */
  readonly pausesOver5msOnCpu: number;
  /** The worst pauses, each with the process CPU time spent during it. */
  readonly worstPausesMs: readonly string[];
  /** The longest batch, from its first invoke to its last answer, in one macrotask turn. */
  readonly longestBatchMs: number;
  readonly heapBeforeMiB: number;
  readonly heapAfterMiB: number;
  /** The soak's span in `performance.now()` time, to pick its GC trace lines. */
  readonly windowMs: readonly [number, number];
}

interface Samples {
  readonly wall: number[];
  readonly cpu: number[];
}

interface ChildFigures {
  readonly quick: boolean;
  readonly n: number;
  readonly runningActions: number;
  readonly query: LatencyFigures;
  readonly action: LatencyFigures;
  readonly drained: Readonly<Record<string, number | boolean>>;
  readonly soak: SoakFigures;
  readonly loggerRecords: Readonly<Record<string, number>>;
}

interface GcFigures {
  readonly events: number;
  readonly over5ms: number;
  readonly longestMs: number;
  readonly totalMs: number;
  readonly kinds: Readonly<Record<string, number>>;
}

function percentiles(samples: number[]): Percentiles {
  const sorted = Float64Array.from(samples).sort();
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return {
    n: sorted.length,
    p50: round(at(0.5) * 1000),
    p90: round(at(0.9) * 1000),
    p99: round(at(0.99) * 1000),
    max: round(sorted[sorted.length - 1] * 1000),
  };
}

/** Milliseconds to microseconds (percentiles are in µs), two decimals. */
function round(value: number): number {
  return Math.round(value * 100) / 100;
}

function mib(bytes: number): number {
  return Math.round(bytes / 1024 / 1024 * 10) / 10;
}

function collect(): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc === "function") gc();
}

/**
 * A macrotask turn without timer clamping (a nested `setTimeout(0)` waits 1–4 ms): a message to
 * ourselves, so the timer probe's ticks can run between batches.
 */
function macrotaskYield(): { next: () => Promise<void>; close: () => void } {
  const channel = new MessageChannel();
  let wake: (() => void) | undefined;
  channel.port1.onmessage = () => wake?.();
  return {
    next: () =>
      new Promise<void>((resolve) => {
        wake = resolve;
        channel.port2.postMessage(0);
      }),
    close: () => channel.port1.close(),
  };
}

/** The process's CPU time (user + system, all threads) in milliseconds. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** The measurements themselves (run in the child process). */
async function measure(quick: boolean): Promise<ChildFigures> {
  const n = quick ? 2000 : 5000;
  const soakSeconds = quick ? 10 : 60;
  const records: Record<string, number> = {};
  const logger = (record: ToolLogRecord) => {
    records[record.event] = (records[record.event] ?? 0) + 1;
  };
  const endpoint = defineEndpoint({
    endpointId: "load.probe",
    logger,
    operations: {
      ping: defineQuery({ maxConcurrency: 1024 }, () => ({ ok: true })),
      hold: defineAction(
        { maxConcurrency: 4 * RUNNING_ACTIONS },
        (_arguments, { signal }) =>
          new Promise<{ held: boolean }>((resolve) => {
            if (signal.aborted) resolve({ held: false });
            else signal.addEventListener("abort", () => resolve({ held: false }), { once: true });
          }),
      ),
    },
  });
  const handler = endpoint.createHandler({ endpointInstanceId: "load-1", logger });
  const client = new ToolEndpointClient({
    transport: new InProcessToolClientTransport(handler),
    endpointId: "load.probe",
    descriptor: endpoint.descriptor,
    maxOpenInvocations: 4 * RUNNING_ACTIONS,
    maxPendingExchanges: 4096,
    timeoutMs: 60_000,
    logger,
  });

  const queryOnce = async (): Promise<number> => {
    const start = performance.now();
    const result = await client.query("ping", {});
    const elapsed = performance.now() - start;
    if (result.status !== "succeeded") throw new Error(`ping answered ${result.status}`);
    return elapsed;
  };
  const queryLatencies = async (): Promise<Samples> => {
    const samples: Samples = { wall: [], cpu: [] };
    for (let i = 0; i < n; i++) {
      const cpu = cpuMs();
      samples.wall.push(await queryOnce());
      samples.cpu.push(cpuMs() - cpu);
    }
    return samples;
  };
  const actionLatencies = async (): Promise<Samples> => {
    const samples: Samples = { wall: [], cpu: [] };
    for (let i = 0; i < n; i++) {
      const cpu = cpuMs();
      const start = performance.now();
      const invocation = await client.invoke("hold", {});
      samples.wall.push(performance.now() - start);
      samples.cpu.push(cpuMs() - cpu);
      await endAction(invocation);
    }
    return samples;
  };
  const endAction = async (invocation: ToolInvocation): Promise<void> => {
    const answer = await invocation.cancel("probe");
    if (answer.status !== "accepted") throw new Error(`cancel answered ${answer.status}`);
    const result = await invocation.result();
    if (result.status !== "cancelled") throw new Error(`hold ended ${result.status}`);
    await invocation[Symbol.asyncDispose]();
  };

  // Warm-up: the same paths, compiled.
  for (let i = 0; i < 2000; i++) await queryOnce();
  for (let i = 0; i < 500; i++) await endAction(await client.invoke("hold", {}));
  await endpoint.idle();

  collect();
  const queryIdle = await queryLatencies();
  collect();
  const actionIdle = await actionLatencies();

  const running: ToolInvocation[] = [];
  for (let i = 0; i < RUNNING_ACTIONS; i++) running.push(await client.invoke("hold", {}));
  const inUse = handler.state.permitsInUse.hold;
  if (inUse !== RUNNING_ACTIONS) throw new Error(`${inUse} Actions running, not 1000`);

  collect();
  const queryLoad = await queryLatencies();
  collect();
  const actionLoad = await actionLatencies();
  if (handler.state.permitsInUse.hold !== RUNNING_ACTIONS) {
    throw new Error("the running Actions changed during the measurement");
  }

  await Promise.all(running.map(endAction));
  await endpoint.idle();
  const state = handler.state;
  const stats = client.stats;
  const drained = {
    permitsInUse: Object.values(state.permitsInUse).reduce((a, b) => a + b, 0),
    activeQueries: Object.values(state.activeQueries).reduce((a, b) => a + b, 0),
    activeInvocations: state.activeInvocations,
    openInvocations: stats.openInvocations,
    pendingExchanges: stats.pendingExchanges,
    retainedExecutions: state.retainedExecutions,
    ok: false,
  };
  drained.ok = drained.permitsInUse === 0 && drained.activeQueries === 0 &&
    drained.activeInvocations === 0 && drained.openInvocations === 0 &&
    drained.pendingExchanges === 0;

  // One second at the soak's rate first, not measured: the soak driver's own code is compiled
  // then (a cold driver's first batches paused the loop for 5-15 ms at 0 s, before anything
  // reached a steady state), as it would have been long ago in a node serving a stream.
  await soakAt(TARGET_RATE, 1, queryOnce);
  const soak = await soakAt(TARGET_RATE, soakSeconds, queryOnce);

  await client.close();
  await handler.close();
  await endpoint.idle();
  const ratio = (a: Percentiles, b: Percentiles) => Math.round(b.p99 / a.p99 * 100) / 100;
  const figures = (idle: Samples, load: Samples): LatencyFigures => {
    const [a, b] = [percentiles(idle.wall), percentiles(load.wall)];
    const [c, d] = [percentiles(idle.cpu), percentiles(load.cpu)];
    return {
      idle: a,
      load: b,
      p99Ratio: ratio(a, b),
      cpuIdle: c,
      cpuLoad: d,
      cpuP99Ratio: ratio(c, d),
    };
  };
  return {
    quick,
    n,
    runningActions: RUNNING_ACTIONS,
    query: figures(queryIdle, queryLoad),
    action: figures(actionIdle, actionLoad),
    drained,
    soak,
    loggerRecords: records,
  };
}

/**
 * Query invokes at `rate` per second for `seconds`, in clock-paced batches, beside a 1 ms
 * interval timer that records how late each tick came.
 */
async function soakAt(
  rate: number,
  seconds: number,
  queryOnce: () => Promise<number>,
): Promise<SoakFigures> {
  // Each tick: the wall gap since the previous one and the process CPU time spent in it. A gap
  // with little CPU time is the process waiting for a core (other work on the machine); a gap
  // with CPU time is the event loop busy (our work or GC).
  // Preallocated (a 1 ms interval ticks at most once a millisecond, with room to spare): growing
  // arrays would leave their old backing stores in the old generation, so the probe itself would
  // bring on the Mark-Compact it is there to see.
  const capacity = Math.ceil(seconds * 1000 * 1.5) + 1000;
  const gapRing = new Float64Array(capacity);
  const cpuRing = new Float64Array(capacity);
  const atRing = new Float64Array(capacity);
  // Measured with the probe's own buffers already there, and again before its results are built.
  collect();
  const heapBefore = Deno.memoryUsage().heapUsed;
  let ticks = 0;
  let last = performance.now();
  let lastCpu = cpuMs();
  const probe = setInterval(() => {
    const now = performance.now();
    const cpu = cpuMs();
    if (ticks < capacity) {
      gapRing[ticks] = now - last;
      cpuRing[ticks] = cpu - lastCpu;
      atRing[ticks] = now;
      ticks++;
    }
    last = now;
    lastCpu = cpu;
  }, 1);
  const turn = macrotaskYield();
  const start = performance.now();
  const end = start + seconds * 1000;
  let issued = 0;
  let failures = 0;
  let longestBatchMs = 0;
  const maxBatch = Math.ceil(rate / 500); // at most 2 ms of the schedule in one turn
  const batch: Promise<unknown>[] = [];
  for (let now = start; now < end; now = performance.now()) {
    const due = Math.min(maxBatch, Math.floor((now - start) / 1000 * rate) - issued);
    if (due > 0) {
      batch.length = 0;
      for (let i = 0; i < due; i++) batch.push(queryOnce().catch(() => failures++));
      issued += due;
      await Promise.all(batch);
      const spent = performance.now() - now;
      if (spent > longestBatchMs) longestBatchMs = spent;
    }
    await turn.next();
  }
  const elapsed = (performance.now() - start) / 1000;
  clearInterval(probe);
  collect();
  const heapAfter = Deno.memoryUsage().heapUsed;
  const gaps = Array.from(gapRing.subarray(0, ticks));
  const cpus = cpuRing.subarray(0, ticks);
  turn.close();
  // The nominal tick is the median gap (a 1 ms interval may come every 1-4 ms); a pause is how
  // much later than that a tick came.
  const sortedGaps = Float64Array.from(gaps).sort();
  const nominal = sortedGaps[Math.floor(sortedGaps.length / 2)] ?? 1;
  const pauses = gaps.map((gap, i) => ({
    late: gap - nominal,
    cpu: cpus[i],
    at: atRing[i] - start,
  }))
    .sort((a, b) => b.late - a.late);
  const over = pauses.filter((pause) => pause.late > PAUSE_MS);
  return {
    seconds: Math.round(elapsed * 100) / 100,
    targetRate: rate,
    achievedRate: Math.round(issued / elapsed),
    invokes: issued,
    failures,
    ticks: gaps.length,
    nominalTickMs: round(nominal),
    longestPauseMs: round(pauses[0]?.late ?? 0),
    pausesOver5ms: over.length,
    pausesOver5msOnCpu: over.filter((pause) => pause.cpu >= pause.late / 2).length,
    worstPausesMs: pauses.slice(0, 5).map((pause) =>
      `${round(pause.late)} (cpu ${round(pause.cpu)}, at ${round(pause.at / 1000)} s)`
    ),
    longestBatchMs: round(longestBatchMs),
    heapBeforeMiB: mib(heapBefore),
    heapAfterMiB: mib(heapAfter),
    windowMs: [Math.floor(start), Math.ceil(start + elapsed * 1000)],
  };
}

/** Reads V8's `--trace-gc` lines: `… ms: Scavenge 5.1 (6.0) -> 4.2 (7.0) MB, 0.81 / 0.00 ms …`. */
function gcFigures(lines: readonly string[], window?: readonly [number, number]): GcFigures {
  const kinds: Record<string, number> = {};
  let events = 0;
  let over5ms = 0;
  let longestMs = 0;
  let totalMs = 0;
  for (const line of lines) {
    const match =
      /(\d+) ms: ([A-Za-z-]+(?: [A-Za-z-]+)*?)(?: \([^)]*\))? [\d.]+ \([\d.]+\) -> [\d.]+ \([\d.]+\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ ([\d.]+) ms/
        .exec(line);
    if (match === null) continue;
    // V8 stamps a line with the milliseconds since the isolate started, close to the time
    // origin of `performance.now()`.
    const at = Number(match[1]);
    if (window !== undefined && (at < window[0] || at > window[1])) continue;
    // The probe's own `gc()` calls (V8 gives "testing" as their reason), which measure the heap
    // just outside the soak's window: the two clocks differ by a few milliseconds.
    if (window !== undefined && / testing\b/.test(line)) continue;
    const pause = Number(match[3]);
    events++;
    kinds[match[2]] = (kinds[match[2]] ?? 0) + 1;
    totalMs += pause;
    if (pause > PAUSE_MS) over5ms++;
    if (pause > longestMs) longestMs = pause;
  }
  return {
    events,
    over5ms,
    longestMs: round(longestMs),
    totalMs: round(totalMs),
    kinds,
  };
}

function describe(
  figures: ChildFigures & { gc: GcFigures; soakGc: GcFigures; load: string; loadAfter: string },
): string {
  const row = (label: string, p: Percentiles) =>
    `  ${label.padEnd(8)} p50 ${p.p50} µs  p90 ${p.p90} µs  p99 ${p.p99} µs  max ${p.max} µs`;
  const block = (title: string, f: LatencyFigures) =>
    [
      `${title} (N = ${figures.n}, sequential):`,
      row("idle", f.idle),
      row("load", f.load),
      row("cpu idle", f.cpuIdle),
      row("cpu load", f.cpuLoad),
      `  p99(load) ÷ p99(idle) = ${f.p99Ratio}× (target ≤ ${TARGET_P99_RATIO}: ${
        f.p99Ratio <= TARGET_P99_RATIO ? "met" : "missed"
      }); by CPU time ${f.cpuP99Ratio}×`,
    ].join("\n");
  const s = figures.soak;
  return [
    `machine load (1, 5, 15 min): ${figures.load} before, ${figures.loadAfter} after`,
    block(`Query invoke while ${figures.runningActions} Actions run`, figures.query),
    block(
      `Action invoke (to acceptance) while ${figures.runningActions} Actions run`,
      figures.action,
    ),
    `drained after cancelling them: ${JSON.stringify(figures.drained)}`,
    `soak: ${s.invokes} Query invokes in ${s.seconds} s: ${s.achievedRate}/s (target ${s.targetRate}/s), ${s.failures} failed`,
    `  timer drift over ${s.ticks} ticks: longest pause ${s.longestPauseMs} ms, ${s.pausesOver5ms} over ${PAUSE_MS} ms (target 0: ${
      s.pausesOver5ms === 0 ? "met" : "missed"
    }), ${s.pausesOver5msOnCpu} of them on CPU; worst ${
      s.worstPausesMs.join(", ")
    } ms; nominal tick ${s.nominalTickMs} ms; longest batch ${s.longestBatchMs} ms`,
    `  heap ${s.heapBeforeMiB} MiB before, ${s.heapAfterMiB} MiB after`,
    gcLine("GC (--trace-gc) during the soak", figures.soakGc),
    gcLine("GC (--trace-gc) whole run", figures.gc),
    `logger records: ${JSON.stringify(figures.loggerRecords)}`,
  ].join("\n");
}

function gcLine(label: string, gc: GcFigures): string {
  return `${label}: ${gc.events} pauses, ${gc.over5ms} over ${PAUSE_MS} ms, longest ${gc.longestMs} ms, total ${gc.totalMs} ms ${
    JSON.stringify(gc.kinds)
  }`;
}

async function machineLoad(): Promise<string> {
  try {
    const text = await Deno.readTextFile("/proc/loadavg");
    return text.split(" ").slice(0, 3).join(" ");
  } catch {
    return "unknown";
  }
}

if (import.meta.main) {
  const quick = Deno.args.includes("--quick");
  const json = Deno.args.includes("--json");
  if (Deno.args.includes("--child")) {
    const out = Deno.args.find((arg) => arg.startsWith("--out="))!.slice("--out=".length);
    await Deno.writeTextFile(out, JSON.stringify(await measure(quick)));
  } else {
    const load = await machineLoad();
    console.error(`load probe (${quick ? "quick" : "full"}) in a child with --trace-gc…`);
    // The figures come back in a file: V8's GC trace shares stdout and may split a line.
    const out = await Deno.makeTempFile({ prefix: "load_probe_", suffix: ".json" });
    const output = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        "--allow-env",
        `--allow-write=${out}`,
        "--v8-flags=--expose-gc,--trace-gc",
        import.meta.filename ?? new URL(import.meta.url).pathname,
        "--child",
        `--out=${out}`,
        ...(quick ? ["--quick"] : []),
      ],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const lines = new TextDecoder().decode(output.stdout).split("\n");
    if (!output.success) {
      console.log(lines.slice(-20).join("\n"));
      throw new Error(`the probe's child failed with exit code ${output.code}`);
    }
    const child = JSON.parse(await Deno.readTextFile(out)) as ChildFigures;
    await Deno.remove(out);
    const figures = {
      ...child,
      gc: gcFigures(lines),
      soakGc: gcFigures(lines, child.soak.windowMs),
      load,
      loadAfter: await machineLoad(),
    };
    if (json) console.log(JSON.stringify(figures));
    else console.log(describe(figures));
  }
}

/**
 * Capacity ladder: the built bridge (`node dist/cli/main.js`, echo bot at 16 kHz so every chunk is
 * resampled twice), the bare `ws` echo holding audio as the bridge's echo bot does (`echo-delayed`) and
 * the bare echo, each under N concurrent 8 kHz slin calls, binary and base64. A rung passes with no
 * failed calls, no lost markers, >= 98 % audio back and round-trip p99 <= the low-load p50 + 20 ms.
 *
 *   npm run build && npm run bench:capacity -- [--ladder 200,300,400,500,600,700,800] [--seconds 20]
 *     [--encodings binary,base64] [--targets bridge,echo-delayed,echo] [--procs 1] [--stop-after K]
 *     [--pin [--pin-cpus 1,0]] [--cpu-prof DIR] [--json FILE]
 *
 * Targets: `bridge` (its defaults), `bridge-wN` (DSP_WORKERS=N), `echo-delayed` (the bare echo holding
 * every frame ECHO_DELAY_MS, default 200, on the bridge's pacing loop: the transport's cost of holding
 * audio, apart from the bridge's own work) and `echo`. Every target runs with the bridge's V8 flags
 * (src/cli/node-flags.ts), so all are measured on the same runtime settings, but `echo-delayed-v8`
 * (echo-delayed on V8's defaults).
 *
 * `--pin` puts the server under test on one core (`taskset -c 1`, so all its threads) and this process
 * with its load generators on the other (`taskset -a -p -c 0`); each rung reads every thread's affinity
 * back with `taskset -p` and stops the run if one strayed. `--cpu-prof DIR` runs bridge targets under
 * `node --cpu-prof` (bench/cpu-profile.ts summarises the files).
 *
 * The targets take turns rung by rung, so all are measured in the same minutes; `--stop-after K` ends a
 * target's ladder after K failed rungs in a row. Per rung: CPU ms per call-second of the server, split
 * into its main thread, its DSP workers and the rest (from /proc/<pid>/task/<tid>/stat), and RSS per call;
 * at the end, each bridge target against echo-delayed as issue 16's goals state them.
 */
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import { pinProcess } from '../src/load/pin.js';
import type { LoadReport } from '../src/load/report.js';
import { parseCapacityArgs } from './capacity-args.js';
import { type BenchContext, echoDelayFromEnv, passes, type RungReport, runRung } from './capacity-lib.js';

const args = parseCapacityArgs(process.argv.slice(2), cpus().length);
const ctx: BenchContext = {
  pin: args.pin,
  procs: args.procs,
  echoDelayMs: echoDelayFromEnv(process.env.ECHO_DELAY_MS),
  cpuProfDir: args.cpuProfDir,
};
// This process and every load generator it forks from now on run on the load core.
if (args.pin !== undefined) await pinProcess(process.pid, args.pin.load);

const results = {
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    date: new Date().toISOString(),
  },
  command: `npm run bench:capacity -- ${process.argv.slice(2).join(' ')}`,
  pin: args.pin ?? null,
  ladder: args.ladder,
  seconds: args.seconds,
  procs: args.procs,
  echoDelayMs: ctx.echoDelayMs,
  /** The V8 flags every target ran with (echo-delayed-v8: none). */
  nodeFlags: BRIDGE_NODE_FLAGS,
  runs: [] as unknown[],
  goals: [] as unknown[],
};
const summary: string[] = [];
const say = (line: string) => {
  process.stderr.write(`${line}\n`);
  summary.push(line);
};

interface Ladder {
  target: string;
  lowP50: number | null;
  low: LoadReport;
  capacity: number;
  rungs: (RungReport & { pass: boolean })[];
  /** Failed rungs in a row; with --stop-after K, the ladder ends at K. */
  failsInRow: number;
}

const f = (v: number | undefined, digits = 2) => (v === undefined ? '?' : v.toFixed(digits));

function rungLine(run: Ladder, encoding: string, r: RungReport, ok: boolean): string {
  const s = r.server;
  const th = s?.threads;
  return (
    `${run.target.padEnd(12)} ${encoding.padEnd(6)} ${String(r.calls).padStart(5)} calls: ${ok ? 'pass' : 'FAIL'} ` +
    `rtt p50 ${r.roundTripMs.p50} p99 ${r.roundTripMs.p99} ms (low-load p50 ${run.lowP50}), lost ${r.markers.lost}, ` +
    `back ${r.audioReturnedPct}%, failed ${r.failed}, cpu ${s?.cpuPctOfCore ?? '?'}% ` +
    `(${f(s?.cpuMsPerCallSecond)} ms/call-s: main ${f(th?.main)} workers ${f(th?.workers)} other ${f(th?.other)}), ` +
    `rss/call ${r.rssPerCallKb ?? '?'} KB, gen cpu ${r.generator.cpuPctOfCore}%, load avg ${r.loadAvg1 ?? '?'}, cpu pressure ${r.cpuPressure10 ?? '?'}%`
  );
}

/**
 * Each bridge target against echo-delayed in the same run: issue 16's three goals. A ladder that visits
 * 200 calls more than once (`--ladder 200,200,200`) gives rounds: the i-th 200-call rung of each target,
 * measured in the same minutes. One round's CPU ratio moves by 0.1-0.3 from the next on a shared machine
 * (bench/README.md), so the CPU goal reads all of them: the targets' CPU summed over the rounds, one
 * ratio; each round's is printed beside it. The p99 goal reads the worst round.
 */
function goals(runs: Ladder[], encoding: string): void {
  const ref = runs.find((r) => r.target === 'echo-delayed');
  if (ref === undefined) return;
  const calls = 200;
  const at = (run: Ladder) => run.rungs.filter((r) => r.calls === calls);
  for (const run of runs.filter((r) => r.target.startsWith('bridge'))) {
    const a = at(run);
    const b = at(ref);
    const rounds: { p99Diff: number | undefined; cpuA?: number; cpuB?: number; cpuRatio?: number }[] = [];
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      // The report's p99 is null when no marker came back (src/load/report.ts): no difference then.
      const pa: number | null = a[i]!.roundTripMs.p99;
      const pb: number | null = b[i]!.roundTripMs.p99;
      const p99Diff = pa === null || pb === null ? undefined : pa - pb;
      const cpuA = a[i]!.server?.cpuMsPerCallSecond;
      const cpuB = b[i]!.server?.cpuMsPerCallSecond;
      // A rung without a CPU reading still counts for the p99 goal.
      if (cpuA === undefined || cpuB === undefined || !(cpuB > 0)) rounds.push({ p99Diff });
      else rounds.push({ p99Diff, cpuA, cpuB, cpuRatio: cpuA / cpuB });
    }
    const withCpu = rounds.filter((r) => r.cpuRatio !== undefined);
    const sum = (k: 'cpuA' | 'cpuB') => withCpu.reduce((t, r) => t + r[k]!, 0);
    const cpuRatio = withCpu.length > 0 ? sum('cpuA') / sum('cpuB') : undefined;
    const diffs = rounds.flatMap((r) => (r.p99Diff === undefined ? [] : [r.p99Diff]));
    // Every round must have its p99: one without (nothing came back) leaves the goal unread ('?').
    const p99Diff = diffs.length > 0 && diffs.length === rounds.length ? Math.max(...diffs) : undefined;
    const capRatio = ref.capacity > 0 ? run.capacity / ref.capacity : undefined;
    const met = (ok: boolean | undefined) => (ok === undefined ? '?' : ok ? 'met' : 'not met');
    results.goals.push({ target: run.target, encoding, calls, cpuRatio, capRatio, p99Diff, rounds });
    const over =
      withCpu.length < 2
        ? ''
        : ` over ${withCpu.length === rounds.length ? '' : `${withCpu.length} of `}${rounds.length} rounds`;
    const each =
      withCpu.length > 1
        ? `rounds: ${withCpu.map((r) => `${f(r.cpuA, 3)}/${f(r.cpuB, 3)} = ${f(r.cpuRatio)}x`).join(', ')}; `
        : '';
    say(
      `${run.target} / echo-delayed, ${encoding}: CPU per call-second at ${calls} calls ${f(cpuRatio)}x${over} ` +
        `(${each}goal <= 1.2x: ${met(cpuRatio === undefined ? undefined : cpuRatio <= 1.2)}), ` +
        `capacity ${run.capacity}/${ref.capacity} = ${f(capRatio)}x (goal >= 0.85x: ${met(capRatio === undefined ? undefined : capRatio >= 0.85)}), ` +
        `p99 at ${calls} calls ${p99Diff === undefined ? '?' : `${p99Diff >= 0 ? '+' : ''}${p99Diff.toFixed(1)}`} ms` +
        `${rounds.length > 1 ? ' in the worst round' : ''} ` +
        `(goal <= +5 ms: ${met(p99Diff === undefined ? undefined : p99Diff <= 5)})`,
    );
  }
}

for (const encoding of args.encodings) {
  // Rung by rung, every target in turn: all are measured in the same minutes of a machine whose speed
  // drifts (bench/README.md), rather than one ladder after the other.
  const runs: Ladder[] = [];
  for (const target of args.targets) {
    const low = await runRung(target, encoding, args.lowCalls, Math.min(10, args.seconds), ctx);
    runs.push({ target, lowP50: low.roundTripMs.p50, low, capacity: 0, rungs: [], failsInRow: 0 });
  }
  for (const calls of args.ladder) {
    for (const run of runs) {
      if (args.stopAfter > 0 && run.failsInRow >= args.stopAfter) continue;
      const r = await runRung(run.target, encoding, calls, args.seconds, ctx);
      const ok = passes(r, run.lowP50);
      if (ok && calls > run.capacity) run.capacity = calls;
      run.failsInRow = ok ? 0 : run.failsInRow + 1;
      run.rungs.push({ ...r, pass: ok });
      say(rungLine(run, encoding, r, ok));
    }
  }
  for (const run of runs) {
    results.runs.push({
      target: run.target,
      encoding,
      lowLoad: run.low,
      capacity: run.capacity,
      rungs: run.rungs,
    });
    say(`${run.target} ${encoding}: capacity ${run.capacity} calls`);
  }
  goals(runs, encoding);
}
process.stdout.write(`${summary.join('\n')}\n`);
if (args.json !== undefined) await writeFile(args.json, `${JSON.stringify(results, null, 2)}\n`);

/**
 * The noise suppressor's cost (docs/denoise.md): the built bridge (`builtin:echo` at 16 kHz, 8 kHz slin
 * callers, every caller chunk through the suppressor with DENOISE=true) in each setup, inline
 * (DSP_WORKERS=0) and with one worker, with and without the suppressor, taking turns rung by rung.
 *
 *   npm run build && npm run bench:denoise -- [--setups w0,w1] [--cpu-calls 40] [--rounds 1]
 *     [--ladder 20,40,60,80,100,120,140,160] [--seconds 15] [--stop-after 2] [--unpinned]
 *     [--pin-cpus 1,0] [--json FILE]
 *
 * Two parts, both printed:
 * - CPU: the server's CPU per call-second (and by thread: main, DSP workers, the rest) at `--cpu-calls`
 *   calls, for every setup with and without the suppressor, `--rounds` times, in turns: the suppressor's
 *   cost is the difference read within the same minutes.
 * - Capacity: for every setup with the suppressor, the largest rung of `--ladder` it carries with nothing
 *   lost (no failed or dropped call, no lost marker, >= 98 % of the audio back) and the pacing p99 (the
 *   inter-arrival of the audio back at the callers) at most 25 ms.
 *
 * The server is pinned to one core and the load to the other (bench/README.md, "Capacity ladder"),
 * unless `--unpinned`: then the kernel schedules both over both cores, which is what a worker needs to
 * take work off the main thread's core (the DSP_WORKERS default with the suppressor is read there).
 */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { parsePinCpus, pinProcess } from '../src/load/pin.js';
import { type BenchContext, echoDelayFromEnv, type RungReport, runRung } from './capacity-lib.js';

const { values } = parseArgs({
  options: {
    setups: { type: 'string', default: 'w0,w1' },
    'cpu-calls': { type: 'string', default: '40' },
    rounds: { type: 'string', default: '1' },
    ladder: { type: 'string', default: '20,40,60,80,100,120,140,160' },
    seconds: { type: 'string', default: '15' },
    'stop-after': { type: 'string', default: '2' },
    unpinned: { type: 'boolean', default: false },
    'pin-cpus': { type: 'string', default: '1,0' },
    json: { type: 'string' },
  },
});
const ints = (option: string, raw: string, min: number) => {
  const n = raw.split(',').map((s) => (/^\d+$/.test(s.trim()) ? Number(s) : Number.NaN));
  if (n.some((v) => !Number.isSafeInteger(v) || v < min))
    throw new Error(`--${option} takes whole numbers >= ${min}, comma-separated, got ${JSON.stringify(raw)}`);
  return n;
};
const setups = values.setups.split(',').map((s) => {
  const m = /^w(\d{1,2})$/.exec(s.trim());
  if (m === null)
    throw new Error(`--setups takes wN (DSP_WORKERS=N), comma-separated, got ${JSON.stringify(s)}`);
  return Number(m[1]);
});
const [cpuCalls] = ints('cpu-calls', values['cpu-calls'], 0);
const [rounds] = ints('rounds', values.rounds, 0);
const ladder = ints('ladder', values.ladder, 1);
const [seconds] = ints('seconds', values.seconds, 1);
const [stopAfter] = ints('stop-after', values['stop-after'], 0);
const pin = values.unpinned ? undefined : parsePinCpus(values['pin-cpus'], cpus().length);
const ctx: BenchContext = { pin, procs: 1, echoDelayMs: echoDelayFromEnv(process.env.ECHO_DELAY_MS) };
if (pin !== undefined) await pinProcess(process.pid, pin.load);

const DENOISE = { DENOISE: 'true' };
const f = (v: number | null | undefined, digits = 2) =>
  v === undefined || v === null ? '?' : v.toFixed(digits);
const lines: string[] = [];
const say = (line: string) => {
  process.stderr.write(`${line}\n`);
  lines.push(line);
};

/** The pacing and loss rule of a rung with the suppressor. */
function carries(r: RungReport): boolean {
  const p99 = r.interArrivalMs.p99;
  return (
    r.failed === 0 &&
    r.dropped === 0 &&
    r.markers.lost === 0 &&
    r.audioReturnedPct >= 98 &&
    p99 !== null &&
    p99 <= 25
  );
}

function describeRung(label: string, r: RungReport): string {
  const s = r.server;
  const th = s?.threads;
  return (
    `${label.padEnd(22)} ${String(r.calls).padStart(4)} calls: cpu ${f(s?.cpuMsPerCallSecond)} ms/call-s ` +
    `(main ${f(th?.main)} workers ${f(th?.workers)} other ${f(th?.other)}; ${s?.cpuPctOfCore ?? '?'}% of a core), ` +
    `pacing p50 ${f(r.interArrivalMs.p50, 1)} p99 ${f(r.interArrivalMs.p99, 1)} ms, rtt p99 ${f(r.roundTripMs.p99, 1)} ms, ` +
    `lost ${r.markers.lost}, failed ${r.failed}, back ${r.audioReturnedPct}%; ` +
    `load avg ${r.loadAvg1 ?? '?'}, cpu pressure ${r.cpuPressure10 ?? '?'}%`
  );
}

const name = (w: number) => `bridge-w${w}`;
const label = (w: number, denoise: boolean) => `DSP_WORKERS=${w}${denoise ? ' denoise' : ''}`;

interface CpuRow {
  round: number;
  workers: number;
  denoise: boolean;
  report: RungReport;
}
const cpuRows: CpuRow[] = [];
say(
  `machine: ${cpus().length} cores (${cpus()[0]?.model}), load avg ${loadavg()[0]!.toFixed(2)} at the start; ` +
    (pin === undefined ? 'unpinned' : `server on core ${pin.server}, load on core ${pin.load}`),
);
for (let round = 1; round <= rounds! && cpuCalls! > 0; round++) {
  for (const w of setups) {
    for (const denoise of [false, true]) {
      const r = await runRung(name(w), 'binary', cpuCalls!, seconds!, ctx, denoise ? { env: DENOISE } : {});
      cpuRows.push({ round, workers: w, denoise, report: r });
      say(`cpu round ${round} ${describeRung(label(w, denoise), r)}`);
    }
  }
}

const sum = (rows: CpuRow[], k: 'total' | 'main' | 'workers' | 'other') =>
  rows.reduce((t, r) => {
    const s = r.report.server;
    const v = k === 'total' ? s?.cpuMsPerCallSecond : s?.threads?.[k];
    return t + (v ?? Number.NaN);
  }, 0) / rows.length;
const cpuSummary: Record<string, unknown>[] = [];
for (const w of setups) {
  const plain = cpuRows.filter((r) => r.workers === w && !r.denoise);
  const clean = cpuRows.filter((r) => r.workers === w && r.denoise);
  if (plain.length === 0 || clean.length === 0) continue;
  const row = {
    workers: w,
    calls: cpuCalls,
    plain: { total: sum(plain, 'total'), main: sum(plain, 'main'), workers: sum(plain, 'workers') },
    denoise: { total: sum(clean, 'total'), main: sum(clean, 'main'), workers: sum(clean, 'workers') },
  };
  cpuSummary.push(row);
  say(
    `CPU per call-second at ${cpuCalls} calls, DSP_WORKERS=${w} (mean of ${plain.length} round(s)): ` +
      `${f(row.plain.total)} ms plain, ${f(row.denoise.total)} ms denoised, the suppressor ${f(row.denoise.total - row.plain.total)} ms ` +
      `(main thread ${f(row.plain.main)} -> ${f(row.denoise.main)}, workers ${f(row.plain.workers)} -> ${f(row.denoise.workers)})`,
  );
}

interface Ladder {
  workers: number;
  capacity: number;
  /** The largest rung with nothing lost, whatever its pacing: on a shared machine the p99 rule fails first. */
  lossless: number;
  failsInRow: number;
  rungs: (RungReport & { pass: boolean })[];
}
const ladders: Ladder[] = setups.map((workers) => ({
  workers,
  capacity: 0,
  lossless: 0,
  failsInRow: 0,
  rungs: [],
}));
const lossless = (r: RungReport) =>
  r.failed === 0 && r.dropped === 0 && r.markers.lost === 0 && r.audioReturnedPct >= 98;
for (const calls of ladder) {
  for (const l of ladders) {
    if (stopAfter! > 0 && l.failsInRow >= stopAfter!) continue;
    const r = await runRung(name(l.workers), 'binary', calls, seconds!, ctx, { env: DENOISE });
    const ok = carries(r);
    if (ok && calls > l.capacity) l.capacity = calls;
    if (lossless(r) && calls > l.lossless) l.lossless = calls;
    l.failsInRow = ok ? 0 : l.failsInRow + 1;
    l.rungs.push({ ...r, pass: ok });
    say(`ladder ${ok ? 'pass' : 'FAIL'} ${describeRung(label(l.workers, true), r)}`);
  }
}
for (const l of ladders)
  say(
    `capacity with the suppressor, DSP_WORKERS=${l.workers}${pin === undefined ? ', unpinned' : ', pinned'}: ` +
      `${l.capacity} calls (nothing lost, pacing p99 <= 25 ms); ${l.lossless} with nothing lost, whatever the pacing`,
  );

process.stdout.write(`${lines.join('\n')}\n`);
if (values.json !== undefined)
  await writeFile(
    values.json,
    `${JSON.stringify(
      {
        machine: {
          cpus: cpus().length,
          model: cpus()[0]?.model,
          node: process.version,
          date: new Date().toISOString(),
        },
        command: `npm run bench:denoise -- ${process.argv.slice(2).join(' ')}`,
        pin: pin ?? null,
        seconds,
        cpu: { calls: cpuCalls, rows: cpuRows, summary: cpuSummary },
        capacity: ladders,
      },
      null,
      2,
    )}\n`,
  );

/**
 * The DSP_WORKERS default (issue 16): the built bridge pinned to one core (the load generator on the
 * other), with DSP_WORKERS=0 (inline) and DSP_WORKERS=1, at 200 and 400 calls, taking turns, for a few
 * rounds. It prints the main thread's own CPU per call-second (tid == pid, from /proc) for each, with
 * the DSP workers' and the other threads'. A worker default is worth keeping only if it lowers the main
 * thread's CPU per call.
 *
 *   npm run build && npm run bench:worker-default -- [--calls 200,400] [--workers 0,1] [--rounds 3]
 *     [--seconds 20] [--pin-cpus 1,0] [--json FILE]
 */
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { parsePinCpus, pinProcess } from '../src/load/pin.js';
import { type BenchContext, echoDelayFromEnv, type RungReport, runRung } from './capacity-lib.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '200,400' },
    workers: { type: 'string', default: '0,1' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '20' },
    'pin-cpus': { type: 'string', default: '1,0' },
    json: { type: 'string' },
  },
});
const ints = (option: string, raw: string) => {
  const n = raw.split(',').map((s) => (/^\d+$/.test(s.trim()) ? Number(s) : Number.NaN));
  if (n.some((v) => !Number.isSafeInteger(v)))
    throw new Error(`--${option} takes whole numbers, comma-separated, got ${JSON.stringify(raw)}`);
  return n;
};
const callsList = ints('calls', values.calls);
const workersList = ints('workers', values.workers);
const [rounds] = ints('rounds', values.rounds);
const [seconds] = ints('seconds', values.seconds);
const pin = parsePinCpus(values['pin-cpus'], cpus().length);
const ctx: BenchContext = { pin, procs: 1, echoDelayMs: echoDelayFromEnv(process.env.ECHO_DELAY_MS) };
await pinProcess(process.pid, pin.load);

interface Row {
  round: number;
  workers: number;
  calls: number;
  total: number | undefined;
  main: number | undefined;
  dspWorkers: number | undefined;
  other: number | undefined;
  p50: number | null;
  p99: number | null;
  lost: number;
  report: RungReport;
}
const rows: Row[] = [];
const f = (v: number | undefined) => (v === undefined ? '?' : v.toFixed(2));

for (let round = 1; round <= rounds!; round++) {
  for (const calls of callsList) {
    for (const workers of workersList) {
      const r = await runRung(`bridge-w${workers}`, 'binary', calls, seconds!, ctx);
      const th = r.server?.threads;
      const row: Row = {
        round,
        workers,
        calls,
        total: r.server?.cpuMsPerCallSecond,
        main: th?.main,
        dspWorkers: th?.workers,
        other: th?.other,
        p50: r.roundTripMs.p50,
        p99: r.roundTripMs.p99,
        lost: r.markers.lost,
        report: r,
      };
      rows.push(row);
      process.stderr.write(
        `round ${round} DSP_WORKERS=${workers} ${calls} calls: main ${f(row.main)} workers ${f(row.dspWorkers)} ` +
          `other ${f(row.other)} total ${f(row.total)} ms/call-s; rtt p50 ${row.p50} p99 ${row.p99} ms, lost ${row.lost}; ` +
          `load avg ${r.loadAvg1 ?? '?'}, cpu pressure ${r.cpuPressure10 ?? '?'}%\n`,
      );
    }
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const lines = [
  'calls | DSP_WORKERS | main thread ms/call-s (per round; median) | workers | other | total | p99 ms',
];
for (const calls of callsList) {
  for (const workers of workersList) {
    const mine = rows.filter((r) => r.calls === calls && r.workers === workers);
    const col = (k: 'main' | 'dspWorkers' | 'other' | 'total') =>
      median(mine.map((r) => r[k]).filter((v): v is number => v !== undefined));
    lines.push(
      `${calls} | ${workers} | ${mine.map((r) => f(r.main)).join(', ')}; ${f(col('main'))} | ${f(col('dspWorkers'))} | ` +
        `${f(col('other'))} | ${f(col('total'))} | ${median(mine.flatMap((r) => r.p99 ?? [])).toFixed(1)}`,
    );
  }
}
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
        command: `npm run bench:worker-default -- ${process.argv.slice(2).join(' ')}`,
        pin,
        seconds,
        rows,
      },
      null,
      2,
    )}\n`,
  );

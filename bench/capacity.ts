/**
 * Capacity ladder: the bridge (built, `node dist/cli/main.js`, echo bot at 16 kHz so every chunk is
 * resampled twice) and a bare `ws` echo server, each under 250 … 1250 concurrent 8 kHz slin calls, binary
 * and base64, on this machine with the load generator beside them. A rung passes with no failed calls,
 * no lost markers, >= 98 % audio back and round-trip p99 <= the low-load p50 + 20 ms.
 *
 *   npm run build && npm run bench:capacity -- [--ladder 250,500,750,1000,1250] [--seconds 20]
 *     [--encodings binary,base64] [--targets bridge,echo[,echo-delayed]] [--procs 1] [--stop-after K]
 *     [--json FILE]
 *
 * `echo-delayed` is the bare echo holding every frame as long as the bridge's echo bot does
 * (ECHO_DELAY_MS, default 200) on the bridge's pacing loop: the transport's cost of holding audio,
 * apart from the bridge's own work.
 *
 * The targets take turns rung by rung, so both are measured in the same minutes; `--stop-after K`
 * ends a target's ladder after K failed rungs in a row.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { generateTone } from '../src/audio/tone.js';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import { asBackground } from '../src/load/markers.js';
import { forkChild, orchestrate, sampleServer } from '../src/load/orchestrator.js';
import { buildReport, type LoadReport } from '../src/load/report.js';
import type { RunOptions } from '../src/load/runner.js';

const { values } = parseArgs({
  options: {
    ladder: { type: 'string', default: '250,500,750,1000,1250' },
    seconds: { type: 'string', default: '20' },
    encodings: { type: 'string', default: 'binary,base64' },
    targets: { type: 'string', default: 'bridge,echo' },
    procs: { type: 'string', default: '1' },
    'low-calls': { type: 'string', default: '20' },
    'stop-after': { type: 'string', default: '0' },
    json: { type: 'string' },
  },
});
const ladder = values.ladder.split(',').map(Number);
const seconds = Number(values.seconds);
const procs = Number(values.procs);
const encodings = values.encodings.split(',') as ('binary' | 'base64')[];
const targets = values.targets.split(',');
for (const t of targets)
  if (!['bridge', 'echo', 'echo-delayed'].includes(t))
    throw new Error(`--targets takes bridge, echo and echo-delayed, got ${JSON.stringify(t)}`);
/**
 * The bridge's echo bot holds audio this long (its ECHO_DELAY_MS, read by the same rule: empty means the
 * default 200); `echo-delayed` holds it as long.
 */
const ECHO_DELAY_MS = echoDelayFromEnv(process.env.ECHO_DELAY_MS);

function echoDelayFromEnv(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 200;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 10_000)
    throw new Error(`ECHO_DELAY_MS must be a whole number of ms from 0 to 10000, got ${JSON.stringify(raw)}`);
  return n;
}
/** A target's ladder ends after this many failed rungs in a row (0: every rung runs). */
const stopAfter = Number(values['stop-after']);

interface Target {
  url: string;
  stop(): Promise<void>;
}

async function startBridge(): Promise<Target> {
  const port = 18_000 + Math.floor(Math.random() * 2000);
  const child: ChildProcess = spawn(process.execPath, [...BRIDGE_NODE_FLAGS, 'dist/cli/main.js'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      BOT_URL: 'builtin:echo',
      MEDIA_AUTH: 'none',
      MEDIA_CONNECT_PER_SEC: '100000',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `ws://127.0.0.1:${port}/v1/media`;
  const deadline = Date.now() + 15_000;
  while ((await sampleServer(`http://127.0.0.1:${port}/metrics`)) === undefined) {
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error('bridge did not start (run npm run build)');
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

async function startEcho(delayMs: number): Promise<Target> {
  const child = forkChild();
  const url = await new Promise<string>((resolve, reject) => {
    child.on('message', (m: { type: string; url?: string; message?: string }) => {
      if (m.type === 'echo') resolve(m.url!);
      else if (m.type === 'failed') reject(new Error(`echo server did not start: ${m.message}`));
    });
    child.once('exit', (code) => reject(new Error(`echo server exited (code ${code}) before it started`)));
    child.send({ type: 'echo', delayMs });
  });
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      }),
  };
}

const background = asBackground(generateTone(440, 8000, 8000));

async function rung(
  target: string,
  encoding: 'binary' | 'base64',
  calls: number,
  secs: number,
): Promise<LoadReport> {
  const t =
    target === 'bridge'
      ? await startBridge()
      : await startEcho(target === 'echo-delayed' ? ECHO_DELAY_MS : 0);
  try {
    const idle = await sampleServer(t.url.replace('ws:', 'http:').replace('/v1/media', '/metrics'));
    const options: RunOptions = {
      url: t.url,
      calls,
      seconds: secs,
      rampSeconds: Math.max(1, Math.ceil(calls / 200)),
      rate: 8000,
      codec: 'slin',
      encoding,
      token: undefined,
      background,
      chunkMs: 20,
      markerEveryMs: 1000,
      markerBurstMs: 60,
      // The bot (or echo-delayed) holds every frame ECHO_DELAY_MS: wait that much longer for the last.
      drainMs: 2_000 + ECHO_DELAY_MS,
      markerTimeoutMs: 5_000 + ECHO_DELAY_MS,
      idPrefix: `cap-${target}`,
    };
    const report = buildReport(target, options, await orchestrate(options, procs, () => {}));
    const extra = report as LoadReport & { idleRssMb?: number; rssPerCallKb?: number };
    if (idle !== undefined && report.server !== null) {
      extra.idleRssMb = Math.round(idle.rssBytes / 2 ** 20);
      extra.rssPerCallKb = Math.round(((report.server.rssPeakMb - idle.rssBytes / 2 ** 20) * 1024) / calls);
    }
    return report;
  } finally {
    await t.stop();
  }
}

function passes(r: LoadReport, lowP50: number): boolean {
  return (
    r.failed === 0 &&
    r.dropped === 0 &&
    r.markers.lost === 0 &&
    r.audioReturnedPct >= 98 &&
    r.roundTripMs.p99 <= lowP50 + 20
  );
}

const results: Record<string, unknown> = {
  machine: {
    cpus: cpus().length,
    model: cpus()[0]?.model,
    node: process.version,
    date: new Date().toISOString(),
  },
  ladder,
  seconds,
  procs,
  echoDelayMs: ECHO_DELAY_MS,
  runs: [] as unknown[],
};
const summary: string[] = [];

interface Ladder {
  target: string;
  lowP50: number;
  low: LoadReport;
  capacity: number;
  rungs: unknown[];
  /** Failed rungs in a row; with --stop-after K, the ladder ends at K. */
  failsInRow: number;
}

for (const encoding of encodings) {
  // Rung by rung, every target in turn: both are measured in the same minutes of a machine whose
  // speed drifts (bench/README.md), rather than one ladder after the other.
  const runs: Ladder[] = [];
  for (const target of targets) {
    const low = await rung(target, encoding, Number(values['low-calls']), Math.min(10, seconds));
    runs.push({ target, lowP50: low.roundTripMs.p50, low, capacity: 0, rungs: [], failsInRow: 0 });
  }
  for (const calls of ladder) {
    for (const run of runs) {
      if (stopAfter > 0 && run.failsInRow >= stopAfter) continue;
      const r = await rung(run.target, encoding, calls, seconds);
      const ok = passes(r, run.lowP50);
      if (ok && calls > run.capacity) run.capacity = calls;
      run.failsInRow = ok ? 0 : run.failsInRow + 1;
      run.rungs.push({ ...r, pass: ok });
      const s = r.server;
      const line =
        `${run.target.padEnd(12)} ${encoding.padEnd(6)} ${String(calls).padStart(5)} calls: ${ok ? 'pass' : 'FAIL'} ` +
        `rtt p50 ${r.roundTripMs.p50} p99 ${r.roundTripMs.p99} ms (low-load p50 ${run.lowP50}), lost ${r.markers.lost}, ` +
        `back ${r.audioReturnedPct}%, failed ${r.failed}, cpu ${s?.cpuPctOfCore ?? '?'}% ` +
        `(${s?.cpuMsPerCallSecond ?? '?'} ms/call-s), rss ${s?.rssPeakMb ?? '?'} MB, gen cpu ${r.generator.cpuPctOfCore}%`;
      process.stderr.write(`${line}\n`);
      summary.push(line);
    }
  }
  for (const run of runs) {
    (results.runs as unknown[]).push({
      target: run.target,
      encoding,
      lowLoad: run.low,
      capacity: run.capacity,
      rungs: run.rungs,
    });
    summary.push(`${run.target} ${encoding}: capacity ${run.capacity} calls`);
    process.stderr.write(`${run.target} ${encoding}: capacity ${run.capacity} calls\n`);
  }
}
process.stdout.write(`${summary.join('\n')}\n`);
if (values.json !== undefined) await writeFile(values.json, `${JSON.stringify(results, null, 2)}\n`);

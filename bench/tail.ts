/**
 * The round-trip tail as an outside client sees it: bench/outside-client.mjs (plain Node and `ws`, none
 * of the bridge's code, its own process and clock, tone onsets found in the returned audio) places N
 * 8 kHz binary calls on each target in turn, rung by rung, and reports its round-trip percentiles beside
 * the target's CPU. The targets are the built bridge with its echo bot (`bridge`, ECHO_DELAY_MS as set,
 * 200 by default) and the bare echo holding every frame as long (`echo-delayed`), from
 * bench/capacity-lib.ts.
 *
 *   npm run build && npm run bench:tail -- [--ladder 100,150,200] [--seconds 30] [--rounds 2]
 *     [--targets bridge,echo-delayed] [--ramp-ms MS] [--pin [--pin-cpus 1,0]] [--json FILE]
 *
 * With `--pin` the target runs on one core and the client on the other (taskset), as with
 * bench:capacity. The goal it reads: the bridge's p99 within 5 ms of echo-delayed's, at each rung, over
 * the rounds (the worst round of each), and again over the rounds in which the client itself ran on time
 * for both targets (its sends' lateness p99 at most CLIENT_ON_TIME_MS): on a shared machine a client held
 * up reads its own late arrivals as the target's. It reads it a third way round by round: the two targets
 * of a round run back to back, so their difference is read within it, and the median over the rounds. Each run also prints how long the target's main thread
 * and the client's waited for a CPU (schedstat) and the machine's CPU pressure as it ended.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import { type PinCpus, parsePinCpus, pinProcess, tasksetPrefix } from '../src/load/pin.js';
import { type BenchContext, echoDelayFromEnv, startTarget } from './capacity-lib.js';

const { values } = parseArgs({
  options: {
    ladder: { type: 'string', default: '100,150,200' },
    seconds: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '2' },
    targets: { type: 'string', default: 'bridge,echo-delayed' },
    pin: { type: 'boolean', default: false },
    'pin-cpus': { type: 'string', default: '1,0' },
    json: { type: 'string' },
    'ramp-ms': { type: 'string' },
  },
});
const ladder = values.ladder.split(',').map(Number);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const targets = values.targets.split(',');
if (ladder.some((n) => !Number.isInteger(n) || n < 1) || !(seconds > 0) || !(rounds >= 1))
  throw new Error('--ladder takes call counts (e.g. 100,150,200), --seconds and --rounds positive numbers');
const pin: PinCpus | undefined = values.pin ? parsePinCpus(values['pin-cpus'], cpus().length) : undefined;
const ctx: BenchContext = { pin, procs: 1, echoDelayMs: echoDelayFromEnv(process.env.ECHO_DELAY_MS) };
if (pin !== undefined) await pinProcess(process.pid, pin.load);

interface ClientReport {
  failed: number;
  dropped: number;
  tones: { sent: number; returned: number; lost: number; unmatched: number };
  roundTripMs: {
    p50: number | null;
    p90: number | null;
    p99: number | null;
    p999: number | null;
    max: number | null;
  };
  onsetMs: { p50: number | null; p99: number | null; max: number | null };
  perCallMedianMs: { min: number | null; p50: number | null; p99: number | null; max: number | null };
  sendLatenessMs: { p50: number | null; p99: number | null; max: number | null };
  clientCpuMs: number;
  clientWaitedMs: number | null;
}

/** A round whose client sent this late at p99 (ms) or later, for either target, was held up itself. */
const CLIENT_ON_TIME_MS = 5;

/** utime + stime of every thread of `pid`, ms. */
function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

/** ms the main thread of `pid` has waited, runnable, for a CPU (schedstat), or NaN where unreadable. */
function mainThreadWaitedMs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1e6;
  } catch {
    return Number.NaN;
  }
}

/** `some avg10` of /proc/pressure/cpu: % of the last 10 s some task waited for a CPU (NaN if absent). */
function cpuPressure(): number {
  try {
    const m = /^some avg10=([0-9.]+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
    return m === null ? Number.NaN : Number(m[1]);
  } catch {
    return Number.NaN;
  }
}

const CLIENT = resolve(import.meta.dirname, 'outside-client.mjs');

async function runClient(url: string, calls: number): Promise<ClientReport> {
  const argv = [
    ...(pin === undefined ? [] : tasksetPrefix(pin.load)),
    process.execPath,
    CLIENT,
    '--url',
    url,
    '--calls',
    String(calls),
    '--seconds',
    String(seconds),
    '--ramp-ms',
    values['ramp-ms'] ?? String(Math.max(1000, calls * 10)),
  ];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`outside client exited with ${code}: ${out}`);
  return JSON.parse(out) as ClientReport;
}

const runs: {
  target: string;
  calls: number;
  round: number;
  client: ClientReport;
  serverCpuMsPerCallSecond: number;
  /** How long the target's main thread waited for a CPU over the run, ms. */
  serverWaitedMs: number;
  /** The machine's CPU pressure as the run ended (`some avg10`, %). */
  cpuPressure: number;
}[] = [];
for (let round = 1; round <= rounds; round++) {
  for (const calls of ladder) {
    for (const name of targets) {
      const t = await startTarget(name, ctx);
      try {
        const cpu0 = processCpuMs(t.pid);
        const waited0 = mainThreadWaitedMs(t.pid);
        const wall0 = performance.now();
        const client = await runClient(t.url, calls);
        const wallS = (performance.now() - wall0) / 1000;
        const cpuMs = processCpuMs(t.pid) - cpu0;
        const serverWaitedMs = Math.round(mainThreadWaitedMs(t.pid) - waited0);
        const perCallSecond = cpuMs / (calls * wallS);
        const pressure = cpuPressure();
        runs.push({
          target: name,
          calls,
          round,
          client,
          serverCpuMsPerCallSecond: perCallSecond,
          serverWaitedMs,
          cpuPressure: pressure,
        });
        const r = client.roundTripMs;
        process.stdout.write(
          `round ${round} ${String(calls).padStart(4)} calls ${name.padEnd(13)} p50 ${r.p50} p90 ${r.p90} p99 ${r.p99} p99.9 ${r.p999} max ${r.max}` +
            `  onset p50 ${client.onsetMs.p50} p99 ${client.onsetMs.p99}` +
            `  call medians ${client.perCallMedianMs.min}-${client.perCallMedianMs.max}` +
            `  tones ${client.tones.returned}/${client.tones.sent} lost ${client.tones.lost}` +
            `  server ${((cpuMs / (wallS * 1000)) * 100).toFixed(0)} % of a core, waited ${serverWaitedMs} ms for one` +
            `  client sends late p99 ${client.sendLatenessMs.p99} ms, waited ${client.clientWaitedMs} ms` +
            `  cpu pressure ${pressure} %\n`,
        );
      } finally {
        await t.stop();
      }
    }
  }
}

// The goal: at each rung, the bridge's worst-round p99 within 5 ms of echo-delayed's; over every round,
// and over the rounds whose client ran on time for both targets.
if (targets.includes('bridge') && targets.includes('echo-delayed')) {
  const onTime = (round: number, calls: number) =>
    runs
      .filter((r) => r.round === round && r.calls === calls)
      .every((r) => (r.client.sendLatenessMs.p99 ?? Infinity) <= CLIENT_ON_TIME_MS);
  for (const calls of ladder) {
    const goal = (label: string, rounds: number[]) => {
      const worst = (name: string) =>
        Math.max(
          ...runs
            .filter((r) => r.target === name && r.calls === calls && rounds.includes(r.round))
            .map((r) => r.client.roundTripMs.p99 ?? Infinity),
        );
      if (rounds.length === 0) {
        process.stdout.write(`goal at ${calls} calls, ${label}: no such round\n`);
        return;
      }
      const b = worst('bridge');
      const e = worst('echo-delayed');
      process.stdout.write(
        `goal at ${calls} calls, ${label} (${rounds.join(', ')}): bridge p99 ${b} ms, echo-delayed ${e} ms: ${(b - e).toFixed(1)} ms apart (goal <= 5): ${b - e <= 5 ? 'met' : 'not met'}\n`,
      );
    };
    const all = Array.from({ length: rounds }, (_, i) => i + 1);
    goal('every round', all);
    // Each round's two targets ran back to back: their difference is read within the round, where a
    // noisy minute lands on one target only when it falls between them. The median over the rounds.
    const p99 = (name: string, round: number) =>
      runs.find((r) => r.target === name && r.calls === calls && r.round === round)?.client.roundTripMs.p99 ??
      Infinity;
    const apart = all.map((round) => p99('bridge', round) - p99('echo-delayed', round));
    const sorted = [...apart].sort((a, b) => a - b);
    const mid =
      sorted.length % 2 === 1
        ? sorted[(sorted.length - 1) / 2]!
        : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
    process.stdout.write(
      `goal at ${calls} calls, round by round: bridge p99 minus echo-delayed's ${apart.map((d) => d.toFixed(1)).join(', ')} ms; ` +
        `within 5 ms in ${apart.filter((d) => d <= 5).length} of ${apart.length}, median ${mid.toFixed(1)} ms (goal <= 5): ${mid <= 5 ? 'met' : 'not met'}\n`,
    );
    goal(
      `rounds with the client on time (sends late p99 <= ${CLIENT_ON_TIME_MS} ms)`,
      all.filter((round) => onTime(round, calls)),
    );
  }
}

if (values.json !== undefined) {
  await writeFile(
    values.json,
    `${JSON.stringify(
      {
        command: `npm run bench:tail -- ${process.argv.slice(2).join(' ')}`,
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
        nodeFlags: BRIDGE_NODE_FLAGS,
        pin: pin ?? null,
        echoDelayMs: ctx.echoDelayMs,
        runs,
      },
      null,
      2,
    )}\n`,
  );
}

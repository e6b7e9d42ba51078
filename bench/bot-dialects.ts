/**
 * Load per bot dialect: the built bridge under N concurrent calls whose bot is a speech-to-speech
 * dialect's stand-in (src/emulator/stand-ins.ts, `npm run bot-emulator -- --dialect <name>` in a process
 * of its own), beside the same calls with the `bridge` dialect (our own protocol) toward an echo bot in a
 * process of its own (bench/bot-echo.mjs). Every registered bot dialect with a stand-in is measured
 * (src/dialects/): one that lands with its stand-in joins with no edit here.
 *
 *   npm run build && npm run bench:bot-dialects -- [--dialects openai-realtime,...] [--ladder 200]
 *     [--seconds 20] [--rounds 2] [--codec pcmu|slin] [--pin [--pin-cpus 1,0]] [--json FILE]
 *
 * The calls come from the load generator of bench:capacity (src/load/, the default provider dialect,
 * 8 kHz µ-law or PCM16 in 20 ms binary frames at real time, no timing markers): each caller says one
 * 300 ms tone, then sends digital silence to the end. The echo bot sends every frame back at once. Each
 * stand-in takes the tone as a turn and answers with one tone reply timed to run through the whole CPU
 * window and end before its caller hangs up (callPlan in bench/bot-dialects-lib.ts), sent at real time
 * and 200 ms ahead where it paces its replies (`--output-rate-factor 1 --lead-ms 200`; Ultravox's by the
 * client buffer the bridge asks for, 2 s with every bridge here holding 4 s of bot audio at most,
 * BRIDGE_ENV). A stand-in that greets first has its greeting cut by the caller's tone, counted apart.
 * So through the window every bot receives and sends audio at real time: the bridge's load differs by
 * the dialects' wires and formats alone.
 *
 * With `--pin` the bridge runs on one core (`taskset -c`, every thread) and this process, its load
 * generators and the bot's process on the other; every run reads each thread's affinity back and stops
 * if one strayed. The targets take turns rung by rung, round by round, each on a fresh bridge and a fresh
 * bot process, so a drifting machine weighs on all alike.
 *
 * Per run: calls failed or dropped, the caller's audio the bot heard (the stand-in's record of its input,
 * the echo bot's byte count) and the bot's audio the caller got, the inter-arrival p99 of the bridge's
 * chunks at the caller (its pacing), and the bridge's CPU per call-second over the window (from 2 s after
 * the ramp, when every reply is under way, to the end of the load). At the end, each dialect's CPU against
 * the `bridge` dialect's in the same rounds, summed over them; the goal is <= 1.3x.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { resolve } from 'node:path';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import { STAND_INS, type StandIn, type StandInName } from '../src/emulator/stand-ins.js';
import { pinProcess, tasksetPrefix } from '../src/load/pin.js';
import {
  BASELINE,
  type BotAudio,
  BRIDGE_ENV,
  busyPct,
  callerAudio,
  callPlan,
  coreTimes,
  echoAudio,
  type Loss,
  lossOf,
  parseBotDialectsArgs,
  ratios,
  type SessionSummary,
  standInArgs,
  standInAudio,
  standInBridgeEnv,
} from './bot-dialects-lib.js';
import { type BenchContext, echoDelayFromEnv, freePort, type RungReport, runRung } from './capacity-lib.js';

const GOAL = 1.3;
const RATE = 8000;
/** The `bridge` dialect's bot hears and speaks PCM16 at this rate (BOT_SAMPLE_RATE, the bridge's default). */
const ECHO_RATE = 16_000;

const args = parseBotDialectsArgs(process.argv.slice(2), cpus().length);
const ctx: BenchContext = {
  pin: args.pin,
  procs: 1,
  echoDelayMs: echoDelayFromEnv(process.env.ECHO_DELAY_MS),
};
// This process, its load generators and the bots it starts run on the load core from now on.
if (args.pin !== undefined) await pinProcess(process.pid, args.pin.load);

/** A bot's server in its own process on the load core: the bridge's environment for it, its audio, stop. */
interface BotServer {
  readonly pid: number;
  readonly env: Record<string, string>;
  audio(): Promise<BotAudio>;
  stop(): Promise<void>;
}

function spawnOnLoadCore(argv: string[]): ChildProcess {
  const full = args.pin === undefined ? argv : [...tasksetPrefix(args.pin.load), ...argv];
  return spawn(full[0]!, full.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once('exit', () => done());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
  });
}

async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return res.json();
}

async function waitJson(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await getJson(url);
      return;
    } catch {}
    if (child.exitCode !== null) throw new Error(`${url}: its process exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${url} did not answer within 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startEchoBot(): Promise<BotServer> {
  const child = spawnOnLoadCore([process.execPath, resolve(import.meta.dirname, 'bot-echo.mjs')]);
  const first = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) ok(out.slice(0, out.indexOf('\n')));
    });
    child.once('exit', (code) => fail(new Error(`the echo bot exited with ${code} before it listened`)));
  });
  const { url, base } = JSON.parse(first) as { url: string; base: string };
  return {
    pid: child.pid!,
    env: { ...BRIDGE_ENV, BOT_DIALECT: BASELINE, BOT_URL: url, BOT_SAMPLE_RATE: String(ECHO_RATE) },
    audio: async () =>
      echoAudio((await getJson(`${base}/stats`)) as Parameters<typeof echoAudio>[0], ECHO_RATE),
    stop: () => stopChild(child),
  };
}

async function startStandIn(dialect: string, standIn: StandIn, replyMs: number): Promise<BotServer> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawnOnLoadCore([
    process.execPath,
    '--import',
    'tsx',
    'src/cli/bot-emulator.ts',
    '--dialect',
    dialect,
    '--port',
    String(port),
    ...standInArgs(standIn, replyMs),
  ]);
  child.stdout!.resume(); // its banner
  try {
    await waitJson(`${base}${standIn.sessionsPath}`, child);
  } catch (err) {
    await stopChild(child);
    throw err;
  }
  return {
    pid: child.pid!,
    env: standInBridgeEnv(standIn.bot(base)),
    audio: async () => {
      const { sessions } = (await getJson(`${base}${standIn.sessionsPath}`)) as {
        sessions: SessionSummary[];
      };
      return standInAudio(sessions);
    },
    stop: () => stopChild(child),
  };
}

interface Run {
  target: string;
  calls: number;
  round: number;
  report: RungReport;
  callerSentMs: number;
  callerGotMs: number;
  bot: BotAudio;
  loss: Loss;
  /** The bot's process over the whole run (ramp to drain), % of a core. */
  botCpuPct: number;
  /** The load core's busy time over the run, every process on it, %: near 100 the callers and bot starve. */
  loadCoreBusyPct: number | undefined;
}

/** The load core's times, when pinned. */
function loadCore(): { busy: number; total: number } | undefined {
  return args.pin === undefined ? undefined : coreTimes(readFileSync('/proc/stat', 'utf8'), args.pin.load);
}

/** utime + stime of a process (all its threads), ms; 0 once it is gone. */
function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

const runs: Run[] = [];
const f = (v: number | null | undefined, digits = 2) =>
  v === undefined || v === null ? '?' : v.toFixed(digits);
const s = (ms: number) => (ms / 1000).toFixed(1);

for (let round = 1; round <= args.rounds; round++) {
  for (const calls of args.ladder) {
    for (const target of args.targets) {
      const plan = callPlan(calls, args.seconds);
      const bot =
        target === BASELINE
          ? await startEchoBot()
          : await startStandIn(target, STAND_INS[target as StandInName]!, plan.replyMs);
      let report: RungReport;
      let audio: BotAudio;
      const load0 = loadCore();
      const bot0 = processCpuMs(bot.pid);
      const wall0 = performance.now();
      let botCpuPct = 0;
      let loadCoreBusyPct: number | undefined;
      try {
        report = await runRung('bridge', 'binary', calls, args.seconds, ctx, {
          env: bot.env,
          load: {
            background: callerAudio(RATE, plan.audioSeconds),
            // No timing markers: a burst would be a turn to a stand-in's VAD, and interrupt its reply.
            markerEveryMs: (plan.audioSeconds + 60) * 1000,
            codec: args.codec,
            drainMs: plan.drainMs,
          },
          window: plan.window,
          loadPids: [bot.pid],
        });
        audio = await bot.audio();
        botCpuPct = Math.round((1000 * (processCpuMs(bot.pid) - bot0)) / (performance.now() - wall0)) / 10;
        const load1 = loadCore();
        if (load0 !== undefined && load1 !== undefined) loadCoreBusyPct = busyPct(load0, load1);
      } finally {
        await bot.stop();
      }
      const callerSentMs = (report.samples.sent / RATE) * 1000;
      const callerGotMs = (report.samples.received / RATE) * 1000;
      const loss = lossOf(report, callerSentMs, callerGotMs, audio);
      runs.push({
        target,
        calls,
        round,
        report,
        callerSentMs,
        callerGotMs,
        bot: audio,
        loss,
        botCpuPct,
        loadCoreBusyPct,
      });
      const sv = report.server;
      process.stderr.write(
        `round ${round} ${String(calls).padStart(4)} calls ${target.padEnd(16)} ${report.connected}/${calls} connected, ` +
          `failed ${report.failed}, dropped ${report.dropped}, bot sessions ${audio.sessions}, ` +
          `caller->bot ${s(audio.heardMs)}/${s(callerSentMs)} s, bot->caller ${s(callerGotMs)}/${s(audio.sentMs)} s` +
          `${audio.cutMs > 0 ? ` (+${s(audio.cutMs)} s of replies the callers cut)` : ''}` +
          `${audio.unfinished === undefined ? '' : ` (${audio.unfinished.replies} replies unfinished at hang-up, ${s(audio.unfinished.unsentMs)} s unsent, the latest begun ${s(audio.unfinished.latestStartMs)} s into its call)`}` +
          `${loss.lost ? ' LOST' : ''}, inter-arrival p99 ${report.interArrivalMs.p99} ms, ` +
          `cpu ${f(sv?.cpuMsPerCallSecond, 3)} ms/call-s (main ${f(sv?.threads?.main, 3)}, workers ${f(sv?.threads?.workers, 3)}), ` +
          `bot ${botCpuPct}% of a core, load core busy ${loadCoreBusyPct ?? '?'}%, ` +
          `load avg ${report.loadAvg1 ?? '?'}, cpu pressure ${report.cpuPressure10 ?? '?'}%\n`,
      );
    }
  }
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length === 0 ? undefined : v.length % 2 === 1 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
};
const goals = ratios(
  runs.map((r) => ({
    target: r.target,
    calls: r.calls,
    round: r.round,
    cpuMsPerCallSecond: r.report.server?.cpuMsPerCallSecond,
  })),
  GOAL,
);
const lines = [
  `${args.ladder.join(', ')} calls x ${args.seconds} s per dialect, ${args.rounds} round(s), ${args.codec} 8 kHz callers, ` +
    `${args.pin === undefined ? 'unpinned' : `bridge on cpu ${args.pin.server}, load and bots on cpu ${args.pin.load}`}`,
  '| calls | bot dialect | lost | caller -> bot | bot -> caller | inter-arrival p99 (worst round) | CPU ms/call-s (median) | vs bridge over the rounds (each round) |',
  '|---|---|---|---|---|---|---|---|',
];
for (const calls of args.ladder)
  for (const target of args.targets) {
    const rs = runs.filter((r) => r.target === target && r.calls === calls);
    const sum = (k: (r: Run) => number) => rs.reduce((t, r) => t + k(r), 0);
    const p99s = rs.flatMap((r) =>
      r.report.interArrivalMs.p99 === null ? [] : [r.report.interArrivalMs.p99],
    );
    const g = goals.find((x) => x.target === target && x.calls === calls);
    const vs =
      target === BASELINE
        ? '1.00x'
        : g?.ratio === undefined
          ? '?'
          : `${g.ratio.toFixed(2)}x (${g.rounds.map((r) => `${r.ratio.toFixed(2)}x`).join(', ')}; goal <= ${GOAL}x: ${g.met ? 'met' : 'not met'})`;
    lines.push(
      `| ${calls} | ${target} | ${rs.some((r) => r.loss.lost) ? 'yes' : 'none'} | ` +
        `${s(sum((r) => r.bot.heardMs))} of ${s(sum((r) => r.callerSentMs))} s | ` +
        `${s(sum((r) => r.callerGotMs))} of ${s(sum((r) => r.bot.sentMs))} s | ` +
        `${p99s.length === rs.length && rs.length > 0 ? `${Math.max(...p99s).toFixed(1)} ms` : '?'} | ` +
        `${f(median(rs.flatMap((r) => r.report.server?.cpuMsPerCallSecond ?? [])), 3)} | ${vs} |`,
    );
  }
process.stdout.write(`${lines.join('\n')}\n`);

if (args.json !== undefined)
  await writeFile(
    args.json,
    `${JSON.stringify(
      {
        command: `npm run bench:bot-dialects -- ${process.argv.slice(2).join(' ')}`,
        date: new Date().toISOString(),
        machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
        nodeFlags: BRIDGE_NODE_FLAGS,
        pin: args.pin ?? null,
        codec: args.codec,
        seconds: args.seconds,
        goal: GOAL,
        goals,
        runs,
      },
      null,
      2,
    )}\n`,
  );

/**
 * What bench/capacity.ts and bench/worker-default.ts share: starting a target (the built bridge, or the
 * bare echo, at once or holding audio), pinned or not, and one rung of load against it with the target's
 * CPU, RSS and per-thread CPU.
 *
 * Targets: `bridge` (the bridge's defaults), `bridge-wN` (the bridge with DSP_WORKERS=N), `echo`,
 * `echo-delayed` (the bare echo holding every frame ECHO_DELAY_MS on the bridge's pacing loop), and
 * `echo-delayed-v8`, the same on V8's default flags rather than the bridge's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { generateTone } from '../src/audio/tone.js';
import { BRIDGE_NODE_FLAGS } from '../src/cli/node-flags.js';
import type { DialectName } from '../src/emulator/dialects/index.js';
import { dialectChunkMs, dialectWireCodec } from '../src/emulator/dialects/params.js';
import { asBackground } from '../src/load/markers.js';
import { forkChild, type OrchestrateWatch, orchestrate, sampleServer } from '../src/load/orchestrator.js';
import {
  checkPinned,
  moveProfilerThread,
  type PinCheck,
  type PinCpus,
  tasksetPrefix,
} from '../src/load/pin.js';
import { buildReport, type LoadReport } from '../src/load/report.js';
import type { RunOptions } from '../src/load/runner.js';

export type TargetSpec =
  | { kind: 'bridge'; workers: number | undefined }
  | { kind: 'echo'; delayed: boolean; v8Defaults: boolean };

/** A target's name -> what to start; an error names the accepted names. */
export function parseTarget(name: string): TargetSpec {
  if (name === 'bridge') return { kind: 'bridge', workers: undefined };
  const w = /^bridge-w(\d{1,2})$/.exec(name);
  if (w !== null) return { kind: 'bridge', workers: Number(w[1]) };
  if (name === 'echo' || name === 'echo-delayed')
    return { kind: 'echo', delayed: name === 'echo-delayed', v8Defaults: false };
  if (name === 'echo-delayed-v8') return { kind: 'echo', delayed: true, v8Defaults: true };
  throw new Error(
    '--targets takes bridge, bridge-wN (the bridge with DSP_WORKERS=N), echo, echo-delayed and echo-delayed-v8 ' +
      `(echo-delayed on V8's default flags), got ${JSON.stringify(name)}`,
  );
}

/**
 * The bridge's echo bot holds audio this long (its ECHO_DELAY_MS, read by the same rule: empty means the
 * default 200); `echo-delayed` holds it as long.
 */
export function echoDelayFromEnv(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 200;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 10_000)
    throw new Error(`ECHO_DELAY_MS must be a whole number of ms from 0 to 10000, got ${JSON.stringify(raw)}`);
  return n;
}

export interface BenchContext {
  /** Server and load cores, or undefined to leave scheduling to the kernel. */
  readonly pin: PinCpus | undefined;
  readonly procs: number;
  readonly echoDelayMs: number;
  /** With a directory, bridge targets run under `node --cpu-prof` and write their profiles there. */
  readonly cpuProfDir?: string | undefined;
}

export interface Target {
  readonly url: string;
  /** Where the target's process metrics are (the load generator samples them). */
  readonly metricsUrl?: string;
  /** The bridge's REST base URL. */
  readonly http?: string;
  readonly pid: number;
  /** Threads of the server deliberately on another core (the CPU profiler's sampler). */
  readonly exempt?: number[];
  stop(): Promise<void>;
}

/** Ends a child: SIGTERM first when it must write something on its way out (a CPU profile). */
function stopChild(child: ChildProcess, gently: boolean): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise<void>((done) => {
    child.once('exit', () => done());
    if (!gently) {
      child.kill('SIGKILL');
      return;
    }
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
  });
}

const TAG = resolve(import.meta.dirname, 'thread-tag.cjs');

async function startBridge(
  workers: number | undefined,
  ctx: BenchContext,
  profDir: string | undefined,
  extra: RungExtra,
): Promise<Target> {
  const dialect = extra.dialect ?? 'default';
  const port = 18_000 + Math.floor(Math.random() * 2000);
  const audioSocketPort = port + 2000;
  const node = [
    process.execPath,
    ...BRIDGE_NODE_FLAGS,
    '--require',
    TAG,
    ...(profDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profDir]),
    'dist/cli/main.js',
  ];
  const argv = ctx.pin === undefined ? node : [...tasksetPrefix(ctx.pin.server), ...node];
  const child: ChildProcess = spawn(argv[0]!, argv.slice(1), {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      BOT_URL: 'builtin:echo',
      MEDIA_AUTH: 'none',
      MEDIA_CONNECT_PER_SEC: '100000',
      ...(workers !== undefined && { DSP_WORKERS: String(workers) }),
      ...extra.env,
      ...(dialect === 'audiosocket' && {
        AUDIOSOCKET_PORT: String(audioSocketPort),
        AUDIOSOCKET_HOST: '127.0.0.1',
        AUDIOSOCKET_ALLOW: '127.0.0.1',
      }),
    },
    // Its startup banner would bury the bench's own lines; warnings and errors still show.
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 15_000;
  while ((await sampleServer(`http://127.0.0.1:${port}/metrics`)) === undefined) {
    if (Date.now() > deadline || child.exitCode !== null) {
      await stopChild(child, false);
      throw new Error('bridge did not start (run npm run build)');
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  // The profiler's sampler off the server's core (src/load/pin.ts), and left out of the pinning check.
  const profiler =
    profDir !== undefined && ctx.pin !== undefined
      ? await moveProfilerThread(child.pid!, ctx.pin.load)
      : undefined;
  return {
    url:
      dialect === 'audiosocket'
        ? `tcp://127.0.0.1:${audioSocketPort}`
        : `ws://127.0.0.1:${port}/v1/media${dialect === 'default' ? '' : `/${dialect}`}`,
    metricsUrl: `http://127.0.0.1:${port}/metrics`,
    http: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    ...(profiler !== undefined && { exempt: [profiler] }),
    stop: () => stopChild(child, !!profDir),
  };
}

/**
 * The echo targets run with the bridge's V8 flags, so the two are compared on the same runtime settings:
 * the 4 MB young generation costs echo-delayed ~9 % more CPU than V8's default (it keeps every frame it
 * holds as the Buffer it arrived in, and each scavenge copies those) and the bridge about nothing
 * (bench/README.md). `v8Defaults` runs one on V8's own settings instead, to measure that.
 */
async function startEcho(delayMs: number, ctx: BenchContext, v8Defaults = false): Promise<Target> {
  const prefix = ctx.pin === undefined ? [] : tasksetPrefix(ctx.pin.server);
  const child = forkChild(prefix, v8Defaults ? [] : BRIDGE_NODE_FLAGS);
  const url = await new Promise<string>((resolve, reject) => {
    child.on('message', (m: { type: string; url?: string; message?: string }) => {
      if (m.type === 'echo') resolve(m.url!);
      else if (m.type === 'failed') reject(new Error(`echo server did not start: ${m.message}`));
    });
    child.once('exit', (code) => reject(new Error(`echo server exited (code ${code}) before it started`)));
    child.send({ type: 'echo', delayMs });
  });
  return { url, pid: child.pid!, stop: () => stopChild(child, false) };
}

const background = asBackground(generateTone(440, 8000, 8000));

export type RungReport = LoadReport & {
  idleRssMb?: number;
  rssPerCallKb?: number;
  /** The machine's 1-minute load average as the rung ended (other work on a shared machine shows here). */
  loadAvg1?: number;
  /** /proc/pressure/cpu `some avg10` as the rung ended: % of the last 10 s some task waited for a CPU. */
  cpuPressure10?: number;
  /** With pinning: every thread of the server and of each load process, read back with taskset -p. */
  pinCheck?: { server: PinCheck; load: PinCheck[] };
};

/** `some avg10` of /proc/pressure/cpu, or undefined where the kernel has no pressure information. */
function cpuPressure(): number | undefined {
  try {
    const m = /^some avg10=([0-9.]+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'));
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** Checks, once the load has started, that the server and the load processes sit on their cores. */
async function checkAll(
  pin: PinCpus,
  serverPid: number,
  loadPids: number[],
  exempt: number[] = [],
): Promise<RungReport['pinCheck']> {
  const server = await checkPinned(serverPid, pin.server, exempt);
  const load: PinCheck[] = [];
  for (const pid of [process.pid, ...loadPids]) {
    try {
      load.push(await checkPinned(pid, pin.load));
    } catch {
      // a load process that already finished
    }
  }
  const stray = [server, ...load].filter((c) => c.stray.length > 0);
  if (stray.length > 0)
    throw new Error(
      `pinning did not hold: ${JSON.stringify(stray)} (server on ${pin.server}, load on ${pin.load})`,
    );
  return { server, load };
}

/** What a rung may add to a bridge target's run. */
export interface RungExtra {
  /** The calls are this platform's, placed by the emulator's dialect table (default: `default`). */
  readonly dialect?: DialectName | undefined;
  /** More environment for the bridge. */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /**
   * Started once every call is up (after the ramp), against the bridge's REST base URL; the function it
   * resolves to is called when the load has ended (listeners, event streams: bench/console-load.ts).
   */
  readonly during?: ((http: string) => Promise<() => Promise<void>>) | undefined;
  /** The calls' own audio and codec, where not the capacity rung's (bench/bot-dialects.ts). */
  readonly load?: Partial<Pick<RunOptions, 'background' | 'markerEveryMs' | 'codec' | 'drainMs'>> | undefined;
  /** The window the target's CPU is read over, where not the whole load (src/load/orchestrator.ts). */
  readonly window?: OrchestrateWatch['window'];
  /** More processes that must sit on the load core (a bot's server): checked with the load generators. */
  readonly loadPids?: readonly number[] | undefined;
}

/** The seconds over which a rung's calls start: 200 a second, at least one second. */
export function rampSecondsFor(calls: number): number {
  return Math.max(1, Math.ceil(calls / 200));
}

/** Starts the target `name` (see parseTarget) on the server core when pinned; `stop()` ends it. */
export async function startTarget(name: string, ctx: BenchContext, extra: RungExtra = {}): Promise<Target> {
  const spec = parseTarget(name);
  return spec.kind === 'bridge'
    ? startBridge(spec.workers, ctx, undefined, extra)
    : startEcho(spec.delayed ? ctx.echoDelayMs : 0, ctx, spec.v8Defaults);
}

/** One rung: a fresh target, `calls` calls for `secs` seconds, its report. */
export async function runRung(
  name: string,
  encoding: 'binary' | 'base64',
  calls: number,
  secs: number,
  ctx: BenchContext,
  extra: RungExtra = {},
): Promise<RungReport> {
  const dialect = extra.dialect ?? 'default';
  const spec = parseTarget(name);
  let profDir: string | undefined;
  if (ctx.cpuProfDir !== undefined && spec.kind === 'bridge') {
    profDir = resolve(ctx.cpuProfDir, `${name}-${encoding}-${calls}`);
    mkdirSync(profDir, { recursive: true });
  }
  const t =
    spec.kind === 'bridge'
      ? await startBridge(spec.workers, ctx, profDir, extra)
      : await startEcho(spec.delayed ? ctx.echoDelayMs : 0, ctx, spec.v8Defaults);
  if (spec.kind === 'echo' && (dialect !== 'default' || extra.during !== undefined))
    throw new Error('the bare echo serves plain default-dialect calls only');
  try {
    const idle = await sampleServer(
      t.metricsUrl ?? t.url.replace('ws:', 'http:').replace('/v1/media', '/metrics'),
    );
    const options: RunOptions = {
      url: t.url,
      calls,
      seconds: secs,
      rampSeconds: rampSecondsFor(calls),
      rate: 8000,
      codec: dialect === 'default' ? 'slin' : dialectWireCodec(dialect, undefined),
      encoding,
      token: undefined,
      background,
      chunkMs: dialectChunkMs(dialect),
      ...(dialect !== 'default' && { dialect, auth: {} }),
      ...(t.metricsUrl !== undefined && { metricsUrl: t.metricsUrl }),
      markerEveryMs: 1000,
      markerBurstMs: 60,
      // The bot (or echo-delayed) holds every frame ECHO_DELAY_MS: wait that much longer for the last.
      drainMs: 2_000 + ctx.echoDelayMs,
      markerTimeoutMs: 5_000 + ctx.echoDelayMs,
      idPrefix: `cap-${name}`,
      ...extra.load,
    };
    let check: Promise<RungReport['pinCheck']> | undefined;
    const pin = ctx.pin;
    const onLoadProcesses =
      pin === undefined
        ? undefined
        : (pids: number[]) => {
            check = new Promise((r) => setTimeout(r, 1500)).then(() =>
              checkAll(pin, t.pid, [...pids, ...(extra.loadPids ?? [])], t.exempt),
            );
            check.catch(() => {}); // awaited below
          };
    let ending: Promise<() => Promise<void>> | undefined;
    const startDuring =
      extra.during === undefined || t.http === undefined
        ? undefined
        : setTimeout(
            () => {
              ending = extra.during!(t.http!);
              ending.catch(() => {}); // awaited below
            },
            options.rampSeconds * 1000 + 1000,
          );
    let result: Awaited<ReturnType<typeof orchestrate>>;
    try {
      result = await orchestrate(options, ctx.procs, () => {}, {
        serverPid: t.pid,
        ...(onLoadProcesses && { onLoadProcesses }),
        ...(extra.window !== undefined && { window: extra.window }),
      });
    } finally {
      clearTimeout(startDuring);
      if (ending !== undefined) await (await ending)();
    }
    const report: RungReport = buildReport(name, options, result);
    if (check !== undefined) report.pinCheck = await check;
    report.loadAvg1 = Math.round(loadavg()[0]! * 100) / 100;
    const pressure = cpuPressure();
    if (pressure !== undefined) report.cpuPressure10 = pressure;
    if (idle !== undefined && report.server !== null) {
      report.idleRssMb = Math.round(idle.rssBytes / 2 ** 20);
      report.rssPerCallKb = Math.round(((report.server.rssPeakMb - idle.rssBytes / 2 ** 20) * 1024) / calls);
    }
    return report;
  } finally {
    await t.stop();
  }
}

/**
 * The capacity rule: nothing failed or lost, >= 98 % audio back, p99 <= low-load p50 + 20 ms. A rung
 * (or a low-load run) with no round trip measured has nothing to pass with.
 */
export function passes(r: LoadReport, lowP50: number | null): boolean {
  const p99 = r.roundTripMs.p99;
  return (
    r.failed === 0 &&
    r.dropped === 0 &&
    r.markers.lost === 0 &&
    r.audioReturnedPct >= 98 &&
    p99 !== null &&
    lowP50 !== null &&
    p99 <= lowP50 + 20
  );
}

/** A TCP port free on loopback just now, for a server the bench starts in another process. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

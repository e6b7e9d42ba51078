/**
 * A real bridge in a child process (`tsx src/cli/main.ts`), for tests that need several instances, must
 * SIGKILL one, or judge its timing from outside (its pauses then show in what the test receives). The
 * bound addresses are read from the start-up banner. Tests start one through the rig
 * (`startRig({ process: true })`, rig.ts), which gives it its defaults and peers.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { BRIDGE_NODE_FLAGS } from '../../src/cli/node-flags.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Reports the child's collections on its stderr (report-gc.mjs). */
const REPORT_GC = fileURLToPath(new URL('./report-gc.mjs', import.meta.url));
const MAX_PAUSES = 5_000;

/** One garbage collection of the child: when it started (this process's performance.now()) and for how long. */
export interface ChildPause {
  readonly at: number;
  readonly ms: number;
}

/** The child's main thread's time on a CPU and waiting for one so far (ms, schedstat). */
export interface ChildThreadTimes {
  readonly onCpu: number;
  readonly runDelay: number;
}

export interface BridgeProcess {
  readonly http: string;
  readonly mediaUrl: string;
  /** The AudioSocket listener's address (`tcp://host:port`), where AUDIOSOCKET_PORT opened one. */
  readonly audioSocketUrl: string | undefined;
  readonly child: ChildProcess;
  /** What it wrote to stdout and stderr (for failure messages). */
  output(): string;
  /** Its garbage collections that began between `from` and `to` (this process's performance.now()). */
  pauses(from: number, to: number): ChildPause[];
  /** Its main thread's CPU times now; undefined where the kernel does not provide them. */
  threadTimes(): ChildThreadTimes | undefined;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Spawns the bridge with `env` over this process's environment (and NODE_ENV=test, LOG_FORMAT=json), with
 * the V8 flags it runs with everywhere (src/cli/node-flags.ts): its pauses are then the ones it has in use.
 */
export async function spawnBridgeProcess(
  env: Record<string, string>,
  startTimeoutMs: number,
  /** Node options before the script (e.g. `--trace-gc`, to see the bridge's own collections in `output()`). */
  nodeArgs: readonly string[] = [],
): Promise<BridgeProcess> {
  const child = spawn(
    process.execPath,
    [...BRIDGE_NODE_FLAGS, ...nodeArgs, '--import', REPORT_GC, '--import', 'tsx', 'src/cli/main.ts'],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        NODE_ENV: 'test',
        // Tests read the bridge's log lines as JSON (the development default is pretty).
        LOG_FORMAT: 'json',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  const cap = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout?.on('data', cap);
  // Its collections are kept apart (the latest MAX_PAUSES), the rest of stderr with stdout.
  const collections: ChildPause[] = [];
  let partial = '';
  child.stderr?.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop()!;
    let rest = '';
    for (const line of lines) {
      const m = /^gc-pause (\S+) (\S+)/.exec(line);
      if (m === null) rest += `${line}\n`;
      else collections.push({ at: Number(m[1]) - performance.timeOrigin, ms: Number(m[2]) });
    }
    if (collections.length > MAX_PAUSES) collections.splice(0, collections.length - MAX_PAUSES);
    if (rest !== '') cap(Buffer.from(rest));
  });
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(t);
  };
  const http = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bridge did not start:\n${out}`)), startTimeoutMs);
    const onData = () => {
      const m = /voicebridge listening on (http:\/\/[0-9.]+:\d+)/.exec(out);
      // The banner is one write; its AudioSocket line, where there is one, comes with the first.
      if (m?.[1] !== undefined && (env.AUDIOSOCKET_PORT === undefined || /AudioSocket listener/.test(out))) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(m[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bridge exited with ${code} before listening:\n${out}`));
    });
  }).catch(async (err: unknown) => {
    await kill('SIGKILL');
    throw err;
  });
  return {
    http,
    mediaUrl: `${http.replace('http', 'ws')}/v1/media`,
    audioSocketUrl: /AudioSocket listener \([^)]*\): (tcp:\/\/[0-9.]+:\d+)/.exec(out)?.[1],
    child,
    output: () => out + partial,
    pauses: (from, to) => collections.filter((c) => c.at + c.ms >= from && c.at <= to),
    threadTimes: () => {
      try {
        const f = readFileSync(`/proc/${child.pid}/task/${child.pid}/schedstat`, 'utf8').split(' ');
        return { onCpu: Number(f[0]) / 1e6, runDelay: Number(f[1]) / 1e6 };
      } catch {
        return undefined;
      }
    },
    kill,
  };
}

/** What a bridge in a child went through over a stretch of a test: says whether a gap was its own pause. */
export interface BridgeWatch {
  /**
   * Its collections between `from` and `to` (this process's performance.now()), and in the one `gap`
   * where given; its main thread's time waiting for a CPU and on one since the watch began.
   */
  describe(from: number, to: number, gap?: readonly [number, number]): string;
}

/** Starts watching `p` (before the stretch it will describe). */
export function watchBridge(p: BridgeProcess): BridgeWatch {
  const since = p.threadTimes();
  const ms = (v: number): string => v.toFixed(1);
  return {
    describe(from, to, gap) {
      const all = p.pauses(from, to);
      const parts = [
        `the bridge: ${all.length} collections (largest ${ms(Math.max(0, ...all.map((c) => c.ms)))} ms, ${ms(all.reduce((a, c) => a + c.ms, 0))} ms in all)`,
      ];
      if (gap !== undefined) {
        const inGap = p.pauses(gap[0], gap[1]);
        parts.push(`${ms(inGap.reduce((a, c) => a + c.ms, 0))} ms of them in the largest gap`);
      }
      const now = p.threadTimes();
      if (since !== undefined && now !== undefined) {
        parts.push(
          `its main thread ${ms(now.runDelay - since.runDelay)} ms waiting for a CPU and ${ms(now.onCpu - since.onCpu)} ms on one`,
        );
      }
      return parts.join(', ');
    },
  };
}

/**
 * Spreads a load run over child processes (so the generator's own CPU limit shows and can be raised),
 * watches the target's CPU and RSS through its `/metrics`, and merges what the children measured.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Progress, RunOptions, RunResult } from './runner.js';
import { Histogram } from './stats.js';
import {
  readProcess,
  readThreads,
  type ThreadCpu,
  type ThreadSnapshot,
  threadCpuBetween,
} from './thread-cpu.js';

const here = import.meta.url;
const CHILD = fileURLToPath(new URL(`./child${here.endsWith('.ts') ? '.ts' : '.js'}`, here));

/**
 * Forks the child entry; from TypeScript sources it runs through tsx. With a `prefix` (e.g. `taskset -c
 * 1`) the child is started through it: `prefix… node [flags] child`. `nodeFlags` go to its node (an echo
 * target runs with the bridge's V8 flags, so the two are compared on the same runtime settings).
 */
export function forkChild(prefix: readonly string[] = [], nodeFlags: readonly string[] = []): ChildProcess {
  const flags = [...nodeFlags, ...(here.endsWith('.ts') ? ['--import', 'tsx'] : [])];
  return fork(CHILD, [], {
    ...(prefix.length > 0 && { execPath: prefix[0] }),
    execArgv: prefix.length > 0 ? [...prefix.slice(1), process.execPath, ...flags] : flags,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

/**
 * Tells a load process to exit, once. It may already be exiting (it sent its result, or failed): a send
 * on its closing channel then fails with EPIPE, which is expected and must not become an uncaught error.
 */
function stop(child: ChildProcess): void {
  if (!child.connected || stopped.has(child)) return;
  stopped.add(child);
  child.send({ type: 'stop' }, () => {});
}
const stopped = new WeakSet<ChildProcess>();

export interface ServerSample {
  readonly cpuSeconds: number;
  readonly rssBytes: number;
  readonly at: number;
}

/** Reads `process_cpu_seconds_total` and `process_resident_memory_bytes` from a /metrics URL. */
export async function sampleServer(metricsUrl: string): Promise<ServerSample | undefined> {
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(2_000) });
    if (!res.ok) return undefined;
    const text = await res.text();
    const cpu = /^process_cpu_seconds_total(?:\{[^}]*\})? ([0-9.e+-]+)$/m.exec(text);
    const rss = /^process_resident_memory_bytes(?:\{[^}]*\})? ([0-9.e+-]+)$/m.exec(text);
    if (cpu === null || rss === null) return undefined;
    return { cpuSeconds: Number(cpu[1]), rssBytes: Number(rss[1]), at: performance.now() };
  } catch {
    return undefined;
  }
}

/** `ws://h:p/v1/media?x` -> `http://h:p/metrics` */
export function metricsUrlOf(mediaUrl: string): string {
  const u = new URL(mediaUrl);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  u.pathname = '/metrics';
  u.search = '';
  return u.toString();
}

export interface OrchestratedResult {
  readonly result: RunResult;
  readonly rtt: Histogram;
  readonly interArrival: Histogram;
  /** Target CPU (share of one core) and RSS over the full-load window; undefined without /metrics. */
  readonly server: { cpuShare: number; rssBytes: number; rssPeakBytes: number } | undefined;
  /** The target's CPU by thread over the same window, when its pid was given (`watch.serverPid`). */
  readonly threads?: ThreadCpu;
  readonly processes: number;
}

/** What a bench may ask of a run beyond the load itself. */
export interface OrchestrateWatch {
  /** The target's pid on this machine: its threads' CPU is read from /proc over the load window. */
  readonly serverPid?: number;
  /** Called once with the load processes' pids, right after they are started. */
  readonly onLoadProcesses?: (pids: number[]) => void;
  /**
   * The load window the target's CPU is read over: from `settleSeconds` after the ramp (default 0) to
   * `trailSeconds` after the load's end (default 1, so the last samples count), sampled once a second.
   */
  readonly window?: { readonly settleSeconds: number; readonly trailSeconds: number };
}

export interface ProgressLine {
  readonly elapsedS: number;
  readonly connected: number;
  readonly failed: number;
  readonly markersReturned: number;
  readonly markersLost: number;
  readonly recentRtt: Histogram;
  readonly server: ServerSample | undefined;
  readonly serverCpuShare: number | undefined;
}

export async function orchestrate(
  options: RunOptions,
  processes: number,
  onProgress: (line: ProgressLine) => void,
  watch: OrchestrateWatch = {},
): Promise<OrchestratedResult> {
  const procs = Math.max(1, Math.min(processes, options.calls));
  const children: ChildProcess[] = [];
  const progress: Progress[] = [];
  const results: RunResult[] = [];
  const metricsUrl = options.metricsUrl ?? metricsUrlOf(options.url);
  const t0 = performance.now();
  const loadFrom = t0 + options.rampSeconds * 1000;
  const loadTo = loadFrom + options.seconds * 1000;
  const windowFrom = loadFrom + (watch.window?.settleSeconds ?? 0) * 1000;
  const windowTo = loadTo + (watch.window?.trailSeconds ?? 1) * 1000;
  let windowStart: ServerSample | undefined;
  let windowEnd: ServerSample | undefined;
  let last: ServerSample | undefined;
  let threadsStart: ThreadSnapshot | undefined;
  let threadsEnd: ThreadSnapshot | undefined;
  const snapshot = (): ThreadSnapshot | undefined => {
    if (watch.serverPid === undefined) return undefined;
    try {
      return { pid: watch.serverPid, at: performance.now(), threads: readThreads(watch.serverPid) };
    } catch {
      return undefined; // the target is gone
    }
  };
  let rssPeak = 0;
  let recent = new Histogram(10_000);
  let finished = false;

  const done = new Promise<void>((resolve, reject) => {
    let left = procs;
    for (let p = 0; p < procs; p++) {
      const calls = Math.floor(options.calls / procs) + (p < options.calls % procs ? 1 : 0);
      const child = forkChild();
      children.push(child);
      progress.push({ connected: 0, failed: 0, markersReturned: 0, markersLost: 0, recentRttMs: [] });
      child.on(
        'message',
        (msg: { type: string; progress?: Progress; result?: RunResult; message?: string }) => {
          if (msg.type === 'progress' && msg.progress !== undefined) {
            progress[p] = msg.progress;
            for (const v of msg.progress.recentRttMs) recent.add(v);
          } else if (msg.type === 'result' && msg.result !== undefined) {
            results.push(msg.result);
            stop(child);
            if (--left === 0) resolve();
          } else if (msg.type === 'failed') reject(new Error(`load process failed: ${msg.message}`));
        },
      );
      // A failed send to a process that is going away (its channel closed) is reported here, not thrown.
      child.on('error', (err) => {
        if (results.length < procs) reject(new Error(`load process failed: ${err.message}`));
      });
      child.on('exit', (code) => {
        if (results.length < procs && code !== 0) reject(new Error(`load process exited with ${code}`));
      });
      child.send({
        type: 'run',
        options: {
          ...options,
          calls,
          idPrefix: `${options.idPrefix}-p${p}`,
          rampSeconds: options.rampSeconds,
        },
      });
    }
    watch.onLoadProcesses?.(children.map((c) => c.pid!));
  });

  // With the target's pid, its CPU and memory come from /proc: scraping /metrics every second would add
  // the target's own cost of rendering them (prom-client's collectors) to what is measured.
  const sample = (): Promise<ServerSample | undefined> => {
    if (watch.serverPid === undefined) return sampleServer(metricsUrl);
    const p = readProcess(watch.serverPid);
    return Promise.resolve(p === undefined ? undefined : { ...p, at: performance.now() });
  };
  const ticker = setInterval(() => {
    void sample().then((s) => {
      if (finished) return;
      const now = performance.now();
      let share: number | undefined;
      if (s !== undefined) {
        if (last !== undefined && s.at > last.at)
          share = (s.cpuSeconds - last.cpuSeconds) / ((s.at - last.at) / 1000);
        last = s;
        if (windowStart === undefined && now >= windowFrom) {
          windowStart = s;
          threadsStart = snapshot();
        }
        if (now <= windowTo) {
          if (now >= windowFrom) {
            windowEnd = s;
            threadsEnd = snapshot();
          }
          rssPeak = Math.max(rssPeak, s.rssBytes);
        }
      }
      const sum = progress.reduce(
        (a, b) => ({
          connected: a.connected + b.connected,
          failed: a.failed + b.failed,
          markersReturned: a.markersReturned + b.markersReturned,
          markersLost: a.markersLost + b.markersLost,
        }),
        { connected: 0, failed: 0, markersReturned: 0, markersLost: 0 },
      );
      onProgress({
        elapsedS: (now - t0) / 1000,
        ...sum,
        recentRtt: recent,
        server: s,
        serverCpuShare: share,
      });
      recent = new Histogram(10_000);
    });
  }, 1000);

  try {
    await done;
  } finally {
    finished = true;
    clearInterval(ticker);
    for (const c of children) stop(c);
  }

  const rtt = new Histogram(10_000);
  const gaps = new Histogram(2_000);
  const merged: RunResult = { ...results[0]!, failures: {} };
  for (const key of [
    'callsStarted',
    'callsConnected',
    'callsFailed',
    'callsDropped',
    'markersSent',
    'markersReturned',
    'markersLost',
    'markersUnmatched',
    'errorEvents',
    'breaches',
    'samplesSent',
    'samplesReceived',
    'chunksShed',
    'cpuMs',
  ] as const) {
    merged[key] = results.reduce((a, r) => a + r[key], 0);
  }
  merged.wallMs = Math.max(...results.map((r) => r.wallMs));
  for (const r of results) {
    rtt.merge(r.rtt);
    gaps.merge(r.interArrival);
    for (const [k, v] of Object.entries(r.failures)) merged.failures[k] = (merged.failures[k] ?? 0) + v;
  }
  let server: OrchestratedResult['server'];
  if (windowStart !== undefined && windowEnd !== undefined && windowEnd.at > windowStart.at) {
    server = {
      cpuShare: (windowEnd.cpuSeconds - windowStart.cpuSeconds) / ((windowEnd.at - windowStart.at) / 1000),
      rssBytes: windowEnd.rssBytes,
      rssPeakBytes: rssPeak,
    };
  }
  const threads =
    threadsStart !== undefined && threadsEnd !== undefined && threadsEnd.at > threadsStart.at
      ? threadCpuBetween(threadsStart, threadsEnd)
      : undefined;
  return { result: merged, rtt, interArrival: gaps, server, ...(threads && { threads }), processes: procs };
}

/**
 * Per-thread CPU of a process, from `/proc/<pid>/task/<tid>/stat` (utime + stime, in clock ticks).
 * The benches split a server's CPU into its main thread (tid == pid), its worker threads (the bridge's
 * only workers are the DSP workers; bench/thread-tag.cjs names them `worker-N`) and the rest (V8's
 * platform threads, where most of the garbage collector's parallel work runs, and libuv's pool).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface TaskStat {
  readonly tid: number;
  /** The thread's name (`comm`, at most 15 characters). */
  readonly comm: string;
  /** utime + stime, clock ticks. */
  readonly ticks: number;
}

/**
 * Parses one `stat` line. `comm` sits in parentheses and may itself hold spaces and parentheses, so the
 * fields are counted from the last `)`: after it come state (field 3), ..., utime (14) and stime (15).
 */
export function parseTaskStat(text: string): TaskStat {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open)
    throw new Error(`not a /proc stat line: ${JSON.stringify(text.slice(0, 80))}`);
  const tid = Number(text.slice(0, open).trim());
  const rest = text
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  // rest[0] is field 3 (state): field n is rest[n - 3].
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (!Number.isInteger(tid) || !Number.isFinite(utime) || !Number.isFinite(stime))
    throw new Error(`not a /proc stat line: ${JSON.stringify(text.slice(0, 80))}`);
  return { tid, comm: text.slice(open + 1, close), ticks: utime + stime };
}

let tickHz: number | undefined;
/** Clock ticks per second (`getconf CLK_TCK`; 100 on Linux when it cannot be read). */
export function clockTicksPerSecond(): number {
  if (tickHz === undefined) {
    try {
      tickHz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      tickHz = 100;
    }
  }
  return tickHz;
}

/** Every thread of `pid` now, by tid; threads that end while being read are left out. */
export function readThreads(pid: number): Map<number, TaskStat> {
  const out = new Map<number, TaskStat>();
  for (const name of readdirSync(`/proc/${pid}/task`)) {
    try {
      const s = parseTaskStat(readFileSync(`/proc/${pid}/task/${name}/stat`, 'utf8'));
      out.set(s.tid, s);
    } catch {
      // ended between the listing and the read
    }
  }
  return out;
}

/**
 * A process's CPU seconds (every thread's, from `/proc/<pid>/stat`) and resident memory (`VmRSS` of
 * `/proc/<pid>/status`), read without asking the process anything: undefined once it is gone.
 */
export function readProcess(pid: number): { cpuSeconds: number; rssBytes: number } | undefined {
  try {
    const { ticks } = parseTaskStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (rss === null) return undefined;
    return { cpuSeconds: ticks / clockTicksPerSecond(), rssBytes: Number(rss[1]) * 1024 };
  } catch {
    return undefined;
  }
}

export interface ThreadSnapshot {
  readonly pid: number;
  /** performance.now() when read. */
  readonly at: number;
  readonly threads: Map<number, TaskStat>;
}

export type ThreadKind = 'main' | 'worker' | 'other';

export function threadKind(pid: number, s: TaskStat): ThreadKind {
  if (s.tid === pid) return 'main';
  return s.comm.startsWith('worker-') ? 'worker' : 'other';
}

export interface ThreadCpu {
  /** Share of one core over the window, by kind. */
  readonly main: number;
  readonly workers: number;
  readonly other: number;
  /** How many threads of each kind were seen at the window's end. */
  readonly counts: { main: number; worker: number; other: number };
}

/**
 * CPU per thread kind between two snapshots of the same process, as a share of one core. A thread that
 * started inside the window counts from zero; one that ended inside it is not counted (a replaced DSP
 * worker's last moments).
 */
export function threadCpuBetween(a: ThreadSnapshot, b: ThreadSnapshot): ThreadCpu {
  const seconds = (b.at - a.at) / 1000;
  const hz = clockTicksPerSecond();
  const sum = { main: 0, worker: 0, other: 0 };
  const counts = { main: 0, worker: 0, other: 0 };
  for (const s of b.threads.values()) {
    const kind = threadKind(b.pid, s);
    sum[kind] += s.ticks - (a.threads.get(s.tid)?.ticks ?? 0);
    counts[kind]++;
  }
  const share = (ticks: number) => (seconds > 0 ? ticks / hz / seconds : 0);
  return { main: share(sum.main), workers: share(sum.worker), other: share(sum.other), counts };
}

/**
 * Pinning for the capacity benches: the server under test on one core, the load generator on another,
 * with `taskset`. A process started as `taskset -c N node …` is pinned before its first instruction, so
 * every thread and child it makes inherits the core; a running process is pinned with `taskset -a -p`
 * (all its threads). `checkPinned` reads each thread's affinity back with `taskset -p`.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface PinCpus {
  /** The core the server under test runs on. */
  readonly server: number;
  /** The core the load generator (this process and its children) runs on. */
  readonly load: number;
}

/**
 * `--pin-cpus SERVER,LOAD`: two different core numbers below `cpuCount`. Throws an error naming the
 * option and what it takes.
 */
export function parsePinCpus(raw: string, cpuCount: number): PinCpus {
  const parts = raw.split(',').map((s) => s.trim());
  const nums = parts.map((s) => (/^\d+$/.test(s) ? Number(s) : Number.NaN));
  if (parts.length !== 2 || nums.some((n) => !Number.isInteger(n) || n >= cpuCount))
    throw new Error(
      `--pin-cpus takes two core numbers from 0 to ${cpuCount - 1}, SERVER,LOAD (e.g. 1,0), got ${JSON.stringify(raw)}`,
    );
  const [server, load] = nums as [number, number];
  if (server === load)
    throw new Error(
      `--pin-cpus needs two different cores for the server and the load, got ${JSON.stringify(raw)}`,
    );
  return { server, load };
}

/** The command prefix that starts a program on `cpu`: `taskset -c <cpu>`. */
export function tasksetPrefix(cpu: number): string[] {
  return ['taskset', '-c', String(cpu)];
}

/** Pins every thread of a running process to `cpu`; children it starts later inherit the core. */
export async function pinProcess(pid: number, cpu: number): Promise<void> {
  await run('taskset', ['-a', '-p', '-c', String(cpu), String(pid)]);
}

/** `pid 123's current affinity list: 1` (taskset -p -c) -> "1". */
export function parseAffinityList(out: string): string {
  const m = /affinity list:\s*(\S+)/.exec(out);
  if (m === null) throw new Error(`unexpected taskset output: ${JSON.stringify(out.trim())}`);
  return m[1]!;
}

export interface PinCheck {
  readonly pid: number;
  readonly threads: number;
  /** Threads whose affinity list is not exactly the one core, with the list they have. */
  readonly stray: { tid: number; cpus: string }[];
}

/**
 * The affinity of every thread of `pid` but those in `except`, each read with `taskset -p -c <tid>`,
 * against `cpu`.
 */
export async function checkPinned(
  pid: number,
  cpu: number,
  except: readonly number[] = [],
): Promise<PinCheck> {
  const tids = readdirSync(`/proc/${pid}/task`)
    .map(Number)
    .filter((tid) => !except.includes(tid));
  const stray: { tid: number; cpus: string }[] = [];
  let threads = 0;
  for (const tid of tids) {
    let out: string;
    try {
      out = (await run('taskset', ['-p', '-c', String(tid)])).stdout;
    } catch {
      continue; // the thread ended between the listing and the read
    }
    threads++;
    const cpus = parseAffinityList(out);
    if (cpus !== String(cpu)) stray.push({ tid, cpus });
  }
  return { pid, threads, stray };
}

/**
 * Moves V8's CPU profiler thread (`v8:ProfEvntProc`, there under `node --cpu-prof`) of a pinned process
 * to `cpu`. On the profiled process's own core the sampler can only run when the thread it samples does
 * not, so its samples would land where that thread blocks, not where it spends its CPU. Returns the
 * thread's tid, or undefined when there is none.
 */
export async function moveProfilerThread(pid: number, cpu: number): Promise<number | undefined> {
  for (const name of readdirSync(`/proc/${pid}/task`)) {
    let comm: string;
    try {
      comm = readFileSync(`/proc/${pid}/task/${name}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    if (comm !== 'v8:ProfEvntProc') continue;
    await run('taskset', ['-p', '-c', String(cpu), name]);
    return Number(name);
  }
  return undefined;
}

/** Per-thread CPU of a process from /proc/<pid>/task/<tid>/stat. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  clockTicksPerSecond,
  parseTaskStat,
  readProcess,
  readThreads,
  threadCpuBetween,
  threadKind,
} from '../../src/load/thread-cpu.js';
import { reach, waitFor } from '../helpers/wait.js';

describe('per-thread CPU', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    child = undefined;
  });

  it('parses a real /proc/self/task stat line of every thread of this process', () => {
    const tids = readdirSync('/proc/self/task').map(Number);
    for (const tid of tids) {
      const text = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const s = parseTaskStat(text);
      expect(s.tid).toBe(tid);
      expect(s.comm).toBe(readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim());
      expect(Number.isInteger(s.ticks) && s.ticks >= 0).toBe(true);
    }
    // This (main) thread has run for a while: at least one tick of CPU, and no more than its process's.
    const main = parseTaskStat(readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8'));
    const cpu = process.cpuUsage();
    expect(main.ticks).toBeGreaterThan(0);
    expect(main.ticks / clockTicksPerSecond()).toBeLessThanOrEqual((cpu.user + cpu.system) / 1e6 + 0.02);
  });

  it('counts fields from the last ")" so a name with spaces and parentheses cannot shift them', () => {
    // Field 14 (utime) = 7, field 15 (stime) = 5.
    const line = '123 (a) b (c)) S 1 123 123 0 -1 4194304 10 0 0 0 7 5 0 0 20 0 1 0 100 0 0\n';
    expect(parseTaskStat(line)).toEqual({ tid: 123, comm: 'a) b (c)', ticks: 12 });
    expect(() => parseTaskStat('nonsense')).toThrow(/not a \/proc stat line/);
  });

  it('splits a process into main thread, tagged worker threads and the rest', async () => {
    // A busy worker beside an idle main thread, tagged by the benches' preload.
    const code =
      "const { Worker } = require('node:worker_threads');" +
      "const w = new Worker('for (;;) {}', { eval: true });" +
      "w.on('online', () => console.log('ready')); setInterval(() => {}, 1000);";
    const c = spawn(
      process.execPath,
      ['--require', fileURLToPath(new URL('../../bench/thread-tag.cjs', import.meta.url)), '-e', code],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    child = c;
    await new Promise<void>((resolve, reject) => {
      c.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
      c.once('exit', (code) => reject(new Error(`exited ${code}`)));
    });
    const pid = c.pid!;
    const snap = () => ({ pid, at: performance.now(), threads: readThreads(pid) });
    let a = snap();
    // The worker names itself as it starts: wait for the name, with a deadline.
    await waitFor(
      () => {
        a = snap();
        return [...a.threads.values()].some((s) => threadKind(pid, s) === 'worker');
      },
      5_000,
      'a thread named worker-N',
      20,
    );
    // 600 ms of the threads' CPU time.
    await reach(a.at + 600);
    const b = snap();
    const cpu = threadCpuBetween(a, b);
    expect(cpu.counts.main).toBe(1);
    expect(cpu.counts.worker).toBe(1);
    expect(cpu.counts.other).toBeGreaterThan(0);
    // The spinning worker takes what the shared machine gives it; the idle main thread next to nothing.
    expect(cpu.workers).toBeGreaterThan(0.1);
    expect(cpu.main).toBeLessThan(0.1);
    expect(cpu.workers).toBeGreaterThan(5 * cpu.main);
  });
});

describe('readProcess', () => {
  it("reads a live process's CPU seconds and resident memory from /proc, and nothing for a gone one", () => {
    const before = readProcess(process.pid)!;
    const rss = process.memoryUsage().rss;
    // Within 20 % of what Node itself reports (the two reads are a moment apart).
    expect(Math.abs(before.rssBytes - rss) / rss).toBeLessThan(0.2);
    const until = performance.now() + 150;
    let x = 0;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const after = readProcess(process.pid)!;
    // 150 ms of busy loop: at least 50 ms more CPU, however coarse the clock ticks.
    expect(after.cpuSeconds - before.cpuSeconds).toBeGreaterThanOrEqual(0.05);
    expect(readProcess(2 ** 22 + 1)).toBeUndefined();
  });
});

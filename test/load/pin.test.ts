/** Pinning for the capacity benches: the option's parsing, and affinity read back from real threads. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkPinned,
  moveProfilerThread,
  parseAffinityList,
  parsePinCpus,
  tasksetPrefix,
} from '../../src/load/pin.js';

/** A node process with one worker thread, started with `prefix`; resolves once both threads run. */
function nodeWithWorker(prefix: string[], nodeFlags: string[] = []): Promise<ChildProcess> {
  const code =
    "const { Worker } = require('node:worker_threads');" +
    "const w = new Worker('setInterval(() => {}, 1000)', { eval: true });" +
    "w.on('online', () => console.log('ready')); setInterval(() => {}, 1000);";
  const argv = [...prefix, process.execPath, ...nodeFlags, '-e', code];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(child);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
}

describe('pinning', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  it('parses --pin-cpus SERVER,LOAD and names the option when it is wrong', () => {
    expect(parsePinCpus('1,0', 2)).toEqual({ server: 1, load: 0 });
    expect(parsePinCpus(' 0 , 3', 4)).toEqual({ server: 0, load: 3 });
    expect(() => parsePinCpus('1,1', 2)).toThrow(/--pin-cpus needs two different cores/);
    expect(() => parsePinCpus('2,0', 2)).toThrow(/--pin-cpus takes two core numbers from 0 to 1/);
    expect(() => parsePinCpus('1', 2)).toThrow(/--pin-cpus takes two core numbers/);
    expect(() => parsePinCpus('1,0,2', 4)).toThrow(/--pin-cpus takes two core numbers/);
    expect(() => parsePinCpus('a,0', 2)).toThrow(/got "a,0"/);
  });

  it("reads taskset's affinity list", () => {
    expect(parseAffinityList("pid 4242's current affinity list: 1\n")).toBe('1');
    expect(parseAffinityList("pid 4242's current affinity list: 0,1\n")).toBe('0,1');
    expect(() => parseAffinityList('taskset: failed')).toThrow(/unexpected taskset output/);
  });

  it.runIf(cpus().length >= 2)(
    'a process started under taskset -c has every thread, workers included, on that core',
    async () => {
      const child = await nodeWithWorker(tasksetPrefix(1));
      children.push(child);
      const check = await checkPinned(child.pid!, 1);
      // The main thread, the worker and V8's and libuv's own threads.
      expect(check.threads).toBeGreaterThanOrEqual(3);
      expect(check.stray).toEqual([]);
      // Against the other core, every thread is reported with the core it has.
      const other = await checkPinned(child.pid!, 0);
      expect(other.stray.length).toBe(check.threads);
      expect(other.stray.every((s) => s.cpus === '1')).toBe(true);
    },
  );

  it.runIf(cpus().length >= 2)('an unpinned process is reported as stray', async () => {
    const child = await nodeWithWorker([]);
    children.push(child);
    const check = await checkPinned(child.pid!, 0);
    expect(check.stray.length).toBe(check.threads);
  });

  it.runIf(cpus().length >= 2)(
    "moves only the CPU profiler's sampler thread off a pinned process's core, and the check can leave it out",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'pin-prof-'));
      try {
        const child = await nodeWithWorker(tasksetPrefix(1), ['--cpu-prof', '--cpu-prof-dir', dir]);
        children.push(child);
        const tid = await moveProfilerThread(child.pid!, 0);
        expect(tid).toBeGreaterThan(child.pid!);
        const all = await checkPinned(child.pid!, 1);
        expect(all.stray).toEqual([{ tid, cpus: '0' }]);
        expect((await checkPinned(child.pid!, 1, [tid!])).stray).toEqual([]);
        // Without --cpu-prof there is no such thread.
        const plain = await nodeWithWorker(tasksetPrefix(1));
        children.push(plain);
        expect(await moveProfilerThread(plain.pid!, 0)).toBeUndefined();
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

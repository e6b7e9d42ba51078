/**
 * How long this process was stopped between two moments, for timing checks: its main thread waiting,
 * runnable, for a CPU (Linux `schedstat` run_delay), or stopped for garbage collection.
 *
 * On a shared machine other processes' load shows up in timing tests as the whole test process being
 * kept off the CPU. That time is measurable: the kernel counts it per thread. And the test process holds
 * the test runner, the emulated platform and the bot beside the bridge: a garbage collection of all that
 * stops everything in it for a few milliseconds (8-10 ms measured), and V8 reports each pause. Timing
 * checks subtract the larger of the two from the interval it fell in, so they judge the bridge's own
 * pacing, not the machine's other tenants or the test process's heap.
 */
import { readFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

const path = `/proc/${process.pid}/task/${process.pid}/schedstat`;
let available = true;

/** This process's main thread's time on a CPU and run_delay so far (ms); undefined where not provided. */
function threadTimes(): { onCpu: number; runDelay: number } | undefined {
  if (!available) return undefined;
  try {
    const fields = readFileSync(path, 'utf8').split(' ');
    return { onCpu: Number(fields[0]) / 1e6, runDelay: Number(fields[1]) / 1e6 };
  } catch {
    available = false;
    return undefined;
  }
}

/** This process's main thread's run_delay so far (ms); undefined where the kernel does not provide it. */
export function runDelayMs(): number | undefined {
  return threadTimes()?.runDelay;
}

/** Now, as a timing check keeps it: performance.now(), with the main thread's CPU and run_delay so far. */
export function moment(): Moment {
  const t = threadTimes();
  return { at: performance.now(), runDelay: t?.runDelay, onCpu: t?.onCpu };
}

/** The garbage collections seen (start and end, on performance.now()), the latest MAX_PAUSES. */
const pauses: { start: number; end: number }[] = [];
const MAX_PAUSES = 2_000;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) pauses.push({ start: e.startTime, end: e.startTime + e.duration });
  if (pauses.length > MAX_PAUSES) pauses.splice(0, pauses.length - MAX_PAUSES);
}).observe({ entryTypes: ['gc'] });

/** Milliseconds of garbage collection between `from` and `to` (performance.now()). */
export function gcPausedMs(from: number, to: number): number {
  let ms = 0;
  for (const p of pauses) ms += Math.max(0, Math.min(p.end, to) - Math.max(p.start, from));
  return ms;
}

/** A moment seen by a timing check: when (performance.now()), and the run_delay (and CPU time) then. */
export interface Moment {
  readonly at: number;
  readonly runDelay?: number | undefined;
  /** The main thread's time on a CPU so far (ms), where kept: says what a long gap was spent on. */
  readonly onCpu?: number | undefined;
}

/**
 * How long this process was stopped between `a` and the later `b`: the larger of its time off the CPU
 * while runnable and its garbage collection (never both: a collection may itself have been kept off
 * the CPU, and counting it twice would excuse more than happened).
 */
export function stoppedMs(a: Moment, b: Moment): number {
  const waited = a.runDelay !== undefined && b.runDelay !== undefined ? b.runDelay - a.runDelay : 0;
  return Math.max(waited, gcPausedMs(a.at, b.at));
}

/**
 * Where the time between `a` and `b` went, for a failing check's message: on the CPU (the process's own
 * work, the bridge's included), runnable but waiting for a CPU, collecting garbage; the rest the main
 * thread slept (waiting for its next event, or held in a blocking call).
 */
export function describeGap(a: Moment, b: Moment): string {
  const ms = (v: number): string => v.toFixed(1);
  const parts = [`${ms(b.at - a.at)} ms`];
  if (a.onCpu !== undefined && b.onCpu !== undefined) parts.push(`${ms(b.onCpu - a.onCpu)} on the CPU`);
  if (a.runDelay !== undefined && b.runDelay !== undefined) {
    parts.push(`${ms(b.runDelay - a.runDelay)} waiting for a CPU`);
  }
  parts.push(`${ms(gcPausedMs(a.at, b.at))} collecting garbage`);
  return parts.join(', ');
}

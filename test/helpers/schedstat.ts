/**
 * How long this process was stopped between two moments, for timing checks: its main thread waiting,
 * runnable, for a CPU (Linux `schedstat` run_delay), or stopped for garbage collection.
 *
 * A timing check measures a bridge from the receiving side: the emulated platform in the test process
 * stamps each frame as it arrives. On a shared machine that process is sometimes kept off the CPU by
 * other tenants, or stopped a few milliseconds to collect its own garbage (the runner, the platform and
 * the test bot live in it), and a frame that arrived meanwhile is stamped late through no fault of the
 * bridge. The kernel counts the first per thread and V8 reports the second, so timing checks subtract
 * the larger of the two from the interval it fell in: the receiver's own stalls, and only those.
 *
 * That holds only while the bridge runs in another process (the rig's `process: true`): a bridge in this
 * one would have its own pauses excused with the test's. So every moment records whether a bridge was
 * running in this process when it was taken (rig.ts says when one starts and stops); nothing is excused
 * over such moments, and the pacing checks refuse them (`expectBridgeElsewhere`).
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

/** Bridges running in this process now (rig.ts counts them). */
let bridgesHere = 0;

/**
 * A bridge starts in this process: from now until the returned function is called, moments say so and
 * no stall of this process is excused (it would be the bridge's own).
 */
export function bridgeStartedHere(): () => void {
  bridgesHere++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    bridgesHere--;
  };
}

/** Now, as a timing check keeps it: performance.now(), with the main thread's CPU and run_delay so far. */
export function moment(): Moment {
  const t = threadTimes();
  return { at: performance.now(), runDelay: t?.runDelay, onCpu: t?.onCpu, bridgeHere: bridgesHere > 0 };
}

/** Now, without the CPU times (cheaper, for arrivals no check subtracts stalls from). */
export function stamp(): Moment {
  return { at: performance.now(), bridgeHere: bridgesHere > 0 };
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
  /** A bridge was running in this process: its stalls were the bridge's too, and are never excused. */
  readonly bridgeHere?: boolean | undefined;
}

/**
 * Throws unless every moment was taken with no bridge running in this process: a pacing check judges a
 * bridge in a process of its own (the rig's `process: true`), whose pauses are then in the gaps it sees.
 */
export function expectBridgeElsewhere(moments: readonly Moment[]): void {
  if (moments.some((m) => m.bridgeHere !== false)) {
    throw new Error(
      "a pacing check needs the bridge in a process of its own (startRig({ process: true })) and its arrivals stamped by moment() or stamp(): a bridge in the test process would have its own pauses excused with the receiver's",
    );
  }
}

/**
 * How long this process was stopped between `a` and the later `b`: the larger of its time off the CPU
 * while runnable and its garbage collection (never both: a collection may itself have been kept off
 * the CPU, and counting it twice would excuse more than happened). Zero where a bridge was running in
 * this process at either moment, or where either was not stamped here (nothing known of it).
 */
export function stoppedMs(a: Moment, b: Moment): number {
  if (a.bridgeHere !== false || b.bridgeHere !== false) return 0;
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
  if (a.bridgeHere !== false || b.bridgeHere !== false) parts.push('none of it excused (a bridge ran here)');
  return parts.join(', ');
}

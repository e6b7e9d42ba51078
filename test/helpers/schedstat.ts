/**
 * How long this process's main thread has waited, runnable, for a CPU (Linux `schedstat` run_delay).
 *
 * On a shared machine other processes' load shows up in timing tests as the whole test process being
 * kept off the CPU. That time is measurable: the kernel counts it per thread. Timing checks subtract it
 * from the interval it fell in, so they judge the bridge's own pacing, not the machine's other tenants.
 * Returns undefined where the kernel does not provide it (then nothing is subtracted).
 */
import { readFileSync } from 'node:fs';

const path = `/proc/${process.pid}/task/${process.pid}/schedstat`;
let available = true;

export function runDelayMs(): number | undefined {
  if (!available) return undefined;
  try {
    const fields = readFileSync(path, 'utf8').split(' ');
    return Number(fields[1]) / 1e6;
  } catch {
    available = false;
    return undefined;
  }
}

/**
 * Preloaded with `--import` into a bridge the tests run as a child (bridge-process.ts): each of its
 * garbage collections is written to stderr as `gc-pause <start, ms since the epoch> <duration ms> <kind>`,
 * so a timing check in the test process can say whether the bridge itself was stopped in a gap it saw.
 * One line per collection, written after it: it adds nothing to the pauses it reports.
 */
import { PerformanceObserver, performance } from 'node:perf_hooks';

new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const start = (performance.timeOrigin + e.startTime).toFixed(3);
    process.stderr.write(`gc-pause ${start} ${e.duration.toFixed(3)} ${e.detail?.kind ?? 0}\n`);
  }
}).observe({ entryTypes: ['gc'] });

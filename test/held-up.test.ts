/**
 * The bridge's own hold-ups (src/held-up.ts): a stalled event loop is seen by the watch, a late DSP
 * worker by the pool; nothing watches the loop while no one asks.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, expect, it } from 'vitest';
import { HELD_UP_MS, HeldUp } from '../src/held-up.js';
import { createPipeline, type DspPipeline } from '../src/pipeline/index.js';
import { quietFor, waitFor } from './helpers/wait.js';
import { LegLog } from './pipeline/helpers.js';

/** Holds the event loop for `ms` (a stall: a long garbage collection, a core taken by other work). */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

const pipelines: DspPipeline[] = [];
afterEach(async () => {
  await Promise.all(pipelines.splice(0).map((p) => p.close()));
});

it('counts only what ran at least HELD_UP_MS late', () => {
  const h = new HeldUp();
  expect(h.lastAt).toBe(Number.NEGATIVE_INFINITY);
  h.late(1_000, HELD_UP_MS - 1);
  expect(h.lastAt).toBe(Number.NEGATIVE_INFINITY);
  h.late(1_000, HELD_UP_MS);
  expect(h.lastAt).toBe(1_000);
  h.late(900, 500); // an older hold-up does not move it back
  expect(h.lastAt).toBe(1_000);
});

it('sees a stalled event loop while watched, and nothing while not', async () => {
  const h = new HeldUp();
  stall(80);
  await quietFor(30, 'no watch: no timer, nothing seen');
  expect(h.lastAt).toBe(Number.NEGATIVE_INFINITY);
  const unwatch = h.watch();
  const unwatch2 = h.watch();
  const before = performance.now();
  stall(80);
  await waitFor(() => h.lastAt >= before + 80, 2_000, 'the stall seen');
  // One watch released: still watched.
  unwatch();
  unwatch(); // a second release of the same watch changes nothing
  const before2 = performance.now();
  stall(80);
  await waitFor(() => h.lastAt >= before2 + 80, 2_000, 'the second stall seen');
  unwatch2();
  const seen = h.lastAt;
  stall(80);
  await quietFor(30, 'no watch left: the third stall unseen');
  expect(h.lastAt).toBe(seen);
});

/** A one-worker pipeline telling `h` of its hold-ups, with a leg, started and answering. */
async function answeringWorker() {
  const h = new HeldUp();
  const p = createPipeline({ workers: 1, heldUp: h });
  pipelines.push(p);
  const log = new LegLog();
  const leg = p.open({ from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 8000 } }, log);
  // A fresh worker's first answer waits on its start-up.
  leg.push(new Uint8Array(160));
  await waitFor(() => log.chunks.length === 1, 10_000, 'the first chunk back');
  return { h, p, log, leg };
}

it('the worker pool notes a worker that took long to answer', async () => {
  const { h, p, log, leg } = await answeringWorker();
  p.injectWorkerFault(0, 'slow', 60);
  const slowed = performance.now();
  leg.push(new Uint8Array(160));
  await waitFor(() => log.chunks.length === 2, 5_000, 'the slow chunk back');
  expect(h.lastAt).toBeGreaterThanOrEqual(slowed + 60);
});

it('while watched, sees a worker that is still stuck, before it answers', async () => {
  const { h, p, log, leg } = await answeringWorker();
  const unwatch = h.watch();
  p.injectWorkerFault(0, 'slow', 1_000);
  const slowed = performance.now();
  leg.push(new Uint8Array(160));
  await waitFor(() => h.lastAt >= slowed + HELD_UP_MS, 900, 'the stuck worker seen');
  expect(log.chunks).toHaveLength(1); // not answered yet
  unwatch();
  await waitFor(() => log.chunks.length === 2, 5_000, 'the slow chunk back');
});

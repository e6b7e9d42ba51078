/**
 * A call's two legs share a worker (`open(spec, sink, { near })`), so a worker's loss reaches
 * only the calls on it; without `near`, legs go to the least-loaded worker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPipeline, type DspPipeline } from '../../src/pipeline/index.js';
import type { LegSpec } from '../../src/pipeline/types.js';
import { LegLog } from './helpers.js';

const UP: LegSpec = { from: { codec: 'slin', rate: 8000 }, to: { codec: 'slin', rate: 16000 } };
const DOWN: LegSpec = { from: { codec: 'slin', rate: 16000 }, to: { codec: 'slin', rate: 8000 } };

let p: DspPipeline | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

describe('worker affinity', () => {
  it('opens a leg beside `near`, and otherwise on the least-loaded worker', () => {
    p = createPipeline({ workers: 2 });
    const calls = Array.from({ length: 6 }, () => {
      const callerToBot = p!.open(UP, new LegLog());
      const botToCaller = p!.open(DOWN, new LegLog(), { near: callerToBot });
      return [callerToBot, botToCaller] as const;
    });
    for (const [a, b] of calls) expect(p.workerOf(b)).toBe(p.workerOf(a));
    // Whole calls spread over both workers.
    expect(new Set(calls.map(([a]) => p!.workerOf(a))).size).toBe(2);
    expect(p.stats().perWorker).toEqual([6, 6]);
  });
});

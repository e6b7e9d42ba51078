/**
 * A call's two DSP directions share a worker (`open(spec, sink, near)`), so a worker's loss reaches
 * only the calls on it; without `near`, sessions go to the least-loaded worker.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPipeline, type DspPipeline } from '../../src/pipeline/index.js';
import type { PipelineSessionSpec } from '../../src/pipeline/types.js';
import { Collector } from './helpers.js';

const SPEC: PipelineSessionSpec = {
  callerIn: { codec: 'slin', sampleRate: 8000 },
  callerOut: { codec: 'slin', sampleRate: 8000 },
  botRate: 16000,
};

let p: DspPipeline | undefined;
afterEach(async () => {
  await p?.close();
  p = undefined;
});

describe('worker affinity', () => {
  it('opens a session beside `near`, and otherwise on the least-loaded worker', () => {
    p = createPipeline({ workers: 2 });
    const calls = Array.from({ length: 6 }, () => {
      const callerToBot = p!.open(SPEC, new Collector());
      const botToCaller = p!.open(SPEC, new Collector(), callerToBot);
      return [callerToBot, botToCaller] as const;
    });
    for (const [a, b] of calls) expect(p.workerOf(b)).toBe(p.workerOf(a));
    // Whole calls spread over both workers.
    expect(new Set(calls.map(([a]) => p!.workerOf(a))).size).toBe(2);
    expect(p.stats().perWorker).toEqual([6, 6]);
  });
});

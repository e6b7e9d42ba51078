import { describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { generateTone } from '../../src/audio/tone.js';
import { asBackground, fillChunk, markerPlan, OnsetDetector } from '../../src/load/markers.js';
import { Histogram } from '../../src/load/stats.js';

describe('load markers', () => {
  const plan = markerPlan(8000, 20, 1000, 60);

  it('puts one burst onset at the start of every marker interval, none before the first', () => {
    const bg = asBackground(generateTone(440, 8000, 8000));
    const out = new Int16Array(plan.chunkSamples);
    const onsets: number[] = [];
    for (let i = 0; i < 50 * 5; i++) if (fillChunk(plan, bg, i, out)) onsets.push(i);
    expect(onsets).toEqual([50, 100, 150, 200]);
  });

  it('finds each burst once, through G.711, and never in the background', () => {
    const bg = asBackground(generateTone(440, 8000, 8000, 0.9));
    const chunk = new Int16Array(plan.chunkSamples);
    const wire = new Uint8Array(plan.chunkSamples);
    const back = new Int16Array(plan.chunkSamples);
    const det = new OnsetDetector(plan);
    const found: number[] = [];
    for (let i = 0; i < 250; i++) {
      const sent = fillChunk(plan, bg, i, chunk);
      encodeInto('pcmu', chunk, wire);
      decodeInto('pcmu', wire, back);
      const at = det.push(back);
      if (at >= 0) found.push(i);
      if (sent) expect(at).toBe(0);
    }
    expect(found).toEqual([50, 100, 150, 200]);
  });

  it('scales any background far below the detection threshold', () => {
    const loud = generateTone(1000, 8000, 8000, 1.0);
    const bg = asBackground(loud);
    expect(Math.max(...bg.map(Math.abs))).toBe(1000);
    expect(new OnsetDetector(plan).push(bg)).toBe(-1);
  });
});

describe('histogram', () => {
  it('gives nearest-rank percentiles at 0.1 ms resolution and merges', () => {
    const a = new Histogram(1000);
    for (let i = 1; i <= 100; i++) a.add(i);
    expect(a.percentiles()).toMatchObject({ p50: 50, p95: 95, p99: 99, max: 100, n: 100 });
    const b = new Histogram(1000);
    for (let i = 0; i < 100; i++) b.add(0.3);
    a.merge(b);
    expect(a.quantile(0.5)).toBeCloseTo(0.3, 5);
    expect(a.n).toBe(200);
  });
});

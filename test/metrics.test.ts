/**
 * Hot-path metrics: per-chunk tallies reach prom-client on every read path, reset clears what is
 * pending, and the hand-rolled histogram renders exactly as a prom-client histogram would.
 */
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics, HotHistogram } from '../src/metrics.js';

async function value(m: ReturnType<typeof createMetrics>, name: string, leg?: string): Promise<number> {
  const got = await m.registry.getSingleMetric(name)!.get();
  return got.values.filter((v) => leg === undefined || v.labels.leg === leg).reduce((s, v) => s + v.value, 0);
}

describe('metrics', () => {
  it('tallies show in /metrics text and in direct reads, each count once', async () => {
    const m = createMetrics();
    m.hot.framesInCaller.add();
    m.hot.framesInCaller.add();
    m.hot.bytesOutBot.add(640);
    expect(await value(m, 'voicebridge_frames_in_total', 'caller')).toBe(2);
    m.hot.framesInCaller.add();
    const text = await m.registry.metrics();
    expect(text).toMatch(/voicebridge_frames_in_total\{leg="caller"\} 3\n/);
    expect(text).toMatch(/voicebridge_bytes_out_total\{leg="bot"\} 640\n/);
    // Read again: nothing pending is added twice.
    expect(await value(m, 'voicebridge_frames_in_total', 'caller')).toBe(3);
  });

  it('resetMetrics clears counts still pending in tallies', async () => {
    const m = createMetrics();
    m.hot.framesOutCaller.add(5);
    m.hot.lateChunks.add(2);
    m.registry.resetMetrics();
    m.hot.framesOutCaller.add();
    expect(await value(m, 'voicebridge_frames_out_total', 'caller')).toBe(1);
    expect(await value(m, 'voicebridge_late_chunks_total')).toBe(0);
  });

  it('HotHistogram renders the same text as a prom-client histogram with the same observations', async () => {
    const bounds = [1, 2, 5, 10, 20, 40, 80, 160];
    const ours = new Registry();
    const theirs = new Registry();
    const h = new HotHistogram('x_ms', 'help text', bounds);
    ours.registerMetric(h as never);
    const ref = new Histogram({ name: 'x_ms', help: 'help text', buckets: bounds, registers: [theirs] });
    for (const v of [0, 0.5, 1, 1.5, 2, 7, 19.9, 20, 33, 200, 1e6]) {
      h.observe(v);
      ref.observe(v);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});

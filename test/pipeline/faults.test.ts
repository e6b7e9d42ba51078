import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createPipeline, type DspPipeline, type WorkerFault } from '../../src/pipeline/index.js';
import type { Leg, LegSpec } from '../../src/pipeline/types.js';
import { quietFor, waitFor } from '../helpers/wait.js';
import { type CallSpec, Collector, concat, encode, reference, tone } from './helpers.js';

/** The caller -> bot leg of a µ-law 8 kHz call with a 16 kHz bot. */
const SPEC: CallSpec = {
  callerIn: { codec: 'pcmu', sampleRate: 8000 },
  callerOut: { codec: 'pcmu', sampleRate: 8000 },
  botRate: 16000,
};
const UP: LegSpec = { from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'slin', rate: 16000 } };

const open: DspPipeline[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close()));
});

function setup(sessions: number) {
  const lines: Record<string, unknown>[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  const log = createLogger('info', dest);
  const metrics = createMetrics();
  const p = createPipeline({ workers: 2, log, metrics });
  open.push(p);
  const sinks = Array.from({ length: sessions }, () => new Collector());
  const live = sinks.map((k) => p.open(UP, k.up));
  // Each session its own tone, 20 ms µ-law chunks, so a mixed-up or stale DSP state shows in the bytes.
  const chunks = live.map((_, i) => {
    const pcm = tone(300 + 37 * i, 8000, 160 * 40, 9000);
    return Array.from({ length: 40 }, (_, c) => encode('pcmu', pcm.subarray(c * 160, (c + 1) * 160)));
  });
  return { p, lines, metrics, sinks, live, chunks };
}

function feed(live: readonly Leg[], chunks: readonly Uint8Array[][], from: number, to: number) {
  for (let c = from; c < to; c++) for (let i = 0; i < live.length; i++) live[i]!.push(chunks[i]![c]!);
}

describe.each(['throw', 'exit'] as const)('a DSP worker that dies (%s)', (fault: WorkerFault) => {
  it('is replaced; its legs go on from fresh state after one gap; the others are untouched', async () => {
    const N = 40;
    const { p, lines, metrics, sinks, live, chunks } = setup(N);
    const victims = live.map((s) => p.workerOf(s) === 0);
    expect(victims.filter(Boolean).length).toBe(N / 2);

    feed(live, chunks, 0, 20);
    await waitFor(
      () => sinks.every((k) => k.bot.length === 20),
      10_000,
      'sinks.every((k) => k.bot.length === 20)',
    );
    p.injectWorkerFault(0, fault);
    await waitFor(
      () => sinks.every((k, i) => k.gaps.length === (victims[i] ? 1 : 0)),
      10_000,
      'sinks.every((k, i) => k.gaps.length === (victims[i] ? 1 : 0))',
    );

    feed(live, chunks, 20, 40);
    await waitFor(
      () => sinks.every((k) => k.bot.length === 40),
      10_000,
      'sinks.every((k) => k.bot.length === 40)',
    );
    await quietFor(50, 'no chunk past the 40 sent');

    sinks.forEach((k, i) => {
      const got = concat(k.bot);
      if (victims[i]) {
        expect(k.gaps).toHaveLength(1);
        expect(k.gaps[0]).toMatch(/dsp worker 0 died/);
        // Before the fault: the session's continuous output. After: a fresh resampler from chunk 20.
        const before = reference(SPEC, chunks[i]!.slice(0, 20), []).bot;
        const after = reference(SPEC, chunks[i]!.slice(20), []).bot;
        expect(Buffer.from(got).equals(Buffer.concat([before, after])), `victim ${i}`).toBe(true);
      } else {
        expect(k.gaps).toHaveLength(0);
        const whole = reference(SPEC, chunks[i]!, []).bot;
        expect(Buffer.from(got).equals(Buffer.from(whole)), `bystander ${i}`).toBe(true);
      }
    });

    const gaps = (await metrics.dspGaps.get()).values[0]?.value;
    expect(gaps).toBe(N / 2);
    expect(p.stats().replaced).toBe(1);
    expect(p.stats().perWorker).toEqual([N / 2, N / 2]);
    const died = lines.filter(
      (l) => l['msg'] === 'dsp worker died; replaced, its legs go on with fresh DSP state',
    );
    expect(died).toHaveLength(1);
    expect(died[0]).toMatchObject({ worker: 0, legs: N / 2 });
  });
});

describe('a DSP worker that hangs', () => {
  it('is terminated by the watchdog and replaced', async () => {
    const { p, sinks, live, chunks } = setup(4);
    feed(live, chunks, 0, 2);
    await waitFor(
      () => sinks.every((k) => k.bot.length === 2),
      10_000,
      'sinks.every((k) => k.bot.length === 2)',
    );
    p.injectWorkerFault(1, 'hang');
    // Audio sent to the hung worker is lost; audio after the replacement comes through.
    feed(live, chunks, 2, 3);
    await waitFor(
      () => sinks.every((k, i) => k.gaps.length === (p.workerOf(live[i]!) === 1 ? 1 : 0)),
      10_000,
      'one gap on each leg of the hung worker',
    );
    feed(live, chunks, 3, 4);
    await waitFor(
      () => sinks.every((k, i) => k.bot.length === (p.workerOf(live[i]!) === 1 ? 3 : 4)),
      10_000,
      'the audio after the replacement',
    );
  });
});

describe('a DSP worker that keeps dying before it answers', () => {
  it('is respawned after a growing delay, not in a tight loop, and its legs still go on', async () => {
    const { p, lines, sinks, live, chunks } = setup(2);
    const victim = live.findIndex((s) => p.workerOf(s) === 0);
    feed(live, chunks, 0, 1);
    await waitFor(
      () => sinks.every((k) => k.bot.length === 1),
      10_000,
      'sinks.every((k) => k.bot.length === 1)',
    );
    // On the first death, poison the replacement's first batch: it dies before answering anything,
    // which is what a worker that cannot start looks like, so the next replacement must wait.
    const sink = sinks[victim]!;
    sink.up.gap = (reason) => {
      sink.gaps.push(reason);
      if (sink.gaps.length === 1) p.injectWorkerFault(0, 'exit');
    };
    p.injectWorkerFault(0, 'exit');
    await waitFor(() => sink.gaps.length === 2, 10_000, 'sink.gaps.length === 2');
    feed(live, chunks, 1, 2);
    await waitFor(() => sinks[victim]!.bot.length === 2, 10_000, 'sinks[victim]!.bot.length === 2');
    const delays = lines
      .filter((l) => l['msg']?.toString().startsWith('dsp worker died'))
      .map((l) => l['respawnDelayMs']);
    expect(delays).toEqual([0, 100]);
    expect(p.stats().replaced).toBe(2);
  });
});

describe('worker fault injection', () => {
  it('names a worker that exists', () => {
    const p = createPipeline({ workers: 1 });
    open.push(p);
    expect(() => p.injectWorkerFault(3, 'throw')).toThrow(/no worker 3/);
    const inline = createPipeline({ workers: 0 });
    expect(() => inline.injectWorkerFault(0, 'throw')).toThrow(/inline/);
  });
});

/**
 * The noise suppressor as a step of a leg, inline and on a worker: both give the same bytes; markers
 * stay behind their audio and a reset drops what was pushed before it; a suppressor that throws, or
 * that never loaded, leaves the leg running plain with no audio lost, said once per leg (a log line and
 * voicebridge_denoise_failures_total); a worker that dies re-opens its legs with the suppressor, or
 * without it once it has failed.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RnnoiseModule } from '../../src/audio/denoise.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import {
  createPipeline,
  type DspPipeline,
  loadSuppressor,
  type Suppressor,
} from '../../src/pipeline/index.js';
import type { LegSpec } from '../../src/pipeline/types.js';
import { captureLog } from '../helpers/log-capture.js';
import { waitFor } from '../helpers/wait.js';
import { concat, LegLog, pcmOf, tone } from './helpers.js';

const SPEC: LegSpec = {
  from: { codec: 'pcmu', rate: 8000 },
  to: { codec: 'slin', rate: 16000 },
  steps: ['denoise'],
};
const PLAIN: LegSpec = { from: SPEC.from, to: SPEC.to };
const FAILED = /noise suppressor failed; the call goes on without it/;

let suppressor: Suppressor;
beforeAll(async () => {
  suppressor = await loadSuppressor();
  if (suppressor instanceof Error) throw suppressor;
});

const open: DspPipeline[] = [];
afterEach(async () => {
  for (const p of open.splice(0)) await p.close();
});

function pipeline(workers: number, o: { suppressor?: Suppressor; module?: string; metrics?: Metrics } = {}) {
  const logs = captureLog('info');
  const metrics = o.metrics ?? createMetrics();
  const p = createPipeline({
    workers,
    log: logs.log,
    metrics,
    ...(workers === 0 && { suppressor: 'suppressor' in o ? o.suppressor : suppressor }),
    ...(o.module !== undefined && { suppressorModule: o.module }),
  });
  open.push(p);
  return { p, logs, metrics };
}

/** Noise-like µ-law input: a tone with a seeded hiss, 20 ms chunks. */
function chunks(n: number): Uint8Array[] {
  let s = 1;
  const out: Uint8Array[] = [];
  for (let c = 0; c < n; c++) {
    const pcm = tone(300, 8000, 160, 4000, c);
    const b = new Uint8Array(160);
    for (let i = 0; i < 160; i++) {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      b[i] = ulaw(pcm[i]! + ((s >> 8) % 2000) - 1000);
    }
    out.push(b);
  }
  return out;
}

/** G.711 µ-law of one sample, written out here so the input does not depend on the codec under test. */
function ulaw(sample: number): number {
  const BIAS = 0x84;
  let s = Math.max(-32635, Math.min(32635, Math.round(sample)));
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  s += BIAS;
  let exp = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exp > 0; mask >>= 1) exp--;
  const mant = (s >> (exp + 3)) & 0x0f;
  return ~(sign | (exp << 4) | mant) & 0xff;
}

async function runThrough(p: DspPipeline, spec: LegSpec, input: Uint8Array[], log = new LegLog()) {
  const leg = p.open(spec, log);
  for (const c of input) leg.push(c);
  return { leg, log };
}

const samples = (log: LegLog) => log.chunks.reduce((n, c) => n + c.length / 2, 0);
const failures = async (m: Metrics) =>
  (await m.registry.getSingleMetric('voicebridge_denoise_failures_total')!.get()).values[0]?.value ?? 0;
const denoised = async (m: Metrics) =>
  (await m.registry.getSingleMetric('voicebridge_denoised_calls_total')!.get()).values[0]?.value ?? 0;

describe('the noise suppressor step in a leg', () => {
  it('gives the same bytes inline and on a worker, and differs from the plain leg', async () => {
    const input = chunks(100);
    const inline = await runThrough(pipeline(0).p, SPEC, input);
    const worker = pipeline(1);
    const onWorker = await runThrough(worker.p, SPEC, input);
    const plain = await runThrough(pipeline(0).p, PLAIN, input);
    await waitFor(() => samples(onWorker.log) === samples(inline.log), 10_000, 'the worker output');
    expect(inline.leg.denoising).toBe(true);
    expect(onWorker.leg.denoising).toBe(true);
    expect(concat(onWorker.log.chunks)).toEqual(concat(inline.log.chunks));
    // Delayed by the frame and the 48 kHz resamplers: 10 ms + ~4.3 ms of 16 kHz samples fewer by now.
    expect(samples(inline.log)).toBeGreaterThan(100 * 320 - 320);
    expect(concat(inline.log.chunks)).not.toEqual(concat(plain.log.chunks));
    expect(await denoised(worker.metrics)).toBe(1);
  });

  for (const workers of [0, 1]) {
    const mode = workers === 0 ? 'inline' : 'on a worker';
    it(`keeps markers behind their audio and drops what a reset left, ${mode}`, async () => {
      const { p } = pipeline(workers);
      const log = new LegLog();
      const leg = p.open(SPEC, log);
      const input = chunks(20);
      for (const c of input.slice(0, 10)) leg.push(c);
      leg.marker(1);
      for (const c of input.slice(10)) leg.push(c);
      leg.marker(2);
      await waitFor(() => log.order.includes('m2'), 5_000, 'marker 2');
      const before1 = log.order.indexOf('m1');
      expect(log.order.slice(0, before1).filter((o) => o === 'a').length).toBeGreaterThanOrEqual(9);
      expect(log.order.slice(before1 + 1, log.order.indexOf('m2'))).toContain('a');
      // A reset: the audio pushed before it never comes out after it.
      for (const c of input) leg.push(c);
      leg.reset();
      const after = log.order.length;
      leg.marker(3);
      await waitFor(() => log.order.includes('m3'), 5_000, 'marker 3');
      expect(log.order.slice(after)).toEqual(['m3']);
    });

    it(`goes on plain, all its audio through, after its suppressor throws, said once, ${mode}`, async () => {
      const metrics = createMetrics();
      let frames = 0;
      const base = suppressor as RnnoiseModule;
      // Inline: a module that throws from its 20th frame on; on a worker: the worker's fault injection.
      const failing: RnnoiseModule = {
        get HEAPF32() {
          return base.HEAPF32;
        },
        _malloc: (b) => base._malloc(b),
        _free: (ptr) => base._free(ptr),
        _rnnoise_create: (m) => base._rnnoise_create(m),
        _rnnoise_init: (st, m) => base._rnnoise_init(st, m),
        _rnnoise_destroy: (st) => base._rnnoise_destroy(st),
        _rnnoise_process_frame: (st, o, i) => {
          if (++frames > 20) throw new Error('RuntimeError: unreachable');
          return base._rnnoise_process_frame(st, o, i);
        },
      };
      const { p, logs } = pipeline(workers, { suppressor: failing, metrics });
      const log = new LegLog();
      const leg = p.open(SPEC, log);
      const input = chunks(60);
      for (const c of input.slice(0, 10)) leg.push(c);
      await waitFor(() => log.chunks.length >= 9, 5_000, 'denoised audio');
      if (workers > 0) p.injectWorkerFault(0, 'denoise');
      for (const c of input.slice(10)) leg.push(c);
      leg.marker(9);
      await waitFor(() => log.order.includes('m9'), 5_000, 'the marker behind the audio');
      expect(leg.denoising).toBe(false);
      // Every chunk gave audio: the one the suppressor failed on went through the plain resampler.
      expect(log.order.filter((o) => o === 'a').length).toBe(60);
      expect(samples(log)).toBeGreaterThan(60 * 320 - 400);
      // And it is the caller's audio, not silence or garbage: the last chunks' level is a plain leg's.
      const plainLog = new LegLog();
      const plain = p.open(PLAIN, plainLog);
      for (const c of input.slice(50)) plain.push(c);
      await waitFor(() => plainLog.chunks.length === 10, 5_000, 'the plain leg');
      const level = (x: Uint8Array[]) => rmsDb(pcmOf(concat(x.slice(-5))));
      expect(Math.abs(level(log.chunks) - level(plainLog.chunks))).toBeLessThan(1);
      for (const c of input.slice(0, 10)) leg.push(c);
      leg.reset();
      leg.marker(10);
      await waitFor(() => log.order.includes('m10'), 5_000, 'marker 10');
      expect(logs.find(FAILED)).toHaveLength(1);
      expect(logs.find(FAILED)[0]!.reason).toMatch(/unreachable|injected/);
      expect(await failures(metrics)).toBe(1);
      expect(await denoised(metrics)).toBe(1);
    });
  }

  it('runs plain, said once at open, when the suppressor did not load: inline', async () => {
    const { p, logs, metrics } = pipeline(0, { suppressor: new Error('no such module') });
    const input = chunks(30);
    const a = await runThrough(p, SPEC, input);
    const b = await runThrough(p, PLAIN, input);
    expect(a.leg.denoising).toBe(false);
    expect(concat(a.log.chunks)).toEqual(concat(b.log.chunks));
    expect(logs.find(FAILED)).toHaveLength(1);
    expect(logs.find(FAILED)[0]!.reason).toBe('no such module');
    expect(await failures(metrics)).toBe(1);
  });

  it('runs plain, said once, when a worker cannot load the suppressor', async () => {
    const { p, logs, metrics } = pipeline(1, { module: './no-such-suppressor.js' });
    const input = chunks(30);
    const a = await runThrough(p, SPEC, input);
    const b = await runThrough(p, PLAIN, input);
    await waitFor(() => a.log.chunks.length === 30 && b.log.chunks.length === 30, 10_000, 'both legs');
    expect(a.leg.denoising).toBe(false);
    expect(concat(a.log.chunks)).toEqual(concat(b.log.chunks));
    expect(logs.find(FAILED)).toHaveLength(1);
    expect(String(logs.find(FAILED)[0]!.reason)).toMatch(/no-such-suppressor/);
    expect(await failures(metrics)).toBe(1);
  });

  it('is re-opened with a replaced worker, and without it once it has failed there', async () => {
    const { p, logs, metrics } = pipeline(1);
    const input = chunks(40);
    const good = new LegLog();
    const goodLeg = p.open(SPEC, good);
    for (const c of input.slice(0, 10)) goodLeg.push(c);
    await waitFor(() => good.chunks.length >= 10, 5_000, 'audio');
    p.injectWorkerFault(0, 'exit');
    await waitFor(() => good.gaps.length === 1, 5_000, 'the gap');
    for (const c of input.slice(10)) goodLeg.push(c);
    await waitFor(() => good.chunks.length >= 39, 10_000, 'audio after the replacement');
    expect(goodLeg.denoising).toBe(true);
    // The replacement runs the suppressor: its output is not the plain leg's.
    const plain = new LegLog();
    const plainLeg = p.open(PLAIN, plain);
    for (const c of input.slice(10)) plainLeg.push(c);
    await waitFor(() => plain.chunks.length === 30, 5_000, 'the plain leg');
    expect(concat(good.chunks.slice(-10))).not.toEqual(concat(plain.chunks.slice(-10)));

    // Now the suppressor fails there, then the worker dies: the leg comes back plain, and says nothing more.
    p.injectWorkerFault(0, 'denoise');
    for (const c of input.slice(0, 5)) goodLeg.push(c);
    await waitFor(() => !goodLeg.denoising, 5_000, 'the failure');
    p.injectWorkerFault(0, 'exit');
    await waitFor(() => good.gaps.length === 2, 5_000, 'the second gap');
    const afterLog = new LegLog();
    const twin = p.open(PLAIN, afterLog);
    const before = good.chunks.length;
    for (const c of input) {
      goodLeg.push(c);
      twin.push(c);
    }
    await waitFor(() => good.chunks.length === before + 40 && afterLog.chunks.length === 40, 10_000, 'audio');
    // Fresh plain state on both: the same bytes.
    expect(concat(good.chunks.slice(before))).toEqual(concat(afterLog.chunks));
    expect(logs.find(FAILED)).toHaveLength(1);
    expect(await failures(metrics)).toBe(1);
    expect(await denoised(metrics)).toBe(1);
  });

  it('refuses a step it does not know, naming the field', () => {
    const { p } = pipeline(0);
    expect(() => p.open({ ...PLAIN, steps: ['echo-cancel' as 'denoise'] }, new LegLog())).toThrow(
      /steps must be a list of denoise/,
    );
  });
});

function rmsDb(x: Int16Array): number {
  let s = 0;
  for (const v of x) s += v * v;
  return 10 * Math.log10(s / x.length);
}

/**
 * Quality of the streaming resampler, measured on signals: aliases and images, passband tone SNR
 * (gain errors count as noise), the 8k -> 16k -> 8k round trip, speech against sox's very-high-quality
 * resampler, and latency from an impulse. Both implementations must pass the same bounds.
 */
import { describe, expect, it } from 'vitest';
import { designFilter } from '../../src/audio/filters.js';
import { RESAMPLER_RATES } from '../../src/audio/format.js';
import { createResampler, type Resampler, type ResamplerImpl } from '../../src/audio/resampler.js';
import { bandSnrDb, levelBelowDb, readWav, toInt16, tone, toneSnrDb } from '../helpers/signal.js';

const IMPLS: ResamplerImpl[] = ['wasm', 'js'];
const AMPLITUDE = 29_000;
const PASSBAND_TONES = [300, 1000, 3000, 3400];
const FIXTURES = new URL('../fixtures/', import.meta.url);

/** Everything at once, plus enough zeros to flush the group delay out. */
function run(r: Resampler, input: Int16Array, flush = 0): Int16Array {
  const padded = new Int16Array(input.length + flush);
  padded.set(input);
  const out = new Int16Array(r.maxOutput(padded.length));
  const n = r.process(padded, out);
  return out.subarray(0, n);
}

function delayOut(inRate: number, outRate: number): number {
  return designFilter(inRate, outRate).delayOut;
}

describe.each(IMPLS)('resampler quality (%s)', (impl) => {
  it('keeps aliases of 4.5, 5, 6 and 7 kHz at least 90 dB down through 16k -> 8k', () => {
    for (const hz of [4500, 5000, 6000, 7000]) {
      const y = run(createResampler(16000, 8000, { impl }), tone(16000, hz, 16000, AMPLITUDE));
      const down = levelBelowDb(y, 8000, 8000 - hz, AMPLITUDE, [], 400, y.length);
      expect(down, `alias of ${hz} Hz`).toBeGreaterThanOrEqual(90);
    }
  });

  it('keeps images at least 85 dB down through 8k -> 16k, with the tone itself intact', () => {
    for (const hz of [...PASSBAND_TONES, 3500]) {
      const y = run(createResampler(8000, 16000, { impl }), tone(8000, hz, 8000, AMPLITUDE));
      const image = levelBelowDb(y, 16000, 8000 - hz, AMPLITUDE, [hz], 400, y.length);
      expect(image, `image of ${hz} Hz`).toBeGreaterThanOrEqual(85);
    }
  });

  it('passes 300 Hz to 3.4 kHz through 8k -> 16k -> 8k with SNR >= 85 dB, aligned to the sample', () => {
    const up = createResampler(8000, 16000, { impl });
    const down = createResampler(16000, 8000, { impl });
    // Whole output samples of delay on both legs: the round trip lines up with the input exactly.
    const delay = delayOut(8000, 16000) / 2 + delayOut(16000, 8000);
    for (const hz of PASSBAND_TONES) {
      up.reset();
      down.reset();
      const x = tone(8000, hz, 8000, AMPLITUDE, 0.3);
      const y = run(down, run(up, x));
      expect(toneSnrDb(y, 8000, hz, AMPLITUDE, 400, y.length), `${hz} Hz fitted`).toBeGreaterThanOrEqual(85);
      let signal = 0;
      let noise = 0;
      for (let n = 400; n < y.length; n++) {
        const e = y[n]! - x[n - delay]!;
        signal += x[n - delay]! ** 2;
        noise += e * e;
      }
      const snr = noise === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10(signal / noise);
      expect(snr, `${hz} Hz against the input`).toBeGreaterThanOrEqual(85);
    }
  });

  it('passes passband tones at >= 85 dB SNR and stops out-of-band tones >= 90 dB on every rate pair', () => {
    for (const inRate of RESAMPLER_RATES) {
      for (const outRate of RESAMPLER_RATES) {
        if (inRate === outRate) continue;
        const r = createResampler(inRate, outRate, { impl });
        const low = Math.min(inRate, outRate);
        const len = Math.round(inRate * 0.25);
        // Skip the start-up transient: the first 2 * delay outputs read the zero history.
        const from = 2 * delayOut(inRate, outRate) + 64;
        for (const hz of [1000, 0.425 * low]) {
          r.reset();
          const y = run(r, tone(inRate, hz, len, AMPLITUDE));
          const snr = toneSnrDb(y, outRate, hz, AMPLITUDE, from, y.length);
          expect(snr, `${inRate}->${outRate} ${hz} Hz`).toBeGreaterThanOrEqual(85);
        }
        // A tone just past the stopband edge folds back to near the passband edge (where the input
        // can carry one: 24k -> 22.05k has no input band to fold).
        const hz = 0.57 * outRate;
        if (outRate < inRate && hz < 0.49 * inRate) {
          r.reset();
          const y = run(r, tone(inRate, hz, len, AMPLITUDE));
          const down = levelBelowDb(y, outRate, outRate - hz, AMPLITUDE, [], from, y.length);
          expect(down, `${inRate}->${outRate} alias of ${hz} Hz`).toBeGreaterThanOrEqual(90);
        }
      }
    }
  });

  it.each([
    [8000, 16000],
    [16000, 8000],
    [24000, 8000],
    [22050, 8000],
  ])('resamples speech %i -> %i within 80 dB of sox -v in 0-3.4 kHz', (inRate, outRate) => {
    const input = readWav(new URL(`speech-${inRate}.wav`, FIXTURES).pathname);
    const ref = readWav(new URL(`ref-${inRate}-${outRate}.wav`, FIXTURES).pathname);
    expect(input.rate).toBe(inRate);
    expect(ref.rate).toBe(outRate);
    const d = delayOut(inRate, outRate);
    const flush = Math.ceil(((d + 2) * inRate) / outRate);
    const y = run(createResampler(inRate, outRate, { impl }), toInt16(input.samples), flush);
    const aligned = y.subarray(d, d + ref.samples.length);
    expect(aligned.length).toBe(ref.samples.length);
    expect(bandSnrDb(ref.samples, aligned, outRate, 3400)).toBeGreaterThanOrEqual(80);
  });

  it('reports a latency of at most 4 ms that an impulse confirms', () => {
    for (const [inRate, outRate] of [
      [8000, 16000],
      [16000, 8000],
      [24000, 16000],
      [22050, 8000],
      [8000, 48000],
      [48000, 8000],
      [44100, 16000],
    ] as const) {
      const r = createResampler(inRate, outRate, { impl });
      expect(r.latencyMs).toBeGreaterThan(0);
      expect(r.latencyMs).toBeLessThanOrEqual(4);
      // An impulse at input time t0 peaks at output time t0 + group delay (linear phase).
      const x = new Int16Array(inRate / 10);
      const at = inRate / 50;
      x[at] = 30000;
      const y = run(r, x);
      let peak = 0;
      for (let n = 1; n < y.length; n++) if (Math.abs(y[n]!) > Math.abs(y[peak]!)) peak = n;
      const measuredMs = (peak / outRate - at / inRate) * 1000;
      const heldMs = (Math.max(0, Math.ceil(inRate / outRate) - 1) / inRate) * 1000;
      // The peak is the output sample nearest the true delay: within half an output sample.
      expect(Math.abs(measuredMs + heldMs - r.latencyMs), `${inRate}->${outRate}`).toBeLessThanOrEqual(
        500 / outRate + 1e-9,
      );
    }
  });
});

import { describe, expect, it } from 'vitest';
import { fitTone, generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { percentiles } from '../../src/emulator/stats.js';

describe('tone helpers', () => {
  it('a clean tone measures at the quantisation limit; added noise lowers the SNR by what was added', () => {
    const clean = generateTone(440, 8000, 8000, 0.5);
    const fit = fitTone(clean, 440, 8000);
    expect(fit.snrDb).toBeGreaterThan(80);
    expect(fit.amplitude).toBeCloseTo(0.5, 3);

    // White noise 30 dB below the tone's power.
    let seed = 1;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return (seed / 0x7fffffff) * 2 - 1;
    };
    const tonePower = (0.5 * 32767) ** 2 / 2;
    const noiseAmp = Math.sqrt((tonePower / 1000) * 3); // uniform noise power is amp^2 / 3
    const noisy = clean.map((v) => Math.round(v + noiseAmp * rand()));
    expect(fitTone(noisy, 440, 8000).snrDb).toBeCloseTo(30, 0);
  });

  it('a lost chunk (a phase jump) costs SNR; the wrong frequency measures as noise', () => {
    const a = generateTone(440, 8000, 4000, 0.5);
    const b = generateTone(440, 8000, 4000, 0.5, Math.PI / 2);
    const jumped = new Int16Array(8000);
    jumped.set(a);
    jumped.set(b, 4000);
    expect(fitTone(jumped, 440, 8000).snrDb).toBeLessThan(10);
    expect(fitTone(generateTone(1000, 8000, 8000), 440, 8000).snrDb).toBeLessThan(-20);
  });

  it('trims leading and trailing silence to whole 10 ms blocks', () => {
    const x = new Int16Array(8000);
    x.set(generateTone(440, 8000, 4000), 2000);
    const t = trimSilence(x, 8000);
    expect(t.length).toBeGreaterThanOrEqual(4000);
    expect(t.length).toBeLessThanOrEqual(4000 + 160);
    expect(trimSilence(new Int16Array(800), 8000).length).toBe(0);
  });

  it('the steady-state SNR ignores a start-up ramp but not a lost chunk in the middle', () => {
    const x = generateTone(440, 8000, 24000, 0.5);
    for (let i = 0; i < 50; i++) x[i] = Math.round(x[i]! * (i / 50)); // a resampler's onset
    expect(fitTone(x, 440, 8000).snrDb).toBeLessThan(35);
    expect(steadyToneSnrDb(x, 440, 8000)!).toBeGreaterThan(80);
    const lost = new Int16Array(24000 - 160);
    lost.set(x.subarray(0, 12000));
    lost.set(x.subarray(12160), 12000);
    expect(steadyToneSnrDb(lost, 440, 8000)!).toBeLessThan(20);
    expect(steadyToneSnrDb(new Int16Array(100), 440, 8000)).toBeUndefined();
  });

  it('percentiles by nearest rank', () => {
    expect(percentiles([])).toEqual({ count: 0, p50: 0, p99: 0, max: 0 });
    const v = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentiles(v)).toEqual({ count: 100, p50: 50, p99: 99, max: 100 });
  });
});

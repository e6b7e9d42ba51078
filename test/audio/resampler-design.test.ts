/**
 * Filter design: the committed minimax table matches a fresh design, and every rate pair's prototype
 * meets the spec on a dense frequency grid (passband ripple, stopband attenuation).
 */
import { describe, expect, it } from 'vitest';
import {
  designFilter,
  designMinimax,
  minimaxPairs,
  PASSBAND_EDGE,
  prototypeGain,
  STOPBAND_EDGE,
} from '../../src/audio/filters.js';
import { MINIMAX_TABLE } from '../../src/audio/filters-table.js';
import { RESAMPLER_RATES } from '../../src/audio/format.js';

describe('resampler filter design', () => {
  it('has a table row for every minimax pair, equal to a fresh design', () => {
    const pairs = minimaxPairs();
    expect(pairs.length).toBeGreaterThan(0);
    expect(Object.keys(MINIMAX_TABLE).sort()).toEqual(pairs.map(([i, o]) => `${i}->${o}`).sort());
    for (const [i, o] of pairs) {
      const fresh = designMinimax(i, o)!;
      const row = MINIMAX_TABLE[`${i}->${o}`]!;
      expect(row.k, `${i}->${o}`).toBe(fresh.k);
      expect(row.half.length).toBe(fresh.half.length);
      let worst = 0;
      for (let j = 0; j < row.half.length; j++)
        worst = Math.max(worst, Math.abs(row.half[j]! - fresh.half[j]!));
      expect(worst, `${i}->${o}`).toBeLessThan(1e-12);
    }
  });

  it('meets the spec on every pair: ripple <= 3e-5 to 0.4375 R, >= 92 dB down from 0.5625 R', () => {
    for (const i of RESAMPLER_RATES) {
      for (const o of RESAMPLER_RATES) {
        if (i === o) continue;
        const d = designFilter(i, o);
        const low = Math.min(i, o);
        const F = i * d.L;
        let ripple = 0;
        for (let f = 0; f <= PASSBAND_EDGE * low; f += (PASSBAND_EDGE * low) / 100) {
          ripple = Math.max(ripple, Math.abs(prototypeGain(d, f) - 1));
        }
        let stop = 0;
        const from = STOPBAND_EDGE * low;
        for (let f = from; f <= F / 2; f += (F / 2 - from) / 300) stop = Math.max(stop, prototypeGain(d, f));
        expect(ripple, `${i}->${o} ripple`).toBeLessThanOrEqual(3e-5);
        expect(-20 * Math.log10(stop), `${i}->${o} stopband`).toBeGreaterThanOrEqual(92);
      }
    }
  });
});

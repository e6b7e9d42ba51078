import { describe, expect, it } from 'vitest';
import { backoffMs, delay, TokenBucket } from '../../src/provider/messaging/rate.js';

/**
 * The most admissions in any window of `windowMs` starting at one of them, at or after `from`. The
 * window is shortened by a nanosecond so that float noise in the slot times (12.5 ms apart) does not
 * count the slot exactly one window later.
 */
function maxInWindow(times: readonly number[], windowMs: number, from = Number.NEGATIVE_INFINITY): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    if (sorted[i]! < from) continue;
    j = Math.max(j, i);
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs - 1e-6) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

describe('token bucket', () => {
  it('admits the burst at once, then at most 80 in any 1 s window (500 sends, fake clock)', () => {
    const now = 1_000;
    const bucket = new TokenBucket({ now: () => now });
    const admitted: number[] = [];
    // All 500 ask at the same instant; each is admitted when its wait ends.
    for (let i = 0; i < 500; i++) admitted.push(now + bucket.take());
    expect(admitted.filter((t) => t === 1_000)).toHaveLength(80);
    // After the initial burst, no window of 1 s holds more than 80.
    expect(maxInWindow(admitted, 1_000, 1_000 + 1e-9)).toBe(80);
    // A window holding the burst holds the burst and at most the next second's rate.
    expect(maxInWindow(admitted, 1_000)).toBeLessThanOrEqual(160);
    // The last of 500 goes at (500 - 80) / 80 s.
    expect(Math.max(...admitted) - 1_000).toBeCloseTo((420 * 1000) / 80, 6);
  });

  it('paces arrivals spread over time, refilling up to the burst only', () => {
    let now = 0;
    const bucket = new TokenBucket({ perSecond: 80, burst: 80, now: () => now });
    const admitted: number[] = [];
    // 500 asks, one every 2 ms (500/s offered), clock moving.
    for (let i = 0; i < 500; i++) {
      now = i * 2;
      admitted.push(now + bucket.take());
    }
    // The burst is spent within the first 200 ms; from then on the bucket stays empty and admits at
    // most 80 in any 1 s window. Windows holding the burst hold at most burst + 80.
    expect(maxInWindow(admitted, 1_000, 200)).toBeLessThanOrEqual(80);
    expect(maxInWindow(admitted, 1_000)).toBeLessThanOrEqual(160);
    // Idle for 10 s: only 80 tokens come back.
    now = Math.max(...admitted) + 10_000;
    const waits = Array.from({ length: 81 }, () => bucket.take());
    expect(waits.slice(0, 80).every((w) => w === 0)).toBe(true);
    expect(waits[80]).toBeCloseTo(12.5, 6);
  });

  it('tryTake reserves nothing past the bound', () => {
    const now = 0;
    const bucket = new TokenBucket({ perSecond: 10, burst: 1, now: () => now });
    expect(bucket.tryTake(0)).toBe(0);
    expect(bucket.tryTake(50)).toBeUndefined();
    expect(bucket.tryTake(100)).toBe(100);
    expect(bucket.take()).toBe(200);
  });

  it('acquire waits its turn and honours an abort', async () => {
    const bucket = new TokenBucket({ perSecond: 20, burst: 1 });
    const started = performance.now();
    await bucket.acquire();
    await bucket.acquire();
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    const ac = new AbortController();
    const p = bucket.acquire(ac.signal);
    ac.abort(new Error('gone'));
    await expect(p).rejects.toThrow('gone');
    await expect(delay(1, AbortSignal.abort(new Error('before')))).rejects.toThrow('before');
  });

  it('refuses nonsense options', () => {
    expect(() => new TokenBucket({ perSecond: 0 })).toThrow(RangeError);
    expect(() => new TokenBucket({ burst: 0 })).toThrow(RangeError);
  });
});

describe('full-jitter backoff', () => {
  it('stays within [0, min(cap, base * 2^attempt))', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    for (let attempt = 0; attempt < 12; attempt++) {
      const ceiling = Math.min(5_000, 100 * 2 ** attempt);
      for (let i = 0; i < 1_000; i++) {
        const ms = backoffMs(attempt, 100, 5_000, random);
        expect(ms).toBeGreaterThanOrEqual(0);
        expect(ms).toBeLessThan(ceiling);
      }
    }
  });

  it('uses the whole range: 0 at random 0, just under the ceiling near 1', () => {
    expect(backoffMs(0, 250, 8_000, () => 0)).toBe(0);
    expect(backoffMs(0, 250, 8_000, () => 0.9999)).toBe(249);
    expect(backoffMs(3, 250, 8_000, () => 0.5)).toBe(1_000);
    expect(backoffMs(10, 250, 8_000, () => 0.9999)).toBe(7_999);
  });
});

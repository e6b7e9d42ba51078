import { describe, expect, it } from 'vitest';
import { backoffMs, delay, SlidingWindowLimiter } from '../../src/provider/messaging/rate.js';

/**
 * The most admissions in any window of `windowMs`, over every window start (the worst window starts
 * at an admission, so only those are tried). Half-open windows [t, t + windowMs): an admission exactly
 * one window later is in the next window, as the provider's sliding check counts it.
 */
function maxInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let best = 0;
  let j = 0;
  for (let i = 0; i < sorted.length; i++) {
    j = Math.max(j, i);
    while (j < sorted.length && sorted[j]! < sorted[i]! + windowMs) j++;
    best = Math.max(best, j - i);
  }
  return best;
}

describe('sliding window limiter', () => {
  it('admits 80 at once, then never more than 80 in any 1 s window (500 asks at one instant)', () => {
    const now = 1_000;
    const limiter = new SlidingWindowLimiter({ now: () => now });
    const admitted: number[] = [];
    // All 500 ask at the same instant; each is admitted when its wait ends.
    for (let i = 0; i < 500; i++) admitted.push(now + limiter.take());
    expect(admitted.filter((t) => t === 1_000)).toHaveLength(80);
    // Every window, the first second's included: a token bucket of burst 80 let 159 into one.
    expect(maxInWindow(admitted, 1_000)).toBe(80);
    // Batches of 80 a second apart: the 500th (batch 6) goes at 6 s.
    expect(Math.max(...admitted) - 1_000).toBe(6_000);
  });

  it('paces asks spread over time: at most 80 in any 1 s window, and idle time gives back 80 only', () => {
    let now = 0;
    const limiter = new SlidingWindowLimiter({ limit: 80, windowMs: 1_000, now: () => now });
    const admitted: number[] = [];
    // 500 asks, one every 2 ms (500/s offered), clock moving.
    for (let i = 0; i < 500; i++) {
      now = i * 2;
      admitted.push(now + limiter.take());
    }
    expect(maxInWindow(admitted, 1_000)).toBe(80);
    // Admission times never go backwards: callers are served in call order.
    for (let i = 1; i < admitted.length; i++) expect(admitted[i]!).toBeGreaterThanOrEqual(admitted[i - 1]!);
    // Idle for 10 s: 80 may go at once, the 81st a second after the first.
    now = Math.max(...admitted) + 10_000;
    const waits = Array.from({ length: 81 }, () => limiter.take());
    expect(waits.slice(0, 80).every((w) => w === 0)).toBe(true);
    expect(waits[80]).toBe(1_000);
  });

  it('any offered pattern: at most limit in any window (randomised, fake clock)', () => {
    let seed = 11;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    for (let run = 0; run < 20; run++) {
      let now = 0;
      const limit = 1 + Math.floor(random() * 100);
      const limiter = new SlidingWindowLimiter({ limit, windowMs: 1_000, now: () => now });
      const admitted: number[] = [];
      for (let i = 0; i < 1_000; i++) {
        // Whole milliseconds: admission + wait then gives back the admission time exactly.
        now += random() < 0.3 ? Math.floor(random() * 200) : 0;
        admitted.push(now + limiter.take());
      }
      expect(maxInWindow(admitted, 1_000)).toBeLessThanOrEqual(limit);
    }
  });

  it('tryTake reserves nothing past the bound', () => {
    const now = 0;
    const limiter = new SlidingWindowLimiter({ limit: 1, windowMs: 100, now: () => now });
    expect(limiter.tryTake(0)).toBe(0);
    expect(limiter.tryTake(50)).toBeUndefined();
    expect(limiter.tryTake(100)).toBe(100);
    expect(limiter.take()).toBe(200);
  });

  it('acquire waits its turn and honours an abort', async () => {
    const limiter = new SlidingWindowLimiter({ limit: 1, windowMs: 50 });
    const started = performance.now();
    await limiter.acquire();
    await limiter.acquire();
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    const ac = new AbortController();
    const p = limiter.acquire(ac.signal);
    ac.abort(new Error('gone'));
    await expect(p).rejects.toThrow('gone');
    await expect(delay(1, AbortSignal.abort(new Error('before')))).rejects.toThrow('before');
  });

  it('refuses nonsense options', () => {
    expect(() => new SlidingWindowLimiter({ limit: 0 })).toThrow(RangeError);
    expect(() => new SlidingWindowLimiter({ limit: 1.5 })).toThrow(RangeError);
    expect(() => new SlidingWindowLimiter({ windowMs: 0 })).toThrow(RangeError);
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

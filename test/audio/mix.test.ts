/**
 * The two-stream mixer of listen-in: sums with clipping, keeps the streams aligned by arrival, and lets
 * one stream out alone once it runs more than the hold ahead of a silent other.
 */
import { describe, expect, it } from 'vitest';
import { Mixer } from '../../src/audio/mix.js';

function collect(hold: number, capacity?: number) {
  const out: number[] = [];
  const mixer = new Mixer(
    hold,
    (pcm) => {
      for (const v of pcm) out.push(v);
    },
    capacity,
  );
  return { out, mixer };
}

describe('Mixer', () => {
  it('sums what both streams have, sample for sample, clipped to PCM16', () => {
    const { out, mixer } = collect(100);
    mixer.a(Int16Array.from([1, 2, 30_000, -30_000]));
    expect(out).toEqual([]);
    mixer.b(Int16Array.from([10, 20, 10_000, -10_000, 7]));
    expect(out).toEqual([11, 22, 32767, -32768]);
    mixer.a(Int16Array.from([3]));
    expect(out).toEqual([11, 22, 32767, -32768, 10]);
  });

  it('lets a stream out alone past the hold while the other is silent, then mixes again', () => {
    const { out, mixer } = collect(4);
    mixer.a(new Int16Array(6).fill(5));
    // Two samples beyond the hold of 4 came out alone.
    expect(out).toEqual([5, 5]);
    mixer.b(new Int16Array(4).fill(1));
    expect(out).toEqual([5, 5, 6, 6, 6, 6]);
    mixer.b(new Int16Array(3).fill(2));
    expect(out).toEqual([5, 5, 6, 6, 6, 6]);
    mixer.a(new Int16Array(3).fill(1));
    expect(out).toEqual([5, 5, 6, 6, 6, 6, 3, 3, 3]);
  });

  it('holds no more than its capacity: the oldest samples of a stream are dropped', () => {
    const { out, mixer } = collect(10, 20);
    mixer.b(Int16Array.from({ length: 30 }, (_, i) => i));
    // 0..9 did not fit; 10..19 came out past the hold; 20..29 wait for the other stream.
    expect(out).toEqual(Array.from({ length: 10 }, (_, i) => 10 + i));
    mixer.a(new Int16Array(10).fill(100));
    expect(out.slice(10)).toEqual(Array.from({ length: 10 }, (_, i) => 120 + i));
  });
});

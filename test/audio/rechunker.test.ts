import { describe, expect, it } from 'vitest';
import { Rechunker } from '../../src/audio/rechunker.js';

/** Bytes 0, 1, 2, … (mod 256) from `start`, so order and loss are visible in the output. */
function ramp(start: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (start + i) & 0xff;
  return out;
}

function drain(r: Rechunker): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (;;) {
    const c = new Uint8Array(r.chunkBytes);
    if (!r.take(c)) return out;
    out.push(c);
  }
}

describe('Rechunker', () => {
  it('turns any input sizes into exactly chunkBytes pieces, in order, keeping the remainder', () => {
    const r = new Rechunker(320, 1000, 1);
    const sizes = [1, 7, 319, 320, 321, 640, 2, 1000, 3, 5000, 17];
    let pos = 0;
    for (const n of sizes) {
      r.push(ramp(pos, n));
      pos += n;
    }
    const chunks = drain(r);
    expect(chunks).toHaveLength(Math.floor(pos / 320));
    const joined = new Uint8Array(chunks.length * 320);
    chunks.forEach((c, i) => {
      expect(c.length).toBe(320);
      joined.set(c, i * 320);
    });
    expect(joined).toEqual(ramp(0, joined.length));
    expect(r.size).toBe(pos % 320);
    expect(r.partialBytes).toBe(pos % 320);
    // The remainder continues the stream once more arrives.
    r.push(ramp(pos, 320 - (pos % 320)));
    const [next] = drain(r);
    expect(next).toEqual(ramp(joined.length, 320));
  });

  it('take() leaves everything alone when no whole chunk is held', () => {
    const r = new Rechunker(160, 10);
    r.push(ramp(0, 159));
    expect(r.take(new Uint8Array(160))).toBe(false);
    expect(r.size).toBe(159);
    expect(r.consumed).toBe(0);
  });

  it('is bounded: sheds the oldest whole chunks and reports the bytes shed', () => {
    const r = new Rechunker(100, 4, 1);
    expect(r.push(ramp(0, 400))).toBe(0);
    expect(r.push(ramp(400, 50))).toBe(100); // one chunk shed to make room
    expect(r.size).toBe(350);
    expect(r.allocatedBytes).toBeLessThanOrEqual(400);
    const chunks = drain(r);
    expect(chunks[0]).toEqual(ramp(100, 100)); // the oldest chunk went first
    expect(r.consumed + r.size).toBe(r.written);
  });

  it('keeps the newest part of a push longer than the bound', () => {
    const r = new Rechunker(100, 3, 1);
    r.push(ramp(0, 30));
    const shed = r.push(ramp(30, 1000));
    expect(r.size).toBe(300);
    expect(shed).toBe(1030 - 300);
    expect(drain(r)[0]).toEqual(ramp(730, 100));
  });

  it('grows its ring only as needed', () => {
    const r = new Rechunker(320, 3000, 4);
    r.push(ramp(0, 640));
    expect(r.allocatedBytes).toBe(4 * 320);
    r.push(ramp(640, 320 * 20));
    expect(r.allocatedBytes).toBeGreaterThanOrEqual(22 * 320);
    expect(r.allocatedBytes).toBeLessThanOrEqual(64 * 320);
    expect(drain(r)).toHaveLength(22);
  });

  it('pad() closes a partial chunk with the fill byte; clear() drops everything', () => {
    const r = new Rechunker(8, 4, 1);
    r.push(ramp(1, 3));
    expect(r.pad(0xff)).toBe(5);
    expect(r.pad(0xff)).toBe(0);
    const [c] = drain(r);
    expect(Array.from(c!)).toEqual([1, 2, 3, 0xff, 0xff, 0xff, 0xff, 0xff]);
    r.push(ramp(0, 20));
    expect(r.clear()).toBe(20);
    expect(r.size).toBe(0);
    expect(r.written).toBe(28);
    expect(r.consumed).toBe(28);
  });

  it('wraps around the ring without corrupting data', () => {
    const r = new Rechunker(6, 3, 3);
    let inPos = 0;
    let outPos = 0;
    const c = new Uint8Array(6);
    for (let round = 0; round < 50; round++) {
      const n = 1 + ((round * 7) % 11);
      if (r.size + n > r.capacityBytes) continue;
      r.push(ramp(inPos, n));
      inPos += n;
      while (r.take(c)) {
        expect(c).toEqual(ramp(outPos, 6));
        outPos += 6;
      }
    }
    expect(outPos).toBeGreaterThan(100);
  });

  it('passThrough() counts a chunk sent around it in and out, only when nothing is held', () => {
    const r = new Rechunker(4, 8);
    r.passThrough(4);
    expect([r.written, r.consumed, r.size]).toEqual([4, 4, 0]);
    r.push(ramp(0, 2));
    expect(() => r.passThrough(4)).toThrow(/jump the queue/);
    expect([r.written, r.consumed]).toEqual([6, 4]);
  });

  it('rejects nonsense sizes', () => {
    expect(() => new Rechunker(0, 1)).toThrow(RangeError);
    expect(() => new Rechunker(10, 0)).toThrow(RangeError);
  });
});

import { describe, expect, it } from 'vitest';
import {
  align4,
  BatchWriter,
  HEADER_BYTES,
  K_CALLER,
  K_CLOSE,
  K_OPEN,
  RECORD_HEADER_BYTES,
  readOpen,
} from '../../src/pipeline/protocol.js';

/** Decodes a batch into [id, kind, bytes] records. */
function records(batch: ArrayBuffer): [number, number, number[]][] {
  const i32 = new Int32Array(batch);
  const u8 = new Uint8Array(batch);
  const out: [number, number, number[]][] = [];
  for (let off = HEADER_BYTES; off < batch.byteLength; ) {
    const len = i32[(off >> 2) + 2]!;
    const at = off + RECORD_HEADER_BYTES;
    out.push([i32[off >> 2]!, i32[(off >> 2) + 1]!, Array.from(u8.subarray(at, at + len))]);
    off = at + align4(len);
  }
  return out;
}

describe('BatchWriter', () => {
  it('lays records out in order, 4-aligned, across growth, with the header value first', () => {
    const w = new BatchWriter(32, 1 << 20);
    w.put(7, K_CALLER, new Uint8Array([1, 2, 3]));
    w.put(8, K_CALLER, new Uint8Array(100).fill(9));
    w.putInt(7, K_CLOSE, 0);
    expect(w.records).toBe(3);
    const batch = w.take(1.5);
    expect(new Float64Array(batch, 0, 1)[0]).toBe(1.5);
    const r = records(batch);
    expect(r.map(([id, kind, b]) => [id, kind, b.length])).toEqual([
      [7, K_CALLER, 3],
      [8, K_CALLER, 100],
      [7, K_CLOSE, 4],
    ]);
    expect(r[0]![2]).toEqual([1, 2, 3]);
    expect(r[1]![2].every((v) => v === 9)).toBe(true);
    expect(w.records).toBe(0);
    expect(w.take().byteLength).toBe(HEADER_BYTES);
  });

  it('refuses audio past its bound but never an open or a close', () => {
    const w = new BatchWriter(64, 256);
    let accepted = 0;
    for (let i = 0; i < 10; i++) if (w.put(1, K_CALLER, new Uint8Array(40))) accepted++;
    expect(accepted).toBe(4); // 8 + 4 * (12 + 40) = 216; a fifth would need 268
    const spec = {
      callerIn: { codec: 'pcmu', sampleRate: 8000 },
      callerOut: { codec: 'pcma', sampleRate: 16000 },
      botRate: 24000,
    } as const;
    expect(w.putOpen(2, spec)).toBe(true);
    expect(w.putInt(1, K_CLOSE, 0)).toBe(true);
    const r = records(w.take());
    expect(r.map(([id, kind]) => [id, kind])).toEqual([
      [1, K_CALLER],
      [1, K_CALLER],
      [1, K_CALLER],
      [1, K_CALLER],
      [2, K_OPEN],
      [1, K_CLOSE],
    ]);
    const open = new Int32Array(new Uint8Array(r[4]![2]).buffer);
    expect(readOpen(open, 0)).toEqual(spec);
  });
});

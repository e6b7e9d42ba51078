import { describe, expect, it } from 'vitest';
import {
  align4,
  BatchWriter,
  batchEnd,
  CONTROL_BYTES,
  forEachRecord,
  HEADER_BYTES,
  K_AUDIO,
  K_CLOSE,
  K_OPEN,
  MAX_PAGES,
  PAGE_FREE,
  PAGE_WITH_READER,
  PAGE_WRITING,
  type Page,
  PageReader,
  PageWriter,
  RECORD_HEADER_BYTES,
  readOpen,
  SHRINK_AFTER,
  TO_MAIN,
  TO_WORKER,
} from '../../src/pipeline/protocol.js';

/** A page, which the test expects to be there. */
function acquire(w: PageWriter): Page {
  const page = w.acquire();
  if (page === undefined) throw new Error('no free page');
  return page;
}

/** Seals a writer and decodes its batch into [id, kind, bytes] records, reading only the header's end. */
function records(w: BatchWriter, header = 0): [number, number, number[]][] {
  w.seal(header);
  const i32 = new Int32Array(w.buf);
  const u8 = new Uint8Array(w.buf);
  const out: [number, number, number[]][] = [];
  for (let off = HEADER_BYTES; off < batchEnd(i32); ) {
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
    w.put(7, K_AUDIO, new Uint8Array([1, 2, 3]));
    w.put(8, K_AUDIO, new Uint8Array(100).fill(9));
    w.put(8, K_AUDIO, new Uint8Array(4).fill(5), 3);
    w.putInt(7, K_CLOSE, 0);
    expect(w.records).toBe(4);
    const r = records(w, 1.5);
    expect(new Float64Array(w.buf, 0, 1)[0]).toBe(1.5);
    expect(new Int32Array(w.buf)[3]).toBe(4);
    expect(r.map(([id, kind, b]) => [id, kind, b.length])).toEqual([
      [7, K_AUDIO, 3],
      [8, K_AUDIO, 100],
      [8, K_AUDIO, 4],
      [7, K_CLOSE, 8],
    ]);
    // Each record carries its generation, read back by forEachRecord with the rest of its header.
    const seen: number[][] = [];
    forEachRecord(new Int32Array(w.buf), w.used, (id, kind, gen, _at, len) =>
      seen.push([id, kind, gen, len]),
    );
    expect(seen).toEqual([
      [7, K_AUDIO, 0, 3],
      [8, K_AUDIO, 0, 100],
      [8, K_AUDIO, 3, 4],
      [7, K_CLOSE, 0, 8],
    ]);
    expect(r[0]![2]).toEqual([1, 2, 3]);
    expect(r[1]![2].every((v) => v === 9)).toBe(true);
    w.reset();
    expect(w.records).toBe(0);
    expect(records(w)).toEqual([]);
  });

  it('keeps a grown buffer while batches stay big, and lets it go after a run of small ones', () => {
    const w = new BatchWriter(64, 1 << 20, true);
    expect(w.buf).toBeInstanceOf(SharedArrayBuffer);
    w.fresh = false;
    w.put(1, K_AUDIO, new Uint8Array(1000));
    expect(w.buf.byteLength).toBeGreaterThan(256);
    expect(w.fresh).toBe(true);
    const grown = w.buf;
    w.fresh = false;
    // Big batch after big batch: the same buffer, nothing new to send.
    for (let i = 0; i < 3 * SHRINK_AFTER; i++) {
      w.reset();
      w.put(1, K_AUDIO, new Uint8Array(1000));
    }
    expect(w.buf).toBe(grown);
    expect(w.fresh).toBe(false);
    // Small batches: kept until SHRINK_AFTER of them in a row, then let go (and the new one is sent).
    w.reset(); // ends the last big batch
    for (let i = 0; i < SHRINK_AFTER - 1; i++) {
      w.put(1, K_AUDIO, new Uint8Array(8));
      w.reset();
    }
    expect(w.buf).toBe(grown);
    w.put(1, K_AUDIO, new Uint8Array(8));
    w.reset();
    expect(w.buf.byteLength).toBe(64);
    expect(w.fresh).toBe(true);
  });

  it('refuses audio past its bound but never an open or a close', () => {
    const w = new BatchWriter(64, 256);
    let accepted = 0;
    for (let i = 0; i < 10; i++) if (w.put(1, K_AUDIO, new Uint8Array(40))) accepted++;
    expect(accepted).toBe(4); // 16 + 4 * (16 + 40) = 240; a fifth would need 296
    const spec = { from: { codec: 'pcmu', rate: 8000 }, to: { codec: 'pcma', rate: 24000 } } as const;
    expect(w.putOpen(2, spec)).toBe(true);
    expect(w.putInt(1, K_CLOSE, 0)).toBe(true);
    const r = records(w);
    expect(r.map(([id, kind]) => [id, kind])).toEqual([
      [1, K_AUDIO],
      [1, K_AUDIO],
      [1, K_AUDIO],
      [1, K_AUDIO],
      [2, K_OPEN],
      [1, K_CLOSE],
    ]);
    const open = new Int32Array(new Uint8Array(r[4]![2]).buffer);
    expect(readOpen(open, 0)).toEqual(spec);
  });
});

describe('shared pages', () => {
  function pair() {
    const flags = new Int32Array(new SharedArrayBuffer(CONTROL_BYTES));
    return {
      flags,
      writer: new PageWriter(flags, TO_WORKER, 256, 1 << 20),
      reader: new PageReader(flags, TO_WORKER),
    };
  }

  it('hands a page over by id, with its buffer only the first time, and reuses it once released', () => {
    const { flags, writer, reader } = pair();
    const a = acquire(writer);
    expect(flags[TO_WORKER + a.id]).toBe(PAGE_WRITING);
    a.writer.put(5, K_AUDIO, new Uint8Array([1, 2]));
    const first = writer.message(a);
    expect(typeof first).toBe('object');
    expect(flags[TO_WORKER + a.id]).toBe(PAGE_WITH_READER);
    const id = reader.open(first);
    expect(id).toBe(a.id);
    expect(batchEnd(reader.i32(id))).toBe(HEADER_BYTES + RECORD_HEADER_BYTES + 4);
    expect(
      Array.from(
        reader.u8(id).subarray(HEADER_BYTES + RECORD_HEADER_BYTES, HEADER_BYTES + RECORD_HEADER_BYTES + 2),
      ),
    ).toEqual([1, 2]);

    // While the reader holds it, the writer takes another page.
    const b = acquire(writer);
    expect(b.id).not.toBe(a.id);
    reader.release(id);
    expect(flags[TO_WORKER + a.id]).toBe(PAGE_FREE);
    writer.message(b);

    // Released, the first page comes back empty, and the reader already has its buffer.
    const again = acquire(writer);
    expect(again.id).toBe(a.id);
    expect(again.writer.records).toBe(0);
    again.writer.put(6, K_AUDIO, new Uint8Array(4));
    const second = writer.message(again);
    expect(second).toBe(a.id);
    expect(reader.i32(reader.open(second))[HEADER_BYTES >> 2]).toBe(6);
  });

  it('sends the new buffer of a grown page, and has no ninth page while eight are with the reader', () => {
    const { writer, reader } = pair();
    const p = acquire(writer);
    reader.open(writer.message(p));
    reader.release(p.id);
    const q = acquire(writer);
    expect(q.id).toBe(p.id);
    q.writer.put(1, K_AUDIO, new Uint8Array(4000)); // grows past 256
    const m = writer.message(q);
    expect(typeof m).toBe('object');
    expect(batchEnd(reader.i32(reader.open(m)))).toBe(HEADER_BYTES + RECORD_HEADER_BYTES + 4000);

    const held = [];
    for (let i = 0; i < MAX_PAGES - 1; i++) held.push(writer.message(acquire(writer)));
    expect(held).toHaveLength(MAX_PAGES - 1);
    expect(writer.acquire()).toBeUndefined();
  });

  it('keeps the flags of the two directions apart', () => {
    const flags = new Int32Array(new SharedArrayBuffer(CONTROL_BYTES));
    const toWorker = new PageWriter(flags, TO_WORKER, 64, 1024);
    const toMain = new PageWriter(flags, TO_MAIN, 64, 1024);
    toWorker.message(acquire(toWorker));
    const r = acquire(toMain);
    expect(r.id).toBe(0);
    expect(flags[TO_WORKER]).toBe(PAGE_WITH_READER);
    expect(flags[TO_MAIN]).toBe(PAGE_WRITING);
  });
});

/**
 * Re-chunker: audio bytes in any sizes, exactly `chunkBytes` out. Pure and synchronous.
 *
 * A byte ring that grows on demand (doubling) up to a hard bound: a bot may send a whole utterance at
 * once, but most sessions hold a few chunks, so the full bound (60 s of 16 kHz PCM16 is 1.9 MB) is only
 * paid by sessions that use it. When a push would pass the bound, the oldest whole chunks are shed:
 * stale audio goes first, and the read side stays on chunk boundaries.
 *
 * `written` and `consumed` count bytes since creation (taken, shed and cleared bytes are all consumed),
 * so a position in the stream (a mark) is "reached" once `consumed >= position`.
 */
export class Rechunker {
  readonly chunkBytes: number;
  /** Most bytes held at once; a whole number of chunks. */
  readonly capacityBytes: number;
  #buf: Uint8Array;
  #head = 0;
  #size = 0;
  #written = 0;
  #consumed = 0;
  /**
   * Views of the ring's chunk slots, by slot, made as first used: `take` copies out of one without making
   * a view per chunk. The head is always on a slot (whole chunks are consumed; an empty ring restarts
   * at 0) and the ring holds whole slots, so a chunk never wraps.
   */
  #slots: Uint8Array[] = [];

  constructor(chunkBytes: number, maxChunks: number, initialChunks = 8) {
    if (!Number.isInteger(chunkBytes) || chunkBytes <= 0) throw new RangeError('chunkBytes must be > 0');
    if (!Number.isInteger(maxChunks) || maxChunks <= 0) throw new RangeError('maxChunks must be > 0');
    this.chunkBytes = chunkBytes;
    this.capacityBytes = chunkBytes * maxChunks;
    this.#buf = new Uint8Array(chunkBytes * Math.min(maxChunks, Math.max(1, initialChunks)));
  }

  /** Bytes held. */
  get size(): number {
    return this.#size;
  }
  /** Whole chunks ready to take. */
  get chunks(): number {
    return Math.floor(this.#size / this.chunkBytes);
  }
  /** Bytes of a started chunk that is not yet full. */
  get partialBytes(): number {
    return this.#size % this.chunkBytes;
  }
  /** Bytes pushed (and padded) since creation. */
  get written(): number {
    return this.#written;
  }
  /** Bytes taken, shed or cleared since creation. */
  get consumed(): number {
    return this.#consumed;
  }
  /** Bytes of ring currently allocated (grows up to `capacityBytes`). */
  get allocatedBytes(): number {
    return this.#buf.length;
  }

  /** Appends `data`; returns the bytes shed (oldest first) to stay within the bound, usually 0. */
  push(data: Uint8Array): number {
    let src = data;
    let shed = 0;
    let overflow = this.#size + src.length - this.capacityBytes;
    if (overflow > 0) {
      // Drop whole chunks from the head, so what is left still starts on a chunk boundary.
      const fromRing = Math.min(this.#size, Math.ceil(overflow / this.chunkBytes) * this.chunkBytes);
      this.#drop(fromRing);
      shed += fromRing;
      overflow -= fromRing;
      if (overflow > 0) {
        // The push alone is longer than the bound: keep its newest part.
        src = src.subarray(overflow);
        this.#written += overflow;
        this.#consumed += overflow;
        shed += overflow;
      }
    }
    this.#reserve(this.#size + src.length);
    this.#write(src, src.length);
    return shed;
  }

  /**
   * Counts `bytes` in and out at once: a whole chunk its owner sent without queueing it, with nothing
   * held (so positions in the stream, marks', stay true). Throws when something is held.
   */
  passThrough(bytes: number): void {
    if (this.#size !== 0) throw new Error('passThrough with audio held: it would jump the queue');
    this.#written += bytes;
    this.#consumed += bytes;
  }

  /**
   * Copies the oldest whole chunk into `out` (at least `chunkBytes` long) and removes it. Returns false,
   * changing nothing, when no whole chunk is held.
   */
  take(out: Uint8Array): boolean {
    const view = this.peek();
    if (view === undefined) return false;
    out.set(view, 0);
    this.#drop(this.chunkBytes);
    return true;
  }

  /**
   * The oldest whole chunk, as a view of the ring (made once per slot: no allocation), or undefined when
   * no whole chunk is held. Valid until the next change to the ring; `shed(1)` then removes it.
   */
  peek(): Uint8Array | undefined {
    const n = this.chunkBytes;
    if (this.#size < n) return undefined;
    const slot = this.#head / n;
    let view = this.#slots[slot];
    if (view === undefined) {
      view = this.#buf.subarray(this.#head, this.#head + n);
      this.#slots[slot] = view;
    }
    return view;
  }

  /** Drops up to `count` of the oldest whole chunks; returns how many were dropped. */
  shed(count: number): number {
    const k = Math.min(count, this.chunks);
    this.#drop(k * this.chunkBytes);
    return k;
  }

  /**
   * Completes a partial chunk with `fill` bytes (the codec's silence), so that what was pushed so far
   * can leave as whole chunks. Returns the bytes added (0 when on a chunk boundary).
   */
  pad(fill: number): number {
    const partial = this.partialBytes;
    if (partial === 0) return 0;
    const add = this.chunkBytes - partial;
    // Within the bound: a partial chunk plus its completion is one chunk, and the ring holds whole chunks.
    this.#reserve(this.#size + add);
    const cap = this.#buf.length;
    let tail = (this.#head + this.#size) % cap;
    for (let i = 0; i < add; i++) {
      this.#buf[tail] = fill;
      tail = tail + 1 === cap ? 0 : tail + 1;
    }
    this.#size += add;
    this.#written += add;
    return add;
  }

  /** Drops everything held; returns the bytes dropped. */
  clear(): number {
    const n = this.#size;
    this.#consumed += n;
    this.#head = 0;
    this.#size = 0;
    return n;
  }

  #drop(n: number): void {
    this.#head = (this.#head + n) % this.#buf.length;
    this.#size -= n;
    this.#consumed += n;
    if (this.#size === 0) this.#head = 0;
  }

  #reserve(need: number): void {
    if (need <= this.#buf.length) return;
    let cap = this.#buf.length;
    while (cap < need) cap *= 2;
    cap = Math.min(Math.ceil(cap / this.chunkBytes) * this.chunkBytes, this.capacityBytes);
    const next = new Uint8Array(cap);
    const old = this.#buf;
    const first = Math.min(this.#size, old.length - this.#head);
    next.set(old.subarray(this.#head, this.#head + first), 0);
    if (first < this.#size) next.set(old.subarray(0, this.#size - first), first);
    this.#buf = next;
    this.#head = 0;
    this.#slots = [];
  }

  #write(src: Uint8Array, n: number): void {
    const cap = this.#buf.length;
    const tail = (this.#head + this.#size) % cap;
    const first = Math.min(n, cap - tail);
    if (first === n) this.#buf.set(src, tail);
    else {
      this.#buf.set(src.subarray(0, first), tail);
      this.#buf.set(src.subarray(first, n), 0);
    }
    this.#size += n;
    this.#written += n;
  }
}

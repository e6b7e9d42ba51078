/**
 * Two live PCM16 streams at one rate summed into one, with clipping, aligned by arrival: what has come
 * of both is mixed sample for sample; a stream that runs more than `holdSamples` ahead of the other (the
 * other is silent: a bot sends nothing between turns) is let out alone for the part beyond the hold.
 * So the mix lags the earlier stream by at most the hold, and a gap in one never stops the other.
 */

export class Mixer {
  readonly #hold: number;
  readonly #out: (pcm: Int16Array) => void;
  readonly #a: Fifo;
  readonly #b: Fifo;
  #scratch: Int16Array;

  /** `out` gets views of a reused buffer: it copies what it keeps. `capacity`: samples held per stream. */
  constructor(holdSamples: number, out: (pcm: Int16Array) => void, capacity = holdSamples * 8) {
    this.#hold = holdSamples;
    this.#out = out;
    this.#a = new Fifo(Math.max(capacity, holdSamples * 2));
    this.#b = new Fifo(Math.max(capacity, holdSamples * 2));
    this.#scratch = new Int16Array(Math.max(capacity, holdSamples * 2));
  }

  /** The first stream's samples. */
  a(pcm: Int16Array): void {
    this.#a.push(pcm);
    this.#drain();
  }

  /** The second stream's samples. */
  b(pcm: Int16Array): void {
    this.#b.push(pcm);
    this.#drain();
  }

  #drain(): void {
    const both = Math.min(this.#a.size, this.#b.size);
    if (both > 0) this.#emit(both, both);
    const aheadA = this.#a.size - this.#hold;
    if (aheadA > 0) this.#emit(aheadA, 0);
    const aheadB = this.#b.size - this.#hold;
    if (aheadB > 0) this.#emit(0, aheadB);
  }

  /** Mixes `na` samples of a with `nb` of b (one of them the full length, the other that or 0). */
  #emit(na: number, nb: number): void {
    const n = Math.max(na, nb);
    if (this.#scratch.length < n) this.#scratch = new Int16Array(n);
    const out = this.#scratch.subarray(0, n);
    out.fill(0);
    this.#a.addInto(out, na);
    this.#b.addInto(out, nb);
    this.#out(out);
  }
}

/** A ring of samples; past its capacity the oldest are dropped. */
class Fifo {
  readonly #buf: Int16Array;
  #head = 0;
  size = 0;

  constructor(capacity: number) {
    this.#buf = new Int16Array(capacity);
  }

  push(pcm: Int16Array): void {
    const cap = this.#buf.length;
    let src = pcm;
    if (src.length > cap) src = src.subarray(src.length - cap);
    const over = this.size + src.length - cap;
    if (over > 0) {
      this.#head = (this.#head + over) % cap;
      this.size -= over;
    }
    let at = (this.#head + this.size) % cap;
    for (let i = 0; i < src.length; i++) {
      this.#buf[at] = src[i]!;
      at = at + 1 === cap ? 0 : at + 1;
    }
    this.size += src.length;
  }

  /** Adds the oldest `n` samples into `out` (clipped to PCM16) and drops them. */
  addInto(out: Int16Array, n: number): void {
    const cap = this.#buf.length;
    let at = this.#head;
    for (let i = 0; i < n; i++) {
      const v = out[i]! + this.#buf[at]!;
      out[i] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      at = at + 1 === cap ? 0 : at + 1;
    }
    this.#head = at;
    this.size -= n;
  }
}

/**
 * The pure-JavaScript resampler: the fallback where WebAssembly SIMD is missing, and the reference the
 * WebAssembly kernel is tested against. Float64 history, one polyphase dot product per output sample.
 * The half-band ratios (8k <-> 16k, the common telephony case) use folded symmetric coefficients.
 */
import type { FilterDesign } from './filters.js';
import type { Resampler } from './resampler-types.js';

/** Input samples taken per pass; bounds the history buffer (a few KB per instance). */
const BLOCK = 512;

export class JsResampler implements Resampler {
  readonly inRate: number;
  readonly outRate: number;
  readonly latencyMs: number;
  private readonly d: FilterDesign;
  private readonly taps: number;
  /** History then new input; buf[fill - 1] is the latest input sample. */
  private buf: Float64Array;
  private fill = 0;
  /** Index in buf of the newest input the next output reads, and that output's branch. */
  private need = 0;
  private phase = 0;
  /** processBytes' samples in and out (grown to the largest chunk). */
  private bytesIn = new Int16Array(0);
  private bytesOut = new Int16Array(0);
  private outBytes = new Uint8Array(0);
  private lastView: Uint8Array = new Uint8Array(0);

  constructor(design: FilterDesign) {
    this.d = design;
    this.inRate = design.inRate;
    this.outRate = design.outRate;
    this.latencyMs = design.latencyMs;
    this.taps = design.tapsPerPhase;
    this.buf = new Float64Array(this.taps - 1 + BLOCK);
    this.reset();
  }

  maxOutput(inputSamples: number): number {
    return Math.ceil((inputSamples * this.d.L) / this.d.M);
  }

  reset(): void {
    this.buf.fill(0);
    this.fill = this.taps - 1;
    this.need = this.taps - 1;
    this.phase = 0;
  }

  free(): void {
    this.buf = new Float64Array(0);
  }

  processBytes(input: Uint8Array): Uint8Array {
    if ((input.byteLength & 1) !== 0)
      throw new RangeError(`PCM16 input must be whole samples, got ${input.byteLength} bytes`);
    const n = input.byteLength >> 1;
    if (this.bytesIn.length < n) this.bytesIn = new Int16Array(n);
    const max = this.maxOutput(n);
    if (this.bytesOut.length < max) this.bytesOut = new Int16Array(max);
    if (this.outBytes.length < 2 * max) this.outBytes = new Uint8Array(2 * max);
    const pcm = this.bytesIn;
    for (let i = 0; i < n; i++) pcm[i] = ((input[2 * i]! | (input[2 * i + 1]! << 8)) << 16) >> 16;
    const got = this.process(pcm, this.bytesOut, n, 0);
    const out = this.bytesOut;
    const bytes = this.outBytes;
    for (let i = 0; i < got; i++) {
      const v = out[i]!;
      bytes[2 * i] = v & 0xff;
      bytes[2 * i + 1] = (v >> 8) & 0xff;
    }
    if (this.lastView.byteLength !== 2 * got || this.lastView.buffer !== bytes.buffer)
      this.lastView = bytes.subarray(0, 2 * got);
    return this.lastView;
  }

  process(input: Int16Array, output: Int16Array, inLength = input.length, outAt = 0): number {
    const T = this.taps;
    const buf = this.buf;
    let written = outAt;
    let read = 0;
    while (read < inLength) {
      const n = Math.min(BLOCK, inLength - read);
      let fill = this.fill;
      for (let i = 0; i < n; i++) buf[fill++] = input[read + i]!;
      read += n;
      this.fill = fill;
      switch (this.d.kind) {
        case 'halfband-down':
          written = this.halfbandDown(output, written);
          break;
        case 'halfband-up':
          written = this.halfbandUp(output, written);
          break;
        default:
          written = this.polyphase(output, written);
      }
      // Keep only what later outputs read: the window of the next output.
      const start = this.need - T + 1;
      if (start > 0) {
        buf.copyWithin(0, start, this.fill);
        this.fill -= start;
        this.need -= start;
      }
    }
    return written - outAt;
  }

  private polyphase(output: Int16Array, written: number): number {
    const { phases, nextPhase, advance } = this.d;
    const T = this.taps;
    const buf = this.buf;
    const fill = this.fill;
    let need = this.need;
    let p = this.phase;
    while (need < fill) {
      const c = p * T;
      const x = need - T + 1;
      let acc = 0;
      for (let i = 0; i < T; i++) acc += phases[c + i]! * buf[x + i]!;
      output[written++] = toPcm(acc);
      need += advance[p]!;
      p = nextPhase[p]!;
    }
    this.need = need;
    this.phase = p;
    return written;
  }

  /** 2:1 down. Output n reads x[need] last; its centre is x[need - 2m], taps at odd offsets. */
  private halfbandDown(output: Int16Array, written: number): number {
    const g = this.d.halfband;
    const m = this.d.halfLength;
    const buf = this.buf;
    const fill = this.fill;
    let need = this.need;
    while (need < fill) {
      const c = need - 2 * m;
      let acc = 0.5 * buf[c]!;
      for (let j = 0; j < m; j++) acc += g[j]! * (buf[c - 2 * j - 1]! + buf[c + 2 * j + 1]!);
      output[written++] = toPcm(acc);
      need += 2;
    }
    this.need = need;
    return written;
  }

  /**
   * 1:2 up. Branch 0 (even outputs) is the centre tap alone: a delayed copy of x[need - m].
   * Branch 1 reads x[need - 2m + 1 .. need] with symmetric taps.
   */
  private halfbandUp(output: Int16Array, written: number): number {
    const g = this.d.halfband;
    const m = this.d.halfLength;
    const buf = this.buf;
    const fill = this.fill;
    let need = this.need;
    let p = this.phase;
    while (need < fill) {
      if (p === 0) {
        output[written++] = buf[need - m]!;
        p = 1;
      } else {
        // Taps at offsets +-(2j+1) of the virtual rate are inputs need-m+1+j... mirrored about need-m+0.5.
        const lo = need - m;
        let acc = 0;
        for (let j = 0; j < m; j++) acc += g[j]! * (buf[lo - j]! + buf[lo + 1 + j]!);
        output[written++] = toPcm(acc);
        p = 0;
        need += 1;
      }
    }
    this.need = need;
    this.phase = p;
    return written;
  }
}

/** Round to nearest and saturate to PCM16. */
function toPcm(v: number): number {
  const r = Math.round(v);
  return r > 32767 ? 32767 : r < -32768 ? -32768 : r;
}

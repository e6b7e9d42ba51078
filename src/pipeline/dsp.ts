/**
 * One session's DSP, both directions, the same code inline and in a worker (so the two modes give the
 * same bytes). Pure and synchronous: writes into buffers the caller provides, keeps its scratch.
 *
 *   callerToBot: callerIn codec -> decode -> resample(callerIn rate -> bot rate) -> PCM16 LE
 *   botToCaller: PCM16 LE -> resample(bot rate -> callerOut rate) -> encode(callerOut codec)
 */
import { bytesFor, decodeInto, encodeInto, pcm16View, samplesIn } from '../audio/codec.js';
import type { Codec } from '../audio/format.js';
import { createResampler, type Resampler } from '../audio/resampler.js';
import type { PipelineSessionSpec } from './types.js';

export class SessionDsp {
  private readonly inCodec: Codec;
  private readonly outCodec: Codec;
  private readonly up: Resampler;
  private readonly down: Resampler;
  /** Decoded caller audio, or an unaligned PCM16 input copied for viewing. Grows to the largest chunk. */
  private decoded = new Int16Array(320);
  /** Bot audio resampled to the caller's rate, before encoding. */
  private resampled = new Int16Array(320);

  constructor(spec: PipelineSessionSpec) {
    this.inCodec = spec.callerIn.codec;
    this.outCodec = spec.callerOut.codec;
    this.up = createResampler(spec.callerIn.sampleRate, spec.botRate);
    this.down = createResampler(spec.botRate, spec.callerOut.sampleRate);
  }

  /** Most bytes `callerToBot` writes for `inputBytes` of caller audio (throws odd_length for bad slin). */
  botBytesFor(inputBytes: number): number {
    return this.up.maxOutput(samplesIn(this.inCodec, inputBytes)) * 2;
  }

  /** Most bytes `botToCaller` writes for `inputBytes` of bot PCM16. */
  callerBytesFor(inputBytes: number): number {
    return bytesFor(this.outCodec, this.down.maxOutput(samplesIn('slin', inputBytes)));
  }

  /**
   * Caller audio to bot PCM16 at `out[at..]` (`at` even, room for `botBytesFor`); returns bytes written.
   */
  callerToBot(data: Uint8Array, out: Uint8Array, at: number): number {
    const n = samplesIn(this.inCodec, data.byteLength);
    let input: Int16Array;
    if (this.inCodec === 'slin') {
      input = pcm16View(data, this.scratch(n, false));
    } else {
      input = this.scratch(n, false).subarray(0, n);
      decodeInto(this.inCodec, data, input);
    }
    const max = this.up.maxOutput(n);
    const dst = new Int16Array(out.buffer, out.byteOffset + at, max);
    return this.up.process(input, dst) * 2;
  }

  /**
   * Bot PCM16 to caller audio at `out[at..]` (`at` even, room for `callerBytesFor`); returns bytes written.
   */
  botToCaller(data: Uint8Array, out: Uint8Array, at: number): number {
    const n = samplesIn('slin', data.byteLength);
    const input = pcm16View(data, this.scratch(n, false));
    const max = this.down.maxOutput(n);
    if (this.outCodec === 'slin') {
      return this.down.process(input, new Int16Array(out.buffer, out.byteOffset + at, max)) * 2;
    }
    const mid = this.scratch(max, true);
    const w = this.down.process(input, mid);
    return encodeInto(this.outCodec, mid.subarray(0, w), out.subarray(at));
  }

  free(): void {
    this.up.free();
    this.down.free();
  }

  /** Scratch of at least `n` samples; grows (rarely: to the largest chunk seen), never shrinks. */
  private scratch(n: number, resampled: boolean): Int16Array {
    const cur = resampled ? this.resampled : this.decoded;
    if (cur.length >= n) return cur;
    const next = new Int16Array(Math.max(n, cur.length * 2));
    if (resampled) this.resampled = next;
    else this.decoded = next;
    return next;
  }
}

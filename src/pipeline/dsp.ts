/**
 * One session's DSP, both directions, the same code inline and in a worker (so the two modes give the
 * same bytes). Pure and synchronous: writes into buffers the caller provides, keeps its scratch.
 *
 *   callerToBot: callerIn codec -> decode -> resample(callerIn rate -> bot rate) -> PCM16 LE
 *   botToCaller: PCM16 LE -> resample(bot rate -> callerOut rate) -> encode(callerOut codec)
 */
import { bytesFor, decodeInto, encodeInto, LITTLE_ENDIAN, samplesIn } from '../audio/codec.js';
import type { Codec } from '../audio/format.js';
import { createResampler, type Resampler } from '../audio/resampler.js';
import type { PipelineSessionSpec } from './types.js';

export class SessionDsp {
  private readonly inCodec: Codec;
  private readonly outCodec: Codec;
  private readonly spec: PipelineSessionSpec;
  /**
   * Made on first use: a pipeline session usually carries one direction (a call opens one for each), so
   * the other resampler would be WebAssembly state held for nothing (~9 KB each).
   */
  private upR: Resampler | undefined;
  private downR: Resampler | undefined;
  /** Caller audio decoded (or PCM16 copied, whatever its alignment), then bot audio: grows to the largest chunk. */
  private decoded = new Int16Array(320);
  private decodedBytes = new Uint8Array(this.decoded.buffer);
  /** Bot audio resampled to the caller's rate, before encoding. */
  private resampled = new Int16Array(320);
  /** A PCM16 view of the whole output buffer last written to, kept while callers reuse that buffer. */
  private outBuffer: ArrayBufferLike | undefined;
  private outI16: Int16Array<ArrayBufferLike> = new Int16Array(0);

  constructor(spec: PipelineSessionSpec) {
    this.inCodec = spec.callerIn.codec;
    this.outCodec = spec.callerOut.codec;
    // The rates are checked where the session is opened (checkSpec), before any chunk comes.
    this.spec = spec;
  }

  private get up(): Resampler {
    this.upR ??= createResampler(this.spec.callerIn.sampleRate, this.spec.botRate);
    return this.upR;
  }

  private get down(): Resampler {
    this.downR ??= createResampler(this.spec.botRate, this.spec.callerOut.sampleRate);
    return this.downR;
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
   * Caller audio to bot PCM16 at `out[at..]` (`out.byteOffset + at` even, room for `botBytesFor`);
   * returns bytes written. Allocates nothing per chunk: input goes through this session's scratch, and
   * output is written through a view of `out`'s whole buffer, made again only when the buffer changes.
   */
  callerToBot(data: Uint8Array, out: Uint8Array, at: number): number {
    const n = this.take(this.inCodec, data);
    return this.up.process(this.decoded, this.pcmOut(out), n, (out.byteOffset + at) >> 1) * 2;
  }

  /**
   * Bot PCM16 to caller audio at `out[at..]` (`out.byteOffset + at` even, room for `callerBytesFor`);
   * returns bytes written.
   */
  botToCaller(data: Uint8Array, out: Uint8Array, at: number): number {
    const n = this.take('slin', data);
    if (this.outCodec === 'slin') {
      return this.down.process(this.decoded, this.pcmOut(out), n, (out.byteOffset + at) >> 1) * 2;
    }
    const max = this.down.maxOutput(n);
    if (this.resampled.length < max)
      this.resampled = new Int16Array(Math.max(max, this.resampled.length * 2));
    const w = this.down.process(this.decoded, this.resampled, n);
    return encodeInto(this.outCodec, this.resampled, out, w, at);
  }

  free(): void {
    this.upR?.free();
    this.downR?.free();
    this.upR = this.downR = undefined;
  }

  /** Decodes (or copies, for PCM16) `data` into the scratch; returns the sample count. */
  private take(codec: Codec, data: Uint8Array): number {
    const n = samplesIn(codec, data.byteLength);
    if (this.decoded.length < n) {
      this.decoded = new Int16Array(Math.max(n, this.decoded.length * 2));
      this.decodedBytes = new Uint8Array(this.decoded.buffer);
    }
    if (codec === 'slin' && LITTLE_ENDIAN) this.decodedBytes.set(data);
    else decodeInto(codec, data, this.decoded);
    return n;
  }

  private pcmOut(out: Uint8Array): Int16Array {
    if (this.outBuffer !== out.buffer) {
      this.outBuffer = out.buffer;
      this.outI16 = new Int16Array(out.buffer, 0, out.buffer.byteLength >> 1);
    }
    return this.outI16;
  }
}

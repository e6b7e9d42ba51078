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

/** Input lengths (samples) that get a cached exact-length view: a 20 ms chunk at 48 kHz and below. */
const INPUT_VIEW_MAX = 960;

export class SessionDsp {
  private readonly inCodec: Codec;
  private readonly outCodec: Codec;
  private readonly spec: PipelineSessionSpec;
  /**
   * Made on first use: a pipeline session usually carries one direction (a call opens one for each), so
   * the other resampler would be WebAssembly state held for nothing (~2.5 KB each).
   */
  private upR: Resampler | undefined;
  private downR: Resampler | undefined;
  /** Caller audio decoded (or PCM16 copied, whatever its alignment), then bot audio: grows to the largest chunk. */
  private decoded = new Int16Array(320);
  private decodedBytes = new Uint8Array(this.decoded.buffer);
  /** Resampled audio (either direction), before it is encoded into the caller's output buffer. */
  private resampled = new Int16Array(320);
  /**
   * Byte views of the first `w` resampled samples, by `w`: copying one into the output allocates
   * nothing (a chunk's sample count takes a handful of values, so few are ever made). Maps, not arrays
   * indexed by length: an array with an element at 320 keeps ~2-3 KB of holes, per session.
   */
  private byteViews = new Map<number, Uint8Array>();
  /**
   * Views of the first `n` decoded samples, by `n`: a resampler given an input of exactly its length
   * copies it in one block move rather than sample by sample.
   */
  private inputViews = new Map<number, Int16Array>();
  private freed = false;

  constructor(spec: PipelineSessionSpec) {
    this.inCodec = spec.callerIn.codec;
    this.outCodec = spec.callerOut.codec;
    // The rates are checked where the session is opened (checkSpec), before any chunk comes.
    this.spec = spec;
  }

  private get up(): Resampler {
    if (this.freed) throw new Error('session DSP used after free()');
    this.upR ??= createResampler(this.spec.callerIn.sampleRate, this.spec.botRate);
    return this.upR;
  }

  private get down(): Resampler {
    if (this.freed) throw new Error('session DSP used after free()');
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
   * Caller audio to bot PCM16 LE at `out[at..]` (room for `botBytesFor`); returns bytes written.
   * Allocates nothing per chunk: input and the resampled audio go through this session's scratch, and
   * the bytes are written into `out` at any offset, in little-endian order whatever the host's.
   */
  callerToBot(data: Uint8Array, out: Uint8Array, at: number): number {
    const n = this.take(this.inCodec, data);
    return this.emit('slin', this.resample(this.up, n), out, at);
  }

  /** Bot PCM16 LE to caller audio at `out[at..]` (room for `callerBytesFor`); returns bytes written. */
  botToCaller(data: Uint8Array, out: Uint8Array, at: number): number {
    const n = this.take('slin', data);
    return this.emit(this.outCodec, this.resample(this.down, n), out, at);
  }

  free(): void {
    this.freed = true;
    this.upR?.free();
    this.downR?.free();
    this.upR = this.downR = undefined;
  }

  /** Resamples the `n` samples in the input scratch into `resampled`; returns the samples written. */
  private resample(r: Resampler, n: number): number {
    const max = r.maxOutput(n);
    if (this.resampled.length < max) {
      this.resampled = new Int16Array(Math.max(max, this.resampled.length * 2));
      this.byteViews.clear();
    }
    // Chunks up to 20 ms at 48 kHz get a cached view; a bot's odd long frame takes the length instead.
    if (n > INPUT_VIEW_MAX) return r.process(this.decoded, this.resampled, n);
    let input = this.inputViews.get(n);
    if (input === undefined) {
      input = this.decoded.subarray(0, n);
      this.inputViews.set(n, input);
    }
    return r.process(input, this.resampled);
  }

  /** Writes `w` resampled samples into `out` at byte `at` in `codec`; returns the bytes written. */
  private emit(codec: Codec, w: number, out: Uint8Array, at: number): number {
    if (codec === 'slin' && LITTLE_ENDIAN) {
      if (out.byteLength - at < w * 2)
        throw new RangeError(`output holds ${out.byteLength - at} bytes, needs ${w * 2}`);
      let view = this.byteViews.get(w);
      if (view === undefined) {
        view = new Uint8Array(this.resampled.buffer, 0, w * 2);
        this.byteViews.set(w, view);
      }
      out.set(view, at);
      return w * 2;
    }
    return encodeInto(codec, this.resampled, out, w, at);
  }

  /** Decodes (or copies, for PCM16) `data` into the scratch; returns the sample count. */
  private take(codec: Codec, data: Uint8Array): number {
    const n = samplesIn(codec, data.byteLength);
    if (this.decoded.length < n) {
      this.decoded = new Int16Array(Math.max(n, this.decoded.length * 2));
      this.decodedBytes = new Uint8Array(this.decoded.buffer);
      this.inputViews.clear();
    }
    if (codec === 'slin' && LITTLE_ENDIAN) this.decodedBytes.set(data);
    else decodeInto(codec, data, this.decoded);
    return n;
  }
}

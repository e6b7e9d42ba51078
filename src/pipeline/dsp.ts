/**
 * One leg's DSP, the same code inline and in a worker (so the two modes give the same bytes). Pure and
 * synchronous: writes into buffers the caller provides, keeps its scratch.
 *
 *   from.codec -> decode -> resample(from.rate -> to.rate, skipped when equal) -> encode(to.codec)
 *   with denoise: decode -> up to 48 kHz, RNNoise, down to to.rate (src/audio/denoise.ts) -> encode
 *
 * A suppressor that is missing, cannot make a state, or throws is dropped from the leg, which carries on
 * through the plain resampler from that chunk on (the chunk that failed included): the failure is kept
 * for the pipeline to report once (takeFailure), and no audio is lost to it.
 */
import { bytesFor, decodeInto, encodeInto, LITTLE_ENDIAN, samplesIn } from '../audio/codec.js';
import { DenoiseStep } from '../audio/denoise.js';
import type { Codec } from '../audio/format.js';
import { createResampler, type Resampler } from '../audio/resampler.js';
import type { Suppressor } from './suppressor.js';
import { denoises, type LegSpec } from './types.js';

/** Input lengths (samples) that get a cached exact-length view: a 20 ms chunk at 48 kHz and below. */
const INPUT_VIEW_MAX = 960;

export class LegDsp {
  readonly #from: Codec;
  readonly #to: Codec;
  readonly #spec: LegSpec;
  /** Made with the leg (WebAssembly state, a few KB); none when the rates are equal. */
  #resampler: Resampler | undefined;
  /** The noise suppressor, while it runs (a leg with the step also has the plain resampler to fall back on). */
  #denoise: DenoiseStep | undefined;
  /** Why the suppressor asked for is not running, until the pipeline has taken it to report. */
  #failure: string | undefined;
  /** Input decoded (or PCM16 copied, whatever its alignment): grows to the largest chunk. */
  #decoded = new Int16Array(320);
  #decodedBytes = new Uint8Array(this.#decoded.buffer);
  /** Resampled audio, before it is encoded into the output buffer. */
  #resampled = new Int16Array(320);
  /**
   * Byte views of the first `w` samples of the audio to emit, by `w`, and of the first `n` decoded samples:
   * copying one allocates nothing, and a resampler given an input of exactly its length copies it in one
   * block move. Maps, not arrays indexed by length: an array with an element at 320 keeps ~2-3 KB of
   * holes, per leg. A chunk's sample count takes a handful of values, so few views are ever made.
   */
  #byteViews = new Map<number, Uint8Array>();
  #inputViews = new Map<number, Int16Array>();
  #decodedViews = new Map<number, Uint8Array>();
  #freed = false;
  /** PCM16 in and out, rates differing, on a little-endian host: see run. */
  readonly #pcmBytes: boolean;

  /** `suppressor`: the thread's RNNoise module (or why it did not load), for a spec with the denoise step. */
  constructor(spec: LegSpec, suppressor?: Suppressor) {
    // The rates and codecs are checked where the leg is opened (checkSpec), before any chunk comes.
    this.#spec = spec;
    this.#from = spec.from.codec;
    this.#to = spec.to.codec;
    const denoise = denoises(spec);
    if (denoise) {
      try {
        if (suppressor === undefined || suppressor instanceof Error)
          throw suppressor ?? new Error('no noise suppressor was loaded');
        this.#denoise = new DenoiseStep(suppressor, spec.from.rate, spec.to.rate);
      } catch (err) {
        this.#failed(err);
      }
    }
    this.#pcmBytes =
      LITTLE_ENDIAN &&
      !denoise &&
      this.#from === 'slin' &&
      this.#to === 'slin' &&
      spec.from.rate !== spec.to.rate;
    // Made now, not on the first chunk: the audio path then allocates no WebAssembly memory of its own.
    // Memory can still grow while a view from runView is out (a tap starting to resample, another call's
    // leg opening), which detaches the view: a sink copies what it keeps before it calls anything else.
    if (this.#resamples) this.#r();
  }

  get #resamples(): boolean {
    return this.#spec.from.rate !== this.#spec.to.rate;
  }

  #r(): Resampler {
    if (this.#freed) throw new Error('leg DSP used after free()');
    this.#resampler ??= createResampler(this.#spec.from.rate, this.#spec.to.rate);
    return this.#resampler;
  }

  /** Whether the noise suppressor runs on this leg (asked for, and not failed). */
  get denoising(): boolean {
    return this.#denoise !== undefined;
  }

  /** Why the suppressor asked for does not run, once: undefined after that, and while it runs. */
  takeFailure(): string | undefined {
    const failure = this.#failure;
    this.#failure = undefined;
    return failure;
  }

  /** Most bytes `run` writes for `inputBytes` (throws odd_length for half a PCM16 sample). */
  bytesFor(inputBytes: number): number {
    const n = samplesIn(this.#from, inputBytes);
    const plain = this.#resamples ? this.#r().maxOutput(n) : n;
    // Room for either path: the suppressor may fail during the chunk, which then takes the plain one.
    return bytesFor(
      this.#to,
      this.#denoise === undefined ? plain : Math.max(plain, this.#denoise.maxOutput(n)),
    );
  }

  /**
   * Input audio to output audio at `out[at..]` (room for `bytesFor`); returns the bytes written. Allocates
   * nothing per chunk, and writes PCM16 in little-endian order whatever the host's.
   */
  run(data: Uint8Array, out: Uint8Array, at: number): number {
    if (this.#pcmBytes) {
      const view = this.runView(data);
      out.set(view, at);
      return view.length;
    }
    const n = this.#take(data);
    if (this.#denoise !== undefined) {
      const w = this.#denoised(n);
      if (w >= 0) return this.#emit(this.#resampled, this.#byteViews, w, out, at);
    }
    if (!this.#resamples) return this.#emit(this.#decoded, this.#decodedViews, n, out, at);
    const w = this.#resample(n); // may grow #resampled: read it after
    return this.#emit(this.#resampled, this.#byteViews, w, out, at);
  }

  /**
   * A leg of PCM16 at both ends (rates differing): `runView` gives its output with no copy of its own.
   * False for the others, which `run` into a buffer.
   */
  get direct(): boolean {
    return this.#pcmBytes;
  }

  /**
   * For a `direct` leg: `data` resampled, as a view valid until this leg's next chunk (the resampler's own
   * memory). Throws odd_length for half a PCM16 sample.
   */
  runView(data: Uint8Array): Uint8Array {
    samplesIn('slin', data.length);
    return this.#r().processBytes(data);
  }

  /** Forgets the audio history (the resampler's filter state): what comes next starts afresh. */
  reset(): void {
    this.#resampler?.reset();
    try {
      this.#denoise?.reset();
    } catch (err) {
      this.#failed(err);
    }
  }

  free(): void {
    this.#freed = true;
    this.#resampler?.free();
    this.#resampler = undefined;
    this.#denoise?.free();
    this.#denoise = undefined;
  }

  /** The suppressor failed (or never started): it is dropped, and the failure kept for takeFailure. */
  #failed(err: unknown): void {
    this.#failure = err instanceof Error ? err.message : String(err);
    this.#denoise?.free();
    this.#denoise = undefined;
  }

  /**
   * Denoises the `n` decoded samples into `#resampled`; returns the samples written, or -1 when the
   * suppressor failed on them (it is gone then, and the caller takes the plain path with the same input).
   */
  #denoised(n: number): number {
    const step = this.#denoise!;
    const max = step.maxOutput(n);
    if (this.#resampled.length < max) {
      this.#resampled = new Int16Array(Math.max(max, this.#resampled.length * 2));
      this.#byteViews.clear();
    }
    try {
      return step.process(this.#decoded, n, this.#resampled);
    } catch (err) {
      this.#failed(err);
      return -1;
    }
  }

  /** Resamples the `n` samples in the input scratch into `#resampled`; returns the samples written. */
  #resample(n: number): number {
    const r = this.#r();
    const max = r.maxOutput(n);
    if (this.#resampled.length < max) {
      this.#resampled = new Int16Array(Math.max(max, this.#resampled.length * 2));
      this.#byteViews.clear();
    }
    // Chunks up to 20 ms at 48 kHz get a cached view; a bot's odd long frame takes the length instead.
    if (n > INPUT_VIEW_MAX) return r.process(this.#decoded, this.#resampled, n);
    let input = this.#inputViews.get(n);
    if (input === undefined) {
      input = this.#decoded.subarray(0, n);
      this.#inputViews.set(n, input);
    }
    return r.process(input, this.#resampled);
  }

  /**
   * Writes the first `w` samples of `pcm` into `out` at byte `at` in the output codec; returns the bytes
   * written. `views` caches byte views of `pcm` by sample count (cleared when `pcm` is replaced).
   */
  #emit(pcm: Int16Array, views: Map<number, Uint8Array>, w: number, out: Uint8Array, at: number): number {
    if (this.#to !== 'slin' || !LITTLE_ENDIAN) return encodeInto(this.#to, pcm, out, w, at);
    if (out.length - at < w * 2)
      throw new RangeError(`output holds ${out.length - at} bytes, needs ${w * 2}`);
    let view = views.get(w);
    if (view === undefined) {
      view = new Uint8Array(pcm.buffer, 0, w * 2);
      views.set(w, view);
    }
    out.set(view, at);
    return w * 2;
  }

  /** Decodes (or copies, for PCM16) `data` into the scratch; returns the sample count. */
  #take(data: Uint8Array): number {
    const n = samplesIn(this.#from, data.length);
    if (this.#decoded.length < n) {
      this.#decoded = new Int16Array(Math.max(n, this.#decoded.length * 2));
      this.#decodedBytes = new Uint8Array(this.#decoded.buffer);
      this.#inputViews.clear();
      this.#decodedViews.clear();
    }
    if (this.#from === 'slin' && LITTLE_ENDIAN) this.#decodedBytes.set(data);
    else decodeInto(this.#from, data, this.#decoded);
    return n;
  }
}

/**
 * The noise suppressor step of a caller's leg: RNNoise, a small recurrent network that estimates a gain
 * per frequency band every 10 ms, run on the caller's audio before the bot hears it. Pure and
 * synchronous: it is handed an RNNoise module already loaded (src/pipeline/suppressor.ts loads it, once
 * per thread, at start-up) and keeps one network state per leg in that module's memory.
 *
 *   PCM16 at inRate -> resample to 48 kHz -> 480-sample frames through RNNoise -> residual gate
 *     -> resample to outRate
 *
 * The residual gate (src/audio/denoise-gate.ts) is a post-filter on RNNoise's output: from the network's
 * own voice probability for each frame and the line's level against its floor, it takes the stretches
 * where the caller is not speaking down by 20 dB more (babble, which RNNoise lets through as speech),
 * opening at once on speech and closing slowly after it. It adds no delay.
 *
 * RNNoise works on 10 ms frames at 48 kHz and gives each frame back one frame later (its analysis
 * window overlaps the next frame): 10 ms of delay, plus the two resamplers' (about 3 ms each at 8 kHz,
 * 1.5 ms at 16 kHz), plus whatever is left of a chunk that is not whole 10 ms frames, which waits for the
 * next chunk. A 20 ms chunk is two whole frames, so at 8 kHz a chunk's audio comes out 15.8 ms later,
 * at 16 kHz 12.9 ms (test/audio/denoise.test.ts measures it by correlation).
 *
 * Nothing is allocated per chunk: the scratch grows to the largest chunk seen and is kept. The module's
 * memory may grow when another leg's state is made, which detaches the Float32Array view of it; the view
 * is taken again when that has happened (a detached view has length 0).
 */
import { ResidualGate } from './denoise-gate.js';
import { createResampler } from './resampler.js';
import type { Resampler } from './resampler-types.js';

/** The rate RNNoise runs at. */
export const DENOISE_RATE = 48_000;
/** Samples in one RNNoise frame (10 ms at 48 kHz). */
export const DENOISE_FRAME = 480;

/**
 * What the step uses of an RNNoise module built with Emscripten (the C library's API, with its heap):
 * `@echogarden/rnnoise-wasm` gives exactly this. Float samples are at PCM16 scale, not -1..1.
 */
export interface RnnoiseModule {
  /** The module's memory as floats; replaced by the module when its memory grows. */
  readonly HEAPF32: Float32Array;
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  /** A new network state; `model` 0 is the built-in model. */
  _rnnoise_create(model: number): number;
  /** The state as new, in place. */
  _rnnoise_init(state: number, model: number): number;
  _rnnoise_destroy(state: number): void;
  /** One frame of DENOISE_FRAME floats from `input` to `output` (they may be the same); the voice probability. */
  _rnnoise_process_frame(state: number, output: number, input: number): number;
}

export class DenoiseStep {
  readonly inRate: number;
  readonly outRate: number;
  /** The audio's delay through the step, in ms: the resamplers' and RNNoise's frame. */
  readonly latencyMs: number;
  readonly #m: RnnoiseModule;
  readonly #state: number;
  /** The frame being filled, in the module's memory (bytes, then floats). */
  readonly #frame: number;
  readonly #frameAt: number;
  #heap: Float32Array;
  /** Samples of the frame filled so far. */
  #filled = 0;
  readonly #up: Resampler;
  readonly #down: Resampler;
  /** The chunk at 48 kHz. */
  #wide = new Int16Array(1024);
  /** Denoised 48 kHz audio of the chunk's whole frames, before it is resampled to outRate. */
  #clean = new Int16Array(1024);
  #freed = false;
  /** The post-filter after RNNoise, and the gain it gave the last frame (ramped from, across the next). */
  readonly #gate = new ResidualGate();
  #gain = 1;
  /** The mean square of the last frame into RNNoise: the line's audio its next frame out carries. */
  #linePower = 0;

  constructor(module: RnnoiseModule, inRate: number, outRate: number) {
    this.inRate = inRate;
    this.outRate = outRate;
    this.#m = module;
    this.#up = createResampler(inRate, DENOISE_RATE);
    this.#down = createResampler(DENOISE_RATE, outRate);
    let state = 0;
    let frame = 0;
    try {
      state = module._rnnoise_create(0);
      frame = module._malloc(DENOISE_FRAME * 4);
      if (state === 0 || frame === 0) throw new Error('the noise suppressor has no memory left for a call');
    } catch (err) {
      if (state !== 0) module._rnnoise_destroy(state);
      if (frame !== 0) module._free(frame);
      this.#up.free();
      this.#down.free();
      throw err;
    }
    this.#state = state;
    this.#frame = frame;
    this.#frameAt = frame >> 2;
    this.#heap = module.HEAPF32;
    this.latencyMs = this.#up.latencyMs + this.#down.latencyMs + (DENOISE_FRAME * 1000) / DENOISE_RATE;
  }

  /** Most samples `process` writes for `n` input samples. */
  maxOutput(n: number): number {
    const wide = this.#up.maxOutput(n) + DENOISE_FRAME;
    return this.#down.maxOutput(wide - (wide % DENOISE_FRAME));
  }

  /**
   * The first `n` samples of `input` denoised into `output` (room for `maxOutput(n)`); returns the samples
   * written. Throws what the suppressor throws; the step is not to be used after that.
   */
  process(input: Int16Array, n: number, output: Int16Array): number {
    if (this.#freed) throw new Error('denoise step used after free()');
    const wideMax = this.#up.maxOutput(n);
    if (this.#wide.length < wideMax) this.#wide = new Int16Array(wideMax);
    if (this.#clean.length < wideMax + DENOISE_FRAME) this.#clean = new Int16Array(wideMax + DENOISE_FRAME);
    const w = this.#up.process(input, this.#wide, n);
    const wide = this.#wide;
    const clean = this.#clean;
    let heap = this.#heap;
    if (heap.length === 0) heap = this.#heap = this.#m.HEAPF32;
    const at = this.#frameAt;
    let filled = this.#filled;
    let c = 0;
    for (let i = 0; i < w; ) {
      const take = Math.min(DENOISE_FRAME - filled, w - i);
      for (let k = 0; k < take; k++) heap[at + filled + k] = wide[i + k]!;
      filled += take;
      i += take;
      if (filled < DENOISE_FRAME) break;
      let power = 0;
      for (let k = 0; k < DENOISE_FRAME; k++) power += heap[at + k]! * heap[at + k]!;
      const voice = this.#m._rnnoise_process_frame(this.#state, this.#frame, this.#frame);
      // The frame's memory cannot have moved (RNNoise allocates nothing per frame), but a view taken
      // again costs nothing when it has not.
      if (heap.length === 0) heap = this.#heap = this.#m.HEAPF32;
      const from = this.#gain;
      const gate = this.#gate;
      // The frame out is the line's frame before (RNNoise's one frame of delay): the gate reads its level.
      gate.voice = voice;
      gate.power = this.#linePower;
      gate.update();
      this.#linePower = power / DENOISE_FRAME;
      const to = gate.gain;
      const slope = (to - from) / DENOISE_FRAME;
      for (let k = 0; k < DENOISE_FRAME; k++) {
        const v = heap[at + k]! * (from + slope * (k + 1));
        clean[c + k] = v >= 32767 ? 32767 : v <= -32768 ? -32768 : Math.round(v);
      }
      this.#gain = to;
      c += DENOISE_FRAME;
      filled = 0;
    }
    this.#filled = filled;
    return c === 0 ? 0 : this.#down.process(clean, output, c);
  }

  /** Forgets the audio history (resamplers, the part-filled frame, the network's state). */
  reset(): void {
    this.#up.reset();
    this.#down.reset();
    this.#filled = 0;
    this.#m._rnnoise_init(this.#state, 0);
    this.#gate.reset();
    this.#gain = 1;
    this.#linePower = 0;
  }

  free(): void {
    if (this.#freed) return;
    this.#freed = true;
    this.#up.free();
    this.#down.free();
    // A module that has failed may throw again here: what it held is lost with it either way.
    try {
      this.#m._rnnoise_destroy(this.#state);
      this.#m._free(this.#frame);
    } catch {}
  }
}

/**
 * The call as the synthetic caller had it, saved as a stereo WAV (`npm run call -- --record out.wav`):
 * what it sent on the left, what it heard on the right (at its playout time), both at the caller's
 * rate. The same aligner and writer as the bridge's recordings (src/recording/): written as the call
 * goes, header by wavefile, sizes patched at the end.
 */
import { open } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { createResampler, type Resampler } from '../audio/resampler.js';
import { StereoAligner } from '../recording/align.js';
import { StereoWavFile } from '../recording/wav-file.js';

export interface CallRecordingResult {
  readonly path: string;
  readonly rate: number;
  readonly frames: number;
  /** Why the file stopped early, when it did (the call itself went on). */
  readonly failed?: string;
}

export class CallRecording {
  readonly path: string;
  readonly rate: number;
  readonly #heardRate: number;
  readonly #file: StereoWavFile;
  readonly #aligner: StereoAligner;
  readonly #t0 = performance.now();
  #resampler: Resampler | undefined;
  #resampled = new Int16Array(0);

  /** `rate`: what the caller sends (the file's rate); `heardRate`: what it hears, resampled to `rate`. */
  constructor(path: string, rate: number, heardRate: number) {
    this.path = path;
    this.rate = rate;
    this.#heardRate = heardRate;
    // Overwrites: a user names the file to write.
    this.#file = new StereoWavFile({ path, rate, fs: { open: (p) => open(p, 'w') } });
    const frames = (ms: number) => Math.round((ms * rate) / 1000);
    // As the bridge's recordings: the sent audio is continuous, the heard audio comes in turns.
    this.#aligner = new StereoAligner(
      { capacityFrames: frames(2000), toleranceFrames: [frames(500), frames(200)] },
      (f) => this.#file.write(f),
    );
  }

  /** What the caller sent, PCM16 at `rate`. */
  sent(pcm: Int16Array): void {
    this.#aligner.push(0, pcm, this.#now());
  }

  /** What the caller heard as it played, PCM16 at the heard rate. */
  heard(pcm: Int16Array): void {
    this.#aligner.push(1, this.#toRate(pcm), this.#now());
  }

  async close(): Promise<CallRecordingResult> {
    if (this.#file.failed === undefined) this.#aligner.finish();
    await this.#file.close();
    this.#resampler?.free();
    const failed = this.#file.failed;
    return {
      path: this.path,
      rate: this.rate,
      frames: this.#file.dataBytes / 4,
      ...(failed === undefined ? {} : { failed: `${failed.code}: ${failed.message}` }),
    };
  }

  #now(): number {
    return Math.round(((performance.now() - this.#t0) * this.rate) / 1000);
  }

  #toRate(pcm: Int16Array): Int16Array {
    if (this.#heardRate === this.rate) return pcm;
    this.#resampler ??= createResampler(this.#heardRate, this.rate);
    const r = this.#resampler;
    const max = r.maxOutput(pcm.length);
    if (this.#resampled.length < max) this.#resampled = new Int16Array(max);
    const n = r.process(pcm, this.#resampled, pcm.length, 0);
    return this.#resampled.subarray(0, n);
  }
}

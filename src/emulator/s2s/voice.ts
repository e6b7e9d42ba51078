/**
 * The stand-ins' deterministic voice: each reply is a tone at a known frequency (the n-th reply of a
 * conversation at REPLY_TONES_HZ[n % 5]), so a test can measure what it received by its SNR; and a reply
 * length that instructions can set (`reply_ms=20000` anywhere in the instructions, the prompt or a user
 * text, as each vendor names them), so barge-in can be tried during a long reply.
 */
import { generateTone } from '../../audio/tone.js';

export const REPLY_TONES_HZ = [440, 550, 660, 770, 880] as const;
/** Peak amplitude of the reply tones, a fraction of full scale (-12 dBFS peak). */
export const REPLY_TONE_AMPLITUDE = 0.25;
/** The longest reply the stand-in makes, whatever is asked: ten minutes. */
export const MAX_REPLY_MS = 600_000;

export function replyToneHz(index: number): number {
  return REPLY_TONES_HZ[index % REPLY_TONES_HZ.length]!;
}

/** `reply_ms=N` (or `reply_ms: N`) in instructions, clamped to MAX_REPLY_MS; undefined when absent. */
export function replyMsFrom(instructions: string | undefined): number | undefined {
  const m = instructions?.match(/\breply_ms\s*[=:]\s*(\d+)/);
  if (m === undefined || m === null) return undefined;
  return Math.min(MAX_REPLY_MS, Number(m[1]));
}

/** A reply's audio, produced a block at a time with a continuous phase. */
export class ToneVoice {
  private produced = 0;

  constructor(
    readonly hz: number,
    private readonly rate: number,
    readonly totalSamples: number,
  ) {}

  get remaining(): number {
    return this.totalSamples - this.produced;
  }

  /** The next up-to-`max` samples, or undefined at the end. */
  next(max: number): Int16Array | undefined {
    const n = Math.min(max, this.remaining);
    if (n <= 0) return undefined;
    const phase = (2 * Math.PI * this.hz * this.produced) / this.rate;
    this.produced += n;
    return generateTone(this.hz, this.rate, n, REPLY_TONE_AMPLITUDE, phase);
  }

  /** The words of the reply's transcript. */
  transcript(): string {
    return `Tone ${this.hz} hertz for ${Math.round((this.totalSamples * 1000) / this.rate)} milliseconds.`;
  }
}

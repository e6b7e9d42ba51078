/**
 * Audio level, where the audio already is: a sum of squares over the bytes as they pass (PCM16 read in
 * place, G.711 through its decode table), with no copy, and its dBFS, `20·log10(RMS / 32768)`.
 *
 * A voice-activity rule on top of it for response timing: a chunk is voiced when its level is at or above
 * `thresholdDbfs`; speech starts with a voiced chunk and stops once `hangoverMs` have passed without one
 * (the stop is dated at the end of the last voiced chunk, not when the hang-over ran out).
 */
import { ALAW_DECODE, LITTLE_ENDIAN, MULAW_DECODE } from './codec.js';
import type { Codec } from './format.js';

/** Full scale of PCM16: RMS is taken relative to this. */
export const FULL_SCALE = 32768;

/**
 * The sum of the squared samples of `bytes` in `codec` (PCM16 little-endian for `slin`; an odd trailing
 * byte is ignored). Reads the bytes in place.
 */
export function sumSquares(codec: Codec, bytes: Uint8Array): number {
  let sum = 0;
  if (codec === 'slin') {
    const n = bytes.byteLength >> 1;
    if (LITTLE_ENDIAN && (bytes.byteOffset & 1) === 0) {
      const s = new Int16Array(bytes.buffer, bytes.byteOffset, n);
      for (let i = 0; i < n; i++) {
        const v = s[i]!;
        sum += v * v;
      }
    } else {
      for (let i = 0, j = 0; i < n; i++, j += 2) {
        const v = ((bytes[j]! | (bytes[j + 1]! << 8)) << 16) >> 16;
        sum += v * v;
      }
    }
    return sum;
  }
  const table = codec === 'pcmu' ? MULAW_SQUARES : ALAW_SQUARES;
  const n = bytes.length;
  for (let i = 0; i < n; i++) sum += table[bytes[i]!]!;
  return sum;
}

/** Each G.711 byte's decoded sample, squared: one lookup a sample. */
const squares = (decode: Int16Array): Float64Array => Float64Array.from(decode, (v) => v * v);
const MULAW_SQUARES = squares(MULAW_DECODE);
const ALAW_SQUARES = squares(ALAW_DECODE);

/** Samples in `bytes` of `codec`. */
export function sampleCount(codec: Codec, bytes: Uint8Array): number {
  return codec === 'slin' ? bytes.byteLength >> 1 : bytes.byteLength;
}

/** `20·log10(RMS / 32768)` of `samples` samples whose squares sum to `sumSq`; null for silence (-inf) or none. */
export function dbfs(sumSq: number, samples: number): number | null {
  if (samples <= 0 || sumSq <= 0) return null;
  return 10 * Math.log10(sumSq / samples / (FULL_SCALE * FULL_SCALE));
}

/** dBFS of PCM16 samples (for tests and tools; the media path keeps running sums instead). */
export function levelOf(samples: ArrayLike<number>): number | null {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return dbfs(sum, samples.length);
}

/** A running level: sums added as chunks pass, read and restarted a few times a second. */
export class LevelSum {
  #sum = 0;
  #n = 0;

  add(codec: Codec, bytes: Uint8Array): number {
    const s = sumSquares(codec, bytes);
    this.#sum += s;
    this.#n += sampleCount(codec, bytes);
    return s;
  }

  /** Adds a sum already taken (the same chunk read once for both the level and the voice rule). */
  addSum(sumSq: number, samples: number): void {
    this.#sum += sumSq;
    this.#n += samples;
  }

  /** The level since the last take (null: silence, or no audio), and restart. */
  take(): number | null {
    const level = dbfs(this.#sum, this.#n);
    this.#sum = 0;
    this.#n = 0;
    return level;
  }
}

export interface VoiceRule {
  /** A chunk at or above this level is voiced. */
  readonly thresholdDbfs: number;
  /** Unvoiced time after the last voiced chunk before speech counts as stopped. */
  readonly hangoverMs: number;
}

/** Speech at -40 dBFS and up; 300 ms of quiet ends it (pauses between words are shorter). */
export const DEFAULT_VOICE_RULE: VoiceRule = { thresholdDbfs: -40, hangoverMs: 300 };

/**
 * The voice-activity state of one stream, fed a chunk at a time with its arrival time (ms).
 * `feed` answers 'start' on the first voiced chunk after quiet, 'stop' when the hang-over runs out
 * (`stoppedAt` is then the end of the last voiced chunk), else undefined.
 */
export class VoiceActivity {
  readonly #threshold: number;
  readonly #hangoverMs: number;
  #speaking = false;
  /** End of the last voiced chunk. */
  #lastVoicedAt = 0;
  #stoppedAt = 0;

  constructor(rule: VoiceRule = DEFAULT_VOICE_RULE) {
    // Compared as mean square: 10^(dB/10) · 32768².
    this.#threshold = 10 ** (rule.thresholdDbfs / 10) * FULL_SCALE * FULL_SCALE;
    this.#hangoverMs = rule.hangoverMs;
  }

  get speaking(): boolean {
    return this.#speaking;
  }

  /** When speech last stopped: the end of its last voiced chunk. */
  get stoppedAt(): number {
    return this.#stoppedAt;
  }

  /** A chunk of `samples` samples whose squares sum to `sumSq`, ending at `now` (ms). */
  feed(sumSq: number, samples: number, now: number): 'start' | 'stop' | undefined {
    const voiced = samples > 0 && sumSq / samples >= this.#threshold;
    if (voiced) {
      // Voiced again after a silence with no audio in it (a bot sends none between turns): the speech
      // before it stopped, and this starts anew.
      if (this.#speaking && now - this.#lastVoicedAt >= this.#hangoverMs) {
        this.#speaking = false;
        this.#stoppedAt = this.#lastVoicedAt;
      }
      this.#lastVoicedAt = now;
      if (!this.#speaking) {
        this.#speaking = true;
        return 'start';
      }
      return undefined;
    }
    return this.poll(now);
  }

  /** Time passing without audio: ends speech once the hang-over has run out. */
  poll(now: number): 'stop' | undefined {
    if (this.#speaking && now - this.#lastVoicedAt >= this.#hangoverMs) {
      this.#speaking = false;
      this.#stoppedAt = this.#lastVoicedAt;
      return 'stop';
    }
    return undefined;
  }
}

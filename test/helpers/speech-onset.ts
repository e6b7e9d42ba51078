/**
 * The moment a caller starts speaking, as the framework replays (pipecat-bot.ts, vocode-bot.ts) notice
 * it: a stand-in for their voice detectors (Pipecat's Silero VAD, Vocode's transcriber), by level only.
 * Speech has started once the caller's audio has stayed above a level for `startMs` without a break;
 * silence for as long ends it, so the next speech is a new onset.
 */
import { decodeInto } from '../../src/audio/codec.js';

export class SpeechOnset {
  readonly #startMs: number;
  readonly #threshold: number;
  #loudMs = 0;
  #quietMs = 0;
  #speaking = false;

  /** `startMs` of audio above `thresholdDbfs` (RMS, against full scale) make an onset. */
  constructor(startMs: number, thresholdDbfs = -30) {
    this.#startMs = startMs;
    this.#threshold = 32768 * 10 ** (thresholdDbfs / 20);
  }

  /** Takes 8 kHz µ-law audio; true when speech starts within it. */
  takeUlaw(ulaw: Uint8Array): boolean {
    const pcm = new Int16Array(ulaw.length);
    decodeInto('pcmu', ulaw, pcm);
    let sum = 0;
    for (const v of pcm) sum += v * v;
    const loud = Math.sqrt(sum / Math.max(1, pcm.length)) >= this.#threshold;
    const ms = pcm.length / 8;
    if (loud) {
      this.#loudMs += ms;
      this.#quietMs = 0;
    } else {
      this.#quietMs += ms;
      this.#loudMs = 0;
      if (this.#quietMs >= this.#startMs) this.#speaking = false;
    }
    if (this.#speaking || this.#loudMs < this.#startMs) return false;
    this.#speaking = true;
    return true;
  }
}

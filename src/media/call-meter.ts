/**
 * A live call's meters, fed by its raw audio taps (the encoded bytes as they pass, read in place): the
 * level of each side since the last reading, and the bot's response latency.
 *
 * Response latency: the caller stops speaking (src/audio/level.ts's voice rule: -40 dBFS, 300 ms of
 * hang-over; dated at the end of the caller's last voiced chunk) -> the bot's first voiced chunk sent to
 * the caller after that moment, provided the bot was quiet (300 ms without voiced audio) before it. A
 * bot already talking when the caller stops is not answering yet; a caller who speaks again before the
 * bot answers starts a new turn.
 */
import type { Codec } from '../audio/format.js';
import { LevelSum, sampleCount, sumSquares, VoiceActivity } from '../audio/level.js';
import type { RawTap } from './taps.js';

export interface Levels {
  readonly caller_dbfs: number | null;
  readonly bot_dbfs: number | null;
}

export class CallMeter implements RawTap {
  readonly #codec: Codec;
  readonly #now: () => number;
  readonly #onLatency: (ms: number) => void;
  readonly #callerLevel = new LevelSum();
  readonly #botLevel = new LevelSum();
  readonly #callerVoice = new VoiceActivity();
  readonly #botVoice = new VoiceActivity();
  /** The caller stopped and the bot has not answered yet. */
  #awaiting = false;
  #callerStoppedAt = 0;
  #lastBotOnset = Number.NEGATIVE_INFINITY;

  constructor(codec: Codec, now: () => number, onLatency: (ms: number) => void) {
    this.#codec = codec;
    this.#now = now;
    this.#onLatency = onLatency;
  }

  caller(bytes: Uint8Array): void {
    const sum = sumSquares(this.#codec, bytes);
    const n = sampleCount(this.#codec, bytes);
    this.#callerLevel.addSum(sum, n);
    this.#callerTurn(this.#callerVoice.feed(sum, n, this.#now()));
  }

  bot(bytes: Uint8Array): void {
    const sum = sumSquares(this.#codec, bytes);
    const n = sampleCount(this.#codec, bytes);
    this.#botLevel.addSum(sum, n);
    const now = this.#now();
    if (this.#botVoice.feed(sum, n, now) === 'start') this.#botOnset(now);
  }

  /** The levels since the last reading; also lets the voice rule see time pass without audio. */
  read(): Levels {
    const now = this.#now();
    this.#callerTurn(this.#callerVoice.poll(now));
    this.#botVoice.poll(now);
    return { caller_dbfs: round(this.#callerLevel.take()), bot_dbfs: round(this.#botLevel.take()) };
  }

  #callerTurn(change: 'start' | 'stop' | undefined): void {
    if (change === 'start') {
      this.#awaiting = false;
    } else if (change === 'stop') {
      this.#callerStoppedAt = this.#callerVoice.stoppedAt;
      // The bot may have answered within the hang-over, before the stop was certain.
      if (this.#lastBotOnset > this.#callerStoppedAt) this.#answered(this.#lastBotOnset);
      else this.#awaiting = true;
    }
  }

  #botOnset(at: number): void {
    this.#lastBotOnset = at;
    if (this.#awaiting && at > this.#callerStoppedAt) this.#answered(at);
  }

  #answered(at: number): void {
    this.#awaiting = false;
    this.#onLatency(Math.round(at - this.#callerStoppedAt));
  }
}

/** Two decimals: finer than any meter shows, and shorter on the wire. */
function round(v: number | null): number | null {
  return v === null ? null : Math.round(v * 100) / 100;
}

/**
 * The idle policy (CONTRACT §10, off by default): caller and bot both silent `reprompt_after_ms`, the
 * model is asked to speak (a user text `[silence N s]` and a response request, the dialect's `prompt`);
 * silent `hangup_after_ms`, the call ends as `end_call` ends it. Both are counted from the later of the
 * caller's last speech and the bot's last audio (when it has played, not when it arrived), with two
 * rules that keep the policy from never ending: the bot's answer to the reprompt does not restart the
 * count (only the caller speaking does), and while a tool runs nothing is counted (the count starts
 * again from its output).
 *
 * The caller's speech: a chunk of the caller's audio at or above -40 dBFS (the level rule of
 * src/audio/level.ts, read in place as it passes to the bot). One clock timer per call, re-armed only
 * when it fires (activity moves the deadline without touching the timer).
 */

import type { Codec } from '../audio/format.js';
import { DEFAULT_VOICE_RULE, FULL_SCALE, sampleCount, sumSquares } from '../audio/level.js';
import type { Clock, ClockTimer } from '../clock.js';
import type { IdlePolicy } from './settings.js';

/** A caller chunk at or above this mean square is speech (-40 dBFS). */
const VOICED_MEAN_SQUARE = 10 ** (DEFAULT_VOICE_RULE.thresholdDbfs / 10) * FULL_SCALE * FULL_SCALE;

export interface IdleOptions {
  readonly clock: Clock;
  readonly policy: IdlePolicy;
  /** The caller's audio's codec as the bot leg carries it. */
  readonly codec: Codec;
  /** Ask the model to speak, the call silent `silentMs`. */
  reprompt(silentMs: number): void;
  /** End the call, silent `silentMs`. */
  hangup(silentMs: number): void;
}

export class IdleWatch {
  readonly #o: IdleOptions;
  /** When the silence began: the later of the caller's last speech and the end of the bot's audio. */
  #since: number;
  #reprompted = false;
  /** Tools in flight: nothing is counted meanwhile. */
  #tools = 0;
  #timer: ClockTimer | undefined;
  #done = false;

  constructor(o: IdleOptions) {
    this.#o = o;
    this.#since = o.clock.now();
    this.#arm();
  }

  /** The caller's audio toward the bot (read in place, not kept). */
  callerAudio(bytes: Uint8Array): void {
    const n = sampleCount(this.#o.codec, bytes);
    if (n === 0 || sumSquares(this.#o.codec, bytes) / n < VOICED_MEAN_SQUARE) return;
    this.#since = this.#o.clock.now();
    this.#reprompted = false;
  }

  /** The caller pressed a key: as good as speech. */
  callerDigit(): void {
    this.#since = this.#o.clock.now();
    this.#reprompted = false;
  }

  /** The bot's audio plays until `until`; after a reprompt it does not restart the count. */
  botAudio(until: number): void {
    if (!this.#reprompted && until > this.#since) this.#since = until;
  }

  toolStarted(): void {
    this.#tools++;
  }

  toolFinished(): void {
    if (this.#tools === 0) return;
    if (--this.#tools === 0) {
      this.#since = Math.max(this.#since, this.#o.clock.now());
      this.#reprompted = false;
    }
  }

  end(): void {
    this.#done = true;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The next deadline: the reprompt's, else the hang-up's. */
  #deadline(): number {
    const { reprompt_after_ms: repromptAfterMs, hangup_after_ms: hangupAfterMs } = this.#o.policy;
    if (!this.#reprompted && repromptAfterMs !== undefined) return this.#since + repromptAfterMs;
    if (hangupAfterMs !== undefined) return this.#since + hangupAfterMs;
    return Number.POSITIVE_INFINITY;
  }

  #arm(): void {
    if (this.#done) return;
    const at = this.#deadline();
    if (at === Number.POSITIVE_INFINITY) return;
    this.#timer = this.#o.clock.setTimeout(() => this.#fire(), Math.max(0, at - this.#o.clock.now()));
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    if (this.#done) return;
    const now = this.#o.clock.now();
    const at = this.#deadline();
    // Activity moved the deadline on, or a tool runs: look again then (a tool's output restarts it).
    if (this.#tools > 0 || at > now) {
      if (this.#tools > 0) this.#since = Math.max(this.#since, now);
      this.#arm();
      return;
    }
    const silentMs = Math.round(now - this.#since);
    const { reprompt_after_ms: repromptAfterMs } = this.#o.policy;
    if (!this.#reprompted && repromptAfterMs !== undefined) {
      this.#reprompted = true;
      this.#o.reprompt(silentMs);
      this.#arm();
      return;
    }
    this.#done = true;
    this.#o.hangup(silentMs);
  }
}

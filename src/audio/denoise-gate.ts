/**
 * The residual gate: a post-filter after RNNoise that takes what the network lets through off the frames
 * that are not the caller. RNNoise keeps anything that sounds like speech, so other people talking
 * behind the caller (babble) come through only about 10 dB down; this gate takes the stretches where the
 * caller is not speaking down by GATE_DEPTH_DB more and leaves the caller's speech as RNNoise gave it.
 * Pure and synchronous, one per leg, a few additions and one logarithm per 10 ms frame, nothing allocated.
 *
 * Each frame it is handed RNNoise's voice probability for the frame and the level of the line's own audio
 * that the frame carries (the mean square of the input frame before, at PCM16 scale: RNNoise gives each
 * frame back one frame later), and it gives back the gain for the frame:
 *
 * - The line's floor: a tracker of the input level that steps up 0.02 dB when a frame is above it and
 *   down 0.08 dB when below, so it settles at the 20th percentile of the frames (a crowd's murmur in the
 *   gaps between its loudest voices, the steady part of other noise). Over the caller's speech it only
 *   creeps up, so a long sentence does not lift it; for its first 0.5 s it steps five times as fast.
 *   The line before RNNoise, not after: the network's own gain swings 20 dB and more from frame to frame
 *   on babble, so what comes out of it has no floor to speak of, where a crowd on the line is steady.
 * - A frame is the caller's speech when RNNoise says so with probability >= GATE_VOICE_PROB and the line
 *   is at least GATE_MARGIN_DB above its floor: a crowd of voices seldom rises that far above the
 *   quieter part of itself; the caller, nearer the phone, does on most syllables. Until the caller has
 *   spoken a first run of speech the margin is GATE_FIRST_MARGIN_DB: a call often opens on the bot
 *   speaking while the caller listens, and a stray loud voice behind them then would be a false barge-in.
 * - The gain: 0 dB on speech and for a hang after it (GATE_HANG_PER_FRAME frames for each frame of the
 *   run of speech, up to GATE_HANG_FRAMES, so one stray frame of the crowd opens the gate only briefly),
 *   then down at GATE_RELEASE_DB a frame. Within GATE_SPURT_FRAMES of a run of speech of at least
 *   GATE_SPURT_RUN frames (the caller is mid-sentence) it falls only to -GATE_SPURT_DEPTH_DB, so the
 *   quieter sounds between the caller's louder ones are kept; after that to -GATE_DEPTH_DB. It goes back
 *   to 0 dB at once on the next speech frame (the frame's probability reads the audio still to come out,
 *   so an onset is not clipped). The caller ramps the gain linearly across each frame, so a step never
 *   clicks.
 *
 * On pink noise RNNoise's probability stays near 0 between the sentences, so there the gate adds its depth
 * to what the network took. Measured on recorded speech in docs/denoise.md.
 */

/** RNNoise's voice probability at or above which a loud enough frame is the caller's speech. */
export const GATE_VOICE_PROB = 0.8;
/** How far above the line's floor (its 20th percentile) a speech frame must be, dB. */
export const GATE_MARGIN_DB = 7;
/** The margin until the caller has spoken a first run of GATE_SPURT_RUN frames, dB. */
export const GATE_FIRST_MARGIN_DB = 10;
/** Most frames (10 ms) the gate stays open after the last speech frame. */
export const GATE_HANG_FRAMES = 12;
/** Frames of hang for each frame of a run of speech. */
export const GATE_HANG_PER_FRAME = 3;
/** How fast the gain falls after the hang, dB a frame. */
export const GATE_RELEASE_DB = 1;
/** How far the gain falls on what is not the caller, dB. */
export const GATE_DEPTH_DB = 20;
/** Frames after a run of speech during which the gain falls only to -GATE_SPURT_DEPTH_DB. */
export const GATE_SPURT_FRAMES = 40;
/** How far the gain falls within a sentence, dB. */
export const GATE_SPURT_DEPTH_DB = 6;
/** Frames of speech in a row that make a run a sentence's. */
export const GATE_SPURT_RUN = 4;

const STEP_UP_DB = 0.02;
const STEP_DOWN_DB = 0.08;
const CREEP_DB = 0.005;
const SETTLE_FRAMES = 50;
const SETTLE_SPEED = 5;

export class ResidualGate {
  /** The line's floor, dB; NaN until a frame with sound in it. */
  #floor = Number.NaN;
  /** Frames seen since the first with sound. */
  #frames = 0;
  /** Speech frames in a row. */
  #run = 0;
  /** Frames of hang left. */
  #hang = 0;
  /** Frames since the last frame of a sentence's run of speech. */
  #sinceSpurt = Number.MAX_SAFE_INTEGER;
  /** Whether the caller has spoken a sentence's run of speech yet. */
  #heard = false;
  /** The gain, dB (0 or below). */
  #gainDb = 0;

  /**
   * The frame's inputs and output as fields, for `update()`: RNNoise's voice probability, the mean square
   * (PCM16 scale) of the line's audio the frame carries, and the gain (linear, 0..1) for it. Fields rather
   * than arguments and a return value: a call V8 does not inline boxes every non-integer number it passes
   * or returns (16 bytes each, twice a frame), where a number field is written in place.
   */
  voice = 0;
  power = 0;
  gain = 1;

  /** The gain for a frame with voice probability `voice` and line mean square `power` (tests and tools). */
  next(voice: number, power: number): number {
    this.voice = voice;
    this.power = power;
    this.update();
    return this.gain;
  }

  /** Reads `voice` and `power`, sets `gain`. */
  update(): void {
    const power = this.power;
    if (Number.isNaN(this.#floor)) {
      if (!(power > 0)) {
        this.gain = 1;
        return;
      }
      this.#floor = 10 * Math.log10(power + 1);
    }
    const level = 10 * Math.log10(power + 1);
    this.#frames++;
    const settling = this.#frames < SETTLE_FRAMES;
    const margin = this.#heard ? GATE_MARGIN_DB : GATE_FIRST_MARGIN_DB;
    const speech = this.voice >= GATE_VOICE_PROB && level >= this.#floor + margin;
    if (speech && !settling) {
      this.#floor += CREEP_DB;
    } else {
      const speed = settling ? SETTLE_SPEED : 1;
      this.#floor += level > this.#floor ? speed * STEP_UP_DB : -speed * STEP_DOWN_DB;
    }
    const open = speech || this.#hang > 0;
    if (speech) {
      this.#run++;
      this.#hang = Math.max(this.#hang, Math.min(GATE_HANG_FRAMES, GATE_HANG_PER_FRAME * this.#run));
    } else {
      this.#run = 0;
      if (this.#hang > 0) this.#hang--;
    }
    if (speech && this.#run >= GATE_SPURT_RUN) {
      this.#sinceSpurt = 0;
      this.#heard = true;
    } else if (this.#sinceSpurt < Number.MAX_SAFE_INTEGER) this.#sinceSpurt++;
    const target = open ? 0 : this.#sinceSpurt < GATE_SPURT_FRAMES ? -GATE_SPURT_DEPTH_DB : -GATE_DEPTH_DB;
    this.#gainDb = target >= this.#gainDb ? target : Math.max(target, this.#gainDb - GATE_RELEASE_DB);
    this.gain = 10 ** (this.#gainDb / 20);
  }

  /** As new. */
  reset(): void {
    this.gain = 1;
    this.#floor = Number.NaN;
    this.#frames = 0;
    this.#run = 0;
    this.#hang = 0;
    this.#sinceSpurt = Number.MAX_SAFE_INTEGER;
    this.#heard = false;
    this.#gainDb = 0;
  }
}

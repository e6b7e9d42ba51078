/**
 * The residual gate: a post-filter after RNNoise that takes what the network lets through off the frames
 * that are not the caller. RNNoise keeps anything that sounds like speech, so other people talking
 * behind the caller (babble) come through about 10 dB down; this gate takes those stretches down by
 * GATE_DEPTH_DB more and leaves the caller's speech as RNNoise gave it. Pure and synchronous, one per leg,
 * a few additions and one logarithm per 10 ms frame, nothing allocated.
 *
 * Each frame it is handed RNNoise's voice probability for the frame and the frame's level after RNNoise
 * (dB of its mean square at PCM16 scale), and it gives back the gain for the frame:
 *
 * - The level of what is not the caller: a tracker that steps up 0.2 dB when a frame is above it and down
 *   0.05 dB when below, over the frames not taken for speech, so it settles at their 80th percentile (the
 *   louder part of the babble, or the steady residue of other noise); over speech it creeps up 0.02 dB a
 *   frame, so a call whose noise rises is not gated open for ever. For its first 0.5 s it steps five
 *   times as fast, to find the level quickly.
 * - A frame is the caller's speech when RNNoise says so with probability >= GATE_VOICE_PROB and its level
 *   is at least GATE_MARGIN_DB above the tracker: babble that RNNoise takes for speech is rarely louder
 *   than the louder part of itself by that much; the caller, nearer the phone, is.
 * - The gain: 0 dB on speech and for GATE_HANG_FRAMES after (word endings, short pauses), then down at
 *   GATE_RELEASE_DB a frame to -GATE_DEPTH_DB; back to 0 dB at once on the next speech frame (the frame's
 *   probability reads the audio that is still to come out, so an onset is not clipped). The caller
 *   ramps the gain linearly across each frame, so a step never clicks.
 *
 * On pink noise RNNoise's probability stays near 0 between the sentences, so there the gate adds its depth
 * to what the network took. Measured on recorded speech in docs/denoise.md.
 */

/** RNNoise's voice probability at or above which a loud enough frame is the caller's speech. */
export const GATE_VOICE_PROB = 0.9;
/** How far above the noise's level (its 80th percentile) a speech frame must be, dB. */
export const GATE_MARGIN_DB = 3;
/** Frames (10 ms) the gate stays open after the last speech frame. */
export const GATE_HANG_FRAMES = 12;
/** How fast the gain falls after the hang, dB a frame. */
export const GATE_RELEASE_DB = 1;
/** How far the gain falls on what is not the caller, dB. */
export const GATE_DEPTH_DB = 20;

const STEP_UP_DB = 0.2;
const STEP_DOWN_DB = 0.05;
const CREEP_DB = 0.02;
const SETTLE_FRAMES = 50;
const SETTLE_SPEED = 5;

export class ResidualGate {
  /** The level of what is not the caller, dB; NaN until a frame with sound in it. */
  #noise = Number.NaN;
  /** Frames seen since the first with sound. */
  #frames = 0;
  /** Frames of hang left. */
  #hang = 0;
  /** The gain, dB (0 or below). */
  #gainDb = 0;

  /**
   * The frame's inputs and output as fields, for `update()`: RNNoise's voice probability, the frame's
   * mean square (PCM16 scale), and the gain (linear, 0..1) for it. Fields rather than arguments and a
   * return value: a call V8 does not inline boxes every non-integer number it passes or returns (16
   * bytes each, twice a frame), where a number field is written in place.
   */
  voice = 0;
  power = 0;
  gain = 1;

  /** The gain for a frame with voice probability `voice` and mean square `power` (tests and tools). */
  next(voice: number, power: number): number {
    this.voice = voice;
    this.power = power;
    this.update();
    return this.gain;
  }

  /** Reads `voice` and `power`, sets `gain`. */
  update(): void {
    const voice = this.voice;
    const power = this.power;
    if (Number.isNaN(this.#noise)) {
      if (!(power > 0)) {
        this.gain = 1;
        return;
      }
      this.#noise = 10 * Math.log10(power + 1);
    }
    const level = 10 * Math.log10(power + 1);
    this.#frames++;
    const speech = voice >= GATE_VOICE_PROB && level >= this.#noise + GATE_MARGIN_DB;
    const settling = this.#frames < SETTLE_FRAMES;
    if (!speech || settling) {
      const speed = settling ? SETTLE_SPEED : 1;
      this.#noise += level > this.#noise ? speed * STEP_UP_DB : -speed * STEP_DOWN_DB;
    } else {
      this.#noise += CREEP_DB;
    }
    const open = speech || this.#hang > 0;
    if (speech) this.#hang = GATE_HANG_FRAMES;
    else if (this.#hang > 0) this.#hang--;
    const target = open ? 0 : -GATE_DEPTH_DB;
    this.#gainDb = target >= this.#gainDb ? target : Math.max(target, this.#gainDb - GATE_RELEASE_DB);
    this.gain = 10 ** (this.#gainDb / 20);
  }

  /** As new. */
  reset(): void {
    this.gain = 1;
    this.#noise = Number.NaN;
    this.#frames = 0;
    this.#hang = 0;
    this.#gainDb = 0;
  }
}

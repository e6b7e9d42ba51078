/**
 * The built-in hold sound (`hold_audio: builtin:hold`): what a caller hears while the model waits on a
 * slow tool. A soft two-note chime, a falling major third (E5 then C5) each with a short rise and a
 * long decay, then quiet, every HOLD_PERIOD_MS: noticeable enough to say "still here", quiet enough
 * (peaks at -22 dBFS, far below speech) not to be mistaken for the bot. Pure: one period of PCM16 at any
 * rate, looped by whoever plays it (every note decays to silence before the period ends, so the seam
 * is silent and clicks nowhere).
 */

/** One period of the pattern. */
export const HOLD_PERIOD_MS = 2400;
/** Peak amplitude, a fraction of full scale (-22 dBFS). */
export const HOLD_PEAK = 0.08;

interface Note {
  readonly hz: number;
  /** Start within the period. */
  readonly atMs: number;
}

const NOTES: readonly Note[] = [
  { hz: 659.25, atMs: 0 },
  { hz: 523.25, atMs: 320 },
];
/** Each note's rise (raised cosine), then its exponential decay's time constant, and its length. */
const RISE_MS = 12;
const DECAY_TAU_MS = 140;
const NOTE_MS = 900;

/** One period of the hold sound as PCM16 mono at `rate`. */
export function holdPattern(rate: number): Int16Array {
  const n = Math.round((HOLD_PERIOD_MS * rate) / 1000);
  const mix = new Float64Array(n);
  for (const note of NOTES) {
    const start = Math.round((note.atMs * rate) / 1000);
    const len = Math.min(n - start, Math.round((NOTE_MS * rate) / 1000));
    const rise = (RISE_MS * rate) / 1000;
    const w = (2 * Math.PI * note.hz) / rate;
    for (let i = 0; i < len; i++) {
      const tMs = (i * 1000) / rate;
      const env =
        (i < rise ? 0.5 - 0.5 * Math.cos((Math.PI * i) / rise) : 1) *
        Math.exp(-tMs / DECAY_TAU_MS) *
        // The last 10 % fades to exactly nothing.
        Math.min(1, (len - i) / (0.1 * len));
      // A quiet octave above gives the sine a little warmth.
      mix[start + i]! += env * (Math.sin(w * i) + 0.15 * Math.sin(2 * w * i));
    }
  }
  const out = new Int16Array(n);
  const scale = (HOLD_PEAK * 32767) / 1.15;
  for (let i = 0; i < n; i++) out[i] = Math.round(mix[i]! * scale);
  return out;
}

/**
 * Timing markers for load calls: a quiet background signal with a loud, short tone burst at a fixed
 * interval. A burst survives resampling and G.711 (it is in band and far above the background), so an
 * echo bot returns it and its onset can be found again in the returned audio. Pure: no I/O.
 */

/** Background audio is scaled to peak at this level (about -30 dBFS): far below the burst. */
const BACKGROUND_PEAK = 1000;
/** The burst: 1 kHz at about -6 dBFS, in cosine phase so that its onset is its first sample. */
const BURST_AMPLITUDE = 16000;
const BURST_HZ = 1000;
/** A returned sample above this (about -16 dBFS) is a burst, never background. */
export const DETECT_THRESHOLD = 5000;

export interface MarkerPlan {
  readonly sampleRate: number;
  /** Samples per outgoing chunk. */
  readonly chunkSamples: number;
  /** Chunks from one burst onset to the next. */
  readonly everyChunks: number;
  /** Chunks a burst lasts. */
  readonly burstChunks: number;
}

export function markerPlan(
  sampleRate: number,
  chunkMs: number,
  everyMs: number,
  burstMs: number,
): MarkerPlan {
  const chunkSamples = Math.round((sampleRate * chunkMs) / 1000);
  return {
    sampleRate,
    chunkSamples,
    everyChunks: Math.max(2, Math.round(everyMs / chunkMs)),
    burstChunks: Math.max(1, Math.round(burstMs / chunkMs)),
  };
}

/** Scales `audio` so its peak is the background level (a copy; silence stays silence). */
export function asBackground(audio: Int16Array): Int16Array {
  let peak = 0;
  for (let i = 0; i < audio.length; i++) peak = Math.max(peak, Math.abs(audio[i]!));
  const out = new Int16Array(audio.length);
  if (peak === 0) return out;
  const g = BACKGROUND_PEAK / peak;
  for (let i = 0; i < audio.length; i++) out[i] = Math.round(audio[i]! * g);
  return out;
}

/**
 * Fills chunk number `index` of a call into `out` (chunkSamples long): background, or a burst on the
 * marker chunks. Returns true when this chunk starts a burst (a marker onset at sample 0).
 */
export function fillChunk(plan: MarkerPlan, background: Int16Array, index: number, out: Int16Array): boolean {
  const n = plan.chunkSamples;
  const phase = index % plan.everyChunks;
  // The first marker comes one interval in, after the call has settled.
  const burst = index >= plan.everyChunks && phase < plan.burstChunks;
  if (burst) {
    const w = (2 * Math.PI * BURST_HZ) / plan.sampleRate;
    const start = phase * n;
    for (let i = 0; i < n; i++) out[i] = Math.round(BURST_AMPLITUDE * Math.cos(w * (start + i)));
    return phase === 0;
  }
  const len = background.length;
  if (len === 0) {
    out.fill(0);
    return false;
  }
  let pos = (index * n) % len;
  for (let i = 0; i < n; i++) {
    out[i] = background[pos]!;
    if (++pos === len) pos = 0;
  }
  return false;
}

/**
 * Finds burst onsets in returned audio, chunk by chunk. After an onset it stays deaf for half a marker
 * interval, so one burst counts once whatever its length after resampling.
 */
export class OnsetDetector {
  readonly #deafSamples: number;
  #deafLeft = 0;

  constructor(plan: MarkerPlan) {
    this.#deafSamples = Math.floor((plan.everyChunks * plan.chunkSamples) / 2);
  }

  /** Offset of the first onset in `samples`, or -1. */
  push(samples: Int16Array): number {
    let onset = -1;
    for (let i = 0; i < samples.length; i++) {
      if (this.#deafLeft > 0) {
        this.#deafLeft--;
        continue;
      }
      const v = samples[i]!;
      if (v > DETECT_THRESHOLD || v < -DETECT_THRESHOLD) {
        if (onset === -1) onset = i;
        this.#deafLeft = this.#deafSamples;
      }
    }
    return onset;
  }
}

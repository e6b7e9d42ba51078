/**
 * An energy VAD over 10 ms blocks, on the audio timeline (milliseconds of input audio since the session
 * started), so its events are deterministic for a given input. Speech starts at the first block louder
 * than the threshold and stops once `silenceMs` of quieter blocks follow.
 *
 * The server's `threshold` (0..1, default 0.5) maps to a block level of -70 + 60·threshold dBFS: -40 dBFS
 * by default, so a test tone or speech near -20 dBFS is speech and G.711 silence is not. `semantic_vad`
 * has no model here: its eagerness picks a fixed silence (low 1000 ms, auto/medium 600, high 300).
 */
import type { TurnDetection } from './events.js';

export type VadEvent = { readonly kind: 'start' | 'stop'; readonly ms: number };

export interface VadSettings {
  readonly thresholdDbfs: number;
  readonly silenceMs: number;
  readonly prefixPaddingMs: number;
}

export function vadSettings(td: TurnDetection): VadSettings {
  if (td.type === 'server_vad') {
    return {
      thresholdDbfs: -70 + 60 * (td.threshold ?? 0.5),
      silenceMs: td.silence_duration_ms ?? 500,
      prefixPaddingMs: td.prefix_padding_ms ?? 300,
    };
  }
  const silenceMs = td.eagerness === 'low' ? 1000 : td.eagerness === 'high' ? 300 : 600;
  return { thresholdDbfs: -40, silenceMs, prefixPaddingMs: 300 };
}

export class EnergyVad {
  private readonly block: number;
  private readonly partial: Int16Array;
  private filled = 0;
  /** Samples of input seen, the timeline's clock. */
  private samples = 0;
  private speaking = false;
  private quietMs = 0;

  constructor(
    private readonly rate: number,
    private settings: VadSettings,
  ) {
    // 10 ms blocks, rounded where the rate is not a multiple of 100 Hz (22,050 and 44,100).
    this.block = Math.round(rate / 100);
    this.partial = new Int16Array(this.block);
  }

  get inSpeech(): boolean {
    return this.speaking;
  }

  /** Milliseconds of input audio seen so far. */
  get nowMs(): number {
    return Math.floor((this.samples * 1000) / this.rate);
  }

  configure(settings: VadSettings): void {
    this.settings = settings;
  }

  /** Speech started by a control hook, not by the audio: stops as usual once silence follows. */
  forceStart(): void {
    this.speaking = true;
    this.quietMs = 0;
  }

  /** Feeds samples; returns the starts and stops they complete, in order. */
  push(pcm: Int16Array): VadEvent[] {
    const events: VadEvent[] = [];
    let i = 0;
    while (i < pcm.length) {
      const take = Math.min(this.block - this.filled, pcm.length - i);
      this.partial.set(pcm.subarray(i, i + take), this.filled);
      this.filled += take;
      i += take;
      if (this.filled === this.block) {
        this.filled = 0;
        this.blockDone(events);
      }
    }
    return events;
  }

  private blockDone(events: VadEvent[]): void {
    let e = 0;
    for (let k = 0; k < this.block; k++) e += this.partial[k]! * this.partial[k]!;
    const dbfs = 10 * Math.log10(e / this.block / 32768 ** 2 + 1e-12);
    const startMs = Math.floor((this.samples * 1000) / this.rate);
    this.samples += this.block;
    const loud = dbfs > this.settings.thresholdDbfs;
    if (!this.speaking) {
      if (loud) {
        this.speaking = true;
        this.quietMs = 0;
        // The padding reaches back at most to the start of this buffer (a clear empties it).
        events.push({ kind: 'start', ms: Math.max(0, startMs - this.settings.prefixPaddingMs) });
      }
      return;
    }
    this.quietMs = loud ? 0 : this.quietMs + 10;
    if (this.quietMs >= this.settings.silenceMs) {
      this.speaking = false;
      events.push({ kind: 'stop', ms: this.nowMs });
    }
  }
}

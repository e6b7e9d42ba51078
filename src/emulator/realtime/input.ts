/**
 * The input audio buffer: its format, the samples appended since the last commit or clear, the VAD,
 * and the user item a detected turn will commit. Times are on one audio timeline, milliseconds of input
 * since the session started, kept across clears and format changes, as the server's `audio_start_ms`
 * and `audio_end_ms` are.
 */

import { EnergyVad, type VadEvent, type VadSettings } from '../s2s/vad.js';
import type { FormatInfo } from './audio-io.js';
import { newId, type TurnDetection } from './events.js';

/**
 * The server's turn detection as VAD settings: `threshold` (0..1, default 0.5) maps to a block level of
 * -70 + 60·threshold dBFS, -40 dBFS by default. `semantic_vad` has no model here: its eagerness picks a
 * fixed silence (low 1000 ms, auto/medium 600, high 300).
 */
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

const settingsOf = (td: TurnDetection | null) => vadSettings(td ?? { type: 'server_vad' });

export class InputBuffer {
  private vad: EnergyVad;
  /** Timeline ms before the current VAD's first sample. */
  private offsetMs = 0;
  private buffered = 0;
  private speechItemId: string | null = null;

  constructor(
    private formatInfo: FormatInfo,
    td: TurnDetection | null,
  ) {
    this.vad = new EnergyVad(formatInfo.rate, settingsOf(td));
  }

  get format(): FormatInfo {
    return this.formatInfo;
  }

  get nowMs(): number {
    return this.offsetMs + this.vad.nowMs;
  }

  get bufferedMs(): number {
    return (this.buffered * 1000) / this.formatInfo.rate;
  }

  /** A session.update: a new format starts a new buffer; the same one keeps it with new VAD settings. */
  configure(format: FormatInfo, td: TurnDetection | null): void {
    if (format.name === this.formatInfo.name) {
      this.vad.configure(settingsOf(td));
      return;
    }
    this.formatInfo = format;
    this.restart(td);
  }

  clear(td: TurnDetection | null): void {
    this.restart(td);
  }

  private restart(td: TurnDetection | null): void {
    this.offsetMs = this.nowMs;
    this.vad = new EnergyVad(this.formatInfo.rate, settingsOf(td));
    this.buffered = 0;
    this.speechItemId = null;
  }

  /** Buffers decoded samples; with `detect`, returns the VAD's starts and stops on the timeline. */
  append(pcm: Int16Array, detect: boolean): VadEvent[] {
    this.buffered += pcm.length;
    const events = this.vad.push(pcm);
    if (!detect) return [];
    return events.map((e) => ({ kind: e.kind, ms: e.ms + this.offsetMs }));
  }

  /** Speech began: the user item it will become. `forced`: by a control hook, not by the audio. */
  speechStarted(forced: boolean): string {
    if (forced) this.vad.forceStart();
    this.speechItemId = newId('item');
    return this.speechItemId;
  }

  /** The item id to commit (the detected speech's, or a new one), emptying the buffer. */
  commit(): string {
    const id = this.speechItemId ?? newId('item');
    this.buffered = 0;
    this.speechItemId = null;
    return id;
  }
}

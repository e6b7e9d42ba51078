/**
 * One spoken reply of a stand-in: a tone of known frequency and length (the voice of
 * src/emulator/realtime/voice.ts), cut into chunks of `chunkMs` and handed to `emit` on a timer paced
 * against `performance.now()`. Chunk k is due at `start + k·chunkMs / rateFactor − leadMs`:
 * - `rateFactor` > 1 sends faster than real time, as a vendor's TTS streams (ElevenLabs); 0 sends as fast
 *   as the socket takes;
 * - `leadMs` keeps up to that much audio ahead of real time, the client's playback buffer a server models
 *   (Ultravox's `clientBufferSizeMs`).
 * The stream also tells how long the client is still playing what it was sent (`audibleUntil`), so a
 * stand-in knows the agent is "speaking" until then, and can emit a few more chunks after a stop (the
 * late-audio fault).
 */
import { ToneVoice } from '../realtime/voice.js';
import type { ReplyRecord } from './record.js';

export interface ReplyTiming {
  /** Audio per chunk, in ms. */
  readonly chunkMs: number;
  /** How many times faster than real time chunks go out; 0: as fast as the socket takes them. */
  readonly rateFactor: number;
  /** Audio allowed ahead of real time beyond the rate, in ms (a modelled client buffer). */
  readonly leadMs: number;
}

/** Above this many bytes queued on the socket the stream waits for it to drain. */
const MAX_BUFFERED_BYTES = 1 << 20;

export class ReplyStream {
  private readonly voice: ToneVoice;
  private readonly perChunk: number;
  private chunks = 0;
  private sentSamples = 0;
  private startedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  constructor(
    readonly record: ReplyRecord,
    private readonly timing: ReplyTiming,
    private readonly emit: (pcm: Int16Array) => void,
    private readonly buffered: () => number,
    private readonly onDone: () => void,
  ) {
    const total = Math.round((record.planned_ms * record.rate) / 1000);
    this.voice = new ToneVoice(record.tone_hz, record.rate, total);
    this.perChunk = Math.max(1, Math.round((timing.chunkMs * record.rate) / 1000));
  }

  get active(): boolean {
    return !this.ended;
  }

  /** When the client will have played all it was sent, on the `performance.now()` clock. */
  audibleUntil(): number {
    return this.startedAt + (this.sentSamples * 1000) / this.record.rate;
  }

  transcript(): string {
    return this.voice.transcript();
  }

  start(): void {
    this.startedAt = performance.now();
    this.tick();
  }

  private due(now: number): number {
    const { chunkMs, rateFactor, leadMs } = this.timing;
    if (rateFactor <= 0) return Number.POSITIVE_INFINITY;
    return Math.floor(((now - this.startedAt + leadMs) * rateFactor) / chunkMs) + 1;
  }

  private tick = (): void => {
    this.timer = undefined;
    if (this.ended) return;
    const due = this.due(performance.now());
    let sentNow = 0;
    while (this.chunks < due && this.buffered() < MAX_BUFFERED_BYTES) {
      if (!this.sendOne()) {
        this.finish('completed');
        return;
      }
      // As fast as the socket takes them, but in batches, so other sockets get their turn.
      if (this.timing.rateFactor <= 0 && ++sentNow >= 50) break;
    }
    if (this.voice.remaining === 0) {
      this.finish('completed');
      return;
    }
    const { chunkMs, rateFactor, leadMs } = this.timing;
    const wait =
      this.buffered() >= MAX_BUFFERED_BYTES || rateFactor <= 0
        ? 5
        : Math.max(1, this.startedAt + (this.chunks * chunkMs) / rateFactor - leadMs - performance.now());
    this.timer = setTimeout(this.tick, wait);
  };

  private sendOne(): boolean {
    const pcm = this.voice.next(this.perChunk);
    if (pcm === undefined) return false;
    this.chunks++;
    this.sentSamples += pcm.length;
    this.record.sent_ms = (this.sentSamples * 1000) / this.record.rate;
    this.emit(pcm);
    return true;
  }

  /**
   * Stops sending (barge-in, a new reply, the connection closing); `status` says why. A reply all sent
   * but still playing at the client counts as interrupted too.
   */
  stop(status: 'interrupted' | 'stopped'): void {
    if (!this.ended) this.finish(status);
    else if (status === 'interrupted' && this.record.status === 'completed') this.record.status = status;
  }

  /**
   * Emits up to `n` more chunks of a stopped reply at once (audio a server had in flight when it
   * interrupted); returns the ms emitted. The record counts them as `late_ms`, not `sent_ms`.
   */
  emitLate(n: number): number {
    let samples = 0;
    for (let i = 0; i < n; i++) {
      const pcm = this.voice.next(this.perChunk);
      if (pcm === undefined) break;
      samples += pcm.length;
      this.emit(pcm);
    }
    const ms = (samples * 1000) / this.record.rate;
    this.record.late_ms += ms;
    return ms;
  }

  private finish(status: ReplyRecord['status']): void {
    this.ended = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.record.status = status;
    this.record.ended_at_ms = Math.round(performance.now() - this.startedAt + this.record.started_at_ms);
    if (status === 'completed') this.onDone();
  }
}

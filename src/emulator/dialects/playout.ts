/**
 * A provider's playback buffer: the bridge's audio and marks queue in the order they came, and a
 * drift-free clock plays 20 ms at a time (frame n at t0 + n·20 ms). A mark fires once the audio before it
 * has played out; a clear drops the queue and hands back the marks still pending. What played is kept
 * with its playout time, so tests measure the caller's side.
 */
import { performance } from 'node:perf_hooks';
import type { TimelineEntry } from './types.js';

type Item = { readonly pcm: Int16Array; at: number } | { readonly mark: string } | { readonly gap: number };

export interface PlayoutHooks {
  /** A mark reached the head of playback, or a clear took it. */
  onMark(name: string, how: 'played' | 'cleared'): void;
  onHeard?: ((pcm: Int16Array) => void) | undefined;
  /** The bridge's audio reached the caller's side: `samples` of it, as it arrived (before playback). */
  onArrival?: ((samples: number) => void) | undefined;
}

const FRAME_MS = 20;

export class Playout {
  readonly timeline: TimelineEntry[] = [];
  readonly #rate: number;
  readonly #frame: number;
  readonly #hooks: PlayoutHooks;
  readonly #keep: boolean;
  readonly #heard: Int16Array[] = [];
  readonly #queue: Item[] = [];
  readonly #t0 = performance.now();
  #queuedSamples = 0;
  #timer: NodeJS.Timeout | undefined;
  #clockStart = 0;
  #played = 0;
  #stopped = false;
  /** Heard as it arrives, no playback clock (LegOptions.playout 'arrival'). */
  readonly #atArrival: boolean;

  constructor(rate: number, hooks: PlayoutHooks, keepHeard: boolean, atArrival = false) {
    this.#rate = rate;
    this.#frame = Math.round((rate * FRAME_MS) / 1000);
    this.#hooks = hooks;
    this.#keep = keepHeard;
    this.#atArrival = atArrival;
  }

  /** Milliseconds since the call's playback clock was made. */
  now(): number {
    return performance.now() - this.#t0;
  }

  /**
   * Plays the frames already due (a timer that fired late, the process having stalled), so `queuedMs`
   * is what the caller's side really still holds at this moment, as a real platform's clock would have it.
   */
  advance(): void {
    if (this.#timer === undefined || this.#stopped) return;
    clearTimeout(this.#timer);
    this.#tick();
  }

  get queuedMs(): number {
    return (this.#queuedSamples * 1000) / this.#rate;
  }

  get frameSamples(): number {
    return this.#frame;
  }

  pushAudio(pcm: Int16Array): void {
    if (this.#stopped || pcm.length === 0) return;
    this.#hooks.onArrival?.(pcm.length);
    if (this.#atArrival) {
      this.#note('audio', this.now(), pcm.length);
      if (this.#keep) this.#heard.push(pcm);
      this.#hooks.onHeard?.(pcm);
      return;
    }
    this.#queue.push({ pcm, at: 0 });
    this.#queuedSamples += pcm.length;
    this.#start();
  }

  /** Silence the caller hears (a platform's gap), in its place in the queue. */
  pushGap(ms: number): void {
    if (this.#stopped) return;
    const samples = Math.round((this.#rate * ms) / 1000);
    if (this.#atArrival) {
      this.#note('gap', this.now(), samples);
      return;
    }
    this.#queue.push({ gap: samples });
    this.#queuedSamples += samples;
    this.#start();
  }

  pushMark(name: string): void {
    if (this.#stopped) return;
    if (this.#atArrival) {
      this.#fire(name, 'played');
      return;
    }
    this.#queue.push({ mark: name });
    this.#start();
  }

  /** Drops every queued sample; the pending marks are handed back as cleared, in order. */
  clear(): string[] {
    const marks: string[] = [];
    for (const item of this.#queue) if ('mark' in item) marks.push(item.mark);
    this.timeline.push({ kind: 'clear', atMs: this.now(), droppedSamples: this.#queuedSamples });
    this.#queue.length = 0;
    this.#queuedSamples = 0;
    for (const m of marks) this.#fire(m, 'cleared');
    return marks;
  }

  /** Drops the pending marks but keeps the audio; each is handed back as cleared. */
  clearMarks(): string[] {
    const marks: string[] = [];
    for (let i = this.#queue.length - 1; i >= 0; i--) {
      const item = this.#queue[i]!;
      if ('mark' in item) {
        marks.unshift(item.mark);
        this.#queue.splice(i, 1);
      }
    }
    for (const m of marks) this.#fire(m, 'cleared');
    return marks;
  }

  get pendingMarks(): number {
    let n = 0;
    for (const item of this.#queue) if ('mark' in item) n++;
    return n;
  }

  heard(): Int16Array {
    const out = new Int16Array(this.#heard.reduce((s, c) => s + c.length, 0));
    let at = 0;
    for (const c of this.#heard) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #fire(name: string, how: 'played' | 'cleared'): void {
    this.timeline.push({ kind: 'mark', atMs: this.now(), name, how });
    this.#hooks.onMark(name, how);
  }

  #start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    // Playback starts now: the first frame plays at once, the next 20 ms later, and so on.
    this.#clockStart = performance.now();
    this.#played = 0;
    this.#tick();
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const now = performance.now();
    while (this.#clockStart + this.#played * FRAME_MS <= now + 0.5) {
      this.#releaseMarks();
      if (this.#queue.length === 0) return; // idle until more comes
      this.#playFrame();
      this.#played++;
    }
    this.#timer = setTimeout(
      () => this.#tick(),
      Math.max(0, this.#clockStart + this.#played * FRAME_MS - now),
    );
  }

  /** Marks at the head of the queue: the audio before them has played. */
  #releaseMarks(): void {
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      if (!('mark' in head)) return;
      this.#queue.shift();
      this.#fire(head.mark, 'played');
    }
  }

  #playFrame(): void {
    const frame = new Int16Array(this.#frame);
    let filled = 0;
    const atMs = this.now();
    while (filled < this.#frame && this.#queue.length > 0) {
      const head = this.#queue[0]!;
      if ('mark' in head) break; // a mark plays where its audio ends: the rest of this frame is silence
      if ('gap' in head) {
        const n = Math.min(head.gap, this.#frame - filled);
        this.#note('gap', atMs, n);
        filled += n;
        this.#queuedSamples -= n;
        if (n === head.gap) this.#queue.shift();
        else this.#queue[0] = { gap: head.gap - n };
        continue;
      }
      const n = Math.min(head.pcm.length - head.at, this.#frame - filled);
      frame.set(head.pcm.subarray(head.at, head.at + n), filled);
      this.#note('audio', atMs, n);
      filled += n;
      head.at += n;
      this.#queuedSamples -= n;
      if (head.at === head.pcm.length) this.#queue.shift();
    }
    const played = frame.subarray(0, filled);
    if (this.#keep) this.#heard.push(played);
    this.#hooks.onHeard?.(played);
  }

  #note(kind: 'audio' | 'gap', atMs: number, samples: number): void {
    const last = this.timeline[this.timeline.length - 1];
    if (last !== undefined && last.kind === kind && kind === 'audio')
      (last as { samples: number }).samples += samples;
    else this.timeline.push(kind === 'audio' ? { kind, atMs, samples } : { kind, atMs, samples });
  }
}

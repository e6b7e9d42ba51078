/**
 * Built-in bots for demos, tests and load: `builtin:echo` (the caller's audio back after a fixed delay)
 * and `builtin:tone[:hz]` (a steady sine). Both are served by the shared pacing loop, so they add no
 * timers of their own; their audio goes through the same pipeline, re-chunker and pacer as a ws bot's.
 */
import type { PacingLoop } from '../pacing-loop.js';
import type { BotHandler, BotLeg } from './types.js';

/** How far ahead of real time generated audio is produced (the outbound pacer plays it at real time). */
export const GENERATE_AHEAD_MS = 100;

/** The longest the echo delay line may hold (frames), so a stalled loop cannot grow it without bound. */
const ECHO_MAX_FRAMES = 4096;

/**
 * Echoes caller audio back after `delayMs` (config ECHO_DELAY_MS, default 200 ms). The caller hears
 * itself `delayMs` plus the outbound lead and transport later.
 */
export class EchoBot implements BotLeg {
  readonly #handler: BotHandler;
  readonly #loop: PacingLoop;
  readonly #delayMs: number;
  readonly #frames: Uint8Array[] = [];
  readonly #dueAt: number[] = [];
  #head = 0;
  #ended = false;

  constructor(handler: BotHandler, loop: PacingLoop, delayMs: number) {
    this.#handler = handler;
    this.#loop = loop;
    this.#delayMs = delayMs;
    loop.add(this);
  }

  audio(pcm: Uint8Array): void {
    if (this.#ended) return;
    if (this.#frames.length - this.#head >= ECHO_MAX_FRAMES) return;
    const at = performance.now() + this.#delayMs;
    this.#frames.push(pcm);
    this.#dueAt.push(at);
    if (this.#delayMs === 0) this.service(at);
    else this.#loop.wakeBy(at);
  }

  service(now: number): number {
    const frames = this.#frames;
    while (this.#head < frames.length && this.#dueAt[this.#head]! <= now) {
      const pcm = frames[this.#head]!;
      this.#head++;
      this.#handler.botAudio(pcm);
    }
    if (this.#head > 256 && this.#head * 2 > frames.length) {
      // Compact now and then rather than shift() per frame.
      frames.splice(0, this.#head);
      this.#dueAt.splice(0, this.#head);
      this.#head = 0;
    }
    return this.#head < frames.length ? this.#dueAt[this.#head]! : Number.POSITIVE_INFINITY;
  }

  dtmf(): void {}
  mark(): void {}

  end(): void {
    this.#ended = true;
    this.#loop.delete(this);
  }
}

/**
 * Plays PCM16 samples at the bot rate, produced `GENERATE_AHEAD_MS` ahead of real time in 20 ms frames.
 * A source returns the samples for a stretch of the stream, or fewer when it has ended.
 */
export abstract class GeneratorBot implements BotLeg {
  readonly #handler: BotHandler;
  readonly #loop: PacingLoop;
  readonly #rate: number;
  readonly #frameSamples: number;
  #t0 = -1;
  #produced = 0;
  #done = false;

  constructor(handler: BotHandler, loop: PacingLoop, rate: number) {
    this.#handler = handler;
    this.#loop = loop;
    this.#rate = rate;
    this.#frameSamples = rate / 50;
    loop.add(this);
    loop.wakeBy(performance.now());
  }

  /** Writes up to `out.length` samples starting at sample `offset`; returns how many (fewer at the end). */
  protected abstract fill(out: Int16Array, offset: number): number;

  service(now: number): number {
    if (this.#done) return Number.POSITIVE_INFINITY;
    if (this.#t0 < 0) this.#t0 = now;
    const target = Math.floor(((now - this.#t0 + GENERATE_AHEAD_MS) * this.#rate) / 1000);
    while (this.#produced < target) {
      // A fresh frame each time: the pipeline may keep what it is given.
      const frame = new Int16Array(this.#frameSamples);
      const n = this.fill(frame, this.#produced);
      if (n > 0) {
        this.#produced += n;
        this.#handler.botAudio(new Uint8Array(frame.buffer, 0, n * 2));
      }
      if (n < frame.length) {
        this.#done = true;
        this.#loop.delete(this);
        return Number.POSITIVE_INFINITY;
      }
    }
    // Produced GENERATE_AHEAD_MS ahead: waking every frame duration keeps that much queued.
    return now + 20;
  }

  audio(): void {}
  dtmf(): void {}
  mark(): void {}

  end(): void {
    this.#done = true;
    this.#loop.delete(this);
  }
}

/** A steady sine at `hz` (default 440 Hz), -12 dBFS. */
export class ToneBot extends GeneratorBot {
  readonly #step: number;
  static readonly AMPLITUDE = 8192;

  constructor(handler: BotHandler, loop: PacingLoop, rate: number, hz: number) {
    super(handler, loop, rate);
    this.#step = (2 * Math.PI * hz) / rate;
  }

  protected fill(out: Int16Array, offset: number): number {
    for (let i = 0; i < out.length; i++)
      out[i] = Math.round(ToneBot.AMPLITUDE * Math.sin(this.#step * (offset + i)));
    return out.length;
  }
}

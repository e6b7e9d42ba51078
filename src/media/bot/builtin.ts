/**
 * Built-in bots for demos, tests and load: `builtin:echo` (the caller's audio back after a fixed delay)
 * and `builtin:tone[:hz]` (a steady sine). Both are served by the shared pacing loop, so they add no
 * timers of their own; their audio goes through the same pipeline, re-chunker and pacer as a ws bot's.
 */
import type { PacingLoop } from '../pacing-loop.js';
import type { BotLeg, CallerPort } from './types.js';

/** How far ahead of real time generated audio is produced (the outbound pacer plays it at real time). */
export const GENERATE_AHEAD_MS = 100;

/** The most frames the echo delay line holds, so a stalled loop cannot grow it without bound. */
const ECHO_MAX_FRAMES = 4096;
/** Beyond the delay itself, how much audio the line may hold (a stalled loop, a burst), in ms. */
const ECHO_SLACK_MS = 5_000;

/**
 * Echoes caller audio back after `delayMs` (config ECHO_DELAY_MS, default 200 ms). The caller hears
 * itself `delayMs` plus the outbound lead and transport later.
 *
 * The delay line copies the audio into one byte ring per session (grown by doubling, bounded) rather
 * than keeping the chunks it is given: those are views into the DSP pipeline's batch buffers, and
 * holding a 640-byte view for 200 ms would keep a whole batch of every session's audio alive with it.
 * What it hands on is a view of the ring, valid for that call only (the pipeline copies its input).
 */
export class EchoBot implements BotLeg {
  readonly #port: CallerPort;
  readonly #loop: PacingLoop;
  readonly #delayMs: number;
  /** The most bytes held: the delay plus ECHO_SLACK_MS at 48 kHz PCM16 (the highest bot rate). */
  readonly #maxBytes: number;
  #ring = new Uint8Array(8192);
  /** Where the oldest held byte is, and how many are held. */
  #start = 0;
  #bytes = 0;
  /** The held frames, oldest at #head: when each is due and its length (grown by doubling, like the ring). */
  #dueAt = new Float64Array(16);
  #len = new Int32Array(16);
  #head = 0;
  #frames = 0;
  /** A frame that wraps the ring's end is copied here to be handed on whole. */
  #wrapped = new Uint8Array(0);
  #ended = false;

  constructor(port: CallerPort, loop: PacingLoop, delayMs: number) {
    this.#port = port;
    this.#loop = loop;
    this.#delayMs = delayMs;
    this.#maxBytes = Math.ceil(((delayMs + ECHO_SLACK_MS) * 48_000 * 2) / 1000);
    loop.add(this);
  }

  audio(pcm: Uint8Array): void {
    const n = pcm.byteLength;
    if (this.#ended || n === 0) return;
    if (this.#frames >= ECHO_MAX_FRAMES || this.#bytes + n > this.#maxBytes) return;
    if (this.#frames === this.#dueAt.length) this.#growFrames();
    if (this.#bytes + n > this.#ring.length) this.#grow(this.#bytes + n);
    const ring = this.#ring;
    const at = (this.#start + this.#bytes) % ring.length;
    const first = Math.min(n, ring.length - at);
    ring.set(first === n ? pcm : pcm.subarray(0, first), at);
    if (first < n) ring.set(pcm.subarray(first), 0);
    this.#bytes += n;
    const due = performance.now() + this.#delayMs;
    const slot = (this.#head + this.#frames) % this.#dueAt.length;
    this.#dueAt[slot] = due;
    this.#len[slot] = n;
    this.#frames++;
    if (this.#delayMs === 0) this.service(due);
    else this.#loop.wakeBy(this, due);
  }

  service(now: number): number {
    while (this.#frames > 0 && this.#dueAt[this.#head]! <= now) {
      const n = this.#len[this.#head]!;
      const ring = this.#ring;
      const start = this.#start;
      let frame: Uint8Array;
      if (start + n <= ring.length) frame = ring.subarray(start, start + n);
      else {
        if (this.#wrapped.length < n) this.#wrapped = new Uint8Array(n);
        frame = this.#wrapped.subarray(0, n);
        const first = ring.length - start;
        frame.set(ring.subarray(start), 0);
        frame.set(ring.subarray(0, n - first), first);
      }
      this.#start = (start + n) % ring.length;
      this.#bytes -= n;
      this.#head = (this.#head + 1) % this.#dueAt.length;
      this.#frames--;
      this.#port.audio(frame);
      if (this.#ended) return Number.POSITIVE_INFINITY;
    }
    return this.#frames > 0 ? this.#dueAt[this.#head]! : Number.POSITIVE_INFINITY;
  }

  dtmf(): void {}
  mark(): void {}

  end(): void {
    this.#ended = true;
    this.#frames = 0;
    this.#bytes = 0;
    this.#loop.delete(this);
  }

  /** Doubles the frame slots, keeping the held ones in order from index 0. */
  #growFrames(): void {
    const size = this.#dueAt.length;
    const dueAt = new Float64Array(size * 2);
    const len = new Int32Array(size * 2);
    for (let i = 0; i < this.#frames; i++) {
      const j = (this.#head + i) % size;
      dueAt[i] = this.#dueAt[j]!;
      len[i] = this.#len[j]!;
    }
    this.#dueAt = dueAt;
    this.#len = len;
    this.#head = 0;
  }

  /** Doubles the ring until `need` bytes fit, keeping what is held in order from index 0. */
  #grow(need: number): void {
    const old = this.#ring;
    let size = old.length * 2;
    while (size < need) size *= 2;
    const ring = new Uint8Array(size);
    const first = Math.min(this.#bytes, old.length - this.#start);
    ring.set(old.subarray(this.#start, this.#start + first), 0);
    ring.set(old.subarray(0, this.#bytes - first), first);
    this.#ring = ring;
    this.#start = 0;
  }
}

/**
 * Plays PCM16 samples at the bot rate, produced `GENERATE_AHEAD_MS` ahead of real time in 20 ms frames.
 * A source returns the samples for a stretch of the stream, or fewer when it has ended.
 */
export abstract class GeneratorBot implements BotLeg {
  readonly #port: CallerPort;
  readonly #loop: PacingLoop;
  readonly #rate: number;
  readonly #frame: Int16Array;
  #t0 = -1;
  #produced = 0;
  #done = false;

  constructor(port: CallerPort, loop: PacingLoop, rate: number) {
    this.#port = port;
    this.#loop = loop;
    this.#rate = rate;
    this.#frame = new Int16Array(rate / 50);
    loop.add(this);
    loop.wakeBy(this, performance.now());
  }

  /** Writes up to `out.length` samples starting at sample `offset`; returns how many (fewer at the end). */
  protected abstract fill(out: Int16Array, offset: number): number;

  service(now: number): number {
    if (this.#done) return Number.POSITIVE_INFINITY;
    if (this.#t0 < 0) this.#t0 = now;
    const target = Math.floor(((now - this.#t0 + GENERATE_AHEAD_MS) * this.#rate) / 1000);
    // One frame reused: the pipeline copies what it is given.
    const frame = this.#frame;
    while (this.#produced < target) {
      const n = this.fill(frame, this.#produced);
      if (n > 0) {
        this.#produced += n;
        this.#port.audio(new Uint8Array(frame.buffer, 0, n * 2));
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

  constructor(port: CallerPort, loop: PacingLoop, rate: number, hz: number) {
    super(port, loop, rate);
    this.#step = (2 * Math.PI * hz) / rate;
  }

  protected fill(out: Int16Array, offset: number): number {
    for (let i = 0; i < out.length; i++)
      out[i] = Math.round(ToneBot.AMPLITUDE * Math.sin(this.#step * (offset + i)));
    return out.length;
  }
}

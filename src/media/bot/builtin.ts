/**
 * Built-in bots for demos, tests and load: `builtin:echo` (the caller's audio back after a fixed delay)
 * and `builtin:tone[:hz]` (a steady sine). Both are served by the shared pacing loop, so they add no
 * timers of their own; their audio goes through the same pipeline, re-chunker and pacer as a ws bot's.
 */
import type { Paced, PacingLoop } from '../pacing-loop.js';
import type { BotLeg, CallerPort } from './types.js';

/** How far ahead of real time generated audio is produced (the outbound pacer plays it at real time). */
export const GENERATE_AHEAD_MS = 100;

/** The most frames the echo delay line holds, so a stalled loop cannot grow it without bound. */
const ECHO_MAX_FRAMES = 4096;
/**
 * The longest slot of the delay line (4 KB: 20 ms at 48 kHz twice over); a longer frame is held as
 * several, due together, so one long frame cannot make every slot long.
 */
const ECHO_SLOT_MAX_BYTES = 4096;
/** Beyond the delay itself, how much audio the line may hold (a stalled loop, a burst), in ms. */
const ECHO_SLACK_MS = 5_000;

/**
 * The schedule of every echo bot on one pacing loop with one delay: which bot's oldest frame is due
 * next, for all calls in arrival order (one delay for all, so due times never decrease). It is one member
 * of the loop however many calls echo, so a frame costs an append here, not a heap entry of its own (the
 * bare transport's delayed echo holds its frames the same way: src/load/echo-server.ts).
 */
class EchoLine implements Paced {
  #due = new Float64Array(256);
  #bots: (EchoBot | undefined)[] = new Array(256);
  #head = 0;
  #count = 0;

  constructor(readonly loop: PacingLoop) {
    loop.add(this);
  }

  /** `bot` holds a new frame, due at `due`. */
  add(bot: EchoBot, due: number): void {
    if (this.#count === this.#due.length) this.#grow();
    const i = (this.#head + this.#count) % this.#due.length;
    this.#due[i] = due;
    this.#bots[i] = bot;
    if (this.#count++ === 0) this.loop.wakeBy(this, due);
  }

  service(now: number): number {
    const size = this.#due.length;
    while (this.#count > 0 && this.#due[this.#head]! <= now) {
      const bot = this.#bots[this.#head]!;
      this.#bots[this.#head] = undefined;
      this.#head = (this.#head + 1) % size;
      this.#count--;
      bot.release();
    }
    return this.#count > 0 ? this.#due[this.#head]! : Number.POSITIVE_INFINITY;
  }

  #grow(): void {
    const size = this.#due.length;
    const due = new Float64Array(size * 2);
    const bots: (EchoBot | undefined)[] = new Array(size * 2);
    for (let k = 0; k < this.#count; k++) {
      const j = (this.#head + k) % size;
      due[k] = this.#due[j]!;
      bots[k] = this.#bots[j];
    }
    this.#due = due;
    this.#bots = bots;
    this.#head = 0;
  }
}

const echoLines = new WeakMap<PacingLoop, Map<number, EchoLine>>();

function echoLine(loop: PacingLoop, delayMs: number): EchoLine {
  let byDelay = echoLines.get(loop);
  if (byDelay === undefined) {
    byDelay = new Map();
    echoLines.set(loop, byDelay);
  }
  let line = byDelay.get(delayMs);
  if (line === undefined) {
    line = new EchoLine(loop);
    byDelay.set(delayMs, line);
  }
  return line;
}

/**
 * Echoes caller audio back after `delayMs` (config ECHO_DELAY_MS, default 200 ms). The caller hears
 * itself `delayMs` plus the outbound lead and transport later.
 *
 * The delay line copies each frame into a slot of its own (a ring of equal slots, as long as the longest
 * frame so far up to 4 KB, grown by doubling, bounded) rather than keeping the chunks it is given: those are views
 * into the pipeline's buffers, valid for the call only. What it hands on is the slot itself (a view made
 * once), valid for that call only (the pipeline copies its input). When each frame is due is kept by the
 * loop's shared EchoLine.
 */
export class EchoBot implements BotLeg {
  readonly #port: CallerPort;
  readonly #line: EchoLine | undefined;
  /** The most bytes held: the delay plus ECHO_SLACK_MS at 48 kHz PCM16 (the highest bot rate). */
  readonly #maxBytes: number;
  /** Bytes a slot holds: the longest frame so far. */
  #slotBytes = 0;
  /** One view per slot, of one buffer; the oldest held frame is at #head. */
  #slots: Uint8Array[] = [];
  /** Each slot's frame length. */
  #len = new Int32Array(0);
  #head = 0;
  #frames = 0;
  #bytes = 0;
  #ended = false;

  constructor(port: CallerPort, loop: PacingLoop, delayMs: number) {
    this.#port = port;
    this.#line = delayMs > 0 ? echoLine(loop, delayMs) : undefined;
    this.#maxBytes = Math.ceil(((delayMs + ECHO_SLACK_MS) * 48_000 * 2) / 1000);
    this.delayMs = delayMs;
  }

  readonly delayMs: number;

  audio(pcm: Uint8Array): void {
    const n = pcm.length;
    if (this.#ended || n === 0) return;
    if (n > ECHO_SLOT_MAX_BYTES) {
      // Where a frame ends does not matter to audio: the pieces are handed on in order, due together.
      for (let at = 0; at < n; at += ECHO_SLOT_MAX_BYTES)
        this.audio(pcm.subarray(at, Math.min(n, at + ECHO_SLOT_MAX_BYTES)));
      return;
    }
    if (this.#frames >= ECHO_MAX_FRAMES || this.#bytes + n > this.#maxBytes) return;
    if (n > this.#slotBytes || this.#frames === this.#slots.length) {
      // Slots for twice the frames, at least as long as this one; past the bound the frame is dropped.
      const slotBytes = Math.max(n, this.#slotBytes);
      const count = Math.max(
        16,
        this.#frames === this.#slots.length ? 2 * this.#slots.length : this.#slots.length,
      );
      if (slotBytes * count > 2 * this.#maxBytes) return;
      this.#relayout(slotBytes, count);
    }
    const i = (this.#head + this.#frames) % this.#slots.length;
    this.#slots[i]!.set(pcm);
    this.#len[i] = n;
    this.#frames++;
    this.#bytes += n;
    if (this.#line === undefined) this.release();
    else this.#line.add(this, this.#line.loop.now() + this.delayMs);
  }

  /** Releases whatever of every echo bot on this loop is due at `now` (the loop does this by itself). */
  service(now: number): number {
    return this.#line?.service(now) ?? Number.POSITIVE_INFINITY;
  }

  /** @internal The oldest held frame is due: hands it on. */
  release(): void {
    if (this.#ended || this.#frames === 0) return;
    const i = this.#head;
    const slot = this.#slots[i]!;
    const n = this.#len[i]!;
    this.#head = (i + 1) % this.#slots.length;
    this.#frames--;
    this.#bytes -= n;
    this.#port.audio(n === this.#slotBytes ? slot : slot.subarray(0, n));
  }

  dtmf(): void {}
  mark(): void {}

  end(): void {
    // Its entries in the shared line find it ended and release nothing.
    this.#ended = true;
    this.#frames = 0;
    this.#bytes = 0;
  }

  /** New slots (`count` of `slotBytes`), the held frames copied over in order from slot 0. */
  #relayout(slotBytes: number, count: number): void {
    const store = new Uint8Array(slotBytes * count);
    const slots: Uint8Array[] = new Array(count);
    for (let k = 0; k < count; k++) slots[k] = store.subarray(k * slotBytes, (k + 1) * slotBytes);
    const len = new Int32Array(count);
    const old = this.#slots;
    for (let k = 0; k < this.#frames; k++) {
      const j = (this.#head + k) % old.length;
      const n = this.#len[j]!;
      slots[k]!.set(n === old[j]!.length ? old[j]! : old[j]!.subarray(0, n));
      len[k] = n;
    }
    this.#slots = slots;
    this.#len = len;
    this.#slotBytes = slotBytes;
    this.#head = 0;
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
    loop.wakeBy(this, loop.now());
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

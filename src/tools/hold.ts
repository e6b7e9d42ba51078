/**
 * Hold audio (CONTRACT §10): while a tool has run longer than `tool_hold_ms`, the caller hears
 * `hold_audio` (the built-in chime of src/audio/hold-tone.ts, a WAV file looped, or nothing). It goes
 * to the caller through the bot -> caller line like the bot's own audio, so pacing, barge-in and the
 * recording treat it alike.
 *
 * When it plays: from `tool_hold_ms` after the first of the tools in flight began, while the bot is
 * quiet; it stops within one chunk of the bot's next audio (it is produced a frame at a time, never
 * more than one frame ahead of real time, so the bot's audio waits at most that behind it), and after
 * the last tool's output it plays on until the bot speaks or HOLD_TAIL_MS pass. The bot speaking while a
 * tool still runs pauses it; it resumes once the bot's audio has played out.
 *
 * One frame's worth is produced per pacing-loop wake-up (the call's one clock), from a period encoded
 * once in the bot leg's format; one clock timer wakes the decision when something is due.
 */
import { encodeInto } from '../audio/codec.js';
import { holdPattern } from '../audio/hold-tone.js';
import type { Clock, ClockTimer } from '../clock.js';
import type { CallerPort } from '../media/bot/types.js';
import type { Paced, PacingLoop } from '../media/pacing-loop.js';
import type { Format } from '../pipeline/types.js';

/** After the last tool's output, hold audio plays on this long unless the bot speaks (CONTRACT §10). */
export const HOLD_TAIL_MS = 3_000;
const FRAME_MS = 20;

/** One period of `samples` in the bot leg's format (looped by the player). */
export function encodeHold(samples: Int16Array, format: Format): Uint8Array {
  const out = new Uint8Array(samples.length * (format.codec === 'slin' ? 2 : 1));
  encodeInto(format.codec, samples, out);
  return out;
}

/** The built-in hold sound in `format`. */
export function builtinHold(format: Format): Uint8Array {
  return encodeHold(holdPattern(format.rate), format);
}

/** Plays a looped period a frame at a time, at real time from when it starts. */
class Player implements Paced {
  readonly #port: CallerPort;
  readonly #loop: PacingLoop;
  readonly #source: Uint8Array;
  readonly #frameBytes: number;
  readonly #bytesPerMs: number;
  #playing = false;
  #t0 = 0;
  /** Bytes pushed since the start, and where in the period the next frame begins. */
  #produced = 0;
  #at = 0;

  constructor(port: CallerPort, loop: PacingLoop, source: Uint8Array, format: Format) {
    this.#port = port;
    this.#loop = loop;
    this.#source = source;
    this.#bytesPerMs = (format.rate / 1000) * (format.codec === 'slin' ? 2 : 1);
    this.#frameBytes = Math.round(FRAME_MS * this.#bytesPerMs);
  }

  get playing(): boolean {
    return this.#playing;
  }

  start(now: number): void {
    if (this.#playing || this.#source.length === 0) return;
    this.#playing = true;
    this.#t0 = now;
    this.#produced = 0;
    this.#loop.add(this);
    this.service(now);
  }

  stop(): void {
    if (!this.#playing) return;
    this.#playing = false;
    this.#loop.delete(this);
  }

  service(now: number): number {
    if (!this.#playing) return Number.POSITIVE_INFINITY;
    // The frame that begins by now, and none after it: at most one frame ahead of real time.
    const due = Math.floor((now - this.#t0) * this.#bytesPerMs) + 1;
    const src = this.#source;
    while (this.#produced < due) {
      const n = Math.min(this.#frameBytes, src.length - this.#at);
      // Views of the period: the pipeline copies what it is given.
      this.#port.audio(src.subarray(this.#at, this.#at + n));
      this.#produced += n;
      this.#at = (this.#at + n) % src.length;
    }
    const next = this.#t0 + this.#produced / this.#bytesPerMs;
    this.#loop.wakeBy(this, next);
    return next;
  }
}

export interface HoldOptions {
  readonly port: CallerPort;
  readonly loop: PacingLoop;
  readonly clock: Clock;
  readonly format: Format;
  /** `tool_hold_ms`. */
  readonly afterMs: number;
}

export class HoldAudio {
  readonly #o: HoldOptions;
  #player: Player | undefined;
  /** Tools in flight, and when the first of them began. */
  #running = 0;
  #since = 0;
  /** Hold audio has played since the tools began (the tail after the output plays only then). */
  #played = false;
  /** The tail after the last output ends then (0: none). */
  #tailUntil = 0;
  /** The bot's audio plays until then. */
  #botUntil = 0;
  #timer: ClockTimer | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #ended = false;

  constructor(o: HoldOptions) {
    this.#o = o;
  }

  /** The sound to play, in the bot leg's format (it may arrive late: a WAV file being read). */
  use(source: Uint8Array): void {
    if (this.#ended) return;
    this.#player = new Player(this.#o.port, this.#o.loop, source, this.#o.format);
    this.#evaluate();
  }

  get playing(): boolean {
    return this.#player?.playing === true;
  }

  toolStarted(): void {
    if (this.#running++ === 0) {
      this.#since = this.#o.clock.now();
      this.#played = false;
      this.#tailUntil = 0;
    }
    this.#evaluate();
  }

  toolFinished(): void {
    if (this.#running === 0) return;
    if (--this.#running === 0) this.#tailUntil = this.#played ? this.#o.clock.now() + HOLD_TAIL_MS : 0;
    this.#evaluate();
  }

  /** The bot sent audio, which plays until `until` (ms on the clock): hold audio stops now. */
  botAudio(until: number): void {
    this.#botUntil = until;
    this.#tailUntil = 0;
    if (this.#player?.playing === true) this.#player.stop();
    if (this.#running > 0) this.#wakeAt(until);
  }

  /** The bot's audio not yet played was dropped (barge-in): it is quiet from now. */
  botCleared(): void {
    this.#botUntil = 0;
    this.#evaluate();
  }

  end(): void {
    this.#ended = true;
    this.#player?.stop();
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #evaluate(): void {
    if (this.#ended) return;
    const now = this.#o.clock.now();
    const holdAt = this.#since + this.#o.afterMs;
    const busy = this.#running > 0 && now >= holdAt;
    const tail = this.#tailUntil > now;
    const want = (busy || tail) && now >= this.#botUntil;
    const player = this.#player;
    if (want && player !== undefined && !player.playing) {
      player.start(now);
      this.#played = true;
    } else if (!want && player?.playing === true) player.stop();
    // When the answer may change next.
    let next = Number.POSITIVE_INFINITY;
    if (this.#running > 0 && now < holdAt) next = holdAt;
    else if ((this.#running > 0 || tail) && this.#botUntil > now) next = this.#botUntil;
    if (tail) next = Math.min(next, this.#tailUntil);
    this.#wakeAt(next);
  }

  #wakeAt(at: number): void {
    // An earlier wake-up already armed re-decides then, and arms this one if it still stands.
    if (at === Number.POSITIVE_INFINITY || at >= this.#timerAt) return;
    if (this.#timer !== undefined) this.#o.clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = this.#o.clock.setTimeout(
      () => {
        this.#timer = undefined;
        this.#timerAt = Number.POSITIVE_INFINITY;
        this.#evaluate();
      },
      Math.max(0, at - this.#o.clock.now()),
    );
    this.#timer.unref();
  }
}

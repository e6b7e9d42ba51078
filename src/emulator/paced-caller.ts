/**
 * The paced synthetic caller: what every synthetic call of the project (the emulator's `npm run call`,
 * the load generator, the tests) uses to send a caller's audio at real time.
 *
 * `PacedSchedule` is the clock of it: chunk k is due at `t0 + k·chunkMs`, computed from the start and
 * never by chaining sleeps, so a late wake-up delays the chunks it covers but never the ones after (no
 * drift); on each wake-up every chunk that is due goes out. Timed cues (a caller's DTMF keys) ride the
 * same schedule. Every schedule of a process is a member of one timer, the bridge's own pacing loop
 * (src/media/pacing-loop.ts: aimed wake-ups, at least `CALLER_MIN_GAP_MS` apart), so a thousand calls
 * cost one timer and at most 500 wake-ups a second, and a test hands in a clock it drives by hand.
 *
 * `PacedCaller` puts a schedule in front of a provider leg (src/emulator/dialects/, any dialect's
 * framing): chunk k of the synthetic source (pre-rendered PCM, or a function that fills each chunk, as
 * the load generator's markers do) goes out through the leg; a chunk due while the socket is backed up
 * past `SEND_HIGH_WATER_BYTES` is shed, as a real-time source drops audio rather than queue it without
 * bound.
 */
import { type Clock, systemClock } from '../clock.js';
import { type Paced, PacingLoop } from '../media/pacing-loop.js';
import type { ProviderLeg } from './dialects/types.js';

/** Wake-ups at least this far apart: the bridge's default PACE_MIN_GAP_MS. */
export const CALLER_MIN_GAP_MS = 2;

/** Unsent bytes past which a chunk is dropped instead of queued: ~1.6 s of 16 kHz PCM16 as base64. */
export const SEND_HIGH_WATER_BYTES = 64 * 1024;

const loops = new WeakMap<Clock, PacingLoop>();

/** The one pacing loop of the process for `clock` (made on first use). */
export function callerLoop(clock: Clock = systemClock): PacingLoop {
  let loop = loops.get(clock);
  if (loop === undefined) {
    loop = new PacingLoop(CALLER_MIN_GAP_MS, clock);
    loops.set(clock, loop);
  }
  return loop;
}

/** Something due `atMs` after the schedule's start (a DTMF key). */
export interface Cue {
  readonly atMs: number;
  readonly run: () => void;
}

export interface ScheduleOptions {
  readonly chunkMs: number;
  /** How many chunks in all; Infinity runs until `until` or `stop()`. */
  readonly chunks: number;
  /** Sends chunk `index`, which is `lateMs` behind its due time. A throw ends the schedule (`done` rejects). */
  readonly send: (index: number, lateMs: number) => void;
  /** Run once their time has come, in `atMs` order; those not due by the last chunk are dropped. */
  readonly cues?: readonly Cue[] | undefined;
  /** Checked on each wake-up: false ends the schedule (the socket closed, the call was aborted). */
  readonly live?: (() => boolean) | undefined;
  /** A monotonic time: chunks due at or after it are not sent. */
  readonly until?: number | undefined;
  /** The clock the schedule reads (the system's by default); its loop is `callerLoop(clock)`. */
  readonly clock?: Clock | undefined;
}

export class PacedSchedule implements Paced {
  readonly chunkMs: number;
  readonly done: Promise<void>;
  readonly #o: ScheduleOptions;
  readonly #clock: Clock;
  readonly #loop: PacingLoop;
  readonly #cues: Cue[];
  #t0 = Number.NaN;
  #k = 0;
  #cue = 0;
  #state: 'idle' | 'running' | 'done' = 'idle';
  #resolve!: () => void;
  #reject!: (err: unknown) => void;

  constructor(o: ScheduleOptions) {
    if (!(o.chunkMs > 0)) throw new RangeError(`chunkMs must be above 0, got ${o.chunkMs}`);
    if (!(o.chunks >= 0)) throw new RangeError(`chunks must be 0 or more, got ${o.chunks}`);
    this.chunkMs = o.chunkMs;
    this.#o = o;
    this.#clock = o.clock ?? systemClock;
    this.#loop = callerLoop(this.#clock);
    this.#cues = [...(o.cues ?? [])].sort((a, b) => a.atMs - b.atMs);
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.done.catch(() => {});
  }

  /** Chunks sent so far. */
  get sent(): number {
    return this.#k;
  }

  /** When chunk 0 was due (NaN before `start`). */
  get startedAt(): number {
    return this.#t0;
  }

  get running(): boolean {
    return this.#state === 'running';
  }

  /** Starts the schedule at `at` (now by default): what is due then goes out before this returns. */
  start(at: number = this.#clock.now()): this {
    if (this.#state !== 'idle') return this;
    this.#state = 'running';
    this.#t0 = at;
    this.#loop.add(this);
    const next = this.service(this.#clock.now());
    if (next !== Number.POSITIVE_INFINITY) this.#loop.wakeBy(this, next);
    return this;
  }

  /** Ends the schedule: nothing more is sent; `done` resolves. */
  stop(): void {
    this.#finish();
  }

  service(now: number): number {
    if (this.#state !== 'running') return Number.POSITIVE_INFINITY;
    const o = this.#o;
    if (o.live !== undefined && !o.live()) return this.#finish();
    const t0 = this.#t0;
    const end = Math.min(o.chunks, this.#lastBefore(o.until));
    try {
      for (;;) {
        const chunkDue = this.#k < end ? t0 + this.#k * this.chunkMs : Number.POSITIVE_INFINITY;
        const cue = this.#cues[this.#cue];
        const cueDue = cue === undefined ? Number.POSITIVE_INFINITY : t0 + cue.atMs;
        if (cueDue <= now && cueDue <= chunkDue) {
          this.#cue++;
          cue!.run();
        } else if (chunkDue <= now) {
          o.send(this.#k, now - chunkDue);
          this.#k++;
        } else break;
        if (this.#state !== 'running') return Number.POSITIVE_INFINITY;
      }
    } catch (err) {
      return this.#finish(err);
    }
    if (this.#k >= end) return this.#finish();
    const cue = this.#cues[this.#cue];
    return Math.min(
      t0 + this.#k * this.chunkMs,
      cue === undefined ? Number.POSITIVE_INFINITY : t0 + cue.atMs,
    );
  }

  /** How many chunks are due before `until`. */
  #lastBefore(until: number | undefined): number {
    if (until === undefined) return Number.POSITIVE_INFINITY;
    return Math.max(0, Math.ceil((until - this.#t0) / this.chunkMs));
  }

  #finish(err?: unknown): number {
    if (this.#state === 'done') return Number.POSITIVE_INFINITY;
    this.#state = 'done';
    this.#loop.delete(this);
    if (err === undefined) this.#resolve();
    else this.#reject(err);
    return Number.POSITIVE_INFINITY;
  }
}

/** Starts a schedule now; resolves once its last chunk went out (or it was stopped). */
export function pace(o: ScheduleOptions): Promise<void> {
  return new PacedSchedule(o).start().done;
}

export interface PacedCallerOptions {
  /** The emulated provider the call goes through (createProviderLeg): its framing, its socket. */
  readonly leg: ProviderLeg;
  /**
   * What the caller says, PCM16 mono at the leg's rate: pre-rendered (sent chunk by chunk; the last
   * chunk may be short), or a function that fills chunk `index` into `out` and may keep it.
   */
  readonly audio: Int16Array | ((index: number, out: Int16Array) => void);
  /** How many chunks (by default the pre-rendered audio's, Infinity with a function). */
  readonly chunks?: number | undefined;
  /** Keys the caller presses, each `atMs` after the audio starts. */
  readonly dtmf?: readonly { readonly digit: string; readonly atMs: number }[] | undefined;
  /** After each chunk that went out, with how late it left against its schedule and the chunk (valid until this returns). */
  readonly onSent?: ((index: number, lateMs: number, pcm: Int16Array) => void) | undefined;
  /** Chunks due at or after this monotonic time are not sent. */
  readonly until?: number | undefined;
  readonly signal?: AbortSignal | undefined;
  readonly clock?: Clock | undefined;
}

export interface PacedCallerStats {
  chunksSent: number;
  /** Chunks not sent because the socket was backed up past `SEND_HIGH_WATER_BYTES`. */
  chunksShed: number;
  samplesSent: number;
}

export class PacedCaller {
  readonly stats: PacedCallerStats = { chunksSent: 0, chunksShed: 0, samplesSent: 0 };
  readonly samplesPerChunk: number;
  readonly #o: PacedCallerOptions;
  readonly #schedule: PacedSchedule;
  /** The chunk a fill function writes into: the leg encodes it before `sendAudio` returns. */
  readonly #scratch: Int16Array;

  constructor(o: PacedCallerOptions) {
    this.#o = o;
    const leg = o.leg;
    this.samplesPerChunk = Math.max(1, Math.round((leg.rate * leg.chunkMs) / 1000));
    this.#scratch = new Int16Array(typeof o.audio === 'function' ? this.samplesPerChunk : 0);
    const chunks =
      o.chunks ??
      (typeof o.audio === 'function'
        ? Number.POSITIVE_INFINITY
        : Math.ceil(o.audio.length / this.samplesPerChunk));
    this.#schedule = new PacedSchedule({
      chunkMs: leg.chunkMs,
      chunks,
      until: o.until,
      clock: o.clock,
      live: () => leg.isOpen() && o.signal?.aborted !== true,
      cues: o.dtmf?.map((d) => ({ atMs: d.atMs, run: () => leg.sendDtmf(d.digit) })),
      send: (index, lateMs) => this.#send(index, lateMs),
    });
  }

  /** Resolves when the last chunk went out, the leg closed or the signal aborted. */
  get done(): Promise<void> {
    return this.#schedule.done;
  }

  get schedule(): PacedSchedule {
    return this.#schedule;
  }

  /** The audio clock starts now, as a provider's does when its media connection opens. */
  start(): this {
    this.#schedule.start();
    return this;
  }

  stop(): void {
    this.#schedule.stop();
  }

  #send(index: number, lateMs: number): void {
    const leg = this.#o.leg;
    const audio = this.#o.audio;
    if (leg.backlogBytes() > SEND_HIGH_WATER_BYTES) {
      // The far end is not reading: a real-time source drops audio rather than queue it without bound.
      this.stats.chunksShed++;
      return;
    }
    const n = this.samplesPerChunk;
    let pcm: Int16Array;
    if (typeof audio === 'function') {
      audio(index, this.#scratch);
      pcm = this.#scratch;
    } else pcm = audio.subarray(index * n, (index + 1) * n);
    leg.sendAudio(pcm);
    this.stats.chunksSent++;
    this.stats.samplesSent += pcm.length;
    this.#o.onSent?.(index, lateMs, pcm);
  }
}

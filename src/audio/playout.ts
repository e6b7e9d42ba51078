/**
 * Playout core: the bot's audio on its way to the caller, and when the caller will have heard it. Pure
 * and synchronous: it owns no timer and no socket. Driven by `service(now)` (ms on one monotonic clock,
 * the pacing loop's), it hands each chunk that is due to its writer (`PlayoutOut.chunk`) and returns
 * when it next has something due, as a member of the pacing loop does.
 *
 *   re-chunk  audio in any sizes, out in exactly `chunkBytes` (src/audio/rechunker.ts), bounded by
 *             `bufferMs` (the oldest is shed beyond it)
 *   pace      chunk i of a run leaves at t0 + i * chunkMs - leadMs (src/audio/pacer.ts); a chunk into an
 *             empty queue whose time has come leaves from the push itself; a live stream's run follows
 *             the stream's own timeline (below)
 *   play      the caller's playback, reckoned as a first-in-first-out player: a chunk that left plays from
 *             the later of when it left and when the one before it ends (`playedTo` is when all that left
 *             has played); a chunk the writer could not send (a backed-up socket) plays nothing
 *   marks     an event behind the audio (a mark's frame, a digit) leaves once the audio queued before it
 *             has; a mark is reported once, as played or as cleared, by the rule below
 *
 * The mark rule, one for every provider dialect:
 * - The bridge reckons when the caller has played the audio before each mark: the end of the chunk that
 *   holds the mark's last byte, less the part of that chunk behind the mark. Until the provider has
 *   reported a mark on this call, the bridge reports each mark itself MARK_GRACE_MS after that time (the
 *   grace covers the audio's way to the caller), unless the provider reports it first.
 * - Once a report of the provider's has matched one of the call's marks (on time or late), its reports
 *   count for the rest of the call: a mark is reported when the provider reports it, or MARK_FALLBACK_MS
 *   after the bridge's own reckoning if it never does, so a provider that stops reporting cannot stall a
 *   bot for good.
 * - A provider's report of a mark reports every mark before it too, in order (playback is in order). A
 *   report of a mark already reported (the bridge's reckoning came first, or a clear) is not passed on
 *   again, but shows that this provider reports; where a name is both an already reported mark's and a
 *   waiting one's (a bot that names its marks alike), the report is the older mark's. A report that
 *   matches nothing of the call's is passed on as it is.
 * - A clear reports every mark not yet reported, at once, as cleared: no audio will reach them.
 * - A mark with no frame of its own (a platform without marks, AudioSocket) is only ever reckoned.
 *
 * Lateness: a chunk's lateness counts from the later of its scheduled time and when it became ready, so
 * live audio that arrives after its earliest send time is not counted late.
 *
 * A live stream (`live`: audio made as it is sent, at real time, as an echo of the caller's audio is)
 * is paced on its own timeline. A bot's reply has none but its playout: it is paced from its first
 * chunk, however much of it comes at once. A live stream's chunks each come when they are made, so one
 * that comes later than the chunks after it show was held up on its way (the bridge stalled, the
 * caller's first audio came in a burst): when a chunk is pushed, the run's start moves back to the
 * earliest time its chunks show (never more than `catchUpMs` before its first chunk left), and what
 * waited leaves at once, as late audio does. Anchored at its first chunk instead, a run whose first chunk
 * was held up would hold every later chunk as long, for the rest of the call: a stall at the start of a
 * call would become a standing delay, where the same stall a second later is caught up.
 */
import { PaceClock } from './pacer.js';
import { Rechunker } from './rechunker.js';

/** After the bridge's own reckoning of a mark's playout, how long before it reports the mark itself. */
export const MARK_GRACE_MS = 50;
/** Once the provider reports marks: how long after the bridge's reckoning a mark it never reports waits. */
export const MARK_FALLBACK_MS = 2_000;
/**
 * An idle flush held off by the bridge's own hold-ups still pads this many idle times after the bot's
 * last audio: a bridge held up again and again still plays the end of what the bot said.
 */
export const IDLE_FLUSH_MAX_IDLES = 3;
/** Events waiting behind audio, or marks waiting on their report; beyond this a bot is flooding. */
const MAX_WAITING = 1024;

/** Where the core's output goes: the writer that frames it for the provider. Called by the core only. */
export interface PlayoutOut<T> {
  /**
   * A chunk leaves now: a view valid during the call only (the writer copies it). `lateness` is how late
   * it left, ms (see the header). False: the writer could not send it (it was shed), so it plays nothing.
   */
  chunk(view: Uint8Array, lateness: number): boolean;
  /** An event whose audio has all left (a mark's frame, a digit). */
  passed(item: T): void;
  /** A mark is reported: the caller has played the audio before it, or (`cleared`) none will reach it. */
  played(name: string, cleared: boolean): void;
  /** The queue was full: `chunks` of the oldest audio were shed. */
  overflow(chunks: number): void;
  /**
   * A clear is under way: the audio queued here is gone; `held` says whether the provider may hold
   * some of ours (audio was queued since the last clear, or dropped on its way here). Called before
   * the events behind the dropped audio pass.
   */
  cut(held: boolean): void;
}

export interface PlayoutOptions {
  readonly chunkBytes: number;
  readonly chunkMs: number;
  /** The codec's silence, for padding a partial chunk. */
  readonly silenceByte: number;
  readonly leadMs: number;
  /** How far behind schedule a run may fall and still catch up (src/audio/pacer.ts); at least one chunk. */
  readonly catchUpMs: number;
  readonly bufferMs: number;
  /**
   * Once the bot's audio has paused this long, a partial chunk leaves padded with silence, and not
   * before even for a mark behind it (a dialect of long chunks: src/media/providers/types.ts).
   */
  readonly idleFlushMs?: number | undefined;
  /** When the bridge was last held up, on the same clock (src/held-up.ts); read by the idle flush only. */
  readonly heldUpAt?: (() => number) | undefined;
  /** The audio is a live stream, made at real time as it is sent: paced on its own timeline (see header). */
  readonly live?: boolean | undefined;
}

/** An event behind the audio: where in the stream it goes, what passes, and the mark it is, if one. */
interface Behind<T> {
  readonly at: number;
  readonly item: T | undefined;
  readonly mark: string | undefined;
}

/** A mark whose audio has left, waiting for its report. */
interface Awaited {
  readonly name: string;
  /** When the caller has played the audio before it, by the bridge's reckoning. */
  readonly at: number;
  /** Its frame went to the provider: the provider may report it. */
  readonly framed: boolean;
}

export class Playout<T> {
  readonly chunkBytes: number;
  readonly chunkMs: number;
  readonly #msPerByte: number;
  readonly #ring: Rechunker;
  readonly #pace: PaceClock;
  readonly #out: PlayoutOut<T>;
  readonly #silence: number;
  readonly #idleFlushMs: number | undefined;
  readonly #heldUpAt: (() => number) | undefined;
  readonly #live: boolean;
  readonly #behind: Behind<T>[] = [];
  readonly #awaited: Awaited[] = [];
  /** Marks the bridge reported itself whose frame went to the provider: a report of one comes late. */
  readonly #unacked: string[] = [];
  /** A report of the provider's has matched one of the call's marks: its reports count (see header). */
  #providerReports = false;
  /** When the caller has played all that left (-Infinity: nothing has). */
  #playedTo = Number.NEGATIVE_INFINITY;
  /** The stream position at the end of the last chunk that left. */
  #sentEnd = 0;
  /**
   * When the oldest whole chunk became ready: lateness counts from the later of its schedule and this.
   */
  #readyAt = 0;
  /** The provider's flow control: nothing leaves while paused. */
  #paused = false;
  /** Audio was queued since the last clear: the provider may hold some of it. */
  #audioSinceClear = false;
  /** When the bot's audio last came (the idle flush counts from it). */
  #audioAt = 0;
  /** The `#audioAt` whose idle flush came due, and when its one more look is (see #idleFlushAt). */
  #idleDueFor = -1;
  #idleLookAt = 0;

  constructor(out: PlayoutOut<T>, o: PlayoutOptions) {
    this.#out = out;
    this.chunkBytes = o.chunkBytes;
    this.chunkMs = o.chunkMs;
    this.#msPerByte = o.chunkMs / o.chunkBytes;
    this.#ring = new Rechunker(o.chunkBytes, Math.max(1, Math.ceil(o.bufferMs / o.chunkMs)));
    this.#pace = new PaceClock(o.chunkMs, o.leadMs, Math.max(o.chunkMs, o.catchUpMs));
    this.#silence = o.silenceByte;
    this.#idleFlushMs = o.idleFlushMs;
    this.#heldUpAt = o.heldUpAt;
    this.#live = o.live === true;
  }

  /** Audio bytes queued and not yet sent. */
  get queuedBytes(): number {
    return this.#ring.size;
  }

  /** Nothing left to send: no audio, no event behind it. */
  get empty(): boolean {
    return this.#ring.size === 0 && this.#behind.length === 0;
  }

  /** When the caller has played all the audio that left, by the bridge's reckoning (-Infinity: none has). */
  get playedTo(): number {
    return this.#playedTo;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Whether the provider's reports count on this call (see the mark rule). */
  get providerReports(): boolean {
    return this.#providerReports;
  }

  /** Encoded audio, any length, at `now`. Sends what is due; returns when something is next due. */
  push(encoded: Uint8Array, now: number): number {
    const ring = this.#ring;
    const n = encoded.length;
    if (n > 0) {
      this.#audioSinceClear = true;
      this.#audioAt = now;
      if (this.#live) this.#follow(ring.size + n, now);
    }
    if (ring.size === 0 && n === ring.chunkBytes && !this.#paused && this.#pace.isDue(now)) {
      // The usual case with live audio: a whole chunk into an empty queue, its time come. It leaves from
      // here rather than through the ring (counted in and out, so stream positions stay true).
      ring.passThrough(n);
      this.#readyAt = now;
      this.#leave(now, encoded);
      return this.#awaited.length === 0 ? Number.POSITIVE_INFINITY : this.#report(now);
    }
    const had = ring.chunks > 0;
    const shed = ring.push(encoded);
    if (!had) this.#readyAt = now;
    if (shed > 0) this.#out.overflow(Math.ceil(shed / ring.chunkBytes));
    return this.service(now);
  }

  /**
   * A mark behind the audio queued so far: `item` (its frame, if the platform has one) passes once that
   * audio has left; the mark is reported by the rule in the header. Its place is recorded without
   * padding: a bot that marks every word must not get silence between words.
   */
  mark(name: string, item: T | undefined, now: number): number {
    this.#queue(item, name);
    return this.service(now);
  }

  /** An event (a digit) that passes once the audio queued before it has left. */
  behind(item: T, now: number): number {
    this.#queue(item, undefined);
    return this.service(now);
  }

  /** The provider reports a mark played, or (`cleared`) dropped by a clear: see the mark rule. */
  reported(name: string, cleared: boolean): void {
    // The marks the bridge reported itself all come before those still awaited, and the provider reports
    // in order: a name both hold (a bot that names every mark alike) is the older mark's, reported late.
    const late = this.#unacked.indexOf(name);
    if (late >= 0) {
      this.#providerReports = true;
      this.#unacked.splice(late, 1);
      return;
    }
    const awaited = this.#awaited;
    let i = 0;
    while (i < awaited.length && awaited[i]!.name !== name) i++;
    if (i < awaited.length) {
      this.#providerReports = true;
      for (const a of awaited.splice(0, i + 1)) this.#out.played(a.name, cleared);
      return;
    }
    this.#out.played(name, cleared);
  }

  /**
   * Barge-in at `now`: drops the audio queued here, and the caller's playback stops (the writer tells
   * the provider through `cut`). Events waiting behind the dropped audio pass at once, after the cut;
   * every mark not yet reported is reported cleared. Returns the bytes dropped.
   */
  clear(now: number, droppedUpstream: boolean): number {
    const dropped = this.#ring.clear();
    this.#pace.reset();
    const held = this.#audioSinceClear || droppedUpstream;
    this.#audioSinceClear = false;
    if (this.#playedTo > now) this.#playedTo = now;
    this.#out.cut(held);
    for (const a of this.#awaited.splice(0)) this.#reportHere(a.name, a.framed, true);
    for (const b of this.#behind.splice(0)) {
      if (b.item !== undefined) this.#out.passed(b.item);
      if (b.mark !== undefined) this.#reportHere(b.mark, b.item !== undefined, true);
    }
    return dropped;
  }

  /**
   * The provider's flow control: paused, nothing leaves (audio, or the events behind it) and what is
   * queued stays, in order; resumed, sending goes on from where it stopped, on a fresh schedule. Marks
   * whose audio already left are still reported as it plays. Returns whether anything changed.
   */
  pause(paused: boolean, now: number): boolean {
    if (paused === this.#paused) return false;
    this.#paused = paused;
    if (!paused) {
      this.#pace.reset();
      if (this.#ring.chunks > 0) this.#readyAt = now;
    }
    return true;
  }

  /** The end of the bot's audio (its hang-up): a partial chunk is padded so that all of it can leave. */
  flush(now: number): void {
    if (this.#ring.chunks === 0) this.#readyAt = now;
    this.#ring.pad(this.#silence);
  }

  /** Sends what is due at `now`, reports the marks whose time has come; returns when next due. */
  service(now: number): number {
    let next = this.#paused ? Number.POSITIVE_INFINITY : this.#send(now);
    if (this.#awaited.length > 0) {
      const at = this.#report(now);
      if (at < next) next = at;
    }
    return next;
  }

  #queue(item: T | undefined, mark: string | undefined): void {
    const behind = this.#behind;
    if (behind.length >= MAX_WAITING) {
      // A flood: the oldest event is dropped, and a mark of it reported cleared (it will not be played).
      const old = behind.shift()!;
      if (old.mark !== undefined) this.#out.played(old.mark, true);
    }
    behind.push({ at: this.#ring.written, item, mark });
  }

  /** Sends the chunks due at `now`, and a partial one when its time has come; returns when next due. */
  #send(now: number): number {
    const ring = this.#ring;
    // Serviced only when due, a queue that ran dry may find its run long over: end it before reading the
    // schedule (the padding time below depends on it).
    if (ring.chunks === 0) this.#pace.idle(now);
    for (;;) {
      while (ring.chunks > 0 && this.#pace.isDue(now)) this.#leave(now, undefined);
      if (ring.chunks > 0) return this.#pace.nextDueAt();
      if (this.#behind.length > 0) this.#pass();
      if (ring.partialBytes === 0) break;
      const padAt = this.#padAt();
      if (padAt === undefined) break;
      if (now < padAt) return padAt;
      const idle = this.#idleFlushMs;
      if (idle !== undefined) {
        const flushAt = this.#idleFlushAt(now, idle);
        if (now < flushAt) return flushAt;
      }
      ring.pad(this.#silence);
      this.#readyAt = now;
    }
    this.#pace.idle(now);
    return Number.POSITIVE_INFINITY;
  }

  /**
   * The next chunk leaves: the ring's oldest, or `direct`, a whole chunk that bypassed an empty ring
   * (already counted in and out of it).
   */
  #leave(now: number, direct: Uint8Array | undefined): void {
    const ring = this.#ring;
    const lateness = Math.max(0, Math.min(this.#pace.sent(now), now - this.#readyAt));
    const sent = this.#out.chunk(direct ?? ring.peek()!, lateness);
    if (direct === undefined) ring.shed(1);
    if (sent) {
      this.#playedTo = (this.#playedTo > now ? this.#playedTo : now) + this.chunkMs;
      this.#sentEnd = ring.consumed;
    }
    if (this.#behind.length > 0) this.#pass();
  }

  /**
   * A live stream's push at `now` leaves `queued` bytes: the last whole chunk among them was made by now,
   * so the run's first was made that many chunks earlier (see the header).
   */
  #follow(queued: number, now: number): void {
    const pace = this.#pace;
    const whole = Math.floor(queued / this.chunkBytes);
    if (whole > 0 && pace.running) pace.follow(now - (pace.index + whole - 1) * this.chunkMs);
  }

  /** Events whose audio has all left (or been shed): their items pass, their marks await a report. */
  #pass(): void {
    const consumed = this.#ring.consumed;
    const behind = this.#behind;
    while (behind.length > 0 && behind[0]!.at <= consumed) {
      const b = behind.shift()!;
      if (b.item !== undefined) this.#out.passed(b.item);
      if (b.mark !== undefined) this.#await(b.mark, b.at, b.item !== undefined);
    }
  }

  /** A mark at stream position `at` whose audio has left: when the caller will have played up to it. */
  #await(name: string, at: number, framed: boolean): void {
    const awaited = this.#awaited;
    // The end of what has left, less the part of the last chunk behind the mark.
    const behindMark = Math.min(this.chunkBytes, Math.max(0, this.#sentEnd - at));
    let playedAt = this.#playedTo - behindMark * this.#msPerByte;
    const last = awaited.length > 0 ? awaited[awaited.length - 1]!.at : Number.NEGATIVE_INFINITY;
    if (last > playedAt) playedAt = last;
    if (awaited.length >= MAX_WAITING) {
      const old = awaited.shift()!;
      this.#reportHere(old.name, old.framed, false);
    }
    awaited.push({ name, at: playedAt, framed });
  }

  /** Reports the marks whose time has come by the mark rule; returns when the next one's comes. */
  #report(now: number): number {
    const wait = this.#providerReports ? MARK_FALLBACK_MS : MARK_GRACE_MS;
    const awaited = this.#awaited;
    while (awaited.length > 0 && awaited[0]!.at + wait <= now) {
      const a = awaited.shift()!;
      this.#reportHere(a.name, a.framed, false);
    }
    return awaited.length === 0 ? Number.POSITIVE_INFINITY : awaited[0]!.at + wait;
  }

  /** The bridge reports a mark itself; one whose frame went to the provider may yet be reported there. */
  #reportHere(name: string, framed: boolean, cleared: boolean): void {
    if (framed) {
      if (this.#unacked.length >= MAX_WAITING) this.#unacked.shift();
      this.#unacked.push(name);
    }
    this.#out.played(name, cleared);
  }

  /**
   * When a partial chunk, with no whole one before it, leaves padded with silence; undefined: not until
   * more audio comes.
   * - A dialect that declares an idle flush (`idleFlushMs`, one of long chunks): once the bot's audio has
   *   paused that long, events waiting or not. Never sooner, even for a mark: a bot that sends its speech
   *   in pieces shorter than a chunk (and marks each) would otherwise get silence between the pieces.
   * - Otherwise only when events wait on it: the bot's audio has ended (or paused). It leaves once the
   *   far end has played half the lead (or, between runs, half the lead after the last audio came), so
   *   audio a little late still joins it seamlessly.
   */
  #padAt(): number | undefined {
    const idle = this.#idleFlushMs;
    if (idle !== undefined) return this.#audioAt + idle;
    if (this.#behind.length === 0) return undefined;
    const pace = this.#pace;
    const half = pace.leadMs / 2;
    return pace.running ? pace.nextDueAt() + half : this.#readyAt + half;
  }

  /**
   * When an idle flush that has come due pads: once the bot's audio has been missing `idle` ms while the
   * bridge itself ran on time.
   * - It looks once more, on the loop's next turn: a process wakes to its timers before its sockets, so
   *   the bot's next audio may be waiting unread.
   * - The bridge was held up since the bot's last audio (src/held-up.ts): the hold-up delayed that
   *   audio's successor on its way too (through a DSP worker; in the bot, where it shares the machine),
   *   so the pause counts from the hold-up, `idle` more, and at most IDLE_FLUSH_MAX_IDLES idle times
   *   from the audio in all.
   * An event or a resume serviced in between brings neither look forward.
   */
  #idleFlushAt(now: number, idle: number): number {
    if (this.#idleDueFor !== this.#audioAt) {
      this.#idleDueFor = this.#audioAt;
      this.#idleLookAt = now + 1;
    }
    if (now < this.#idleLookAt) return this.#idleLookAt;
    const heldUpAt = this.#heldUpAt?.() ?? Number.NEGATIVE_INFINITY;
    if (heldUpAt <= this.#audioAt) return now;
    return Math.min(heldUpAt + idle, this.#audioAt + IDLE_FLUSH_MAX_IDLES * idle);
  }
}

/**
 * Audio to the provider: re-chunked to exactly `chunk_bytes`, paced at real time, with marks queued
 * behind the audio they follow and `clear` dropping what is queued. Served by the shared pacing loop.
 *
 * It is the sink of the call's bot -> caller leg, the last step of that line: the leg's audio is queued,
 * its markers (the bot's marks, digits and hang-up, src/media/markers.ts) applied in place, and its reset
 * (the bot's clear) clears the queue.
 *
 * Memory is bounded twice: the queue holds at most `bufferMs` of audio (the oldest is shed beyond it),
 * and a socket whose `bufferedAmount` is past the high-water mark gets no more audio: the chunk that
 * was due is shed (it would be stale by the time the socket drains) and the schedule moves on, so a
 * slow provider socket never holds up the loop or the other sessions.
 */
import { performance } from 'node:perf_hooks';
import { PaceClock } from '../audio/pacer.js';
import { Rechunker } from '../audio/rechunker.js';
import type { HeldUp } from '../held-up.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { LegSink } from '../pipeline/types.js';
import type { SessionFormat } from './format.js';
import type { CallerEvent, Markers } from './markers.js';
import type { Paced, PacingLoop } from './pacing-loop.js';
import { DefaultWire } from './providers/default.js';
import type { AudioTextAround, ProviderWire, WireFrame } from './providers/types.js';
import type { SessionTaps } from './taps.js';
import { type FramedMessages, framedMessages, type ProviderSocket, SOCKET_OPEN } from './transport.js';

export interface OutboundOptions {
  readonly format: SessionFormat;
  readonly leadMs: number;
  /** How far behind schedule the queue may fall and still catch up; default one chunk. */
  readonly catchUpMs?: number;
  readonly bufferMs: number;
  readonly highWaterBytes: number;
  readonly metrics: Metrics;
  /** The monotonic clock, ms (tests drive their own). */
  readonly now?: () => number;
  /** The shared pacing loop, told when this queue next has a chunk due. */
  readonly loop?: Pick<PacingLoop, 'wakeBy'>;
  /** What the markers of the bot -> caller leg stand for (put there by the bot's side). */
  readonly marks?: Markers<CallerEvent>;
  /** The provider's framing of audio, marks, clear, digits and hang-up (default: our own protocol's). */
  readonly wire?: OutboundWire;
  /** The bot hung up and its last audio has played out (or `hangupMaxMs` passed): the call is over. */
  readonly onHangup?: (reason: string) => void;
  /** How long a bot's hang-up may wait for its queued audio to play out. */
  readonly hangupMaxMs?: number;
  /**
   * A mark the platform cannot carry (its wire frames none) was played: its audio was sent and the
   * pacing lead has passed, or a clear dropped that audio (then at once).
   */
  readonly onMarkPlayed?: (name: string) => void;
  readonly log?: Logger;
  /** The call's audio taps: each chunk sent is tapped while any is subscribed. */
  readonly taps?: SessionTaps;
  /**
   * When the bridge was last held up (src/held-up.ts): an idle flush does not count the bridge's own
   * stall as the bot's pause. Watched only while the queue lives, and only with an idle flush.
   */
  readonly heldUp?: Pick<HeldUp, 'lastAt' | 'watch'>;
}

/**
 * An idle flush held off by the bridge's own hold-ups still pads this many idle times after the bot's
 * last audio: a bridge held up again and again still plays the end of what the bot said.
 */
const IDLE_FLUSH_MAX_IDLES = 3;

/** What the outbound queue needs of a provider's dialect: its framing of what goes to the provider. */
export type OutboundWire = Pick<
  ProviderWire,
  | 'textAudio'
  | 'audioText'
  | 'audioTextAround'
  | 'audioFrame'
  | 'markFrame'
  | 'clearFrame'
  | 'dtmfFrame'
  | 'hangupFrame'
  | 'idleFlushMs'
>;

/** The monotonic clock: one function for every queue (a closure each would be one more object per chunk). */
const systemNow = (): number => performance.now();

/** Text a dialect puts around its base64 audio, written as Latin-1 bytes: printable ASCII only. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Characters of padded base64 for `bytes` bytes. */
function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/** How long a bot-initiated hang-up may wait for queued audio to play out, by default. */
const HANGUP_PLAYOUT_MAX_MS = 60_000;

/** A mark, or a digit, waiting for the audio before it to be sent. */
interface PendingMark {
  /** The text frame to send: `{"event":"mark",...}` or `{"event":"dtmf",...}`; undefined: see `name`. */
  readonly text: string | undefined;
  /** A mark the platform cannot carry: reported played to `onMarkPlayed` instead of sent. */
  readonly name?: string;
  /** Stream position (bytes written) the mark follows. */
  readonly at: number;
}

/** Marks waiting for their audio; beyond this a bot is not using marks as marks. */
const MAX_MARKS = 1024;

export class OutboundQueue implements Paced, LegSink {
  readonly #ws: ProviderSocket;
  readonly #format: SessionFormat;
  readonly #highWater: number;
  readonly #chunks: Rechunker;
  readonly #clock: PaceClock;
  readonly #marks: PendingMark[] = [];
  /** Text audio is encoded from here. */
  readonly #scratch: Buffer;
  /**
   * Audio messages framed in place by the transport (a `ws` socket's), else undefined: see #frame.
   * Binary audio, or text audio whose dialect says what surrounds its base64 (`#around`).
   */
  readonly #framed: FramedMessages | undefined;
  /** The dialect's text around the base64 of each chunk, when text audio is framed in place. */
  readonly #around: AudioTextAround | undefined;
  /**
   * Audio leaves from here, which is replaced when the socket keeps it (see #sendChunk): the whole
   * message with `#framed` (the transport's header, then the payload), else binary audio's payload
   * alone (text audio without `#framed` goes as the dialect's string).
   */
  #frame: Buffer;
  /** Where a binary chunk goes in `#frame` (the whole of it without `#framed`); text: `#scratch`. */
  #payload: Buffer;
  /** Text framed in place: where the base64 starts in `#frame`. */
  #textAt = 0;
  readonly #framesOut;
  readonly #bytesOut;
  readonly #shedFull;
  readonly #shedBackpressure;
  readonly #shedClear;
  readonly #late;
  readonly #lateness;
  readonly #now: () => number;
  readonly #loop: Pick<PacingLoop, 'wakeBy'> | undefined;
  readonly #o: OutboundOptions;
  readonly #wire: OutboundWire;
  /** Audio goes as binary messages (the wire's `textAudio`, fixed once the call's format is known). */
  readonly #binary: boolean;
  readonly #taps: SessionTaps | undefined;
  #onDrained: (() => void) | undefined;
  /** Marks the platform cannot carry, sent and waiting out the pacing lead (see onMarkPlayed). */
  readonly #playedTimers = new Set<NodeJS.Timeout>();
  #hangupTimer: NodeJS.Timeout | undefined;
  /** Audio was queued (and so sent, or still to be) since the last clear: the provider may hold some. */
  #audioSinceClear = false;
  /**
   * When the oldest whole chunk became ready. Lateness counts from the later of its scheduled time and
   * this: a chunk that left the moment its audio arrived was not late, whatever its schedule said (with
   * live audio, an echo say, every chunk arrives after its earliest allowed send time).
   */
  #readyAt = 0;
  /** The provider asked for no more for now (flow control): nothing is sent until it resumes. */
  #paused = false;
  /** When the bot's audio last came (the dialect's idle flush counts from it). */
  #audioAt = 0;
  /** The `#audioAt` whose idle flush came due, and when its one more look is (see #idleFlushAt). */
  #idleDueFor = -1;
  #idleLookAt = 0;
  /** Ends this queue's watch of the bridge's hold-ups (an idle flush's only). */
  readonly #unwatch: (() => void) | undefined;

  constructor(ws: ProviderSocket, o: OutboundOptions) {
    this.#ws = ws;
    this.#format = o.format;
    this.#highWater = o.highWaterBytes;
    this.#now = o.now ?? systemNow;
    this.#loop = o.loop;
    this.#o = o;
    this.#wire = o.wire ?? DefaultWire.of(o.format);
    this.#binary = !this.#wire.textAudio;
    this.#taps = o.taps;
    const maxChunks = Math.max(1, Math.ceil(o.bufferMs / o.format.chunkMs));
    this.#chunks = new Rechunker(o.format.chunkBytes, maxChunks);
    this.#clock = new PaceClock(o.format.chunkMs, o.leadMs, Math.max(o.format.chunkMs, o.catchUpMs ?? 0));
    this.#scratch = Buffer.alloc(o.format.chunkBytes);
    const around = this.#binary ? undefined : this.#wire.audioTextAround?.();
    this.#around =
      around !== undefined && PRINTABLE_ASCII.test(around.head) && PRINTABLE_ASCII.test(around.tail)
        ? around
        : undefined;
    // A dialect that frames its own binary audio (AudioSocket) is sent as it frames it; text audio is
    // framed in place only where the dialect says what surrounds the base64.
    this.#framed = this.#binary
      ? this.#wire.audioFrame === undefined
        ? framedMessages(ws, o.format.chunkBytes, 'binary')
        : undefined
      : this.#around === undefined
        ? undefined
        : framedMessages(
            ws,
            this.#around.head.length + base64Length(o.format.chunkBytes) + this.#around.tail.length,
            'text',
          );
    this.#frame = this.#payload = this.#scratch;
    this.#newFrame();
    // Labelled children once per session, not a label lookup per chunk.
    this.#framesOut = o.metrics.hot.framesOutCaller;
    this.#bytesOut = o.metrics.hot.bytesOutCaller;
    this.#shedFull = o.metrics.shedChunks.labels('buffer_full');
    this.#shedBackpressure = o.metrics.shedChunks.labels('backpressure');
    this.#shedClear = o.metrics.shedChunks.labels('clear');
    this.#late = o.metrics.hot.lateChunks;
    this.#lateness = o.metrics.paceLatenessMs;
    this.#unwatch = this.#wire.idleFlushMs === undefined ? undefined : o.heldUp?.watch();
  }

  /** Audio bytes queued and not yet sent. */
  get queuedBytes(): number {
    return this.#chunks.size;
  }

  /** Nothing left to send: no audio, no marks. */
  get empty(): boolean {
    return this.#chunks.size === 0 && this.#marks.length === 0;
  }

  // LegSink: the bot -> caller leg's output.
  audio(view: Uint8Array): void {
    this.push(view);
  }

  marker(token: number): void {
    const ev = this.#o.marks?.take(token);
    if (ev === undefined) return;
    switch (ev.event) {
      case 'mark':
        this.mark(ev.name);
        return;
      case 'dtmf': {
        const text = this.#wire.dtmfFrame(ev.digit);
        if (text !== undefined) this.#behindAudio(text);
        return;
      }
      case 'session_end':
        this.#hangup(ev.reason);
        return;
    }
  }

  reset(hadAudio: boolean): void {
    this.clear(hadAudio);
  }

  gap(reason: string): void {
    this.#o.log?.warn({ reason, direction: 'bot_to_caller' }, 'DSP state lost and rebuilt; audio goes on');
  }

  /** Sends an `error` event, unless the provider is not reading (a flood of them must not pile up). */
  report(text: WireFrame): void {
    if (this.#ws.bufferedAmount <= this.#highWater) this.#sendText(text);
  }

  /** Stops the hang-up's bound (the call ended some other way). */
  close(): void {
    if (this.#hangupTimer !== undefined) clearTimeout(this.#hangupTimer);
    this.#hangupTimer = undefined;
    this.#onDrained = undefined;
    for (const t of this.#playedTimers) clearTimeout(t);
    this.#playedTimers.clear();
    this.#unwatch?.();
  }

  /** Encoded audio in the session's output format, any length. */
  push(encoded: Uint8Array): void {
    const now = this.#now();
    const chunks = this.#chunks;
    if (encoded.length > 0) {
      this.#audioSinceClear = true;
      this.#audioAt = now;
    }
    if (
      chunks.size === 0 &&
      encoded.length === chunks.chunkBytes &&
      !this.#paused &&
      this.#ws.readyState === SOCKET_OPEN &&
      this.#clock.isDue(now)
    ) {
      // The usual case with live audio: a whole chunk into an empty queue, its time come. It leaves
      // from here, copied once into the frame it is sent from rather than through the queue's ring.
      chunks.passThrough(encoded.length);
      this.#readyAt = now;
      this.#sendChunk(now, encoded);
      // Nothing is left queued and the marks behind it have gone: only a drain waits on more.
      if (this.#onDrained !== undefined) this.#pump(now);
      return;
    }
    const had = chunks.chunks > 0;
    const shed = chunks.push(encoded);
    if (!had) this.#readyAt = now;
    if (shed > 0) this.#shedFull.inc(Math.ceil(shed / this.#format.chunkBytes));
    // Send at once what is already due (the start of a run) rather than wait for the next tick.
    this.#pump(now);
  }

  /**
   * A mark from the bot: delivered once the chunk holding the last byte queued before it has been sent.
   * Its position is recorded without padding: a bot that marks every word must not get silence between
   * words. A partial chunk is padded only at the end of the bot's audio (see service), or by drain.
   */
  mark(name: string): void {
    const text = this.#wire.markFrame(name);
    this.#behindAudio(text, text === undefined ? name : undefined);
  }

  /** A text frame that leaves once the audio queued before it has been sent (a mark, a digit). */
  #behindAudio(text: string | undefined, name?: string): void {
    if (this.#marks.length >= MAX_MARKS) this.#marks.shift();
    this.#marks.push(
      name === undefined ? { text, at: this.#chunks.written } : { text, name, at: this.#chunks.written },
    );
    this.#pump();
  }

  /**
   * Drops queued audio at once and tells the provider `clear`. Marks still waiting are sent right after,
   * so the provider reports them back and the bot learns its marks will not be reached by audio.
   *
   * The rule for `clear`: it goes to the provider whenever audio was sent or queued since the last clear,
   * dropped here or not, because the provider's own playout buffer may still hold what was sent (a
   * barge-in must cut that too); `droppedUpstream` says audio on its way here (in the DSP) was dropped.
   * With no audio since the last clear the provider holds none of ours, and nothing is sent.
   */
  clear(droppedUpstream = false): void {
    const dropped = this.#chunks.clear();
    if (dropped > 0) this.#shedClear.inc(Math.ceil(dropped / this.#format.chunkBytes));
    this.#clock.reset();
    if (this.#audioSinceClear || droppedUpstream) {
      const frames = this.#wire.clearFrame();
      if (typeof frames === 'string') this.#sendText(frames);
      else if (frames !== undefined) for (const f of frames) this.#sendText(f);
    }
    this.#audioSinceClear = false;
    this.#deliverMarks(true);
  }

  /**
   * The provider's flow control: paused, nothing more is sent (audio, or the marks and digits behind
   * it) and what is queued stays, in order (bounded by `bufferMs` as ever); resumed, sending goes on
   * from where it stopped, on a fresh schedule. A clear still goes at once.
   */
  pause(paused: boolean): void {
    if (paused === this.#paused) return;
    this.#paused = paused;
    this.#o.log?.debug({ paused }, 'provider flow control');
    if (paused) return;
    this.#clock.reset();
    if (this.#chunks.chunks > 0) this.#readyAt = this.#now();
    this.#pump();
  }

  /** Lets what is queued leave whole (pads a partial chunk), then calls `done` once all is sent. */
  drain(done: () => void): void {
    if (this.#chunks.chunks === 0) this.#readyAt = this.#now();
    this.#chunks.pad(this.#format.silenceByte);
    this.#onDrained = done;
    this.#pump();
  }

  service(now: number): number {
    const ws = this.#ws;
    const chunks = this.#chunks;
    if (ws.readyState !== SOCKET_OPEN || this.#paused) return Number.POSITIVE_INFINITY;
    // Serviced only when due, a queue that ran dry may find its run long over: end it before reading
    // the schedule (the padding time below depends on it).
    if (chunks.chunks === 0) this.#clock.idle(now);
    for (;;) {
      this.#sendDue(now);
      if (chunks.chunks > 0) return this.#clock.nextDueAt();
      if (this.#marks.length > 0) this.#deliverMarks();
      if (chunks.partialBytes === 0) break;
      const padAt = this.#padAt();
      if (padAt === undefined) break;
      if (now < padAt) return padAt;
      const idle = this.#wire.idleFlushMs;
      if (idle !== undefined) {
        const flushAt = this.#idleFlushAt(now, idle);
        if (now < flushAt) return flushAt;
      }
      chunks.pad(this.#format.silenceByte);
      this.#readyAt = now;
    }
    this.#clock.idle(now);
    if (this.#onDrained !== undefined && this.empty) {
      const done = this.#onDrained;
      this.#onDrained = undefined;
      done();
    }
    return Number.POSITIVE_INFINITY;
  }

  /**
   * When a partial chunk, with no whole one before it, leaves padded with silence; undefined: not until
   * more audio comes.
   * - A dialect that declares an idle flush (`idleFlushMs`, one of long chunks): once the bot's audio has
   *   paused that long, marks waiting or not. Never sooner, even for a mark: a bot that sends its speech
   *   in pieces shorter than a chunk (and marks each) would otherwise get silence between the pieces.
   * - Otherwise only when marks wait on it: the bot's audio has ended (or paused). It leaves once the far
   *   end has played half the lead (or, between runs, half the lead after the last audio came), so audio
   *   a little late still joins it seamlessly.
   */
  #padAt(): number | undefined {
    const idle = this.#wire.idleFlushMs;
    if (idle !== undefined) return this.#audioAt + idle;
    if (this.#marks.length === 0) return undefined;
    const half = this.#clock.leadMs / 2;
    return this.#clock.running ? this.#clock.nextDueAt() + half : this.#readyAt + half;
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
   * A mark, a digit or a resume serviced in between brings neither look forward.
   */
  #idleFlushAt(now: number, idle: number): number {
    if (this.#idleDueFor !== this.#audioAt) {
      this.#idleDueFor = this.#audioAt;
      this.#idleLookAt = now + 1;
    }
    if (now < this.#idleLookAt) return this.#idleLookAt;
    const heldUpAt = this.#o.heldUp?.lastAt ?? Number.NEGATIVE_INFINITY;
    if (heldUpAt <= this.#audioAt) return now;
    return Math.min(heldUpAt + idle, this.#audioAt + IDLE_FLUSH_MAX_IDLES * idle);
  }

  /** Sends the whole chunks that are due at `now`. */
  #sendDue(now: number): void {
    const chunks = this.#chunks;
    while (chunks.chunks > 0 && this.#clock.isDue(now)) this.#sendChunk(now, undefined);
  }

  /**
   * Sends the next chunk: the queue's oldest, or `direct`, a whole chunk that bypasses an empty queue
   * (its bytes already counted in and out of the re-chunker, see push).
   */
  #sendChunk(now: number, direct: Uint8Array | undefined): void {
    const ws = this.#ws;
    const chunks = this.#chunks;
    const lateness = Math.max(0, Math.min(this.#clock.sent(now), now - this.#readyAt));
    this.#lateness.observe(lateness);
    if (lateness > this.#format.chunkMs) this.#late.add();
    if (ws.bufferedAmount > this.#highWater) {
      // The provider is not reading: this chunk would be stale before it left. Shed it.
      if (direct === undefined) chunks.take(this.#scratch);
      this.#shedBackpressure.inc();
    } else {
      const binary = this.#binary;
      const buf = binary ? this.#payload : this.#scratch;
      if (direct === undefined) chunks.take(buf);
      else buf.set(direct);
      if (this.#taps?.active === true) this.#taps.bot(buf);
      const framed = this.#framed;
      if (framed !== undefined || binary) {
        if (framed === undefined) ws.send(this.#wire.audioFrame?.(buf) ?? buf);
        else {
          // Base64 is ASCII: written as Latin-1, each character is its byte.
          if (!binary) this.#frame.write(buf.toString('base64'), this.#textAt, 'latin1');
          framed.send(this.#frame);
        }
        // Written through at once (the usual case), the socket holds no reference to the frame and the
        // next chunk may use it; otherwise it is the socket's until sent, and the next chunk gets its own.
        if (ws.bufferedAmount > 0) this.#newFrame();
      } else ws.send(this.#wire.audioText(buf));
      this.#framesOut.add();
      this.#bytesOut.add(buf.length);
    }
    if (this.#marks.length > 0) this.#deliverMarks();
  }

  /** A buffer of its own for the next chunk's message (the socket keeps the last one until it is sent). */
  #newFrame(): void {
    const framed = this.#framed;
    if (framed === undefined) {
      if (this.#binary) this.#frame = this.#payload = Buffer.allocUnsafeSlow(this.#chunks.chunkBytes);
      return;
    }
    const frame = framed.frame();
    this.#frame = frame;
    if (this.#binary) {
      this.#payload = frame.subarray(framed.headerBytes);
      return;
    }
    const { head, tail } = this.#around!;
    frame.write(head, framed.headerBytes, 'latin1');
    this.#textAt = framed.headerBytes + head.length;
    frame.write(tail, this.#textAt + base64Length(this.#chunks.chunkBytes), 'latin1');
  }

  /** Sends what is due now, and has the loop wake for the next chunk. */
  #pump(now = this.#now()): void {
    const next = this.service(now);
    if (next !== Number.POSITIVE_INFINITY) this.#loop?.wakeBy(this, next);
  }

  /** Sends the marks whose audio has been sent; `cleared`: a clear dropped the audio before them. */
  #deliverMarks(cleared = false): void {
    const consumed = this.#chunks.consumed;
    while (this.#marks.length > 0 && this.#marks[0]!.at <= consumed) {
      const m = this.#marks.shift()!;
      if (m.text !== undefined) this.#sendText(m.text);
      else this.#played(m.name!, cleared ? 0 : this.#clock.leadMs);
    }
  }

  /** A mark the platform cannot carry is played `afterMs` from now (the audio sent ahead plays out). */
  #played(name: string, afterMs: number): void {
    const report = this.#o.onMarkPlayed;
    if (report === undefined) return;
    if (afterMs <= 0) {
      report(name);
      return;
    }
    const t = setTimeout(() => {
      this.#playedTimers.delete(t);
      report(name);
    }, afterMs);
    this.#playedTimers.add(t);
  }

  /** The bot hangs up: what it said plays out first, then the provider is told, then the call ends. */
  #hangup(reason: string): void {
    if (this.#hangupTimer !== undefined) return;
    const done = (): void => {
      if (this.#hangupTimer === undefined) return;
      clearTimeout(this.#hangupTimer);
      this.#hangupTimer = undefined;
      this.#onDrained = undefined;
      const text = this.#wire.hangupFrame(reason);
      if (text !== undefined) this.#sendText(text);
      this.#o.onHangup?.(reason);
    };
    this.#hangupTimer = setTimeout(done, this.#o.hangupMaxMs ?? HANGUP_PLAYOUT_MAX_MS);
    this.#hangupTimer.unref();
    this.drain(done);
  }

  #sendText(text: WireFrame): void {
    if (this.#ws.readyState === SOCKET_OPEN) this.#ws.send(text);
  }
}

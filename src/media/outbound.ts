/**
 * The outbound writer: the last step of the bot -> caller line, and a thin one. It is the sink of the
 * call's bot -> caller leg: the leg's audio goes into the playout core (src/audio/playout.ts: re-chunk,
 * pace, the caller's playback, mark positions), its markers (the bot's marks, digits and hang-up,
 * src/media/markers.ts) are applied in place, and its reset (the bot's clear) clears the core. What the
 * core hands back is framed here in the provider's wire and written to the provider socket.
 *
 * Every frame bound for the provider goes through here and its dialect's wire: audio, marks, clear,
 * digits, hang-up, and errors (a bad frame, a bot that failed), each only where the platform defines
 * such a message.
 *
 * Timers: none of its own. The writer is a member of the pacing loop (src/media/pacing-loop.ts), whose
 * clock is the one clock of the call's timers: the core's chunk schedule, its padding and idle flush,
 * the marks it reports by its own reckoning, and the bot's hang-up (its audio played out, bounded by
 * `hangupMaxMs`) are all due times the writer's `service(now)` returns.
 *
 * Backpressure: a socket whose `bufferedAmount` is past the high-water mark gets no more audio: the chunk
 * that was due is shed (it would be stale by the time the socket drains) and the schedule moves on, so a
 * slow provider socket never holds up the loop or the other sessions. The core holds at most `bufferMs`
 * of audio besides.
 *
 * Framing: on a `ws` socket each audio message is written whole into a buffer of its own, header
 * included (`framedMessages`): binary chunks, and text ones whose dialect gives its `audioTextAround`,
 * only the base64 written per chunk. A buffer the socket still holds is never reused.
 */
import { Playout, type PlayoutOut } from '../audio/playout.js';
import type { BridgeError } from '../errors.js';
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
  /** How far behind schedule the audio may fall and still catch up; default one chunk. */
  readonly catchUpMs?: number;
  readonly bufferMs: number;
  readonly highWaterBytes: number;
  readonly metrics: Metrics;
  /** The pacing loop: its clock is the call's, and it is told when the writer next has something due. */
  readonly loop: Pick<PacingLoop, 'wakeBy' | 'now'>;
  /** What the markers of the bot -> caller leg stand for (put there by the bot's side). */
  readonly marks?: Markers<CallerEvent>;
  /** The provider's framing of what goes to it (default: our own protocol's). */
  readonly wire?: OutboundWire;
  /** The bot hung up and its last audio has played out (or `hangupMaxMs` passed): the call is over. */
  readonly onHangup?: (reason: string) => void;
  /** How long a bot's hang-up may wait for its queued audio to play out. */
  readonly hangupMaxMs?: number;
  /**
   * A mark of the bot's is reported: the caller has played the audio before it, or (`cleared`) a clear
   * dropped that audio. Once per mark, by the mark rule of src/audio/playout.ts.
   */
  readonly onMarkPlayed?: (name: string, cleared: boolean) => void;
  readonly log?: Logger;
  /** The call's audio taps: each chunk sent is tapped while any is subscribed. */
  readonly taps?: SessionTaps;
  /**
   * When the bridge was last held up (src/held-up.ts): an idle flush does not count the bridge's own
   * stall as the bot's pause. Watched only while the writer lives, and only with an idle flush.
   */
  readonly heldUp?: Pick<HeldUp, 'lastAt' | 'watch'>;
  /**
   * The bot's audio is a live stream, made at real time as it is sent (an echo of the caller's): paced on
   * its own timeline rather than from its first chunk (src/audio/playout.ts).
   */
  readonly live?: boolean;
}

/** What the writer needs of a provider's dialect: its framing of what goes to the provider. */
export type OutboundWire = Pick<
  ProviderWire,
  | 'textAudio'
  | 'audioText'
  | 'audioTextAround'
  | 'audioFrame'
  | 'markFrame'
  | 'clearFrame'
  | 'dtmfFrame'
  | 'errorFrame'
  | 'hangupFrame'
  | 'idleFlushMs'
>;

/** Text a dialect puts around its base64 audio, written as Latin-1 bytes: printable ASCII only. */
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

/** Characters of padded base64 for `bytes` bytes. */
function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/** How long a bot-initiated hang-up may wait for queued audio to play out, by default. */
const HANGUP_PLAYOUT_MAX_MS = 60_000;

function isMark(e: CallerEvent): boolean {
  return e.event === 'mark';
}

export class OutboundWriter implements Paced, LegSink, PlayoutOut<WireFrame> {
  readonly #ws: ProviderSocket;
  readonly #format: SessionFormat;
  readonly #highWater: number;
  readonly #core: Playout<WireFrame>;
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
   * Audio leaves from here, which is replaced when the socket keeps it (see chunk): the whole message
   * with `#framed` (the transport's header, then the payload), else binary audio's payload alone (text
   * audio without `#framed` goes as the dialect's string).
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
  readonly #loop: Pick<PacingLoop, 'wakeBy' | 'now'>;
  readonly #o: OutboundOptions;
  readonly #wire: OutboundWire;
  /** Audio goes as binary messages (the wire's `textAudio`, fixed once the call's format is known). */
  readonly #binary: boolean;
  readonly #taps: SessionTaps | undefined;
  /** The bot's hang-up while its audio plays out: its reason, and when the wait ends regardless. */
  #hangup: string | undefined;
  #hangupBy = Number.POSITIVE_INFINITY;
  /** Ends this writer's watch of the bridge's hold-ups (an idle flush's only). */
  readonly #unwatch: (() => void) | undefined;

  constructor(ws: ProviderSocket, o: OutboundOptions) {
    this.#ws = ws;
    this.#format = o.format;
    this.#highWater = o.highWaterBytes;
    this.#loop = o.loop;
    this.#o = o;
    this.#wire = o.wire ?? DefaultWire.of(o.format);
    this.#binary = !this.#wire.textAudio;
    this.#taps = o.taps;
    const heldUp = o.heldUp;
    this.#core = new Playout<WireFrame>(this, {
      chunkBytes: o.format.chunkBytes,
      chunkMs: o.format.chunkMs,
      silenceByte: o.format.silenceByte,
      leadMs: o.leadMs,
      catchUpMs: o.catchUpMs ?? 0,
      bufferMs: o.bufferMs,
      idleFlushMs: this.#wire.idleFlushMs,
      ...(heldUp !== undefined && { heldUpAt: () => heldUp.lastAt }),
      live: o.live,
    });
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
    this.#unwatch = this.#wire.idleFlushMs === undefined ? undefined : heldUp?.watch();
  }

  /** Audio bytes queued and not yet sent. */
  get queuedBytes(): number {
    return this.#core.queuedBytes;
  }

  /** Nothing left to send: no audio, no marks. */
  get empty(): boolean {
    return this.#core.empty;
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
        if (text !== undefined) {
          const now = this.#loop.now();
          this.#wake(now, this.#core.behind(text, now));
        }
        return;
      }
      case 'session_end':
        this.#hangUp(ev.reason);
        return;
    }
  }

  reset(hadAudio: boolean): void {
    this.clear(hadAudio);
  }

  gap(reason: string): void {
    this.#o.log?.warn({ reason, direction: 'bot_to_caller' }, 'DSP state lost and rebuilt; audio goes on');
  }

  /**
   * Tells the provider of `err` (a bad frame of its own, a bot that failed) in its dialect's error
   * message, where the platform has one; nothing where it has none. Not while the provider is not
   * reading: a flood of them must not pile up.
   */
  error(err: BridgeError): void {
    if (this.#ws.bufferedAmount > this.#highWater) return;
    const frame = this.#wire.errorFrame(err);
    if (frame !== undefined) this.#sendText(frame);
  }

  /** The provider's report of a mark played, or cleared: see the mark rule in src/audio/playout.ts. */
  reported(name: string, cleared: boolean): void {
    this.#core.reported(name, cleared);
  }

  /** The call is over: the hang-up's wait ends, the hold-up watch is let go. */
  close(): void {
    this.#hangup = undefined;
    this.#hangupBy = Number.POSITIVE_INFINITY;
    this.#unwatch?.();
  }

  /** Encoded audio in the session's output format, any length. */
  push(encoded: Uint8Array): void {
    if (this.#ws.readyState !== SOCKET_OPEN) return;
    const now = this.#loop.now();
    const next = this.#core.push(encoded, now);
    if (this.#hangup === undefined) {
      if (next !== Number.POSITIVE_INFINITY) this.#loop.wakeBy(this, next);
    } else this.#wake(now, next);
  }

  /** A mark from the bot, behind the audio before it: its frame where the platform has marks. */
  mark(name: string): void {
    const now = this.#loop.now();
    this.#wake(now, this.#core.mark(name, this.#wire.markFrame(name), now));
  }

  /**
   * Drops queued audio at once and tells the provider `clear`. Events still waiting behind that audio
   * are sent right after, and every mark not yet reported (waiting here, awaiting its report, or still
   * in the leg that was just reset) is reported cleared at once.
   *
   * The rule for `clear`: it goes to the provider whenever audio was queued since the last clear, dropped
   * here or not, because the provider's own playout buffer may still hold what was sent (a barge-in must
   * cut that too); `droppedUpstream` says audio on its way here (in the DSP) was dropped. With no audio
   * since the last clear the provider holds none of ours, and nothing is sent.
   */
  clear(droppedUpstream = false): void {
    const now = this.#loop.now();
    const dropped = this.#core.clear(now, droppedUpstream);
    if (dropped > 0) this.#shedClear.inc(Math.ceil(dropped / this.#format.chunkBytes));
    // Marks still in the leg (a DSP worker's): the audio before them was dropped with the reset
    // (src/pipeline/types.ts). When they come out of the leg they are no longer held, and are skipped.
    const inFlight = this.#o.marks?.takeWhere(isMark);
    if (inFlight !== undefined) for (const e of inFlight) if (e.event === 'mark') this.played(e.name, true);
    this.#pump(now);
  }

  /** The provider's flow control (see Playout.pause). A clear still goes at once. */
  pause(paused: boolean): void {
    const now = this.#loop.now();
    if (!this.#core.pause(paused, now)) return;
    this.#o.log?.debug({ paused }, 'provider flow control');
    if (!paused) this.#pump(now);
  }

  service(now: number): number {
    if (this.#ws.readyState !== SOCKET_OPEN) return Number.POSITIVE_INFINITY;
    const next = this.#core.service(now);
    return this.#hangup === undefined ? next : this.#hangingUp(now, next);
  }

  // PlayoutOut: what the core hands back.

  chunk(view: Uint8Array, lateness: number): boolean {
    const ws = this.#ws;
    this.#lateness.observe(lateness);
    if (lateness > this.#format.chunkMs) this.#late.add();
    if (ws.bufferedAmount > this.#highWater) {
      // The provider is not reading: this chunk would be stale before it left. Shed it.
      this.#shedBackpressure.inc();
      return false;
    }
    const binary = this.#binary;
    const buf = binary ? this.#payload : this.#scratch;
    buf.set(view);
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
    return true;
  }

  passed(frame: WireFrame): void {
    this.#sendText(frame);
  }

  played(name: string, cleared: boolean): void {
    this.#o.onMarkPlayed?.(name, cleared);
  }

  overflow(chunks: number): void {
    this.#shedFull.inc(chunks);
  }

  cut(held: boolean): void {
    if (!held) return;
    const frames = this.#wire.clearFrame();
    if (typeof frames === 'string') this.#sendText(frames);
    else if (frames !== undefined) for (const f of frames) this.#sendText(f);
  }

  /** A buffer of its own for the next chunk's message (the socket keeps the last one until it is sent). */
  #newFrame(): void {
    const framed = this.#framed;
    if (framed === undefined) {
      if (this.#binary) this.#frame = this.#payload = Buffer.allocUnsafeSlow(this.#format.chunkBytes);
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
    frame.write(tail, this.#textAt + base64Length(this.#format.chunkBytes), 'latin1');
  }

  /** Has the loop wake the writer by `next`, the core's next due time (or the hang-up's, while it waits). */
  #wake(now: number, next: number): void {
    const at = this.#hangup === undefined ? next : this.#hangingUp(now, next);
    if (at !== Number.POSITIVE_INFINITY) this.#loop.wakeBy(this, at);
  }

  /** Services the writer now and has the loop wake it when it next has something due. */
  #pump(now: number): void {
    const next = this.service(now);
    if (next !== Number.POSITIVE_INFINITY) this.#loop.wakeBy(this, next);
  }

  /** The bot hangs up: what it said plays out first, then the provider is told, then the call ends. */
  #hangUp(reason: string): void {
    if (this.#hangup !== undefined) return;
    const now = this.#loop.now();
    this.#hangup = reason;
    this.#hangupBy = now + (this.#o.hangupMaxMs ?? HANGUP_PLAYOUT_MAX_MS);
    this.#core.flush(now);
    this.#pump(now);
  }

  /**
   * While a hang-up waits: done once nothing is left to send and the caller has played it all (by the
   * core's reckoning), or once its bound has passed; else when to look again.
   */
  #hangingUp(now: number, next: number): number {
    const core = this.#core;
    const playedAll = core.empty && now >= core.playedTo;
    if (!playedAll && now < this.#hangupBy) {
      const at = core.empty ? Math.min(core.playedTo, this.#hangupBy) : this.#hangupBy;
      return Math.min(next, at);
    }
    const reason = this.#hangup!;
    this.#hangup = undefined;
    this.#hangupBy = Number.POSITIVE_INFINITY;
    const frame = this.#wire.hangupFrame(reason);
    if (frame !== undefined) this.#sendText(frame);
    this.#o.onHangup?.(reason);
    return next;
  }

  #sendText(text: WireFrame): void {
    if (this.#ws.readyState === SOCKET_OPEN) this.#ws.send(text);
  }
}

/**
 * One live call: the provider socket after a valid `session_start`, its DSP session, its bot leg and its
 * outbound queue. Frames arrive here already split into binary (audio) and text (events); every bad frame
 * gets an `error` event and a metric and is skipped, and the call goes on.
 */
import WebSocket from 'ws';
import { fromBase64 } from '../audio/codec.js';
import type { BridgeContext } from '../context.js';
import { BridgeError, isBridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { AudioPipeline, PipelineSession, PipelineSessionSpec, PipelineSink } from '../pipeline/types.js';
import type { SessionInfo } from '../state/types.js';
import { createBotLeg } from './bot/index.js';
import type { BotHandler, BotLeg, BotNotice } from './bot/types.js';
import { BotOutput, type OrderedEvent } from './bot-output.js';
import type { SessionFormat } from './format.js';
import { OutboundQueue } from './outbound.js';
import type { PacingLoop } from './pacing-loop.js';
import { type BotEvent, errorFrame, parseProviderEvent } from './protocol.js';

export interface SessionDeps {
  readonly ctx: BridgeContext;
  readonly pipeline: AudioPipeline;
  readonly loop: PacingLoop;
  /** The tenant's own bot (its stored `bot_url`); undefined: the bridge's `BOT_URL`. */
  readonly tenantBotUrl?: string | undefined;
  /** The tenant has a stored `bot_url` this instance cannot read: the call gets no bot (not `BOT_URL`). */
  readonly tenantBotUnreadable?: boolean | undefined;
  /** Called once the session is over (socket closed or closing), to forget it. */
  readonly onEnded: (session: MediaSession) => void;
}

/** How long a bot-initiated hang-up may wait for queued audio to play out. */
const HANGUP_PLAYOUT_MAX_MS = 60_000;
/** Digits held behind caller audio in the DSP; a keypad does not outrun this. */
const MAX_HELD_DIGITS = 64;
/** How long the provider's session_end may wait for caller audio still in the DSP. */
const FLUSH_MAX_MS = 2_000;

export class MediaSession implements PipelineSink, BotHandler {
  readonly info: SessionInfo;
  readonly format: SessionFormat;
  readonly log: Logger;
  readonly #ws: WebSocket;
  readonly #deps: SessionDeps;
  /** Caller -> bot DSP (this session is its sink). */
  readonly #dsp: PipelineSession;
  /** Bot -> caller: its own DSP session, with bot events kept in order behind the audio. */
  readonly #botOut: BotOutput;
  readonly #out: OutboundQueue;
  readonly #bot: BotLeg;
  readonly #framesIn;
  readonly #bytesIn;
  readonly #botFramesIn;
  readonly #botBytesIn;
  #ended = false;
  /** Caller chunks given to the DSP, and outputs back: the flush on session_end waits for these to meet. */
  #callerSubmitted = 0;
  #callerDelivered = 0;
  /** Set by the provider's session_end while the flush runs. */
  #endReason: string | undefined;
  /** Caller digits waiting for the caller audio before them to come back from the DSP. */
  #digits: { after: number; digit: string }[] = [];
  /** Bounds a hang-up that waits (for the DSP flush, or for the bot's last words to play out). */
  #endTimer: NodeJS.Timeout | undefined;

  constructor(ws: WebSocket, info: SessionInfo, format: SessionFormat, deps: SessionDeps) {
    const { ctx } = deps;
    this.#ws = ws;
    this.info = info;
    this.format = format;
    this.#deps = deps;
    this.log = ctx.log.child({ session_id: info.session_id, tenant: info.tenant });
    this.#framesIn = ctx.metrics.hot.framesInCaller;
    this.#bytesIn = ctx.metrics.hot.bytesInCaller;
    this.#botFramesIn = ctx.metrics.hot.framesInBot;
    this.#botBytesIn = ctx.metrics.hot.bytesInBot;
    this.#out = new OutboundQueue(ws, {
      format,
      leadMs: ctx.config.paceLeadMs,
      catchUpMs: ctx.config.paceCatchUpMs,
      bufferMs: ctx.config.outboundBufferMs,
      highWaterBytes: ctx.config.socketHighWaterBytes,
      metrics: ctx.metrics,
      loop: deps.loop,
    });
    deps.loop.add(this.#out);
    const spec: PipelineSessionSpec = {
      callerIn: { codec: format.codec, sampleRate: format.inputRate },
      callerOut: { codec: format.codec, sampleRate: format.outputRate },
      botRate: ctx.config.botSampleRate,
    };
    let dsp: PipelineSession | undefined;
    let botOut: BotOutput | undefined;
    try {
      this.#dsp = dsp = deps.pipeline.open(spec, this);
      this.#botOut = botOut = new BotOutput(deps.pipeline, spec, this.#out, this, dsp);
      this.#bot = createBotLeg(info, this, {
        ctx,
        loop: deps.loop,
        log: this.log,
        tenantBotUrl: deps.tenantBotUrl,
        tenantBotUnreadable: deps.tenantBotUnreadable,
      });
    } catch (err) {
      // A session that fails to start leaves nothing behind: no pacing member, no open DSP session.
      deps.loop.delete(this.#out);
      botOut?.close();
      dsp?.close();
      throw err;
    }
    this.log.info({ format }, 'session started');
  }

  /** From the shared heartbeat timer: the bot leg's socket is checked too. */
  heartbeat(): void {
    if (!this.#ended) this.#bot.heartbeat?.();
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** An event for the bot from outside the call (a message's status, a tapped button). */
  notify(event: BotNotice): void {
    if (!this.#ended) this.#bot.notify?.(event);
  }

  /** Audio from the provider (a binary frame). */
  onBinary(data: Buffer): void {
    if (this.#ended) return;
    if (this.format.encoding !== 'binary') {
      this.#reject(
        new BridgeError(
          'invalid_field',
          `this session's encoding is ${this.format.encoding}: audio comes as media events, not binary frames`,
          { field: 'encoding' },
        ),
      );
      return;
    }
    if (this.format.codec === 'slin' && (data.byteLength & 1) !== 0) {
      this.#reject(
        new BridgeError(
          'odd_length',
          `slin audio must be whole 16-bit samples (an even byte count), got ${data.byteLength} bytes`,
        ),
      );
      return;
    }
    this.#callerAudio(data);
  }

  /** An event from the provider (a text frame). */
  onText(text: string): void {
    if (this.#ended) return;
    try {
      const ev = parseProviderEvent(text);
      switch (ev.event) {
        case 'media': {
          const audio = fromBase64(ev.payload);
          if (this.format.codec === 'slin' && (audio.byteLength & 1) !== 0) {
            throw new BridgeError(
              'odd_length',
              `slin audio must be whole 16-bit samples (an even byte count), got ${audio.byteLength} bytes`,
            );
          }
          if (this.format.encoding !== 'base64') {
            throw new BridgeError(
              'invalid_field',
              `this session's encoding is ${this.format.encoding}: audio comes as binary frames; media events are for base64 encoding only`,
              { field: 'encoding' },
            );
          }
          this.#callerAudio(audio);
          return;
        }
        case 'dtmf':
          // Behind the caller audio before it, like the bot's events behind the bot's audio.
          if (this.#callerDelivered >= this.#callerSubmitted && this.#digits.length === 0)
            this.#bot.dtmf(ev.digit);
          else if (this.#digits.length < MAX_HELD_DIGITS)
            this.#digits.push({ after: this.#callerSubmitted, digit: ev.digit });
          return;
        case 'mark':
          this.#bot.mark(ev.name);
          return;
        case 'session_end':
          this.log.info({ reason: ev.reason }, 'provider ended the session');
          this.#endAfterFlush(ev.reason ?? 'provider');
          return;
        case 'session_start':
          throw new BridgeError(
            'duplicate_session_start',
            `session ${this.info.session_id} has already started; session_start is accepted once, as the first frame`,
          );
      }
    } catch (err) {
      if (!isBridgeError(err)) throw err;
      this.#reject(err);
    }
  }

  // PipelineSink
  toBot(pcm: Uint8Array): void {
    if (this.#ended) return;
    this.#callerDelivered++;
    this.#bot.audio(pcm);
    if (this.#digits.length > 0) this.#releaseDigits();
    if (this.#endReason !== undefined && this.#callerDelivered >= this.#callerSubmitted) {
      this.end(1000, 'session ended', this.#endReason);
    }
  }
  toCaller(): void {
    // Bot audio goes through #botOut's own DSP session; this (caller -> bot) one has no caller output.
  }
  onGap(reason: string): void {
    // Chunks in flight in a lost worker will not come back.
    this.#callerDelivered = this.#callerSubmitted;
    this.#releaseDigits();
    this.log.warn({ reason, direction: 'caller_to_bot' }, 'DSP state lost and rebuilt; audio goes on');
  }
  botGap(reason: string): void {
    this.log.warn({ reason, direction: 'bot_to_caller' }, 'DSP state lost and rebuilt; audio goes on');
  }

  // BotHandler
  botAudio(pcm: Uint8Array): void {
    if (this.#ended) return;
    this.#botFramesIn.add();
    this.#botBytesIn.add(pcm.byteLength);
    this.#botOut.audio(pcm);
  }
  botEvent(ev: BotEvent): void {
    if (this.#ended) return;
    switch (ev.event) {
      case 'clear':
        this.#botOut.clear();
        return;
      case 'mark':
      case 'dtmf':
        this.#botOut.ordered(ev);
        return;
      case 'session_end':
        this.log.info({ reason: ev.reason }, 'bot ended the session');
        this.#botOut.ordered({ event: 'session_end', reason: ev.reason ?? 'bot' });
        return;
    }
  }

  /** A bot event whose audio has all reached the outbound queue. */
  applyOrdered(ev: OrderedEvent): void {
    if (this.#ended) return;
    switch (ev.event) {
      case 'mark':
        this.#out.mark(ev.name);
        return;
      case 'dtmf':
        this.#send(JSON.stringify({ event: 'dtmf', digit: ev.digit }));
        return;
      case 'session_end': {
        // The bot hangs up: what it said plays out first, then the provider is told and the socket closes.
        const reason = ev.reason;
        this.#armEndTimer(HANGUP_PLAYOUT_MAX_MS, reason);
        this.#out.drain(() => {
          this.#send(JSON.stringify({ event: 'session_end', reason }));
          this.end(1000, 'session ended', reason);
        });
        return;
      }
    }
  }
  botFailed(err: BridgeError): void {
    if (this.#ended) return;
    this.log.warn({ code: err.code, msg: err.message }, 'bot failure');
    this.#sendReport(errorFrame(err));
  }

  /**
   * Ends the call: the bot is told `session_end`, DSP state freed, the socket closed with `code`.
   * Idempotent; also called when the provider socket closes.
   */
  end(code: number, closeReason: string, botReason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#endTimer !== undefined) clearTimeout(this.#endTimer);
    this.#deps.loop.delete(this.#out);
    this.#bot.end(botReason);
    this.#dsp.close();
    this.#botOut.close();
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) {
      this.#ws.close(code, closeReason);
    }
    this.log.info({ code, reason: botReason }, 'session ended');
    this.#deps.onEnded(this);
  }

  /** Sends the caller's digits whose preceding audio has reached the bot. */
  #releaseDigits(): void {
    while (this.#digits.length > 0 && this.#digits[0]!.after <= this.#callerDelivered) {
      this.#bot.dtmf(this.#digits.shift()!.digit);
    }
  }

  #armEndTimer(ms: number, reason: string): void {
    if (this.#endTimer !== undefined) return;
    this.#endTimer = setTimeout(() => this.end(1000, 'session ended', reason), ms);
    this.#endTimer.unref();
  }

  /** Sends an `error` event to the provider and counts the bad frame; the frame is skipped. */
  #reject(err: BridgeError): void {
    this.#deps.ctx.metrics.badFrames.labels(err.code).inc();
    this.log.debug({ code: err.code }, 'bad frame skipped');
    this.#sendReport(errorFrame(err));
  }

  /**
   * The provider's session_end: caller audio still in the DSP reaches the bot first (each chunk comes
   * back as one output, as bot-output.ts explains), within a bound, then the bot is told and the socket
   * closes with 1000. Frames after session_end are ignored.
   */
  #endAfterFlush(reason: string): void {
    if (this.#endReason !== undefined) return;
    this.#endReason = reason;
    if (this.#callerDelivered >= this.#callerSubmitted) {
      this.end(1000, 'session ended', reason);
      return;
    }
    this.#armEndTimer(FLUSH_MAX_MS, reason);
  }

  #callerAudio(data: Uint8Array): void {
    if (this.#endReason !== undefined) return;
    this.#framesIn.add();
    this.#bytesIn.add(data.byteLength);
    this.#callerSubmitted++;
    this.#dsp.fromCaller(data);
  }

  /**
   * Error reports are dropped (they are counted in metrics and logged) when the provider is not reading:
   * a peer that floods bad frames without reading the answers must not grow the socket buffer unbounded.
   */
  #sendReport(text: string): void {
    if (this.#ws.bufferedAmount <= this.#deps.ctx.config.socketHighWaterBytes) this.#send(text);
  }

  #send(text: string): void {
    if (this.#ws.readyState === WebSocket.OPEN) this.#ws.send(text);
  }
}

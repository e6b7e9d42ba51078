/**
 * One live call: the provider socket after a valid `session_start`, a bot behind it, and two one-way legs
 * between them (src/pipeline/types.ts):
 *
 *   caller -> bot:  provider frames -> this session -> caller leg -> ToBot -> bot leg
 *   bot -> caller:  bot leg -> ToCaller -> bot leg of the pipeline -> OutboundWriter -> provider socket
 *
 * Frames arrive here already split into binary (audio) and text (events); every bad frame gets an `error`
 * event (where the dialect has one) and a metric and is skipped, and the call goes on, up to a budget:
 * past MEDIA_BAD_FRAMES_PER_SEC within one second of the calls' clock the socket is closed with 1008
 * (bad-frames.ts). The caller's digits and the provider's session_end ride the caller leg as markers, so
 * they reach the bot after the audio sent before them. The provider's reports of marks go to the outbound
 * writer, which stands for the caller's playback: it reports each of the bot's marks once, by the mark
 * rule of src/audio/playout.ts.
 *
 * A bot that names its audio formats only once connected (an ElevenLabs agent, BotDialect.formatsFromBot)
 * reports them once through its port, before any audio of its own; until then both legs are settling
 * legs (settling-leg.ts): the caller's audio and digits wait in the caller leg, bounded, and the legs
 * open at the formats the bot named, so the DSP does only what the two ends need. A step at the call's
 * start: no audio takes that way back.
 */
import type { BridgeContext } from '../context.js';
import { BridgeError, isBridgeError } from '../errors.js';
import { displayUrl, type Logger } from '../log.js';
import type { AudioPipeline, Format, Leg, LegSink, LegSpec } from '../pipeline/types.js';
import { sameFormat } from '../pipeline/types.js';
import type { SessionInfo } from '../state/types.js';
import { BadFrameBudget } from './bad-frames.js';
import { type BotChoice, botFormat, botFormatsFromBot, botLive, createBotLeg } from './bot/index.js';
import type { BotFormats, BotLeg, BotNotice } from './bot/types.js';
import { ToBot, ToCaller } from './bot-ports.js';
import type { SessionFormat } from './format.js';
import { type BotBoundEvent, type CallerEvent, Markers } from './markers.js';
import { OutboundWriter } from './outbound.js';
import type { PacingLoop } from './pacing-loop.js';
import type { ProviderWire } from './providers/types.js';
import { SettlingLeg } from './settling-leg.js';
import { SessionTaps } from './taps.js';
import { type ProviderSocket, SOCKET_CONNECTING, SOCKET_OPEN } from './transport.js';

/** A bot as live events show it: never a credential, a query or a file path. */
function botView(choice: BotChoice): { dialect: string; url?: string } {
  if ('unreadable' in choice) return { dialect: 'none' };
  const { dialect, url } = choice.settings;
  if (url.startsWith('builtin:'))
    return { dialect, url: url.startsWith('builtin:wav:') ? 'builtin:wav' : url };
  return { dialect, url: displayUrl(url) };
}

export interface SessionDeps {
  readonly ctx: BridgeContext;
  readonly pipeline: AudioPipeline;
  readonly loop: PacingLoop;
  /** The call's bot: the tenant's own, else the environment's; or a tenant's that cannot be read. */
  readonly bot: BotChoice;
  /** Called once the session is over (socket closed or closing), to forget it. */
  readonly onEnded: (session: MediaSession) => void;
}

export class MediaSession {
  readonly info: SessionInfo;
  readonly format: SessionFormat;
  readonly log: Logger;
  /** The call's audio for listeners, recordings and meters (taps.ts); costs nothing while unsubscribed. */
  readonly taps: SessionTaps;
  /** The call's bot as its live events show it: the dialect, and the URL without credentials or query. */
  readonly botView: { readonly dialect: string; readonly url?: string };
  readonly #ws: ProviderSocket;
  /** The provider's dialect on this connection: parses its frames, frames what goes to it. */
  readonly #wire: ProviderWire;
  readonly #deps: SessionDeps;
  /** Caller -> bot, and what its markers stand for. */
  readonly #callerLeg: Leg;
  readonly #botMarks = new Markers<BotBoundEvent>();
  /** Bot -> caller, ending in the outbound writer. */
  readonly #botLeg: Leg;
  readonly #out: OutboundWriter;
  readonly #bot: BotLeg;
  readonly #framesIn;
  readonly #bytesIn;
  readonly #badFrames: BadFrameBudget;
  #ended = false;
  /** Set by the provider's session_end: frames after it are ignored while the caller leg flushes. */
  #ending = false;

  constructor(
    ws: ProviderSocket,
    info: SessionInfo,
    format: SessionFormat,
    wire: ProviderWire,
    deps: SessionDeps,
  ) {
    const { ctx, pipeline } = deps;
    this.#ws = ws;
    this.#wire = wire;
    this.info = info;
    this.format = format;
    this.#deps = deps;
    this.log = ctx.log.child({ session_id: info.session_id, tenant: info.tenant });
    this.#badFrames = new BadFrameBudget(ctx.config.mediaBadFramesPerSec);
    this.#framesIn = ctx.metrics.hot.framesInCaller;
    this.#bytesIn = ctx.metrics.hot.bytesInCaller;
    this.taps = new SessionTaps(format.codec, format.inputRate, format.outputRate, this.log);
    const callerMarks = new Markers<CallerEvent>();
    this.#out = new OutboundWriter(ws, {
      format,
      leadMs: ctx.config.paceLeadMs,
      catchUpMs: wire.catchUpMs ?? ctx.config.paceCatchUpMs,
      bufferMs: ctx.config.outboundBufferMs,
      highWaterBytes: ctx.config.socketHighWaterBytes,
      metrics: ctx.metrics,
      loop: deps.loop,
      marks: callerMarks,
      wire,
      onHangup: (reason) => this.end(1000, 'session ended', reason),
      onMarkPlayed: (name, cleared) => this.#markReported(name, cleared),
      log: this.log,
      taps: this.taps,
      heldUp: ctx.heldUp,
      live: botLive(deps.bot),
    });
    deps.loop.add(this.#out);
    const bot = botFormat(deps.bot, format, ctx.config);
    // A bot that names its formats once connected: both legs wait for them (#settle).
    const settling = botFormatsFromBot(deps.bot);
    const shed = ctx.metrics.shedChunks.labels('bot_backpressure');
    const open = (spec: LegSpec, sink: LegSink, near?: Leg): Leg =>
      settling
        ? new SettlingLeg(pipeline, spec, sink, { log: this.log, onShed: () => shed.inc() })
        : pipeline.open(spec, sink, { near, log: this.log });
    let botLeg: Leg | undefined;
    let callerLeg: Leg | undefined;
    let botSide: BotLeg | undefined;
    try {
      this.#botLeg = botLeg = open(this.#botSpec(bot.fromBot), this.#out);
      const toCaller = new ToCaller(
        botLeg,
        callerMarks,
        this.#out,
        ctx.metrics,
        this.log,
        (event, fields) => this.#report(event, fields),
        (f) => this.#settle(f),
      );
      // The model's tools, hold audio and idle policy, where the bot has them (src/media/call-tools.ts).
      const tools =
        'settings' in deps.bot
          ? ctx.tools?.({
              info,
              settings: deps.bot.settings,
              own: deps.bot.own,
              format: bot.fromBot,
              carriesDigits: wire.dtmfFrame('0') !== undefined,
              port: toCaller,
              loop: deps.loop,
              log: this.log,
            })
          : undefined;
      const dialect = createBotLeg(info, tools?.port ?? toCaller, bot, {
        ctx,
        loop: deps.loop,
        log: this.log,
        choice: deps.bot,
        tools: tools?.bot,
      });
      this.#bot = botSide = tools?.attach(dialect) ?? dialect;
      this.#callerLeg = callerLeg = open(
        this.#callerSpec(bot.toBot),
        new ToBot(botSide, this.#botMarks, this.log),
        botLeg,
      );
    } catch (err) {
      // A session that fails to start leaves nothing behind: no pacing member, no open leg, no bot.
      deps.loop.delete(this.#out);
      this.#out.close();
      botSide?.end('setup_failed');
      callerLeg?.close();
      botLeg?.close();
      throw err;
    }
    this.botView = botView(deps.bot);
    this.log.info({ format }, 'session started');
    ctx.callEvents.started(this);
  }

  /** The bot -> caller leg from the bot's `format`. */
  #botSpec(bot: Format): LegSpec {
    return { from: bot, to: { codec: this.format.codec, rate: this.format.outputRate } };
  }

  /** The caller -> bot leg to the bot's `format`. */
  #callerSpec(bot: Format): LegSpec {
    return {
      from: { codec: this.format.codec, rate: this.format.inputRate },
      to: bot,
      // After the taps (onFrame): recordings and listen-in keep the caller as the line carried them.
      ...(this.info.denoise === true && { steps: ['denoise'] as const }),
    };
  }

  /**
   * The bot's formats, as it reported them once connected: the settling legs open at them, the caller's
   * audio held meanwhile first. A later report (a redial) is taken only when it names the same formats;
   * a bot whose legs opened at the start takes only its own.
   */
  #settle(f: BotFormats): boolean {
    if (this.#ended) return false;
    const botLeg = this.#botLeg;
    const callerLeg = this.#callerLeg;
    const same = () => sameFormat(botLeg.spec.from, f.fromBot) && sameFormat(callerLeg.spec.to, f.toBot);
    if (!(botLeg instanceof SettlingLeg) || !(callerLeg instanceof SettlingLeg)) return same();
    if (botLeg.settled) return same();
    const held = callerLeg.heldBytes;
    try {
      botLeg.settle(this.#botSpec(f.fromBot));
      callerLeg.settle(this.#callerSpec(f.toBot), botLeg.leg);
    } catch (err) {
      // Formats the pipeline cannot open: the bot is refused them (its dialect gives it up); the call goes on.
      this.log.error(
        { err: (err as Error).message, to_bot: f.toBot, from_bot: f.fromBot },
        'legs cannot open at the bot formats',
      );
      return false;
    }
    this.log.info(
      { to_bot: f.toBot, from_bot: f.fromBot, held_ms: Math.round(held / bytesPerMs(callerLeg.spec.from)) },
      "legs opened at the bot's formats",
    );
    return true;
  }

  /** Whether the caller's audio reaches the bot through the noise suppressor (false once it has failed). */
  get denoised(): boolean {
    return this.#callerLeg.denoising;
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
    if (this.#ended) return;
    this.#bot.notify?.(event);
    // The call's messaging events appear in its live events too.
    const { event: name, ...fields } = event;
    this.#report(name, fields);
  }

  /** A frame from the provider, in its dialect (the wire says what it means). */
  onFrame(data: Buffer, isBinary: boolean): void {
    if (this.#ended || this.#ending) return;
    try {
      const f = this.#wire.frame(data, isBinary);
      switch (f.kind) {
        case 'audio':
          this.#framesIn.add();
          this.#bytesIn.add(f.audio.length);
          if (this.taps.active) this.taps.caller(f.audio);
          this.#callerLeg.push(f.audio);
          return;
        case 'dtmf':
          // Behind the caller audio before it.
          this.#toBot({ event: 'dtmf', digit: f.digit });
          return;
        case 'played':
          this.#out.reported(f.name, false);
          return;
        case 'cleared':
          for (const name of f.names) this.#out.reported(name, true);
          return;
        case 'flow':
          this.#out.pause(f.paused);
          return;
        case 'end':
          this.log.info({ reason: f.reason }, 'provider ended the session');
          this.#endAfterFlush(f.reason ?? 'provider');
          return;
        case 'none':
          return;
      }
    } catch (err) {
      if (!isBridgeError(err)) throw err;
      this.#reject(err);
    }
  }

  /**
   * Ends the call: the bot is told `session_end`, the legs closed, the socket closed with `code`.
   * Idempotent; also called when the provider socket closes.
   */
  end(code: number, closeReason: string, botReason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#deps.loop.delete(this.#out);
    this.#out.close();
    this.#bot.end(botReason);
    this.#callerLeg.close();
    this.#botLeg.close();
    this.taps.end();
    if (this.#ws.readyState === SOCKET_OPEN || this.#ws.readyState === SOCKET_CONNECTING) {
      this.#ws.close(code, closeReason);
    }
    this.log.info({ code, reason: botReason }, 'session ended');
    this.#deps.ctx.callEvents.ended(this, botReason);
    this.#deps.onEnded(this);
  }

  /**
   * Reports a bad frame to the provider (where its dialect can) and counts it; the frame is skipped. Past
   * the budget the call ends instead.
   */
  #reject(err: BridgeError): void {
    this.#deps.ctx.metrics.badFrames.labels(err.code).inc();
    if (!this.#badFrames.spend(this.#deps.ctx.clock.now())) {
      this.#flooded();
      return;
    }
    this.log.debug({ code: err.code }, 'bad frame skipped');
    this.#out.error(err);
    this.#report('error', { source: 'provider', code: err.code, message: err.message });
  }

  /** A mark of the bot's is reported (played, or cleared): the bot hears of it, and the live events. */
  #markReported(name: string, cleared: boolean): void {
    if (this.#ended) return;
    this.#bot.mark(name, cleared);
    this.#report('mark', cleared ? { name, cleared: true } : { name });
  }

  /**
   * More than MEDIA_BAD_FRAMES_PER_SEC bad frames within a second: the provider is told, the call ends
   * and the socket closes with 1008, counted and logged once (frames after it are ignored unparsed).
   */
  #flooded(): void {
    const limit = this.#badFrames.perSecond;
    const err = new BridgeError(
      'bad_frame_flood',
      `more than ${limit} bad frames within one second (MEDIA_BAD_FRAMES_PER_SEC); the socket is closed`,
    );
    this.#deps.ctx.metrics.badFrameFloods.inc();
    this.log.warn({ code: err.code, limit }, 'provider flooded bad frames; closed');
    this.#out.error(err);
    this.end(err.close!, 'too many bad frames', err.code);
    // A peer that goes on sending past the close is cut a second later, not read for ws's 30 s close wait.
    const ws = this.#ws;
    this.#deps.ctx.clock.setTimeout(() => ws.terminate(), 1000).unref();
  }

  /** An event of this call for its tenant's live-event listeners (none: nothing is built). */
  #report(event: string, fields: Record<string, unknown>): void {
    const events = this.#deps.ctx.callEvents;
    const { tenant, session_id } = this.info;
    if (events.listening(tenant)) events.emit(tenant, event, { ...fields, session_id });
  }

  /**
   * The provider's session_end: the caller audio before it reaches the bot first (the end rides the caller
   * leg as a marker), then the bot is told and the socket closes with 1000. Frames after it are ignored.
   */
  #endAfterFlush(reason: string): void {
    if (this.#ending) return;
    this.#ending = true;
    const endCall = () => this.end(1000, 'session ended', reason);
    // A bot that has not named its formats has not started: what the caller said waits for nothing.
    if (this.#callerLeg instanceof SettlingLeg && !this.#callerLeg.settled) endCall();
    else this.#toBot({ event: 'end', endCall });
  }

  #toBot(event: BotBoundEvent): void {
    const token = this.#botMarks.put(event);
    if (token >= 0) this.#callerLeg.marker(token);
    else if (event.event === 'end') event.endCall();
    else this.log.warn({ event: event.event }, 'too many caller events in flight; dropped');
  }
}

function bytesPerMs(f: Format): number {
  return (f.rate / 1000) * (f.codec === 'slin' ? 2 : 1);
}

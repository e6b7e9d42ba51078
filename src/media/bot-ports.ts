/**
 * Where the call's two legs meet its bot.
 *
 *   caller -> bot:  session -> caller leg -> ToBot (the leg's sink) -> bot leg
 *   bot -> caller:  bot leg -> ToCaller -> bot leg of the pipeline -> outbound writer (the leg's sink)
 *
 * Events that must keep their place behind audio ride the legs as markers: ToCaller puts the bot's marks,
 * digits and hang-up in the bot -> caller leg (the outbound writer applies them), and the session puts the
 * caller's digits and the end of the call in the caller -> bot leg (ToBot applies them). The bot's clear
 * is the leg's reset, which clears the outbound writer before it returns. A bot's failure goes to the
 * provider through the writer too, framed by the provider's own wire (nothing where it has no such message).
 */
import type { BridgeError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Leg, LegSink } from '../pipeline/types.js';
import type { BotFormats, BotLeg, CallerPort } from './bot/types.js';
import type { BotBoundEvent, CallerEvent, Markers } from './markers.js';
import type { OutboundWriter } from './outbound.js';

/** Tells the call's live events (src/media/call-events.ts) what happened: an event name and its fields. */
export type CallReport = (event: string, fields: Record<string, unknown>) => void;

/** The bot's way to the caller: its audio and events onto the bot -> caller leg. */
export class ToCaller implements CallerPort {
  readonly #leg: Leg;
  readonly #marks: Markers<CallerEvent>;
  readonly #out: OutboundWriter;
  readonly #log: Logger;
  readonly #frames;
  readonly #bytes;
  readonly #report: CallReport | undefined;
  readonly #settle: ((f: BotFormats) => boolean) | undefined;

  constructor(
    leg: Leg,
    marks: Markers<CallerEvent>,
    out: OutboundWriter,
    metrics: Metrics,
    log: Logger,
    report?: CallReport,
    settle?: (f: BotFormats) => boolean,
  ) {
    this.#report = report;
    this.#settle = settle;
    this.#leg = leg;
    this.#marks = marks;
    this.#out = out;
    this.#log = log;
    this.#frames = metrics.hot.framesInBot;
    this.#bytes = metrics.hot.bytesInBot;
  }

  audio(pcm: Uint8Array): void {
    this.#frames.add();
    this.#bytes.add(pcm.length);
    this.#leg.push(pcm);
  }

  mark(name: string): void {
    this.#ordered({ event: 'mark', name });
  }

  dtmf(digit: string): void {
    this.#ordered({ event: 'dtmf', digit });
  }

  hangup(reason: string): void {
    this.#log.info({ reason }, 'bot ended the session');
    this.#ordered({ event: 'session_end', reason });
  }

  clear(): void {
    this.#leg.reset();
    this.#report?.('clear', {});
  }

  failed(err: BridgeError): void {
    this.#log.warn({ code: err.code, msg: err.message }, 'bot failure');
    this.#report?.('error', { source: 'bot', code: err.code, message: err.message });
    this.#out.error(err);
  }

  /** The session opens the legs at them (session.ts); without a session to ask, none are taken. */
  formats(f: BotFormats): boolean {
    return this.#settle?.(f) ?? false;
  }

  #ordered(event: CallerEvent): void {
    const token = this.#marks.put(event);
    if (token < 0) this.#log.warn({ event: event.event }, 'too many bot events in flight; dropped');
    else this.#leg.marker(token);
  }
}

/** The caller -> bot leg's sink: caller audio, digits and the end of the call, in order, to the bot. */
export class ToBot implements LegSink {
  readonly #bot: BotLeg;
  readonly #marks: Markers<BotBoundEvent>;
  readonly #log: Logger;

  constructor(bot: BotLeg, marks: Markers<BotBoundEvent>, log: Logger) {
    this.#bot = bot;
    this.#marks = marks;
    this.#log = log;
  }

  audio(view: Uint8Array): void {
    this.#bot.audio(view);
  }

  marker(token: number): void {
    const ev = this.#marks.take(token);
    if (ev === undefined) return;
    if (ev.event === 'dtmf') this.#bot.dtmf(ev.digit);
    else ev.endCall();
  }

  reset(): void {
    // The caller's leg is never reset: a caller cannot take back what it said.
  }

  gap(reason: string): void {
    this.#log.warn({ reason, direction: 'caller_to_bot' }, 'DSP state lost and rebuilt; audio goes on');
  }
}

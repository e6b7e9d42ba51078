/**
 * The `twilio` dialect: the bridge plays Twilio Media Streams (bidirectional) toward a bot's WebSocket
 * server, so a bot written for Twilio (Pipecat's TwilioFrameSerializer, the OpenAI Agents SDK's
 * TwilioRealtimeTransportLayer, Vocode's TwilioPhoneConversation) takes calls from any provider.
 *
 *   to the bot:   text `connected`, then `start` (streamSid, callSid, accountSid, tracks, customParameters,
 *                 mediaFormat audio/x-mulaw 8000 1), then `media` (base64 µ-law 8 kHz, track inbound,
 *                 string sequenceNumber / chunk / timestamp), `dtmf`, `mark` echoes, and `stop` at the end
 *   from the bot: `media` (any size, queued and paced), `mark`, `clear`
 *
 * A bot's `mark` is echoed only once the audio before it has been played to the caller: the mark rides
 * the bot leg behind that audio to the outbound writer, which reports it by the bridge's one mark rule
 * (src/audio/playout.ts: the provider's report where it reports marks, the bridge's own reckoning of the
 * caller's playout where it does not). A bot's `clear` drops its audio still queued (in the bridge, the
 * DSP and the provider), and that rule reports every mark still pending at once, as Twilio does; each
 * mark is echoed once. An early echo makes agents truncate the model's reply at the wrong place.
 */
import { createHash } from 'node:crypto';
import { twilio } from '../../dialects/bot/twilio.js';
import { BridgeError } from '../../errors.js';
import type { Format } from '../../pipeline/types.js';
import type { BotDialect } from './dialect.js';
import type { BotCall, CallerPort } from './types.js';
import { WsLink, type WsLinkOptions } from './ws-link.js';

/** µ-law 8 kHz both ways: the one format of Twilio Media Streams. */
export const TWILIO_FORMAT: Format = { codec: 'pcmu', rate: 8000 };

/** Marks the bot placed and the provider has not reported played yet; a bot beyond this is flooding. */
const MAX_PENDING_MARKS = 1024;
/** A media payload's longest base64 text taken from a bot: 60 s of µ-law. */
const MAX_PAYLOAD_CHARS = 640_000;

/** A Twilio-style id: a two-letter prefix and 32 hex digits, derived from `seed` (stable per call). */
export function twilioSid(prefix: string, seed: string): string {
  return prefix + createHash('sha256').update(seed).digest('hex').slice(0, 32);
}

export interface TwilioBotOptions extends WsLinkOptions {
  /** The tenant's own `customParameters`, added beside the bridge's. */
  readonly parameters?: Readonly<Record<string, string>> | undefined;
}

export class TwilioBot extends WsLink {
  readonly #streamSid: string;
  readonly #callSid: string;
  readonly #accountSid: string;
  readonly #parameters: Readonly<Record<string, string>>;
  #sequence = 0;
  #chunk = 0;
  /** Caller audio sent, in samples (8 kHz): the next `timestamp` in ms is this / 8. */
  #samples = 0;
  /** Mark names the bot placed, oldest first, not yet echoed (a bound on a flooding bot). */
  #pending: string[] = [];

  constructor(call: BotCall, port: CallerPort, o: TwilioBotOptions) {
    super(call, port, o);
    this.#streamSid = twilioSid('MZ', `stream:${call.tenant}:${call.session_id}`);
    this.#callSid = twilioSid('CA', `call:${call.tenant}:${call.session_id}`);
    this.#accountSid = twilioSid('AC', `account:${call.tenant}`);
    this.#parameters = o.parameters ?? {};
    this.start();
  }

  audio(ulaw: Uint8Array): void {
    if (ulaw.length === 0) return;
    if (!this.connected) {
      this.hold(ulaw);
      return;
    }
    const timestamp = Math.floor(this.#samples / 8);
    this.#samples += ulaw.length;
    this.#chunk++;
    this.sendAudio(
      `{"event":"media","sequenceNumber":"${this.#next()}","streamSid":"${this.#streamSid}","media":{"track":"inbound","chunk":"${this.#chunk}","timestamp":"${timestamp}","payload":"${Buffer.from(ulaw.buffer, ulaw.byteOffset, ulaw.length).toString('base64')}"}}`,
    );
  }

  dtmf(digit: string): void {
    this.sendText(
      JSON.stringify({
        event: 'dtmf',
        streamSid: this.#streamSid,
        sequenceNumber: this.#next(),
        dtmf: { track: 'inbound_track', digit },
      }),
    );
  }

  /** A mark is reported, played or cleared (Twilio echoes both alike): echoed if still pending. */
  mark(name: string): void {
    const i = this.#pending.indexOf(name);
    if (i < 0) return;
    this.#pending.splice(i, 1);
    this.#echo(name);
  }

  protected opened(): void {
    // A redial starts the stream again: Twilio-style bots expect `connected` and `start` first.
    this.#sequence = 0;
    this.#chunk = 0;
    this.#samples = 0;
    const c = this.call;
    this.sendText(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    const customParameters: Record<string, string> = {
      ...this.#parameters,
      session_id: c.session_id,
      tenant: c.tenant,
    };
    if (c.customer_phone !== undefined) customParameters.customer_phone = c.customer_phone;
    if (c.direction !== undefined) customParameters.direction = c.direction;
    this.sendText(
      JSON.stringify({
        event: 'start',
        sequenceNumber: this.#next(),
        streamSid: this.#streamSid,
        start: {
          streamSid: this.#streamSid,
          accountSid: this.#accountSid,
          callSid: this.#callSid,
          tracks: ['inbound'],
          customParameters,
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        },
      }),
    );
  }

  protected received(data: Buffer, isBinary: boolean): void {
    if (isBinary)
      throw new BridgeError('unknown_event', 'a Twilio Media Streams bot sends JSON text frames, not binary');
    let msg: unknown;
    try {
      msg = JSON.parse(data.toString('utf8'));
    } catch {
      throw new BridgeError('bad_json', 'a frame from the bot is not JSON');
    }
    const m = msg as { event?: unknown; media?: { payload?: unknown }; mark?: { name?: unknown } };
    switch (m.event) {
      case 'media': {
        const payload = m.media?.payload;
        if (typeof payload !== 'string' || payload.length > MAX_PAYLOAD_CHARS)
          throw new BridgeError('invalid_field', `media.payload must be base64 µ-law of at most 60 s`, {
            field: 'media.payload',
          });
        const audio = Buffer.from(payload, 'base64');
        if (audio.length > 0) this.port.audio(audio);
        return;
      }
      case 'mark': {
        const name = m.mark?.name;
        if (typeof name !== 'string')
          throw new BridgeError('invalid_field', 'mark.name must be a string', { field: 'mark.name' });
        if (this.#pending.length >= MAX_PENDING_MARKS) this.#echo(this.#pending.shift()!);
        this.#pending.push(name);
        this.port.mark(name);
        return;
      }
      case 'clear':
        // Every mark still pending is reported cleared within this call, and echoed (see mark).
        this.port.clear();
        return;
      default:
        throw new BridgeError(
          'unknown_event',
          `event ${JSON.stringify(m.event)} is not one a Twilio Media Streams bot sends (media, mark, clear)`,
        );
    }
  }

  protected farewell(): void {
    this.sendText(
      JSON.stringify({
        event: 'stop',
        sequenceNumber: this.#next(),
        streamSid: this.#streamSid,
        stop: { accountSid: this.#accountSid, callSid: this.#callSid },
      }),
    );
  }

  /** A Twilio-style bot that closes its socket normally has hung up (it has no other way to say so). */
  protected override closedAsHangup(code: number): boolean {
    return code === 1000;
  }

  /** Twilio-style bots have no message events: notices are not sent. */
  protected override notice(): undefined {
    return undefined;
  }

  #echo(name: string): void {
    this.sendText(
      JSON.stringify({
        event: 'mark',
        sequenceNumber: this.#next(),
        streamSid: this.#streamSid,
        mark: { name },
      }),
    );
  }

  #next(): string {
    return String(++this.#sequence);
  }
}

/** The `twilio` dialect (src/dialects/bot/twilio.ts): µ-law 8 kHz to a ws bot, with the tenant's parameters. */
export const twilioBot: BotDialect = {
  decl: twilio,
  format: () => TWILIO_FORMAT,
  create: (call, port, { link, settings }) =>
    new TwilioBot(call, port, { ...link, parameters: settings.parameters }),
};

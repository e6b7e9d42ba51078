/**
 * The bot leg as the session sees it, whatever the bot is: a ws bot or a built-in one. Audio both ways
 * is PCM16 LE mono at the bot's rate.
 */
import type { BridgeError } from '../../errors.js';
import type { BotEvent } from '../protocol.js';

/** What the session receives from its bot leg (one object per session, not a closure per frame). */
export interface BotHandler {
  /** Bot audio, PCM16 LE at the bot rate, a whole number of samples; valid during the call only. */
  botAudio(pcm: Uint8Array): void;
  botEvent(event: BotEvent): void;
  /** The bot could not be reached or dropped; the call goes on (the provider gets an `error` event). */
  botFailed(err: BridgeError): void;
}

/** The call as the bot is told of it in `session_start`. */
export interface BotCall {
  readonly session_id: string;
  readonly tenant: string;
  readonly customer_phone: string | undefined;
  readonly direction: 'inbound' | 'outbound' | undefined;
  readonly started_at: string;
}

export interface BotLeg {
  /** Caller audio, PCM16 LE at the bot rate; the leg may keep `pcm`. */
  audio(pcm: Uint8Array): void;
  dtmf(digit: string): void;
  /** The provider reports playback reached a mark the bot sent. */
  mark(name: string): void;
  /** Tells the bot the call ended and lets go of it. Idempotent. */
  end(reason: string): void;
  /** Called by the shared heartbeat timer: a socket bot that missed the last ping is cut (and redialled). */
  heartbeat?(): void;
  /**
   * An event about the call from outside the media path, e.g. a message's status (`message_status`) or
   * a tapped button (`message_button`): a ws bot gets it as a JSON text frame; built-in bots ignore it.
   */
  notify?(event: BotNotice): void;
}

/** What `notify` hands a bot: a JSON object with its `event` name. */
export interface BotNotice {
  readonly event: string;
  readonly [field: string]: unknown;
}

/** `session_start` as a bot receives it: the call, with `media` in the bot's format. */
export function botSessionStart(call: BotCall, botRate: number): string {
  return JSON.stringify({
    event: 'session_start',
    session_id: call.session_id,
    tenant: call.tenant,
    customer_phone: call.customer_phone,
    direction: call.direction,
    started_at: call.started_at,
    media: {
      codec: 'slin',
      sample_rate: botRate,
      output_sample_rate: botRate,
      encoding: 'binary',
      chunk_bytes: (botRate / 50) * 2,
    },
  });
}

/**
 * The bot leg as the session sees it, whatever the bot is: a ws bot or a built-in one. Audio both ways
 * is in the bot's format (today PCM16 LE mono at BOT_SAMPLE_RATE for every bot).
 */
import type { BridgeError } from '../../errors.js';

/**
 * What a bot leg drives: the call's bot -> caller line (src/media/bot-ports.ts), one object per call, not
 * a closure per frame. Audio and events go in in the order the bot sent them and keep that order through
 * the DSP to the provider.
 */
export interface CallerPort {
  /** Bot audio in the bot leg's format, a whole number of samples; not kept after the call. */
  audio(pcm: Uint8Array): void;
  /**
   * A mark: the provider gets it once the audio before it has been sent, and the bot hears of it once,
   * played or cleared (the mark rule of src/audio/playout.ts).
   */
  mark(name: string): void;
  /** A digit for the provider, behind the audio before it. */
  dtmf(digit: string): void;
  /** The bot hangs up: its audio plays out, then the provider is told and the call ends. */
  hangup(reason: string): void;
  /** Barge-in: the bot's audio not yet played is dropped, in the DSP and the outbound writer. */
  clear(): void;
  /**
   * The bot could not be reached or dropped; the call goes on. The provider is told in its dialect's
   * error message where it has one (our own protocol's `error` event), and nothing where it has none.
   */
  failed(err: BridgeError): void;
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
  /** Caller audio in the bot's format; a view valid during the call only (copy what is kept). */
  audio(pcm: Uint8Array): void;
  dtmf(digit: string): void;
  /**
   * A mark the bot sent is reported: the caller has played the audio before it, or (`cleared`) a clear
   * dropped that audio. Once per mark (src/audio/playout.ts).
   */
  mark(name: string, cleared: boolean): void;
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

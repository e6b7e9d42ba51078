/**
 * A provider dialect: how one telephony platform's media stream looks on the wire. One module each under
 * src/media/providers/, behind this interface; the session, the legs and the outbound writer are the same
 * for all of them.
 *
 *   upgrade       authenticate(req)            the platform's own credentials, checked before the upgrade
 *   first frames  wire.start(frame)            the call: its id, caller, direction, format
 *   call frames   wire.frame(frame)            audio, digits, marks played, the end
 *   to the call   wire.audioText / markFrame / clearFrame / ...   the platform's framing of what we send
 */
import type { IncomingMessage } from 'node:http';
import type { BridgeContext } from '../../context.js';
import type { ProviderDialectName as AnyProviderDialectName, PathDialectName } from '../../dialects/index.js';
import type { BridgeError } from '../../errors.js';
import type { MediaStreamConfig } from '../../state/types.js';
import type { SessionFormat } from '../format.js';

/**
 * The dialect names of reads and configuration: the path's last word, `default` for /v1/media (the
 * dialects declared in src/dialects/provider/ with a WebSocket path).
 */
export { PATH_DIALECTS as PROVIDER_DIALECTS } from '../../dialects/index.js';
export type ProviderDialectName = PathDialectName;

/** Who the upgrade is for, once its credentials are checked. */
export interface MediaAuth {
  readonly tenant: string;
  /** Credential expiry, seconds since the epoch (a media token's `exp`); undefined when none applies. */
  readonly exp: number | undefined;
}

/** The call a provider's first frames describe. */
export interface CallStart {
  readonly session_id: string;
  /**
   * The frame that started the call is also the call's first frame (AudioSocket: the first audio says
   * the rate): it is handed to the session once it is live, before the frames held meanwhile.
   */
  readonly replay?: boolean;
  readonly customer_phone: string | undefined;
  readonly direction: 'inbound' | 'outbound' | undefined;
  readonly started_at: string | undefined;
  /** The tenant the frame names (our own dialect only; it must be the credential's). */
  readonly tenant?: string | undefined;
}

/** What one frame of a live call says. */
export type CallFrame =
  | { readonly kind: 'audio'; readonly audio: Uint8Array }
  | { readonly kind: 'dtmf'; readonly digit: string }
  /** The provider's playback reached a mark the bridge sent. */
  | { readonly kind: 'played'; readonly name: string }
  /**
   * Marks the provider dropped on a clear without reporting them (Plivo's `clearedAudio`, Vonage's
   * `websocket:cleared`): no audio will reach them. The clear reported them to the bot already (the
   * mark rule of src/audio/playout.ts), so this only shows that the provider reports.
   */
  | { readonly kind: 'cleared'; readonly names: readonly string[] }
  | { readonly kind: 'end'; readonly reason: string | undefined }
  /**
   * The provider's flow control (Asterisk's `MEDIA_XOFF`/`MEDIA_XON`): while paused the outbound writer
   * sends nothing and keeps what it holds, in order; on resume it goes on, paced, from where it stopped.
   */
  | { readonly kind: 'flow'; readonly paused: boolean }
  /** Nothing for the call (a keep-alive, an event the bridge has no use for). */
  | { readonly kind: 'none' };

/** The fixed text before and after the base64 audio of a dialect's media message (see `audioTextAround`). */
export interface AudioTextAround {
  readonly head: string;
  readonly tail: string;
}

/** One connection's view of its dialect: parsing what comes in, framing what goes out. */
export interface ProviderWire {
  /**
   * A frame before the call has started: the call, or undefined when the dialect expects more first
   * (Twilio's `connected`). A frame that cannot start a call throws `bad_session_start` (closes 4400).
   */
  start(data: Buffer, isBinary: boolean): CallStart | undefined;
  /** The call's format, from what `start` saw and the tenant's stored config. */
  format(stored: MediaStreamConfig | undefined): SessionFormat;
  /**
   * A frame of the live call; a bad one throws a BridgeError (reported where the dialect can, skipped).
   * The result is read before the next call: a dialect may hand back one object, refilled, for audio,
   * and its audio bytes may be a buffer it reuses (what keeps them copies them, as a leg's sink does).
   */
  frame(data: Buffer, isBinary: boolean): CallFrame;
  /**
   * How far behind its schedule outbound audio may fall and still be caught up by a burst, where the
   * platform has no playout buffer to take one (AudioSocket: one chunk); unset, PACE_CATCH_UP_MS.
   */
  readonly catchUpMs?: number;
  /** Audio goes as text frames (`audioText`), not as binary frames. Read once the format is known. */
  readonly textAudio: boolean;
  /**
   * For a dialect whose chunks are long (Exotel's 3,200 bytes at least): once the bot's audio has paused
   * this long, ms, a partial chunk held back is padded to a whole one with silence and sent, so the end
   * of what the bot said is not stuck until it speaks again; and not before, even for a mark behind it.
   * Undefined: a partial waits for more audio, a mark behind it, or the end of the call (a chunk of
   * 20 ms holds nothing back worth sending alone).
   */
  readonly idleFlushMs?: number;
  /** A chunk of audio as a text frame (when `textAudio`). */
  audioText(chunk: Buffer): string;
  /**
   * Where every chunk's `audioText` is `head + base64(chunk) + tail` with both the same for the whole
   * call (ASCII): the two, so the outbound writer can write them into each message's buffer once and only
   * the base64 per chunk. Read once the format is known. Absent, or undefined: each chunk's text comes
   * from `audioText` (a dialect that numbers or transforms its chunks).
   */
  audioTextAround?(): AudioTextAround | undefined;
  /**
   * Binary audio in the dialect's own message framing (AudioSocket's type-length header). Absent: the
   * chunk is the binary message itself.
   */
  audioFrame?(chunk: Buffer): Buffer;
  /**
   * A mark placed behind the audio before it; the provider may report it played. Undefined where the
   * platform has no marks (AudioSocket). Either way the bot hears of it by the mark rule of
   * src/audio/playout.ts (the provider's report where it reports marks, else the bridge's reckoning).
   */
  markFrame(name: string): string | undefined;
  /**
   * Drop the audio the provider holds (barge-in); undefined where it holds none (AudioSocket). Several
   * frames, sent in order, where the dialect needs a follow-up to learn when the drop took effect
   * (Asterisk: `FLUSH_MEDIA`, then a mark of its own).
   */
  clearFrame(): string | readonly string[] | undefined;
  /** A digit to play to the caller, or undefined where the dialect has none. */
  dtmfFrame(digit: string): string | undefined;
  /**
   * A bad frame, or a bot that failed, told to the provider; undefined where the platform has no such
   * message (every frame bound for the provider goes through the wire: a platform only gets its own).
   */
  errorFrame(err: BridgeError): WireFrame | undefined;
  /** The bot hung up, or undefined where the dialect ends a call only by closing the socket. */
  hangupFrame(reason: string): WireFrame | undefined;
}

/** A message to the provider: text, or binary where the dialect's control messages are (AudioSocket). */
export type WireFrame = string | Buffer;

export interface ProviderDialect {
  /** Its declared name (src/dialects/provider/); a TCP dialect's calls come by its own listener. */
  readonly name: AnyProviderDialectName;
  /**
   * The WebSocket subprotocol the platform asks for and must get back (jambonz's `audio.jambonz.org`).
   * An upgrade offering other subprotocols but not this one is refused (400); one offering none is
   * taken without a subprotocol. Unset: whatever the client offers first is answered, as before.
   */
  readonly subprotocol?: string;
  /** Checks the upgrade's credentials for `tenant` (the path's tenant segment); throws 401/403. */
  authenticate(req: IncomingMessage, url: URL, tenant: string, ctx: BridgeContext): Promise<MediaAuth>;
  /** A new connection's wire. */
  connect(ctx: BridgeContext): ProviderWire;
}

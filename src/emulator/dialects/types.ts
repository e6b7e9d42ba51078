/**
 * One interface for every emulated provider: a leg opens the platform's media connection to a bridge,
 * does the platform's handshake, sends the caller's audio in the platform's framing (the caller paces
 * it), plays what comes back at real time by the platform's rules, and records every breach of them.
 */
import type { Codec, Encoding } from '../../audio/format.js';
import {
  PROVIDER_DIALECTS,
  type ProviderDialectDecl,
  type ProviderDialectName,
} from '../../dialects/index.js';

/** The provider dialects, as the registry declares them (src/dialects/provider/). */
export const DIALECTS = PROVIDER_DIALECTS;
export type DialectName = ProviderDialectName;

export function isDialect(value: unknown): value is DialectName {
  return typeof value === 'string' && (DIALECTS as readonly string[]).includes(value);
}

/** Credentials as the platform sends them; each dialect uses the fields its platform has. */
export interface LegAuth {
  /**
   * default: the media JWT (Bearer); twilio: the account's auth token (signs the URL);
   * telnyx: the stream auth token.
   */
  readonly token?: string | undefined;
  /** HTTP Basic (exotel, jambonz; asterisk's websocket_client.conf). */
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** A header of the operator's choosing (vonage, plivo, asterisk). */
  readonly header?: { readonly name: string; readonly value: string } | undefined;
}

export interface LegOptions {
  /** ws:// or wss:// for the WebSocket dialects; tcp://host:port for AudioSocket. */
  readonly url: string;
  /** The platform's call id (Twilio callSid, Asterisk channel id, AudioSocket UUID...). */
  readonly callId: string;
  readonly from: string;
  readonly to: string;
  readonly direction: 'inbound' | 'outbound';
  /** PCM rate of the caller's audio and of playback (dialects with one rate ignore it). */
  readonly rate: number;
  /** Wire codec where the platform offers a choice (telnyx, plivo, asterisk; default's session_start). */
  readonly codec?: Codec | undefined;
  readonly auth?: LegAuth | undefined;
  readonly connectTimeoutMs?: number | undefined;
  /** Keep the heard audio (for SNR); off for load runs. */
  readonly keepHeard?: boolean | undefined;
  /** Called with each 20 ms the caller hears, at its playout time (load runs time markers by it). */
  readonly onHeard?: ((pcm: Int16Array) => void) | undefined;
  /** Called as each of the bridge's audio messages arrives, with its samples (pacing as the caller's side sees it). */
  readonly onArrival?: ((samples: number) => void) | undefined;
  /**
   * `arrival`: the bridge's audio is heard as it arrives, with no playback clock, and a mark is played
   * once the audio before it arrived (a load run of the default dialect: round trips to the socket, no
   * timer a call). `realtime` (the default): played 20 ms at a time, as a platform does.
   */
  readonly playout?: 'realtime' | 'arrival' | undefined;
  /** Parameters the platform passes through (Twilio customParameters, Exotel custom_parameters...). */
  readonly customParameters?: Readonly<Record<string, string>> | undefined;
  /** Dialect-specific settings (see each dialect's file). */
  readonly settings?: Readonly<Record<string, unknown>> | undefined;
}

/** A rule of the platform the bridge broke, and what the platform did about it. */
export interface Breach {
  readonly rule: string;
  readonly detail: string;
  /** What the real platform does: the emulator does the same. */
  readonly effect: 'dropped' | 'gap' | 'closed' | 'ignored';
  readonly atMs: number;
}

/** A playback acknowledgement the provider sent back, in order. */
export interface AckedMark {
  readonly name: string;
  readonly how: 'played' | 'cleared';
  readonly atMs: number;
}

export type TimelineEntry =
  | { readonly kind: 'audio'; readonly atMs: number; samples: number }
  | { readonly kind: 'gap'; readonly atMs: number; readonly samples: number }
  | {
      readonly kind: 'mark';
      readonly atMs: number;
      readonly name: string;
      readonly how: 'played' | 'cleared';
    }
  | { readonly kind: 'clear'; readonly atMs: number; readonly droppedSamples: number };

export interface LegRecord {
  breaches: Breach[];
  marks: AckedMark[];
  clears: number;
  dtmfSent: number;
  errors: { code?: string; message: string }[];
  /** Media messages from the bridge and the gaps between their arrivals, ms. */
  framesReceived: number;
  arrivalGapsMs: number[];
  /** Flow-control signals the provider sent (Asterisk XOFF/XON). */
  flow: { xoff: number; xon: number };
  closeCode?: number;
  closeReason?: string;
}

export interface ProviderLeg {
  readonly dialect: DialectName;
  /** PCM rate of the caller's audio. */
  readonly rate: number;
  /** PCM rate of what the caller hears (the default dialect may differ; the platforms do not). */
  readonly outputRate: number;
  /** Duration of each caller chunk on this platform. */
  readonly chunkMs: number;
  readonly record: LegRecord;
  /** Connects and does the handshake; false when refused or failed (see record.errors). */
  open(): Promise<boolean>;
  /** One chunk of the caller's audio, `chunkMs` long, in the platform's framing. */
  sendAudio(pcm: Int16Array): void;
  sendDtmf(digit: string, durationMs?: number): void;
  /** The platform's hang-up: its stop message, then the close. Resolves when closed. */
  hangup(): Promise<void>;
  /** Resolves when the connection is gone, whoever ended it. */
  readonly closed: Promise<void>;
  isOpen(): boolean;
  /** Bytes the transport has not sent yet (a real-time sender sheds past a bound). */
  backlogBytes(): number;
  /** Everything the caller heard, in playout order (empty unless keepHeard). */
  heard(): Int16Array;
  /** Audio, gaps, marks and clears in the order the caller met them. */
  readonly timeline: readonly TimelineEntry[];
}

/** The `default` dialect's call as its `session_start` announces it. */
export interface DefaultSettings {
  /** As announced in session_start (an alias such as "PCM16" is sent as given). */
  readonly codecName: string;
  readonly outputRate: number;
  readonly encoding: Encoding;
  /** Announced `chunk_bytes`: the bridge's chunks to us; ours carry the same duration. */
  readonly chunkBytes: number;
}

/**
 * A provider dialect's emulator twin: what the emulated platform offers and how its leg is made. Each
 * dialect's module here exports one; index.ts lists them by the registry's names.
 */
export interface ProviderTwin {
  /** The dialect it plays the platform of (src/dialects/provider/). */
  readonly decl: ProviderDialectDecl;
  /** PCM rates the platform's calls may use; the first is its default. */
  readonly rates: readonly number[];
  /** The rate a call runs at whatever was asked (a platform of one rate, or of one for its G.711). */
  fixedRate?(codec: Codec | undefined): number | undefined;
  /** Codecs the platform sends, where it offers a choice; undefined: one codec. */
  readonly codecs?: readonly Codec[];
  /** The codec its calls carry on the wire when none is asked for (what load reports name). */
  readonly wireCodec: Codec;
  /** How much audio the platform sends per frame, ms. */
  readonly chunkMs: number;
  /** The platform names a call by a UUID (the bridge's session id is that UUID). */
  readonly uuidCallIds?: true;
  /** What the CLI's credential flags are to this platform (`--auth-token`, `--user`/`--password`, `--header`). */
  readonly flags?: { readonly authToken?: string; readonly basic?: true; readonly header?: true };
  /** A leg of one call; `defaults` are the `default` dialect's own settings. */
  create(o: LegOptions, defaults?: DefaultSettings): ProviderLeg;
}

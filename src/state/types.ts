/**
 * The shared state of the bridge, behind narrow async interfaces: in memory for one instance, and
 * replaceable by a networked store for several. The media path never waits on these for audio.
 */
import type { Codec, Encoding } from '../audio/format.js';
import type { BotSettings } from '../config/bot-settings.js';
import type { ProviderCredential } from '../dialects/index.js';

/** A live call as the control plane shows it (field names are the contract's). */
export interface SessionInfo {
  readonly session_id: string;
  readonly tenant: string;
  readonly customer_phone: string | undefined;
  readonly direction: 'inbound' | 'outbound' | undefined;
  readonly started_at: string;
  readonly conferenceNumbers: readonly string[];
  /** The provider dialect the call came in by (`default` for /v1/media; absent in entries of older instances). */
  readonly dialect?: string;
  /** The caller's audio goes through the noise suppressor toward the bot (DENOISE, or the tenant's `denoise`). */
  readonly denoise?: true;
}

export interface SessionRegistry {
  /** Registers a live session; resolves false (and changes nothing) when the id is already live. */
  add(session: SessionInfo): Promise<boolean>;
  remove(tenant: string, sessionId: string): Promise<void>;
  get(tenant: string, sessionId: string): Promise<SessionInfo | undefined>;
  list(tenant: string): Promise<SessionInfo[]>;
  setConferenceNumbers(tenant: string, sessionId: string, numbers: readonly string[]): Promise<void>;
  /** Number of live sessions across tenants. */
  count(): number;
}

/**
 * A tenant's registered media stream (the provider's MediaStreamConfig, without the secret, plus our
 * `bot` or `bot_url`), as the tenant wrote it: a field the PUT left out is absent, so that a session_start resolves
 * it from its own `media` object, then the defaults (resolveFormat in media/format.ts), never from a
 * stored guess.
 */
export interface MediaStreamConfig {
  readonly tenant: string;
  readonly media_ws_url: string;
  readonly codec?: Codec;
  readonly input_sample_rate?: 8000 | 16000;
  readonly output_sample_rate?: 8000 | 16000;
  readonly channels: 1;
  readonly encoding?: Encoding;
  readonly chunk_bytes?: number;
  /** The tenant's bot (ours, never sent to the provider); absent: the bridge's `BOT_URL`. May hold credentials. */
  readonly bot_url?: string;
  /**
   * Set by a shared store (never by a PUT) when a `bot_url` is stored but does not unseal here (another
   * STATE_SECRET_KEY, tampering): the tenant's calls then get no bot at all, never the bridge's `BOT_URL`.
   */
  readonly bot_url_unreadable?: true;
  /**
   * The tenant's bot as written with `bot` (ours, never sent to the provider; a PUT gives `bot` or
   * `bot_url`, never both). Its `apiKey` and `url` are secrets: sealed at rest, never logged or returned.
   * resolveBot (config/bot-settings.ts) turns either form into the call's bot.
   */
  readonly bot?: BotSettings;
  /** As `bot_url_unreadable`, for a stored `bot`: the tenant's calls get no bot at all. */
  readonly bot_unreadable?: true;
  /** The tenant's calls are recorded (ours, never sent to the provider); absent: only with RECORD_CALLS. */
  readonly recording?: true;
  /** The tenant's callers are denoised for the bot (ours, never sent to the provider); absent: only with DENOISE. */
  readonly denoise?: true;
}

/**
 * One platform's credentials for a tenant (`provider_auth`): the fields each provider dialect declares
 * (src/dialects/provider/), strings and address lists. Secrets: sealed at rest, never logged or returned.
 */
export type { ProviderCredential };

/** A tenant's stored credentials by dialect; `unreadable` where one is stored but does not unseal here. */
export type ProviderAuth = Readonly<Record<string, ProviderCredential | 'unreadable'>>;

/** A change to them: each dialect named is replaced, or removed with null; the others stay. */
export type ProviderAuthPatch = Readonly<Record<string, ProviderCredential | null>>;

export interface TenantStore {
  getMediaStream(tenant: string): Promise<MediaStreamConfig | undefined>;
  /** The secret media tokens of the tenant are verified with; undefined when none is set. */
  getMediaSecret(tenant: string): Promise<string | undefined>;
  /** The tenant's stored provider credentials by dialect (empty when none). */
  getProviderAuth(tenant: string): Promise<ProviderAuth>;
  /** The key the tenant's webhook tool calls are signed with (`tool_secret`); undefined when none is set. */
  getToolSecret(tenant: string): Promise<string | undefined>;
  /**
   * Stores the config, the secret when given (a secret is kept until replaced), the provider
   * credentials' changes when given (dialects not named keep theirs), and the tool secret when given
   * (kept until replaced, like the media secret).
   */
  putMediaStream(
    config: MediaStreamConfig,
    secret: string | undefined,
    providerAuth?: ProviderAuthPatch,
    toolSecret?: string,
  ): Promise<void>;
}

/** Hands an event to the bot of a session this instance holds; false when it holds no such session. */
export type LocalSessionDelivery = (tenant: string, sessionId: string, event: object) => boolean;

/** Events for a live session's bot, delivered by whichever instance holds the session. */
export interface SessionEventBus {
  /** The media endpoint's delivery to the sessions it holds. */
  attach(local: LocalSessionDelivery): void;
  /**
   * Delivers here when this instance holds the session; else, with a shared store, publishes it for
   * the instance that does ('published'); 'none' when no instance can (memory store, session gone).
   */
  deliver(tenant: string, sessionId: string, event: object): Promise<'local' | 'published' | 'none'>;
}

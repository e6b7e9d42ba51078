/**
 * A bot as the bridge dials it: its dialect, where it is, and the dialect's own settings. The one shape
 * both sources give: a tenant's `bot` (PUT /v1/media-stream, stored with its secret sealed) and the
 * environment's default (`BOT_URL`, `BOT_DIALECT` and their twins). The media path takes it as it is.
 */

/** The bot dialects, one module each under src/media/bot/. */
export const BOT_DIALECTS = ['bridge', 'twilio', 'openai-realtime', 'builtin'] as const;
export type BotDialectName = (typeof BOT_DIALECTS)[number];

export const TURN_DETECTIONS = ['server_vad', 'semantic_vad', 'none'] as const;
export type TurnDetection = (typeof TURN_DETECTIONS)[number];

/**
 * What an `openai-realtime` bot does with a caller's digit: `text` (default) adds a user text item
 * "[DTMF 5]" that the model takes in with the next turn; `respond` adds it and asks for a response at
 * once; `ignore` drops it. The Realtime interface has no DTMF event a client can send.
 */
export const DTMF_MODES = ['text', 'respond', 'ignore'] as const;
export type DtmfMode = (typeof DTMF_MODES)[number];

export interface BotSettings {
  readonly dialect: BotDialectName;
  /** ws://, wss:// or builtin:... */
  readonly url: string;
  /** `twilio`: added to `start.customParameters` beside the bridge's own. */
  readonly parameters?: Readonly<Record<string, string>>;
  /** `openai-realtime`: the bearer key; write-only, sealed at rest, never logged. */
  readonly apiKey?: string;
  readonly model?: string;
  readonly instructions?: string;
  readonly voice?: string;
  /** `openai-realtime`; server_vad when absent. */
  readonly turnDetection?: TurnDetection;
  /** `openai-realtime`; `text` when absent. */
  readonly dtmf?: DtmfMode;
}

/** The dialect a URL gets when none is named: `builtin` for builtin: URLs, else `bridge`. */
export function defaultDialect(url: string): BotDialectName {
  return url.startsWith('builtin:') ? 'builtin' : 'bridge';
}

/** What resolveBot reads of a tenant's stored media stream (src/state/types.ts MediaStreamConfig). */
export interface StoredBot {
  /** The tenant's bot as written with `bot`. */
  readonly bot?: BotSettings;
  /** The short form: a `bridge` or `builtin` bot by URL alone. */
  readonly bot_url?: string;
  /** A stored `bot` this instance cannot unseal. */
  readonly bot_unreadable?: true;
  /** A stored `bot_url` this instance cannot unseal. */
  readonly bot_url_unreadable?: true;
}

/**
 * The bot of a call, at session_start, in the shape of the media path's BotChoice (src/media/bot/index.ts):
 * the tenant's own (`bot`, else the short `bot_url`) when it has one, else the environment's. `own` says the tenant chose it, so the caller checks its URL again
 * against the current BOT_URL_ALLOWED_HOSTS, BOT_WAV_DIR and BOT_SAMPLE_RATE (tenantBotUrlProblem).
 * A stored bot this instance cannot read is `unreadable`: the call gets no bot, never the environment's
 * (the tenant chose another one).
 */
export function resolveBot(
  stored: StoredBot | undefined,
  config: { readonly bot: BotSettings },
): { readonly settings: BotSettings; readonly own: boolean } | { readonly unreadable: true } {
  if (stored?.bot_unreadable === true || stored?.bot_url_unreadable === true) return { unreadable: true };
  if (stored?.bot !== undefined) return { settings: stored.bot, own: true };
  if (stored?.bot_url !== undefined) {
    return { settings: { dialect: defaultDialect(stored.bot_url), url: stored.bot_url }, own: true };
  }
  return { settings: config.bot, own: false };
}

/** What a read shows of an api key: its last 4 characters behind a mask, and none of a short key. */
export function apiKeyHint(key: string): string {
  return key.length >= 16 ? `****${key.slice(-4)}` : '****';
}

/**
 * A bot as the bridge dials it: its dialect, where it is, and the dialect's own settings. The one shape
 * both sources give: a tenant's `bot` (PUT /v1/media-stream, stored with its secret sealed) and the
 * environment's default (`BOT_URL`, `BOT_DIALECT` and their twins). The media path takes it as it is.
 * The dialects and their fields are declared in src/dialects/; this is their shape as checked.
 */
import { BOTS, type BotDialectName, type BotOptions, DEFAULT_BOT_DIALECT } from '../dialects/index.js';
import { displayUrl } from '../log.js';
import { isWsBotUrl, urlKind } from './bot-url.js';

export { BOT_DIALECTS, type BotDialectName } from '../dialects/index.js';

export type BotSettings = {
  readonly dialect: BotDialectName;
  /** ws://, wss:// or builtin:... */
  readonly url: string;
} & BotOptions;

/** The dialect a URL gets when none is named: the default of its kind (builtin: URLs, else ws). */
export function defaultDialect(url: string): BotDialectName {
  return DEFAULT_BOT_DIALECT[urlKind(url)];
}

/**
 * Where a bot is, as logs and the start-up banner name it: a ws URL without credentials or query, a
 * builtin: URL as it is, and for a dialect that takes no URL the first URL it calls (Ultravox's
 * `api_base`). Never a secret.
 */
export function botWhere(bot: BotSettings): string {
  if (bot.url !== '') return isWsBotUrl(bot.url) ? displayUrl(bot.url) : bot.url;
  const values = bot as Readonly<Record<string, unknown>>;
  const dialled = BOTS.dialect(bot.dialect)?.fields.find(
    (f) => f.dials === true && typeof values[f.key] === 'string',
  );
  return dialled === undefined ? '(no URL)' : displayUrl(values[dialled.key] as string);
}

/** What resolveBot reads of a tenant's stored media stream (src/state/types.ts MediaStreamConfig). */
export interface StoredBot {
  /** The tenant's bot as written with `bot`. */
  readonly bot?: BotSettings;
  /** The short form: a bot by URL alone, in the default dialect of its kind. */
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

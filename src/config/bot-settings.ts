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
}

/** The dialect a URL gets when none is named: `builtin` for builtin: URLs, else `bridge`. */
export function defaultDialect(url: string): BotDialectName {
  return url.startsWith('builtin:') ? 'builtin' : 'bridge';
}

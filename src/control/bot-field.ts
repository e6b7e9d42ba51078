/**
 * `bot` in PUT /v1/media-stream: the tenant's bot as an object (CONTRACT §6), beside the short
 * `bot_url`. Checked here, in full, before the route schema sees the body, so every 400 names the field
 * inside the object (`bot.api_key`) and says what it accepts; the route schema then only describes it
 * for the OpenAPI document. The api key is write-only: reads show `api_key_hint`.
 */
import { BOT_ACCEPTS, checkBotFields, REST_BOT_FIELDS } from '../config/bot-fields.js';
import {
  apiKeyHint,
  BOT_DIALECTS,
  type BotSettings,
  DTMF_MODES,
  defaultDialect,
  TURN_DETECTIONS,
} from '../config/bot-settings.js';
import { shownBotUrl, type TenantBotPolicy, tenantBotUrlProblem } from '../config/bot-url.js';
import { BridgeError } from '../errors.js';
import type { MediaStreamConfig } from '../state/types.js';

/** The fields of `bot`, as the tenant writes them, and the BotSettings field each fills. */
const BOT_KEYS = {
  dialect: 'dialect',
  url: 'url',
  parameters: 'parameters',
  api_key: 'apiKey',
  model: 'model',
  instructions: 'instructions',
  voice: 'voice',
  turn_detection: 'turnDetection',
  dtmf: 'dtmf',
} as const;

const BOT_OBJECT_ACCEPTS = `an object with url and optionally ${Object.keys(BOT_KEYS)
  .filter((k) => k !== 'url')
  .join(', ')} (null: the bridge's bot)`;

const str = (description: string) => ({ type: 'string', description }) as const;

/** `bot` in the upsert's schema: for the OpenAPI document (the handler's checks come first). */
export const BOT_UPSERT_SCHEMA = {
  type: 'object',
  nullable: true,
  description: `${BOT_OBJECT_ACCEPTS}; not with bot_url`,
  properties: {
    dialect: { type: 'string', enum: BOT_DIALECTS, description: BOT_ACCEPTS.dialect },
    url: str(BOT_ACCEPTS.url),
    parameters: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: `twilio: ${BOT_ACCEPTS.parameters}; added to start.customParameters`,
    },
    api_key: { ...str(`openai-realtime: ${BOT_ACCEPTS.apiKey}`), writeOnly: true },
    model: str(`openai-realtime: ${BOT_ACCEPTS.model}`),
    instructions: str(`openai-realtime: ${BOT_ACCEPTS.instructions}`),
    voice: str(`openai-realtime: ${BOT_ACCEPTS.voice}`),
    turn_detection: {
      type: 'string',
      enum: TURN_DETECTIONS,
      description: `openai-realtime: ${BOT_ACCEPTS.turnDetection}`,
    },
    dtmf: { type: 'string', enum: DTMF_MODES, description: `openai-realtime: ${BOT_ACCEPTS.dtmf}` },
  },
  required: ['url'],
} as const;

/** `bot` as reads show it. */
export const BOT_READ_SCHEMA = {
  type: 'object',
  nullable: true,
  description:
    "the tenant's bot (written as bot or bot_url), URL credentials and query values masked (****), the api key as api_key_hint; null: the bridge's own bot applies (or, with bot_unreadable, none)",
  properties: {
    dialect: { type: 'string' },
    url: { type: 'string' },
    parameters: { type: 'object', additionalProperties: { type: 'string' } },
    api_key_hint: { type: 'string', description: 'the last 4 characters of the api key at most' },
    model: { type: 'string' },
    instructions: { type: 'string' },
    voice: { type: 'string' },
    turn_detection: { type: 'string' },
    dtmf: { type: 'string' },
  },
} as const;

/**
 * The tenant's `bot` from an upsert, checked in full; undefined when left out or null. Refuses `bot`
 * beside `bot_url`, a field it does not know, a field of another dialect, and a URL the tenant may not use.
 */
export function botFromUpsert(
  body: Record<string, unknown>,
  policy: TenantBotPolicy,
): BotSettings | undefined {
  const raw = body.bot;
  if (raw === undefined || raw === null) return undefined;
  if (body.bot_url !== undefined && body.bot_url !== null) {
    throw new BridgeError(
      'invalid_field',
      'bot and bot_url must not both be given: bot_url is the short form of bot (a bridge or builtin bot by URL)',
      { field: 'bot' },
    );
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    const got = Array.isArray(raw) ? 'an array' : `a ${typeof raw}`;
    throw new BridgeError('invalid_field', `bot must be ${BOT_OBJECT_ACCEPTS}, got ${got}`, { field: 'bot' });
  }
  const given = raw as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    if (!Object.hasOwn(BOT_KEYS, key)) {
      throw new BridgeError(
        'invalid_field',
        `unknown field "bot.${key.slice(0, 64)}"; accepted fields of bot: ${Object.keys(BOT_KEYS).join(', ')}`,
        { field: `bot.${key.slice(0, 64)}` },
      );
    }
    fields[BOT_KEYS[key as keyof typeof BOT_KEYS]] = value;
  }
  const checked = checkBotFields(fields, REST_BOT_FIELDS, (url) => tenantBotUrlProblem(url, policy));
  const first = checked.problems[0];
  if (first !== undefined) throw new BridgeError('invalid_field', first.message, { field: first.field });
  return checked.bot;
}

/** Removes the fields of a checked `bot` that are null (the same as left out), so the schema sees none. */
export function dropNullFields(bot: unknown): void {
  if (typeof bot !== 'object' || bot === null) return;
  const fields = bot as Record<string, unknown>;
  for (const key of Object.keys(fields)) if (fields[key] === null) delete fields[key];
}

/** A bot as its tenant reads it back: the same fields, the URL masked, the api key as a hint. */
export function shownBot(bot: BotSettings) {
  return {
    dialect: bot.dialect,
    url: shownBotUrl(bot.url),
    ...(bot.parameters !== undefined && { parameters: { ...bot.parameters } }),
    ...(bot.apiKey !== undefined && { api_key_hint: apiKeyHint(bot.apiKey) }),
    ...(bot.model !== undefined && { model: bot.model }),
    ...(bot.instructions !== undefined && { instructions: bot.instructions }),
    ...(bot.voice !== undefined && { voice: bot.voice }),
    ...(bot.turnDetection !== undefined && { turn_detection: bot.turnDetection }),
    ...(bot.dtmf !== undefined && { dtmf: bot.dtmf }),
  };
}

/** `bot` and `bot_unreadable` of a read: the tenant's bot in either written form, or null. */
export function botReadFields(config: MediaStreamConfig) {
  if (config.bot_unreadable === true || config.bot_url_unreadable === true) {
    return { bot: null, bot_unreadable: true };
  }
  if (config.bot !== undefined) return { bot: shownBot(config.bot) };
  if (config.bot_url !== undefined) {
    return { bot: shownBot({ dialect: defaultDialect(config.bot_url), url: config.bot_url }) };
  }
  return { bot: null };
}

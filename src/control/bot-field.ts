/**
 * `bot` in PUT /v1/media-stream: the tenant's bot as an object (CONTRACT §6), beside the short
 * `bot_url`. Checked here, in full, before the route schema sees the body, so every 400 names the field
 * inside the object (`bot.api_key`) and says what it accepts; the route schema then only describes it
 * for the OpenAPI document. The api key is write-only: reads show `api_key_hint`.
 */
import { BOT_ACCEPTS, checkBotFields, REST_BOT_FIELDS } from '../config/bot-fields.js';
import { type BotSettings, defaultDialect } from '../config/bot-settings.js';
import {
  shownBotUrl,
  type TenantBotPolicy,
  tenantBotUrlProblem,
  tenantDialledProblem,
  tenantFileProblem,
} from '../config/bot-url.js';
import { secretHint } from '../dialects/fields.js';
import { BOT_DIALECTS, BOTS, type BotFieldDecl } from '../dialects/index.js';
import { BridgeError } from '../errors.js';
import { maskedUrl } from '../log.js';
import type { MediaStreamConfig } from '../state/types.js';

/** The fields of `bot`, as the tenant writes them, and the BotSettings field each fills. */
const BOT_KEYS: Readonly<Record<string, string>> = {
  dialect: 'dialect',
  url: 'url',
  ...Object.fromEntries(BOTS.fields.map((f) => [f.rest, f.key])),
};

const BOT_OBJECT_ACCEPTS = `an object with url (unless its dialect has a default or takes none) and optionally ${Object.keys(
  BOT_KEYS,
)
  .filter((k) => k !== 'url')
  .join(', ')} (null: the bridge's bot)`;

/** A field's description: the dialects that take it, what it accepts, and its note. */
function described(f: BotFieldDecl): string {
  const owners = BOTS.owners.get(f.key) ?? [];
  return `${owners.join(', ')}: ${f.accepts}${f.note === undefined ? '' : `; ${f.note}`}`;
}

/** What a read shows of a secret field: its hint, under `<rest>_hint`. */
const hintName = (f: BotFieldDecl) => `${f.rest}_hint`;

/** `bot` in the upsert's schema: for the OpenAPI document (the handler's checks come first). */
export const BOT_UPSERT_SCHEMA = {
  type: 'object',
  nullable: true,
  description: `${BOT_OBJECT_ACCEPTS}; not with bot_url`,
  properties: {
    dialect: { type: 'string', enum: BOT_DIALECTS, description: BOT_ACCEPTS.dialect },
    url: { type: 'string', description: BOT_ACCEPTS.url },
    ...Object.fromEntries(BOTS.fields.map((f) => [f.rest, { ...f.schema, description: described(f) }])),
  },
} as const;

/** `bot` as reads show it: the same fields, a secret as its hint. */
export const BOT_READ_SCHEMA = {
  type: 'object',
  nullable: true,
  description:
    "the tenant's bot (written as bot or bot_url), URL credentials and query values masked (****), each secret as its hint (api_key as api_key_hint); null: the bridge's own bot applies (or, with bot_unreadable, none)",
  properties: {
    dialect: { type: 'string' },
    url: { type: 'string' },
    ...Object.fromEntries(
      BOTS.fields.map((f) =>
        f.secret === true
          ? [
              hintName(f),
              {
                type: 'string',
                description: `the last 4 characters of the ${f.rest.replaceAll('_', ' ')} at most`,
              },
            ]
          : [f.rest, readSchema(f)],
      ),
    ),
  },
} as const;

/** A field's schema as a read shows it: its type (and an object's value type), not what a write may give. */
function readSchema(f: BotFieldDecl): Record<string, unknown> {
  const { enum: _enum, writeOnly: _writeOnly, ...rest } = f.schema as Record<string, unknown>;
  return rest;
}

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
    const field = BOT_KEYS[key];
    if (field === undefined || !Object.hasOwn(BOT_KEYS, key)) {
      throw new BridgeError(
        'invalid_field',
        `unknown field "bot.${key.slice(0, 64)}"; accepted fields of bot: ${Object.keys(BOT_KEYS).join(', ')}`,
        { field: `bot.${key.slice(0, 64)}` },
      );
    }
    fields[field] = value;
  }
  const checked = checkBotFields(fields, REST_BOT_FIELDS, (url) => tenantBotUrlProblem(url, policy), {
    dialled: (url) => tenantDialledProblem(url, policy),
    readable: (path) => tenantFileProblem(path, policy),
  });
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

/** A bot as its tenant reads it back: the same fields, the URL masked, each secret as its hint. */
export function shownBot(bot: BotSettings): Record<string, unknown> {
  // A dialect that takes no URL is stored with an empty one: a read shows none.
  const shown: Record<string, unknown> =
    bot.url === '' ? { dialect: bot.dialect } : { dialect: bot.dialect, url: shownBotUrl(bot.url) };
  const values = bot as Readonly<Record<string, unknown>>;
  for (const f of BOTS.fields) {
    const value = values[f.key];
    if (value === undefined) continue;
    if (f.secret === true) shown[hintName(f)] = secretHint(String(value));
    else if (f.shown !== undefined) shown[f.rest] = f.shown(value, maskedUrl);
    else shown[f.rest] = typeof value === 'object' && value !== null ? structuredClone(value) : value;
  }
  return shown;
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

/**
 * A 400 for a bot with a webhook tool and no key to sign its calls with (`secret`: the one given in
 * the upsert, else the one stored); undefined when there is none or the key is there.
 */
export function unsignedWebhookTool(
  bot: BotSettings | undefined,
  secret: string | undefined,
): BridgeError | undefined {
  if (secret !== undefined) return undefined;
  const i = bot?.tools?.findIndex((t) => typeof t !== 'string') ?? -1;
  if (i < 0) return undefined;
  return new BridgeError(
    'invalid_field',
    `bot.tools[${i}] is a webhook tool, whose calls are signed with the tenant's tool_secret: give tool_secret (16 to 512 characters) in this upsert, or leave the webhook tools out`,
    { field: 'tool_secret' },
  );
}

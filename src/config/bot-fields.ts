/**
 * The rules of a bot's settings, written once for both of their sources: a tenant's `bot` object
 * (PUT /v1/media-stream, fields named `bot.api_key`, ...) and the environment's default (`BOT_URL`,
 * `BOT_DIALECT` and their twins). Each source names the fields its own way; the rules and the messages
 * are the same. `dialect` and `url` are every dialect's; each other field, its rule, its message and
 * its names are its dialect's declaration (src/dialects/), read here from the registry. Every problem
 * names the field and what it accepts, and never quotes a secret: a secret is described by its length
 * only, a URL as `shownValue` shows it, a parameter by its name.
 */
import { kindOf, shortValue } from '../dialects/fields.js';
import { BOTS, type BotDialectDecl, type BotRegistry, type FieldProblem } from '../dialects/index.js';
import { shownValue } from '../log.js';
import type { BotSettings } from './bot-settings.js';
import { BOT_URL_ACCEPTS, BOT_URL_KIND_ACCEPTS, type BotUrlProblem, urlKind } from './bot-url.js';

export type { BotOptionKey } from '../dialects/index.js';

/** The longest `url`, so a stored bot stays small. */
export const BOT_URL_MAX_CHARS = 2048;

/** What `dialect` and `url` accept, as messages and the OpenAPI document say it (each other field's is its declaration's). */
export const BOT_ACCEPTS = {
  dialect: dialectAccepts(BOTS),
  url: `${BOT_URL_ACCEPTS} (at most ${BOT_URL_MAX_CHARS} characters)`,
} as const;

/** How one source names the fields: `dialect`, `url` and each field's key; an empty name is never given. */
export type BotFieldNames = Readonly<Record<string, string>>;

/** A tenant's `bot` object. */
export const REST_BOT_FIELDS: BotFieldNames = {
  dialect: 'bot.dialect',
  url: 'bot.url',
  ...Object.fromEntries(BOTS.fields.map((f) => [f.key, `bot.${f.rest}`])),
};

/** The environment's twins; a field without one (`parameters`) is named by none. */
export const ENV_BOT_FIELDS: BotFieldNames = {
  dialect: 'BOT_DIALECT',
  url: 'BOT_URL',
  ...Object.fromEntries(BOTS.fields.map((f) => [f.key, f.env?.name ?? ''])),
};

/** A problem: the field as its source names it (`bot.api_key`, `BOT_API_KEY`), and one line starting with it. */
export type BotProblem = FieldProblem;

/** A bot's settings before they are checked, by key: each as given, undefined (or null) when left out. */
export type RawBotFields = Readonly<Record<string, unknown>>;

/**
 * Checks a bot's settings: `url` first (its dialect's default comes from it), then `dialect`, then each
 * other field against its declaration and its dialect. `urlProblem` is the source's own URL rule (the
 * tenant's adds BOT_URL_ALLOWED_HOSTS, BOT_WAV_DIR and the tone band). A dialect named without a `url`
 * gets the one it declares, if any; a field it `requires` left out is a problem. A field declared
 * `dials` (a URL the bridge calls) is also held to `dialled`, the tenant's host rule (none for the
 * environment's bot, as for BOT_URL); a field naming a file the bridge reads asks `readable`, the
 * tenant's BOT_WAV_DIR rule. Every problem is returned, in that order; `bot` only when there are none. `registry` is the bot dialects' (a test may
 * give its own).
 */
export function checkBotFields(
  raw: RawBotFields,
  names: BotFieldNames,
  urlProblem: (url: string) => BotUrlProblem | undefined,
  {
    dialled,
    readable,
    registry = BOTS,
  }: {
    dialled?: (url: string) => BotUrlProblem | undefined;
    readable?: (path: string) => string | undefined;
    registry?: BotRegistry;
  } = {},
): { bot: BotSettings; problems: [] } | { bot: undefined; problems: BotProblem[] } {
  const problems: BotProblem[] = [];
  const fail = (key: string, text: string) =>
    problems.push({ field: names[key]!, message: `${names[key]} ${text}` });

  const rawDialect = given(raw.dialect);
  const named = typeof rawDialect === 'string' ? registry.dialect(rawDialect) : undefined;
  let url = given(raw.url);
  if (url === undefined && named?.url.default !== undefined) url = named.url.default;
  let urlOk = false;
  if (named?.url.kind === 'none') {
    // It learns where to dial from its fields: a URL given would be ignored, so it is refused.
    if (url !== undefined)
      fail(
        'url',
        `does not apply to dialect ${named.name}, which takes no URL; dialect ${named.name} takes ${takes(named, names)}`,
      );
    url = '';
  } else if (typeof url !== 'string' || url === '') {
    fail('url', `must be ${BOT_ACCEPTS.url}, got ${url === undefined ? 'nothing' : kindOf(url)}`);
  } else if (url.length > BOT_URL_MAX_CHARS) {
    fail('url', `must be at most ${BOT_URL_MAX_CHARS} characters, got ${url.length}`);
  } else {
    const p = urlProblem(url);
    if (p !== undefined) fail('url', `must be ${p.accepts}, got ${p.shown}`);
    else urlOk = true;
  }

  let dialect = named;
  if (rawDialect === undefined) {
    if (typeof url === 'string') dialect = registry.dialect(registry.defaults[urlKind(url)]);
  } else if (named === undefined) {
    fail('dialect', `must be ${dialectAccepts(registry)}, got ${shortValue(rawDialect)}`);
  }

  if (urlOk && dialect !== undefined && typeof url === 'string') {
    // urlProblem admits ws://, wss:// and builtin: URLs only.
    if (dialect.url.kind !== 'none' && urlKind(url) !== dialect.url.kind) {
      fail(
        'url',
        `must be ${BOT_URL_KIND_ACCEPTS[dialect.url.kind]} for dialect ${dialect.name}, got ${shownValue(url)}`,
      );
    }
  }

  const out: Record<string, unknown> = {
    dialect: dialect?.name ?? registry.defaults.ws,
    url: typeof url === 'string' ? url : '',
  };
  for (const field of registry.fields) {
    let value = given(raw[field.key]);
    // A default the dialect declares is checked and kept as if given (a URL it dials, against the hosts).
    if (value === undefined && dialect?.defaults !== undefined && Object.hasOwn(dialect.defaults, field.key))
      value = dialect.defaults[field.key];
    if (value === undefined) continue;
    const owners = registry.owners.get(field.key) ?? [];
    if (dialect !== undefined && !owners.includes(dialect.name)) {
      fail(
        field.key,
        `does not apply to dialect ${dialect.name} (only to ${owners.join(', ')}); dialect ${dialect.name} takes ${takes(dialect, names)}`,
      );
      continue;
    }
    const problem = field.check(value, names[field.key]!, {
      ...(dialled !== undefined && { dialled }),
      ...(readable !== undefined && { readable }),
    });
    if (problem !== undefined) {
      problems.push({ field: problem.field, message: problem.message });
      continue;
    }
    const host = field.dials === true && typeof value === 'string' ? dialled?.(value) : undefined;
    if (host !== undefined) {
      fail(field.key, `must be ${host.accepts}, got ${host.shown}`);
      continue;
    }
    out[field.key] = field.value === undefined ? value : field.value(value);
  }
  for (const key of dialect?.requires ?? []) {
    if (out[key] !== undefined || problems.some((p) => p.field === names[key])) continue;
    const accepts = registry.fields.find((f) => f.key === key)?.accepts ?? 'given';
    fail(key, `is required for dialect ${dialect!.name}: ${accepts}`);
  }
  if (problems.length > 0) return { bot: undefined, problems };
  return { bot: Object.freeze(out) as BotSettings, problems: [] };
}

/** What `dialect` accepts in `registry`. */
function dialectAccepts(registry: BotRegistry): string {
  return `one of ${registry.dialects.map((d) => d.name).join(', ')} (default: ${registry.defaults.builtin} for builtin: URLs, else ${registry.defaults.ws})`;
}

/** The fields a dialect takes, as its source names them. */
function takes(dialect: BotDialectDecl, names: BotFieldNames): string {
  const url = dialect.url.kind === 'none' ? [] : ['url'];
  return ['dialect', ...url, ...dialect.fields.map((f) => f.key)]
    .map((k) => names[k] ?? '')
    .filter((n) => n !== '')
    .join(', ');
}

/** Null is the same as left out. */
function given(v: unknown): unknown {
  return v === null ? undefined : v;
}

/**
 * The rules of a bot's settings, written once for both of their sources: a tenant's `bot` object
 * (PUT /v1/media-stream, fields named `bot.api_key`, ...) and the environment's default (`BOT_URL`,
 * `BOT_DIALECT` and their twins). Each source names the fields its own way; the rules and the messages
 * are the same. Every problem names the field and what it accepts, and never quotes a secret: the
 * api key is described by its length only, a URL as `shownValue` shows it, a parameter by its name.
 */
import { shownValue } from '../log.js';
import {
  BOT_DIALECTS,
  type BotDialectName,
  type BotSettings,
  DTMF_MODES,
  type DtmfMode,
  defaultDialect,
  TURN_DETECTIONS,
  type TurnDetection,
} from './bot-settings.js';
import { BOT_URL_ACCEPTS, type BotUrlProblem, isWsBotUrl } from './bot-url.js';

/** The settings other than `dialect` and `url`, as BotSettings names them. */
export type BotOptionKey =
  | 'parameters'
  | 'apiKey'
  | 'model'
  | 'instructions'
  | 'voice'
  | 'turnDetection'
  | 'dtmf';
export type BotFieldKey = 'dialect' | 'url' | BotOptionKey;

/** The dialects each setting belongs to; a setting given for another dialect is refused. */
export const BOT_OPTION_DIALECTS: Readonly<Record<BotOptionKey, readonly BotDialectName[]>> = {
  parameters: ['twilio'],
  apiKey: ['openai-realtime'],
  model: ['openai-realtime'],
  instructions: ['openai-realtime'],
  voice: ['openai-realtime'],
  turnDetection: ['openai-realtime'],
  dtmf: ['openai-realtime'],
};

/** Bounds, so a stored bot stays small: an upsert with each reached (in ASCII) is < 40 KB, within BODY_LIMIT_BYTES's 64 KiB default. */
export const BOT_LIMITS = {
  urlChars: 2048,
  apiKeyChars: 512,
  modelChars: 128,
  voiceChars: 64,
  instructionsChars: 16_384,
  parameters: 32,
  parameterNameChars: 64,
  parameterValueChars: 512,
} as const;

/** `start.customParameters` the bridge fills itself (CONTRACT §6): a tenant's parameter may not take one. */
export const BRIDGE_PARAMETERS = ['session_id', 'tenant', 'customer_phone', 'direction'] as const;

const PARAMETER_NAME = /^[A-Za-z0-9_.-]+$/;

/** What each field accepts, as messages and the OpenAPI document say it. */
export const BOT_ACCEPTS = {
  dialect: `one of ${BOT_DIALECTS.join(', ')} (default: builtin for builtin: URLs, else bridge)`,
  url: `${BOT_URL_ACCEPTS} (at most ${BOT_LIMITS.urlChars} characters)`,
  parameters: `an object of at most ${BOT_LIMITS.parameters} string values, names of 1 to ${BOT_LIMITS.parameterNameChars} letters, digits or "_.-" (not ${BRIDGE_PARAMETERS.join(', ')}), values of at most ${BOT_LIMITS.parameterValueChars} characters`,
  apiKey: `a string of 1 to ${BOT_LIMITS.apiKeyChars} characters without spaces (write-only)`,
  model: `a string of 1 to ${BOT_LIMITS.modelChars} characters`,
  instructions: `a string of at most ${BOT_LIMITS.instructionsChars} characters`,
  voice: `a string of 1 to ${BOT_LIMITS.voiceChars} characters`,
  turnDetection: `one of ${TURN_DETECTIONS.join(', ')} (default server_vad)`,
  dtmf: `one of ${DTMF_MODES.join(', ')} (default text)`,
} as const satisfies Record<BotFieldKey, string>;

/** How one source names the fields. */
export type BotFieldNames = Readonly<Record<BotFieldKey, string>>;

/** A tenant's `bot` object. */
export const REST_BOT_FIELDS: BotFieldNames = {
  dialect: 'bot.dialect',
  url: 'bot.url',
  parameters: 'bot.parameters',
  apiKey: 'bot.api_key',
  model: 'bot.model',
  instructions: 'bot.instructions',
  voice: 'bot.voice',
  turnDetection: 'bot.turn_detection',
  dtmf: 'bot.dtmf',
};

/** The environment's twins; `parameters` has none (empty: never named). */
export const ENV_BOT_FIELDS: BotFieldNames = {
  dialect: 'BOT_DIALECT',
  url: 'BOT_URL',
  parameters: '',
  apiKey: 'BOT_API_KEY',
  model: 'BOT_MODEL',
  instructions: 'BOT_INSTRUCTIONS',
  voice: 'BOT_VOICE',
  turnDetection: 'BOT_TURN_DETECTION',
  dtmf: 'BOT_DTMF',
};

export interface BotProblem {
  /** The field as its source names it (`bot.api_key`, `BOT_API_KEY`). */
  readonly field: string;
  /** One line, starting with the field's name. */
  readonly message: string;
}

/** A bot's settings before they are checked: each as given, undefined (or null) when left out. */
export type RawBotFields = Partial<Record<BotFieldKey, unknown>>;

/**
 * Checks a bot's settings: `url` first (its dialect's default comes from it), then `dialect`, then each
 * other setting against its own rule and its dialect. `urlProblem` is the source's own URL rule (the
 * tenant's adds BOT_URL_ALLOWED_HOSTS, BOT_WAV_DIR and the tone band). Every problem is returned, in
 * that order; `bot` only when there are none.
 */
export function checkBotFields(
  raw: RawBotFields,
  names: BotFieldNames,
  urlProblem: (url: string) => BotUrlProblem | undefined,
): { bot: BotSettings; problems: [] } | { bot: undefined; problems: BotProblem[] } {
  const problems: BotProblem[] = [];
  const fail = (key: BotFieldKey, text: string) =>
    problems.push({ field: names[key], message: `${names[key]} ${text}` });

  const url = given(raw.url);
  let urlOk = false;
  if (typeof url !== 'string' || url === '') {
    fail('url', `must be ${BOT_ACCEPTS.url}, got ${url === undefined ? 'nothing' : kindOf(url)}`);
  } else if (url.length > BOT_LIMITS.urlChars) {
    fail('url', `must be at most ${BOT_LIMITS.urlChars} characters, got ${url.length}`);
  } else {
    const p = urlProblem(url);
    if (p !== undefined) fail('url', `must be ${p.accepts}, got ${p.shown}`);
    else urlOk = true;
  }

  const rawDialect = given(raw.dialect);
  let dialect: BotDialectName | undefined;
  if (rawDialect === undefined) {
    if (typeof url === 'string') dialect = defaultDialect(url);
  } else if (typeof rawDialect === 'string' && (BOT_DIALECTS as readonly string[]).includes(rawDialect)) {
    dialect = rawDialect as BotDialectName;
  } else {
    fail('dialect', `must be ${BOT_ACCEPTS.dialect}, got ${shortValue(rawDialect)}`);
  }

  if (urlOk && dialect !== undefined && typeof url === 'string') {
    const builtin = url.startsWith('builtin:');
    if (dialect === 'builtin' && !builtin) {
      fail(
        'url',
        `must be builtin:echo, builtin:tone[:hz] or builtin:wav:<path> for dialect builtin, got ${shownValue(url)}`,
      );
    } else if (dialect !== 'builtin' && !isWsBotUrl(url)) {
      fail('url', `must be a ws:// or wss:// URL for dialect ${dialect}, got ${shownValue(url)}`);
    }
  }

  const out: { -readonly [K in keyof BotSettings]: BotSettings[K] } = {
    dialect: dialect ?? 'bridge',
    url: typeof url === 'string' ? url : '',
  };
  for (const key of Object.keys(BOT_OPTION_DIALECTS) as BotOptionKey[]) {
    const value = given(raw[key]);
    if (value === undefined) continue;
    const owners = BOT_OPTION_DIALECTS[key];
    if (dialect !== undefined && !owners.includes(dialect)) {
      fail(
        key,
        `does not apply to dialect ${dialect} (only to ${owners.join(', ')}); dialect ${dialect} takes ${takes(dialect, names)}`,
      );
      continue;
    }
    const problem = optionProblem(key, value, names);
    if (problem !== undefined) {
      problems.push({ field: problem.field, message: problem.message });
      continue;
    }
    if (key === 'parameters') out.parameters = Object.freeze({ ...(value as Record<string, string>) });
    else if (key === 'turnDetection') out.turnDetection = value as TurnDetection;
    else if (key === 'dtmf') out.dtmf = value as DtmfMode;
    else out[key] = value as string;
  }
  if (problems.length > 0) return { bot: undefined, problems };
  return { bot: Object.freeze(out), problems: [] };
}

/** The fields a dialect takes, as its source names them. */
function takes(dialect: BotDialectName, names: BotFieldNames): string {
  const own = (Object.keys(BOT_OPTION_DIALECTS) as BotOptionKey[]).filter((k) =>
    BOT_OPTION_DIALECTS[k].includes(dialect),
  );
  return ['dialect', 'url', ...own]
    .map((k) => names[k as BotFieldKey])
    .filter((n) => n !== '')
    .join(', ');
}

/** Why one of the dialect's own settings is not acceptable, or undefined. */
function optionProblem(key: BotOptionKey, value: unknown, names: BotFieldNames): BotProblem | undefined {
  const field = names[key];
  const bad = (got: string): BotProblem => ({
    field,
    message: `${field} must be ${BOT_ACCEPTS[key]}, got ${got}`,
  });
  switch (key) {
    case 'apiKey':
      // A secret: described by its kind and length, never quoted.
      if (typeof value !== 'string') return bad(kindOf(value));
      if (value.length === 0 || value.length > BOT_LIMITS.apiKeyChars || /\s/.test(value))
        return bad(`${value.length} characters${/\s/.test(value) ? ' with spaces' : ''}`);
      return undefined;
    case 'model':
      return stringProblem(value, 1, BOT_LIMITS.modelChars, bad);
    case 'voice':
      return stringProblem(value, 1, BOT_LIMITS.voiceChars, bad);
    case 'instructions':
      return stringProblem(value, 0, BOT_LIMITS.instructionsChars, bad);
    case 'turnDetection':
      return typeof value === 'string' && (TURN_DETECTIONS as readonly string[]).includes(value)
        ? undefined
        : bad(shortValue(value));
    case 'dtmf':
      return typeof value === 'string' && (DTMF_MODES as readonly string[]).includes(value)
        ? undefined
        : bad(shortValue(value));
    case 'parameters':
      return parametersProblem(value, field, bad);
  }
}

function stringProblem(
  value: unknown,
  min: number,
  max: number,
  bad: (got: string) => BotProblem,
): BotProblem | undefined {
  if (typeof value !== 'string') return bad(kindOf(value));
  if (value.length < min || value.length > max) return bad(`${value.length} characters`);
  return undefined;
}

/** Parameter values may be a bot's own tokens: a problem names the parameter, never its value. */
function parametersProblem(
  value: unknown,
  field: string,
  bad: (got: string) => BotProblem,
): BotProblem | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad(kindOf(value));
  const entries = Object.entries(value);
  if (entries.length > BOT_LIMITS.parameters) return bad(`${entries.length} parameters`);
  for (const [name, v] of entries) {
    if (name.length === 0 || name.length > BOT_LIMITS.parameterNameChars || !PARAMETER_NAME.test(name)) {
      return bad(`a parameter named ${shortValue(name)}`);
    }
    if ((BRIDGE_PARAMETERS as readonly string[]).includes(name)) {
      return {
        field: `${field}.${name}`,
        message: `${field}.${name} is set by the bridge itself; ${field} must not name ${BRIDGE_PARAMETERS.join(', ')}`,
      };
    }
    if (typeof v !== 'string' || v.length > BOT_LIMITS.parameterValueChars) {
      const got = typeof v === 'string' ? `${v.length} characters` : kindOf(v);
      return {
        field: `${field}.${name}`,
        message: `${field}.${name} must be a string of at most ${BOT_LIMITS.parameterValueChars} characters, got ${got}`,
      };
    }
  }
  return undefined;
}

/** Null is the same as left out. */
function given(v: unknown): unknown {
  return v === null ? undefined : v;
}

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/** A non-secret value as a message may quote it: short strings quoted, else their kind. */
function shortValue(v: unknown): string {
  if (typeof v === 'string') {
    if (/@|:\/\//.test(v)) return '(not shown)';
    return JSON.stringify(v.length > 32 ? `${v.slice(0, 32)}…` : v);
  }
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return kindOf(v);
}

/**
 * The fields speech-to-speech dialects share (CONTRACT §6, §9): a key, the model, its instructions, its
 * voice, and what a caller's digit becomes; and for the vendors' own APIs, the vendor's `settings` (a
 * JSON object merged into what the bridge sends), the `api_base` the bridge calls before it dials, and
 * the `agent_id` of an agent kept on the vendor's side.
 * A dialect opts in by listing them in its `fields`, all (`SPEECH_FIELDS`) or one by one; each field is
 * checked, documented and redacted the same way for all.
 */
import { enumField, kindOf, mustBe, secretField, shortValue, stringField } from '../fields.js';
import type { BotFieldDecl } from '../types.js';

export const apiKey = secretField({
  key: 'apiKey',
  example: 'sk-example-0123456789abcdef',
  rest: 'api_key',
  max: 512,
  env: {
    name: 'BOT_API_KEY',
    type: 'secret',
    accepts: '1 to 512 characters, no spaces',
    description: "the key sent to the bot's server. Never printed. Refused with another dialect.",
  },
});

export const model = stringField({
  key: 'model',
  example: 'gpt-realtime',
  rest: 'model',
  min: 1,
  max: 128,
  env: {
    name: 'BOT_MODEL',
    type: 'text',
    accepts: '1 to 128 characters',
    description: "the model the bot's server runs. Refused with another dialect.",
  },
});

export const instructions = stringField({
  key: 'instructions',
  example: 'Answer in one sentence.',
  rest: 'instructions',
  min: 0,
  max: 16_384,
  env: {
    name: 'BOT_INSTRUCTIONS',
    type: 'text',
    accepts: 'at most 16384 characters',
    description: 'the instructions the model is given. Refused with another dialect.',
  },
});

export const voice = stringField({
  key: 'voice',
  example: 'alloy',
  rest: 'voice',
  min: 1,
  max: 64,
  env: {
    name: 'BOT_VOICE',
    type: 'text',
    accepts: '1 to 64 characters',
    description: 'the voice the model speaks in. Refused with another dialect.',
  },
});

/**
 * What a speech bot does with a caller's digit: `text` (default) adds a user text "[DTMF 5]" that the
 * model takes in with the next turn; `respond` adds it and asks for a response at once; `ignore` drops it.
 */
export const DTMF_MODES = ['text', 'respond', 'ignore'] as const;
export type DtmfMode = (typeof DTMF_MODES)[number];

export const dtmf = enumField({
  key: 'dtmf',
  example: 'respond',
  rest: 'dtmf',
  values: DTMF_MODES,
  dflt: 'text',
  env: {
    name: 'BOT_DTMF',
    type: 'text',
    accepts: '`text`, `respond`, `ignore`',
    defaultRule: '`text`',
    description:
      "a caller's digit as a user text item `[DTMF 5]` the model takes in with the next turn (`text`), the same and a response at once (`respond`), or dropped (`ignore`).",
  },
});

/** Every field above, for a dialect that takes them all. */
export const SPEECH_FIELDS = [apiKey, model, instructions, voice, dtmf] as const;

/**
 * The largest `settings`, as JSON text, and its deepest nesting: with every other field at its bound, a
 * stored bot stays well under BODY_LIMIT_BYTES (64 KiB by default).
 */
export const SETTINGS_MAX_BYTES = 16_384;
export const SETTINGS_MAX_DEPTH = 16;
const SETTINGS_ACCEPTS = `a JSON object of at most ${SETTINGS_MAX_BYTES} bytes as JSON, nested at most ${SETTINGS_MAX_DEPTH} deep`;

/** How deep `value` nests (a scalar is 0), walked without recursion; stops once past `limit`. */
function depthOf(value: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return deepest;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const child of Object.values(v)) deepFreeze(child);
    Object.freeze(v);
  }
  return v;
}

/** A key whose value a read does not show: a credential a vendor's settings may carry (a custom LLM's headers). */
const SECRET_KEY = /key|secret|token|password|authorization|credential/i;

/** `value` as a read shows it: strings under secret-looking keys or in any `headers` object masked, URLs masked. */
function shownSettings(value: unknown, maskUrl: (url: string) => string, secret: boolean): unknown {
  if (typeof value === 'string') {
    if (secret) return '****';
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? maskUrl(value) : value;
  }
  if (Array.isArray(value)) return value.map((v) => shownSettings(v, maskUrl, secret));
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      shownSettings(v, maskUrl, secret || k.toLowerCase() === 'headers' || SECRET_KEY.test(k)),
    ]),
  );
}

/**
 * The vendor's own settings, a JSON object the dialect merges into what it sends (Deepgram's `Settings`
 * message, Ultravox's create-call body); each dialect says where, and what the bridge keeps for itself.
 * The bridge checks its shape and size only; the vendor judges its content. A problem gives the object's
 * size or depth, never its contents. Kept frozen (every call of the tenant reads the one value). A read
 * shows it with the values under secret-looking keys (`api_key`, `authorization`, any `headers`) masked,
 * as a custom provider's credentials may sit there.
 */
export const settings: BotFieldDecl<'settings', Readonly<Record<string, unknown>>> = {
  key: 'settings',
  rest: 'settings',
  example: { temperature: 0.4 },
  env: {
    name: 'BOT_SETTINGS',
    type: 'text',
    accepts: 'a JSON object',
    description:
      "the vendor's own settings, merged into what the bridge sends it (docs/bots.md says where for each dialect, and what the bridge sets itself). Refused with another dialect.",
  },
  envValue: 'json',
  accepts: SETTINGS_ACCEPTS,
  schema: { type: 'object', additionalProperties: true },
  note: "merged into what the bridge sends the vendor; the dialect's own fields win; secret-looking values read back masked",
  check: (value, field) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return mustBe(field, SETTINGS_ACCEPTS, kindOf(value));
    // Depth first, without recursion: JSON text may nest deep enough to overflow a recursive walk.
    if (depthOf(value, SETTINGS_MAX_DEPTH) > SETTINGS_MAX_DEPTH)
      return mustBe(field, SETTINGS_ACCEPTS, 'an object nested deeper');
    const bytes = Buffer.byteLength(JSON.stringify(value));
    if (bytes > SETTINGS_MAX_BYTES) return mustBe(field, SETTINGS_ACCEPTS, `${bytes} bytes`);
    return undefined;
  },
  value: (checked) => deepFreeze(structuredClone(checked) as Record<string, unknown>),
  shown: (value, maskUrl) => shownSettings(value, maskUrl, false),
};

const API_BASE_MAX = 2048;
const API_BASE_ACCEPTS = `an http:// or https:// URL with a host and no credentials, query or #fragment (at most ${API_BASE_MAX} characters)`;

/** A URL as a message may show it: scheme, host and path, nothing of credentials, query or fragment. */
function shownBase(value: string, u: URL | undefined): string {
  if (u === undefined || u.hostname === '' || value.includes('@')) return shortValue(value);
  return JSON.stringify(`${u.protocol}//${u.host}${u.pathname}`);
}

/**
 * The base of a vendor's REST API that the bridge calls before it dials (Ultravox's create-call), a
 * path prefix allowed (a proxy's). Its default is each dialect's own (its `defaults`); a tenant's is held
 * to BOT_URL_ALLOWED_HOSTS when stored and at each dial. Kept without a trailing slash.
 */
export const apiBase: BotFieldDecl<'apiBase', string> = {
  key: 'apiBase',
  rest: 'api_base',
  example: 'https://api.vendor.example',
  env: {
    name: 'BOT_API_BASE',
    type: 'url',
    accepts: 'an `https://` URL',
    defaultRule: "the vendor's public API",
    description:
      "the vendor's REST API, called before each dial (docs/bots.md). Refused with another dialect.",
  },
  dials: true,
  accepts: API_BASE_ACCEPTS,
  schema: { type: 'string', format: 'uri' },
  check: (value, field) => {
    if (typeof value !== 'string') return mustBe(field, API_BASE_ACCEPTS, kindOf(value));
    if (value.length > API_BASE_MAX) return mustBe(field, API_BASE_ACCEPTS, `${value.length} characters`);
    let u: URL | undefined;
    try {
      u = new URL(value);
    } catch {}
    if (
      u === undefined ||
      (u.protocol !== 'https:' && u.protocol !== 'http:') ||
      u.hostname === '' ||
      u.username !== '' ||
      u.password !== '' ||
      u.search !== '' ||
      u.hash !== '' ||
      value.includes('?') ||
      value.includes('#')
    )
      return mustBe(field, API_BASE_ACCEPTS, shownBase(value, u));
    return undefined;
  },
  value: (checked) => (checked as string).replace(/\/+$/, ''),
};

const AGENT_ID_MAX = 128;
const AGENT_ID_ACCEPTS = `1 to ${AGENT_ID_MAX} letters, digits, \`_\`, \`-\` or \`.\``;
const AGENT_ID = /^[A-Za-z0-9_.-]+$/;

/**
 * An agent configured on the vendor's side (its prompt, voice, tools and audio formats kept there), by
 * the id the vendor gave it: ElevenLabs' `agent_...`. Not a secret (a public agent is reached by its id
 * alone, and the vendor's own widgets show it); its characters are those of the vendors' ids, so it goes
 * into a URL's query as it is written.
 */
export const agentId: BotFieldDecl<'agentId', string> = {
  key: 'agentId',
  rest: 'agent_id',
  example: 'agent_01jexample0000000000000000',
  env: {
    name: 'BOT_AGENT_ID',
    type: 'text',
    accepts: AGENT_ID_ACCEPTS,
    description: "the vendor's id of the agent the bridge talks to. Refused with another dialect.",
  },
  accepts: `a string of ${AGENT_ID_ACCEPTS}`,
  schema: { type: 'string', pattern: AGENT_ID.source, maxLength: AGENT_ID_MAX },
  check: (value, field) => {
    const accepts = `a string of ${AGENT_ID_ACCEPTS}`;
    if (typeof value !== 'string') return mustBe(field, accepts, kindOf(value));
    if (value.length === 0 || value.length > AGENT_ID_MAX)
      return mustBe(field, accepts, `${value.length} characters`);
    if (!AGENT_ID.test(value)) return mustBe(field, accepts, shortValue(value));
    return undefined;
  },
};

/**
 * The dialect registry, as declarations: every bot dialect and every provider dialect the bridge
 * speaks, one module each under bot/ and provider/, listed here once, and what the rest of the bridge
 * reads of them. The configuration takes the env twins, the spec rows and the field rules from here;
 * the REST layer the field names, schemas and secrets; the logger the paths to redact; the CLI and the
 * emulator the provider names; src/media/dialects.ts joins each to the code that runs it.
 *
 * A new dialect is one line in a list below. The lists are checked once at load (a name or field
 * declared twice, a URL kind without exactly one default), and test/dialects/ holds every dialect to
 * what each must declare.
 */
import { bridge } from './bot/bridge.js';
import { builtin } from './bot/builtin.js';
import { deepgramAgent } from './bot/deepgram-agent.js';
import { elevenlabsAgent } from './bot/elevenlabs-agent.js';
import { geminiLive } from './bot/gemini-live.js';
import { openaiRealtime } from './bot/openai-realtime.js';
import { twilio } from './bot/twilio.js';
import { ultravox } from './bot/ultravox.js';
import { asteriskProvider } from './provider/asterisk.js';
import { audiosocketProvider } from './provider/audiosocket.js';
import { defaultProvider } from './provider/default.js';
import { exotelProvider } from './provider/exotel.js';
import { jambonzProvider } from './provider/jambonz.js';
import { plivoProvider } from './provider/plivo.js';
import { telnyxProvider } from './provider/telnyx.js';
import { twilioProvider } from './provider/twilio.js';
import { vonageProvider } from './provider/vonage.js';
import type { BotDialectDecl, BotFieldDecl, BotUrlDecl, EnvVarDecl, ProviderDialectDecl } from './types.js';

export type * from './types.js';

/** Every bot dialect, in the order messages and documents list them. */
export const BOT_DIALECT_DECLS = [
  bridge,
  twilio,
  openaiRealtime,
  elevenlabsAgent,
  deepgramAgent,
  ultravox,
  geminiLive,
  builtin,
] as const;

/** Every provider dialect, in the order messages and documents list them. */
export const PROVIDER_DIALECT_DECLS = [
  defaultProvider,
  twilioProvider,
  telnyxProvider,
  plivoProvider,
  exotelProvider,
  vonageProvider,
  jambonzProvider,
  asteriskProvider,
  audiosocketProvider,
] as const;

// Bot side.

type BotDecl = (typeof BOT_DIALECT_DECLS)[number];
export type BotDialectName = BotDecl['name'];
/** Every field any bot dialect declares. */
type AnyBotField = BotDecl['fields'][number];
/** BotSettings' fields beside `dialect` and `url`, each typed as its declaration checks it. */
export type BotOptions = {
  readonly [F in AnyBotField as F['key']]?: F extends BotFieldDecl<string, infer V> ? V : never;
};
export type BotOptionKey = keyof BotOptions;

/** The kinds of URL a bot may be given (a dialect of kind `none` takes no URL). */
type UrlKind = Exclude<BotUrlDecl['kind'], 'none'>;

/** What the bot-side checks read of a list of bot dialects (the registry's own, or a test's). */
export interface BotRegistry {
  readonly dialects: readonly BotDialectDecl[];
  /** A dialect's declaration by its name; undefined for a name no dialect has. */
  dialect(name: string): BotDialectDecl | undefined;
  /** Every field, once each (a shared field is one declaration), in the order dialects first list them. */
  readonly fields: readonly BotFieldDecl[];
  /** The dialects that take each field, by its key. */
  readonly owners: ReadonlyMap<string, readonly string[]>;
  /** The dialect a URL of each kind gets when none is named. */
  readonly defaults: Readonly<Record<UrlKind, string>>;
}

/**
 * The registry of `dialects`: throws when a name, a field key, a REST name or a variable is declared
 * twice, or a URL kind has not exactly one default dialect.
 */
export function botRegistry(dialects: readonly BotDialectDecl[]): BotRegistry {
  const byName = new Map(dialects.map((d) => [d.name, d]));
  const fields = [...new Set(dialects.flatMap((d) => d.fields))];
  const owners = new Map(
    fields.map((f) => [f.key, dialects.filter((d) => d.fields.includes(f)).map((d) => d.name)]),
  );
  const defaultFor = (kind: UrlKind): string => {
    const found = dialects.filter((d) => d.url.kind === kind && d.url.defaultForKind === true);
    if (found.length !== 1)
      throw new Error(
        `dialect registry: ${found.length} bot dialects are the default for ${kind} URLs, not 1`,
      );
    return found[0]!.name;
  };
  const twice = [
    ...duplicates(dialects.map((d) => d.name)).map((n) => `bot dialect ${n}`),
    ...duplicates(fields.map((f) => f.key)).map((k) => `bot field ${k}`),
    ...duplicates(fields.map((f) => f.rest)).map((k) => `bot field bot.${k}`),
    ...duplicates(fields.flatMap((f) => (f.env === undefined ? [] : [f.env.name]))).map(
      (n) => `variable ${n}`,
    ),
  ];
  if (twice.length > 0) throw new Error(`dialect registry: declared twice: ${twice.join(', ')}`);
  const stray = dialects.flatMap((d) => [
    ...Object.keys(d.defaults ?? {})
      .filter((k) => !d.fields.some((f) => f.key === k))
      .map((k) => `${d.name} gives a default to ${k}, a field it does not take`),
    ...(d.requires ?? [])
      .filter((k) => !d.fields.some((f) => f.key === k))
      .map((k) => `${d.name} requires ${k}, a field it does not take`),
  ]);
  if (stray.length > 0) throw new Error(`dialect registry: ${stray.join('; ')}`);
  return {
    dialects,
    dialect: (name) => byName.get(name),
    fields,
    owners,
    defaults: { ws: defaultFor('ws'), builtin: defaultFor('builtin') },
  };
}

function duplicates(list: readonly string[]): string[] {
  return list.filter((v, i) => list.indexOf(v) !== i);
}

/** The bot dialects' registry. */
export const BOTS: BotRegistry = botRegistry(BOT_DIALECT_DECLS);

export const BOT_DIALECTS: readonly BotDialectName[] = BOT_DIALECT_DECLS.map((d) => d.name);

/** Every bot field, once each, in the order dialects first list them. */
export const BOT_FIELDS: readonly BotFieldDecl[] = BOTS.fields;

/** The dialect a URL kind gets when none is named. */
export const DEFAULT_BOT_DIALECT = BOTS.defaults as Readonly<Record<UrlKind, BotDialectName>>;

// Provider side.

type ProviderDecl = (typeof PROVIDER_DIALECT_DECLS)[number];
export type ProviderDialectName = ProviderDecl['name'];
/** The dialects served on a WebSocket path (`/v1/media` and `/v1/media/<name>`). */
export type PathDialectName = Extract<ProviderDecl, { endpoint: 'root' | 'path' }>['name'];
type CredentialDecl = Extract<ProviderDecl, { credential: object }>;
/** The dialects `provider_auth` takes a credential for. */
export type CredentialDialectName = CredentialDecl['name'];
/** Each credential dialect's fields, by dialect. */
type FieldsByDialect = { readonly [D in CredentialDecl as D['name']]: D['credential']['fields'] };
type CredentialFieldName = { [N in keyof FieldsByDialect]: keyof FieldsByDialect[N] }[keyof FieldsByDialect];
type AllowFieldName = {
  [N in keyof FieldsByDialect]: {
    [K in keyof FieldsByDialect[N]]: FieldsByDialect[N][K] extends { kind: 'allow' } ? K : never;
  }[keyof FieldsByDialect[N]];
}[keyof FieldsByDialect];
/** A stored credential: any dialect's fields, strings, and the address lists of `allow` fields. */
export type ProviderCredential = {
  readonly [K in CredentialFieldName]?: K extends AllowFieldName ? readonly string[] : string;
};

export const PROVIDER_DIALECTS: readonly ProviderDialectName[] = PROVIDER_DIALECT_DECLS.map((d) => d.name);

/** The dialects with a WebSocket path, `/v1/media`'s first. */
export const PATH_DIALECTS = PROVIDER_DIALECT_DECLS.filter((d) => d.endpoint !== 'tcp').map(
  (d) => d.name,
) as readonly PathDialectName[];

/** The dialect served at `/v1/media` itself. */
export const ROOT_DIALECT = onlyRoot().name as PathDialectName;

function onlyRoot(): ProviderDialectDecl {
  const roots = PROVIDER_DIALECT_DECLS.filter((d) => d.endpoint === 'root');
  if (roots.length !== 1)
    throw new Error(`dialect registry: ${roots.length} provider dialects at /v1/media, not 1`);
  return roots[0]!;
}

/** The dialects with a `provider_auth` credential, in the registry's order. */
export const CREDENTIAL_DIALECTS: readonly CredentialDecl[] = PROVIDER_DIALECT_DECLS.filter(
  (d): d is CredentialDecl => 'credential' in d,
);

const PROVIDER_BY_NAME: ReadonlyMap<string, ProviderDialectDecl> = new Map(
  PROVIDER_DIALECT_DECLS.map((d) => [d.name, d]),
);

/** A provider dialect's declaration by its name; undefined for a name no dialect has. */
export function providerDialect(name: string): ProviderDialectDecl | undefined {
  return PROVIDER_BY_NAME.get(name);
}

/** The variables the provider dialects own, in the registry's order. */
export const PROVIDER_ENV: readonly EnvVarDecl[] = PROVIDER_DIALECT_DECLS.flatMap(
  (d) => (d as ProviderDialectDecl).env ?? [],
);

// What the logger redacts.

/** A name a secret is logged under, at the top of a line's object and two levels into it. */
function atDepths(name: string): string[] {
  return [name, `*.${name}`, `*.*.${name}`];
}

/**
 * The log paths of every dialect's secrets: bot fields declared secret (by their REST and BotSettings
 * names), provider credential fields of kind secret, a `provider_auth` object as a whole (a body's, a
 * store's) and tenant `default`'s credentials from the environment (Config's `providerAuthEnv`), and
 * what each provider dialect adds (a header).
 */
export const DIALECT_REDACT_PATHS: readonly string[] = [
  ...new Set([
    ...BOT_FIELDS.filter((f) => f.secret === true).flatMap((f) => [...atDepths(f.rest), ...atDepths(f.key)]),
    ...CREDENTIAL_DIALECTS.flatMap((d) =>
      Object.entries(d.credential.fields as Readonly<Record<string, { kind: string }>>)
        .filter(([, f]) => f.kind === 'secret')
        .flatMap(([name]) => atDepths(name)),
    ),
    ...atDepths('provider_auth'),
    'providerAuthEnv',
    '*.providerAuthEnv',
    ...PROVIDER_DIALECT_DECLS.flatMap((d) => (d as ProviderDialectDecl).redact ?? []),
  ]),
];

// Checked once at load, beside botRegistry's own checks.
const twice = [
  ...duplicates(PROVIDER_DIALECTS).map((n) => `provider dialect ${n}`),
  ...duplicates([
    ...BOT_FIELDS.flatMap((f) => (f.env === undefined ? [] : [f.env.name])),
    ...PROVIDER_ENV.map((e) => e.name),
  ]).map((n) => `variable ${n}`),
];
if (twice.length > 0) throw new Error(`dialect registry: declared twice: ${twice.join(', ')}`);

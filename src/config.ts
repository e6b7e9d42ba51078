/**
 * The one validated, frozen configuration. Read once at start-up from the environment (and `--flag`
 * twins); every problem is reported in one message, one line per variable, naming what it accepts.
 * Every variable, its default and its range are in the spec table (src/config/spec.ts), which also
 * writes docs/configuration.md.
 */

import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { getCountries, getCountryCallingCode } from 'libphonenumber-js';
import { type AudioSocketConfig, audioSocketConfig } from './config/audiosocket.js';
import { checkBotFields, ENV_BOT_FIELDS } from './config/bot-fields.js';
import type { BotSettings } from './config/bot-settings.js';
import { type BotHostAllowlist, botUrlProblem, parseAllowedHosts } from './config/bot-url.js';
import {
  CONFIG_SPEC,
  type DefaultContext,
  type IntegerVar,
  type VarName,
  type VarSpec,
} from './config/spec.js';
import {
  BOTS,
  CREDENTIAL_DIALECTS,
  type CredentialDialectName,
  type CredentialFieldDecl,
  DEFAULT_BOT_DIALECT,
  type ProviderCredential,
} from './dialects/index.js';
import { parseTrustProxy, type TrustProxy } from './limits/client-address.js';
import { displayUrl } from './log.js';

/** Development-only secrets, used when none is configured outside production. */
export const DEV_MEDIA_SECRET = 'voicebridge-dev-media-secret';
export const DEV_AUTH_JWT_SECRET = 'voicebridge-dev-auth-secret';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly nodeEnv: string;
  readonly production: boolean;
  readonly logLevel: string;
  /** LOG_FORMAT: `pretty` (pino-pretty) or `json`; json by default in production. */
  readonly logFormat: 'pretty' | 'json';
  readonly mediaAuth: 'jwt' | 'none';
  /** Initial media secret of tenant `default`. */
  readonly mediaSecret: string;
  /** True when `mediaSecret` is the built-in development secret. */
  readonly mediaSecretIsDev: boolean;
  readonly authJwtSecret: string | undefined;
  readonly authJwksUrl: string | undefined;
  readonly authSecretIsDev: boolean;
  /**
   * Tenant `default`'s credentials for each provider dialect from the environment, by dialect: the env
   * twins each dialect declares for its `provider_auth` fields (TWILIO_AUTH_TOKEN, EXOTEL_STREAM_USER
   * and EXOTEL_STREAM_PASSWORD, ...), present only where every twin of the dialect is set.
   */
  readonly providerAuthEnv: Readonly<Partial<Record<CredentialDialectName, ProviderCredential>>>;
  readonly providerBaseUrl: string | undefined;
  readonly providerToken: string | undefined;
  /** BOT_URL, or its default; empty for a dialect that takes no URL (`ultravox`). */
  readonly botUrl: string;
  /**
   * The default bot (BOT_URL, BOT_DIALECT and their twins) of every tenant without its own: `url` is
   * `botUrl`. Its `apiKey` (BOT_API_KEY) is never printed.
   */
  readonly bot: BotSettings;
  /** The default bot's key for signing its webhook tools' calls (BOT_TOOL_SECRET); never printed. */
  readonly botToolSecret: string | undefined;
  /** The directory (absolute) a tenant's `bot_url` of `builtin:wav:<path>` must lie in; undefined: refused. */
  readonly botWavDir: string | undefined;
  /** The hosts a tenant's ws/wss `bot_url` may dial (BOT_URL_ALLOWED_HOSTS); `BOT_URL` itself is not limited. */
  readonly botUrlAllowedHosts: BotHostAllowlist;
  readonly botSampleRate: number;
  /** Worker threads for the audio pipeline; 0 runs the DSP inline on the main thread. */
  readonly dspWorkers: number;
  /** DENOISE: every call's caller audio goes through the noise suppressor, not only its tenants'. */
  readonly denoise: boolean;
  readonly stateStore: string;
  /** AES-256-GCM key that seals media secrets stored in Redis; undefined: a development key. */
  readonly stateSecretKey: Buffer | undefined;
  /** Prefix of every Redis key and channel, so several deployments (or tests) can share one Redis. */
  readonly stateKeyPrefix: string;
  /** Lifetime of a session's Redis entry without heartbeats: how long a crashed instance's calls stay listed. */
  readonly stateSessionTtlMs: number;

  // Tunables, units in the names.
  /** Largest WebSocket message accepted: 200 ms of 16 kHz PCM16 as base64 JSON is ~8.6 KB. */
  readonly maxPayloadBytes: number;
  /** How far ahead of real time outbound audio may be sent. */
  readonly paceLeadMs: number;
  /** How far behind its schedule outbound audio may fall and still catch up (see src/audio/pacer.ts). */
  readonly paceCatchUpMs: number;
  /** Bot audio buffered ahead of playout before the oldest is shed. */
  readonly outboundBufferMs: number;
  /** A provider socket with more than this buffered sheds stale audio. */
  readonly socketHighWaterBytes: number;
  readonly heartbeatIntervalMs: number;
  /** How long an authenticated socket may wait before its first frame, the session_start (else 4400). */
  readonly sessionStartTimeoutMs: number;
  readonly drainTimeoutMs: number;
  /** Delay of the `builtin:echo` bot. */
  readonly echoDelayMs: number;
  /** Shortest gap between wake-ups of the one pacing timer shared by all sessions. */
  readonly paceMinGapMs: number;
  /** Redials of a ws bot that cannot be reached or drops, before the call goes on without it. */
  readonly botRetries: number;
  /** First redial delay; doubles per failure up to 5 s. */
  readonly botRetryBaseMs: number;
  readonly botConnectTimeoutMs: number;
  /** Largest frame accepted from a ws bot: a whole utterance may come at once (4 MiB is 2 min at 16 kHz). */
  readonly botMaxPayloadBytes: number;
  readonly providerConnectTimeoutMs: number;
  /** Client read timeout for provider calls; the provider's consult blocks up to 20 s + 5 s. */
  readonly providerReadTimeoutMs: number;
  /** Server request timeout; above the provider read timeout so the bridge answers 504 itself. */
  readonly requestTimeoutMs: number;

  // Limits (src/limits/): what one client may cost the bridge.
  /** Live media connections above which upgrades are refused with 503 before the upgrade. */
  readonly maxSessions: number;
  /** Media upgrade attempts per client address per second above which it gets 429. */
  readonly mediaConnectPerSec: number;
  /** Bad frames a provider socket may send within one second; past it the socket closes with 1008. */
  readonly mediaBadFramesPerSec: number;
  /** REST requests per client address per `restRateWindowMs` above which it gets 429. */
  readonly restRateLimit: number;
  readonly restRateWindowMs: number;
  /** Failed REST authentications (401s) per client address per minute; past it 429, no token verified. */
  readonly restAuthFailLimit: number;
  /** Largest REST request body; over it: 413. A media-stream upsert is < 1 KB, or < 40 KB with a `bot` at every bound. */
  readonly bodyLimitBytes: number;
  /** TRUST_PROXY: proxies whose X-Forwarded-For names the client (limits are per client address). */
  readonly trustProxy: TrustProxy | undefined;
  /** The Asterisk AudioSocket listener (AUDIOSOCKET_*). */
  readonly audioSocket: AudioSocketConfig;

  // Messaging (chat and RCS through the provider's messaging API).
  /** The provider's messaging API base, with its `/v1`; undefined: messaging routes answer 503. */
  readonly messagingBaseUrl: string | undefined;
  readonly messagingToken: string | undefined;
  /** Sent as `account_id` when the token does not imply one account. */
  readonly messagingAccountId: string | undefined;
  /**
   * What the provider's webhook posts must carry (`Authorization: Bearer <secret>` or `?token=`);
   * undefined: webhooks are accepted without one (development only).
   */
  readonly messagingWebhookSecret: string | undefined;
  /**
   * Sends per second this instance allows itself towards the provider (the provider allows 80 per
   * account): instances sharing one account each take their share (80 divided by their number).
   */
  readonly messagingSendsPerSec: number;
  /**
   * The country calling code (digits, e.g. "91") of the numbers RCS messages go to: the RCS launcher
   * takes 10-digit mobiles, national numbers of one country, so a call's customer_phone is
   * sent RCS only when it has this code and a 10-digit national number.
   */
  readonly messagingRcsCountryCode: string;
  /** How long message records and webhook dedupe keys are kept. */
  readonly messageRetentionMs: number;

  // Recordings (src/recording/).
  /** RECORD_CALLS: every call is recorded, not only those of tenants with `"recording": true`. */
  readonly recordCalls: boolean;
  /** RECORDINGS_DIR as given; created when missing. */
  readonly recordingsDir: string;
  /** 0: kept until deleted. */
  readonly recordingsRetentionDays: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** Thrown when configuration is invalid; its message has one line per bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/** `--port 9000` and `--port=9000` become `PORT=9000`; flags win over the environment. */
export function flagsToEnv(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) continue;
    const eq = arg.indexOf('=');
    const name = (eq === -1 ? arg.slice(2) : arg.slice(2, eq)).replaceAll('-', '_').toUpperCase();
    const next = argv[i + 1];
    if (eq !== -1) out[name] = arg.slice(eq + 1);
    else if (next !== undefined && !next.startsWith('--')) {
      out[name] = next;
      i++;
    } else out[name] = 'true';
  }
  return out;
}

/** What the machine-dependent defaults depend on; a test may give its own. */
export interface Machine {
  /** `os.availableParallelism()`. */
  readonly cpus: number;
}

type Row = (typeof CONFIG_SPEC)[number];
type IntegerRow = Extract<Row, { type: 'integer' }>;
type EnumRow = Extract<Row, { type: 'enum' }>;
type EnumValue<N extends EnumRow['name']> = Extract<EnumRow, { name: N }>['values'][number];
type IntegerField = { [K in keyof Config]: Config[K] extends number ? K : never }[keyof Config];

const ROWS: ReadonlyMap<string, VarSpec> = new Map(CONFIG_SPEC.map((r) => [r.name, r]));

export function loadConfig(
  env: Env = process.env,
  argv: readonly string[] = [],
  machine: Machine = { cpus: availableParallelism() },
): Config {
  const flags = flagsToEnv(argv);
  /** Every variable is read here, by a name the spec table holds. */
  const read = (name: VarName): string | undefined => (Object.hasOwn(flags, name) ? flags[name] : env[name]);
  /** A text variable, or its default from the table when unset or empty. */
  const text = (name: VarName): string | undefined => {
    const row = ROWS.get(name);
    return read(name) || (row !== undefined && 'default' in row ? String(row.default) : undefined);
  };
  const problems: string[] = [];

  const oneOf = <N extends EnumRow['name']>(name: N): EnumValue<N> => {
    const row = ROWS.get(name) as EnumRow;
    const raw = read(name);
    if (raw === undefined || raw === '') return row.default as EnumValue<N>;
    if (!(row.values as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${row.values.join(', ')}, got ${JSON.stringify(raw)}`);
      return row.default as EnumValue<N>;
    }
    return raw as EnumValue<N>;
  };
  const url = (name: VarName, protocols: readonly string[]): string | undefined => {
    const raw = read(name);
    if (raw === undefined || raw === '') return undefined;
    try {
      const u = new URL(raw);
      if (protocols.includes(u.protocol)) return raw;
    } catch {}
    problems.push(`${name} must be a ${protocols.join(' or ')} URL, got ${JSON.stringify(displayUrl(raw))}`);
    return undefined;
  };

  const nodeEnv = text('NODE_ENV')!;
  const production = nodeEnv === 'production';
  const mediaAuth = oneOf('MEDIA_AUTH');
  if (mediaAuth === 'none' && production) {
    problems.push('MEDIA_AUTH must be "jwt" when NODE_ENV=production ("none" is for local development only)');
  }

  let mediaSecret = read('MEDIA_SECRET') ?? '';
  const mediaSecretIsDev = mediaSecret === '';
  if (mediaSecretIsDev) {
    if (production && mediaAuth === 'jwt') {
      problems.push(
        'MEDIA_SECRET must be set when NODE_ENV=production (the media secret of tenant "default")',
      );
    }
    mediaSecret = DEV_MEDIA_SECRET;
  }

  let authJwtSecret = read('AUTH_JWT_SECRET') || undefined;
  const authJwksUrl = url('AUTH_JWKS_URL', ['https:', 'http:']);
  const authSecretIsDev = authJwtSecret === undefined && authJwksUrl === undefined;
  if (authSecretIsDev) {
    if (production) problems.push('AUTH_JWT_SECRET or AUTH_JWKS_URL must be set when NODE_ENV=production');
    authJwtSecret = DEV_AUTH_JWT_SECRET;
  }

  const botDialect = read('BOT_DIALECT') || undefined;
  const dialectDecl = BOTS.dialect(botDialect ?? '');
  // A dialect that takes no URL (`ultravox`) gets no BOT_URL default: one set for it is refused. One
  // with a vendor's public endpoint dials it when BOT_URL is not set.
  const takesNoUrl = dialectDecl?.url.kind === 'none';
  const botUrl = takesNoUrl
    ? read('BOT_URL') || undefined
    : read('BOT_URL') || dialectDecl?.url.default || text('BOT_URL')!;
  // A bot URL may carry credentials or a ?token=: a bad one is shown as scheme, host and path only; the
  // api key is described by its length only.
  const defaultBot = checkBotFields(
    { url: botUrl, dialect: botDialect, ...botTwins(read, problems) },
    ENV_BOT_FIELDS,
    botUrlProblem,
  );
  for (const p of defaultBot.problems) problems.push(p.message);
  const botWavDir = wavDir(read('BOT_WAV_DIR'), problems);
  const allowed = parseAllowedHosts(read('BOT_URL_ALLOWED_HOSTS'), production);
  if (typeof allowed === 'string') problems.push(allowed);
  const botUrlAllowedHosts: BotHostAllowlist =
    typeof allowed === 'string' ? { any: false, rules: [] } : allowed;

  const stateStore = text('STATE_STORE')!;
  if (stateStore !== 'memory' && !/^rediss?:\/\/.+/.test(stateStore)) {
    problems.push(
      `STATE_STORE must be "memory" or a redis://… URL, got ${JSON.stringify(displayUrl(stateStore))}`,
    );
  }

  const stateSecretKey = parseStateKey(read('STATE_SECRET_KEY'), problems);
  if (production && stateStore !== 'memory' && stateSecretKey === undefined) {
    problems.push(
      'STATE_SECRET_KEY must be set when NODE_ENV=production and STATE_STORE is Redis (32 bytes as 64 hex characters or base64; it encrypts media secrets at rest)',
    );
  }
  const stateKeyPrefix = text('STATE_KEY_PREFIX')!;
  if (!/^[A-Za-z0-9:_.-]{1,64}$/.test(stateKeyPrefix)) {
    problems.push(
      `STATE_KEY_PREFIX must be 1 to 64 letters, digits or ":_.-", got ${JSON.stringify(stateKeyPrefix)}`,
    );
  }

  const trustProxy = parseTrustProxy(read('TRUST_PROXY'));
  if (typeof trustProxy === 'object' && 'problem' in trustProxy) problems.push(trustProxy.problem);

  const providerBaseUrl = url('PROVIDER_BASE_URL', ['https:', 'http:']);
  if (production && providerBaseUrl === undefined && !read('PROVIDER_BASE_URL')) {
    problems.push(
      "PROVIDER_BASE_URL must be set when NODE_ENV=production (the provider's voice API; the built-in provider emulator is for development only)",
    );
  }
  const logFormat = read('LOG_FORMAT') || (production ? 'json' : 'pretty');
  if (logFormat !== 'pretty' && logFormat !== 'json') {
    problems.push(`LOG_FORMAT must be pretty or json, got ${JSON.stringify(logFormat.slice(0, 32))}`);
  }
  const messaging = messagingConfig(read, text, production, url, problems);
  const numbers = integers(read, machine, problems);
  const config: Config = {
    host: text('HOST')!,
    nodeEnv,
    production,
    logLevel: oneOf('LOG_LEVEL'),
    logFormat: logFormat === 'pretty' ? 'pretty' : 'json',
    recordCalls: oneOf('RECORD_CALLS') === 'true',
    denoise: oneOf('DENOISE') === 'true',
    recordingsDir: text('RECORDINGS_DIR')!,
    mediaAuth,
    mediaSecret,
    mediaSecretIsDev,
    providerAuthEnv: providerTwins(read),
    authJwtSecret,
    authJwksUrl,
    authSecretIsDev,
    providerBaseUrl,
    providerToken: read('PROVIDER_TOKEN') || undefined,
    botUrl: defaultBot.bot?.url ?? botUrl ?? '',
    // Unused: a problem stops the configuration below.
    bot: defaultBot.bot ?? { dialect: DEFAULT_BOT_DIALECT.builtin, url: 'builtin:echo' },
    botToolSecret: read('BOT_TOOL_SECRET') || undefined,
    botWavDir,
    botUrlAllowedHosts,
    stateStore,
    stateSecretKey,
    stateKeyPrefix,
    trustProxy: typeof trustProxy === 'object' && 'problem' in trustProxy ? undefined : trustProxy,
    audioSocket: audioSocketConfig(read, text('HOST')!, problems),
    ...messaging,
    ...(numbers satisfies Record<IntegerField, number>),
  };
  if (config.requestTimeoutMs <= config.providerReadTimeoutMs) {
    problems.push(
      `REQUEST_TIMEOUT_MS must be above PROVIDER_READ_TIMEOUT_MS (${config.providerReadTimeoutMs}), got ${config.requestTimeoutMs}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/**
 * The bot fields' env twins (BOT_API_KEY, ...), by the field each fills: as text, or parsed as the
 * field declares (JSON, a whole number). Left out when unset or empty; a twin that does not parse is a
 * problem, named by the variable.
 */
function botTwins(read: (name: VarName) => string | undefined, problems: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of BOTS.fields) {
    if (f.env === undefined) continue;
    // A name the registry declares: a row of the table (src/config/dialect-vars.ts).
    const text = read(f.env.name as VarName);
    if (text === undefined || text === '') continue;
    if (f.envValue === 'json') {
      try {
        out[f.key] = JSON.parse(text);
      } catch {
        problems.push(`${f.env.name} must be ${f.accepts}, as JSON, got text that is not JSON`);
      }
    } else if (f.envValue === 'integer') out[f.key] = /^-?\d+$/.test(text.trim()) ? Number(text) : text;
    else out[f.key] = text;
  }
  return out;
}

/** Tenant `default`'s provider credentials: each dialect whose every declared env twin is set. */
function providerTwins(read: (name: VarName) => string | undefined): Config['providerAuthEnv'] {
  const out: Record<string, ProviderCredential> = {};
  for (const d of CREDENTIAL_DIALECTS) {
    const twins = Object.entries(d.credential.fields as Readonly<Record<string, CredentialFieldDecl>>)
      .filter(([, f]) => f.env !== undefined)
      .map(([field, f]) => [field, read(f.env as VarName) || undefined] as const);
    if (twins.length > 0 && twins.every(([, v]) => v !== undefined)) out[d.name] = Object.fromEntries(twins);
  }
  return Object.freeze(out);
}

/**
 * Every integer of the table, by its range, its accepted values and its default. Fixed defaults first,
 * then those worked out from other variables or the machine.
 */
function integers(
  read: (name: VarName) => string | undefined,
  machine: Machine,
  problems: string[],
): Record<IntegerRow['field'], number> {
  const byName = new Map<string, number>();
  const ctx: DefaultContext = {
    cpus: machine.cpus,
    choiceOf: (name) => read(name as VarName),
    valueOf: (name) => {
      const v = byName.get(name);
      if (v === undefined) throw new Error(`config spec: ${name} is used by a default before it is read`);
      return v;
    },
  };
  const rows: readonly IntegerVar[] = CONFIG_SPEC.filter((r) => r.type === 'integer');
  const ordered = [
    ...rows.filter((r) => typeof r.default === 'number'),
    ...rows.filter((r) => typeof r.default !== 'number'),
  ];
  const out: Record<string, number> = {};
  for (const row of ordered) {
    const dflt = typeof row.default === 'number' ? row.default : row.default.value(ctx);
    const raw = read(row.name as VarName);
    let n = dflt;
    if (raw !== undefined && raw !== '') {
      const v = Number(raw);
      if (!Number.isInteger(v) || v < row.min || v > row.max) {
        problems.push(
          `${row.name} must be an integer from ${row.min} to ${row.max}, got ${JSON.stringify(raw)}`,
        );
      } else if (row.values !== undefined && !row.values.includes(v)) {
        problems.push(`${row.name} must be one of ${row.values.join(', ')}, got ${JSON.stringify(raw)}`);
      } else n = v;
    }
    byName.set(row.name, n);
    out[row.field] = n;
  }
  return out as Record<IntegerRow['field'], number>;
}

/** Every country calling code there is (libphonenumber's metadata): "1", "44", "91", … */
const COUNTRY_CALLING_CODES: ReadonlySet<string> = new Set(
  getCountries().map((c) => getCountryCallingCode(c)),
);

/** Shortest MESSAGING_WEBHOOK_SECRET: a bearer secret shorter than this can be guessed. */
export const MIN_WEBHOOK_SECRET_LENGTH = 16;

/** MESSAGING_*: the provider's messaging API and the secret its webhook posts carry. */
function messagingConfig(
  read: (name: VarName) => string | undefined,
  text: (name: VarName) => string | undefined,
  production: boolean,
  url: (name: VarName, protocols: readonly string[]) => string | undefined,
  problems: string[],
): Pick<
  Config,
  | 'messagingBaseUrl'
  | 'messagingToken'
  | 'messagingAccountId'
  | 'messagingWebhookSecret'
  | 'messagingRcsCountryCode'
> {
  const messagingBaseUrl = url('MESSAGING_BASE_URL', ['https:', 'http:']);
  const messagingToken = read('MESSAGING_TOKEN') || undefined;
  const configured = messagingBaseUrl !== undefined || !!read('MESSAGING_BASE_URL');
  if (configured && messagingToken === undefined) {
    problems.push(
      "MESSAGING_TOKEN must be set when MESSAGING_BASE_URL is set (the provider's messaging API key or token)",
    );
  }
  const messagingAccountId = read('MESSAGING_ACCOUNT_ID') || undefined;
  if (messagingAccountId !== undefined && !/^[A-Za-z0-9_.:-]{1,128}$/.test(messagingAccountId)) {
    problems.push(
      `MESSAGING_ACCOUNT_ID must be 1 to 128 letters, digits or "_.:-", got ${JSON.stringify(messagingAccountId.slice(0, 32))}`,
    );
  }
  const secret = read('MESSAGING_WEBHOOK_SECRET') || undefined;
  if (secret !== undefined && (secret.length < MIN_WEBHOOK_SECRET_LENGTH || /\s/.test(secret))) {
    // Never echo the value: it is a secret.
    problems.push(
      `MESSAGING_WEBHOOK_SECRET must be at least ${MIN_WEBHOOK_SECRET_LENGTH} characters without spaces, got ${secret.length} characters`,
    );
  }
  if (production && configured && secret === undefined) {
    problems.push(
      "MESSAGING_WEBHOOK_SECRET must be set when NODE_ENV=production and MESSAGING_BASE_URL is set (the token the provider's webhook posts carry)",
    );
  }
  const rcsCountryCode = text('MESSAGING_RCS_COUNTRY_CODE')!;
  const knownCode = COUNTRY_CALLING_CODES.has(rcsCountryCode);
  if (!knownCode) {
    problems.push(
      `MESSAGING_RCS_COUNTRY_CODE must be a country calling code, digits without "+" (e.g. 91 for India, 1 for the US and Canada), got ${JSON.stringify(rcsCountryCode.slice(0, 16))}`,
    );
  }
  return {
    messagingBaseUrl,
    messagingToken,
    messagingAccountId,
    messagingRcsCountryCode: knownCode ? rcsCountryCode : '91',
    messagingWebhookSecret:
      secret !== undefined && secret.length >= MIN_WEBHOOK_SECRET_LENGTH && !/\s/.test(secret)
        ? secret
        : undefined,
  };
}

/** STATE_SECRET_KEY: 32 bytes as 64 hex characters or as base64 (44 characters with padding). */
function parseStateKey(raw: string | undefined, problems: string[]): Buffer | undefined {
  if (raw === undefined || raw === '') return undefined;
  const key = /^[0-9a-fA-F]{64}$/.test(raw)
    ? Buffer.from(raw, 'hex')
    : /^[A-Za-z0-9+/_-]{43}=?$/.test(raw)
      ? Buffer.from(raw, 'base64')
      : undefined;
  if (key?.length !== 32) {
    // Never echo the value: it is a key.
    problems.push(
      `STATE_SECRET_KEY must be 32 bytes as 64 hex characters or base64, got ${raw.length} characters`,
    );
    return undefined;
  }
  return key;
}

/** BOT_WAV_DIR: an existing directory, made absolute (a relative one is taken from the working directory). */
function wavDir(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  const dir = resolve(raw);
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {}
  if (!isDir) {
    problems.push(`BOT_WAV_DIR must be an existing directory, got ${JSON.stringify(raw)}`);
    return undefined;
  }
  return dir;
}

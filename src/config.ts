/**
 * The one validated, frozen configuration. Read once at start-up from the environment (and `--flag`
 * twins); every problem is reported in one message, one line per variable, naming what it accepts.
 */
import { statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { getCountries, getCountryCallingCode } from 'libphonenumber-js';
import { RESAMPLER_RATES } from './audio/format.js';
import { parseTrustProxy, type TrustProxy } from './limits/client-address.js';
import { displayUrl } from './log.js';
import { type BotHostAllowlist, botUrlProblem, parseAllowedHosts } from './media/bot/bot-url.js';

/** Development-only secrets, used when none is configured outside production. */
export const DEV_MEDIA_SECRET = 'voicebridge-dev-media-secret';
export const DEV_AUTH_JWT_SECRET = 'voicebridge-dev-auth-secret';

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly nodeEnv: string;
  readonly production: boolean;
  readonly logLevel: string;
  readonly mediaAuth: 'jwt' | 'none';
  /** Initial media secret of tenant `default`. */
  readonly mediaSecret: string;
  /** True when `mediaSecret` is the built-in development secret. */
  readonly mediaSecretIsDev: boolean;
  readonly authJwtSecret: string | undefined;
  readonly authJwksUrl: string | undefined;
  readonly authSecretIsDev: boolean;
  readonly providerBaseUrl: string | undefined;
  readonly providerToken: string | undefined;
  readonly botUrl: string;
  /** The directory (absolute) a tenant's `bot_url` of `builtin:wav:<path>` must lie in; undefined: refused. */
  readonly botWavDir: string | undefined;
  /** The hosts a tenant's ws/wss `bot_url` may dial (BOT_URL_ALLOWED_HOSTS); `BOT_URL` itself is not limited. */
  readonly botUrlAllowedHosts: BotHostAllowlist;
  readonly botSampleRate: number;
  /** Worker threads for the audio pipeline; 0 runs the DSP inline on the main thread. */
  readonly dspWorkers: number;
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
  /** REST requests per client address per `restRateWindowMs` above which it gets 429. */
  readonly restRateLimit: number;
  readonly restRateWindowMs: number;
  /** Failed REST authentications (401s) per client address per minute; past it 429, no token verified. */
  readonly restAuthFailLimit: number;
  /** Largest REST request body; over it: 413. The largest real body (a media-stream upsert) is < 1 KB. */
  readonly bodyLimitBytes: number;
  /** TRUST_PROXY: proxies whose X-Forwarded-For names the client (limits are per client address). */
  readonly trustProxy: TrustProxy | undefined;

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
   * takes 10-digit mobiles (rcs.md), national numbers of one country, so a call's customer_phone is
   * sent RCS only when it has this code and a 10-digit national number.
   */
  readonly messagingRcsCountryCode: string;
  /** How long message records and webhook dedupe keys are kept. */
  readonly messageRetentionMs: number;
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

export function loadConfig(env: Env = process.env, argv: readonly string[] = []): Config {
  const e: Env = { ...env, ...flagsToEnv(argv) };
  const problems: string[] = [];

  const int = (name: string, dflt: number, min: number, max: number): number => {
    const raw = e[name];
    if (raw === undefined || raw === '') return dflt;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
      return dflt;
    }
    return n;
  };
  const oneOf = <T extends string>(name: string, allowed: readonly T[], dflt: T): T => {
    const raw = e[name];
    if (raw === undefined || raw === '') return dflt;
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
      return dflt;
    }
    return raw as T;
  };
  const url = (name: string, protocols: readonly string[]): string | undefined => {
    const raw = e[name];
    if (raw === undefined || raw === '') return undefined;
    try {
      const u = new URL(raw);
      if (protocols.includes(u.protocol)) return raw;
    } catch {}
    problems.push(`${name} must be a ${protocols.join(' or ')} URL, got ${JSON.stringify(displayUrl(raw))}`);
    return undefined;
  };

  const nodeEnv = e.NODE_ENV ?? 'development';
  const production = nodeEnv === 'production';
  const mediaAuth = oneOf('MEDIA_AUTH', ['jwt', 'none'] as const, 'jwt');
  if (mediaAuth === 'none' && production) {
    problems.push('MEDIA_AUTH must be "jwt" when NODE_ENV=production ("none" is for local development only)');
  }

  let mediaSecret = e.MEDIA_SECRET ?? '';
  const mediaSecretIsDev = mediaSecret === '';
  if (mediaSecretIsDev) {
    if (production && mediaAuth === 'jwt') {
      problems.push(
        'MEDIA_SECRET must be set when NODE_ENV=production (the media secret of tenant "default")',
      );
    }
    mediaSecret = DEV_MEDIA_SECRET;
  }

  let authJwtSecret = e.AUTH_JWT_SECRET || undefined;
  const authJwksUrl = url('AUTH_JWKS_URL', ['https:', 'http:']);
  const authSecretIsDev = authJwtSecret === undefined && authJwksUrl === undefined;
  if (authSecretIsDev) {
    if (production) problems.push('AUTH_JWT_SECRET or AUTH_JWKS_URL must be set when NODE_ENV=production');
    authJwtSecret = DEV_AUTH_JWT_SECRET;
  }

  const botUrl = e.BOT_URL || 'builtin:echo';
  // A bot URL may carry credentials or a ?token=: a bad one is shown as scheme, host and path only.
  const botProblem = botUrlProblem(botUrl);
  if (botProblem !== undefined)
    problems.push(`BOT_URL must be ${botProblem.accepts}, got ${botProblem.shown}`);
  const botWavDir = wavDir(e.BOT_WAV_DIR, problems);
  const allowed = parseAllowedHosts(e.BOT_URL_ALLOWED_HOSTS, production);
  if (typeof allowed === 'string') problems.push(allowed);
  const botUrlAllowedHosts: BotHostAllowlist =
    typeof allowed === 'string' ? { any: false, rules: [] } : allowed;
  const botSampleRate = int('BOT_SAMPLE_RATE', 16000, 8000, 48000);
  if (!(RESAMPLER_RATES as readonly number[]).includes(botSampleRate)) {
    problems.push(`BOT_SAMPLE_RATE must be one of ${RESAMPLER_RATES.join(', ')}, got ${botSampleRate}`);
  }

  const stateStore = e.STATE_STORE || 'memory';
  if (stateStore !== 'memory' && !/^rediss?:\/\/.+/.test(stateStore)) {
    problems.push(
      `STATE_STORE must be "memory" or a redis://… URL, got ${JSON.stringify(displayUrl(stateStore))}`,
    );
  }

  const stateSecretKey = parseStateKey(e.STATE_SECRET_KEY, problems);
  if (production && stateStore !== 'memory' && stateSecretKey === undefined) {
    problems.push(
      'STATE_SECRET_KEY must be set when NODE_ENV=production and STATE_STORE is Redis (32 bytes as 64 hex characters or base64; it encrypts media secrets at rest)',
    );
  }
  const stateKeyPrefix = e.STATE_KEY_PREFIX || 'voicebridge:';
  if (!/^[A-Za-z0-9:_.-]{1,64}$/.test(stateKeyPrefix)) {
    problems.push(
      `STATE_KEY_PREFIX must be 1 to 64 letters, digits or ":_.-", got ${JSON.stringify(stateKeyPrefix)}`,
    );
  }

  const trustProxy = parseTrustProxy(e.TRUST_PROXY);
  if (typeof trustProxy === 'object' && 'problem' in trustProxy) problems.push(trustProxy.problem);

  const providerBaseUrl = url('PROVIDER_BASE_URL', ['https:', 'http:']);
  if (production && providerBaseUrl === undefined && !e.PROVIDER_BASE_URL) {
    problems.push(
      "PROVIDER_BASE_URL must be set when NODE_ENV=production (the provider's voice API; the built-in provider emulator is for development only)",
    );
  }
  const providerReadTimeoutMs = int('PROVIDER_READ_TIMEOUT_MS', 30_000, 30_000, 600_000);
  const messaging = messagingConfig(e, production, url, problems);
  const config: Config = {
    port: int('PORT', 8080, 0, 65535),
    host: e.HOST || '0.0.0.0',
    nodeEnv,
    production,
    logLevel: oneOf(
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
    mediaAuth,
    mediaSecret,
    mediaSecretIsDev,
    authJwtSecret,
    authJwksUrl,
    authSecretIsDev,
    providerBaseUrl,
    providerToken: e.PROVIDER_TOKEN || undefined,
    botUrl,
    botWavDir,
    botUrlAllowedHosts,
    botSampleRate,
    dspWorkers: int('DSP_WORKERS', Math.max(1, availableParallelism() - 1), 0, 64),
    stateStore,
    stateSecretKey,
    stateKeyPrefix,
    // 10 s: heartbeats every third of it, so a crashed instance's calls leave every list within 10 s.
    stateSessionTtlMs: int('STATE_SESSION_TTL_MS', 10_000, 1_000, 60_000),
    maxPayloadBytes: int('MAX_PAYLOAD_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
    paceLeadMs: int('PACE_LEAD_MS', 40, 0, 60),
    // 1 s: a 200 ms bound let the stalls of a loaded 2-core machine add up to 0.5 s of delay (and its
    // queued audio) per call over a 10-minute soak; a catch-up burst of at most 1 s is what providers'
    // playout buffers take. Beyond it a new run starts (a pause between utterances, a very long stall).
    paceCatchUpMs: int('PACE_CATCH_UP_MS', 1_000, 20, 5_000),
    outboundBufferMs: int('OUTBOUND_BUFFER_MS', 60_000, 1000, 600_000),
    socketHighWaterBytes: int('SOCKET_HIGH_WATER_BYTES', 64 * 1024, 4096, 16 * 1024 * 1024),
    heartbeatIntervalMs: int('HEARTBEAT_INTERVAL_MS', 15_000, 1000, 300_000),
    // A provider sends session_start at once; 10 s covers a slow link without letting an idle peer hold a slot.
    sessionStartTimeoutMs: int('SESSION_START_TIMEOUT_MS', 10_000, 100, 600_000),
    drainTimeoutMs: int('DRAIN_TIMEOUT_MS', 30_000, 0, 3_600_000),
    echoDelayMs: int('ECHO_DELAY_MS', 200, 0, 10_000),
    paceMinGapMs: int('PACE_MIN_GAP_MS', 2, 1, 20),
    botRetries: int('BOT_RETRIES', 5, 0, 100),
    botRetryBaseMs: int('BOT_RETRY_BASE_MS', 250, 10, 60_000),
    botConnectTimeoutMs: int('BOT_CONNECT_TIMEOUT_MS', 5_000, 100, 60_000),
    botMaxPayloadBytes: int('BOT_MAX_PAYLOAD_BYTES', 4 * 1024 * 1024, 1024, 64 * 1024 * 1024),
    providerConnectTimeoutMs: int('PROVIDER_CONNECT_TIMEOUT_MS', 5_000, 100, 60_000),
    providerReadTimeoutMs,
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', providerReadTimeoutMs + 5_000, 1_000, 3_600_000),
    // Defaults sized for one busy provider per address (a capacity run ramps 200 calls/s from one address).
    maxSessions: int('MAX_SESSIONS', 2_000, 1, 1_000_000),
    mediaConnectPerSec: int('MEDIA_CONNECT_PER_SEC', 500, 1, 1_000_000),
    restRateLimit: int('REST_RATE_LIMIT', 100, 1, 1_000_000),
    restRateWindowMs: int('REST_RATE_WINDOW_MS', 1_000, 100, 3_600_000),
    // 30 a minute: a client whose token expired fails once and refreshes, a misconfigured one learns
    // why from its first 401, and a neighbour retrying every few seconds behind a shared address does
    // not lock the address out; a flood of bad tokens costs 30 verifications a minute, not 100 a second.
    restAuthFailLimit: int('REST_AUTH_FAIL_LIMIT', 30, 1, 1_000_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 64 * 1024, 1024, 16 * 1024 * 1024),
    trustProxy: typeof trustProxy === 'object' && 'problem' in trustProxy ? undefined : trustProxy,
    ...messaging,
    // 80 per second is the provider's own limit on the message sender (chat.md), per account; above it
    // sends are refused. The limit is kept per instance: several instances on one account set their share.
    messagingSendsPerSec: int('MESSAGING_SENDS_PER_SEC', 80, 1, 80),
    // 48 h: the provider's status events for a message come within a day (delivered, read); a button may
    // be tapped a day later, and a webhook retried after that must still be counted once.
    messageRetentionMs: int('MESSAGE_RETENTION_MS', 48 * 3_600_000, 60_000, 30 * 24 * 3_600_000),
  };
  if (config.requestTimeoutMs <= config.providerReadTimeoutMs) {
    problems.push(
      `REQUEST_TIMEOUT_MS must be above PROVIDER_READ_TIMEOUT_MS (${config.providerReadTimeoutMs}), got ${config.requestTimeoutMs}`,
    );
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/** Every country calling code there is (libphonenumber's metadata): "1", "44", "91", … */
const COUNTRY_CALLING_CODES: ReadonlySet<string> = new Set(
  getCountries().map((c) => getCountryCallingCode(c)),
);

/** Shortest MESSAGING_WEBHOOK_SECRET: a bearer secret shorter than this can be guessed. */
export const MIN_WEBHOOK_SECRET_LENGTH = 16;

/** MESSAGING_*: the provider's messaging API and the secret its webhook posts carry. */
function messagingConfig(
  e: Env,
  production: boolean,
  url: (name: string, protocols: readonly string[]) => string | undefined,
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
  const messagingToken = e.MESSAGING_TOKEN || undefined;
  const configured = messagingBaseUrl !== undefined || !!e.MESSAGING_BASE_URL;
  if (configured && messagingToken === undefined) {
    problems.push(
      "MESSAGING_TOKEN must be set when MESSAGING_BASE_URL is set (the provider's messaging API key or token)",
    );
  }
  const messagingAccountId = e.MESSAGING_ACCOUNT_ID || undefined;
  if (messagingAccountId !== undefined && !/^[A-Za-z0-9_.:-]{1,128}$/.test(messagingAccountId)) {
    problems.push(
      `MESSAGING_ACCOUNT_ID must be 1 to 128 letters, digits or "_.:-", got ${JSON.stringify(messagingAccountId.slice(0, 32))}`,
    );
  }
  const secret = e.MESSAGING_WEBHOOK_SECRET || undefined;
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
  // 91 (India): the country whose 10-digit mobiles rcs.md's launcher takes.
  const rcsCountryCode = e.MESSAGING_RCS_COUNTRY_CODE || '91';
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

/**
 * Every configuration variable, once: name, type, default, accepted values and description, units in
 * the names. `loadConfig` (src/config.ts) parses integers and enumerations from this table alone and
 * reads every other variable through it; docs/configuration.md is generated from it
 * (`npm run docs:config`), and a test fails when the two disagree.
 */
import { RESAMPLER_RATES } from '../audio/format.js';
import { BOT_VARS, PROVIDER_VARS } from './dialect-vars.js';
import { choice, HOUR_MS, int, KIB, MIB, other, type VarSpec } from './spec-types.js';

export type {
  DefaultContext,
  DerivedDefault,
  EnumVar,
  Group,
  IntegerVar,
  OtherVar,
  VarSpec,
} from './spec-types.js';
export { GROUPS } from './spec-types.js';

/** Every variable, in the document's order. */
export const CONFIG_SPEC = [
  // Server
  int(
    'server',
    'PORT',
    'port',
    { min: 0, max: 65_535 },
    8080,
    'The port of the one HTTP server: REST, the media endpoint, health and metrics. 0 picks a free port.',
  ),
  other(
    'server',
    'HOST',
    'text',
    { accepts: 'a host name or IP address', default: '0.0.0.0' },
    'The address the server listens on.',
  ),
  other(
    'server',
    'NODE_ENV',
    'text',
    { accepts: '`production` or anything else', default: 'development' },
    '`production` refuses the development shortcuts: development secrets, `MEDIA_AUTH=none`, the built-in provider emulator, and a Redis store without `STATE_SECRET_KEY`.',
  ),
  choice(
    'server',
    'LOG_LEVEL',
    'logLevel',
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
    'info',
    'The least severe log line written (on standard output, in the `LOG_FORMAT`).',
  ),
  other(
    'server',
    'LOG_FORMAT',
    'text',
    { accepts: '`pretty` or `json`', defaultRule: '`json` when `NODE_ENV=production`, else `pretty`' },
    '`json`: one JSON object a line, for log collectors. `pretty`: coloured lines for a person at a terminal (pino-pretty, loaded only then). Secrets are redacted in both.',
  ),
  int(
    'server',
    'DRAIN_TIMEOUT_MS',
    'drainTimeoutMs',
    { min: 0, max: 3_600_000 },
    30_000,
    'After SIGTERM the bridge takes no new calls (`/readyz` and media upgrades answer 503) and lets live calls run this long, then closes them with 1001.',
  ),
  int(
    'server',
    'REQUEST_TIMEOUT_MS',
    'requestTimeoutMs',
    { min: 1000, max: 3_600_000 },
    {
      rule: '`PROVIDER_READ_TIMEOUT_MS` + 5000',
      value: (c) => c.valueOf('PROVIDER_READ_TIMEOUT_MS') + 5_000,
    },
    "The server's bound on one REST request. It must be above `PROVIDER_READ_TIMEOUT_MS`, so a slow provider gets the bridge's own 504, not a dropped connection.",
  ),

  // Authentication and secrets
  choice(
    'security',
    'MEDIA_AUTH',
    'mediaAuth',
    ['jwt', 'none'],
    'jwt',
    "How the media endpoint checks a provider: a JWT signed with the tenant's media secret, or `none` (local development only; refused in production).",
  ),
  other(
    'security',
    'MEDIA_SECRET',
    'secret',
    { accepts: 'any text', defaultRule: 'a development secret' },
    'The first media secret of tenant `default`; `PUT /v1/media-stream` replaces it. Required in production.',
  ),
  other(
    'security',
    'AUTH_JWT_SECRET',
    'secret',
    { accepts: 'any text', defaultRule: 'a development secret' },
    'The HS256 key of REST bearer tokens. In production this or `AUTH_JWKS_URL` is required.',
  ),
  other(
    'security',
    'AUTH_JWKS_URL',
    'url',
    { accepts: 'an http or https URL' },
    'A JWKS document whose keys verify REST bearer tokens; when set, it is used instead of `AUTH_JWT_SECRET`.',
  ),
  // Tenant `default`'s credentials of each provider dialect (src/dialects/provider/).
  ...PROVIDER_VARS,

  // The provider's voice API
  other(
    'provider',
    'PROVIDER_BASE_URL',
    'url',
    {
      accepts: 'an http or https URL, with its `/v1`',
      defaultRule: 'the built-in emulator (development only)',
    },
    "The provider's voice API, for media-stream registration, consult and conference. Unset outside production, the provider emulator runs in-process and start-up says so; required in production.",
  ),
  other(
    'provider',
    'PROVIDER_TOKEN',
    'secret',
    { accepts: 'any text' },
    "The bearer token sent to the provider's voice API.",
  ),
  int(
    'provider',
    'PROVIDER_CONNECT_TIMEOUT_MS',
    'providerConnectTimeoutMs',
    { min: 100, max: 60_000 },
    5000,
    'How long a connection to the provider may take: an unreachable provider fails fast (503).',
  ),
  int(
    'provider',
    'PROVIDER_READ_TIMEOUT_MS',
    'providerReadTimeoutMs',
    { min: 30_000, max: 600_000 },
    30_000,
    "How long the provider may take to answer (then 504). At least 30 s: the provider's consult holds its answer up to 20 s + 5 s.",
  ),

  // Bots
  // BOT_URL, BOT_DIALECT and the twins of the bot dialects' fields (src/dialects/bot/).
  ...BOT_VARS,
  other(
    'bots',
    'BOT_TOOL_SECRET',
    'secret',
    { accepts: 'a string' },
    "The key the default bot's webhook tool calls are signed with (`X-Voicebridge-Signature`). Never printed. A tenant sets its own as `tool_secret`.",
  ),
  other(
    'bots',
    'BOT_URL_ALLOWED_HOSTS',
    'list',
    {
      accepts: 'host names or IPs, `*.domain`, each with an optional `:port`; or `*`',
      defaultRule: '`*` outside production, none in production',
    },
    "The hosts a tenant's `ws://` or `wss://` `bot_url` may name, checked when it is stored and at each dial, and every other URL a tenant's bot has the bridge call (an `api_base`, the socket its API answers with): comma-separated host names or IP addresses (`bot.example.com`, `10.0.0.5`, `[::1]`), `*.example.com` for its subdomains (not `example.com` itself), each with an optional `:port` (without one, any port), or `*` for any host. In production, unset refuses tenants' ws and wss bots (built-in bots stay allowed), and plain `ws://` needs its host listed by an entry other than `*`. Names are matched, not addresses: list only names whose DNS you control.",
  ),
  other(
    'bots',
    'BOT_WAV_DIR',
    'directory',
    { accepts: 'an existing directory' },
    "The directory a tenant's `builtin:wav:<path>` must lie in (a relative path is taken inside it, `..` out of it is refused). Unset, tenants cannot name a file.",
  ),
  int(
    'bots',
    'BOT_SAMPLE_RATE',
    'botSampleRate',
    { min: 8000, max: 48_000, values: RESAMPLER_RATES },
    16_000,
    'The sample rate of the audio a ws bot sends and receives (PCM16, mono).',
  ),
  int(
    'bots',
    'ECHO_DELAY_MS',
    'echoDelayMs',
    { min: 0, max: 10_000 },
    200,
    'The delay of the `builtin:echo` bot: the caller hears itself this much later, plus the way through the bridge.',
  ),
  int(
    'bots',
    'BOT_RETRIES',
    'botRetries',
    { min: 0, max: 100 },
    5,
    'Redials of a ws bot that cannot be reached or drops, before the call goes on without a bot (the provider gets a `bot_unavailable` error).',
  ),
  int(
    'bots',
    'BOT_RETRY_BASE_MS',
    'botRetryBaseMs',
    { min: 10, max: 60_000 },
    250,
    'The first redial delay; it doubles with each failure, up to 5 s.',
  ),
  int(
    'bots',
    'BOT_CONNECT_TIMEOUT_MS',
    'botConnectTimeoutMs',
    { min: 100, max: 60_000 },
    5000,
    'How long the WebSocket handshake with a ws bot may take.',
  ),
  int(
    'bots',
    'BOT_MAX_PAYLOAD_BYTES',
    'botMaxPayloadBytes',
    { min: KIB, max: 64 * MIB },
    4 * MIB,
    'The largest frame taken from a ws bot: a whole utterance may come at once (4 MiB is about 2 minutes at 16 kHz).',
  ),

  // Media path
  int(
    'media',
    'DSP_WORKERS',
    'dspWorkers',
    { min: 0, max: 64 },
    {
      rule: '0 with 1 CPU; with 2, 1 if `DENOISE=true`, else 0; else CPUs − 1',
      value: (c) =>
        c.cpus <= 1 ? 0 : c.cpus === 2 ? (c.choiceOf('DENOISE') === 'true' ? 1 : 0) : c.cpus - 1,
    },
    "Worker threads for the audio DSP; 0 runs it inline on the main thread. On 2 CPUs a worker thread would only compete with the main thread for the same cores when the DSP is light (resampling: `bench:worker-default` measured it saving the main thread 7-17 % per call and costing the process more), so the default is inline; with `DENOISE=true` the noise suppressor is most of a call's CPU (`bench:denoise`), and one worker takes it to the second core. Above 2 CPUs a worker has a core of its own, so the default is CPUs − 1 workers. Tenants that turn `denoise` on themselves do not change the default: set `DSP_WORKERS=1` for them on 2 CPUs (docs/denoise.md).",
  ),
  choice(
    'media',
    'DENOISE',
    'denoise',
    ['false', 'true'],
    'false',
    'Clean every caller\'s audio with the noise suppressor (RNNoise) before the bot hears it; recordings and listen-in keep the line as it came. With `false`, only the calls of tenants whose media stream has `"denoise": true`. It adds 11-16 ms of delay and about 1.6 % of a core per call (docs/denoise.md).',
  ),
  int(
    'media',
    'MAX_PAYLOAD_BYTES',
    'maxPayloadBytes',
    { min: KIB, max: 16 * MIB },
    64 * KIB,
    'The largest WebSocket message taken from a provider (200 ms of 16 kHz PCM16 as base64 JSON is about 8.6 KB).',
  ),
  // A provider sends session_start at once; 10 s covers a slow link without letting an idle peer hold a slot.
  int(
    'media',
    'SESSION_START_TIMEOUT_MS',
    'sessionStartTimeoutMs',
    { min: 100, max: 600_000 },
    10_000,
    'How long an authenticated media socket may wait before its first frame, the `session_start`; past it the socket is closed with 4400.',
  ),
  int(
    'media',
    'HEARTBEAT_INTERVAL_MS',
    'heartbeatIntervalMs',
    { min: 1000, max: 300_000 },
    15_000,
    'The ping period of media sockets; a socket that misses one ping is ended.',
  ),
  int(
    'media',
    'PACE_LEAD_MS',
    'paceLeadMs',
    { min: 0, max: 60 },
    40,
    'How far ahead of real time audio may be sent to the provider.',
  ),
  // 1 s: a 200 ms bound let the stalls of a loaded 2-core machine add up to 0.5 s of delay (and its
  // queued audio) per call over a 10-minute soak; a catch-up burst of at most 1 s is what providers'
  // playout buffers take. Beyond it a new run starts (a pause between utterances, a very long stall).
  int(
    'media',
    'PACE_CATCH_UP_MS',
    'paceCatchUpMs',
    { min: 20, max: 5000 },
    1000,
    'How far behind its schedule outbound audio may fall (a stall, late bot audio) and still be caught up by sending at once; past it a new run starts at the current time.',
  ),
  int(
    'media',
    'PACE_MIN_GAP_MS',
    'paceMinGapMs',
    { min: 1, max: 20 },
    2,
    'The shortest gap between wake-ups of the one pacing timer shared by all calls.',
  ),
  int(
    'media',
    'OUTBOUND_BUFFER_MS',
    'outboundBufferMs',
    { min: 1000, max: 600_000 },
    60_000,
    'Bot audio held ahead of playout; past it the oldest is shed.',
  ),
  int(
    'media',
    'SOCKET_HIGH_WATER_BYTES',
    'socketHighWaterBytes',
    { min: 4 * KIB, max: 16 * MIB },
    64 * KIB,
    'A provider socket with more than this unsent sheds stale audio instead of queueing it.',
  ),
  other(
    'media',
    'AUDIOSOCKET_PORT',
    'text',
    { accepts: 'a port, 0 to 65535', defaultRule: 'unset: no AudioSocket listener' },
    'The TCP port of the Asterisk AudioSocket listener (dialect `audiosocket`, docs/providers/audiosocket.md). 0 picks a free port.',
  ),
  other(
    'media',
    'AUDIOSOCKET_HOST',
    'text',
    { accepts: 'a host name or IP address', defaultRule: 'the value of `HOST`' },
    'The address the AudioSocket listener binds.',
  ),
  other(
    'media',
    'AUDIOSOCKET_TENANT',
    'text',
    { accepts: 'a tenant id', defaultRule: '`default`' },
    'The tenant whose calls (bot, media-stream config) the AudioSocket listener carries.',
  ),
  other(
    'media',
    'AUDIOSOCKET_ALLOW',
    'list',
    {
      accepts: 'addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`',
      defaultRule: 'empty: every connection refused',
    },
    'The addresses the AudioSocket listener takes connections from, comma-separated (the PBX). AudioSocket carries no credentials, so a connection from any other address is refused and logged; `MEDIA_AUTH=none` does not open it.',
  ),

  // Shared state (several instances)
  other(
    'state',
    'STATE_STORE',
    'text',
    { accepts: '`memory`, `redis://…` or `rediss://…`', default: 'memory' },
    '`memory` keeps state in this instance; `redis://[user:pass@]host:port[/db]` (`rediss://` for TLS) shares sessions, tenants and messages among instances (docs/operations.md).',
  ),
  other(
    'state',
    'STATE_SECRET_KEY',
    'secret',
    { accepts: '32 bytes: 64 hex characters or base64', defaultRule: 'a development key' },
    'The AES-256-GCM key sealing media secrets and bot URLs in Redis; the same on every instance (`openssl rand -hex 32`). Required with Redis in production.',
  ),
  other(
    'state',
    'STATE_KEY_PREFIX',
    'text',
    { accepts: '1 to 64 letters, digits or `:_.-`', default: 'voicebridge:' },
    'The prefix of every Redis key and channel, so several deployments can share one Redis.',
  ),
  // 10 s: heartbeats every third of it, so a crashed instance's calls leave every list within 10 s.
  int(
    'state',
    'STATE_SESSION_TTL_MS',
    'stateSessionTtlMs',
    { min: 1000, max: 60_000 },
    10_000,
    "How long a session's Redis entry lives without its instance's heartbeat (sent every third of it): the longest a crashed instance's calls stay listed.",
  ),

  // Limits
  // Sized for one busy provider per address (a capacity run ramps 200 calls/s from one address).
  int(
    'limits',
    'MAX_SESSIONS',
    'maxSessions',
    { min: 1, max: 1_000_000 },
    2000,
    'Live media connections; past it an upgrade is refused with 503 (`capacity`) before the upgrade.',
  ),
  int(
    'limits',
    'MEDIA_CONNECT_PER_SEC',
    'mediaConnectPerSec',
    { min: 1, max: 1_000_000 },
    500,
    'Media upgrade attempts per client address per second; past it 429 (`too_many_requests`) before the upgrade. The defaults suit one busy provider per address.',
  ),
  int(
    'limits',
    'MEDIA_BAD_FRAMES_PER_SEC',
    'mediaBadFramesPerSec',
    { min: 1, max: 1_000_000 },
    500,
    'Bad frames a provider socket may send within one second (each answered, counted and skipped); past it the call ends and the socket closes with 1008 (`bad_frame_flood`). 10x the frames of a 20 ms stream.',
  ),
  int(
    'limits',
    'REST_RATE_LIMIT',
    'restRateLimit',
    { min: 1, max: 1_000_000 },
    100,
    'REST requests per client address per `REST_RATE_WINDOW_MS`; past it 429 with `Retry-After`. `/healthz`, `/readyz`, `/metrics` and `/docs` are not limited.',
  ),
  int(
    'limits',
    'REST_RATE_WINDOW_MS',
    'restRateWindowMs',
    { min: 100, max: 3_600_000 },
    1000,
    'The window of `REST_RATE_LIMIT`.',
  ),
  // 30 a minute: a client whose token expired fails once and refreshes, a misconfigured one learns why
  // from its first 401, and a neighbour retrying every few seconds behind a shared address does not lock
  // the address out; a flood of bad tokens costs 30 verifications a minute, not 100 a second.
  int(
    'limits',
    'REST_AUTH_FAIL_LIMIT',
    'restAuthFailLimit',
    { min: 1, max: 1_000_000 },
    30,
    'Failed REST authentications (401) per client address per minute; past it the address gets 429 with `Retry-After`, no token checked, until its minute ends.',
  ),
  int(
    'limits',
    'BODY_LIMIT_BYTES',
    'bodyLimitBytes',
    { min: KIB, max: 16 * MIB },
    64 * KIB,
    'The largest REST request body; past it 413 (`payload_too_large`). Campaign routes take up to 2 MiB.',
  ),
  other(
    'limits',
    'TRUST_PROXY',
    'list',
    { accepts: 'addresses, CIDR ranges, `loopback`, `linklocal`, `uniquelocal`' },
    'The proxies in front of the bridge, comma-separated. The client address of both per-address limits is then the nearest untrusted one in `X-Forwarded-For`; unset, that header is ignored. A hop count is not accepted: it would trust any client that connects directly.',
  ),

  // Messaging
  other(
    'messaging',
    'MESSAGING_BASE_URL',
    'url',
    {
      accepts: 'an http or https URL, with its `/v1`',
      defaultRule: 'the built-in emulator outside production',
    },
    "The provider's messaging API (chat and RCS). Unset outside production, the in-process emulator stands in; unset in production, the messaging routes answer 503.",
  ),
  other(
    'messaging',
    'MESSAGING_TOKEN',
    'secret',
    { accepts: 'an API key, account token or JWT' },
    'The bearer credential of the messaging API; required when `MESSAGING_BASE_URL` is set.',
  ),
  other(
    'messaging',
    'MESSAGING_ACCOUNT_ID',
    'text',
    { accepts: '1 to 128 letters, digits or `_.:-`' },
    'Sent as `account_id` when the token is linked to several accounts.',
  ),
  other(
    'messaging',
    'MESSAGING_WEBHOOK_SECRET',
    'secret',
    { accepts: 'at least 16 characters, no spaces' },
    "What the provider's webhook posts must carry (`Authorization: Bearer …` or `?token=`). Required in production when `MESSAGING_BASE_URL` is set; unset outside production, posts need none and start-up says so.",
  ),
  other(
    'messaging',
    'MESSAGING_RCS_COUNTRY_CODE',
    'text',
    { accepts: 'a country calling code, digits without `+`', default: '91' },
    "The country of the numbers RCS messages go to: the RCS launcher takes 10-digit mobiles, national numbers of one country, so a call's RCS send needs a number of this code with a 10-digit national number. 91 is India, whose mobiles have 10 digits.",
  ),
  int(
    'messaging',
    'MESSAGING_SENDS_PER_SEC',
    'messagingSendsPerSec',
    { min: 1, max: 80 },
    80,
    'Sends per second this instance allows itself. The provider allows 80 per account and refuses more: with several instances on one account, give each 80 divided by their number.',
  ),
  int(
    'messaging',
    'MESSAGE_RETENTION_MS',
    'messageRetentionMs',
    { min: 60_000, max: 30 * 24 * HOUR_MS },
    48 * HOUR_MS,
    "How long message records, saved campaigns and webhook dedupe keys are kept. 48 h: a message's status events come within a day and a button may be tapped a day later; a webhook retried after that must still count once.",
  ),

  // Recordings
  choice(
    'recordings',
    'RECORD_CALLS',
    'recordCalls',
    ['false', 'true'],
    'false',
    'Record every call: a stereo WAV per call, the caller left and the bot right, at the caller\'s rate. With `false`, only the calls of tenants whose media stream has `"recording": true`.',
  ),
  other(
    'recordings',
    'RECORDINGS_DIR',
    'directory',
    { accepts: 'a directory path (created when missing)', default: './recordings' },
    "Where recordings are written: a folder per tenant, each recording a `.wav` and its metadata in a `.json` beside it. A relative path is taken from the working directory. Instances that should list and serve each other's recordings need one shared volume here.",
  ),
  int(
    'recordings',
    'RECORDINGS_RETENTION_DAYS',
    'recordingsRetentionDays',
    { min: 0, max: 3650 },
    30,
    'Recordings last written longer ago than this many days are removed, at start-up and every hour after. 0 keeps them until deleted through the API.',
  ),
] as const satisfies readonly VarSpec[];

type Row = (typeof CONFIG_SPEC)[number];
type LiteralName<R> = R extends { readonly name: infer N extends string }
  ? string extends N
    ? never
    : N
  : never;
/**
 * The name of a configuration variable: `loadConfig` reads no other. The table's own rows by name, and
 * the two bot rows config.ts reads by name; every other row the dialects declare (a string to the
 * compiler) is read by a loop over the registry, by the name it declares.
 */
export type VarName = LiteralName<Row> | 'BOT_URL' | 'BOT_DIALECT';

/**
 * `GET/PUT /v1/media-stream` (scope `media:manage`): the tenant's registered media stream.
 *
 * `media_secret` is write-only: it is stored, forwarded to the provider, and used from then on to verify
 * the tenant's media tokens, but never returned or logged; reads show `secret_hint` only. A PUT changes
 * local state only after the provider (when one is configured) has accepted the upsert, so the bridge and
 * the provider never disagree about the secret the provider signs with.
 *
 * `bot_url` is ours (not in the provider's MediaStreamUpsert, so never forwarded): the tenant's bot, dialled
 * at each session_start instead of the bridge's `BOT_URL`. Like every optional field, a PUT that leaves it
 * out (or sends null) stores none, so the bridge's `BOT_URL` applies. Reads show it with credentials masked.
 * `bot` is its long form (bot-field.ts): a dialect and the dialect's settings; one or the other, not both.
 * `recording` (ours, never forwarded): true records the tenant's calls (src/recording/); reads show it.
 * `denoise` (ours, never forwarded): true cleans the tenant's callers' audio for the bot (docs/denoise.md).
 *
 * `provider_auth` is ours too: the tenant's credentials for the platforms in front (provider-auth.ts),
 * write-only like `media_secret`. Unlike the other fields it is a change, not a replacement: a PUT that
 * leaves it out keeps what is stored, and one that gives it replaces only the dialects it names (null
 * removes one). Reads show only which dialects are configured.
 */
import type { FastifyInstance } from 'fastify';
import {
  CHUNK_BYTES_MAX,
  CHUNK_BYTES_MIN,
  CODEC_NAMES_ACCEPTED,
  parseChunkBytes,
  parseCodec,
  parseEncoding,
  parseTelephonyRate,
} from '../audio/format.js';
import type { RestVerifier } from '../auth/jwt.js';
import {
  shownBotUrl,
  TENANT_BOT_URL_ACCEPTS,
  type TenantBotPolicy,
  tenantBotUrlProblem,
} from '../config/bot-url.js';
import type { BridgeContext } from '../context.js';
import { BOT_DIALECTS } from '../dialects/index.js';
import { BridgeError, invalidField } from '../errors.js';
import { displayUrl } from '../log.js';
import { resolveFormat } from '../media/format.js';
import { PROVIDER_AUTH_ACCEPTS, providerAuthFromUpsert } from '../media/providers/provider-auth.js';
import type { MediaStreamUpsert } from '../provider/types.js';
import type { MediaStreamConfig, ProviderAuth } from '../state/types.js';
import {
  BOT_READ_SCHEMA,
  BOT_UPSERT_SCHEMA,
  botFromUpsert,
  botReadFields,
  dropNullFields,
  unsignedWebhookTool,
} from './bot-field.js';
import { principal, scopeGuard } from './guard.js';
import { BEARER, errorResponses } from './schemas.js';
import { rejectUnknownFields, useUniformValidation } from './validation.js';

const WS_URL_ACCEPTS = 'a ws:// or wss:// URL';

/** What a read shows for a stored bot_url this instance cannot unseal (its calls get no bot). */
const UNREADABLE_BOT_URL = '(stored, but this instance cannot unseal it: check STATE_SECRET_KEY)';

const UPSERT_SCHEMA = {
  type: 'object',
  properties: {
    media_ws_url: { type: 'string', pattern: '^wss?://.+', maxLength: 2048, description: WS_URL_ACCEPTS },
    codec: { type: 'string', maxLength: 32, description: CODEC_NAMES_ACCEPTED },
    input_sample_rate: { type: 'integer', enum: [8000, 16000], description: '8000 or 16000' },
    output_sample_rate: { type: 'integer', enum: [8000, 16000], description: '8000 or 16000' },
    channels: { type: 'integer', enum: [1], description: '1 (mono)' },
    encoding: { type: 'string', enum: ['binary', 'base64'], description: '"binary" or "base64"' },
    chunk_bytes: {
      type: 'integer',
      minimum: CHUNK_BYTES_MIN,
      maximum: CHUNK_BYTES_MAX,
      multipleOf: 2,
      description: `an even integer from ${CHUNK_BYTES_MIN} to ${CHUNK_BYTES_MAX}`,
    },
    media_secret: {
      type: 'string',
      minLength: 8,
      maxLength: 512,
      writeOnly: true,
      description: 'a string of 8 to 512 characters (write-only)',
    },
    tool_secret: {
      type: 'string',
      minLength: 16,
      maxLength: 512,
      writeOnly: true,
      description:
        "a string of 16 to 512 characters (write-only): the key the bot's webhook tool calls are signed with (X-Voicebridge-Signature); kept until replaced",
    },
    // Its length is checked in botUrlFromUpsert: a schema error would quote the start of the value,
    // which may be a URL's credentials.
    bot_url: { type: 'string', nullable: true, description: TENANT_BOT_URL_ACCEPTS },
    bot: BOT_UPSERT_SCHEMA,
    recording: {
      type: 'boolean',
      nullable: true,
      description:
        "true: the tenant's calls are recorded (GET /v1/recordings); false or left out: only with RECORD_CALLS",
    },
    denoise: {
      type: 'boolean',
      nullable: true,
      description:
        "true or false: true cleans the caller's audio with the noise suppressor before the bot hears it (recordings keep it as carried); left out: only with DENOISE",
    },
    // Checked in full before the schema (providerAuthFromUpsert), so no nested field is stripped unseen.
    provider_auth: {
      type: 'object',
      additionalProperties: true,
      writeOnly: true,
      description: PROVIDER_AUTH_ACCEPTS,
    },
  },
  required: ['media_ws_url'],
} as const;

const UPSERT_FIELDS = Object.keys(UPSERT_SCHEMA.properties);

const CONFIG_SCHEMA = {
  type: 'object',
  description: 'The registered media stream; never the secret',
  properties: {
    tenant: { type: 'string' },
    media_ws_url: { type: 'string' },
    codec: { type: 'string' },
    input_sample_rate: { type: 'integer' },
    output_sample_rate: { type: 'integer' },
    channels: { type: 'integer' },
    encoding: { type: 'string' },
    chunk_bytes: { type: 'integer' },
    secret_hint: { type: 'string', description: 'the last 2 characters of the secret at most' },
    tool_secret_hint: {
      type: 'string',
      description: 'the last 2 characters of the tool secret at most; absent when none is set',
    },
    bot_url: {
      type: 'string',
      nullable: true,
      description:
        "the tenant's bot, credentials and query values masked (****); null: the bridge's BOT_URL applies; " +
        `"${UNREADABLE_BOT_URL}": one is stored but this instance cannot read it, and the tenant's calls get no bot`,
    },
    bot: BOT_READ_SCHEMA,
    recording: {
      type: 'boolean',
      description: "whether the tenant's calls are recorded (RECORD_CALLS records all)",
    },
    denoise: {
      type: 'boolean',
      description: "whether the tenant's callers are denoised for the bot (DENOISE denoises all)",
    },
    provider_auth: {
      type: 'object',
      description:
        'the dialects the tenant has provider credentials for, each {"configured": true} (never the credentials); ' +
        '"unreadable": true where they are stored but this instance cannot unseal them (that dialect refuses the tenant)',
      additionalProperties: {
        type: 'object',
        properties: { configured: { type: 'boolean' }, unreadable: { type: 'boolean' } },
      },
    },
    bot_unreadable: {
      type: 'boolean',
      description:
        "present (true) when the tenant's bot is stored but this instance cannot unseal it (check STATE_SECRET_KEY): its calls get no bot",
    },
  },
} as const;

/** At most the last 2 characters, and none of a short secret, behind a mask that hides the length. */
export function secretHint(secret: string | undefined): string | undefined {
  if (secret === undefined) return undefined;
  return secret.length >= 12 ? `****${secret.slice(-2)}` : '****';
}

/** The stored config of an upsert: only the fields the request gave (validated and normalised); the
 * rest are resolved at each session_start, so the contract's defaults (20 ms at the session's rate) apply. */
export function configFromUpsert(tenant: string, body: Record<string, unknown>): MediaStreamConfig {
  const url = body.media_ws_url;
  try {
    const u = new URL(String(url));
    if (u.protocol !== 'ws:' && u.protocol !== 'wss:') throw new Error('scheme');
  } catch {
    throw invalidField('media_ws_url', WS_URL_ACCEPTS, url);
  }
  return {
    tenant,
    media_ws_url: String(url),
    ...(body.codec !== undefined && { codec: parseCodec(body.codec) }),
    ...(body.input_sample_rate !== undefined && {
      input_sample_rate: parseTelephonyRate(body.input_sample_rate, 'input_sample_rate'),
    }),
    ...(body.output_sample_rate !== undefined && {
      output_sample_rate: parseTelephonyRate(body.output_sample_rate, 'output_sample_rate'),
    }),
    channels: 1,
    ...(body.encoding !== undefined && { encoding: parseEncoding(body.encoding) }),
    ...(body.chunk_bytes !== undefined && { chunk_bytes: parseChunkBytes(body.chunk_bytes) }),
  };
}

const BOT_URL_MAX_CHARS = 2048;

/** The tenant's own bot from an upsert: the `BOT_URL` rules, a ws/wss host BOT_URL_ALLOWED_HOSTS allows,
 * a tone within the bot's band, a WAV file only inside BOT_WAV_DIR. Undefined (none: the bridge's
 * `BOT_URL`) when left out or null. */
export function botUrlFromUpsert(body: Record<string, unknown>, policy: TenantBotPolicy): string | undefined {
  const raw = body.bot_url;
  if (raw === undefined || raw === null) return undefined;
  const url = String(raw);
  if (url.length > BOT_URL_MAX_CHARS) {
    throw new BridgeError(
      'invalid_field',
      `bot_url must be at most ${BOT_URL_MAX_CHARS} characters, got ${url.length}`,
      { field: 'bot_url' },
    );
  }
  const problem = tenantBotUrlProblem(url, policy);
  if (problem !== undefined) {
    throw new BridgeError('invalid_field', `bot_url must be ${problem.accepts}, got ${problem.shown}`, {
      field: 'bot_url',
    });
  }
  return url;
}

/** The config as reads show it: the stored fields, and for those left out the values a session_start
 * without a `media` object gets (`bot_url`, ours, is not among them). */
export function effectiveConfig(
  config: MediaStreamConfig,
): Required<
  Omit<
    MediaStreamConfig,
    'bot_url' | 'bot_url_unreadable' | 'bot' | 'bot_unreadable' | 'recording' | 'denoise'
  >
> {
  const f = resolveFormat(undefined, config);
  return {
    tenant: config.tenant,
    media_ws_url: config.media_ws_url,
    codec: f.codec,
    input_sample_rate: f.inputRate,
    output_sample_rate: f.outputRate,
    channels: 1,
    encoding: f.encoding,
    chunk_bytes: f.chunkBytes,
  };
}

/** The provider's MediaStreamUpsert fields the caller wrote, as written (the provider applies its own
 * defaults and codec names); `channels`, `bot_url` and `bot`, ours only, are left out. */
function forwardedUpsert(body: Record<string, unknown>): MediaStreamUpsert {
  const out: Record<string, unknown> = {};
  for (const k of PROVIDER_UPSERT_FIELDS) if (body[k] !== undefined) out[k] = body[k];
  return out as unknown as MediaStreamUpsert;
}

const PROVIDER_UPSERT_FIELDS = [
  'media_ws_url',
  'codec',
  'input_sample_rate',
  'output_sample_rate',
  'encoding',
  'chunk_bytes',
  'media_secret',
] as const;

/** Which dialects have credentials stored: never the credentials themselves. */
export function providerAuthView(
  auth: ProviderAuth,
): Record<string, { configured: true; unreadable?: true }> {
  const out: Record<string, { configured: true; unreadable?: true }> = {};
  for (const dialect of Object.keys(auth).sort())
    out[dialect] =
      auth[dialect] === 'unreadable' ? { configured: true, unreadable: true } : { configured: true };
  return out;
}

/** A stored config as GET and PUT answer with it: effective values, the secret's hint, the masked bot. */
function readView(
  config: MediaStreamConfig,
  secret: string | undefined,
  auth: ProviderAuth,
  toolSecret: string | undefined,
) {
  return {
    ...effectiveConfig(config),
    secret_hint: secretHint(secret),
    tool_secret_hint: secretHint(toolSecret),
    recording: config.recording === true,
    denoise: config.denoise === true,
    bot_url:
      config.bot_url !== undefined
        ? shownBotUrl(config.bot_url)
        : config.bot_url_unreadable === true
          ? UNREADABLE_BOT_URL
          : null,
    ...botReadFields(config),
    provider_auth: providerAuthView(auth),
  };
}

export function registerMediaStreamRoutes(
  app: FastifyInstance,
  ctx: BridgeContext,
  verify: RestVerifier,
): void {
  app.register(async (scope) => {
    useUniformValidation(scope);
    const guard = scopeGuard(verify, 'media:manage');

    scope.get(
      '/v1/media-stream',
      {
        onRequest: guard,
        schema: {
          tags: ['media-stream'],
          summary: "The token tenant's registered media stream",
          security: BEARER,
          response: { 200: CONFIG_SCHEMA, ...errorResponses(401, 403, 404) },
        },
      },
      async (req) => {
        const { tenant } = principal(req);
        const config = await ctx.tenants.getMediaStream(tenant);
        if (config === undefined) {
          throw new BridgeError(
            'not_found',
            `tenant "${tenant}" has no media stream registered: PUT /v1/media-stream first`,
          );
        }
        return readView(
          config,
          await ctx.tenants.getMediaSecret(tenant),
          await ctx.tenants.getProviderAuth(tenant),
          await ctx.tenants.getToolSecret(tenant),
        );
      },
    );

    scope.put(
      '/v1/media-stream',
      {
        onRequest: guard,
        preValidation: [
          rejectUnknownFields(UPSERT_FIELDS),
          // `bot` is checked in full before the schema, so a 400 names the field inside it.
          async (req) => {
            const body = req.body;
            if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
              botFromUpsert(body as Record<string, unknown>, ctx.config);
              dropNullFields((body as Record<string, unknown>).bot);
              providerAuthFromUpsert(body as Record<string, unknown>);
            }
          },
        ],
        schema: {
          tags: ['media-stream'],
          summary: 'Register or update the media stream; forwarded to the provider when one is configured',
          description:
            'The upsert replaces the stored config: a field left out takes its default. `bot_url` is the ' +
            "bridge's own extension: the tenant's bot, dialled at each session_start instead of the bridge's " +
            'BOT_URL; stored here, never forwarded to the provider; left out or null, BOT_URL applies. ' +
            'A ws:// or wss:// bot_url must name a host the operator lists in BOT_URL_ALLOWED_HOSTS ' +
            '(in production none unless listed, and plain ws:// only to a host listed by name). ' +
            `\`bot\` is the long form (not with bot_url): a dialect (${BOT_DIALECTS.join(', ')}) ` +
            "and that dialect's settings; its api_key is write-only (reads show api_key_hint), and its url " +
            "follows the bot_url rules. `provider_auth` (ours, never forwarded) holds the tenant's credentials " +
            'for the platforms in front, by dialect; write-only; left out, what is stored stays; a dialect ' +
            "given replaces that dialect's, null removes it. Reads show only which dialects are configured.",
          security: BEARER,
          body: UPSERT_SCHEMA,
          response: { 200: CONFIG_SCHEMA, ...errorResponses(400, 401, 403, 502, 503, 504) },
        },
      },
      async (req) => {
        const { tenant } = principal(req);
        const body = req.body as Record<string, unknown>;
        const bot_url = botUrlFromUpsert(body, ctx.config);
        const bot = botFromUpsert(body, ctx.config);
        const config: MediaStreamConfig = {
          ...configFromUpsert(tenant, body),
          ...(bot_url !== undefined && { bot_url }),
          ...(bot !== undefined && { bot }),
          ...(body.recording === true && { recording: true }),
          ...(body.denoise === true && { denoise: true }),
        };
        const providerAuth = providerAuthFromUpsert(body);
        const secret = typeof body.media_secret === 'string' ? body.media_secret : undefined;
        const toolSecret = typeof body.tool_secret === 'string' ? body.tool_secret : undefined;
        // A webhook tool's calls are signed: a key must be there before the first call needs it.
        const unsigned = unsignedWebhookTool(
          bot,
          toolSecret ??
            (await ctx.tenants.getToolSecret(tenant)) ??
            (tenant === 'default' ? ctx.config.botToolSecret : undefined),
        );
        if (unsigned !== undefined) throw unsigned;
        if (ctx.provider !== undefined) await ctx.provider.putMediaStream(forwardedUpsert(body));
        await ctx.tenants.putMediaStream(config, secret, providerAuth, toolSecret);
        req.log.info(
          {
            tenant,
            media_ws_url: displayUrl(config.media_ws_url),
            bot_url: bot_url === undefined ? null : shownBotUrl(bot_url),
            // Never the api key, the parameters or the instructions: the dialect and where it is.
            bot:
              bot === undefined
                ? null
                : { dialect: bot.dialect, ...(bot.url !== '' && { url: shownBotUrl(bot.url) }) },
            secret_changed: secret !== undefined,
            tool_secret_changed: toolSecret !== undefined,
            recording: config.recording === true,
            denoise: config.denoise === true,
            // The dialects whose credentials changed (null: removed), never the credentials.
            provider_auth_changed:
              providerAuth === undefined
                ? null
                : Object.fromEntries(
                    Object.entries(providerAuth).map(([d, c]) => [d, c === null ? 'removed' : 'set']),
                  ),
          },
          'media stream registered',
        );
        return readView(
          config,
          await ctx.tenants.getMediaSecret(tenant),
          await ctx.tenants.getProviderAuth(tenant),
          await ctx.tenants.getToolSecret(tenant),
        );
      },
    );
  });
}

/**
 * A tenant's credentials for the platforms in front of the bridge (`provider_auth` in
 * `PUT /v1/media-stream`): one object per dialect, in that platform's own words, checked here in full.
 *
 *   twilio    {auth_token}            the account's auth token, which keys X-Twilio-Signature
 *   telnyx    {stream_auth_token}     the stream's `stream_auth_token` (x-telnyx-streaming-auth-token)
 *   plivo     {token}                 ours (Plivo has none): ?token= in the stream URL, or a Bearer
 *   exotel    {username, password}    the applet's `wss://KEY:TOKEN@…` (HTTP Basic)
 *   vonage    {token} and/or {allow}  ours (Vonage has none): a Bearer the NCCO's headers carry, and/or
 *                                     the addresses (IPs or CIDR ranges) Vonage connects from
 *   jambonz   {username, password}    `listen`'s wsAuth (HTTP Basic)
 *   asterisk  {username, password}    websocket_client.conf's username and password (HTTP Basic)
 *
 * Secrets are write-only: stored sealed (src/state/), never returned, logged or quoted in an error.
 * Tenant `default` falls back to the environment (TWILIO_AUTH_TOKEN, TELNYX_STREAM_AUTH_TOKEN,
 * PLIVO_STREAM_TOKEN, EXOTEL_STREAM_USER and EXOTEL_STREAM_PASSWORD, VONAGE_STREAM_TOKEN,
 * JAMBONZ_WS_USERNAME and JAMBONZ_WS_PASSWORD, ASTERISK_WS_USERNAME and ASTERISK_WS_PASSWORD) for a dialect
 * it has stored nothing for.
 */
import { BlockList, isIP } from 'node:net';
import { DEFAULT_TENANT } from '../../auth/jwt.js';
import type { Config } from '../../config.js';
import type { BridgeContext } from '../../context.js';
import { BridgeError, describe } from '../../errors.js';
import type { ProviderAuthPatch, ProviderCredential } from '../../state/types.js';

export type { ProviderCredential } from '../../state/types.js';

/** The dialects `provider_auth` takes, keyed by the path's last word (CONTRACT §7). */
export const PROVIDER_AUTH_DIALECTS = [
  'twilio',
  'telnyx',
  'plivo',
  'exotel',
  'vonage',
  'jambonz',
  'asterisk',
] as const;
export type ProviderAuthDialect = (typeof PROVIDER_AUTH_DIALECTS)[number];

type FieldKind = 'secret' | 'name' | 'allow';

/** Each dialect's fields: all required, or with `atLeastOne` any of them (Vonage's token and/or allow). */
const SPECS: Readonly<
  Record<ProviderAuthDialect, { fields: Readonly<Record<string, FieldKind>>; atLeastOne?: true }>
> = {
  twilio: { fields: { auth_token: 'secret' } },
  telnyx: { fields: { stream_auth_token: 'secret' } },
  plivo: { fields: { token: 'secret' } },
  exotel: { fields: { username: 'name', password: 'secret' } },
  vonage: { fields: { token: 'secret', allow: 'allow' }, atLeastOne: true },
  jambonz: { fields: { username: 'name', password: 'secret' } },
  asterisk: { fields: { username: 'name', password: 'secret' } },
};

const SECRET_MIN = 8;
const SECRET_MAX = 512;
const NAME_MAX = 256;
const ALLOW_MAX = 64;

const SECRET_ACCEPTS = `a string of ${SECRET_MIN} to ${SECRET_MAX} characters (write-only)`;
const NAME_ACCEPTS = `a string of 1 to ${NAME_MAX} characters`;
const ALLOW_ACCEPTS = `an array of 1 to ${ALLOW_MAX} IP addresses or CIDR ranges (e.g. "203.0.113.0/24")`;

/** What one dialect's object takes, for errors and the API description. */
function dialectAccepts(dialect: ProviderAuthDialect): string {
  const spec = SPECS[dialect];
  const names = Object.keys(spec.fields);
  return spec.atLeastOne === true
    ? `an object with ${names.join(' and/or ')}`
    : `an object with ${names.join(' and ')}`;
}

export const PROVIDER_AUTH_ACCEPTS =
  `an object keyed by dialect (${PROVIDER_AUTH_DIALECTS.join(', ')}), each value that platform's credentials ` +
  `(twilio {auth_token}, telnyx {stream_auth_token}, plivo {token}, exotel {username, password}, ` +
  'vonage {token} and/or {allow: [addresses or CIDR ranges]}, jambonz {username, password}, asterisk {username, password}) ' +
  'or null to remove that dialect; dialects left out keep what is stored (write-only)';

/** What a value is, never what it says: anything under provider_auth may be a secret. */
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return `a ${typeof v}`;
}

function fieldError(field: string, message: string): BridgeError {
  return new BridgeError('invalid_field', message, { field });
}

/** An IP address or CIDR range, as `BlockList` takes it; undefined when it is neither. */
function parseRange(text: string): { net: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const slash = text.indexOf('/');
  const net = slash < 0 ? text : text.slice(0, slash);
  const version = isIP(net);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  if (prefix > max) return undefined;
  return { net, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

function parseAllow(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > ALLOW_MAX)
    throw fieldError(field, `${field} must be ${ALLOW_ACCEPTS}, got ${kindOf(v)}`);
  return v.map((item, i) => {
    if (typeof item !== 'string' || item.length > 64 || parseRange(item) === undefined)
      throw fieldError(
        `${field}[${i}]`,
        `${field}[${i}] must be an IP address or CIDR range, got ${describe(item)}`,
      );
    return item;
  });
}

function parseCredential(dialect: ProviderAuthDialect, raw: unknown): ProviderCredential {
  const at = `provider_auth.${dialect}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw fieldError(
      at,
      `${at} must be ${dialectAccepts(dialect)}, or null to remove it, got ${kindOf(raw)}`,
    );
  const spec = SPECS[dialect];
  const given = raw as Record<string, unknown>;
  for (const key of Object.keys(given))
    if (!Object.hasOwn(spec.fields, key))
      throw fieldError(
        `${at}.${key.slice(0, 64)}`,
        `unknown field "${at}.${key.slice(0, 64)}"; ${at} must be ${dialectAccepts(dialect)}`,
      );
  const out: Record<string, unknown> = {};
  for (const [key, kind] of Object.entries(spec.fields)) {
    const v = given[key];
    const field = `${at}.${key}`;
    if (v === undefined) {
      if (spec.atLeastOne === true) continue;
      throw fieldError(field, `${field} is required: ${at} must be ${dialectAccepts(dialect)}`);
    }
    if (kind === 'allow') out[key] = parseAllow(v, field);
    else if (kind === 'name') {
      if (typeof v !== 'string' || v === '' || v.length > NAME_MAX || v.includes(':'))
        throw fieldError(field, `${field} must be ${NAME_ACCEPTS} without ":"`);
      out[key] = v;
    } else {
      // A secret is never quoted back, not even when it is wrong.
      if (typeof v !== 'string' || v.length < SECRET_MIN || v.length > SECRET_MAX)
        throw fieldError(field, `${field} must be ${SECRET_ACCEPTS}`);
      out[key] = v;
    }
  }
  if (Object.keys(out).length === 0)
    throw fieldError(at, `${at} must be ${dialectAccepts(dialect)}, got an empty object`);
  return out as ProviderCredential;
}

/**
 * `provider_auth` from an upsert, checked in full: undefined when left out (what is stored stays), else
 * each dialect given with its credential, or null to remove it.
 */
export function providerAuthFromUpsert(body: Record<string, unknown>): ProviderAuthPatch | undefined {
  const raw = body.provider_auth;
  if (raw === undefined) return undefined;
  if (raw === null)
    throw fieldError(
      'provider_auth',
      'provider_auth must be an object keyed by dialect, got null; to remove one dialect\'s credentials give that dialect null, e.g. {"twilio": null}',
    );
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw fieldError('provider_auth', `provider_auth must be ${PROVIDER_AUTH_ACCEPTS}, got ${kindOf(raw)}`);
  const patch: Record<string, ProviderCredential | null> = {};
  for (const [dialect, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!(PROVIDER_AUTH_DIALECTS as readonly string[]).includes(dialect))
      throw fieldError(
        `provider_auth.${dialect.slice(0, 64)}`,
        `unknown dialect "provider_auth.${dialect.slice(0, 64)}"; provider_auth takes ${PROVIDER_AUTH_DIALECTS.join(', ')}`,
      );
    patch[dialect] = value === null ? null : parseCredential(dialect as ProviderAuthDialect, value);
  }
  return patch;
}

/** Tenant `default`'s credential from the environment, where the dialect has an env twin. */
export function envCredential(config: Config, dialect: ProviderAuthDialect): ProviderCredential | undefined {
  switch (dialect) {
    case 'twilio':
      return config.twilioAuthToken === undefined ? undefined : { auth_token: config.twilioAuthToken };
    case 'telnyx':
      return config.telnyxStreamAuthToken === undefined
        ? undefined
        : { stream_auth_token: config.telnyxStreamAuthToken };
    case 'plivo':
      return config.plivoStreamToken === undefined ? undefined : { token: config.plivoStreamToken };
    case 'exotel':
      return config.exotelStreamUser === undefined || config.exotelStreamPassword === undefined
        ? undefined
        : { username: config.exotelStreamUser, password: config.exotelStreamPassword };
    case 'vonage':
      return config.vonageStreamToken === undefined ? undefined : { token: config.vonageStreamToken };
    case 'jambonz':
      return config.jambonzWsUsername === undefined || config.jambonzWsPassword === undefined
        ? undefined
        : { username: config.jambonzWsUsername, password: config.jambonzWsPassword };
    case 'asterisk':
      return config.asteriskWsUsername === undefined || config.asteriskWsPassword === undefined
        ? undefined
        : { username: config.asteriskWsUsername, password: config.asteriskWsPassword };
  }
}

/**
 * The credential `tenant`'s `dialect` streams are checked against: the tenant's stored one, else for
 * tenant `default` the env twin, else undefined (the dialect then refuses every stream of the tenant).
 * A stored one this instance cannot unseal refuses (401) rather than fall back to the environment.
 */
export async function providerCredential(
  ctx: Pick<BridgeContext, 'config' | 'tenants'>,
  tenant: string,
  dialect: ProviderAuthDialect,
): Promise<ProviderCredential | undefined> {
  const stored = (await ctx.tenants.getProviderAuth(tenant))[dialect];
  if (stored === 'unreadable')
    throw new BridgeError(
      'unauthorized',
      `the ${dialect} credentials of tenant "${tenant}" are stored but do not unseal on this instance (check STATE_SECRET_KEY)`,
    );
  if (stored !== undefined) return stored;
  return tenant === DEFAULT_TENANT ? envCredential(ctx.config, dialect) : undefined;
}

/** The refusal when a tenant has no credential for a dialect: where to set one. */
export function noCredential(
  platform: string,
  dialect: ProviderAuthDialect,
  tenant: string,
  env: string,
): BridgeError {
  return new BridgeError(
    'unauthorized',
    `no ${platform} credentials are configured for tenant "${tenant}" (provider_auth.${dialect} in PUT /v1/media-stream, or ${env} for tenant default), so no ${platform} stream can be checked`,
  );
}

/** Whether `address` falls in one of `allow`'s addresses or ranges (validated when stored). */
export function addressAllowed(address: string, allow: readonly string[]): boolean {
  const list = new BlockList();
  for (const item of allow) {
    const r = parseRange(item);
    if (r !== undefined) list.addSubnet(r.net, r.prefix, r.family);
  }
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  const v4 = mapped?.[1];
  if (v4 !== undefined && list.check(v4, 'ipv4')) return true;
  const family = isIP(address);
  if (family === 0) return false;
  return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

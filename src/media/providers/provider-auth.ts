/**
 * A tenant's credentials for the platforms in front of the bridge (`provider_auth` in
 * `PUT /v1/media-stream`): one object per dialect, in that platform's own words, checked here in full.
 * Which dialects take one, their fields, the kind of each (a secret, a user name, an address list) and
 * their env twins are each dialect's declaration (src/dialects/provider/); the rules of each kind and
 * the messages are here, the same for all.
 *
 * Secrets are write-only: stored sealed (src/state/), never returned, logged or quoted in an error.
 * Tenant `default` falls back to the environment (Config's `providerAuthEnv`, from the twins each
 * dialect declares) for a dialect it has stored nothing for.
 */
import { BlockList, isIP } from 'node:net';
import { DEFAULT_TENANT } from '../../auth/jwt.js';
import type { Config } from '../../config.js';
import type { BridgeContext } from '../../context.js';
import {
  CREDENTIAL_DIALECTS,
  type CredentialDialectName,
  type CredentialFieldDecl,
  type ProviderCredential,
  providerDialect,
} from '../../dialects/index.js';
import { BridgeError, describe } from '../../errors.js';
import type { ProviderAuthPatch } from '../../state/types.js';

export type { ProviderCredential } from '../../state/types.js';

/** The dialects `provider_auth` takes, keyed by the path's last word (CONTRACT §7). */
export const PROVIDER_AUTH_DIALECTS: readonly CredentialDialectName[] = CREDENTIAL_DIALECTS.map(
  (d) => d.name,
);
export type ProviderAuthDialect = CredentialDialectName;

/** Each dialect's fields: all required, or with `atLeastOne` any of them (Vonage's token and/or allow). */
const SPECS: ReadonlyMap<
  string,
  { readonly fields: Readonly<Record<string, CredentialFieldDecl>>; readonly atLeastOne?: true }
> = new Map(CREDENTIAL_DIALECTS.map((d) => [d.name, d.credential]));

const SECRET_MIN = 8;
const SECRET_MAX = 512;
const NAME_MAX = 256;
const ALLOW_MAX = 64;

const SECRET_ACCEPTS = `a string of ${SECRET_MIN} to ${SECRET_MAX} characters (write-only)`;
const NAME_ACCEPTS = `a string of 1 to ${NAME_MAX} characters`;
const ALLOW_ACCEPTS = `an array of 1 to ${ALLOW_MAX} IP addresses or CIDR ranges (e.g. "203.0.113.0/24")`;

/** What one dialect's object takes, for errors and the API description. */
function dialectAccepts(dialect: ProviderAuthDialect): string {
  const spec = SPECS.get(dialect)!;
  const names = Object.keys(spec.fields);
  return spec.atLeastOne === true
    ? `an object with ${names.join(' and/or ')}`
    : `an object with ${names.join(' and ')}`;
}

/** One dialect's credential as the API description shows it: `<dialect> {<field>, ...}`, or with `atLeastOne` each field in its own braces, joined by and/or. */
function credentialShape(dialect: ProviderAuthDialect): string {
  const spec = SPECS.get(dialect)!;
  const shown = Object.entries(spec.fields).map(([name, f]) =>
    f.kind === 'allow' ? `${name}: [addresses or CIDR ranges]` : name,
  );
  return spec.atLeastOne === true
    ? `${dialect} ${shown.map((s) => `{${s}}`).join(' and/or ')}`
    : `${dialect} {${shown.join(', ')}}`;
}

export const PROVIDER_AUTH_ACCEPTS =
  `an object keyed by dialect (${PROVIDER_AUTH_DIALECTS.join(', ')}), each value that platform's credentials ` +
  `(${PROVIDER_AUTH_DIALECTS.map(credentialShape).join(', ')}) ` +
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
  const spec = SPECS.get(dialect)!;
  const given = raw as Record<string, unknown>;
  for (const key of Object.keys(given))
    if (!Object.hasOwn(spec.fields, key))
      throw fieldError(
        `${at}.${key.slice(0, 64)}`,
        `unknown field "${at}.${key.slice(0, 64)}"; ${at} must be ${dialectAccepts(dialect)}`,
      );
  const out: Record<string, unknown> = {};
  for (const [key, { kind }] of Object.entries(spec.fields)) {
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
      `provider_auth must be an object keyed by dialect, got null; to remove one dialect's credentials give that dialect null, e.g. {"${PROVIDER_AUTH_DIALECTS[0]}": null}`,
    );
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw fieldError('provider_auth', `provider_auth must be ${PROVIDER_AUTH_ACCEPTS}, got ${kindOf(raw)}`);
  const patch: Record<string, ProviderCredential | null> = {};
  for (const [dialect, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!SPECS.has(dialect))
      throw fieldError(
        `provider_auth.${dialect.slice(0, 64)}`,
        `unknown dialect "provider_auth.${dialect.slice(0, 64)}"; provider_auth takes ${PROVIDER_AUTH_DIALECTS.join(', ')}`,
      );
    patch[dialect] = value === null ? null : parseCredential(dialect as ProviderAuthDialect, value);
  }
  return patch;
}

/** Tenant `default`'s credential from the environment, where the dialect's env twins are all set. */
export function envCredential(config: Config, dialect: ProviderAuthDialect): ProviderCredential | undefined {
  return config.providerAuthEnv[dialect];
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

/** The refusal when a tenant has no credential for a dialect: where to set one (its env twins for tenant default). */
export function noCredential(dialect: ProviderAuthDialect, tenant: string): BridgeError {
  const decl = providerDialect(dialect)!;
  const env = Object.values(decl.credential?.fields ?? {})
    .flatMap((f) => (f.env === undefined ? [] : [f.env]))
    .join(' and ');
  const platform = decl.platform;
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

/**
 * Reading a dialect call's settings from flags or a request body, with errors that name the field and
 * what it accepts. Shared by `npm run call`, `POST /emulator/calls` and `npm run load`.
 */
import { type Codec, parseCodec } from '../../audio/format.js';
import { invalidField } from '../../errors.js';
import { DIALECT_RATES, dialectRate, TWINS } from './index.js';
import { DIALECTS, type DialectName, isDialect, type LegAuth, type ProviderTwin } from './types.js';

export function parseDialect(value: unknown, field = 'dialect'): DialectName {
  if (!isDialect(value)) throw invalidField(field, `one of ${DIALECTS.join(', ')}`, value);
  return value;
}

/** The call's rate for the dialect, checked against what the platform offers. */
export function parseDialectRate(
  dialect: DialectName,
  rate: unknown,
  codec: Codec | undefined,
  field: string,
): number {
  if (rate !== undefined && (typeof rate !== 'number' || !DIALECT_RATES[dialect].includes(rate)))
    throw invalidField(field, `for ${dialect}, one of ${DIALECT_RATES[dialect].join(', ')}`, rate);
  return dialectRate(dialect, rate as number | undefined, codec);
}

/**
 * The codec a dialect's calls carry on the wire when none is asked for: what load reports name (the
 * leg encodes from the caller's PCM itself).
 */
export function dialectWireCodec(dialect: DialectName, asked: Codec | undefined): Codec {
  return asked ?? TWINS[dialect].wireCodec;
}

/** How much audio a platform sends per frame. */
export function dialectChunkMs(dialect: DialectName): number {
  return TWINS[dialect].chunkMs;
}

export function parseDialectCodec(dialect: DialectName, value: unknown, field: string): Codec | undefined {
  if (value === undefined) return undefined;
  const accepted = TWINS[dialect].codecs;
  const codec = parseCodec(value, field);
  if (accepted === undefined || !accepted.includes(codec))
    throw invalidField(
      field,
      accepted === undefined ? `nothing: ${dialect} has one codec` : accepted.join(', '),
      value,
    );
  return codec;
}

/** `name:value` as a header. */
export function parseHeader(value: unknown, field: string): { name: string; value: string } {
  const m = typeof value === 'string' ? /^([A-Za-z0-9-]+):\s*(.+)$/.exec(value) : null;
  if (m === null) throw invalidField(field, '"name:value" with a token name', value);
  return { name: m[1]!.toLowerCase(), value: m[2]! };
}

/** Credentials from a body's `auth` object: {token?, username?, password?, header?: "name:value"}. */
export function parseAuth(value: unknown, field = 'auth'): LegAuth | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidField(field, 'an object with token, username, password or header', value);
  const v = value as Record<string, unknown>;
  for (const key of Object.keys(v))
    if (!['token', 'username', 'password', 'header'].includes(key))
      throw invalidField(`${field}.${key}`, 'no such field: token, username, password or header', v[key]);
  const str = (k: string) => {
    if (v[k] !== undefined && (typeof v[k] !== 'string' || v[k] === ''))
      throw invalidField(`${field}.${k}`, 'a non-empty string', v[k]);
    return v[k] as string | undefined;
  };
  return {
    token: str('token'),
    username: str('username'),
    password: str('password'),
    header: v.header === undefined ? undefined : parseHeader(v.header, `${field}.header`),
  };
}

/** `1@500,2@900`: digits and when (ms after the audio starts) the caller presses them. */
export function parseDtmf(value: unknown, field: string): { digit: string; atMs: number }[] {
  if (value === undefined || value === '') return [];
  const out: { digit: string; atMs: number }[] = [];
  for (const part of String(value).split(',')) {
    const m = /^([0-9*#A-D])@([0-9]{1,7})$/.exec(part.trim());
    if (m === null) throw invalidField(field, 'digit@ms pairs such as "1@500,#@900"', value);
    out.push({ digit: m[1]!, atMs: Number(m[2]) });
  }
  return out;
}

/** Where the bridge serves a dialect (CONTRACT §7), from its default media URL and a tenant. */
export function dialectUrl(mediaUrl: string, dialect: DialectName, tenant?: string): string {
  const u = new URL(mediaUrl);
  const base = u.pathname.replace(/\/+$/, '');
  if (TWINS[dialect].decl.endpoint !== 'root')
    u.pathname = `${base}/${dialect}${tenant !== undefined && tenant !== 'default' ? `/${tenant}` : ''}`;
  return u.toString();
}

/** The dialect at the media endpoint's own path: its calls take a media token and the media stream's format. */
export function isRootDialect(dialect: DialectName): boolean {
  return TWINS[dialect].decl.endpoint === 'root';
}

/** A dialect whose calls come by TCP to a listener of its own (`tcp://host:port`), not to a media path. */
export function isTcpDialect(dialect: DialectName): boolean {
  return TWINS[dialect].decl.endpoint === 'tcp';
}

/** The dialects, for a usage line: `default|twilio|…`. */
export const DIALECT_CHOICES = DIALECTS.join('|');

/** The root dialect's name and the TCP dialects', for usage texts. */
export const ROOT_DIALECT_NAME = DIALECTS.find(isRootDialect)!;
export const TCP_DIALECT_NAMES = DIALECTS.filter(isTcpDialect).join(' or ');

/**
 * What `--auth-token`, `--user`/`--password` and `--header` are to each platform, as usage text says it
 * (from each twin's `flags`), each line led by `indent`.
 */
export function credentialFlagsUsage(indent: string): string {
  const twins = DIALECTS.map((d) => TWINS[d]);
  const platforms = (has: (t: ProviderTwin) => boolean) =>
    twins
      .filter(has)
      .map((t) => t.decl.platform)
      .join(', ');
  const tokens = twins.flatMap((t) => (t.flags?.authToken === undefined ? [] : [t.flags.authToken]));
  return [
    `${indent}--auth-token    ${tokens.join(', ')}`,
    `${indent}--user/--password  HTTP Basic (${platforms((t) => t.flags?.basic === true)}); --header  ${platforms((t) => t.flags?.header === true)}`,
  ].join('\n');
}

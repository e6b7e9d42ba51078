/**
 * The process logger. Secrets are redacted at every level; audio is never logged.
 */
import { type Logger, pino } from 'pino';
import { DIALECT_REDACT_PATHS } from './dialects/index.js';

export type { Logger };

/**
 * What every log line has redacted: credentials by their generic names, and each dialect's secrets as
 * the dialect registry declares them (a bot's api key, a platform's credential fields and signature
 * header, tenant default's credentials from the environment).
 */
export const REDACT_PATHS: readonly string[] = [
  ...new Set([
    'authorization',
    'token',
    'secret',
    'media_secret',
    'password',
    '*.authorization',
    '*.token',
    '*.secret',
    '*.media_secret',
    '*.headers.authorization',
    'req.headers.authorization',
    'req.query.token',
    'headers.authorization',
    'tool_secret',
    '*.tool_secret',
    'botToolSecret',
    '*.botToolSecret',
    ...DIALECT_REDACT_PATHS,
  ]),
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
      base: { service: 'voicebridge' },
    },
    destination,
  );
}

/**
 * The process logger in the format LOG_FORMAT asks for: JSON lines, or pino's own pretty printer for a
 * person at a terminal. pino-pretty is imported here only when asked, so a production start (JSON by
 * default) never loads it. The redaction is the same either way: pino redacts before formatting.
 */
export async function createFormattedLogger(
  level: string,
  format: 'pretty' | 'json',
  destination?: pino.DestinationStream | NodeJS.WritableStream,
): Promise<Logger> {
  if (format === 'json') return createLogger(level, destination as pino.DestinationStream | undefined);
  const { PinoPretty: pretty } = await import('pino-pretty');
  return createLogger(
    level,
    pretty({
      colorize: destination === undefined && process.stdout.isTTY === true,
      // Written as logged, like the JSON destination: nothing is lost when the process exits.
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service',
      ...(destination === undefined ? {} : { destination }),
    }),
  );
}

/**
 * A URL as messages and logs may show it: scheme, host and path, never `user:pw@`, the query or the
 * fragment (`wss://user:pw@bot.example/path?token=x` -> `wss://bot.example/path`).
 */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    // An opaque URL ("redis:user:pw@host") has everything in its path: show the scheme only.
    if (u.host === '') return `${u.protocol}…`;
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    // Not a URL: the same parts by pattern, so the message still says which one. Any `@` may end a
    // userinfo the pattern cannot delimit (a password may hold `/`, `?` or `#`): then nothing is shown.
    if (url.includes('@')) return NOT_A_URL;
    const m = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)([^?#]*)/i.exec(url);
    return m === null ? '(bad URL)' : `${m[1]}${m[2]}${m[3]}`;
  }
}

const NOT_A_URL = '(not a valid URL)';

/**
 * A value that should have been a URL, as an error message may quote it: a URL with a host as
 * displayUrl shows it; anything else quoted (JSON) only when it holds neither `@` nor `://`, so
 * credentials written into a malformed URL (`wss:/user:pw@host`, ` wss://user:pw@host`) are never echoed.
 */
export function shownValue(value: string): string {
  let u: URL | undefined;
  try {
    u = new URL(value);
  } catch {}
  if (u !== undefined && u.host !== '') {
    // An `@` the parser did not take as the end of a userinfo (`wss://user:123?pw@host`): the "host" it
    // found may be the user name.
    if (value.includes('@') && u.username === '' && u.password === '') return NOT_A_URL;
    return displayUrl(value);
  }
  return /@|:\/\//.test(value) ? NOT_A_URL : JSON.stringify(value);
}

/**
 * A URL shown back to whoever stored it: credentials masked rather than dropped, so it still says that
 * some are set (`wss://user:pw@bot.example/path?token=x&lang=en` -> `wss://****@bot.example/path?token=****&lang=****`).
 * A query part without `=` may itself be a token: it is masked whole.
 */
export function maskedUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return displayUrl(url);
  }
  if (u.host === '') return displayUrl(url);
  const auth = u.username !== '' || u.password !== '' ? '****@' : '';
  const query = u.search
    .slice(1)
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const eq = part.indexOf('=');
      return eq <= 0 ? '****' : `${part.slice(0, eq)}=****`;
    });
  return `${u.protocol}//${auth}${u.host}${u.pathname}${query.length > 0 ? `?${query.join('&')}` : ''}`;
}

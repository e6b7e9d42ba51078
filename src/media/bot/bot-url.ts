/**
 * The rules for a bot URL, written once: the global `BOT_URL` (src/config.ts) and a tenant's `bot_url`
 * (PUT /v1/media-stream) are checked by the same function. A tenant's `builtin:wav:<path>` is further
 * held to `BOT_WAV_DIR`: a REST caller must not make the bridge read files of its choosing.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { displayUrl, maskedUrl } from '../../log.js';

export const BOT_URL_ACCEPTS = 'ws://…, wss://…, builtin:echo, builtin:tone[:hz] or builtin:wav:<path>';

const WS_ACCEPTS = 'a valid ws:// or wss:// URL with a host and no #fragment';
const BUILTIN = /^(builtin:echo|builtin:tone(:\d+)?|builtin:wav:.+)$/;
const WAV_PREFIX = 'builtin:wav:';

export interface BotUrlProblem {
  /** What the value must be ("a valid ws:// or wss:// URL …"). */
  readonly accepts: string;
  /** The value as a message may show it: a URL without credentials or query. */
  readonly shown: string;
}

/** Why `url` is not a bot the bridge can dial, or undefined when it is. Never quotes credentials. */
export function botUrlProblem(url: string): BotUrlProblem | undefined {
  if (/^wss?:\/\//.test(url)) {
    try {
      const u = new URL(url);
      if (u.hostname !== '' && u.hash === '') return undefined; // ws refuses a #fragment
    } catch {}
    return { accepts: WS_ACCEPTS, shown: displayUrl(url) };
  }
  if (BUILTIN.test(url)) return undefined;
  const shown = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? displayUrl(url) : JSON.stringify(url);
  return { accepts: BOT_URL_ACCEPTS, shown };
}

export function isWsBotUrl(url: string): boolean {
  return url.startsWith('ws://') || url.startsWith('wss://');
}

/** The file a `builtin:wav:<path>` plays; undefined for other bots. */
export function wavPath(url: string): string | undefined {
  return url.startsWith(WAV_PREFIX) ? url.slice(WAV_PREFIX.length) : undefined;
}

/**
 * The absolute file a tenant's `builtin:wav:<path>` may play: `path` resolved against `dir` (a relative
 * path is taken inside it), when it lies inside `dir`; undefined when it escapes (`..`, another absolute
 * path) or no `dir` is configured. Lexical: a symlink inside `dir` is the operator's own choice.
 */
export function wavPathInside(path: string, dir: string | undefined): string | undefined {
  if (dir === undefined || path.includes('\u0000')) return undefined;
  const full = resolve(dir, path);
  const rel = relative(dir, full);
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  return full;
}

/** What a tenant's `bot_url` accepts, as the 400 and the OpenAPI document say it. */
export const TENANT_BOT_URL_ACCEPTS =
  "ws://…, wss://…, builtin:echo, builtin:tone[:hz], or builtin:wav:<path> inside BOT_WAV_DIR (null: the bridge's BOT_URL)";

/**
 * Why `url` may not be a tenant's bot, or undefined when it may: the `BOT_URL` rules, and a WAV file only
 * inside `wavDir`.
 */
export function tenantBotUrlProblem(url: string, wavDir: string | undefined): BotUrlProblem | undefined {
  const p = botUrlProblem(url);
  if (p !== undefined) return p;
  const path = wavPath(url);
  if (path === undefined) return undefined;
  if (wavDir === undefined) {
    return {
      accepts:
        'ws://…, wss://…, builtin:echo or builtin:tone[:hz] (builtin:wav:<path> is refused: the bridge has no BOT_WAV_DIR)',
      shown: JSON.stringify(url),
    };
  }
  if (wavPathInside(path, wavDir) === undefined) {
    return { accepts: 'builtin:wav:<path> with the path inside BOT_WAV_DIR', shown: JSON.stringify(url) };
  }
  return undefined;
}

/** A bot URL as a read shows it to its tenant: a ws URL with credentials and query values masked. */
export function shownBotUrl(url: string): string {
  return isWsBotUrl(url) ? maskedUrl(url) : url;
}

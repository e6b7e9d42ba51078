/**
 * The rules for a bot URL, written once: the global `BOT_URL` (src/config.ts) and a tenant's `bot_url`
 * (PUT /v1/media-stream) are checked by the same function. A tenant's `builtin:wav:<path>` is further
 * held to `BOT_WAV_DIR`: a REST caller must not make the bridge read files of its choosing. They sit
 * beside the configuration, below src/media/ and src/control/, which both check a tenant's bot with them.
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { maskedUrl, shownValue } from '../log.js';

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
  if (isWsBotUrl(url)) {
    try {
      const u = new URL(url);
      if (u.hostname !== '' && u.hash === '') return undefined; // ws refuses a #fragment
    } catch {}
    return { accepts: WS_ACCEPTS, shown: shownValue(url) };
  }
  if (BUILTIN.test(url)) return undefined;
  return { accepts: BOT_URL_ACCEPTS, shown: shownValue(url) };
}

/** What each kind of bot URL a dialect may take accepts, as a message says it (src/dialects/ BotUrlDecl). */
export const BOT_URL_KIND_ACCEPTS = {
  ws: 'a ws:// or wss:// URL',
  builtin: 'builtin:echo, builtin:tone[:hz] or builtin:wav:<path>',
} as const;

/** The kind of a bot URL: a bot inside the bridge (`builtin:`), else one the bridge dials. */
export function urlKind(url: string): 'ws' | 'builtin' {
  return url.startsWith('builtin:') ? 'builtin' : 'ws';
}

/** A `ws://` or `wss://` bot (the scheme in any case, as URLs allow). */
export function isWsBotUrl(url: string): boolean {
  return /^wss?:\/\//i.test(url);
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
  "ws://… or wss://… to a host listed in BOT_URL_ALLOWED_HOSTS, builtin:echo, builtin:tone[:hz] (hz from 1 to half of BOT_SAMPLE_RATE), or builtin:wav:<path> inside BOT_WAV_DIR (null: the bridge's BOT_URL)";

/** One entry of `BOT_URL_ALLOWED_HOSTS`: a host name (or IP), or `*.<domain>` for its subdomains; any port unless given. */
export interface BotHostRule {
  /** Lower case; for a wildcard, the domain after `*.`. */
  readonly host: string;
  readonly wildcard: boolean;
  readonly port: number | undefined;
}

/** `BOT_URL_ALLOWED_HOSTS` parsed: the hosts a tenant's ws/wss `bot_url` may name. */
export interface BotHostAllowlist {
  /** `*` was listed (or defaulted outside production): any host. */
  readonly any: boolean;
  readonly rules: readonly BotHostRule[];
}

export const BOT_URL_ALLOWED_HOSTS_ACCEPTS =
  'a comma-separated list of host names or IP addresses (bot.example.com, 10.0.0.5, [::1]), *.example.com wildcards (subdomains only), each with an optional :port, or * for any host';

const HOST_ENTRY = /^(\*\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::(\d{1,5}))?$/i;

/**
 * `BOT_URL_ALLOWED_HOSTS`: unset or empty, `*` outside production and nothing in production (tenants may
 * then pick built-in bots only). A string when it is malformed: the problem, never quoting a value that
 * looks like a URL or credentials.
 */
export function parseAllowedHosts(raw: string | undefined, production: boolean): BotHostAllowlist | string {
  if (raw === undefined || raw.trim() === '') return { any: !production, rules: [] };
  let any = false;
  const rules: BotHostRule[] = [];
  for (const part of raw.split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    if (entry === '*') {
      any = true;
      continue;
    }
    const m = HOST_ENTRY.exec(entry);
    const port = m?.[3] === undefined ? undefined : Number(m[3]);
    let host: string | undefined;
    if (m !== null && !(m[1] !== undefined && m[2]!.startsWith('['))) {
      try {
        // The URL parser's form, so 127.1, 0x7f.0.0.1 and 127.0.0.1 (or two spellings of an IPv6) agree.
        host = new URL(`ws://${m[2]}`).hostname;
      } catch {}
      // A wildcard is over names: "*.10.0" would otherwise become a pattern over a rewritten address.
      if (m[1] !== undefined && host !== m[2]!.toLowerCase()) host = undefined;
    }
    if (host === undefined || (port !== undefined && (port < 1 || port > 65535))) {
      const shown = /@|:\/\//.test(entry) ? '(not a host name)' : JSON.stringify(entry);
      return `BOT_URL_ALLOWED_HOSTS must be ${BOT_URL_ALLOWED_HOSTS_ACCEPTS}, got ${shown}`;
    }
    rules.push({ host, wildcard: m![1] !== undefined, port });
  }
  return { any, rules };
}

/** How `url`'s host is allowed: by an entry naming it (`listed`), by `*` only (`any`), or not at all. */
export function botHostAllowed(url: URL, list: BotHostAllowlist): 'listed' | 'any' | undefined {
  const host = url.hostname;
  const port =
    url.port !== '' ? Number(url.port) : url.protocol === 'wss:' || url.protocol === 'https:' ? 443 : 80;
  for (const r of list.rules) {
    if (r.port !== undefined && r.port !== port) continue;
    if (r.wildcard ? host.endsWith(`.${r.host}`) : host === r.host) return 'listed';
  }
  return list.any ? 'any' : undefined;
}

/** What a tenant's bot is checked against: the bridge's configuration. */
export interface TenantBotPolicy {
  /** BOT_WAV_DIR (absolute), or undefined: no WAV files. */
  readonly botWavDir: string | undefined;
  readonly botUrlAllowedHosts: BotHostAllowlist;
  readonly production: boolean;
  readonly botSampleRate: number;
}

/**
 * Why `url` may not be a tenant's bot, or undefined when it may: the `BOT_URL` rules; a ws/wss bot only on
 * a host `BOT_URL_ALLOWED_HOSTS` allows (and in production plain ws:// only on one it names); a tone
 * within the bot's band; a WAV file only inside BOT_WAV_DIR. Checked when stored and again at each dial.
 */
export function tenantBotUrlProblem(url: string, policy: TenantBotPolicy): BotUrlProblem | undefined {
  const p = botUrlProblem(url);
  if (p !== undefined) return p;
  if (isWsBotUrl(url)) return wsHostProblem(url, policy);
  const tone = /^builtin:tone:(\d+)$/.exec(url);
  if (tone !== null) {
    const max = Math.floor(policy.botSampleRate / 2);
    const hz = Number(tone[1]);
    if (hz < 1 || hz > max) {
      return {
        accepts: `builtin:tone:<hz> with hz from 1 to ${max} (half of BOT_SAMPLE_RATE, ${policy.botSampleRate})`,
        shown: JSON.stringify(url),
      };
    }
    return undefined;
  }
  const path = wavPath(url);
  if (path === undefined) return undefined;
  if (policy.botWavDir === undefined) {
    return {
      accepts:
        'ws://…, wss://…, builtin:echo or builtin:tone[:hz] (builtin:wav:<path> is refused: the bridge has no BOT_WAV_DIR)',
      shown: shownValue(url),
    };
  }
  if (wavPathInside(path, policy.botWavDir) === undefined) {
    return { accepts: 'builtin:wav:<path> with the path inside BOT_WAV_DIR', shown: shownValue(url) };
  }
  return undefined;
}

function wsHostProblem(url: string, policy: TenantBotPolicy): BotUrlProblem | undefined {
  const list = policy.botUrlAllowedHosts;
  const u = new URL(url); // botUrlProblem parsed it
  const shown = shownValue(url);
  if (!list.any && list.rules.length === 0) {
    return {
      accepts:
        'builtin:echo, builtin:tone[:hz] or builtin:wav:<path> on this bridge: ws:// and wss:// bots are refused until the operator lists their hosts in BOT_URL_ALLOWED_HOSTS',
      shown,
    };
  }
  const how = botHostAllowed(u, list);
  if (how === undefined) {
    return {
      accepts: 'a ws:// or wss:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS',
      shown,
    };
  }
  if (policy.production && u.protocol === 'ws:' && how !== 'listed') {
    return {
      accepts:
        'a wss:// URL: plain ws:// is refused in production unless the operator lists the host by name in BOT_URL_ALLOWED_HOSTS',
      shown,
    };
  }
  return undefined;
}

/**
 * Why a URL a tenant's bot dialect calls besides its `url` (a field declared `dials`, an API base) may not
 * be called, or undefined when it may: an http(s) or ws(s) URL with a host, on a host
 * `BOT_URL_ALLOWED_HOSTS` allows (in production a plain http:// or ws:// one only on a host it names).
 */
export function tenantDialledProblem(url: string, policy: TenantBotPolicy): BotUrlProblem | undefined {
  const shown = shownValue(url);
  let u: URL | undefined;
  try {
    u = new URL(url);
  } catch {}
  if (u === undefined || !/^(https?|wss?):$/.test(u.protocol) || u.hostname === '' || u.hash !== '')
    return { accepts: 'an https:// URL with a host and no #fragment', shown };
  const list = policy.botUrlAllowedHosts;
  const how = botHostAllowed(u, list);
  if (how === undefined)
    return { accepts: 'an https:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS', shown };
  if (policy.production && (u.protocol === 'http:' || u.protocol === 'ws:') && how !== 'listed')
    return {
      accepts:
        'an https:// URL: plain http:// is refused in production unless the operator lists the host by name in BOT_URL_ALLOWED_HOSTS',
      shown,
    };
  return undefined;
}

/**
 * Why a file a tenant's bot has the bridge read besides its `url` (a hold sound) may not be read: what
 * is accepted, or undefined when the path lies inside BOT_WAV_DIR.
 */
export function tenantFileProblem(path: string, policy: TenantBotPolicy): string | undefined {
  if (wavPathInside(path, policy.botWavDir) !== undefined) return undefined;
  return policy.botWavDir === undefined
    ? 'builtin:hold or none (a WAV file is refused: the bridge has no BOT_WAV_DIR)'
    : 'a path inside BOT_WAV_DIR';
}

/** A bot URL as a read shows it to its tenant: a ws URL with credentials and query values masked. */
export function shownBotUrl(url: string): string {
  return isWsBotUrl(url) ? maskedUrl(url) : url;
}

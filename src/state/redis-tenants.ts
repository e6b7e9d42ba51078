/**
 * Per-tenant media-stream config shared through Redis, served from a local cache.
 *
 * The media endpoint verifies every upgrade with a tenant's secret, so reads never go to Redis: the
 * cache is filled at start, refreshed when any instance announces a change (pub/sub), and re-read
 * whole after every reconnect (announcements made while away are lost). Writes go to Redis first and
 * fail with `store_unavailable` when it is away, so instances never disagree for long.
 *
 * Layout (prefix P): `P tenant:<tenant>` hash {config (JSON), secret (sealed), bot_url (sealed), bot
 * (sealed JSON), tool_secret (sealed)}; `P tenants` set of names. The secrets, the bot URL (which may
 * carry the bot's credentials) and the `bot` object (its api key, its URL, its tools' URLs) are sealed with AES-256-GCM (secret-box.ts),
 * each under its own context, so a dump of Redis alone does not reveal them; the config JSON never holds
 * the bot. A tenant's provider credentials (`provider_auth`) are a hash of their own, `P tenant:<tenant>:
 * provider_auth`, one field per dialect holding its sealed JSON (context `provider_auth`, the dialect, the
 * tenant), so a change to one dialect is one HSET or HDEL, whatever another instance does to another.
 */
import type { BotSettings } from '../config/bot-settings.js';
import type { Logger } from '../log.js';
import type { RedisLink } from './redis-link.js';
import type { SecretBox } from './secret-box.js';
import type { StoreMetrics } from './store-metrics.js';
import type {
  MediaStreamConfig,
  ProviderAuth,
  ProviderAuthPatch,
  ProviderCredential,
  TenantStore,
} from './types.js';

/** The hash fields of a tenant, in the order #apply takes them. */
const FIELDS = ['config', 'secret', 'bot_url', 'bot', 'tool_secret'] as const;

/** Tenants read per pipeline when loading the cache. */
const BATCH = 500;

interface Cached {
  config: MediaStreamConfig | undefined;
  secret: string | undefined;
  providerAuth: ProviderAuth;
  toolSecret: string | undefined;
}

export class RedisTenantStore implements TenantStore {
  readonly #link: RedisLink;
  readonly #box: SecretBox;
  readonly #log: Logger;
  readonly #metrics: StoreMetrics;
  readonly #initialSecrets: Readonly<Record<string, string>>;
  readonly #cache = new Map<string, Cached>();
  #loaded = false;

  constructor(
    link: RedisLink,
    box: SecretBox,
    initialSecrets: Readonly<Record<string, string>>,
    log: Logger,
    metrics: StoreMetrics,
  ) {
    this.#link = link;
    this.#box = box;
    this.#initialSecrets = initialSecrets;
    this.#log = log;
    this.#metrics = metrics;
    link.onMessage((m) => {
      if (m.t === 'tenant' && typeof m.tenant === 'string') {
        this.#refresh(m.tenant).catch((err: unknown) =>
          this.#log.warn({ tenant: m.tenant, err: (err as Error).message }, 'tenant refresh failed'),
        );
      }
    });
    link.onReady(() => {
      this.load().catch((err: unknown) =>
        this.#log.warn({ err: (err as Error).message }, 'tenant cache load failed'),
      );
    });
  }

  /** True once the cache has been read from Redis at least once. */
  get loaded(): boolean {
    return this.#loaded;
  }

  async getMediaStream(tenant: string): Promise<MediaStreamConfig | undefined> {
    return this.#cache.get(tenant)?.config;
  }

  async getMediaSecret(tenant: string): Promise<string | undefined> {
    // Until Redis has answered once, a secret rotated by another instance is unknown: accepting the
    // environment's initial secret then could let a revoked secret in. Refuse (503) instead.
    if (!this.#loaded)
      throw this.#link.unavailable('verifying media tokens', 'tenant secrets not loaded yet');
    return this.#cache.get(tenant)?.secret ?? this.#initialSecrets[tenant];
  }

  async getProviderAuth(tenant: string): Promise<ProviderAuth> {
    // As getMediaSecret: before Redis has answered, a credential revoked elsewhere is not known.
    if (!this.#loaded)
      throw this.#link.unavailable('checking provider credentials', 'tenant credentials not loaded yet');
    return this.#cache.get(tenant)?.providerAuth ?? {};
  }

  async getToolSecret(tenant: string): Promise<string | undefined> {
    return this.#cache.get(tenant)?.toolSecret;
  }

  async putMediaStream(
    config: MediaStreamConfig,
    secret: string | undefined,
    providerAuth?: ProviderAuthPatch,
    toolSecret?: string,
  ): Promise<void> {
    const { tenant } = config;
    const { bot_url, bot_url_unreadable: _unreadable, bot, bot_unreadable: _botUnreadable, ...rest } = config;
    const fields: Record<string, string> = { config: JSON.stringify(rest) };
    if (secret !== undefined) fields.secret = this.#box.seal(secret, secretContext(tenant));
    if (bot_url !== undefined) fields.bot_url = this.#box.seal(bot_url, botUrlContext(tenant));
    if (bot !== undefined) fields.bot = this.#box.seal(JSON.stringify(bot), botContext(tenant));
    if (toolSecret !== undefined) fields.tool_secret = this.#box.seal(toolSecret, toolSecretContext(tenant));
    await this.#link.run('put_media_stream', async (r) => {
      const key = this.#tenantKey(tenant);
      const m = r.multi().hset(key, fields);
      // The upsert replaces the config: a PUT without bot_url (or bot) clears the one stored before.
      if (bot_url === undefined) m.hdel(key, 'bot_url');
      if (bot === undefined) m.hdel(key, 'bot');
      const authKey = this.#providerAuthKey(tenant);
      for (const [dialect, cred] of Object.entries(providerAuth ?? {})) {
        if (cred === null) m.hdel(authKey, dialect);
        else
          m.hset(
            authKey,
            dialect,
            this.#box.seal(JSON.stringify(cred), providerAuthContext(dialect, tenant)),
          );
      }
      await m.sadd(this.#indexKey(), tenant).exec();
    });
    const prev = this.#cache.get(tenant);
    let auth: Record<string, ProviderCredential | 'unreadable'> = { ...prev?.providerAuth };
    for (const [dialect, cred] of Object.entries(providerAuth ?? {})) {
      if (cred === null) delete auth[dialect];
      else auth = { ...auth, [dialect]: cred };
    }
    this.#cache.set(tenant, {
      config,
      secret: secret ?? prev?.secret,
      providerAuth: auth,
      toolSecret: toolSecret ?? prev?.toolSecret,
    });
    // Every other instance re-reads the tenant now; the message names the tenant only.
    await this.#link.publish('put_media_stream', { t: 'tenant', tenant });
  }

  /**
   * Reads every tenant into the cache. Tenants missing from Redis (say, a Redis restarted without
   * persistence) keep their cached entry: config is never deleted, and an empty store must not undo
   * a rotation.
   */
  async load(): Promise<void> {
    const names = await this.#link.run('load_tenants', (r) => r.smembers(this.#indexKey()));
    for (let i = 0; i < names.length; i += BATCH) {
      const batch = names.slice(i, i + BATCH);
      const res = await this.#link.run('load_tenants', (r) => {
        const p = r.pipeline();
        for (const t of batch) p.hmget(this.#tenantKey(t), ...FIELDS).hgetall(this.#providerAuthKey(t));
        return p.exec();
      });
      batch.forEach((t, j) => {
        const [err, v] = res?.[2 * j] ?? [null, null];
        const [authErr, auth] = res?.[2 * j + 1] ?? [null, null];
        if (err === null && authErr === null)
          this.#apply(t, v as (string | null)[], (auth ?? {}) as Record<string, string>);
      });
    }
    this.#loaded = true;
  }

  async #refresh(tenant: string): Promise<void> {
    const [v, auth] = await this.#link.run('load_tenants', (r) =>
      Promise.all([r.hmget(this.#tenantKey(tenant), ...FIELDS), r.hgetall(this.#providerAuthKey(tenant))]),
    );
    this.#apply(tenant, v, auth);
  }

  #apply(
    tenant: string,
    [configText, sealed, sealedBot, sealedBotObject, sealedToolSecret]: (string | null)[],
    sealedAuth: Readonly<Record<string, string>>,
  ): void {
    if (configText === null || configText === undefined) return;
    const prev = this.#cache.get(tenant);
    let config = prev?.config;
    let secret = prev?.secret;
    try {
      const {
        bot_url: _ignored,
        bot_url_unreadable: _unread,
        bot: _bot,
        bot_unreadable: _botUnread,
        ...stored
      } = JSON.parse(configText) as MediaStreamConfig;
      config = stored;
      if (typeof sealedBotObject === 'string') config = this.#openBot(tenant, config, sealedBotObject);
      if (typeof sealedBot === 'string') {
        try {
          config = { ...config, bot_url: this.#box.open(sealedBot, botUrlContext(tenant)) };
        } catch {
          // Fail closed: not the bridge's BOT_URL (the tenant chose another bot), nor a bot_url cached
          // before (the tenant may have replaced it): its calls get no bot until this is fixed. Never
          // log the value.
          config = { ...config, bot_url_unreadable: true };
          this.#metrics.errors.labels('open_bot_url').inc();
          this.#log.error(
            { tenant },
            "stored bot_url does not open with this STATE_SECRET_KEY; every instance needs the same key (the tenant's calls get no bot meanwhile)",
          );
        }
      }
    } catch {
      this.#log.warn({ tenant }, 'stored media-stream config is not JSON; kept the cached one');
    }
    if (typeof sealed === 'string') {
      try {
        secret = this.#openSecret(sealed, tenant);
      } catch {
        // A different STATE_SECRET_KEY on another instance, or tampering. Never log the value.
        this.#metrics.errors.labels('open_secret').inc();
        this.#log.error(
          { tenant },
          'stored media secret does not open with this STATE_SECRET_KEY; every instance needs the same key',
        );
      }
    }
    let toolSecret = prev?.toolSecret;
    if (typeof sealedToolSecret === 'string') {
      try {
        toolSecret = this.#box.open(sealedToolSecret, toolSecretContext(tenant));
      } catch {
        // Its webhook tools' calls then answer the model an error (no key to sign with). Never the value.
        toolSecret = undefined;
        this.#metrics.errors.labels('open_tool_secret').inc();
        this.#log.error(
          { tenant },
          'stored tool secret does not open with this STATE_SECRET_KEY; every instance needs the same key',
        );
      }
    }
    this.#cache.set(tenant, {
      config,
      secret,
      providerAuth: this.#openProviderAuth(tenant, sealedAuth),
      toolSecret,
    });
  }

  /** The tenant's provider credentials, each failing closed (`unreadable`: that dialect refuses) alone. */
  #openProviderAuth(tenant: string, sealed: Readonly<Record<string, string>>): ProviderAuth {
    const out: Record<string, ProviderCredential | 'unreadable'> = {};
    for (const [dialect, value] of Object.entries(sealed)) {
      try {
        const cred = JSON.parse(this.#box.open(value, providerAuthContext(dialect, tenant))) as unknown;
        if (typeof cred !== 'object' || cred === null || Array.isArray(cred)) throw new Error('shape');
        out[dialect] = cred as ProviderCredential;
      } catch {
        // Never log the value, nor the error (a JSON error would quote it).
        out[dialect] = 'unreadable';
        this.#metrics.errors.labels('open_provider_auth').inc();
        this.#log.error(
          { tenant, dialect },
          'stored provider credentials do not open with this STATE_SECRET_KEY; every instance needs the same key (that dialect refuses the tenant meanwhile)',
        );
      }
    }
    return out;
  }

  /** The config with its sealed `bot` opened; failing closed (as a bot_url does) when it does not open. */
  #openBot(tenant: string, config: MediaStreamConfig, sealed: string): MediaStreamConfig {
    try {
      const bot = JSON.parse(this.#box.open(sealed, botContext(tenant))) as BotSettings;
      if (typeof bot !== 'object' || bot === null || typeof bot.url !== 'string') throw new Error('shape');
      return { ...config, bot };
    } catch {
      // Never log the value, nor the error (a JSON error would quote it).
      this.#metrics.errors.labels('open_bot').inc();
      this.#log.error(
        { tenant },
        "stored bot does not open with this STATE_SECRET_KEY; every instance needs the same key (the tenant's calls get no bot meanwhile)",
      );
      return { ...config, bot_unreadable: true };
    }
  }

  /** A media secret: sealed under its prefixed context, or under the bare tenant name (as stored before
   * contexts were prefixed; only for names without NUL, so no other context can be taken for one). */
  #openSecret(sealed: string, tenant: string): string {
    try {
      return this.#box.open(sealed, secretContext(tenant));
    } catch (err) {
      if (tenant.includes('\u0000')) throw err;
      return this.#box.open(sealed, tenant);
    }
  }

  #tenantKey(tenant: string): string {
    return `${this.#link.prefix}tenant:${encodeURIComponent(tenant)}`;
  }

  #providerAuthKey(tenant: string): string {
    return `${this.#tenantKey(tenant)}:provider_auth`;
  }

  #indexKey(): string {
    return `${this.#link.prefix}tenants`;
  }
}

/**
 * The sealing contexts: a tag, NUL, the tenant. No tag holds a NUL, so no tenant name makes one
 * field's context equal another's (or another tenant's): a value copied elsewhere does not open.
 */
function secretContext(tenant: string): string {
  return `secret\u0000${tenant}`;
}

function botUrlContext(tenant: string): string {
  return `bot_url\u0000${tenant}`;
}

function botContext(tenant: string): string {
  return `bot\u0000${tenant}`;
}

function toolSecretContext(tenant: string): string {
  return `tool_secret\u0000${tenant}`;
}

function providerAuthContext(dialect: string, tenant: string): string {
  return `provider_auth\u0000${dialect}\u0000${tenant}`;
}

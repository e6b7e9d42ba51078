/**
 * The session registry shared by several instances through Redis.
 *
 * An instance's own sessions live in a local map, which is authoritative for them: `add` and `remove`
 * answer from it at once and mirror to Redis in the background, so a call is set up (and its audio
 * flows) whether or not Redis answers. Other instances' sessions are read from Redis.
 *
 * Layout (prefix P, tenant and id URI-encoded):
 *   P s:<tenant>:<id>   hash {owner, info (JSON), conf (JSON array)}, expiring after the session TTL
 *   P idx:<tenant>      sorted set of session ids, scored by when their entry expires
 * The owner refreshes both every third of the TTL. A crashed owner stops refreshing, and its sessions
 * drop out of every list within one TTL; the index is only a list of candidates, pruned as it is read.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import type { RedisLink } from './redis-link.js';
import type { StoreMetrics } from './store-metrics.js';
import type { SessionInfo, SessionRegistry } from './types.js';

/** Writes the entry unless another instance owns it (returns 0 then: the same id live twice). */
const CLAIM = `local o = redis.call('hget', KEYS[1], 'owner')
if o and o ~= ARGV[1] then return 0 end
redis.call('hset', KEYS[1], 'owner', ARGV[1], 'info', ARGV[2], 'conf', ARGV[3])
redis.call('pexpire', KEYS[1], ARGV[4])
redis.call('zadd', KEYS[2], ARGV[5], ARGV[6])
return 1`;

/** Deletes the entry if this instance owns it (or it is gone already). */
const RELEASE = `local o = redis.call('hget', KEYS[1], 'owner')
if o and o ~= ARGV[1] then return 0 end
redis.call('del', KEYS[1])
redis.call('zrem', KEYS[2], ARGV[2])
return 1`;

/** Changes the conference list of a live entry, keeping its expiry. */
const SET_CONF = `if redis.call('exists', KEYS[1]) == 0 then return 0 end
redis.call('hset', KEYS[1], 'conf', ARGV[1])
return 1`;

/** info and conf of each key, flattened: [info1, conf1, info2, conf2, ...] (nil where gone). */
const READ_MANY = `local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('hmget', k, 'info', 'conf')
  out[2 * i - 1] = v[1]
  out[2 * i] = v[2]
end
return out`;

/** Commands per pipeline: bounds the memory of one heartbeat or resync round. */
const BATCH = 500;
/** Most sessions one list answers with (a tenant's live calls across all instances). */
const MAX_LISTED = 50_000;
/** Removals that failed while Redis was away, retried later; past this, entries just expire. */
const MAX_PENDING_REMOVALS = 10_000;
/** How long `close` waits for mirror writes still in flight. */
const CLOSE_FLUSH_MS = 2_000;

type Key = string;

export class RedisSessionRegistry implements SessionRegistry {
  readonly #link: RedisLink;
  readonly #log: Logger;
  readonly #metrics: StoreMetrics;
  readonly #ttlMs: number;
  readonly #own = new Map<Key, SessionInfo>();
  readonly #pendingRemovals = new Map<Key, { tenant: string; id: string }>();
  /** Own sessions whose id another instance holds in Redis: never refreshed (that entry is not ours). */
  readonly #conflicted = new Set<Key>();
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #timer: NodeJS.Timeout;
  #beating = false;

  constructor(link: RedisLink, ttlMs: number, log: Logger, metrics: StoreMetrics) {
    this.#link = link;
    this.#ttlMs = ttlMs;
    this.#log = log;
    this.#metrics = metrics;
    this.#timer = setInterval(() => this.#track(this.heartbeat()), Math.max(250, Math.floor(ttlMs / 3)));
    this.#timer.unref();
    // After every (re)connect, Redis may have lost or expired our entries: write them all again.
    link.onReady(() => this.#track(this.#resync()));
    link.onMessage((m) => this.#onMessage(m));
  }

  async add(session: SessionInfo): Promise<boolean> {
    const k = this.#key(session.tenant, session.session_id);
    if (this.#own.has(k)) return false;
    this.#own.set(k, session);
    this.#pendingRemovals.delete(k);
    if (this.#link.up) this.#track(this.#claim([session]));
    return true;
  }

  async remove(tenant: string, sessionId: string): Promise<void> {
    const k = this.#key(tenant, sessionId);
    if (!this.#own.delete(k)) return;
    if (this.#conflicted.delete(k)) return;
    if (this.#pendingRemovals.size < MAX_PENDING_REMOVALS)
      this.#pendingRemovals.set(k, { tenant, id: sessionId });
    if (this.#link.up) this.#track(this.#release());
  }

  async get(tenant: string, sessionId: string): Promise<SessionInfo | undefined> {
    const k = this.#key(tenant, sessionId);
    const own = this.#own.get(k);
    if (own !== undefined) return own;
    const [info, conf] = await this.#link.run('get_session', (r) => r.hmget(k, 'info', 'conf'));
    return parseEntry(info ?? null, conf ?? null);
  }

  async list(tenant: string): Promise<SessionInfo[]> {
    const idx = this.#indexKey(tenant);
    const found = await this.#link.run('list_sessions', async (r) => {
      // Index entries not refreshed for a whole TTL past their expiry belong to crashed instances.
      const [, [err, idsOrNull]] = ((await r
        .pipeline()
        .zremrangebyscore(idx, '-inf', Date.now() - this.#ttlMs)
        .zrange(idx, '0', String(MAX_LISTED - 1))
        .exec()) ?? [[], [null, []]]) as [unknown, [Error | null, string[] | null]];
      if (err !== null) throw err;
      const ids = idsOrNull ?? [];
      const out: SessionInfo[] = [];
      const gone: string[] = [];
      for (let i = 0; i < ids.length; i += BATCH) {
        const batch = ids.slice(i, i + BATCH);
        // One script per batch: as 1,000 separate HMGETs the list took twice as long (bench:state).
        const flat = (await r.eval(READ_MANY, batch.length, ...batch.map((id) => this.#key(tenant, id)))) as (
          | string
          | null
        )[];
        batch.forEach((id, j) => {
          const s = parseEntry(flat[2 * j] ?? null, flat[2 * j + 1] ?? null);
          if (s !== undefined) out.push(s);
          else gone.push(id);
        });
      }
      if (gone.length > 0) await r.zrem(idx, ...gone);
      return out;
    });
    // Our own sessions as we hold them (one whose mirror write is still on its way is listed too).
    const byId = new Map(found.map((s) => [s.session_id, s]));
    for (const s of this.#own.values()) if (s.tenant === tenant) byId.set(s.session_id, s);
    return [...byId.values()];
  }

  async setConferenceNumbers(tenant: string, sessionId: string, numbers: readonly string[]): Promise<void> {
    const k = this.#key(tenant, sessionId);
    const conf = JSON.stringify(numbers);
    const own = this.#own.get(k);
    if (own !== undefined) {
      // Ours: the local copy is the truth; Redis follows (and a resync after an outage carries it).
      this.#own.set(k, { ...own, conferenceNumbers: [...numbers] });
      if (this.#link.up) this.#track(this.#link.run('set_conference', (r) => r.eval(SET_CONF, 1, k, conf)));
      return;
    }
    const changed = await this.#link.run('set_conference', (r) => r.eval(SET_CONF, 1, k, conf));
    // The owner keeps its own copy: tell it (and any instance) what changed.
    if (changed === 1) {
      await this.#link.publish('set_conference', { t: 'conf', tenant, id: sessionId, numbers });
    }
  }

  count(): number {
    return this.#own.size;
  }

  /**
   * Refreshes the expiry of every session this instance holds; an entry found missing (expired during
   * an outage longer than the TTL, or lost with a restarted Redis) is written again. Public so a
   * benchmark can time one round.
   */
  async heartbeat(): Promise<void> {
    if (!this.#link.up || this.#beating) return;
    this.#beating = true;
    try {
      await this.#link.run('heartbeat', async (r) => {
        const sessions = [...this.#own.values()].filter(
          (s) => !this.#conflicted.has(this.#key(s.tenant, s.session_id)),
        );
        const expiresAt = Date.now() + this.#ttlMs;
        const missing: SessionInfo[] = [];
        for (let i = 0; i < sessions.length; i += BATCH) {
          const batch = sessions.slice(i, i + BATCH);
          const p = r.pipeline();
          for (const s of batch) {
            p.pexpire(this.#key(s.tenant, s.session_id), this.#ttlMs);
            p.zadd(this.#indexKey(s.tenant), expiresAt, s.session_id);
          }
          const res = (await p.exec()) ?? [];
          batch.forEach((s, j) => {
            if (res[2 * j]?.[1] === 0) missing.push(s);
          });
        }
        if (missing.length > 0) await this.#claimWith(r, missing);
      });
      await this.#release();
    } catch (err) {
      this.#log.debug({ err: (err as Error).message }, 'state heartbeat failed');
    } finally {
      this.#beating = false;
    }
  }

  /** Stops the heartbeat and waits (bounded) for mirror writes in flight. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    if (this.#own.size > 0 && this.#link.up) {
      for (const s of this.#own.values()) {
        if (this.#pendingRemovals.size >= MAX_PENDING_REMOVALS) break;
        this.#pendingRemovals.set(this.#key(s.tenant, s.session_id), { tenant: s.tenant, id: s.session_id });
      }
      this.#own.clear();
      this.#track(this.#release());
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#inFlight]),
      new Promise((r) => {
        timer = setTimeout(r, CLOSE_FLUSH_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  #onMessage(m: Record<string, unknown>): void {
    if (m.t !== 'conf' || m.from === this.#link.instanceId) return;
    if (typeof m.tenant !== 'string' || typeof m.id !== 'string' || !isStringArray(m.numbers)) return;
    const k = this.#key(m.tenant, m.id);
    const own = this.#own.get(k);
    if (own !== undefined) this.#own.set(k, { ...own, conferenceNumbers: m.numbers });
  }

  async #resync(): Promise<void> {
    try {
      await this.#claim(
        [...this.#own.values()].filter((s) => !this.#conflicted.has(this.#key(s.tenant, s.session_id))),
      );
      await this.#release();
    } catch (err) {
      this.#log.debug({ err: (err as Error).message }, 'state resync failed');
    }
  }

  #claim(sessions: SessionInfo[]): Promise<void> {
    if (sessions.length === 0) return Promise.resolve();
    return this.#link.run('add_session', (r) => this.#claimWith(r, sessions));
  }

  async #claimWith(r: Redis, sessions: SessionInfo[]): Promise<void> {
    const expiresAt = Date.now() + this.#ttlMs;
    for (let i = 0; i < sessions.length; i += BATCH) {
      const batch = sessions.slice(i, i + BATCH);
      const p = r.pipeline();
      for (const s of batch) {
        const { conferenceNumbers, ...info } = s;
        p.eval(
          CLAIM,
          2,
          this.#key(s.tenant, s.session_id),
          this.#indexKey(s.tenant),
          this.#link.instanceId,
          JSON.stringify(info),
          JSON.stringify(conferenceNumbers),
          this.#ttlMs,
          expiresAt,
          s.session_id,
        );
      }
      const res = (await p.exec()) ?? [];
      batch.forEach((s, j) => {
        if (res[j]?.[1] === 0) {
          this.#conflicted.add(this.#key(s.tenant, s.session_id));
          this.#metrics.conflicts.inc();
          this.#log.warn(
            { session_id: s.session_id, tenant: s.tenant },
            'session id is live on another instance too; this instance keeps its own call',
          );
        }
      });
    }
  }

  /** Sends the removals that are waiting; those that fail stay for the next round. */
  async #release(): Promise<void> {
    if (this.#pendingRemovals.size === 0 || !this.#link.up) return;
    const batch = [...this.#pendingRemovals].slice(0, BATCH);
    await this.#link.run('remove_session', async (r) => {
      const p = r.pipeline();
      for (const [k, { tenant, id }] of batch) {
        p.eval(RELEASE, 2, k, this.#indexKey(tenant), this.#link.instanceId, id);
      }
      const res = (await p.exec()) ?? [];
      batch.forEach(([k], j) => {
        if (res[j]?.[0] === null && !this.#own.has(k)) this.#pendingRemovals.delete(k);
      });
    });
  }

  /** Mirror writes run in the background: errors are counted by the link and logged here, never thrown. */
  #track(p: Promise<unknown>): void {
    const t = p.catch((err: unknown) =>
      this.#log.debug({ err: (err as Error).message }, 'state mirror write failed'),
    );
    this.#inFlight.add(t);
    t.finally(() => this.#inFlight.delete(t));
  }

  #key(tenant: string, id: string): Key {
    return `${this.#link.prefix}s:${encodeURIComponent(tenant)}:${encodeURIComponent(id)}`;
  }

  #indexKey(tenant: string): string {
    return `${this.#link.prefix}idx:${encodeURIComponent(tenant)}`;
  }
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.length <= 1000 && v.every((x) => typeof x === 'string');
}

/** An entry as stored; undefined when missing or not of our shape (never trusted blindly). */
function parseEntry(info: string | null, conf: string | null): SessionInfo | undefined {
  if (info === null) return undefined;
  try {
    const i = JSON.parse(info) as Partial<SessionInfo>;
    const c: unknown = conf === null ? [] : JSON.parse(conf);
    if (typeof i.session_id !== 'string' || typeof i.tenant !== 'string' || typeof i.started_at !== 'string')
      return undefined;
    return {
      session_id: i.session_id,
      tenant: i.tenant,
      customer_phone: typeof i.customer_phone === 'string' ? i.customer_phone : undefined,
      direction: i.direction === 'inbound' || i.direction === 'outbound' ? i.direction : undefined,
      started_at: i.started_at,
      conferenceNumbers: isStringArray(c) ? c : [],
    };
  } catch {
    return undefined;
  }
}

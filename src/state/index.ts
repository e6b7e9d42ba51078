/**
 * Picks the state store from `STATE_STORE`: in memory for one instance (the default), or Redis shared
 * by several.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { MemorySessionRegistry, MemoryTenantStore } from './memory.js';
import { RedisLink } from './redis-link.js';
import { RedisSessionRegistry } from './redis-sessions.js';
import { RedisTenantStore } from './redis-tenants.js';
import { DEV_STATE_KEY, SecretBox } from './secret-box.js';
import { LocalSessionEvents, RedisSessionEvents } from './session-events.js';
import { createStoreMetrics } from './store-metrics.js';
import type { SessionEventBus, SessionRegistry, TenantStore } from './types.js';

export interface StateStore {
  readonly sessions: SessionRegistry;
  readonly tenants: TenantStore;
  /**
   * The Redis connection the stores share, for a feature that keeps its own records there (messaging's
   * store, src/messaging/store.ts); undefined in memory mode.
   */
  readonly link: RedisLink | undefined;
  /** Events for a live session's bot, delivered by the instance holding it. */
  readonly sessionEvents: SessionEventBus;
  /** Stops heartbeats, flushes mirror writes (bounded) and disconnects. */
  close(): Promise<void>;
}

/** How long start-up waits for Redis before going on without it (it keeps reconnecting). */
const STARTUP_WAIT_MS = 5_000;

export async function createStateStore(config: Config, log: Logger, metrics: Metrics): Promise<StateStore> {
  const initialSecrets = { default: config.mediaSecret };
  if (config.stateStore === 'memory') {
    return {
      sessions: new MemorySessionRegistry(),
      tenants: new MemoryTenantStore(initialSecrets),
      link: undefined,
      sessionEvents: new LocalSessionEvents(),
      close: async () => {},
    };
  }
  const storeMetrics = createStoreMetrics(metrics.registry);
  const link = new RedisLink(config.stateStore, config.stateKeyPrefix, log, storeMetrics);
  if (config.stateSecretKey === undefined) {
    log.warn('STATE_SECRET_KEY is not set: media secrets in Redis are sealed with a development key');
  }
  const box = new SecretBox(config.stateSecretKey ?? DEV_STATE_KEY);
  const sessions = new RedisSessionRegistry(link, config.stateSessionTtlMs, log, storeMetrics);
  const tenants = new RedisTenantStore(link, box, initialSecrets, log, storeMetrics);
  if (await link.waitReady(STARTUP_WAIT_MS)) {
    try {
      await tenants.load();
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'tenant cache load failed; retried on reconnect');
    }
  } else {
    log.error(
      { store: link.label },
      'state store unavailable at start: media upgrades answer 503 until it connects',
    );
  }
  return {
    sessions,
    tenants,
    link,
    sessionEvents: new RedisSessionEvents(link, log),
    async close() {
      await sessions.close();
      await link.close();
    },
  };
}

/**
 * Redis tenant stores for a test file, as separate instances of the bridge would have them: each on a
 * link of its own under the file's key prefix, loaded from Redis before it is handed out.
 */
import { Registry } from 'prom-client';
import { expect } from 'vitest';
import { createLogger } from '../../src/log.js';
import { RedisLink } from '../../src/state/redis-link.js';
import { RedisTenantStore } from '../../src/state/redis-tenants.js';
import { DEV_STATE_KEY, SecretBox } from '../../src/state/secret-box.js';
import { createStoreMetrics } from '../../src/state/store-metrics.js';

export interface TenantStores {
  /** The links opened so far, in order (a test reads Redis through `links[0]`). */
  readonly links: RedisLink[];
  /** A new instance's store on the Redis at `url`, sealing with `key`. */
  open(url: string, key?: Buffer): Promise<RedisTenantStore>;
  /** Closes every link opened. */
  close(): Promise<void>;
}

export function tenantStores(prefix: string): TenantStores {
  const links: RedisLink[] = [];
  return {
    links,
    async open(url, key = DEV_STATE_KEY) {
      const metrics = createStoreMetrics(new Registry());
      const link = new RedisLink(url, prefix, createLogger('silent'), metrics);
      links.push(link);
      expect(await link.waitReady(5_000)).toBe(true);
      const s = new RedisTenantStore(link, new SecretBox(key), {}, createLogger('silent'), metrics);
      await s.load();
      return s;
    },
    async close() {
      for (const link of links.splice(0)) await link.close();
    },
  };
}

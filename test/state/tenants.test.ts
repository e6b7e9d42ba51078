/**
 * The Redis tenant store in-process, against a real Redis: a media-stream config comes back from another
 * instance in the shape it was stored, with the fields the tenant left out still absent.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { MemoryTenantStore } from '../../src/state/memory.js';
import { RedisLink } from '../../src/state/redis-link.js';
import { RedisTenantStore } from '../../src/state/redis-tenants.js';
import { DEV_STATE_KEY, SecretBox } from '../../src/state/secret-box.js';
import { createStoreMetrics } from '../../src/state/store-metrics.js';
import type { MediaStreamConfig } from '../../src/state/types.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';

const skip = redisSkipReason();
if (skip !== undefined) console.warn(`state/tenants.test.ts: ${skip}`);

describe.skipIf(skip !== undefined)('Redis tenant store', () => {
  let redis: TestRedis | undefined;
  const links: RedisLink[] = [];
  const prefix = `tenants-test-${process.pid}-${Date.now()}:`;

  async function store(): Promise<RedisTenantStore> {
    const metrics = createStoreMetrics(new Registry());
    const link = new RedisLink(redis!.url, prefix, createLogger('silent'), metrics);
    links.push(link);
    expect(await link.waitReady(5_000)).toBe(true);
    const s = new RedisTenantStore(link, new SecretBox(DEV_STATE_KEY), {}, createLogger('silent'), metrics);
    await s.load();
    return s;
  }

  afterEach(async () => {
    for (const link of links.splice(0)) await link.close();
    await redis?.stop();
    redis = undefined;
  });

  it('round-trips a config with fields left out in the same shape as the memory store', async () => {
    redis = await useRedis();
    const a = await store();
    const partial: MediaStreamConfig = {
      tenant: 'acme',
      media_ws_url: 'wss://bridge.example/v1/media',
      channels: 1,
      chunk_bytes: 400,
    };
    await a.putMediaStream(partial, undefined);
    const b = await store();
    const memory = new MemoryTenantStore();
    await memory.putMediaStream(partial, undefined);
    expect(await b.getMediaStream('acme')).toStrictEqual(partial);
    expect(await a.getMediaStream('acme')).toStrictEqual(partial);
    expect(await memory.getMediaStream('acme')).toStrictEqual(partial);
  });
});

/**
 * The Redis tenant store in-process, against a real Redis: a media-stream config comes back from another
 * instance in the shape it was stored, with the fields the tenant left out still absent.
 */
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
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

  it("keeps a tenant's bot_url, sealed at rest, and clears it when a PUT leaves it out", async () => {
    redis = await useRedis();
    const a = await store();
    const b = await store();
    const config: MediaStreamConfig = {
      tenant: 'acme',
      media_ws_url: 'wss://bridge.example/v1/media',
      channels: 1,
      bot_url: 'wss://bot-user:pw-redis-1@bot.example/v1/bot?token=tok-redis-2',
    };
    await a.putMediaStream(config, undefined);
    // Another instance: at once through the announcement, and from Redis alone when it starts.
    await vi.waitFor(async () => expect(await b.getMediaStream('acme')).toStrictEqual(config), {
      timeout: 3_000,
    });
    expect(await (await store()).getMediaStream('acme')).toStrictEqual(config);
    const memory = new MemoryTenantStore();
    await memory.putMediaStream(config, undefined);
    expect(await memory.getMediaStream('acme')).toStrictEqual(config);

    // In Redis the bot URL (it may carry the bot's credentials) is sealed, not in the config JSON.
    const key = `${prefix}tenant:acme`;
    const raw = await links[0]!.run('test', (r) => r.hgetall(key));
    expect(Object.keys(raw).sort()).toEqual(['bot_url', 'config']);
    expect(JSON.stringify(raw)).not.toMatch(/pw-redis-1|tok-redis-2|bot\.example|bot-user/);

    // The upsert replaces the config: without bot_url the stored one goes, on every instance.
    const { bot_url: _dropped, ...without } = config;
    await a.putMediaStream(without, undefined);
    await vi.waitFor(async () => expect(await b.getMediaStream('acme')).toStrictEqual(without), {
      timeout: 3_000,
    });
    expect(await (await store()).getMediaStream('acme')).toStrictEqual(without);
    expect(Object.keys(await links[0]!.run('test', (r) => r.hgetall(key)))).toEqual(['config']);
  });
});

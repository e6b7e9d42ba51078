/**
 * The Redis session registry in-process, against a real Redis: what the multi-process tests cannot
 * provoke on purpose.
 */
import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { RedisLink } from '../../src/state/redis-link.js';
import { RedisSessionRegistry } from '../../src/state/redis-sessions.js';
import { createStoreMetrics, type StoreMetrics } from '../../src/state/store-metrics.js';
import type { SessionInfo } from '../../src/state/types.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const skip = redisSkipReason('state/registry.test.ts');

const session = (id: string, phone = '15550100'): SessionInfo => ({
  session_id: id,
  tenant: 'default',
  customer_phone: phone,
  direction: 'inbound',
  started_at: new Date().toISOString(),
  conferenceNumbers: [],
});

describe.skipIf(skip !== undefined)('Redis session registry', () => {
  let redis: TestRedis | undefined;
  const open: { link: RedisLink; reg: RedisSessionRegistry }[] = [];
  let client: Redis | undefined;
  const prefix = `registry-test-${process.pid}-${Date.now()}:`;

  async function instance(
    ttlMs = 3_000,
  ): Promise<{ reg: RedisSessionRegistry; metrics: StoreMetrics; link: RedisLink }> {
    const metrics = createStoreMetrics(new Registry());
    const link = new RedisLink(redis!.url, prefix, createLogger('silent'), metrics);
    expect(await link.waitReady(5_000)).toBe(true);
    const reg = new RedisSessionRegistry(link, ttlMs, createLogger('silent'), metrics);
    open.push({ link, reg });
    return { reg, metrics, link };
  }

  afterEach(async () => {
    for (const { link, reg } of open.splice(0)) {
      await reg.close();
      await link.close();
    }
    client?.disconnect();
    client = undefined;
    await redis?.stop();
    redis = undefined;
  });

  it('writes an entry again when the heartbeat finds it gone', async () => {
    redis = await useRedis();
    const { reg } = await instance();
    const other = await instance();
    await reg.add(session('s-1'));
    client = new Redis(redis.url);
    const key = `${prefix}s:default:s-1`;
    await waitFor(async () => (await client!.exists(key)) === 1, 2_000, 'the entry to be written', 10);
    await client.del(key);
    expect(await other.reg.get('default', 's-1')).toBeUndefined();
    await reg.heartbeat();
    expect(await other.reg.get('default', 's-1')).toMatchObject({ session_id: 's-1' });
    const ttl = await client.pttl(key);
    expect(ttl).toBeGreaterThan(2_000);
    expect(ttl).toBeLessThanOrEqual(3_000);
  });

  it('an id already live on another instance: both calls go on, the conflict is counted, the first entry stays', async () => {
    redis = await useRedis();
    const a = await instance();
    const b = await instance();
    const c = await instance();
    await a.reg.add(session('dup', '15550001'));
    await waitFor(
      async () => (await c.reg.get('default', 'dup')) !== undefined,
      2_000,
      'the entry to be written',
      10,
    );
    expect(await b.reg.add(session('dup', '15550002'))).toBe(true);
    await waitFor(
      async () => ((await b.metrics.conflicts.get()).values[0]?.value ?? 0) >= 1,
      2_000,
      'the conflict to be counted',
      10,
    );
    await b.reg.heartbeat();
    expect((await c.reg.get('default', 'dup'))?.customer_phone).toBe('15550001');
    // Removing B's call leaves A's entry alone.
    await b.reg.remove('default', 'dup');
    await b.reg.heartbeat();
    expect((await c.reg.get('default', 'dup'))?.customer_phone).toBe('15550001');
  });

  it('lists every instance once, own calls from the local copy, and prunes entries that expired', async () => {
    redis = await useRedis();
    const a = await instance(1_000);
    const b = await instance(1_000);
    for (let i = 0; i < 30; i++) await (i % 2 === 0 ? a : b).reg.add(session(`l-${i}`));
    await waitFor(async () => (await a.reg.list('default')).length >= 30, 2_000, 'all 30 listed', 10);
    expect(new Set((await b.reg.list('default')).map((s) => s.session_id)).size).toBe(30);
    // B loses Redis without removing anything (as a crash would): its 15 leave within the TTL.
    await b.link.close();
    const goneMs = await waitFor(
      async () => (await a.reg.list('default')).length === 15,
      3_000,
      "B's 15 to leave the list",
      50,
    );
    expect(goneMs).toBeGreaterThan(100); // by expiry, not by removal
    expect(goneMs).toBeLessThan(2_000);
    client = new Redis(redis.url);
    expect(await client.zcard(`${prefix}idx:default`)).toBe(15);
  });
});

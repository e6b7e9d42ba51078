/**
 * The Redis tenant store in-process, against a real Redis: a media-stream config comes back from another
 * instance in the shape it was stored, with the fields the tenant left out still absent.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryTenantStore } from '../../src/state/memory.js';
import { DEV_STATE_KEY, SecretBox } from '../../src/state/secret-box.js';
import type { MediaStreamConfig } from '../../src/state/types.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { quietFor } from '../helpers/wait.js';
import { tenantStores } from './tenant-stores.js';

const skip = redisSkipReason('state/tenants.test.ts');

describe.skipIf(skip !== undefined)('Redis tenant store', () => {
  let redis: TestRedis | undefined;
  const prefix = `tenants-test-${process.pid}-${Date.now()}:`;
  const stores = tenantStores(prefix);
  const links = stores.links;

  const store = (key?: Buffer) => stores.open(redis!.url, key);

  afterEach(async () => {
    await stores.close();
    await redis?.stop();
    redis = undefined;
  });

  it('keeps a tenant\'s "recording": true for another instance, and a later upsert without it clears it', async () => {
    redis = await useRedis();
    const a = await store();
    const on: MediaStreamConfig = {
      tenant: 'rec',
      media_ws_url: 'wss://bridge.example/v1/media',
      channels: 1,
      recording: true,
    };
    await a.putMediaStream(on, undefined);
    expect(await (await store()).getMediaStream('rec')).toStrictEqual(on);
    const { recording: _r, ...off } = on;
    await a.putMediaStream(off, undefined);
    expect(await (await store()).getMediaStream('rec')).toStrictEqual(off);
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

  it('a bot_url that does not unseal (another STATE_SECRET_KEY) is marked unreadable: not dropped, not the one cached before', async () => {
    redis = await useRedis();
    const otherKey = randomBytes(32);
    const a = await store();
    const config: MediaStreamConfig = {
      tenant: 'acme',
      media_ws_url: 'wss://bridge.example/v1/media',
      channels: 1,
      bot_url: 'wss://bot.example/v1/old',
    };
    await a.putMediaStream(config, undefined);
    const { bot_url: _b, ...rest } = config;
    // An instance with another key, from Redis alone.
    expect(await (await store(otherKey)).getMediaStream('acme')).toStrictEqual({
      ...rest,
      bot_url_unreadable: true,
    });
    // One that had read the old bot_url, when another key seals a new one: not the old one kept.
    const other = await store(otherKey);
    await other.putMediaStream({ ...config, bot_url: 'wss://bot.example/v1/new' }, undefined);
    await vi.waitFor(
      async () => expect(await a.getMediaStream('acme')).toStrictEqual({ ...rest, bot_url_unreadable: true }),
      { timeout: 3_000 },
    );
    // Never written back: a PUT replaces it.
    await a.putMediaStream(config, undefined);
    expect(await a.getMediaStream('acme')).toStrictEqual(config);
    expect(
      JSON.parse((await links[0]!.run('test', (r) => r.hget(`${prefix}tenant:acme`, 'config')))!),
    ).toEqual(rest);
  });

  it("sealing contexts are prefixed: tenant 'bot_url\\0X's secret does not open as X's bot_url; secrets sealed before still open", async () => {
    redis = await useRedis();
    const a = await store();
    const evil = 'bot_url\u0000acme';
    await a.putMediaStream(
      { tenant: evil, media_ws_url: 'wss://evil.example/m', channels: 1 },
      'ws://169.254.169.254/',
    );
    await a.putMediaStream(
      { tenant: 'acme', media_ws_url: 'wss://bridge.example/m', channels: 1 },
      'acme-secret-1',
    );
    // Someone with write access to Redis copies the first tenant's sealed secret into acme's bot_url.
    const sealed = await links[0]!.run('test', (r) =>
      r.hget(`${prefix}tenant:${encodeURIComponent(evil)}`, 'secret'),
    );
    await links[0]!.run('test', (r) => r.hset(`${prefix}tenant:acme`, 'bot_url', sealed!));
    const b = await store();
    expect(await b.getMediaSecret(evil)).toBe('ws://169.254.169.254/');
    const acme = await b.getMediaStream('acme');
    expect(acme?.bot_url).toBeUndefined();
    expect(acme?.bot_url_unreadable).toBe(true);

    // A secret sealed under the bare tenant name (as stored before the prefix) still opens ...
    const box = new SecretBox(DEV_STATE_KEY);
    await links[0]!.run('test', (r) =>
      r.hset(`${prefix}tenant:acme`, 'secret', box.seal('acme-secret-0', 'acme')),
    );
    expect(await (await store()).getMediaSecret('acme')).toBe('acme-secret-0');
    // ... but not for a name holding NUL, whose bare name could be another field's context.
    await links[0]!.run('test', (r) =>
      r.hset(`${prefix}tenant:${encodeURIComponent(evil)}`, 'secret', box.seal('x-secret', evil)),
    );
    expect(await (await store()).getMediaSecret(evil)).toBeUndefined();
  });

  it("a bridge whose STATE_SECRET_KEY does not open the tenant's bot_url: the call gets bot_unavailable, never BOT_URL", async () => {
    redis = await useRedis();
    const bot = await TestBot.start({ echo: true });
    const global = await TestBot.start({ echo: true });
    const keyPrefix = `${prefix}bridge:`;
    const env = { STATE_STORE: redis.url, STATE_KEY_PREFIX: keyPrefix, BOT_URL: global.url };
    const writer = await startBridge({ ...env, STATE_SECRET_KEY: randomBytes(32).toString('hex') });
    const logs = captureLog('debug');
    const reader = await startBridge(
      { ...env, STATE_SECRET_KEY: randomBytes(32).toString('hex') },
      { log: logs.log },
    );
    const p = new TestProvider(reader.mediaUrl, { token: await reader.mediaToken() });
    try {
      const res = await fetch(`${writer.http}/v1/media-stream`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${await writer.restToken(['media:manage'])}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ media_ws_url: 'ws://127.0.0.1:9/v1/media', bot_url: `${bot.url}/bot` }),
      });
      expect(res.status).toBe(200);
      await vi.waitFor(
        async () =>
          expect(await reader.bridge.ctx.tenants.getMediaStream('default')).toMatchObject({
            bot_url_unreadable: true,
          }),
        { timeout: 3_000 },
      );
      await p.start('sealed-call');
      const err = await p.waitEvent('error', 2_000);
      expect(err.code).toBe('bot_unavailable');
      // The call is not ended for want of a bot: nothing closes it in the next 200 ms.
      await quietFor(200, 'the call to stay up without its bot');
      expect(p.closeCode).toBeUndefined();
      expect([bot.connections.length, global.connections.length]).toEqual([0, 0]);
      expect(logs.find(/cannot be unsealed/, 'sealed-call')).toMatchObject([
        { level: 40, tenant: 'default' },
      ]);
      expect(logs.find(/stored bot_url does not open/)).toMatchObject([{ tenant: 'default' }]);
    } finally {
      p.close();
      await reader.close();
      await writer.close();
      await bot.close();
      await global.close();
    }
  });
});

/**
 * A tenant's `bot` at rest in a real Redis: sealed whole (its api key and URL credentials are in no
 * Redis value), opened by another instance with the same STATE_SECRET_KEY, and failing closed
 * (unreadable, never the environment's bot) with another key.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolveBot } from '../../src/config/bot-settings.js';
import type { MediaStreamConfig } from '../../src/state/types.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { tenantStores } from './tenant-stores.js';

const API_KEY = 'sk-redis-Hv39QpLw0s8XeTn5Ra1d';

const skip = redisSkipReason('state/bot-secrets.test.ts');

/** Every value under `prefix`, hashes field by field, as one string. */
async function dump(client: Redis, prefix: string): Promise<string> {
  let out = '';
  for (const k of await client.keys(`${prefix}*`)) {
    const type = await client.type(k);
    if (type === 'hash') out += JSON.stringify(await client.hgetall(k));
    else if (type === 'set') out += JSON.stringify(await client.smembers(k));
    else if (type === 'string') out += await client.get(k);
  }
  return out;
}

describe.skipIf(skip !== undefined)("a tenant's bot in Redis", () => {
  let redis: TestRedis | undefined;
  const bridges: TestBridge[] = [];
  let client: Redis | undefined;
  const prefix = `bot-secrets-${process.pid}-${Date.now()}:`;
  const stores = tenantStores(prefix);
  const _links = stores.links;

  const store = (key: Buffer) => stores.open(redis!.url, key);

  afterEach(async () => {
    for (const b of bridges.splice(0)) await b.close();
    await stores.close();
    client?.disconnect();
    client = undefined;
    await redis?.stop();
    redis = undefined;
  });

  it('sealed whole under its own field: the store of another instance with the key reads it; one with another key marks it unreadable', async () => {
    redis = await useRedis();
    const key = randomBytes(32);
    const a = await store(key);
    const b = await store(key);
    const config: MediaStreamConfig = {
      tenant: 'acme',
      media_ws_url: 'wss://bridge.example/v1/media',
      channels: 1,
      bot: {
        dialect: 'openai-realtime',
        url: 'wss://rt-user:rt-pw-41@realtime.example/v1/realtime?key=rt-q-42',
        apiKey: API_KEY,
        model: 'gpt-realtime',
        turnDetection: 'server_vad',
      },
    };
    await a.putMediaStream(config, undefined);
    await vi.waitFor(async () => expect(await b.getMediaStream('acme')).toStrictEqual(config), {
      timeout: 3_000,
    });
    expect(await (await store(key)).getMediaStream('acme')).toStrictEqual(config);

    client = new Redis(redis.url);
    const raw = await client.hgetall(`${prefix}tenant:acme`);
    expect(Object.keys(raw).sort()).toEqual(['bot', 'config']);
    expect(raw.bot).toMatch(/^v1\./);
    expect(await dump(client, prefix)).not.toMatch(
      /sk-redis|Hv39QpLw|rt-pw-41|rt-q-42|realtime\.example|gpt-realtime/,
    );

    // Another key: the bot is unreadable (so resolveBot gives no bot, not the environment's).
    const other = await store(randomBytes(32));
    const { bot: _bot, ...rest } = config;
    const seen = await other.getMediaStream('acme');
    expect(seen).toStrictEqual({ ...rest, bot_unreadable: true });
    expect(resolveBot(seen, { bot: { dialect: 'builtin', url: 'builtin:echo' } })).toEqual({
      unreadable: true,
    });

    // The short form replaces it (and the other way round): one field or the other, never both.
    await a.putMediaStream({ ...rest, bot_url: 'builtin:tone:500' }, undefined);
    expect(Object.keys(await client.hgetall(`${prefix}tenant:acme`)).sort()).toEqual(['bot_url', 'config']);
    await vi.waitFor(
      async () =>
        expect(await b.getMediaStream('acme')).toStrictEqual({ ...rest, bot_url: 'builtin:tone:500' }),
      { timeout: 3_000 },
    );
    await a.putMediaStream(config, undefined);
    expect(Object.keys(await client.hgetall(`${prefix}tenant:acme`)).sort()).toEqual(['bot', 'config']);
    await a.putMediaStream(rest, undefined);
    expect(Object.keys(await client.hgetall(`${prefix}tenant:acme`))).toEqual(['config']);
    await vi.waitFor(async () => expect(await b.getMediaStream('acme')).toStrictEqual(rest), {
      timeout: 3_000,
    });
  });

  it("a sealed value moved between fields or tenants does not open: bot_url's seal is no bot, acme's bot is not beta's", async () => {
    redis = await useRedis();
    const key = randomBytes(32);
    const a = await store(key);
    const base = { media_ws_url: 'wss://bridge.example/v1/media', channels: 1 } as const;
    await a.putMediaStream(
      { tenant: 'acme', ...base, bot: { dialect: 'bridge', url: 'wss://bot.example/a' } },
      undefined,
    );
    await a.putMediaStream({ tenant: 'beta', ...base, bot_url: 'wss://bot.example/b' }, undefined);
    client = new Redis(redis.url);
    const acme = await client.hgetall(`${prefix}tenant:acme`);
    const beta = await client.hgetall(`${prefix}tenant:beta`);
    // beta's sealed bot_url written as its bot; acme's sealed bot written as beta's too.
    await client.hset(`${prefix}tenant:beta`, 'bot', beta.bot_url!);
    expect((await (await store(key)).getMediaStream('beta'))?.bot_unreadable).toBe(true);
    await client.hset(`${prefix}tenant:beta`, 'bot', acme.bot!);
    const seen = await (await store(key)).getMediaStream('beta');
    expect(seen?.bot_unreadable).toBe(true);
    expect(seen?.bot).toBeUndefined();
  });

  it('over HTTP: the api key is in no Redis value; a second bridge with the same key reads the bot, one with another fails closed', async () => {
    redis = await useRedis();
    const keyPrefix = `${prefix}http:`;
    const stateKey = randomBytes(32).toString('hex');
    const env = { STATE_STORE: redis.url, STATE_KEY_PREFIX: keyPrefix };
    const writer = await startBridge({ ...env, STATE_SECRET_KEY: stateKey });
    const twin = await startBridge({ ...env, STATE_SECRET_KEY: stateKey });
    const logs = captureLog('debug');
    const stranger = await startBridge(
      { ...env, STATE_SECRET_KEY: randomBytes(32).toString('hex') },
      { log: logs.log },
    );
    bridges.push(writer, twin, stranger);
    const bot = {
      dialect: 'openai-realtime',
      url: 'ws://127.0.0.1:9/v1/realtime',
      api_key: API_KEY,
      voice: 'marin',
    };
    const put = await fetch(`${writer.http}/v1/media-stream`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${await writer.restToken(['media:manage'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ media_ws_url: 'ws://127.0.0.1:9/v1/media', bot }),
    });
    const putText = await put.text();
    expect(put.status).toBe(200);
    expect(putText).not.toContain(API_KEY);

    client = new Redis(redis.url);
    const all = await dump(client, keyPrefix);
    expect(all).toContain('ws://127.0.0.1:9/v1/media');
    expect(all).not.toContain(API_KEY);
    expect(all).not.toContain('marin');

    const read = async (b: TestBridge) => {
      const r = await fetch(`${b.http}/v1/media-stream`, {
        headers: { authorization: `Bearer ${await b.restToken(['media:manage'])}` },
      });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const shown = {
      dialect: 'openai-realtime',
      url: 'ws://127.0.0.1:9/v1/realtime',
      api_key_hint: '****Ra1d',
      voice: 'marin',
    };
    await vi.waitFor(async () => expect((await read(twin)).body.bot).toEqual(shown), { timeout: 3_000 });
    expect((await twin.bridge.ctx.tenants.getMediaStream('default'))?.bot?.apiKey).toBe(API_KEY);

    await vi.waitFor(
      async () => expect((await read(stranger)).body).toMatchObject({ bot: null, bot_unreadable: true }),
      { timeout: 3_000 },
    );
    const stored = await stranger.bridge.ctx.tenants.getMediaStream('default');
    expect(resolveBot(stored, stranger.bridge.ctx.config)).toEqual({ unreadable: true });
    expect(logs.find(/stored bot does not open/)).toMatchObject([{ tenant: 'default' }]);
    expect(JSON.stringify(logs.lines)).not.toContain(API_KEY);
  });
});

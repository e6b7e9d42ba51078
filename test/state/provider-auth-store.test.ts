/**
 * A tenant's provider credentials in the Redis tenant store, against a real Redis: sealed at rest, one
 * hash field per dialect, read back by another instance in the memory store's shape, changed per
 * dialect, and failing closed (that dialect only) under another STATE_SECRET_KEY.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { providerCredential } from '../../src/media/providers/provider-auth.js';
import { MemoryTenantStore } from '../../src/state/memory.js';
import type { MediaStreamConfig } from '../../src/state/types.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { tenantStores } from './tenant-stores.js';

const skip = redisSkipReason('state/provider-auth-store.test.ts');

const CONFIG: MediaStreamConfig = {
  tenant: 'acme',
  media_ws_url: 'wss://bridge.example/v1/media',
  channels: 1,
};
const TWILIO = { auth_token: 'acme-twilio-token-redis-1' };
const EXOTEL = { username: 'acme-exotel-key', password: 'acme-exotel-password-redis-2' };
const VONAGE = { allow: ['203.0.113.0/24'], token: 'acme-vonage-token-redis-3' };

describe.skipIf(skip !== undefined)('provider_auth in the Redis tenant store', () => {
  let redis: TestRedis | undefined;
  // A prefix per test: with a shared Redis (REDIS_URL), one test's keys must not show in the next.
  let run = 0;
  let prefix = '';
  let stores = tenantStores(prefix);
  let links = stores.links;
  beforeEach(() => {
    prefix = `provauth-test-${process.pid}-${Date.now()}-${run++}:`;
    stores = tenantStores(prefix);
    links = stores.links;
  });
  const store = (key?: Buffer) => stores.open(redis!.url, key);

  afterEach(async () => {
    await stores.close();
    await redis?.stop();
    redis = undefined;
  });

  it('round-trips sealed, per dialect, as the memory store does; other instances follow each change', async () => {
    redis = await useRedis();
    const a = await store();
    const b = await store();
    const memory = new MemoryTenantStore();
    for (const s of [a, memory])
      await s.putMediaStream(CONFIG, undefined, { twilio: TWILIO, exotel: EXOTEL });
    const want = { twilio: TWILIO, exotel: EXOTEL };
    expect(await memory.getProviderAuth('acme')).toStrictEqual(want);
    expect(await a.getProviderAuth('acme')).toStrictEqual(want);
    await vi.waitFor(async () => expect(await b.getProviderAuth('acme')).toStrictEqual(want), {
      timeout: 3_000,
    });
    expect(await (await store()).getProviderAuth('acme')).toStrictEqual(want);

    // At rest: one field per dialect, sealed; nothing of it in the config JSON.
    const raw = await links[0]!.run('test', (r) => r.hgetall(`${prefix}tenant:acme:provider_auth`));
    expect(Object.keys(raw).sort()).toEqual(['exotel', 'twilio']);
    const all =
      JSON.stringify(raw) + (await links[0]!.run('test', (r) => r.hget(`${prefix}tenant:acme`, 'config')));
    expect(all).not.toMatch(/redis-1|redis-2|acme-exotel-key/);

    // A PUT without provider_auth keeps them; one naming dialects changes only those.
    for (const s of [a, memory]) await s.putMediaStream(CONFIG, undefined);
    expect(await (await store()).getProviderAuth('acme')).toStrictEqual(want);
    for (const s of [a, memory]) await s.putMediaStream(CONFIG, undefined, { twilio: null, vonage: VONAGE });
    const after = { exotel: EXOTEL, vonage: VONAGE };
    expect(await memory.getProviderAuth('acme')).toStrictEqual(after);
    expect(await a.getProviderAuth('acme')).toStrictEqual(after);
    await vi.waitFor(async () => expect(await b.getProviderAuth('acme')).toStrictEqual(after), {
      timeout: 3_000,
    });
    expect(await (await store()).getProviderAuth('acme')).toStrictEqual(after);
    expect(await a.getProviderAuth('other')).toStrictEqual({});
  });

  it('a credential that does not unseal (another key, or copied to another dialect) is unreadable, and refuses', async () => {
    redis = await useRedis();
    const a = await store();
    await a.putMediaStream(CONFIG, undefined, { twilio: TWILIO });
    const other = await store(randomBytes(32));
    expect(await other.getProviderAuth('acme')).toStrictEqual({ twilio: 'unreadable' });
    const ctx = {
      config: { providerAuthEnv: { twilio: { auth_token: 'env-twin' } } } as never,
      tenants: other,
    };
    await expect(providerCredential(ctx, 'acme', 'twilio')).rejects.toMatchObject({ status: 401 });

    // Twilio's sealed value copied into telnyx's field does not open there (the dialect is in the context).
    const key = `${prefix}tenant:acme:provider_auth`;
    const sealed = await links[0]!.run('test', (r) => r.hget(key, 'twilio'));
    await links[0]!.run('test', (r) => r.hset(key, 'telnyx', sealed!));
    expect(await (await store()).getProviderAuth('acme')).toStrictEqual({
      twilio: TWILIO,
      telnyx: 'unreadable',
    });
  });
});

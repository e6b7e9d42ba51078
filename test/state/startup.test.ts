/**
 * An instance started while Redis is away: it comes up, refuses media upgrades and store-backed routes
 * with 503 naming the store (a secret rotated meanwhile is unknown to it), and serves once Redis answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { redisBinarySkipReason, type TestRedis, useRedis } from '../helpers/redis.js';
import { waitFor } from '../helpers/wait.js';

const skip = redisBinarySkipReason('state/startup.test.ts');

describe.skipIf(skip !== undefined)('start-up without Redis', () => {
  let redis: TestRedis | undefined;
  let bridge: TestBridge | undefined;
  const providers: TestProvider[] = [];

  afterEach(async () => {
    for (const p of providers.splice(0)) p.close();
    await bridge?.close();
    bridge = undefined;
    await redis?.stop();
    redis = undefined;
  });

  it('answers 503 naming the store until Redis comes, then serves', async () => {
    redis = await useRedis({ own: true });
    await redis.stop();
    bridge = await startBridge({ STATE_STORE: redis.url, STATE_KEY_PREFIX: `startup-${process.pid}:` });
    const token = await bridge.restToken(['sessions:read']);
    const list = await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
    expect(list.status).toBe(503);
    expect(await list.json()).toMatchObject({
      error: 'store_unavailable',
      message: expect.stringContaining(`Redis at 127.0.0.1:${redis.port}`),
    });
    const refused = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken() });
    providers.push(refused);
    await expect(refused.opened).rejects.toThrow(/503/);

    await redis.restart();
    const t = bridge;
    await waitFor(
      async () => {
        const p = new TestProvider(t.mediaUrl, { token: await t.mediaToken() });
        providers.push(p);
        return p.opened.then(
          () => true,
          () => false,
        );
      },
      8_000,
      'media upgrades to be accepted once Redis answers',
      100,
    );
    const ok = await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
  });
});

/**
 * Media secrets at rest: sealed so a dump of Redis alone does not reveal them, and the configuration
 * that guards the key.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { SecretBox } from '../../src/state/secret-box.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { redisSkipReason, type TestRedis, useRedis } from '../helpers/redis.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    throw err;
  }
}

describe('state store configuration', () => {
  it('keeps sessions of a crashed instance listed no longer than 15 s by default', () => {
    const c = loadConfig({});
    expect(c.stateStore).toBe('memory');
    expect(c.stateSessionTtlMs).toBeLessThanOrEqual(15_000);
    expect(c.stateKeyPrefix).toBe('voicebridge:');
  });

  it('refuses Redis in production without STATE_SECRET_KEY, in one line naming it', () => {
    const prod = {
      NODE_ENV: 'production',
      PROVIDER_BASE_URL: 'https://provider.example/v1',
      MEDIA_SECRET: 'm'.repeat(16),
      AUTH_JWT_SECRET: 'a'.repeat(16),
      STATE_STORE: 'redis://127.0.0.1:6379',
    };
    const lines = problems(prod);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^STATE_SECRET_KEY must be set when NODE_ENV=production and STATE_STORE is Redis/,
    );
    expect(problems({ ...prod, STATE_SECRET_KEY: randomBytes(32).toString('hex') })).toEqual([]);
    expect(problems({ ...prod, STATE_SECRET_KEY: randomBytes(32).toString('base64') })).toEqual([]);
    expect(problems({ ...prod, STATE_STORE: 'memory' })).toEqual([]);
  });

  it('rejects a key of the wrong size without echoing it', () => {
    const lines = problems({ STATE_SECRET_KEY: 'not-a-key-but-a-password' });
    expect(lines).toEqual([
      'STATE_SECRET_KEY must be 32 bytes as 64 hex characters or base64, got 24 characters',
    ]);
    expect(problems({ STATE_KEY_PREFIX: 'has space' })[0]).toMatch(/^STATE_KEY_PREFIX must be/);
    expect(problems({ STATE_SESSION_TTL_MS: '100' })[0]).toMatch(/^STATE_SESSION_TTL_MS must be an integer/);
  });
});

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, for the same tenant only, and each seal differs', () => {
    const a = box.seal('media-secret-123', 'tenant-a');
    const b = box.seal('media-secret-123', 'tenant-a');
    expect(a).not.toEqual(b);
    expect(a).not.toContain('media-secret');
    expect(Buffer.from(a.slice(3), 'base64url').toString('latin1')).not.toContain('media-secret');
    expect(box.open(a, 'tenant-a')).toBe('media-secret-123');
    expect(() => box.open(a, 'tenant-b')).toThrow();
  });

  it('refuses another key and any altered byte', () => {
    const sealed = box.seal('media-secret-123', 't');
    expect(() => new SecretBox(randomBytes(32)).open(sealed, 't')).toThrow();
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    expect(() => box.open(`v1.${raw.toString('base64url')}`, 't')).toThrow();
  });
});

const skip = redisSkipReason('state/secrets.test.ts');

describe.skipIf(skip !== undefined)('media secret in Redis', () => {
  let redis: TestRedis | undefined;
  let bridge: TestBridge | undefined;
  let client: Redis | undefined;

  afterEach(async () => {
    await bridge?.close();
    bridge = undefined;
    client?.disconnect();
    client = undefined;
    await redis?.stop();
    redis = undefined;
  });

  it('is not in a dump of every key the bridge wrote, and is never returned', async () => {
    redis = await useRedis();
    const prefix = `secrets-test-${process.pid}-${Date.now()}:`;
    bridge = await startBridge({
      STATE_STORE: redis.url,
      STATE_KEY_PREFIX: prefix,
      STATE_SECRET_KEY: randomBytes(32).toString('hex'),
    });
    const secret = 'a-rotated-media-secret-7731';
    const res = await fetch(`${bridge.http}/v1/media-stream`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${await bridge.restToken(['media:manage'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ media_ws_url: 'ws://127.0.0.1:9/v1/media', media_secret: secret }),
    });
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).not.toContain(secret);

    client = new Redis(redis.url);
    const keys = await client.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    let dump = '';
    for (const k of keys) {
      const type = await client.type(k);
      if (type === 'hash') dump += JSON.stringify(await client.hgetall(k));
      else if (type === 'set') dump += JSON.stringify(await client.smembers(k));
      else if (type === 'string') dump += await client.get(k);
      const raw = await client.dump(k);
      if (raw !== null) dump += raw;
    }
    expect(dump).toContain('ws://127.0.0.1:9/v1/media');
    expect(dump).not.toContain(secret);
    // Reads show the hint only.
    const ws = await fetch(`${bridge.http}/v1/media-stream`, {
      headers: { authorization: `Bearer ${await bridge.restToken(['media:manage'])}` },
    });
    expect(await ws.json()).toMatchObject({ secret_hint: '****31' });
  });
});

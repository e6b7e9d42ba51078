import { afterEach, describe, expect, it, vi } from 'vitest';
import { jwksServer, rsaKey } from '../helpers/jwks.js';
import { call, holdSession, type Rig, restToken, startRig } from './harness.js';

describe('REST bearer tokens from a remote JWKS', () => {
  let rig: Rig | undefined;
  let jwks: Awaited<ReturnType<typeof jwksServer>> | undefined;
  afterEach(async () => {
    vi.useRealTimers();
    await rig?.close();
    await jwks?.close();
    rig = undefined;
    jwks = undefined;
  });

  it('verifies RS256 keys, reads scopes from scope or scp, and picks up rotated keys', async () => {
    jwks = await jwksServer();
    const k1 = await rsaKey('k1');
    const k2 = await rsaKey('k2');
    jwks.keys = [k1.jwk];
    rig = await startRig({ env: { AUTH_JWT_SECRET: '', AUTH_JWKS_URL: jwks.url } });
    await holdSession(rig.bridge, 'call-1');
    const consult = (token: string) =>
      call(rig!.http, 'POST', '/v1/sessions/call-1/consult', { token, body: { calledParty: '100' } });

    expect((await consult(await k1.sign({ scope: 'sessions:read calls:control' }))).status).toBe(200);
    expect((await consult(await k1.sign({ scp: ['calls:control'] }))).status).toBe(200);
    expect((await consult(await k1.sign({ scp: ['sessions:read'] }))).status).toBe(403);
    expect(jwks.fetches()).toBe(1); // cached

    // HS256 is never accepted from a JWKS configuration (no algorithm confusion).
    const hs = await consult(await restToken(['calls:control']));
    expect(hs.status).toBe(401);
    expect(hs.body.message).toMatch(/algorithm/);

    // Rotation: the provider of keys now publishes k2 only. After the refetch cooldown, a token with the
    // new kid makes the verifier fetch the set again; the retired key stops working.
    jwks.keys = [k2.jwk];
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 31_000);
    const rotated = await consult(await k2.sign({ scope: 'calls:control' }));
    expect(rotated.status).toBe(200);
    expect(jwks.fetches()).toBe(2);
    const retired = await consult(await k1.sign({ scope: 'calls:control' }));
    expect(retired.status).toBe(401);
    expect(retired.body).toEqual({ error: 'unauthorized', message: expect.stringMatching(/JWKS/) });
  });
});

describe('REST bearer tokens with HS256', () => {
  it('refuses an RS256 token and an unsigned one (algorithm pinned)', async () => {
    const rig = await startRig({ providerUrl: null });
    try {
      const k = await rsaKey('k1');
      const rs = await call(rig.http, 'GET', '/v1/media-stream', {
        token: await k.sign({ scope: 'media:manage' }),
      });
      expect(rs.status).toBe(401);
      const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
      const payload = Buffer.from(JSON.stringify({ scope: 'media:manage', exp: 2e9 })).toString('base64url');
      const none = await call(rig.http, 'GET', '/v1/media-stream', { token: `${header}.${payload}.` });
      expect(none.status).toBe(401);
      const good = await call(rig.http, 'GET', '/v1/media-stream', {
        token: await restToken(['media:manage']),
      });
      expect(good.status).toBe(404); // authorised; nothing registered yet
    } finally {
      await rig.close();
    }
  });
});

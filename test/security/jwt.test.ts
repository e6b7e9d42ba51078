/**
 * Token attacks against both verifiers, on a real bridge: `alg: none`, HS/RS confusion both ways, a
 * wrong key, expired, not yet valid (`nbf`), a token naming another tenant, a missing scope. (The plain
 * RS256-against-HS256 and unsigned REST cases are in test/control/auth.test.ts; a missing, bad or
 * expired media token in test/media/endpoint.test.ts; a session_start naming another tenant than the
 * token in the same file; another tenant's session via REST in test/control/calls.test.ts.)
 *
 * Constant time: neither verifier compares a secret itself. jose checks an HS256 signature with
 * `crypto.subtle.verify` (jose dist/webapi/lib/jws_verify.js), which Node computes and compares with
 * OpenSSL's CRYPTO_memcmp; the last test here proves the bridge goes through that path by stubbing it.
 */
import { exportSPKI, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { call, type Rig, restToken, startRig } from '../control/harness.js';
import { jwksServer, rsaKey } from '../helpers/jwks.js';
import { upgradeAnswer } from '../helpers/upgrade.js';

const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

function hs256(
  secret: string | Uint8Array,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
) {
  const key = typeof secret === 'string' ? new TextEncoder().encode(secret) : secret;
  return new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT', ...header }).sign(key);
}

let rig: Rig | undefined;
let jwks: Awaited<ReturnType<typeof jwksServer>> | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await rig?.close();
  await jwks?.close();
  rig = undefined;
  jwks = undefined;
});

async function rest(token: string, path = '/v1/media-stream') {
  return call(rig!.http, 'GET', path, { token });
}

describe('REST tokens (HS256 secret)', () => {
  it('refuses wrong key, expired, not yet valid; 403 without the scope; each with the contract body', async () => {
    rig = await startRig({ providerUrl: null });
    const cases: [string, string, number, RegExp][] = [
      ['wrong key', await restToken(['media:manage'], undefined, 'another-secret'), 401, /bad signature/],
      [
        'expired',
        await hs256('control-test-auth-secret', { scope: 'media:manage', exp: now() - 120 }),
        401,
        /expired/,
      ],
      [
        'not yet valid',
        await hs256('control-test-auth-secret', {
          scope: 'media:manage',
          nbf: now() + 3600,
          exp: now() + 7200,
        }),
        401,
        /"nbf" claim/,
      ],
      ['missing scope', await restToken(['sessions:read']), 403, /lacks the scope "media:manage"/],
      [
        'alg none',
        `${enc({ alg: 'none' })}.${enc({ scope: 'media:manage', exp: 2e9 })}.`,
        401,
        /invalid|algorithm/,
      ],
    ];
    for (const [what, token, status, message] of cases) {
      const r = await rest(token);
      expect(r.status, what).toBe(status);
      expect(r.body, what).toEqual({
        error: status === 401 ? 'unauthorized' : 'forbidden',
        message: expect.stringMatching(message),
      });
    }
    // Control: the right token is authorised (404: nothing registered yet).
    expect((await rest(await restToken(['media:manage']))).status).toBe(404);
  });
});

describe('REST tokens (JWKS)', () => {
  it('refuses an HS256 token signed with the RSA public key as the secret (HS/RS confusion), and alg none', async () => {
    jwks = await jwksServer();
    const k = await rsaKey('k1');
    jwks.keys = [k.jwk];
    rig = await startRig({ providerUrl: null, config: { authJwtSecret: undefined, authJwksUrl: jwks.url } });
    const pem = await exportSPKI(k.publicKey);
    const claims = { scope: 'media:manage', exp: now() + 600 };
    for (const secret of [
      pem,
      new TextEncoder().encode(JSON.stringify(k.jwk)),
      Buffer.from(k.jwk.n!, 'base64url'),
    ]) {
      const forged = await hs256(secret, claims, { kid: 'k1' });
      const r = await rest(forged);
      expect(r.status).toBe(401);
      expect(r.body).toEqual({
        error: 'unauthorized',
        message: expect.stringMatching(/algorithm that is not accepted/),
      });
    }
    const none = await rest(`${enc({ alg: 'none', kid: 'k1' })}.${enc(claims)}.`);
    expect(none.status).toBe(401);
    // Control: the same claims signed with the private key pass.
    expect((await rest(await k.sign({ scope: 'media:manage' }))).status).toBe(404);
  });
});

describe('media tokens (HS256 with the tenant media secret)', () => {
  it('refuses alg none, RS256, not-yet-valid, wrong key, and a tenant claim the secret does not sign', async () => {
    rig = await startRig({ providerUrl: null });
    const media = `${rig.http.replace('http', 'ws')}/v1/media`;
    const secret = 'control-test-media-secret';
    // Tenant "b" with its own secret: a token naming "b" but signed with default's secret must fail.
    await rig.bridge.ctx.tenants.putMediaStream(
      {
        tenant: 'b',
        media_ws_url: 'wss://bridge.example/v1/media',
        codec: 'slin',
        input_sample_rate: 8000,
        output_sample_rate: 8000,
        channels: 1,
        encoding: 'binary',
        chunk_bytes: 320,
      } as never,
      'tenant-b-media-secret-0123456789',
    );
    const k = await rsaKey('m1');
    const cases: [string, string, RegExp][] = [
      ['alg none', `${enc({ alg: 'none' })}.${enc({ exp: now() + 600 })}.`, /invalid|algorithm/],
      ['RS256', await k.sign({}), /algorithm that is not accepted/],
      ['not yet valid', await hs256(secret, { nbf: now() + 3600, exp: now() + 7200 }), /"nbf" claim/],
      ['no exp', await hs256(secret, {}), /"exp" claim/],
      ['wrong key', await mintToken({ secret: 'not-the-media-secret' }), /bad signature/],
      ['other tenant', await mintToken({ secret, tenant: 'b' }), /bad signature/],
      ['unknown tenant', await mintToken({ secret, tenant: 'nobody' }), /has no media secret/],
    ];
    for (const [what, token, message] of cases) {
      const a = await upgradeAnswer(media, token);
      expect(a.status, what).toBe(401);
      expect(JSON.parse(a.body), what).toEqual({
        error: 'unauthorized',
        message: expect.stringMatching(message),
      });
    }
    expect((await upgradeAnswer(media, await mintToken({ secret }))).status).toBe(101);
    expect(
      (
        await upgradeAnswer(
          media,
          await mintToken({ secret: 'tenant-b-media-secret-0123456789', tenant: 'b' }),
        )
      ).status,
    ).toBe(101);
  });

  it('HMAC signatures are checked by crypto.subtle.verify (constant-time compare), never by string equality', async () => {
    rig = await startRig({ providerUrl: null });
    const media = `${rig.http.replace('http', 'ws')}/v1/media`;
    const verify = vi.spyOn(globalThis.crypto.subtle, 'verify');
    expect(
      (await upgradeAnswer(media, await mintToken({ secret: 'control-test-media-secret' }))).status,
    ).toBe(101);
    expect((await rest(await restToken(['media:manage']))).status).toBe(404);
    const hmac = verify.mock.calls.filter(([alg]) => (typeof alg === 'string' ? alg : alg.name) === 'HMAC');
    expect(hmac.length).toBe(2);
    // And a verifier that rejects makes the bridge refuse a correctly signed token: nothing else decides.
    verify.mockResolvedValue(false);
    expect(
      (await upgradeAnswer(media, await mintToken({ secret: 'control-test-media-secret' }))).status,
    ).toBe(401);
    expect((await rest(await restToken(['media:manage']))).status).toBe(401);
  });
});

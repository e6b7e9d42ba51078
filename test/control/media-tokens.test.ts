/**
 * `POST /v1/media-tokens`: a 5-minute media token for one call of the token's tenant, over real HTTP, and
 * a real call placed with it on the media_url it names.
 */
import { decodeJwt, jwtVerify } from 'jose';
import { afterEach, describe, expect, it } from 'vitest';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import { tonePcm16 } from '../helpers/audio.js';
import { call } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';

const AUTH = 'media-tokens-test-auth';
const MEDIA = 'media-tokens-test-media';

let rig: InProcessRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

async function start(env: Record<string, string> = {}): Promise<InProcessRig> {
  rig = await startRig({
    env: { AUTH_JWT_SECRET: AUTH, MEDIA_SECRET: MEDIA, BOT_URL: 'builtin:echo', ...env },
  });
  return rig;
}

describe('POST /v1/media-tokens', () => {
  it('answers 201 with a 5-minute HS256 token of the tenant, signed with its media secret, and the ws URL of /v1/media', async () => {
    const r = await start();
    const before = Math.floor(Date.now() / 1000);
    const res = await call(r.http, 'POST', '/v1/media-tokens', { token: await r.restToken(['media:call']) });
    expect(res.status, res.text).toBe(201);
    const { token, expires_at, media_url } = res.body as Record<string, string>;
    expect(media_url).toBe(`${r.http.replace('http://', 'ws://')}/v1/media`);
    const { payload, protectedHeader } = await jwtVerify(token!, new TextEncoder().encode(MEDIA), {
      algorithms: ['HS256'],
    });
    expect(protectedHeader.alg).toBe('HS256');
    expect(payload.tenant).toBe('default');
    expect(payload.exp! - before).toBeGreaterThanOrEqual(299);
    expect(payload.exp! - before).toBeLessThanOrEqual(301);
    expect(new Date(expires_at!).getTime()).toBe(payload.exp! * 1000);
    expect(expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    // One call each: every token has its own id.
    const again = await call(r.http, 'POST', '/v1/media-tokens', {
      token: await r.restToken(['media:call']),
    });
    expect(decodeJwt(again.body.token as string).jti).not.toBe(payload.jti);
  });

  it('refuses a token without media:call (403) and no token (401), naming what is needed', async () => {
    const r = await start();
    const no = await call(r.http, 'POST', '/v1/media-tokens', {
      token: await r.restToken(['sessions:read', 'media:manage']),
    });
    expect(no.status).toBe(403);
    expect(no.body.message).toContain('media:call');
    const none = await call(r.http, 'POST', '/v1/media-tokens');
    expect(none.status).toBe(401);
    expect(none.body.error).toBe('unauthorized');
  });

  it("signs another tenant's token with that tenant's own secret; a tenant with none gets a 409 saying how to set one", async () => {
    const r = await start();
    const acme = await r.restToken(['media:call', 'media:manage'], 'acme');
    const missing = await call(r.http, 'POST', '/v1/media-tokens', { token: acme });
    expect(missing.status).toBe(409);
    expect(missing.body.message).toContain('PUT /v1/media-stream (field media_secret)');
    const put = await call(r.http, 'PUT', '/v1/media-stream', {
      token: acme,
      body: {
        media_ws_url: 'wss://bridge.example.com/v1/media',
        media_secret: 'acme-media-secret-0123456789',
        input_sample_rate: 16000,
        output_sample_rate: 16000,
        encoding: 'binary',
        codec: 'slin',
        chunk_bytes: 640,
      },
    });
    expect(put.status, put.text).toBe(200);
    const res = await call(r.http, 'POST', '/v1/media-tokens', { token: acme });
    expect(res.status).toBe(201);
    const { payload } = await jwtVerify(
      res.body.token as string,
      new TextEncoder().encode('acme-media-secret-0123456789'),
    );
    expect(payload.tenant).toBe('acme');
    // The secret never appears in the answer.
    expect(res.text).not.toContain('acme-media-secret');
  });

  it('names wss:// and the forwarded host behind a proxy TRUST_PROXY names, and ignores the headers from anyone else', async () => {
    const trusted = await start({ TRUST_PROXY: '127.0.0.1' });
    const token = await trusted.restToken(['media:call']);
    const headers = {
      authorization: `Bearer ${token}`,
      'x-forwarded-proto': 'https',
      'x-forwarded-host': 'voice.example.com',
    };
    const viaProxy = await fetch(`${trusted.http}/v1/media-tokens`, { method: 'POST', headers });
    expect(((await viaProxy.json()) as { media_url: string }).media_url).toBe(
      'wss://voice.example.com/v1/media',
    );
    await trusted.close();
    const direct = await start();
    const res = await fetch(`${direct.http}/v1/media-tokens`, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${await direct.restToken(['media:call'])}` },
    });
    expect(((await res.json()) as { media_url: string }).media_url).toBe(
      `${direct.http.replace('http://', 'ws://')}/v1/media`,
    );
  });

  it('places a call: the token on media_url?token= is admitted and the echo bot returns the tone', async () => {
    const r = await start();
    const res = await call(r.http, 'POST', '/v1/media-tokens', { token: await r.restToken(['media:call']) });
    const { token, media_url } = res.body as Record<string, string>;
    const p = new TestProvider(media_url!, { token: token!, header: false });
    try {
      await p.start('softphone-1', { media: { codec: 'slin', sample_rate: 16000, encoding: 'binary' } });
      await p.sendPaced(tonePcm16(700, 16000, 16000 * 1.2), 640, 20);
      await p.sendPaced(Buffer.alloc(640 * 25), 640, 20);
      const back = p.audioBytes();
      const samples = new Int16Array(back.buffer, back.byteOffset, back.byteLength >> 1);
      expect(steadyToneSnrDb(samples, 700, 16000)).toBeGreaterThan(30);
      expect(p.errors()).toEqual([]);
    } finally {
      p.close();
    }
    // A token signed with anything else is refused before the upgrade.
    const forged = new TestProvider(media_url!, { token: `${token!.slice(0, -4)}AAAA`, header: false });
    await expect(forged.opened).rejects.toThrow(/401/);
  });
});

/**
 * A tenant's provider credentials (`provider_auth` in PUT /v1/media-stream): set over real HTTP, then a
 * real WebSocket upgrade per dialect on the tenant's path, accepted only with that tenant's credential;
 * write-only (never in a response or a log line); changed per dialect; the env twins for tenant
 * `default` only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { twilioSignature } from '../../src/media/providers/twilio.js';
import { startRig as startControlRig, tinyServer } from '../control/harness.js';
import { call } from '../helpers/http-call.js';
import { captureLog } from '../helpers/log-capture.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { upgradeStatus } from '../helpers/upgrade.js';
import { waitFor } from '../helpers/wait.js';

const SECRETS = {
  twilio: 'acme-twilio-auth-token-5e1f',
  telnyx: 'acme-telnyx-stream-token-77c2',
  plivo: 'acme-plivo-stream-token-a90b',
  exotel: 'acme-exotel-password-3d4e',
  vonage: 'acme-vonage-bearer-token-c1d2',
  jambonz: 'acme-jambonz-password-9f0a',
  asterisk: 'acme-asterisk-password-6b7c',
};
const EXOTEL_USER = 'acme-exotel-key';
const ENV_TWINS = {
  TWILIO_AUTH_TOKEN: 'default-twilio-token-env',
  TELNYX_STREAM_AUTH_TOKEN: 'default-telnyx-token-env',
  PLIVO_STREAM_TOKEN: 'default-plivo-token-env',
  EXOTEL_STREAM_USER: 'default-exotel-user',
  EXOTEL_STREAM_PASSWORD: 'default-exotel-password-env',
  VONAGE_STREAM_TOKEN: 'default-vonage-token-env',
  JAMBONZ_WS_USERNAME: 'default-jambonz-user',
  JAMBONZ_WS_PASSWORD: 'default-jambonz-password-env',
  ASTERISK_WS_USERNAME: 'default-asterisk-user',
  ASTERISK_WS_PASSWORD: 'default-asterisk-password-env',
};
const JAMBONZ_USER = 'acme-jambonz';
const ASTERISK_USER = 'acme-asterisk';

let rig: InProcessRig | undefined;
afterEach(async () => {
  await rig?.close();
  rig = undefined;
});

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** How each platform presents a credential on the upgrade of `path`. */
type Present = (secret: string, path: string) => { query?: string; headers: Record<string, string> };

const PRESENT: Record<'twilio' | 'telnyx' | 'plivo' | 'exotel' | 'vonage' | 'jambonz' | 'asterisk', Present> =
  {
    twilio: (secret, path) => ({
      headers: { 'x-twilio-signature': twilioSignature(secret, `wss://${new URL(rig!.http).host}${path}`) },
    }),
    telnyx: (secret) => ({ headers: { 'x-telnyx-streaming-auth-token': secret } }),
    plivo: (secret) => ({ query: `?token=${encodeURIComponent(secret)}`, headers: {} }),
    exotel: (secret) => ({ headers: { authorization: basic(EXOTEL_USER, secret) } }),
    vonage: (secret) => ({ headers: { authorization: `Bearer ${secret}` } }),
    jambonz: (secret) => ({ headers: { authorization: basic(JAMBONZ_USER, secret) } }),
    asterisk: (secret) => ({ headers: { authorization: basic(ASTERISK_USER, secret) } }),
  };

async function tryDialect(dialect: keyof typeof PRESENT, tenant: string, secret: string | undefined) {
  const path = `/v1/media/${dialect}/${tenant}`;
  const p = secret === undefined ? { headers: {} } : PRESENT[dialect](secret, path);
  return upgradeStatus(`${rig!.http.replace('http', 'ws')}${path}${p.query ?? ''}`, p.headers);
}

async function put(tenant: string, body: Record<string, unknown>) {
  const token = await rig!.restToken(['media:manage'], tenant);
  return call(rig!.http, 'PUT', '/v1/media-stream', {
    token,
    body: { media_ws_url: 'wss://bridge.example/v1/media', ...body },
  });
}

const ACME_AUTH = {
  twilio: { auth_token: SECRETS.twilio },
  telnyx: { stream_auth_token: SECRETS.telnyx },
  plivo: { token: SECRETS.plivo },
  exotel: { username: EXOTEL_USER, password: SECRETS.exotel },
  vonage: { token: SECRETS.vonage },
  jambonz: { username: JAMBONZ_USER, password: SECRETS.jambonz },
  asterisk: { username: ASTERISK_USER, password: SECRETS.asterisk },
};

describe('provider_auth: per-tenant provider credentials', () => {
  it('a tenant with credentials set is served on every dialect, with its own credential only', async () => {
    const captured = captureLog('debug');
    rig = await startRig({ env: ENV_TWINS, log: captured.log });
    for (const dialect of Object.keys(PRESENT) as (keyof typeof PRESENT)[])
      expect(await tryDialect(dialect, 'acme', SECRETS[dialect]), `${dialect} before the PUT`).toBe(401);

    const res = await put('acme', { provider_auth: ACME_AUTH });
    expect(res.status).toBe(200);
    expect(res.body.provider_auth).toEqual(
      Object.fromEntries(Object.keys(ACME_AUTH).map((d) => [d, { configured: true }])),
    );

    for (const dialect of Object.keys(PRESENT) as (keyof typeof PRESENT)[]) {
      expect(await tryDialect(dialect, 'acme', SECRETS[dialect]), `${dialect} with acme's`).toBe(101);
      expect(await tryDialect(dialect, 'acme', `${SECRETS[dialect]}-wrong`), `${dialect} wrong`).toBe(401);
      expect(await tryDialect(dialect, 'acme', undefined), `${dialect} with none`).toBe(401);
      // The env twins are tenant default's, never another tenant's; acme's are not default's.
      const envSecret = {
        twilio: ENV_TWINS.TWILIO_AUTH_TOKEN,
        telnyx: ENV_TWINS.TELNYX_STREAM_AUTH_TOKEN,
        plivo: ENV_TWINS.PLIVO_STREAM_TOKEN,
        exotel: ENV_TWINS.EXOTEL_STREAM_PASSWORD,
        vonage: ENV_TWINS.VONAGE_STREAM_TOKEN,
        jambonz: ENV_TWINS.JAMBONZ_WS_PASSWORD,
        asterisk: ENV_TWINS.ASTERISK_WS_PASSWORD,
      }[dialect];
      expect(await tryDialect(dialect, 'acme', envSecret), `${dialect} with the env twin`).toBe(401);
      expect(await tryDialect(dialect, 'default', SECRETS[dialect]), `${dialect} acme's on default`).toBe(
        401,
      );
    }
    // Tenant default still has its env twins (Exotel's user is the env's, not acme's: checked apart).
    for (const dialect of ['twilio', 'telnyx', 'plivo', 'vonage'] as const) {
      const envSecret = {
        twilio: ENV_TWINS.TWILIO_AUTH_TOKEN,
        telnyx: ENV_TWINS.TELNYX_STREAM_AUTH_TOKEN,
        plivo: ENV_TWINS.PLIVO_STREAM_TOKEN,
        vonage: ENV_TWINS.VONAGE_STREAM_TOKEN,
      }[dialect];
      expect(await tryDialect(dialect, 'default', envSecret), `${dialect} default env`).toBe(101);
    }
    for (const [dialect, user, password] of [
      ['jambonz', ENV_TWINS.JAMBONZ_WS_USERNAME, ENV_TWINS.JAMBONZ_WS_PASSWORD],
      ['asterisk', ENV_TWINS.ASTERISK_WS_USERNAME, ENV_TWINS.ASTERISK_WS_PASSWORD],
    ] as const)
      expect(
        await upgradeStatus(`${rig.http.replace('http', 'ws')}/v1/media/${dialect}`, {
          authorization: basic(user, password),
        }),
        `${dialect} default env`,
      ).toBe(101);
    expect(
      await upgradeStatus(`${rig.http.replace('http', 'ws')}/v1/media/exotel`, {
        authorization: basic(ENV_TWINS.EXOTEL_STREAM_USER, ENV_TWINS.EXOTEL_STREAM_PASSWORD),
      }),
    ).toBe(101);

    // Write-only: no read and no log line carries a credential.
    const got = await call(rig.http, 'GET', '/v1/media-stream', {
      token: await rig.restToken(['media:manage'], 'acme'),
    });
    expect(got.status).toBe(200);
    expect(got.body.provider_auth).toEqual(res.body.provider_auth);
    const logText = captured.lines.map((l) => JSON.stringify(l)).join('\n');
    expect(captured.find(/media stream registered/)[0]?.provider_auth_changed).toMatchObject({
      twilio: 'set',
    });
    for (const secret of [...Object.values(SECRETS), EXOTEL_USER]) {
      expect(got.text).not.toContain(secret);
      expect(res.text).not.toContain(secret);
      expect(logText).not.toContain(secret);
    }
  });

  it('changes per dialect: left out keeps, given replaces, null removes; a stored one overrides the env twin', async () => {
    rig = await startRig({ env: ENV_TWINS });
    expect((await put('acme', { provider_auth: ACME_AUTH })).status).toBe(200);
    // A PUT without provider_auth keeps every credential (as it keeps media_secret).
    const kept = await put('acme', {});
    expect(Object.keys(kept.body.provider_auth as object)).toHaveLength(7);
    expect(await tryDialect('telnyx', 'acme', SECRETS.telnyx)).toBe(101);

    const changed = await put('acme', {
      provider_auth: { twilio: { auth_token: 'acme-twilio-rotated-0001' }, telnyx: null },
    });
    expect(changed.status).toBe(200);
    expect(changed.body.provider_auth).not.toHaveProperty('telnyx');
    expect(changed.body.provider_auth).toHaveProperty('plivo', { configured: true });
    expect(await tryDialect('telnyx', 'acme', SECRETS.telnyx)).toBe(401);
    expect(await tryDialect('twilio', 'acme', SECRETS.twilio)).toBe(401);
    expect(await tryDialect('twilio', 'acme', 'acme-twilio-rotated-0001')).toBe(101);
    expect(await tryDialect('plivo', 'acme', SECRETS.plivo)).toBe(101);

    // Tenant default: the stored credential replaces the env twin; removing it brings the twin back.
    expect(
      (await put('default', { provider_auth: { plivo: { token: 'default-plivo-stored' } } })).status,
    ).toBe(200);
    expect(await tryDialect('plivo', 'default', 'default-plivo-stored')).toBe(101);
    expect(await tryDialect('plivo', 'default', ENV_TWINS.PLIVO_STREAM_TOKEN)).toBe(401);
    expect((await put('default', { provider_auth: { plivo: null } })).status).toBe(200);
    expect(await tryDialect('plivo', 'default', ENV_TWINS.PLIVO_STREAM_TOKEN)).toBe(101);
  });

  it('vonage by address: an allowlist alone admits the listed addresses (403 from others); with a token, both', async () => {
    rig = await startRig({});
    expect((await put('lan', { provider_auth: { vonage: { allow: ['127.0.0.0/8', '::1'] } } })).status).toBe(
      200,
    );
    expect(await tryDialect('vonage', 'lan', undefined)).toBe(101);
    expect((await put('far', { provider_auth: { vonage: { allow: ['203.0.113.0/24'] } } })).status).toBe(200);
    expect(await tryDialect('vonage', 'far', undefined)).toBe(403);
    expect(
      (await put('both', { provider_auth: { vonage: { allow: ['127.0.0.1'], token: SECRETS.vonage } } }))
        .status,
    ).toBe(200);
    expect(await tryDialect('vonage', 'both', undefined)).toBe(401);
    expect(await tryDialect('vonage', 'both', SECRETS.vonage)).toBe(101);
  });

  it('refuses a bad provider_auth with a 400 naming the field, never quoting a secret, and stores nothing', async () => {
    rig = await startRig({});
    const cases: [unknown, string][] = [
      [{ twillio: { auth_token: SECRETS.twilio } }, 'provider_auth.twillio'],
      [{ twilio: { token: SECRETS.twilio } }, 'provider_auth.twilio.token'],
      [{ twilio: {} }, 'provider_auth.twilio.auth_token'],
      [{ twilio: { auth_token: 'short' } }, 'provider_auth.twilio.auth_token'],
      [{ twilio: SECRETS.twilio }, 'provider_auth.twilio'],
      [{ exotel: { username: EXOTEL_USER } }, 'provider_auth.exotel.password'],
      [{ exotel: { username: 'a:b', password: SECRETS.exotel } }, 'provider_auth.exotel.username'],
      [{ vonage: {} }, 'provider_auth.vonage'],
      [{ vonage: { allow: ['10.0.0.0/33'] } }, 'provider_auth.vonage.allow[0]'],
      [{ vonage: { allow: 'not-a-list' } }, 'provider_auth.vonage.allow'],
      [null, 'provider_auth'],
      [[], 'provider_auth'],
    ];
    for (const [value, field] of cases) {
      const res = await put('acme', { provider_auth: value });
      expect(res.status, JSON.stringify(value)).toBe(400);
      expect(res.body.error).toBe('invalid_field');
      expect(String(res.body.message)).toContain(field);
      for (const secret of Object.values(SECRETS)) expect(res.text).not.toContain(secret);
      expect(res.text).not.toContain('short');
    }
    const got = await call(rig.http, 'GET', '/v1/media-stream', {
      token: await rig.restToken(['media:manage'], 'acme'),
    });
    expect(got.status).toBe(404);
  });
  it('is never forwarded to the provider, and the OpenAPI document describes it on both routes', async () => {
    const forwarded: Record<string, unknown>[] = [];
    const provider = await tinyServer((_req, res, _n, body) => {
      const { media_secret: _s, ...config } = JSON.parse(body) as Record<string, unknown>;
      forwarded.push(config);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(config));
    });
    const control = await startControlRig({ providerUrl: `${provider.url}/v1` });
    try {
      const token = await control.restToken(['media:manage'], 'acme');
      const media_ws_url = 'wss://bridge.example/v1/media';
      const res = await call(control.http, 'PUT', '/v1/media-stream', {
        token,
        body: { media_ws_url, provider_auth: { twilio: ACME_AUTH.twilio } },
      });
      expect(res.status).toBe(200);
      expect(forwarded).toEqual([{ media_ws_url }]);
      const docs = await call(control.http, 'GET', '/docs/json');
      type Json = { content: { 'application/json': { schema: { properties: Record<string, unknown> } } } };
      const route = (
        docs.body.paths as Record<
          string,
          { put: { requestBody: Json }; get: { responses: Record<string, Json> } }
        >
      )['/v1/media-stream']!;
      expect(route.put.requestBody.content['application/json'].schema.properties.provider_auth).toMatchObject(
        {
          type: 'object',
          writeOnly: true,
          description: expect.stringContaining('exotel {username, password}'),
        },
      );
      expect(
        route.get.responses['200']!.content['application/json'].schema.properties.provider_auth,
      ).toMatchObject({ description: expect.stringContaining('never the credentials') });
    } finally {
      await control.close();
      await provider.close();
    }
  });
  it("a whole call of a non-default tenant on its credentials: the emulated Telnyx, the tenant's session", async () => {
    rig = await startRig({ bot: { echo: true } });
    expect((await put('acme', { provider_auth: { telnyx: ACME_AUTH.telnyx } })).status).toBe(200);
    const call1 = new SyntheticCall({
      url: `${rig.mediaUrl}/telnyx/acme`,
      sessionId: 'v3:acme-telnyx-call',
      customerPhone: '15550100',
      direction: 'inbound',
      dialect: 'telnyx',
      auth: { token: SECRETS.telnyx },
      audio: generateTone(440, 8000, 8000, 0.5),
      keepReceived: true,
      tailMs: 500,
    });
    const running = call1.run();
    const reader = await rig.restToken(['sessions:read'], 'acme');
    let listed: unknown[] = [];
    await waitFor(
      async () => {
        listed = (await call(rig!.http, 'GET', '/v1/sessions', { token: reader }))
          .body as unknown as unknown[];
        return listed.length > 0;
      },
      3_000,
      "the call among acme's sessions",
      20,
    );
    expect(listed).toMatchObject([{ session_id: 'v3:acme-telnyx-call', dialect: 'telnyx' }]);
    const report = await running;
    expect(report.state).toBe('ended');
    expect(report.breaches).toEqual([]);
    expect(steadyToneSnrDb(report.received, 440, 8000)).toBeGreaterThanOrEqual(30);
  });
});

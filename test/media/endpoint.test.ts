/**
 * The media endpoint's gate and lifecycle: auth before the upgrade, the first frame, close codes,
 * token expiry, heartbeat, session_end, and the registry.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { tonePcm16 } from '../helpers/audio.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { waitFor } from '../helpers/wait.js';

const t = useBridge();

function provider(options: ConstructorParameters<typeof TestProvider>[1] = {}, url = t.bridge!.mediaUrl) {
  const p = new TestProvider(url, options);
  t.providers.push(p);
  return p;
}

/** A raw upgrade request, to see the HTTP answer: a refusal's status and body, or 101 when it upgraded. */
function rawUpgrade(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url.replace('ws', 'http'), {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        ...headers,
      },
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d: Buffer) => {
        body += d.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('media endpoint: auth before the upgrade', () => {
  it('refuses a missing, bad or expired token with HTTP 401 and no socket', async () => {
    t.bridge = await startBridge();
    const missing = await rawUpgrade(t.bridge.mediaUrl);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.body)).toMatchObject({
      error: 'unauthorized',
      message: expect.stringMatching(/Bearer/),
    });
    const forged = await rawUpgrade(t.bridge.mediaUrl, {
      authorization: `Bearer ${await t.bridge.mediaToken({ secret: 'not-the-secret' })}`,
    });
    expect(forged.status).toBe(401);
    expect(JSON.parse(forged.body).message).toMatch(/bad signature/);
    const expired = await rawUpgrade(
      `${t.bridge.mediaUrl}?token=${await t.bridge.mediaToken({ ttlSeconds: -10 })}`,
    );
    expect(expired.status).toBe(401);
    expect(JSON.parse(expired.body).message).toMatch(/expired/);
    const unknownTenant = await rawUpgrade(t.bridge.mediaUrl, {
      authorization: `Bearer ${await t.bridge.mediaToken({ tenant: 'nobody' })}`,
    });
    expect(unknownTenant.status).toBe(401);
    expect(t.bridge.bridge.media.connections).toBe(0);
  });

  it('accepts the token as a Bearer header or as ?token=, each verified where it is', async () => {
    t.bridge = await startBridge();
    const url = t.bridge.mediaUrl;
    const good = await t.bridge.mediaToken();
    const forged = await t.bridge.mediaToken({ secret: 'not-the-secret' });
    // Each place alone: the header with no query, the query with no header.
    expect((await rawUpgrade(url, { authorization: `Bearer ${good}` })).status).toBe(101);
    expect((await rawUpgrade(`${url}?token=${good}`)).status).toBe(101);
    // A forged token in either place is refused: what was accepted was the token, checked there.
    const forgedHeader = await rawUpgrade(url, { authorization: `Bearer ${forged}` });
    expect(forgedHeader.status).toBe(401);
    expect(JSON.parse(forgedHeader.body).message).toMatch(/bad signature/);
    const forgedQuery = await rawUpgrade(`${url}?token=${forged}`);
    expect(forgedQuery.status).toBe(401);
    expect(JSON.parse(forgedQuery.body).message).toMatch(/bad signature/);
    // And a call runs on each.
    await provider({ token: good }).start('header-token');
    await provider({ token: good, header: false }).start('query-token');
    const sessions = t.bridge.bridge.ctx.sessions;
    await waitFor(
      async () =>
        (await sessions.get('default', 'header-token')) !== undefined &&
        (await sessions.get('default', 'query-token')) !== undefined,
      2_000,
      'a session on each socket',
    );
  });

  it('with MEDIA_AUTH=none accepts a socket without a token', async () => {
    t.bridge = await startBridge({ MEDIA_AUTH: 'none' });
    const p = provider();
    await p.start('noauth-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
  });

  it('answers 404 to an upgrade on another path', async () => {
    t.bridge = await startBridge();
    const r = await rawUpgrade(t.bridge.mediaUrl.replace('/v1/media', '/v1/other'), {
      authorization: `Bearer ${await t.bridge.mediaToken()}`,
    });
    expect(r.status).toBe(404);
  });
});

describe('media endpoint: first frame and close codes', () => {
  it.each([
    ['a binary frame', Buffer.alloc(320)],
    ['a media event', JSON.stringify({ event: 'media', payload: '' })],
    ['not JSON', 'hello'],
    ['a session_start without session_id', JSON.stringify({ event: 'session_start' })],
    [
      'a session_start with a bad media codec',
      JSON.stringify({ event: 'session_start', session_id: 'x', media: { codec: 'opus' } }),
    ],
    [
      'a session_start with a bad rate',
      JSON.stringify({ event: 'session_start', session_id: 'x', media: { sample_rate: 11025 } }),
    ],
  ])('closes 4400 when the first frame is %s', async (_what, frame) => {
    t.bridge = await startBridge();
    const p = provider({ token: await t.bridge.mediaToken() });
    await p.opened;
    p.sendRaw(frame);
    expect(await p.waitClosed()).toBe(4400);
    const [err] = p.errors();
    expect(err?.code).toBe('bad_session_start');
    expect(String(err?.message)).toMatch(/session_start/);
    expect(t.bridge.bridge.ctx.sessions.count()).toBe(0);
  });

  it('names what a bad session_start field accepts', async () => {
    t.bridge = await startBridge();
    const p = provider({ token: await t.bridge.mediaToken() });
    await p.opened;
    p.send({ event: 'session_start', session_id: 's', media: { sample_rate: 11025 } });
    await p.waitClosed();
    expect(p.errors()[0]!.message).toMatch(/media.sample_rate must be 8000 or 16000, got 11025/);
  });

  it('closes 4409 when the session_id is already live, leaving the live one alone', async () => {
    t.bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' });
    const token = await t.bridge.mediaToken();
    const first = provider({ token });
    await first.start('dup-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'first session');
    const second = provider({ token });
    await second.start('dup-1');
    expect(await second.waitClosed()).toBe(4409);
    expect(second.errors()[0]!.code).toBe('session_live');
    // The first call still carries audio.
    first.sendRaw(tonePcm16(440, 8000, 800));
    await waitFor(() => first.audio.length >= 5, 2_000, 'audio on the live call');
    expect(first.closeCode).toBeUndefined();
    expect(t.bridge.bridge.ctx.sessions.count()).toBe(1);
  });

  it('closes 1009 on a frame larger than MAX_PAYLOAD_BYTES', async () => {
    t.bridge = await startBridge({ MAX_PAYLOAD_BYTES: '4096' });
    const p = provider({ token: await t.bridge.mediaToken() });
    await p.start('big-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
    p.sendRaw(Buffer.alloc(4098));
    expect(await p.waitClosed()).toBe(1009);
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 0, 2_000, 'session removed');
  });

  it("closes 1008 when session_start names another tenant than the token's", async () => {
    t.bridge = await startBridge();
    const p = provider({ token: await t.bridge.mediaToken() });
    await p.start('t-1', { tenant: 'someone-else' });
    expect(await p.waitClosed()).toBe(1008);
    expect(p.errors()[0]!.code).toBe('tenant_mismatch');
  });

  it('closes 1008 when the media token expires mid-call', async () => {
    t.bridge = await startBridge();
    const p = provider({ token: await t.bridge.mediaToken({ ttlSeconds: 2 }) });
    await p.start('exp-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
    expect(await p.waitClosed(4_000)).toBe(1008);
    expect(p.errors().some((e) => e.code === 'token_expired')).toBe(true);
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 0, 2_000, 'session removed');
  });
});

describe('media endpoint: lifecycle', () => {
  it('ends a peer that stops answering pings, and keeps one that answers', async () => {
    t.bridge = await startBridge({ HEARTBEAT_INTERVAL_MS: '1000' });
    const token = await t.bridge.mediaToken();
    const dead = provider({ token, autoPong: false });
    const live = provider({ token });
    await dead.start('hb-dead');
    await live.start('hb-live');
    await waitFor(() => dead.closeCode !== undefined, 3_500, 'dead peer to be ended');
    expect(live.closeCode).toBeUndefined();
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'dead session removed');
  });

  it('session_end closes 1000, tells the bot and removes the session; metrics follow', async () => {
    t.bridge = await startBridge();
    const p = provider({ token: await t.bridge.mediaToken() });
    await p.start('end-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
    expect((await t.bridge.bridge.ctx.metrics.sessions.get()).values[0]!.value).toBe(1);
    p.send({ event: 'session_end', reason: 'hangup' });
    expect(await p.waitClosed()).toBe(1000);
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 0, 2_000, 'session removed');
    expect((await t.bridge.bridge.ctx.metrics.sessions.get()).values[0]!.value).toBe(0);
    const metrics = await (await fetch(`${t.bridge.http}/metrics`)).text();
    for (const name of [
      'voicebridge_sessions ',
      'voicebridge_sessions_total 1',
      'voicebridge_frames_in_total',
      'voicebridge_frames_out_total',
      'voicebridge_bytes_in_total',
      'voicebridge_bytes_out_total',
      'voicebridge_bad_frames_total',
      'voicebridge_shed_chunks_total',
      'voicebridge_late_chunks_total',
      'voicebridge_pace_lateness_ms_bucket',
      'voicebridge_dsp_seconds_total',
      'voicebridge_bot_connects_total',
    ]) {
      expect(metrics).toContain(name);
    }
  });

  it('a closed provider socket removes its session', async () => {
    t.bridge = await startBridge();
    const p = provider({ token: await t.bridge.mediaToken() });
    await p.start('gone-1');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
    p.close();
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 0, 2_000, 'session removed');
    expect(t.bridge.bridge.media.connections).toBe(0);
  });
});

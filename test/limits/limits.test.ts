/**
 * Each limit, against a real bridge on loopback: a cap on live sessions (503 before the upgrade), a
 * cap on upgrade attempts per address (429 before the upgrade), REST rate limits (429) and the body
 * size limit (413), each with the contract's error body and a configurable bound.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { ManualClock } from '../helpers/clock.js';
import { TestProvider } from '../helpers/provider.js';
import { upgradeAnswer } from '../helpers/upgrade.js';
import { waitFor } from '../helpers/wait.js';

const t = useBridge();

async function refused(reason: string): Promise<number> {
  const m = t.bridge!.bridge.ctx.metrics.registry.getSingleMetric('voicebridge_media_refused_total');
  const v = (await m!.get()).values.find((x) => x.labels.reason === reason);
  return v?.value ?? 0;
}

describe('limits', () => {
  it('MAX_SESSIONS: the next upgrade is refused with 503 and a message; a slot freed admits again', async () => {
    t.bridge = await startBridge({ MAX_SESSIONS: '2' });
    const token = await t.bridge.mediaToken();
    for (let i = 0; i < 2; i++) {
      const p = new TestProvider(t.bridge.mediaUrl, { token });
      t.providers.push(p);
      await p.start(`cap-${i}`);
    }
    const third = await upgradeAnswer(t.bridge.mediaUrl, token);
    expect(third.status).toBe(503);
    expect(JSON.parse(third.body)).toEqual({
      error: 'capacity',
      message: expect.stringMatching(/limit of 2 live sessions \(MAX_SESSIONS\)/),
    });
    expect(await refused('capacity')).toBe(1);
    t.providers[0]!.send({ event: 'session_end' });
    await t.providers[0]!.waitClosed();
    await waitFor(() => t.bridge!.bridge.media.connections === 1, 3_000, 'the slot to free');
    expect((await upgradeAnswer(t.bridge.mediaUrl, token)).status).toBe(101);
  });

  it('MEDIA_CONNECT_PER_SEC: attempts past the cap from one address get 429 before the upgrade; the next second admits again', async () => {
    // The limits read a clock the test moves: the burst falls in one window, the next window comes when told.
    const clock = new ManualClock();
    t.bridge = await startBridge({ MEDIA_CONNECT_PER_SEC: '3' }, { limitClock: clock });
    const token = await t.bridge.mediaToken();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => upgradeAnswer(t.bridge!.mediaUrl, token)),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([101, 101, 101, 429, 429, 429]);
    const body = JSON.parse(answers.find((a) => a.status === 429)!.body);
    expect(body).toEqual({
      error: 'too_many_requests',
      message: expect.stringMatching(/at most 3 per second \(MEDIA_CONNECT_PER_SEC\)/),
    });
    expect(await refused('rate')).toBe(3);
    // Still the same second: refused.
    clock.advance(999);
    expect((await upgradeAnswer(t.bridge.mediaUrl, token)).status).toBe(429);
    // A new window admits again.
    clock.advance(1);
    expect((await upgradeAnswer(t.bridge.mediaUrl, token)).status).toBe(101);
  });

  it('REST_RATE_WINDOW_MS: once the window has passed, the address has its whole allowance again', async () => {
    const clock = new ManualClock();
    t.bridge = await startBridge(
      { REST_RATE_LIMIT: '2', REST_RATE_WINDOW_MS: '60000' },
      { limitClock: clock },
    );
    const auth = { authorization: `Bearer ${await t.bridge.restToken(['sessions:read'])}` };
    const burst = async (n: number) => {
      const codes: number[] = [];
      for (let i = 0; i < n; i++)
        codes.push((await fetch(`${t.bridge!.http}/v1/sessions`, { headers: auth })).status);
      return codes;
    };
    expect(await burst(3)).toEqual([200, 200, 429]);
    clock.advance(30_000);
    const res = await fetch(`${t.bridge.http}/v1/sessions`, { headers: auth });
    expect(res.status).toBe(429);
    // The window started with the first request: 30 s of it are left.
    expect(res.headers.get('retry-after')).toBe('30');
    clock.advance(30_000);
    expect(await burst(3)).toEqual([200, 200, 429]);
  });

  it('REST_RATE_LIMIT: past the limit a route answers 429 with the contract body; probes are never limited', async () => {
    t.bridge = await startBridge({ REST_RATE_LIMIT: '5', REST_RATE_WINDOW_MS: '60000' });
    const auth = { authorization: `Bearer ${await t.bridge.restToken(['sessions:read'])}` };
    const codes: number[] = [];
    for (let i = 0; i < 7; i++)
      codes.push((await fetch(`${t.bridge.http}/v1/sessions`, { headers: auth })).status);
    expect(codes).toEqual([200, 200, 200, 200, 200, 429, 429]);
    const res = await fetch(`${t.bridge.http}/v1/sessions/x`, { headers: auth });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).not.toBeNull();
    expect(await res.json()).toEqual({
      error: 'too_many_requests',
      message: expect.stringMatching(/at most 5 per 1 minute/),
    });
    for (let i = 0; i < 10; i++) {
      expect((await fetch(`${t.bridge.http}/healthz`)).status).toBe(200);
      expect((await fetch(`${t.bridge.http}/readyz`)).status).toBe(200);
      expect((await fetch(`${t.bridge.http}/metrics`)).status).toBe(200);
    }
  });

  it('TRUST_PROXY: behind a named proxy, limits key on the forwarded client address; otherwise the header is ignored', async () => {
    const burst = async (xff: string) => {
      const auth = { authorization: `Bearer ${await t.bridge!.restToken(['sessions:read'])}` };
      const codes: number[] = [];
      for (let i = 0; i < 3; i++)
        codes.push(
          (await fetch(`${t.bridge!.http}/v1/sessions`, { headers: { ...auth, 'x-forwarded-for': xff } }))
            .status,
        );
      return codes;
    };
    // The test's requests come from 127.0.0.1: named as the proxy, X-Forwarded-For says who the client is.
    t.bridge = await startBridge({
      REST_RATE_LIMIT: '2',
      REST_RATE_WINDOW_MS: '60000',
      TRUST_PROXY: 'loopback',
    });
    expect(await burst('203.0.113.7')).toEqual([200, 200, 429]);
    // Another client behind the same proxy has its own allowance.
    expect(await burst('203.0.113.8')).toEqual([200, 200, 429]);
    await t.bridge.close();

    // A clock the test moves: the burst falls in one one-second window.
    t.bridge = await startBridge(
      { MEDIA_CONNECT_PER_SEC: '2', TRUST_PROXY: '127.0.0.1' },
      { limitClock: new ManualClock() },
    );
    const media = await t.bridge.mediaToken();
    const from = (ip: string) => upgradeAnswer(t.bridge!.mediaUrl, media, { 'x-forwarded-for': ip });
    const a = await Promise.all([
      from('198.51.100.1'),
      from('198.51.100.1'),
      from('198.51.100.1'),
      from('198.51.100.2'),
    ]);
    // Three from one client behind the proxy (the third is over the cap), one from another (admitted).
    expect(
      a
        .slice(0, 3)
        .map((x) => x.status)
        .sort(),
    ).toEqual([101, 101, 429]);
    expect(a[3]!.status).toBe(101);
    await t.bridge.close();

    // Without TRUST_PROXY, a client cannot pick its own address: every request is 127.0.0.1's.
    t.bridge = await startBridge({ REST_RATE_LIMIT: '2', REST_RATE_WINDOW_MS: '60000' });
    expect(await burst('203.0.113.7')).toEqual([200, 200, 429]);
    expect(await burst('203.0.113.8')).toEqual([429, 429, 429]);
  });

  it('BODY_LIMIT_BYTES: a larger body is 413 with the contract body', async () => {
    t.bridge = await startBridge({ BODY_LIMIT_BYTES: '1024' });
    const auth = `Bearer ${await t.bridge.restToken(['media:manage'])}`;
    const res = await fetch(`${t.bridge.http}/v1/media-stream`, {
      method: 'PUT',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ media_ws_url: 'wss://example.test/v1/media', pad: 'x'.repeat(2_000) }),
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'payload_too_large', message: expect.any(String) });
  });

  it('each limit is validated at start-up, naming the variable; flags work too', () => {
    expect(() => loadConfig({ MAX_SESSIONS: '0' })).toThrow(/MAX_SESSIONS must be an integer from 1/);
    expect(() => loadConfig({ MEDIA_CONNECT_PER_SEC: 'lots' })).toThrow(/MEDIA_CONNECT_PER_SEC/);
    expect(() => loadConfig({ REST_RATE_LIMIT: '-1' })).toThrow(/REST_RATE_LIMIT/);
    expect(() => loadConfig({ REST_RATE_WINDOW_MS: '5' })).toThrow(/REST_RATE_WINDOW_MS/);
    expect(() => loadConfig({ BODY_LIMIT_BYTES: '10' })).toThrow(/BODY_LIMIT_BYTES/);
    const c = loadConfig({}, [
      '--max-sessions',
      '7',
      '--media-connect-per-sec=9',
      '--body-limit-bytes',
      '2048',
    ]);
    expect([c.maxSessions, c.mediaConnectPerSec, c.bodyLimitBytes]).toEqual([7, 9, 2048]);
  });
});

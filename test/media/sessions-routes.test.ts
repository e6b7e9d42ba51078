/**
 * GET /v1/sessions and GET /v1/sessions/{id}: REST JWT with scope sessions:read, tenant from the token.
 */
import { describe, expect, it } from 'vitest';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { waitFor } from '../helpers/wait.js';

const t = useBridge();

async function get(path: string, token?: string) {
  const res = await fetch(`${t.bridge!.http}${path}`, {
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  return { status: res.status, body: (await res.json()) as unknown };
}

describe('sessions routes', () => {
  it("lists the token tenant's live sessions with the contract's fields, and one by id", async () => {
    t.bridge = await startBridge();
    await t.bridge.bridge.ctx.tenants.putMediaStream(
      {
        tenant: 'acme',
        media_ws_url: 'wss://x.example/v1/media',
        codec: 'slin',
        input_sample_rate: 8000,
        output_sample_rate: 8000,
        channels: 1,
        encoding: 'binary',
        chunk_bytes: 320,
      },
      'acme-media-secret',
    );
    const mine = new TestProvider(t.bridge.mediaUrl, { token: await t.bridge.mediaToken() });
    const theirs = new TestProvider(t.bridge.mediaUrl, {
      token: await t.bridge.mediaToken({ tenant: 'acme', secret: 'acme-media-secret' }),
    });
    t.providers.push(mine, theirs);
    await mine.start('call-a', {
      customer_phone: '+15550123',
      direction: 'inbound',
      started_at: '2026-01-02T03:04:05Z',
    });
    await theirs.start('call-b');
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 2, 2_000, 'two sessions');

    const token = await t.bridge.restToken(['sessions:read']);
    const list = await get('/v1/sessions', token);
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      {
        session_id: 'call-a',
        customer_phone: '+15550123',
        direction: 'inbound',
        started_at: '2026-01-02T03:04:05Z',
        conferenceNumbers: [],
        dialect: 'default',
        denoise: false,
      },
    ]);
    const one = await get('/v1/sessions/call-a', token);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ session_id: 'call-a', conferenceNumbers: [] });
    // Another tenant's session is not found, not forbidden.
    const other = await get('/v1/sessions/call-b', token);
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ error: 'not_found', message: expect.stringMatching(/call-b/) });
    const acme = await get('/v1/sessions', await t.bridge.restToken(['sessions:read'], 'acme'));
    expect((acme.body as { session_id: string }[]).map((s) => s.session_id)).toEqual(['call-b']);
    // conferenceNumbers are kept per session.
    await t.bridge.bridge.ctx.sessions.setConferenceNumbers('default', 'call-a', ['15550999']);
    expect((await get('/v1/sessions/call-a', token)).body).toMatchObject({ conferenceNumbers: ['15550999'] });
    // Gone once the call ends.
    mine.send({ event: 'session_end' });
    await mine.waitClosed();
    await waitFor(() => t.bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session removed');
    expect((await get('/v1/sessions/call-a', token)).status).toBe(404);
  });

  it('answers 401 without a valid token and 403 without the sessions:read scope', async () => {
    t.bridge = await startBridge();
    const none = await get('/v1/sessions');
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ error: 'unauthorized' });
    const wrong = await get('/v1/sessions/x', await t.bridge.mediaToken());
    expect(wrong.status).toBe(401);
    const scope = await get('/v1/sessions', await t.bridge.restToken(['calls:control']));
    expect(scope.status).toBe(403);
    expect(scope.body).toMatchObject({ error: 'forbidden', message: expect.stringMatching(/sessions:read/) });
  });
});

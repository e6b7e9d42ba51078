/**
 * Turning the noise suppressor on, as an operator sees it: a tenant's `"denoise": true` (and DENOISE=true
 * for every tenant) shows on the media-stream read, on the session read, in `session_started` live
 * events, and in voicebridge_denoised_calls_total; a tenant without it gets none of these. The audio
 * itself is measured in test/media/denoise-bridge.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { SseClient } from '../helpers/sse.js';

const SECRET = 'denoise-control-secret';
let rig: InProcessRig | undefined;
const closers: (() => void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) c();
  await rig?.close();
  rig = undefined;
});

async function metric(name: string): Promise<number> {
  const text = (await call(rig!.http, 'GET', '/metrics')).text;
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

/** A call of `tenant` (signed with SECRET, or the bridge's own secret for `default`), started. */
async function place(tenant: string, id: string): Promise<TestProvider> {
  const token = await rig!.mediaToken(tenant === 'default' ? {} : { tenant, secret: SECRET });
  const p = new TestProvider(rig!.mediaUrl, { token });
  closers.push(() => p.close());
  await p.start(id);
  return p;
}

async function events(tenant: string): Promise<SseClient> {
  const sse = new SseClient(`${rig!.http}/v1/events`, await rig!.restToken(['sessions:read'], tenant));
  closers.push(() => sse.close());
  await sse.answered;
  return sse;
}

describe('denoise, as reads, events and metrics show it', () => {
  it("follows the tenant's denoise: true, and leaves other tenants alone", async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo' } });
    const manage = (t: string) => rig!.restToken(['media:manage'], t);
    const put = async (t: string, denoise: boolean | undefined) =>
      call(rig!.http, 'PUT', '/v1/media-stream', {
        token: await manage(t),
        body: {
          media_ws_url: 'wss://example.test/media',
          media_secret: SECRET,
          ...(denoise !== undefined && { denoise }),
        },
      });
    const on = await put('clean', true);
    expect(on.status).toBe(200);
    expect(on.body.denoise).toBe(true);
    expect(
      (await call(rig.http, 'GET', '/v1/media-stream', { token: await manage('clean') })).body.denoise,
    ).toBe(true);
    expect((await put('plain', false)).body.denoise).toBe(false);
    expect((await put('other', undefined)).body.denoise).toBe(false);

    const cleanEvents = await events('clean');
    const plainEvents = await events('plain');
    await place('clean', 'dn-1');
    await place('plain', 'dn-2');
    const started = await cleanEvents.waitEvent(
      'session_started',
      5_000,
      (e) => e.data.session_id === 'dn-1',
    );
    expect(started.data.denoise).toBe(true);
    const plainStarted = await plainEvents.waitEvent('session_started');
    expect(plainStarted.data.denoise).toBe(false);

    const read = (t: string, id: string) =>
      rig!
        .restToken(['sessions:read'], t)
        .then((token) => call(rig!.http, 'GET', `/v1/sessions/${id}`, { token }));
    expect((await read('clean', 'dn-1')).body.denoise).toBe(true);
    expect((await read('plain', 'dn-2')).body.denoise).toBe(false);
    expect(await metric('voicebridge_denoised_calls_total')).toBe(1);
    expect(await metric('voicebridge_denoise_failures_total')).toBe(0);
  });

  it('DENOISE=true denoises every call, a tenant without a stored media stream too', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', DENOISE: 'true' } });
    expect(rig.config.denoise).toBe(true);
    const sse = await events('default');
    await place('default', 'dn-all');
    expect((await sse.waitEvent('session_started')).data.denoise).toBe(true);
    const token = await rig.restToken(['sessions:read']);
    expect((await call(rig.http, 'GET', '/v1/sessions/dn-all', { token })).body.denoise).toBe(true);
    expect(await metric('voicebridge_denoised_calls_total')).toBe(1);
  });
});

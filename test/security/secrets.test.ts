/**
 * Secrets never leave the bridge: one full session at LOG_LEVEL=trace (a media-stream PUT with a new
 * secret, a call with the token in the header and one with ?token=, a refused token, consult, REST
 * errors), then every captured log line and every response body is searched for each secret and token,
 * whole and by its signature alone.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { createLogger } from '../../src/log.js';
import { AUTH_SECRET, call, EMULATOR_SECRET, type Rig, restToken, startRig } from '../control/harness.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestProvider } from '../helpers/provider.js';
import { upgradeAnswer } from '../helpers/upgrade.js';
import { waitFor } from '../helpers/wait.js';

const NEW_MEDIA_SECRET = 'rotated-media-secret-4f9a1c77e2b0d5';

let rig: Rig | undefined;
const providers: TestProvider[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await rig?.close();
  rig = undefined;
});

describe('secrets in logs and responses', () => {
  it('no secret, token or authorization header appears in any log line or response of a full session', async () => {
    rig = await startRig({ logLevel: 'trace', env: { LOG_LEVEL: 'trace' } });
    const media = `${rig.http.replace('http', 'ws')}/v1/media`;
    const responses: string[] = [];
    const manage = await restToken(['media:manage', 'sessions:read', 'calls:control']);

    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: manage,
      body: { media_ws_url: 'wss://bridge.example/v1/media', media_secret: NEW_MEDIA_SECRET },
    });
    expect(put.status).toBe(200);
    responses.push(put.text, (await call(rig.http, 'GET', '/v1/media-stream', { token: manage })).text);

    // A call with the token in the header, one with it in the query; both run audio, one consults.
    const headerToken = await mintToken({ secret: NEW_MEDIA_SECRET });
    const queryToken = await mintToken({ secret: NEW_MEDIA_SECRET, subject: 'query-call' });
    const a = new TestProvider(media, { token: headerToken });
    const b = new TestProvider(media, { token: queryToken, header: false });
    providers.push(a, b);
    await a.start('secret-call-a');
    await b.start('secret-call-b');
    a.sendRaw(tonePcm16(440, 8000, 1600));
    b.sendRaw(tonePcm16(440, 8000, 1600));
    await waitFor(() => a.audio.length > 0 && b.audio.length > 0, 5_000, 'echoed audio on both calls');
    const consult = await call(rig.http, 'POST', '/v1/sessions/secret-call-a/consult', {
      token: manage,
      body: { calledParty: '100', callerId: '15550100' },
    });
    expect(consult.status).toBe(200);
    responses.push(consult.text);

    // Errors: a token signed with the old secret (401 before the upgrade), bad REST tokens, bad bodies.
    const stale = await mintToken({ secret: 'control-test-media-secret' });
    const refused = await upgradeAnswer(media, stale);
    expect(refused.status).toBe(401);
    responses.push(refused.body);
    const badRest = await restToken(['media:manage'], undefined, 'wrong-rest-secret-123456');
    for (const [method, path, token, body] of [
      ['GET', '/v1/media-stream', badRest, undefined],
      ['GET', '/v1/sessions', await restToken([]), undefined],
      ['POST', '/v1/sessions/secret-call-a/consult', manage, { calledParty: { nested: true } }],
      ['POST', '/v1/sessions/nope/conference', manage, { action: 'add', number: '100', callerId: '1' }],
      ['PUT', '/v1/media-stream', manage, { media_ws_url: 'http://x', media_secret: NEW_MEDIA_SECRET }],
    ] as const) {
      const r = await call(rig.http, method, path, { token, ...(body !== undefined ? { body } : {}) });
      expect(r.status, `${method} ${path}`).toBeGreaterThanOrEqual(400);
      responses.push(r.text);
    }
    a.send({ event: 'session_end' });
    b.close(); // a drop without session_end
    await a.waitClosed();
    await waitFor(() => rig!.bridge.media.connections === 0, 3_000, 'both calls to end');

    const logs = rig.logs.join('');
    // The test must be able to fail: the logger was at trace and the session's events were logged.
    expect(rig.bridge.ctx.log.level).toBe('trace');
    expect(rig.logs.length).toBeGreaterThan(5);
    expect(logs).toMatch(/"session_id":"secret-call-a".*"msg":"session started"/);
    expect(logs).toMatch(/"msg":"media stream registered"/);
    const secrets: [string, string][] = [
      ['media secret', NEW_MEDIA_SECRET],
      ['old media secret', 'control-test-media-secret'],
      ['REST secret', AUTH_SECRET],
      ['emulator secret', EMULATOR_SECRET],
      ['provider token', rig.bridge.ctx.config.providerToken!],
    ];
    for (const [name, t] of [
      ['header media token', headerToken],
      ['query media token', queryToken],
      ['stale media token', stale],
      ['REST token', manage],
      ['bad REST token', badRest],
    ] as const) {
      secrets.push([name, t], [`${name} signature`, t.split('.')[2]!]);
    }
    for (const [name, value] of secrets) {
      expect(value.length, name).toBeGreaterThan(10);
      expect(logs.includes(value), `${name} in the logs`).toBe(false);
      for (const r of responses) expect(r.includes(value), `${name} in a response: ${r}`).toBe(false);
    }
    expect(logs).not.toMatch(/Bearer /i);
    expect(logs).not.toMatch(/[?&]token=/);
  });

  it('the logger redacts the shapes a secret would take if a line ever carried one', () => {
    const lines: string[] = [];
    const log = createLogger('trace', { write: (l: string) => void lines.push(l) });
    const secret = 'shape-secret-0123456789';
    log.trace(
      {
        authorization: `Bearer ${secret}`,
        token: secret,
        media_secret: secret,
        headers: { authorization: `Bearer ${secret}` },
        req: { headers: { authorization: `Bearer ${secret}` }, query: { token: secret } },
        body: { media_secret: secret, token: secret },
      },
      'shapes',
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\[redacted\]/);
    expect(lines[0]!.includes(secret)).toBe(false);
  });
});

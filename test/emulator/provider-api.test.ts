import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { dialOutcome, parseDialPlan } from '../../src/emulator/dial-plan.js';
import { createEmulator, type Emulator } from '../../src/emulator/server.js';
import { createLogger } from '../../src/log.js';
import { call } from '../control/harness.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'emulator-test-secret';

describe('provider emulator: the voice API under /v1', () => {
  let emu: Emulator;
  let url: string;
  let token: string;
  let manage: string;
  beforeAll(async () => {
    emu = await createEmulator({
      jwtSecret: SECRET,
      dialPlan: parseDialPlan({
        '100': { dialStatus: 'ANSWER', afterMs: 200 },
        '200': { dialStatus: 'BUSY', afterMs: 10 },
        '300': { dialStatus: 'CONGESTION', afterMs: 10 },
        '400': { dialStatus: 'CHANUNAVAIL', afterMs: 10 },
        '500': { dialStatus: 'NOANSWER' },
        '600': { dialStatus: 'BUSY', afterMs: 10, cause: 21 },
      }),
      dialTimeoutMs: 400,
      acceptAnySession: true,
      log: createLogger('silent'),
    });
    url = await emu.listen(0);
    token = await mintToken({ secret: SECRET, scopes: [] });
    manage = await mintToken({ secret: SECRET, scopes: ['media:manage'] });
  });
  afterAll(async () => {
    await emu.close();
  });

  it('/healthz answers 200', async () => {
    expect((await call(url, 'GET', '/healthz')).status).toBe(200);
  });

  it('media-stream: 403 without media:manage, 404 before any PUT, secret write-only', async () => {
    expect((await call(url, 'GET', '/v1/media-stream', { token })).status).toBe(403);
    expect(
      (await call(url, 'PUT', '/v1/media-stream', { token, body: { media_ws_url: 'ws://h' } })).status,
    ).toBe(403);
    expect((await call(url, 'GET', '/v1/media-stream')).status).toBe(401);
    expect((await call(url, 'GET', '/v1/media-stream', { token: manage })).status).toBe(404);
    const put = await call(url, 'PUT', '/v1/media-stream', {
      token: manage,
      body: {
        media_ws_url: 'ws://h/v1/media',
        media_secret: 'emulated-secret-77',
        codec: 'L16',
        input_sample_rate: 16000,
      },
    });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({
      tenant: 'default',
      media_ws_url: 'ws://h/v1/media',
      codec: 'L16',
      input_sample_rate: 16000,
      output_sample_rate: 16000,
      channels: 1,
      encoding: 'binary',
      chunk_bytes: 640,
      secret_hint: '****77',
    });
    const get = await call(url, 'GET', '/v1/media-stream', { token: manage });
    expect(get.body).toEqual(put.body);
    expect(get.text).not.toContain('emulated-secret-77');
    expect(emu.state.getStream('default')?.secret).toBe('emulated-secret-77');
    const bad = await call(url, 'PUT', '/v1/media-stream', {
      token: manage,
      body: { media_ws_url: 'ws://h', input_sample_rate: 44100 },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('input_sample_rate must be 8000 or 16000, got 44100');
  });

  it('consult results: exact shapes, cause only when failed, dial-plan timings', async () => {
    const consult = (calledParty: string) =>
      call(url, 'POST', '/v1/sessions/s-1/consult', { token, body: { calledParty } });
    const answered = await consult('100');
    expect(answered.body).toEqual({
      sessionId: 's-1',
      consultId: 'consult-s-1',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect(answered.ms).toBeGreaterThanOrEqual(195);
    expect((await consult('200')).body).toEqual({
      sessionId: 's-1',
      consultId: 'consult-s-1',
      status: 'failed',
      dialStatus: 'BUSY',
      cause: 17,
      causeText: 'User busy',
    });
    expect((await consult('300')).body).toMatchObject({
      status: 'failed',
      dialStatus: 'CONGESTION',
      cause: 34,
      causeText: 'No circuit/channel available',
    });
    expect((await consult('400')).body).toMatchObject({
      status: 'failed',
      dialStatus: 'CHANUNAVAIL',
      cause: 20,
      causeText: 'Subscriber absent',
    });
    expect((await consult('600')).body).toMatchObject({
      status: 'failed',
      cause: 21,
      causeText: 'Call rejected',
    });
    const noAnswer = await consult('500');
    expect(noAnswer.body).toEqual({
      sessionId: 's-1',
      consultId: 'consult-s-1',
      status: 'timeout',
      dialStatus: 'NOANSWER',
    });
    expect(noAnswer.ms).toBeGreaterThanOrEqual(395);
    const missing = await call(url, 'POST', '/v1/sessions/s-1/consult', { token, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toMatch(/^calledParty must be/);
  });

  it('a second consult while one is dialling is 409', async () => {
    const first = call(url, 'POST', '/v1/sessions/s-2/consult', { token, body: { calledParty: '100' } });
    await waitFor(
      () => emu.state.getSession('default', 's-2')?.consulting === true,
      2_000,
      'the first to dial',
    );
    const second = await call(url, 'POST', '/v1/sessions/s-2/consult', {
      token,
      body: { calledParty: '100' },
    });
    expect(second.status).toBe(409);
    expect((await first).status).toBe(200);
  });

  it('conference: add, listed, 409 on a second add, delete, 404 after', async () => {
    const conf = (body: unknown) => call(url, 'POST', '/v1/sessions/s-3/conference', { token, body });
    expect((await conf({ action: 'add', number: '100' })).body).toEqual({
      sessionId: 's-3',
      number: '100',
      channelId: 'conf-s-3-100',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect((await call(url, 'GET', '/v1/sessions/s-3', { token })).body.conferenceNumbers).toEqual(['100']);
    const again = await conf({ action: 'add', number: '100' });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('conflict');
    expect((await conf({ action: 'add', number: '200' })).body).toEqual({
      sessionId: 's-3',
      number: '200',
      channelId: 'conf-s-3-200',
      status: 'failed',
      dialStatus: 'BUSY',
    });
    expect((await conf({ action: 'delete', number: '100' })).status).toBe(200);
    expect((await call(url, 'GET', '/v1/sessions/s-3', { token })).body.conferenceNumbers).toEqual([]);
    expect((await conf({ action: 'delete', number: '100' })).status).toBe(404);
    expect((await conf({ action: 'merge', number: '100' })).status).toBe(400);
  });
});

describe('provider emulator: which sessions it knows', () => {
  it('404 for a session it neither placed nor can look up', async () => {
    const emu = await createEmulator({ jwtSecret: SECRET, log: createLogger('silent') });
    try {
      const url = await emu.listen(0);
      const token = await mintToken({ secret: SECRET });
      const r = await call(url, 'POST', '/v1/sessions/ghost/consult', { token, body: { calledParty: '1' } });
      expect(r.status).toBe(404);
      expect((await call(url, 'GET', '/v1/sessions/ghost', { token })).status).toBe(404);
      expect((await call(url, 'GET', '/v1/sessions', { token })).body).toEqual([]);
    } finally {
      await emu.close();
    }
  });

  it('adopts sessions its lookup reports, and drops them when the lookup stops reporting them', async () => {
    let live = true;
    const emu = await createEmulator({
      jwtSecret: SECRET,
      lookupSession: async (tenant, id) =>
        live && tenant === 'default' && id === 'bridge-1'
          ? { customer_phone: '15550123', direction: 'outbound' }
          : undefined,
      log: createLogger('silent'),
    });
    try {
      const url = await emu.listen(0);
      const token = await mintToken({ secret: SECRET });
      const s = await call(url, 'GET', '/v1/sessions/bridge-1', { token });
      expect(s.body).toMatchObject({
        session_id: 'bridge-1',
        customer_phone: '15550123',
        direction: 'outbound',
        conferenceNumbers: [],
      });
      live = false;
      expect((await call(url, 'GET', '/v1/sessions/bridge-1', { token })).status).toBe(404);
    } finally {
      await emu.close();
    }
  });
});

describe('dial plan', () => {
  it('unknown numbers answer after 1 s; NOANSWER rings for the dial timeout; afterMs beyond 25 s is kept', () => {
    const plan = parseDialPlan({
      '1': { dialStatus: 'NOANSWER' },
      '2': { dialStatus: 'ANSWER', afterMs: 40_000 },
    });
    expect(dialOutcome(plan, '999', 20_000)).toEqual({
      afterMs: 1_000,
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect(dialOutcome(plan, '1', 20_000)).toEqual({
      afterMs: 20_000,
      status: 'timeout',
      dialStatus: 'NOANSWER',
    });
    expect(dialOutcome(plan, '2', 20_000).afterMs).toBe(40_000);
  });

  it('reports every bad entry at once', () => {
    expect(() =>
      parseDialPlan({ a: { dialStatus: 'RINGING' }, b: { dialStatus: 'BUSY', afterMs: -1 }, c: 3 }),
    ).toThrow(/a: dialStatus must be one of[\s\S]*b: afterMs must be[\s\S]*c: must be an object/);
  });
});

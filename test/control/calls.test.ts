import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, holdSession, type Rig, restToken, startRig } from './harness.js';

describe('consult and conference through the bridge to the provider emulator', () => {
  let rig: Rig;
  let token: string;
  beforeAll(async () => {
    rig = await startRig();
    token = await restToken(['calls:control', 'sessions:read']);
    await holdSession(rig.bridge, 'call-1');
  });
  afterAll(async () => {
    await rig.close();
  });

  it('consult answered: the ConsultResult passes through, without cause fields', async () => {
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: '100', callerId: '15550100' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      sessionId: 'call-1',
      consultId: 'consult-call-1',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
  });

  it('consult busy: failed with Q.850 cause 17', async () => {
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: '200' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      sessionId: 'call-1',
      consultId: 'consult-call-1',
      status: 'failed',
      dialStatus: 'BUSY',
      cause: 17,
      causeText: 'User busy',
    });
  });

  it('consult unanswered: timeout after the dial timeout', async () => {
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: '500' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'timeout', dialStatus: 'NOANSWER' });
    expect(r.body).not.toHaveProperty('cause');
    expect(r.ms).toBeGreaterThanOrEqual(290);
  });

  it('a session the bridge does not hold is 404', async () => {
    const r = await call(rig.http, 'POST', '/v1/sessions/nobody/consult', {
      token,
      body: { calledParty: '100' },
    });
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
    expect(r.body.message).toMatch(/nobody/);
  });

  it('a missing field is 400 naming it and what it accepts', async () => {
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', { token, body: { callerId: '1' } });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/^calledParty must be a bare phone number/);
    const bad = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: 'abc' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe(
      'calledParty must be a bare phone number: digits only, optionally after a "+" (the second party), got "abc"',
    );
    const conf = await call(rig.http, 'POST', '/v1/sessions/call-1/conference', {
      token,
      body: { number: '100' },
    });
    expect(conf.status).toBe(400);
    expect(conf.body.message).toMatch(/^action must be "add" or "delete", got nothing/);
  });

  it('a field of the wrong type is 400 naming it, never converted to the type expected', async () => {
    for (const [path, body, field] of [
      ['consult', { calledParty: 5 }, 'calledParty'],
      ['consult', { calledParty: '100', callerId: 15550100 }, 'callerId'],
      ['conference', { action: 'add', number: 100 }, 'number'],
      ['conference', { action: 'add', number: '100', callerId: true }, 'callerId'],
    ] as const) {
      const r = await call(rig.http, 'POST', `/v1/sessions/call-1/${path}`, { token, body });
      expect({ path, field, status: r.status, error: r.body.error }).toEqual({
        path,
        field,
        status: 400,
        error: 'invalid_field',
      });
      expect(r.body.message).toContain(field);
    }
  });

  it('a token without calls:control is 403; no token is 401; both with the contract body', async () => {
    const weak = await restToken(['sessions:read']);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token: weak,
      body: { calledParty: '100' },
    });
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ error: 'forbidden', message: expect.stringMatching(/calls:control/) });
    const none = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      body: { calledParty: '100' },
    });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ error: 'unauthorized', message: expect.any(String) });
    const forged = await restToken(['calls:control'], undefined, 'not-the-secret');
    const f = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token: forged,
      body: { calledParty: '100' },
    });
    expect(f.status).toBe(401);
  });

  it('another tenant cannot act on the session', async () => {
    const other = await restToken(['calls:control'], 'acme');
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token: other,
      body: { calledParty: '100' },
    });
    expect(r.status).toBe(404);
  });

  it('conference: add, listed in conferenceNumbers, second add 409, delete', async () => {
    await holdSession(rig.bridge, 'call-2');
    const add = await call(rig.http, 'POST', '/v1/sessions/call-2/conference', {
      token,
      body: { action: 'add', number: '100', callerId: '15550100' },
    });
    expect(add.status).toBe(200);
    expect(add.body).toEqual({
      sessionId: 'call-2',
      number: '100',
      channelId: 'conf-call-2-100',
      status: 'answered',
      dialStatus: 'ANSWER',
    });
    expect((await rig.bridge.ctx.sessions.get('default', 'call-2'))?.conferenceNumbers).toEqual(['100']);
    const listed = await call(rig.http, 'GET', '/v1/sessions/call-2', { token });
    expect(listed.body.conferenceNumbers).toEqual(['100']);

    const again = await call(rig.http, 'POST', '/v1/sessions/call-2/conference', {
      token,
      body: { action: 'add', number: '100' },
    });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: 'conflict',
      message: '100 is already in the conference of session call-2',
    });

    const busy = await call(rig.http, 'POST', '/v1/sessions/call-2/conference', {
      token,
      body: { action: 'add', number: '200' },
    });
    expect(busy.body).toMatchObject({ status: 'failed', dialStatus: 'BUSY' });
    expect((await rig.bridge.ctx.sessions.get('default', 'call-2'))?.conferenceNumbers).toEqual(['100']);

    const del = await call(rig.http, 'POST', '/v1/sessions/call-2/conference', {
      token,
      body: { action: 'delete', number: '100' },
    });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ sessionId: 'call-2', number: '100', channelId: 'conf-call-2-100' });
    expect((await rig.bridge.ctx.sessions.get('default', 'call-2'))?.conferenceNumbers).toEqual([]);

    const gone = await call(rig.http, 'POST', '/v1/sessions/call-2/conference', {
      token,
      body: { action: 'delete', number: '100' },
    });
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe('100 is not in the conference of session call-2');

    const callerIdOnDelete = await call(rig.http, 'POST', '/v1/sessions/call-2/conference', {
      token,
      body: { action: 'delete', number: '100', callerId: '1' },
    });
    expect(callerIdOnDelete.status).toBe(400);
    expect(callerIdOnDelete.body.message).toMatch(/^callerId must be left out on delete/);
  });

  it('the OpenAPI document describes the control plane', async () => {
    const r = await call(rig.http, 'GET', '/docs/json');
    expect(r.status).toBe(200);
    const paths = r.body.paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining([
        '/v1/media-stream',
        '/v1/sessions',
        '/v1/sessions/{id}',
        '/v1/sessions/{id}/consult',
        '/v1/sessions/{id}/conference',
      ]),
    );
    expect(JSON.stringify(paths['/v1/sessions/{id}/consult'])).toMatch(/calledParty/);
    const page = await fetch(`${rig.http}/docs`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/swagger/i);
  });
});

describe('call control without a provider', () => {
  it('answers 503 naming PROVIDER_BASE_URL', async () => {
    const rig = await startRig({ providerUrl: null });
    try {
      await holdSession(rig.bridge, 'call-1');
      const token = await restToken(['calls:control']);
      const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
        token,
        body: { calledParty: '100' },
      });
      expect(r.status).toBe(503);
      expect(r.body.message).toMatch(/PROVIDER_BASE_URL/);
    } finally {
      await rig.close();
    }
  });
});

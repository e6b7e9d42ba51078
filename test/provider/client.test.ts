import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createProviderClient, type ProviderClient } from '../../src/provider/client.js';
import {
  call,
  closedPort,
  holdSession,
  type Rig,
  restToken,
  startRig,
  tinyServer,
} from '../control/harness.js';
import { failure } from '../helpers/errors.js';

const GOOD_CONSULT = { sessionId: 's1', consultId: 'consult-s1', status: 'answered', dialStatus: 'ANSWER' };

type Tiny = Awaited<ReturnType<typeof tinyServer>>;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function server(handler: Parameters<typeof tinyServer>[0]): Promise<Tiny> {
  const s = await tinyServer(handler);
  cleanups.push(() => s.close());
  return s;
}

function client(baseUrl: string, readTimeoutMs = 2_000): ProviderClient {
  const c = createProviderClient({
    baseUrl,
    token: 't',
    connectTimeoutMs: 1_000,
    readTimeoutMs,
    retryDelayMs: 20,
  });
  cleanups.push(() => c.close());
  return c;
}

const json = (status: number, body: unknown) => (_req: unknown, res: ServerResponse) => {
  res
    .writeHead(status, { 'content-type': 'application/json' })
    .end(typeof body === 'string' ? body : JSON.stringify(body));
};

describe('provider client', () => {
  it('waits at least 30 s by default, and the server request timeout is above that', () => {
    const c = loadConfig({});
    expect(c.providerReadTimeoutMs).toBeGreaterThanOrEqual(30_000);
    expect(c.requestTimeoutMs).toBeGreaterThan(c.providerReadTimeoutMs);
    expect(c.providerConnectTimeoutMs).toBeLessThanOrEqual(5_000);
    expect(() => loadConfig({ PROVIDER_READ_TIMEOUT_MS: '10000' })).toThrow(/PROVIDER_READ_TIMEOUT_MS/);
  });

  it('sends the bearer token and the body, and returns the checked answer', async () => {
    let seen: { auth?: string | undefined; path?: string | undefined; method?: string | undefined } = {};
    const s = await server((req, res) => {
      seen = { auth: req.headers.authorization, path: req.url, method: req.method };
      json(200, GOOD_CONSULT)(req, res);
    });
    const r = await client(`${s.url}/v1`).consult('s1', { calledParty: '100' });
    expect(r).toEqual(GOOD_CONSULT);
    expect(seen).toEqual({ auth: 'Bearer t', path: '/v1/sessions/s1/consult', method: 'POST' });
  });

  it('a provider that never answers ends in 504 at the bound, naming the call', async () => {
    const s = await server(() => {}); // holds every request open
    const started = performance.now();
    const err = await failure(client(`${s.url}/v1`, 600).consult('s1', { calledParty: '100' }));
    const ms = performance.now() - started;
    expect(err.status).toBe(504);
    expect(err.message).toBe('provider consult did not answer within 600 ms');
    expect(ms).toBeGreaterThanOrEqual(590);
    expect(ms).toBeLessThan(3_000);
  });

  it('an unreachable provider is 503', async () => {
    const port = await closedPort();
    const err = await failure(
      client(`http://127.0.0.1:${port}/v1`).conference('s1', { action: 'add', number: '1' }),
    );
    expect(err.status).toBe(503);
    expect(err.message).toMatch(/^provider conference is unreachable \(ECONNREFUSED\)/);
  });

  it('malformed JSON and a wrong shape are 502', async () => {
    const bad = await server(json(200, '{"sessionId": "s1", '));
    const e1 = await failure(client(`${bad.url}/v1`).consult('s1', { calledParty: '100' }));
    expect(e1.status).toBe(502);
    expect(e1.message).toBe('provider consult answered with malformed JSON');
    const wrong = await server(json(200, { ...GOOD_CONSULT, status: 'ringing' }));
    const e2 = await failure(client(`${wrong.url}/v1`).consult('s1', { calledParty: '100' }));
    expect(e2.status).toBe(502);
    expect(e2.message).toMatch(/^provider consult answered with a bad ConsultResult: "status" is not one of/);
    const leak = await server(json(200, { media_ws_url: 'ws://x', media_secret: 'oops' }));
    const e3 = await failure(client(`${leak.url}/v1`).getMediaStream());
    expect(e3.status).toBe(502);
  });

  it('a provider 500 is retried once: two requests, then 502', async () => {
    const s = await server(json(500, { error: 'server_error', message: 'could not place the call' }));
    const err = await failure(client(`${s.url}/v1`).consult('s1', { calledParty: '100' }));
    expect(s.requests()).toBe(2);
    expect(err.status).toBe(502);
    expect(err.message).toBe('provider consult failed twice with status 500: could not place the call');
  });

  it('a provider 500 followed by an answer succeeds on the retry', async () => {
    const s = await server((req, res, n) =>
      n === 1 ? json(500, { error: 'x', message: 'y' })(req, res) : json(200, GOOD_CONSULT)(req, res),
    );
    expect(await client(`${s.url}/v1`).consult('s1', { calledParty: '100' })).toEqual(GOOD_CONSULT);
    expect(s.requests()).toBe(2);
  });

  it('400, 404 and 409 pass through with the provider message; 401 points at PROVIDER_TOKEN', async () => {
    for (const [status, code] of [
      [400, 'bad_request'],
      [404, 'not_found'],
      [409, 'conflict'],
    ] as const) {
      const s = await server(json(status, { error: 'x', message: `provider says ${status}` }));
      const err = await failure(client(`${s.url}/v1`).conference('s1', { action: 'add', number: '1' }));
      expect([err.status, err.code, err.message]).toEqual([status, code, `provider says ${status}`]);
      expect(s.requests()).toBe(1);
    }
    const s = await server(json(401, { error: 'x', message: 'no' }));
    const err = await failure(client(`${s.url}/v1`).listSessions());
    expect(err.status).toBe(502);
    expect(err.message).toMatch(/PROVIDER_TOKEN/);
  });
});

describe('bridge routes over a failing provider', () => {
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a hanging provider makes the consult route answer 504 at the configured bound', async () => {
    const s = await server(() => {});
    rig = await startRig({ providerUrl: `${s.url}/v1`, config: { providerReadTimeoutMs: 700 } });
    await holdSession(rig.bridge, 'call-1');
    const token = await restToken(['calls:control']);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: '100' },
    });
    expect(r.status).toBe(504);
    expect(r.body).toEqual({
      error: 'upstream_timeout',
      message: 'provider consult did not answer within 700 ms',
    });
    expect(r.ms).toBeGreaterThanOrEqual(690);
    expect(r.ms).toBeLessThan(3_000);
    const line = rig.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'provider call failed');
    expect(line).toMatchObject({ call: 'consult', outcome: 'upstream_timeout' });
  });

  it('an emulator dial that outlasts the bound ends in 504 too', async () => {
    rig = await startRig({ config: { providerReadTimeoutMs: 700 } });
    await holdSession(rig.bridge, 'call-1');
    const token = await restToken(['calls:control']);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: '9000' },
    });
    expect(r.status).toBe(504);
  });

  it('an unreachable provider is 503 and a malformed answer 502 at the route', async () => {
    const port = await closedPort();
    rig = await startRig({ providerUrl: `http://127.0.0.1:${port}/v1` });
    await holdSession(rig.bridge, 'call-1');
    const token = await restToken(['calls:control']);
    const r = await call(rig.http, 'POST', '/v1/sessions/call-1/conference', {
      token,
      body: { action: 'add', number: '100' },
    });
    expect(r.status).toBe(503);
    expect(r.body.error).toBe('upstream_unavailable');
    expect(r.body.message).toMatch(/provider conference/);
    await rig.close();

    const bad = await server(json(200, 'not json'));
    rig = await startRig({ providerUrl: `${bad.url}/v1` });
    await holdSession(rig.bridge, 'call-1');
    const r2 = await call(rig.http, 'POST', '/v1/sessions/call-1/consult', {
      token,
      body: { calledParty: '100' },
    });
    expect(r2.status).toBe(502);
    expect(r2.body).toEqual({
      error: 'upstream_bad_answer',
      message: 'provider consult answered with malformed JSON',
    });
  });
});

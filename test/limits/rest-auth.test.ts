/**
 * The REST limits count before authentication, against a real bridge over real HTTP on loopback: every
 * request counts against REST_RATE_LIMIT whether its token is good or not, and 401s spend a tighter
 * budget of their own (REST_AUTH_FAIL_LIMIT per minute) after which the address is answered 429 without
 * a token being verified. Separate client addresses come from separate loopback source addresses
 * (127.0.0.2, 127.0.0.3, …) or, behind a trusted proxy, from X-Forwarded-For.
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { mintToken } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { createAuthFailureLimiter } from '../../src/limits/auth-failures.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { ManualClock } from '../helpers/clock.js';
import { rsaKey } from '../helpers/jwks.js';
import { waitFor } from '../helpers/wait.js';

const t = useBridge();

interface Answer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly body: { error?: string; message?: string };
}

/** One request from the loopback address `from`, with `Authorization: <authorization>` when given. */
function send(
  path: string,
  o: { from: string; authorization?: string; xff?: string; method?: string; body?: string },
): Promise<Answer> {
  const url = new URL(path, t.bridge!.http);
  const headers: Record<string, string> = {};
  if (o.authorization !== undefined) headers.authorization = o.authorization;
  if (o.xff !== undefined) headers['x-forwarded-for'] = o.xff;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: o.method ?? 'GET', headers, localAddress: o.from, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'] as string | undefined,
            body: /json/.test(res.headers['content-type'] ?? '') ? JSON.parse(text) : {},
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}

/** A JWKS endpoint that holds each fetch until `release()` (jose gives up after 5 s). */
async function heldJwks(keys: JWK[]) {
  const held: ServerResponse[] = [];
  const server = createServer((_req, res) => held.push(res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    held: () => held.length,
    release() {
      for (const res of held.splice(0))
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const burst = (n: number, one: () => Promise<Answer>) => Promise.all(Array.from({ length: n }, one));

/** How many answers had each status, e.g. `{ 401: 30, 429: 270 }`. */
function tally(answers: readonly Answer[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
}

const restToken = (scopes: string[]) => t.bridge!.restToken(scopes);
const bearer = (token: string) => `Bearer ${token}`;
/** Well formed and signed, but with a secret the bridge does not hold: only its signature check fails. */
const forged = () => mintToken({ secret: 'not-the-bridge-secret', scopes: ['sessions:read'] });

describe('REST limits before authentication', () => {
  it('REST_RATE_LIMIT counts requests that fail authentication: 300 at once without a valid token get 100 x 401, then 429', async () => {
    // The failure budget is out of the way here: this is the general limit alone.
    t.bridge = await startBridge({
      REST_RATE_LIMIT: '100',
      REST_RATE_WINDOW_MS: '60000',
      REST_AUTH_FAIL_LIMIT: '1000000',
    });
    const kinds: Array<[string, string | undefined]> = [
      ['no token', undefined],
      ['a garbage token', 'Bearer not-a-jwt'],
      ['a token signed with another secret', bearer(await forged())],
    ];
    for (const [i, [kind, authorization]] of kinds.entries()) {
      const from = `127.0.0.${2 + i}`;
      const answers = await burst(300, () =>
        send('/v1/sessions', { from, ...(authorization === undefined ? {} : { authorization }) }),
      );
      expect(tally(answers), kind).toEqual({ 401: 100, 429: 200 });
      const refused = answers.find((a) => a.status === 429)!;
      expect(refused.retryAfter).toMatch(/^\d+$/);
      expect(refused.body).toEqual({
        error: 'too_many_requests',
        message: expect.stringMatching(/at most 100 per 1 minute \(REST_RATE_LIMIT, REST_RATE_WINDOW_MS\)/),
      });
    }
    // The requests that failed spent the address's allowance: a valid token from it is refused too.
    const after = await send('/v1/sessions', {
      from: '127.0.0.2',
      authorization: bearer(await restToken(['sessions:read'])),
    });
    expect(after.status).toBe(429);
  });

  it('a valid-token burst of 300 still gets 100 x 200 and 200 x 429', async () => {
    t.bridge = await startBridge({ REST_RATE_LIMIT: '100', REST_RATE_WINDOW_MS: '60000' });
    const authorization = bearer(await restToken(['sessions:read']));
    const answers = await burst(300, () => send('/v1/sessions', { from: '127.0.0.2', authorization }));
    expect(tally(answers)).toEqual({ 200: 100, 429: 200 });
  });

  it('REST_AUTH_FAIL_LIMIT: 300 bad tokens at once from one address get 30 x 401, then 429, a valid token included', async () => {
    // The general limit is out of the way: these 429s are the failure budget's (default 30 a minute).
    t.bridge = await startBridge({ REST_RATE_LIMIT: '1000000' });
    const kinds: Array<[string, string | undefined]> = [
      ['no token', undefined],
      ['a garbage token', 'Bearer not-a-jwt'],
      ['a token signed with another secret', bearer(await forged())],
    ];
    for (const [i, [kind, authorization]] of kinds.entries()) {
      const from = `127.0.0.${2 + i}`;
      const answers = await burst(300, () =>
        send('/v1/sessions', { from, ...(authorization === undefined ? {} : { authorization }) }),
      );
      // Exactly the budget, even for requests whose signatures were being checked as it ran out.
      expect(tally(answers), kind).toEqual({ 401: 30, 429: 270 });
      const refused = answers.find((a) => a.status === 429)!;
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
      expect(refused.body).toEqual({
        error: 'too_many_requests',
        message: expect.stringMatching(
          /too many failed authentications from this address: at most 30 per minute \(REST_AUTH_FAIL_LIMIT\); retry after \d+ s/,
        ),
      });
    }

    // Spent: a valid token from that address is refused too (the refusal comes before any verification)…
    const good = bearer(await restToken(['sessions:read']));
    const same = await send('/v1/sessions', { from: '127.0.0.2', authorization: good });
    expect(same.status).toBe(429);
    expect(same.body.message).toMatch(/REST_AUTH_FAIL_LIMIT/);
    // …while probes from it are answered, and another address is untouched.
    expect((await send('/healthz', { from: '127.0.0.2' })).status).toBe(200);
    expect((await send('/metrics', { from: '127.0.0.2' })).status).toBe(200);
    expect((await send('/v1/sessions', { from: '127.0.0.9', authorization: good })).status).toBe(200);
    expect((await send('/v1/sessions', { from: '127.0.0.9' })).status).toBe(401);
  });

  it('requests let in before the budget ran out and failing after it are answered 429 too', async () => {
    // The key server holds its answer until all 300 requests are in: every one passes the budget's gate
    // (nothing has failed yet), then all fail together on a forged signature.
    const real = await rsaKey('k1');
    const forger = await rsaKey('k1');
    const keys = await heldJwks([real.jwk]);
    try {
      t.bridge = await startBridge({
        REST_RATE_LIMIT: '1000000',
        AUTH_JWT_SECRET: '',
        AUTH_JWKS_URL: keys.url,
      });
      let connections = 0;
      t.bridge.bridge.app.server.on('connection', () => connections++);
      const authorization = bearer(await forger.sign({ scope: 'sessions:read' }));
      const pending = burst(300, () => send('/v1/sessions', { from: '127.0.0.2', authorization }));
      await waitFor(
        () => connections === 300 && keys.held() === 1,
        4_000,
        'all 300 requests and the key fetch',
      );
      keys.release();
      expect(tally(await pending)).toEqual({ 401: 30, 429: 270 });
    } finally {
      await keys.close();
    }
  });

  it('a valid token without the route scope (403) does not spend the failure budget', async () => {
    t.bridge = await startBridge({ REST_RATE_LIMIT: '1000000', REST_AUTH_FAIL_LIMIT: '3' });
    const authorization = bearer(await restToken(['calls:control']));
    const answers = await burst(20, () => send('/v1/sessions', { from: '127.0.0.2', authorization }));
    expect(tally(answers)).toEqual({ 403: 20 });
    const bad = [];
    for (let i = 0; i < 4; i++) bad.push((await send('/v1/sessions', { from: '127.0.0.2' })).status);
    expect(bad).toEqual([401, 401, 401, 429]);
  });

  it('a wrong messaging webhook secret spends the same budget', async () => {
    t.bridge = await startBridge({
      REST_RATE_LIMIT: '1000000',
      REST_AUTH_FAIL_LIMIT: '3',
      MESSAGING_WEBHOOK_SECRET: 'the-webhook-secret',
    });
    const post = (authorization: string) =>
      send('/v1/webhooks/messaging', { from: '127.0.0.2', method: 'POST', authorization, body: '{}' });
    const codes = [];
    for (let i = 0; i < 4; i++) codes.push((await post('Bearer wrong-secret')).status);
    expect(codes).toEqual([401, 401, 401, 429]);
    expect((await post('Bearer the-webhook-secret')).status).toBe(429);
  });

  it('TRUST_PROXY: clients behind one trusted proxy have budgets of their own', async () => {
    t.bridge = await startBridge({
      REST_RATE_LIMIT: '1000000',
      REST_AUTH_FAIL_LIMIT: '5',
      TRUST_PROXY: 'loopback',
    });
    const good = bearer(await restToken(['sessions:read']));
    const from = (xff: string, authorization?: string) =>
      send('/v1/sessions', {
        from: '127.0.0.2',
        xff,
        ...(authorization === undefined ? {} : { authorization }),
      });
    const flood = await burst(50, () => from('203.0.113.7', 'Bearer not-a-jwt'));
    expect(tally(flood)).toEqual({ 401: 5, 429: 45 });
    expect((await from('203.0.113.7', good)).status).toBe(429);
    // Another client behind the same proxy: its own budget, its valid token admitted.
    expect((await from('203.0.113.8', good)).status).toBe(200);
    expect((await from('203.0.113.8')).status).toBe(401);
  });
});

describe('the failure budget over time (fake clock)', () => {
  it('refuses for the rest of the minute that started at the first failure, then starts afresh', () => {
    const clock = new ManualClock(1_000);
    const limiter = createAuthFailureLimiter({ max: 3, clock });
    for (let i = 1; i <= 3; i++) {
      expect(limiter.refusal('a')).toBeUndefined();
      expect(limiter.fail('a')).toBe(i);
      clock.advance(1_000);
    }
    // The window started at 1_000: at 4_000 it has 57 s left.
    expect(limiter.refusal('a')).toBe(57);
    expect(limiter.refusal('b')).toBeUndefined();
    clock.advance(59_500 - 3_000);
    expect(limiter.refusal('a')).toBe(1);
    expect(limiter.fail('a')).toBe(4);
    clock.advance(500);
    expect(limiter.refusal('a')).toBeUndefined();
    expect(limiter.fail('a')).toBe(1);
    expect(limiter.refusal('a')).toBeUndefined();
    expect(limiter.size).toBe(1);
  });

  it('tracks a bounded number of addresses, forgetting the oldest window first', () => {
    const limiter = createAuthFailureLimiter({ max: 1, capacity: 2, clock: new ManualClock(0) });
    limiter.fail('a');
    limiter.fail('b');
    limiter.fail('c');
    expect(limiter.size).toBe(2);
    expect(limiter.refusal('a')).toBeUndefined();
    expect(limiter.refusal('b')).toBe(60);
    expect(limiter.refusal('c')).toBe(60);
  });
});

describe('REST_AUTH_FAIL_LIMIT configuration', () => {
  it('defaults to 30 and is validated at start-up, naming the variable', () => {
    expect(loadConfig({}).restAuthFailLimit).toBe(30);
    expect(loadConfig({ REST_AUTH_FAIL_LIMIT: '5' }).restAuthFailLimit).toBe(5);
    expect(() => loadConfig({ REST_AUTH_FAIL_LIMIT: '0' })).toThrow(
      /REST_AUTH_FAIL_LIMIT must be an integer from 1/,
    );
    expect(() => loadConfig({ REST_AUTH_FAIL_LIMIT: 'many' })).toThrow(/REST_AUTH_FAIL_LIMIT/);
  });
});

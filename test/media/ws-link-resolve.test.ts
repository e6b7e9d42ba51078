/**
 * The step a ws bot dialect may take before each dial (WsLink's `resolve()`, src/media/bot/pre-dial.ts),
 * with a real HTTP server and a real WebSocket server on loopback, and the calls' clock driven by hand:
 * the URL and headers it answers are what is dialled, again at each redial; an answer that does not come
 * within BOT_CONNECT_TIMEOUT_MS (on the calls' clock) aborts the request and counts as a refused
 * connection; the call's end aborts it; a URL that is not ws:// or wss://, or that the tenant's rule
 * refuses, gives up on the bot at once; `requestJson` names the route and status, never the answer.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { BridgeError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { type DialTarget, PreDialError, requestJson } from '../../src/media/bot/pre-dial.js';
import type { CallerPort } from '../../src/media/bot/types.js';
import { WsLink, type WsLinkOptions } from '../../src/media/bot/ws-link.js';
import { createMetrics } from '../../src/metrics.js';
import { ManualClock } from '../helpers/clock.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const closers: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

const CALL = {
  session_id: 'resolve-bot',
  tenant: 'default',
  customer_phone: undefined,
  direction: undefined,
  started_at: new Date(0).toISOString(),
};

/** A link whose dial target comes from `fn`: the rest of the dialect does nothing. */
class Probe extends WsLink {
  constructor(
    port: CallerPort,
    o: WsLinkOptions,
    readonly fn: (signal: AbortSignal) => Promise<DialTarget>,
  ) {
    super(CALL, port, o);
    this.start();
  }
  protected override resolve(signal: AbortSignal): Promise<DialTarget> {
    return this.fn(signal);
  }
  audio(): void {}
  dtmf(): void {}
  mark(): void {}
  protected opened(): void {}
  protected received(): void {}
  protected farewell(): void {}
}

function port(): CallerPort & { failures: string[] } {
  const failures: string[] = [];
  return {
    failures,
    audio: () => {},
    mark: () => {},
    dtmf: () => {},
    hangup: () => {},
    clear: () => {},
    failed: (err: BridgeError) => failures.push(err.message),
  };
}

function options(clock: ManualClock, extra: Partial<WsLinkOptions> = {}): WsLinkOptions {
  return {
    url: 'https://api.vendor.example/v1/calls',
    retries: 2,
    retryBaseMs: 1_000,
    connectTimeoutMs: 2_000,
    maxPayloadBytes: 1 << 20,
    highWaterBytes: 1 << 20,
    metrics: createMetrics(),
    log: createLogger('silent'),
    clock,
    ...extra,
  };
}

/** A WebSocket server that records each upgrade's path and `x-token` header. */
async function wsServer(): Promise<{ url: string; upgrades: { path: string; token: unknown }[] }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  const upgrades: { path: string; token: unknown }[] = [];
  wss.on('connection', (ws, req: IncomingMessage) => {
    upgrades.push({ path: req.url ?? '', token: req.headers['x-token'] });
    ws.on('error', () => {});
  });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  );
  return { url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, upgrades };
}

/** An HTTP server answering each request with what `answer` gives, never at all when it gives nothing. */
async function httpServer(
  answer: (n: number) => { status: number; body: string } | undefined,
): Promise<{ url: string; requests: () => number; aborted: () => number }> {
  let n = 0;
  let aborted = 0;
  const server: Server = createServer((req, res) => {
    const a = answer(++n);
    req.on('close', () => {
      if (!res.writableEnded) aborted++;
    });
    req.resume();
    if (a !== undefined) res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => n,
    aborted: () => aborted,
  };
}

describe("a ws bot's step before each dial", () => {
  it('dials the URL and headers it answers, and asks again at each redial', async () => {
    const clock = new ManualClock(0);
    const ws = await wsServer();
    let asked = 0;
    const p = port();
    const bot = new Probe(p, options(clock), async () => {
      asked++;
      return { url: `${ws.url}/join/${asked}`, headers: { 'x-token': `t-${asked}` } };
    });
    closers.push(() => bot.end('test over'));
    await waitFor(() => ws.upgrades.length === 1, 3_000, 'the first dial');
    expect(ws.upgrades[0]).toEqual({ path: '/join/1', token: 't-1' });
    // The bridge's side opens after the bot's server saw the upgrade: its heartbeat runs only then.
    await waitFor(() => bot.connected, 3_000, 'the first dial open');
    // The bot drops: the next dial asks again.
    bot.heartbeat();
    bot.heartbeat(); // no pong was awaited in between: the socket is cut as unresponsive
    await waitFor(() => p.failures.length === 1, 3_000, 'the drop');
    clock.advance(1_000);
    await waitFor(() => ws.upgrades.length === 2, 3_000, 'the redial');
    expect(ws.upgrades[1]).toEqual({ path: '/join/2', token: 't-2' });
  });

  it('aborts an answer that does not come within the connect bound, on the calls clock, and redials', async () => {
    const clock = new ManualClock(0);
    const ws = await wsServer();
    const api = await httpServer((n) =>
      n === 1 ? undefined : { status: 201, body: JSON.stringify({ url: `${ws.url}/late` }) },
    );
    const p = port();
    const bot = new Probe(p, options(clock), async (signal) => {
      const answer = (await requestJson({ method: 'POST', url: api.url, body: {}, signal })) as {
        url: string;
      };
      return { url: answer.url };
    });
    closers.push(() => bot.end('test over'));
    await waitFor(() => api.requests() === 1, 3_000, 'the first request');
    await quietFor(300, 'no answer, and the calls clock standing still');
    expect(p.failures).toEqual([]);
    clock.advance(1_999);
    await quietFor(100, 'one ms short of the bound');
    expect(p.failures).toEqual([]);
    clock.advance(1);
    // At once: not on a wall-clock timer of its own.
    await waitFor(() => p.failures.length === 1, 500, 'the request given up');
    expect(p.failures[0]).toBe(
      `bot https://api.vendor.example/v1/calls could not be reached (POST ${api.url}/ gave no answer in time); retrying (the caller hears silence)`,
    );
    await waitFor(() => api.aborted() === 1, 3_000, 'the request aborted at the server');
    clock.advance(1_000);
    await waitFor(() => ws.upgrades.length === 1, 3_000, 'the redial');
    expect(ws.upgrades[0]!.path).toBe('/late');
  });

  it('aborts the request when the call ends, and dials nothing after', async () => {
    const clock = new ManualClock(0);
    const api = await httpServer(() => undefined);
    const p = port();
    let signalled: AbortSignal | undefined;
    const bot = new Probe(p, options(clock), async (signal) => {
      signalled = signal;
      await requestJson({ method: 'GET', url: api.url, signal });
      return { url: 'ws://127.0.0.1:1/never' };
    });
    await waitFor(() => api.requests() === 1, 3_000, 'the request');
    bot.end('caller hung up');
    expect(signalled?.aborted).toBe(true);
    await waitFor(() => api.aborted() === 1, 3_000, 'the request aborted at the server');
    clock.advance(10_000);
    await quietFor(100, 'anything after the end');
    expect(p.failures).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  it('gives up at once on a URL that is not ws, or that the rule refuses; a final failure too', async () => {
    const clock = new ManualClock(0);
    const cases: [DialTarget | PreDialError, Partial<WsLinkOptions>, string][] = [
      [{ url: 'https://api.vendor.example/socket' }, {}, 'it must be a ws:// or wss:// URL'],
      [
        { url: 'wss://elsewhere.example/socket?token=secret' },
        { dialled: () => ({ accepts: 'a host listed in BOT_URL_ALLOWED_HOSTS', shown: 'x' }) },
        'it must be a host listed in BOT_URL_ALLOWED_HOSTS',
      ],
      [new PreDialError('has no api_key', { final: true }), {}, 'could not be reached (has no api_key)'],
    ];
    for (const [target, extra, why] of cases) {
      const p = port();
      let asked = 0;
      const bot = new Probe(p, options(clock, extra), async () => {
        asked++;
        if (target instanceof PreDialError) throw target;
        return target;
      });
      closers.push(() => bot.end('test over'));
      await waitFor(() => p.failures.length === 1, 3_000, 'the bot given up');
      expect(p.failures[0]).toContain(why);
      expect(p.failures[0]).toContain('gave up after 1 attempts');
      expect(p.failures[0]).not.toContain('secret');
      clock.advance(10_000);
      expect(asked).toBe(1);
    }
  });

  it('requestJson: the parsed 2xx answer; otherwise the route and status, the answer only as detail', async () => {
    const api = await httpServer((n) =>
      n === 1
        ? { status: 201, body: '{"joinUrl":"wss://x.example/j"}' }
        : n === 2
          ? { status: 401, body: '{"detail":"Invalid API key k-secret-1234."}' }
          : n === 3
            ? { status: 400, body: '{"detail":"voice k-secret-1234 is not known"}' }
            : { status: 200, body: 'not json' },
    );
    const signal = new AbortController().signal;
    expect(await requestJson({ method: 'POST', url: `${api.url}/api/calls`, body: {}, signal })).toEqual({
      joinUrl: 'wss://x.example/j',
    });
    const refusal = async () =>
      requestJson({ method: 'POST', url: `${api.url}/api/calls?key=q`, body: {}, signal }).catch(
        (e: unknown) => e as PreDialError,
      );
    const unauthorized = (await refusal()) as PreDialError;
    expect(unauthorized.message).toBe(`POST ${api.url}/api/calls answered HTTP 401`);
    expect(unauthorized.detail(['k-secret-1234'])).toBeUndefined();
    const bad = (await refusal()) as PreDialError;
    expect(bad.status).toBe(400);
    expect(bad.detail(['k-secret-1234'])).toBe('voice [redacted] is not known');
    expect(((await refusal()) as PreDialError).message).toBe(
      `POST ${api.url}/api/calls answered HTTP 200 with a body that is not JSON`,
    );
    const refused = await requestJson({ method: 'GET', url: 'http://127.0.0.1:1/', signal }).catch(
      (e: unknown) => e as PreDialError,
    );
    expect(refused).toBeInstanceOf(PreDialError);
    expect((refused as PreDialError).message).toBe(
      'GET http://127.0.0.1:1/ could not be reached (ECONNREFUSED)',
    );
  });
});

/**
 * A call's timers on the calls' clock (BridgeContext.clock): a connection's wait for session_start and
 * its media token's expiry, the second a provider socket's bad frames are counted over, a ws bot's
 * redial backoff and its close bound, and how much of a Realtime model's reply the caller has heard. The bridge runs on a clock this
 * test drives by hand, so each timer fires when the test moves the clock past it and never on wall time:
 * real time passing meanwhile changes nothing.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { BridgeError } from '../../src/errors.js';
import { createLogger } from '../../src/log.js';
import { BridgeBot } from '../../src/media/bot/bridge.js';
import { OpenAIRealtimeBot } from '../../src/media/bot/openai-realtime.js';
import type { CallerPort } from '../../src/media/bot/types.js';
import { createMetrics } from '../../src/metrics.js';
import { ManualClock } from '../helpers/clock.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function bridgeOn(clock: ManualClock, env: Record<string, string> = {}): Promise<InProcessRig> {
  const rig = await startRig({ env: { BOT_URL: 'builtin:echo', ...env }, bridgeOptions: { clock } });
  closers.push(() => rig.close());
  return rig;
}

function provider(url: string, token?: string): { ws: WebSocket; closed: Promise<number> } {
  const ws = new WebSocket(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  closers.push(() => ws.terminate());
  ws.on('error', () => {});
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  return { ws, closed };
}

describe("a connection's timers", () => {
  it('the wait for session_start runs on the calls clock', async () => {
    const clock = new ManualClock(0);
    const rig = await bridgeOn(clock, { SESSION_START_TIMEOUT_MS: '500' });
    const p = provider(rig.mediaUrl, await rig.mediaToken());
    let code: number | undefined;
    void p.closed.then((c) => {
      code = c;
    });
    await new Promise<void>((resolve) => p.ws.once('open', () => resolve()));
    await quietFor(700, 'the wall-clock timeout passing: not the calls clock');
    clock.advance(499);
    await quietFor(100, 'one ms short of the timeout');
    expect(code).toBeUndefined();
    clock.advance(1);
    await waitFor(() => code !== undefined, 3_000, 'the socket to close');
    expect(code).toBe(4400);
  });

  it("a media token's expiry ends a live call when the calls clock reaches it", async () => {
    const clock = new ManualClock(0);
    const rig = await bridgeOn(clock);
    const p = provider(rig.mediaUrl, await rig.mediaToken({ ttlSeconds: 60 }));
    let code: number | undefined;
    void p.closed.then((c) => {
      code = c;
    });
    await new Promise<void>((resolve) => p.ws.once('open', () => resolve()));
    p.ws.send(JSON.stringify({ event: 'session_start', session_id: 'clock-expiry' }));
    await waitFor(() => rig.bridge.ctx.sessions.count() === 1, 3_000, 'the session to start');
    clock.advance(58_000);
    await quietFor(100, 'two seconds before the expiry');
    expect(code).toBeUndefined();
    clock.advance(2_000);
    await waitFor(() => code !== undefined, 3_000, 'the call to end');
    expect(code).toBe(1008);
  });
});

describe("a provider socket's budget of bad frames", () => {
  it('counts the second on the calls clock: the budget twice, a second apart on it, keeps the call', async () => {
    const clock = new ManualClock(0);
    const rig = await bridgeOn(clock, { MEDIA_BAD_FRAMES_PER_SEC: '50' });
    const p = provider(rig.mediaUrl, await rig.mediaToken());
    let code: number | undefined;
    void p.closed.then((c) => {
      code = c;
    });
    const errors: string[] = [];
    p.ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const ev = JSON.parse(String(data)) as { event?: string; code?: string };
      if (ev.event === 'error') errors.push(String(ev.code));
    });
    await new Promise<void>((resolve) => p.ws.once('open', () => resolve()));
    p.ws.send(JSON.stringify({ event: 'session_start', session_id: 'clock-budget' }));
    await waitFor(() => rig.bridge.ctx.sessions.count() === 1, 3_000, 'the session to start');
    // Within well under a second of wall time: the budget, a second on the calls clock, the budget again.
    for (let i = 0; i < 50; i++) p.ws.send(JSON.stringify({ event: `x-${i}` }));
    await waitFor(() => errors.length === 50, 3_000, 'the answers to the first 50');
    clock.advance(1_000);
    for (let i = 0; i < 50; i++) p.ws.send(JSON.stringify({ event: `y-${i}` }));
    await waitFor(() => errors.length === 100, 3_000, 'the answers to the next 50');
    await quietFor(100, 'a close');
    expect(code).toBeUndefined();
    expect(errors.every((e) => e === 'unknown_event')).toBe(true);
    // One more within that second of the calls clock is past the budget.
    p.ws.send(JSON.stringify({ event: 'z' }));
    await waitFor(() => code !== undefined, 3_000, 'the socket to close');
    expect(code).toBe(1008);
    expect(errors.at(-1)).toBe('bad_frame_flood');
  });
});

/** A TCP server that counts connections and drops each at once: a bot that cannot be reached. */
async function droppingServer(): Promise<{ port: number; dials: () => number }> {
  let dials = 0;
  const server: Server = createServer((s: Socket) => {
    dials++;
    s.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.address() as { port: number }).port, dials: () => dials };
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

const CALL = {
  session_id: 'clock-bot',
  tenant: 'default',
  customer_phone: undefined,
  direction: undefined,
  started_at: new Date(0).toISOString(),
};

function botOn(clock: ManualClock, url: string, p: CallerPort): BridgeBot {
  const bot = new BridgeBot(CALL, p, {
    url,
    retries: 3,
    retryBaseMs: 1_000,
    connectTimeoutMs: 2_000,
    maxPayloadBytes: 1 << 20,
    highWaterBytes: 1 << 20,
    metrics: createMetrics(),
    log: createLogger('silent'),
    clock,
    botRate: 16_000,
  });
  closers.push(() => bot.end('test over'));
  return bot;
}

describe("a ws bot's timers", () => {
  it('redials after a backoff that doubles, counted on the calls clock', async () => {
    const clock = new ManualClock(0);
    const server = await droppingServer();
    const p = port();
    botOn(clock, `ws://127.0.0.1:${server.port}/bot`, p);
    await waitFor(() => p.failures.length === 1, 3_000, 'the first dial to fail');
    expect(p.failures[0]).toContain('retrying');
    await quietFor(1_200, 'the backoff passing on the wall clock');
    expect(server.dials()).toBe(1);
    clock.advance(999);
    await quietFor(100, 'one ms short of the first backoff');
    expect(server.dials()).toBe(1);
    clock.advance(1);
    await waitFor(() => server.dials() === 2, 3_000, 'the first redial');
    // The second wait is twice the first.
    await quietFor(100, 'the second dial to fail');
    clock.advance(1_999);
    await quietFor(100, 'one ms short of the second backoff');
    expect(server.dials()).toBe(2);
    clock.advance(1);
    await waitFor(() => server.dials() === 3, 3_000, 'the second redial');
  });

  it('cuts a bot that never answers the close handshake once the bound passes on the calls clock', async () => {
    const clock = new ManualClock(0);
    // A bot that takes the upgrade and then reads nothing it is sent: the close frame is never answered.
    let closed = false;
    let upgraded = false;
    const server = createServer((s: Socket) => {
      s.once('data', (req: Buffer) => {
        const key = /sec-websocket-key: *(\S+)/i.exec(req.toString('latin1'))?.[1] ?? '';
        const accept = createHash('sha1')
          .update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
          .digest('base64');
        s.write(
          `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
        );
        upgraded = true;
      });
      s.on('close', () => {
        closed = true;
      });
      s.on('error', () => {});
      closers.push(() => {
        s.destroy();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const p = port();
    const bot = botOn(clock, `ws://127.0.0.1:${(server.address() as { port: number }).port}/bot`, p);
    await waitFor(() => upgraded && bot.connected, 3_000, 'the bot to answer');
    bot.end('hang-up');
    await quietFor(2_300, 'the close bound passing on the wall clock');
    expect(closed).toBe(false);
    clock.advance(2_000);
    await waitFor(() => closed, 3_000, 'the bot socket to be cut');
  });
});

describe("the openai-realtime dialect's reckoning of what the caller heard", () => {
  it('runs on the calls clock from the last mark reported played', async () => {
    const clock = new ManualClock(0);
    // A Realtime server that sends one second of the model's µ-law audio for item `it1` once dialled.
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    server.on('connection', (ws) => {
      closers.push(() => ws.terminate());
      ws.send(
        JSON.stringify({
          type: 'response.output_audio.delta',
          item_id: 'it1',
          delta: Buffer.alloc(8000, 0xff).toString('base64'),
        }),
      );
    });
    const marks: string[] = [];
    const bot = new OpenAIRealtimeBot(
      CALL,
      { ...port(), mark: (name: string) => marks.push(name) },
      {
        url: `ws://127.0.0.1:${(server.address() as { port: number }).port}/v1/realtime`,
        retries: 0,
        retryBaseMs: 1_000,
        connectTimeoutMs: 2_000,
        maxPayloadBytes: 1 << 20,
        highWaterBytes: 1 << 20,
        metrics: createMetrics(),
        log: createLogger('silent'),
        clock,
        format: { codec: 'pcmu', rate: 8000 },
      },
    );
    closers.push(() => bot.end('test over'));
    await waitFor(() => marks.length === 2, 3_000, 'the marks around the reply');
    expect(marks).toEqual(['vb:1:0', 'vb:1:1000']);
    // Playback reaches the item's start; 300 ms pass on the calls clock (and next to none on the wall's).
    bot.mark('vb:1:0', false);
    clock.advance(300);
    expect(bot.heardMs('it1')).toBe(300);
    await quietFor(200, 'wall time passing: not the calls clock');
    expect(bot.heardMs('it1')).toBe(300);
  });
});

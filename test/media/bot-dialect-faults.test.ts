/**
 * Bad input and faults from the bots of the remote dialects: a frame that is malformed JSON, an unknown
 * event, audio in the wrong shape or a frame past the size bound is skipped and logged (an oversized
 * frame costs the bot's connection, which is redialled), never the call and never another session; a
 * bot that refuses the connection (401, 429) or closes is redialled within BOT_RETRIES, and the provider
 * is told `bot_unavailable`.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { encodeInto } from '../../src/audio/codec.js';
import { createRealtimeEmulator, type RealtimeEmulator } from '../../src/emulator/realtime/server.js';
import { tonePcm16 } from '../helpers/audio.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { waitFor } from '../helpers/wait.js';

let bridge: TestBridge | undefined;
let emulator: RealtimeEmulator | undefined;
let server: WebSocketServer | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await emulator?.close();
  emulator = undefined;
  if (server !== undefined) {
    for (const c of server.clients) c.terminate();
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
  }
});

/** A Twilio-dialect bot that records what it receives; the test drives what it sends. */
async function twilioBot(): Promise<{
  url: string;
  conns: { ws: WebSocket; events: { event: string }[] }[];
}> {
  server = new WebSocketServer({ port: 0, host: '127.0.0.1', maxPayload: 64 * 1024 * 1024 });
  const conns: { ws: WebSocket; events: { event: string }[] }[] = [];
  server.on('connection', (ws) => {
    const c = { ws, events: [] as { event: string }[] };
    conns.push(c);
    ws.on('message', (d: Buffer, bin: boolean) => {
      if (!bin) c.events.push(JSON.parse(d.toString('utf8')));
    });
  });
  await new Promise<void>((r) => server!.once('listening', () => r()));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, conns };
}

async function provider(id: string): Promise<TestProvider> {
  const p = new TestProvider(bridge!.mediaUrl, { token: await bridge!.mediaToken() });
  providers.push(p);
  await p.start(id, { media: { codec: 'pcmu', sample_rate: 8000 } });
  return p;
}

const ulaw = (ms: number) => Buffer.alloc(ms * 8, 0x55).toString('base64');

describe('a twilio-dialect bot that sends bad frames', () => {
  it('has each skipped and logged; the call and its neighbour go on', async () => {
    const bot = await twilioBot();
    const logs = captureLog('warn');
    bridge = await startBridge(
      { BOT_URL: bot.url, BOT_DIALECT: 'twilio', BOT_MAX_PAYLOAD_BYTES: '1048576' },
      {
        log: logs.log,
      },
    );
    const a = await provider('bad-bot');
    const b = await provider('good-neighbour');
    await waitFor(
      () => bot.conns.length === 2 && bot.conns.every((c) => c.events.some((e) => e.event === 'start')),
      5_000,
      'both streams started',
    );
    const byCall = (id: string) =>
      bot.conns.find((c) => c.events.some((e) => JSON.stringify(e).includes(`"session_id":"${id}"`)))!;
    const bad = byCall('bad-bot');
    const good = byCall('good-neighbour');
    bad.ws.send('{"event":"media","media":');
    bad.ws.send(JSON.stringify({ event: 'dance' }));
    bad.ws.send(Buffer.from([1, 2, 3]));
    bad.ws.send(JSON.stringify({ event: 'media', media: { payload: 42 } }));
    bad.ws.send(JSON.stringify({ event: 'mark', mark: {} }));
    good.ws.send(JSON.stringify({ event: 'media', streamSid: 'x', media: { payload: ulaw(200) } }));
    bad.ws.send(JSON.stringify({ event: 'media', streamSid: 'x', media: { payload: ulaw(200) } }));
    await waitFor(
      () => a.audioBytes().length >= 1600 && b.audioBytes().length >= 1600,
      5_000,
      'audio on both calls',
    );
    const skipped = logs.find(/bad frame from bot; skipped/).map((l) => l.code);
    expect(skipped).toEqual(['bad_json', 'unknown_event', 'unknown_event', 'invalid_field', 'invalid_field']);
    // Past the size bound: ws refuses the frame and closes; the bridge redials and the call goes on.
    bad.ws.send(JSON.stringify({ event: 'media', media: { payload: 'A'.repeat(2 * 1024 * 1024) } }));
    await waitFor(() => bot.conns.length === 3, 5_000, 'the redial');
    const again = bot.conns[2]!;
    await waitFor(() => again.events.some((e) => e.event === 'start'), 5_000, 'the stream started again');
    const before = a.audioBytes().length;
    again.ws.send(JSON.stringify({ event: 'media', media: { payload: ulaw(200) } }));
    await waitFor(() => a.audioBytes().length >= before + 1600, 5_000, 'audio after the redial');
    expect(a.closeCode).toBeUndefined();
    expect(b.closeCode).toBeUndefined();
    expect(a.errors().map((e) => e.code)).toContain('bot_unavailable');
    expect(b.errors()).toEqual([]);
  });

  it('a bot that closes its socket normally has hung up: the call ends after its audio', async () => {
    const bot = await twilioBot();
    bridge = await startBridge({ BOT_URL: bot.url, BOT_DIALECT: 'twilio' });
    const a = await provider('hangup');
    await waitFor(() => bot.conns[0]?.events.some((e) => e.event === 'start') === true, 5_000, 'the stream');
    bot.conns[0]!.ws.send(JSON.stringify({ event: 'media', media: { payload: ulaw(300) } }));
    bot.conns[0]!.ws.close(1000);
    const end = await a.waitEvent('session_end', 5_000);
    expect(a.audioBytes().length).toBeGreaterThanOrEqual(2400);
    expect(end.reason).toBe('bot');
    expect(await a.waitClosed()).toBe(1000);
    expect(bot.conns).toHaveLength(1); // not redialled
  });
});

describe('an openai-realtime server that misbehaves', () => {
  it('skips malformed events, redials after 401, 429 and a close, and tells the provider', async () => {
    emulator = createRealtimeEmulator({ apiKey: 'sk-right' });
    await emulator.listen(0);
    const logs = captureLog('warn');
    emulator.failNextConnects(401, 1);
    emulator.failNextConnects(429, 1);
    bridge = await startBridge(
      {
        BOT_URL: emulator.wsUrl('gpt-realtime'),
        BOT_DIALECT: 'openai-realtime',
        BOT_API_KEY: 'sk-right',
        BOT_RETRY_BASE_MS: '20',
      },
      { log: logs.log },
    );
    const a = await provider('realtime-faults');
    const conn = await emulator.waitForSession(1, 10_000);
    await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the session');
    expect(a.errors().map((e) => e.code)).toContain('bot_unavailable');
    expect(logs.find(/bot refused the connection/).map((l) => l.status)).toEqual([401, 429]);
    for (const kind of ['json', 'binary', 'unknown_event', 'no_type'] as const) conn.sendMalformed(kind);
    // The session goes on: the caller speaks, and the reply plays.
    const pcm = tonePcm16(1000, 8000, 8000, 9000);
    const tone = Buffer.alloc(8000);
    encodeInto('pcmu', new Int16Array(pcm.buffer, pcm.byteOffset, 8000), tone);
    await a.sendPaced(Buffer.concat([tone, Buffer.alloc(8000, 0xff)]), 160, 20);
    await waitFor(() => a.audioBytes().length > 800, 10_000, 'a reply after the bad frames');
    expect(logs.find(/bad frame from bot; skipped/).map((l) => l.code)).toEqual([
      'bad_json',
      'unknown_event',
      'unknown_event',
    ]);
    // A close: redialled, session.update sent again.
    conn.close(1011, 'server went away');
    const second = await emulator.waitForSession(2, 10_000);
    await waitFor(() => second.record.sent.includes('session.updated'), 5_000, 'the second session');
    expect(a.closeCode).toBeUndefined();
  });
});

/**
 * The bot leg with a real ws bot: session_start at the bot's rate, events both ways, hang-ups from either
 * side, and a bot that cannot be reached or drops.
 */
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let bridge: TestBridge | undefined;
let bot: TestBot | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  await bot?.close();
  bridge = undefined;
  bot = undefined;
});

async function connect(): Promise<TestProvider> {
  const p = new TestProvider(bridge!.mediaUrl, { token: await bridge!.mediaToken() });
  providers.push(p);
  await p.opened;
  return p;
}

async function connects(outcome: string): Promise<number> {
  const m = await bridge!.bridge.ctx.metrics.botConnects.get();
  return m.values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

describe('bot leg', () => {
  // Base64 too: the wire decodes each media event into a buffer it refills, and what is held must be a
  // copy of each chunk, not a view of that buffer.
  it.each(['binary', 'base64'] as const)(
    'holds the caller audio that comes before the bot picks up, and hands it over in order once it does (%s)',
    async (encoding) => {
      bot = await TestBot.start({ echo: false, holdUpgrades: true });
      bridge = await startBridge({ BOT_URL: bot.url, BOT_SAMPLE_RATE: '8000' });
      const p = await connect();
      await p.start('slow-bot-1', { media: { encoding } });
      await waitFor(() => bot!.upgradesWaiting === 1, 5_000, 'the bridge dialling the bot');
      // 50 chunks of 20 ms (1 s), each sample its own index: order and completeness show byte for byte.
      const sent = Buffer.alloc(50 * 320);
      for (let i = 0; i < sent.length / 2; i++) sent.writeInt16LE((i * 7) % 30_000, i * 2);
      for (let k = 0; k < 50; k++) {
        const chunk = sent.subarray(k * 320, (k + 1) * 320);
        if (encoding === 'binary') p.sendRaw(chunk);
        else p.send({ event: 'media', payload: chunk.toString('base64') });
      }
      const framesIn = async () =>
        (await bridge!.bridge.ctx.metrics.framesIn.get()).values.find((v) => v.labels.leg === 'caller')
          ?.value ?? 0;
      await waitFor(async () => (await framesIn()) >= 50, 5_000, 'the caller audio at the bridge');
      expect(bot.connections).toHaveLength(0);
      bot.answer();
      const conn = await bot.waitConnection();
      await waitFor(() => conn.audioBytesSoFar >= sent.length, 5_000, 'the held audio at the bot');
      expect(Buffer.compare(conn.audioBytes(), sent)).toBe(0);
    },
  );

  it("dials the bot with session_start in the bot's format and streams caller audio at the bot's rate", async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, BOT_SAMPLE_RATE: '24000' });
    const p = await connect();
    await p.start('bot-1', { customer_phone: '+15550111', direction: 'outbound' });
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({
      session_id: 'bot-1',
      customer_phone: '+15550111',
      direction: 'outbound',
      media: { codec: 'slin', sample_rate: 24000, encoding: 'binary' },
    });
    p.sendRaw(tonePcm16(440, 8000, 1600)); // 200 ms at 8 kHz
    // 200 ms at 24 kHz is 9600 bytes (less what the resampler still holds).
    await waitFor(() => conn.audioBytes().length >= 9600 - 400, 2_000, 'caller audio at the bot');
    expect(conn.audioBytes().length).toBeLessThanOrEqual(9600);
    expect(await connects('ok')).toBe(1);
  });

  it('passes dtmf and marks provider -> bot, and dtmf bot -> provider behind the audio before it', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, DSP_WORKERS: '1' });
    const p = await connect();
    await p.start('events-1');
    const conn = await bot.waitConnection();
    // The caller's digit reaches the bot behind the caller audio sent before it (through the DSP worker).
    p.sendRaw(tonePcm16(440, 8000, 8000));
    p.send({ event: 'dtmf', digit: '7' });
    p.send({ event: 'mark', name: 'prompt-done' });
    const digit = await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '7');
    expect(digit.audioBytesBefore).toBeGreaterThan(32000 - 400);
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'prompt-done');
    conn.ws.send(tonePcm16(440, 16000, 1600)); // 100 ms: 5 chunks
    conn.send({ event: 'dtmf', digit: '#' });
    expect((await p.waitEvent('dtmf')).digit).toBe('#');
    const at = p.order.findIndex((o) => o.kind === 'event' && o.event === 'dtmf');
    expect(p.order.slice(0, at).filter((o) => o.kind === 'audio').length).toBeGreaterThanOrEqual(3);
  });

  it('tells the bot session_end when the provider ends the call', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url });
    const p = await connect();
    await p.start('end-bot-1');
    const conn = await bot.waitConnection();
    p.send({ event: 'session_end', reason: 'caller hung up' });
    expect(await p.waitClosed()).toBe(1000);
    expect((await conn.waitEvent('session_end')).reason).toBe('caller hung up');
    await waitFor(() => conn.closed, 2_000, 'bot socket closed');
  });

  it('on the provider session_end, caller audio still in the DSP workers reaches the bot first', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, DSP_WORKERS: '1' });
    const p = await connect();
    await p.start('flush-1');
    const conn = await bot.waitConnection();
    p.sendRaw(tonePcm16(440, 8000, 8000)); // 1 s at once, then the hang-up right behind it
    p.send({ event: 'session_end', reason: 'done' });
    await conn.waitEvent('session_end');
    // 1 s at 16 kHz is 32000 bytes, less what the resampler still holds.
    expect(conn.audioBytes().length).toBeGreaterThan(32000 - 400);
    expect(await p.waitClosed()).toBe(1000);
  });

  it.each(['0', '1'])(
    'when the bot ends the call, its audio plays out, then session_end, close 1000 (DSP_WORKERS=%s)',
    async (workers) => {
      bot = await TestBot.start({ echo: false });
      bridge = await startBridge({ BOT_URL: bot.url, DSP_WORKERS: workers });
      const p = await connect();
      await p.start('bye-1');
      const conn = await bot.waitConnection();
      conn.ws.send(tonePcm16(440, 16000, 4000)); // 250 ms: 12.5 chunks
      conn.send({ event: 'session_end', reason: 'goodbye' });
      expect(await p.waitClosed(3_000)).toBe(1000);
      expect(p.audio).toHaveLength(13);
      const end = p.order.findIndex((o) => o.kind === 'event' && o.event === 'session_end');
      expect(end).toBe(p.order.length - 1);
      await waitFor(() => bridge!.bridge.ctx.sessions.count() === 0, 2_000, 'session removed');
    },
  );

  it('a bot that hangs up and closes its socket is not redialled; its audio plays out first', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, BOT_RETRY_BASE_MS: '10' });
    const p = await connect();
    await p.start('bye-close-1');
    const conn = await bot.waitConnection();
    conn.ws.send(tonePcm16(440, 16000, 4000)); // 250 ms: 12.5 chunks
    conn.send({ event: 'session_end', reason: 'goodbye' });
    conn.ws.close(1000, 'bye'); // as bots do, right after their session_end
    expect(await p.waitClosed(3_000)).toBe(1000);
    expect(p.errors()).toEqual([]);
    expect(p.audio).toHaveLength(13);
    const end = p.order.findIndex((o) => o.kind === 'event' && o.event === 'session_end');
    expect(end).toBe(p.order.length - 1);
    expect(bot.connections).toHaveLength(1);
    expect(await connects('failed')).toBe(0);
  });

  it('reports bad bot frames back to the bot and goes on', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url });
    const p = await connect();
    await p.start('badbot-1');
    const conn = await bot.waitConnection();
    conn.ws.send('{"event":"dance"}');
    conn.ws.send(Buffer.alloc(3));
    await waitFor(
      () => conn.events.filter((e) => e.event === 'error').length === 2,
      2_000,
      'errors at the bot',
    );
    expect(conn.events.filter((e) => e.event === 'error').map((e) => e.code)).toEqual([
      'unknown_event',
      'odd_length',
    ]);
    conn.ws.send(tonePcm16(440, 16000, 1600));
    await waitFor(() => p.audio.length >= 5, 2_000, 'audio after bad frames');
  });

  it('keeps the call up when the bot cannot be reached: retries, error events, metrics', async () => {
    const port = await closedPort();
    bridge = await startBridge({
      BOT_URL: `ws://127.0.0.1:${port}/bot?token=bot-credential`,
      BOT_RETRIES: '2',
      BOT_RETRY_BASE_MS: '50',
    });
    const p = await connect();
    await p.start('nobot-1');
    const first = await p.waitEvent('error', 2_000);
    expect(first.code).toBe('bot_unavailable');
    expect(first.message).toMatch(new RegExp(`ws://127.0.0.1:${port}/bot could not be reached; retrying`));
    expect(first.message).not.toContain('bot-credential'); // the bot URL's query is not shown
    const last = await p.waitEvent('error', 3_000, (e) => /gave up after 3 attempts/.test(String(e.message)));
    expect(last.code).toBe('bot_unavailable');
    expect(await connects('failed')).toBe(3);
    // The call is still up: listed, the socket open, caller audio accepted without complaint.
    p.sendRaw(tonePcm16(440, 8000, 800));
    await quietFor(100, 'the call to close or complain');
    expect(p.closeCode).toBeUndefined();
    expect(p.errors()).toHaveLength(2);
    expect(bridge.bridge.ctx.sessions.count()).toBe(1);
  });

  it('cuts and redials a bot that stops answering pings', async () => {
    bot = await TestBot.start({ echo: false, autoPong: false });
    bridge = await startBridge({ BOT_URL: bot.url, HEARTBEAT_INTERVAL_MS: '1000', BOT_RETRY_BASE_MS: '50' });
    const p = await connect();
    await p.start('deadbot-1');
    await bot.waitConnection(0);
    const again = await bot.waitConnection(1, 4_000);
    expect(again.sessionStart?.session_id).toBe('deadbot-1');
    expect(p.closeCode).toBeUndefined();
  });

  it('redials a bot that drops mid-call; audio flows again on the new connection', async () => {
    bot = await TestBot.start({ echo: true });
    bridge = await startBridge({ BOT_URL: bot.url, BOT_RETRY_BASE_MS: '50' });
    const p = await connect();
    await p.start('drop-1');
    await bot.waitConnection(0);
    bot.dropAll();
    const err = await p.waitEvent('error', 2_000);
    expect(err.message).toMatch(/dropped the connection/);
    const again = await bot.waitConnection(1, 3_000);
    expect(again.sessionStart?.session_id).toBe('drop-1');
    p.sendRaw(tonePcm16(440, 8000, 1600));
    await waitFor(() => p.audio.length >= 8, 2_000, 'echo after redial');
    expect(await connects('ok')).toBe(2);
    expect(p.closeCode).toBeUndefined();
  });
});

describe("per-tenant bot: the tenant's bot_url, else BOT_URL", () => {
  const bots: TestBot[] = [];
  afterEach(async () => {
    for (const b of bots.splice(0)) await b.close();
  });

  async function startBots(n: number): Promise<TestBot[]> {
    const started = await Promise.all(Array.from({ length: n }, () => TestBot.start({ echo: true })));
    bots.push(...started);
    return started;
  }

  /** PUT /v1/media-stream for `tenant` with its own media secret (and bot_url when given). */
  async function register(tenant: string, bot_url?: string): Promise<void> {
    const res = await fetch(`${bridge!.http}/v1/media-stream`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${await bridge!.restToken(['media:manage'], tenant)}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        media_ws_url: 'ws://127.0.0.1:9/v1/media',
        media_secret: `${tenant}-media-secret`,
        ...(bot_url !== undefined && { bot_url }),
      }),
    });
    expect(res.status).toBe(200);
  }

  /** A call from `tenant` (a media token signed with its registered secret; "default": the development one). */
  async function callFrom(tenant: string, sessionId: string): Promise<TestProvider> {
    const token =
      tenant === 'default'
        ? await bridge!.mediaToken()
        : await bridge!.mediaToken({ tenant, secret: `${tenant}-media-secret` });
    const p = new TestProvider(bridge!.mediaUrl, { token });
    providers.push(p);
    await p.start(sessionId);
    return p;
  }

  it('two tenants each reach their own bot; tenants without bot_url get BOT_URL', async () => {
    const [global, acmeBot, globexBot] = await startBots(3);
    const logs = captureLog('debug');
    bridge = await startBridge({ BOT_URL: global!.url }, { log: logs.log });
    await register('acme', `${acmeBot!.url}/bot?token=tok-acme-81`);
    await register('globex', `${globexBot!.url.replace('ws://', 'ws://bot-user:pw-globex-82@')}/bot`);
    await register('initech'); // a stored config without bot_url

    const calls = {
      acme: await callFrom('acme', 'acme-call'),
      globex: await callFrom('globex', 'globex-call'),
      initech: await callFrom('initech', 'initech-call'),
      default: await callFrom('default', 'default-call'), // no stored config at all
    };
    const acme = await acmeBot!.waitConnection(0);
    const globex = await globexBot!.waitConnection(0);
    expect(acme.sessionStart).toMatchObject({ session_id: 'acme-call', tenant: 'acme' });
    expect(globex.sessionStart).toMatchObject({ session_id: 'globex-call', tenant: 'globex' });
    await global!.waitConnection(1);
    expect(
      global!.connections.map((c) => [c.sessionStart?.tenant, c.sessionStart?.session_id]).sort(),
    ).toEqual([
      ['default', 'default-call'],
      ['initech', 'initech-call'],
    ]);
    expect([acmeBot!.connections.length, globexBot!.connections.length]).toEqual([1, 1]);

    // Audio goes both ways through each tenant's own bot (they echo).
    for (const p of Object.values(calls)) p.sendRaw(tonePcm16(440, 8000, 1600));
    await waitFor(
      () => Object.values(calls).every((p) => p.audio.length >= 5),
      3_000,
      "audio back from each tenant's bot",
    );
    expect(acme.audioBytesSoFar).toBeGreaterThan(0);
    expect(globex.audioBytesSoFar).toBeGreaterThan(0);
    for (const p of Object.values(calls)) expect(p.errors()).toEqual([]);
    // The bots' credentials are in no log line.
    expect(logs.find(/bot connected/).length).toBe(4);
    for (const l of logs.lines) expect(JSON.stringify(l)).not.toMatch(/tok-acme-81|pw-globex-82|bot-user/);
  });

  it("a tenant's bot_url that cannot be reached: that call gets bot_unavailable named by the display URL", async () => {
    const [global] = await startBots(1);
    const port = await closedPort();
    bridge = await startBridge({ BOT_URL: global!.url, BOT_RETRIES: '0', BOT_RETRY_BASE_MS: '10' });
    await register('acme', `ws://127.0.0.1:${port}/bot?token=tok-acme-83`);
    const p = await callFrom('acme', 'acme-nobot');
    const err = await p.waitEvent('error', 2_000);
    expect(err.code).toBe('bot_unavailable');
    expect(err.message).toContain(`ws://127.0.0.1:${port}/bot`);
    expect(err.message).not.toContain('tok-acme-83');
    // Not the bridge's bot instead.
    expect(global!.connections).toHaveLength(0);
  });

  it('a stored bot_url whose host BOT_URL_ALLOWED_HOSTS no longer lists is not dialled: bot_unavailable, the call goes on', async () => {
    const [global, acmeBot] = await startBots(2);
    const logs = captureLog('debug');
    // Stored while any host was allowed (or written by an instance configured otherwise).
    bridge = await startBridge({ BOT_URL: global!.url });
    await register('acme', `${acmeBot!.url}/bot?token=tok-acme-84`);
    const stored = await bridge.bridge.ctx.tenants.getMediaStream('acme');
    await bridge.close();
    bridge = await startBridge(
      { BOT_URL: global!.url, BOT_URL_ALLOWED_HOSTS: 'bots.example.com' },
      { log: logs.log },
    );
    await bridge.bridge.ctx.tenants.putMediaStream(stored!, 'acme-media-secret');
    const p = await callFrom('acme', 'acme-refused');
    const err = await p.waitEvent('error', 2_000);
    expect(err.code).toBe('bot_unavailable');
    expect(err.message).toMatch(/bot_url is refused .*BOT_URL_ALLOWED_HOSTS/);
    expect(err.message).not.toContain('tok-acme-84');
    // The call stays up, with no bot: neither the tenant's nor the bridge's.
    p.sendRaw(tonePcm16(440, 8000, 1600));
    await quietFor(200, 'the call to close or a bot to be dialled');
    expect(p.closeCode).toBeUndefined();
    expect([acmeBot!.connections.length, global!.connections.length]).toEqual([0, 0]);
    const warn = logs.find(/refused by the current configuration/, 'acme-refused');
    expect(warn).toMatchObject([{ level: 40, tenant: 'acme' }]);
    for (const l of logs.lines) expect(JSON.stringify(l)).not.toContain('tok-acme-84');
  });

  it('a stored bot_url this instance cannot unseal: bot_unavailable and a warning naming the tenant, never BOT_URL', async () => {
    const [global] = await startBots(1);
    const logs = captureLog('debug');
    bridge = await startBridge({ BOT_URL: global!.url }, { log: logs.log });
    // What the Redis store keeps for a bot_url sealed under another STATE_SECRET_KEY.
    await bridge.bridge.ctx.tenants.putMediaStream(
      { tenant: 'acme', media_ws_url: 'ws://127.0.0.1:9/v1/media', channels: 1, bot_url_unreadable: true },
      'acme-media-secret',
    );
    const p = await callFrom('acme', 'acme-sealed');
    const err = await p.waitEvent('error', 2_000);
    expect(err.code).toBe('bot_unavailable');
    expect(err.message).toMatch(/cannot be read by this bridge instance/);
    await quietFor(200, 'the call to close or a bot to be dialled');
    expect(p.closeCode).toBeUndefined();
    expect(global!.connections).toHaveLength(0);
    expect(logs.find(/cannot be unsealed/, 'acme-sealed')).toMatchObject([{ level: 40, tenant: 'acme' }]);
  });
});

/**
 * `GET /v1/events` on a real bridge: the event sequence of a call (levels measured against tones of
 * known level), marks, clears and errors, the bot's response latency, tenant isolation, scopes, and a
 * client that stops reading.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pcm16Samples, tonePcm16 } from '../helpers/audio.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { SseClient } from '../helpers/sse.js';
import { waitFor } from '../helpers/wait.js';
import { call, restToken, startRig as startControlRig } from './harness.js';

let rig: InProcessRig | undefined;
const clients: SseClient[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await rig?.close();
  rig = undefined;
});

async function events(token: string | undefined, how: 'header' | 'query' = 'header'): Promise<SseClient> {
  const c = new SseClient(`${rig!.http}/v1/events`, token, how);
  clients.push(c);
  await c.answered;
  return c;
}

/** dBFS of a sine of peak `amplitude`. */
const sineDbfs = (amplitude: number) => 20 * Math.log10(amplitude / Math.SQRT2 / 32768);

function peak(pcm16: Buffer): number {
  let m = 0;
  for (const v of pcm16Samples(pcm16)) m = Math.max(m, Math.abs(v));
  return m;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

describe('GET /v1/events', () => {
  it('streams a call: session_started, levels at the tones true dBFS, mark, session_ended', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:tone:440' } });
    const sse = await events(await rig.restToken(['sessions:read']));
    expect(sse.status).toBe(200);
    expect(sse.contentType).toContain('text/event-stream');
    const p = await rig.call('ev-1');
    const started = await sse.waitEvent('session_started');
    expect(started.data).toMatchObject({
      session_id: 'ev-1',
      customer_phone: '+15550100',
      direction: 'inbound',
      conferenceNumbers: [],
      dialect: 'default',
      bot: { dialect: 'builtin', url: 'builtin:tone:440' },
      formats: { codec: 'slin', input_sample_rate: 8000, output_sample_rate: 8000, encoding: 'binary' },
    });
    const t0 = sse.events.length;
    await p.sendPaced(tonePcm16(1000, 8000, 8000 * 1.6, 10_000), 320, 20);
    p.send({ event: 'mark', name: 'greeting-done' });
    await sse.waitEvent('mark');
    p.send({ event: 'session_end' });
    const ended = await sse.waitEvent('session_ended');
    expect(ended.data).toMatchObject({ session_id: 'ev-1', dialect: 'default' });
    expect(sse.of('mark')[0]!.data).toEqual({ session_id: 'ev-1', name: 'greeting-done' });

    const levels = sse.events.slice(t0).filter((e) => e.event === 'level');
    // 1.6 s of call at 5 a second.
    expect(levels.length).toBeGreaterThanOrEqual(6);
    const gaps = levels.slice(1).map((l, i) => l.at - levels[i]!.at);
    expect(median(gaps)).toBeGreaterThan(100);
    expect(median(gaps)).toBeLessThan(250);
    const caller = levels.map((l) => l.data.caller_dbfs).filter((v): v is number => typeof v === 'number');
    const bot = levels.map((l) => l.data.bot_dbfs).filter((v): v is number => typeof v === 'number');
    expect(caller.length).toBeGreaterThanOrEqual(5);
    // Every full window of the caller's tone is within 1 dB of its true level (-13.3 dBFS).
    for (const v of caller.slice(1, -1)) expect(Math.abs(v - sineDbfs(10_000))).toBeLessThan(1);
    // The tone bot (8192 peak, -15.05 dBFS) as the caller received it.
    expect(Math.abs(median(bot) - sineDbfs(8192))).toBeLessThan(1);
    const order = sse.events.filter((e) => e.data.session_id === 'ev-1').map((e) => e.event);
    expect(order[0]).toBe('session_started');
    expect(order.at(-1)).toBe('session_ended');
  });

  it("reports the bot's clear and a provider's bad frame as events (token as ?token=)", async () => {
    rig = await startRig({ bot: { echo: true } });
    const sse = await events(await rig.restToken(['sessions:read']), 'query');
    const p = await rig.call('ev-2');
    const conn = await rig.bot!.waitConnection();
    await sse.waitEvent('session_started');
    conn.send({ event: 'clear' });
    await sse.waitEvent('clear');
    p.sendRaw('{not json');
    const err = await sse.waitEvent('error');
    expect(err.data).toMatchObject({ session_id: 'ev-2', source: 'provider' });
    expect(typeof err.data.code).toBe('string');
  });

  it('bot_latency_ms: caller stops -> first bot audio, as heard at the provider and near the echo delay', async () => {
    const delay = 600;
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: String(delay) } });
    const sse = await events(await rig.restToken(['sessions:read']));
    const p = await rig.call('ev-3');
    await sse.waitEvent('session_started');
    // 200 ms of speech, then silence, twice: the echo answers `delay` after each utterance began. The
    // second turn is measured (the first call on a fresh bridge may also wait for DSP workers to start).
    const speech = 200;
    const turn = 1_400;
    const pcm = Buffer.concat([
      tonePcm16(700, 8000, 8 * speech, 10_000),
      Buffer.alloc(2 * 8 * (turn - speech)),
    ]);
    const t0 = performance.now();
    await p.sendPaced(Buffer.concat([pcm, pcm]), 320, 20);
    await waitFor(() => sse.of('bot_latency_ms').length >= 2, 3_000, 'two bot_latency_ms events');
    const ms = sse.of('bot_latency_ms')[1]!.data.bot_latency_ms as number;
    // The same latency seen by the provider: its last voiced chunk was sent at t0 + turn + speech - 20;
    // the first loud chunk it got back after that.
    const lastSpoken = t0 + turn + speech - 20;
    const back = p.audio.find((a) => a.at > lastSpoken && peak(a.data) > 1_000);
    expect(back).toBeDefined();
    const heard = back!.at - lastSpoken;
    console.log(
      `bot_latency_ms ${ms}; at the provider ${heard.toFixed(0)} ms (echo ${delay} ms, ${speech} ms utterance)`,
    );
    // The pacer sends up to PACE_LEAD_MS (40) ahead of the provider's clock; loopback adds a little.
    expect(Math.abs(ms - heard)).toBeLessThan(60);
    expect(ms).toBeGreaterThan(delay - speech - 80);
    // The echo's own delay plus what the bridge adds (the DSP worker path adds most).
    expect(ms).toBeLessThan(delay - speech + 300);
  });

  it('keeps tenants apart, and refuses a token without the scope or without a token', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo' } });
    expect((await events(undefined)).status).toBe(401);
    const refused = await events(await rig.restToken(['sessions:listen']));
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'forbidden' });
    expect(refused.body).toContain('sessions:read');
    const mine = await events(await rig.restToken(['sessions:read']));
    const theirs = await events(await rig.restToken(['sessions:read'], 'other'));
    const p = await rig.call('ev-4');
    await mine.waitEvent('session_started');
    await mine.waitEvent('level');
    p.send({ event: 'session_end' });
    await mine.waitEvent('session_ended');
    expect(theirs.events).toEqual([]);
  });

  it('a client that stops reading loses events (counted), and the call is not slowed', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' } });
    const slow = await events(await rig.restToken(['sessions:read']));
    slow.pause();
    const calls = await Promise.all(Array.from({ length: 8 }, (_, i) => rig!.call(`ev-slow-${i}`)));
    const dropped = async () => {
      const text = await (await fetch(`${rig!.http}/metrics`)).text();
      return Number(/^voicebridge_events_dropped_total (\d+)/m.exec(text)?.[1] ?? 0);
    };
    // Messages' status events with long fields fill the slow client's socket quickly.
    const big = 'x'.repeat(16_000);
    for (let round = 0; round < 200 && (await dropped()) === 0; round++) {
      for (let i = 0; i < calls.length; i++) {
        rig.bridge.media.notify('default', `ev-slow-${i}`, { event: 'message_status', status: big });
      }
      await new Promise((r) => setImmediate(r));
    }
    expect(await dropped()).toBeGreaterThan(0);
    // The calls still flow in real time: a second of audio echoes back within a second and a half.
    const p = calls[0]!;
    const before = p.audioBytes().length;
    const t = performance.now();
    await p.sendPaced(tonePcm16(700, 8000, 8000, 10_000), 320, 20);
    await waitFor(() => p.audioBytes().length - before >= 15_000, 1_500, 'echo in real time');
    expect(performance.now() - t).toBeLessThan(2_500);
  });
});

describe('GET /v1/events: the stream itself', () => {
  it('ends open streams when the bridge closes, without holding the close', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo' } });
    const sse = await events(await rig.restToken(['sessions:read']));
    await waitFor(() => sse.comments >= 1, 2_000, 'the opening comment');
    const t = performance.now();
    await rig.close();
    expect(performance.now() - t).toBeLessThan(3_000);
    await waitFor(() => sse.ended, 2_000, 'the stream ended');
    const text = rig.bridge.ctx.metrics.registry.getSingleMetricAsString('voicebridge_event_streams');
    expect(await text).toMatch(/^voicebridge_event_streams 0$/m);
  });
});

describe('GET /v1/events: conference and messaging', () => {
  it('session_updated when the conference changes; the call’s messaging events', async () => {
    const h = await startControlRig({ env: { BOT_URL: 'builtin:echo' } });
    rig = h;
    const sse = await events(await restToken(['sessions:read']));
    await h.call('ev-5');
    await sse.waitEvent('session_started');
    const add = await call(h.http, 'POST', '/v1/sessions/ev-5/conference', {
      token: await restToken(['calls:control']),
      body: { action: 'add', number: '100', callerId: '15550100' },
    });
    expect(add.status).toBe(200);
    const updated = await sse.waitEvent('session_updated');
    expect(updated.data).toMatchObject({
      session_id: 'ev-5',
      conferenceNumbers: ['100'],
      dialect: 'default',
    });
    // A messaging webhook's event for the call reaches its timeline as it reaches its bot.
    await h.bridge.ctx.sessionEvents.deliver('default', 'ev-5', {
      event: 'message_status',
      channel: 'chat',
      message_id: 'm-1',
      status: 'delivered',
    });
    const status = await sse.waitEvent('message_status');
    expect(status.data).toEqual({
      session_id: 'ev-5',
      channel: 'chat',
      message_id: 'm-1',
      status: 'delivered',
    });
  });
});

/**
 * The bridge behind the Vonage Voice API `websocket` endpoint (`/v1/media/vonage[/tenant]`): a call placed
 * by the emulated Vonage (which closes the call on any frame that is not exactly 20 ms, and acks a notify
 * only once its audio played), and a client written here from Vonage's documents for the cases the
 * emulator has no knob for (malformed frames, timing of each frame).
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { generateTone } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { expectPacedBurst } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { type Moment, moment } from '../helpers/schedstat.js';
import { toneCallBothWays } from '../helpers/tone-call.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'vonage-stream-token-for-tests';
const UUID = 'aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee';
let bridge: Rig | undefined;
let bot: TestBot | undefined;
const clients: VonageSide[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await bridge?.close();
  bridge = undefined;
  await bot?.close();
  bot = undefined;
});

/** Vonage's side of a websocket endpoint, as its documents describe it. */
class VonageSide {
  readonly ws: WebSocket;
  /** Binary frames with arrival time and this process's off-CPU time so far (schedstat). */
  readonly frames: (Moment & { bytes: Buffer })[] = [];
  readonly texts: Record<string, unknown>[] = [];
  status: number | undefined;
  closeCode: number | undefined;
  readonly opened: Promise<void>;

  constructor(url: string, authorization: string | undefined) {
    this.ws = new WebSocket(url, { headers: authorization === undefined ? {} : { authorization } });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => {
        this.status = res.statusCode;
        reject(new Error(`refused ${res.statusCode}`));
      });
      this.ws.once('error', reject);
    });
    this.opened.catch(() => {});
    this.ws.on('message', (d: Buffer, isBinary: boolean) => {
      if (isBinary) this.frames.push({ ...moment(), bytes: d });
      else this.texts.push(JSON.parse(d.toString()) as Record<string, unknown>);
    });
    this.ws.on('close', (code) => {
      this.closeCode = code;
    });
    clients.push(this);
  }

  json(msg: unknown): void {
    this.ws.send(JSON.stringify(msg));
  }

  actions(action: string) {
    return this.texts.filter((t) => t.action === action);
  }
}

function url(path = '/v1/media/vonage'): string {
  return `${bridge!.http.replace('http', 'ws')}${path}`;
}

describe('Vonage websocket endpoint in front', () => {
  it('refuses an upgrade without the stream token as a bearer, before the upgrade', async () => {
    bridge = await startBridge({ VONAGE_STREAM_TOKEN: TOKEN });
    for (const auth of [
      undefined,
      'Bearer another-token',
      `Basic ${Buffer.from(`x:${TOKEN}`).toString('base64')}`,
    ]) {
      const c = new VonageSide(url(), auth);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    // Another tenant has no token configured: refused too.
    const acme = new VonageSide(url('/v1/media/vonage/acme'), `Bearer ${TOKEN}`);
    await expect(acme.opened).rejects.toThrow();
    expect(acme.status).toBe(401);
    // The right token opens the stream.
    const ok = new VonageSide(url(), `Bearer ${TOKEN}`);
    await ok.opened;
  });

  it('without a token configured, refuses every stream; MEDIA_AUTH=none opens them', async () => {
    bridge = await startBridge({});
    const c = new VonageSide(url(), `Bearer ${TOKEN}`);
    await expect(c.opened).rejects.toThrow();
    expect(c.status).toBe(401);
    await bridge.close();
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    await new VonageSide(url(), undefined).opened;
  });

  for (const rate of [16000, 8000]) {
    it(`carries an emulated Vonage call at ${rate} Hz: tone both ways, digits, a notify played, no rule broken`, async () => {
      bot = await TestBot.start({ echo: true });
      bridge = await startBridge({ VONAGE_STREAM_TOKEN: TOKEN, BOT_URL: bot.url });
      const call = new SyntheticCall({
        url: url(),
        sessionId: UUID,
        customerPhone: '447700900001',
        direction: 'inbound',
        dialect: 'vonage',
        rate,
        auth: { header: { name: 'authorization', value: `Bearer ${TOKEN}` } },
        customParameters: { direction: 'inbound' },
        audio: generateTone(440, rate, rate * 2, 0.5),
        dtmf: [{ digit: '7', atMs: 300 }],
        keepReceived: true,
        tailMs: 600,
      });
      const { report } = await toneCallBothWays(bot, call, {
        label: `vonage ${rate}`,
        rate,
        start: { session_id: UUID, customer_phone: '447700900001', direction: 'inbound' },
        digit: '7',
        mark: 'half',
      });
      // Vonage got a notify for the mark and acked it once the audio before it played.
      expect(report.ackedMarks.map((m) => [m.name.startsWith('notify-'), m.how])).toEqual([[true, 'played']]);
    });
  }

  it('with the emulated Vonage, each mark reaches the bot once, whether played or taken by a clear', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ VONAGE_STREAM_TOKEN: TOKEN, BOT_URL: bot.url, PACE_LEAD_MS: '60' });
    const call = new SyntheticCall({
      url: url(),
      sessionId: UUID,
      customerPhone: '447700900001',
      direction: 'inbound',
      dialect: 'vonage',
      rate: 16000,
      auth: { header: { name: 'authorization', value: `Bearer ${TOKEN}` } },
      audio: new Int16Array(16000 * 3),
      keepReceived: true,
      tailMs: 300,
    });
    const done = call.run();
    const conn = await bot.waitConnection();
    // A mark behind 3 s of audio, the audio cleared after 0.4 s: the mark still waits in the bridge, and
    // goes to Vonage right after the clear (Vonage then holds nothing before it and acks it at once).
    conn.ws.send(tonePcm16(440, 16000, 16000 * 3));
    conn.send({ event: 'mark', name: 'queued-here' });
    await waitFor(() => call.leg.record.framesReceived >= 20, 3_000, 'the bot audio at Vonage');
    conn.send({ event: 'clear' });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'queued-here');
    // A mark behind 1 s of audio, cleared as its last frames reach Vonage: Vonage may hold the notify
    // (then its clear drops it silently and the bridge reports it) or have played it (then it acks it).
    const sent = call.leg.record.framesReceived;
    conn.ws.send(tonePcm16(440, 16000, 16000));
    conn.send({ event: 'mark', name: 'at-the-end' });
    await waitFor(() => call.leg.record.framesReceived >= sent + 50, 3_000, 'the second run at Vonage');
    conn.send({ event: 'clear' });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'at-the-end');
    const report = await done;
    expect(report.clears).toBe(2);
    expect(report.breaches).toEqual([]);
    expect(conn.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual([
      'queued-here',
      'at-the-end',
    ]);
  });

  it('paces the bot audio at exactly 20 ms per binary message, marks as notify, clear, bad frames skipped, and hang-up both ways', async () => {
    bot = await TestBot.start({ echo: false });
    // In a process of its own: the pacing check sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { VONAGE_STREAM_TOKEN: TOKEN, BOT_URL: bot.url } });
    bridge = rig;
    const v = new VonageSide(url(), `Bearer ${TOKEN}`);
    await v.opened;
    v.json({
      event: 'websocket:connected',
      'content-type': 'audio/l16;rate=16000',
      uuid: UUID,
      from: '447700900002',
    });
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: UUID, customer_phone: '447700900002' });

    // The sessions list names the dialect.
    const rest = await bridge.restToken(['sessions:read']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['vonage']);

    // 4 s of bot audio at once leaves as 200 binary messages of exactly 640 bytes, 20 ms apart.
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => v.frames.length >= 200, 7_000, '4 s of bot audio');
    expect(v.frames.every((f) => f.bytes.length === 640)).toBe(true);
    const burst = v.frames.slice(0, 200);
    expectPacedBurst('vonage', burst, watch);
    // The mark follows its audio as a notify; Vonage's websocket:notify reaches the bot as the mark.
    await waitFor(() => v.actions('notify').length === 1, 2_000, 'the notify at Vonage');
    const notify = v.actions('notify')[0] as { payload: { name: string; seq: number } };
    expect(notify).toEqual({ action: 'notify', payload: { name: 'm1', seq: expect.any(Number) } });
    expect(conn.events.some((e) => e.event === 'mark')).toBe(false);
    // Vonage sends the notify's payload back as it was.
    v.json({ event: 'websocket:notify', payload: notify.payload });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');

    // The bot's clear becomes Vonage's clear.
    conn.ws.send(tonePcm16(440, 16000, 16000));
    await waitFor(() => v.frames.length > 200, 2_000, 'more audio');
    conn.send({ event: 'clear' });
    await waitFor(() => v.actions('clear').length === 1, 2_000, 'the clear at Vonage');
    expect(v.actions('clear')[0]).toEqual({ action: 'clear' });
    v.json({ event: 'websocket:cleared' });
    // A notify Vonage holds when a clear comes is dropped by Vonage without a word: the clear reports it
    // to the bot at once, and Vonage's websocket:cleared changes nothing (the name m1 again: names may
    // repeat).
    conn.ws.send(tonePcm16(440, 16000, 3200));
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => v.actions('notify').length === 2, 2_000, 'the second notify at Vonage');
    conn.send({ event: 'clear' });
    await waitFor(() => v.actions('clear').length === 2, 2_000, 'the second clear at Vonage');
    await waitFor(
      () => conn.events.filter((e) => e.event === 'mark').length === 2,
      2_000,
      'the cleared mark',
    );
    v.json({ event: 'websocket:cleared' });
    v.json({ event: 'websocket:cleared' });

    // Malformed frames are skipped (Vonage has no error event: nothing goes back) and the call goes on.
    v.ws.send('{"event":');
    v.ws.send(Buffer.alloc(641));
    v.json({ event: 'websocket:dtmf', digit: 'x' });
    v.json({ event: 'websocket:unknown' });
    v.json({ event: 'websocket:dtmf', digit: '9', duration: 260 });
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '9');
    expect(conn.events.filter((e) => e.event === 'dtmf').length).toBe(1);
    expect(conn.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual(['m1', 'm1']);
    const before = conn.audioBytesSoFar;
    v.ws.send(Buffer.from(tonePcm16(440, 16000, 320)));
    await waitFor(() => conn.audioBytesSoFar > before, 2_000, 'caller audio after the bad frames');
    expect(v.texts.filter((t) => t.event === 'error')).toEqual([]);

    // Vonage hangs up by closing the socket: the bot is told.
    v.ws.close(1000);
    await conn.waitEvent('session_end', 3_000);
  });

  it('a bot hang-up closes the Vonage socket with 1000 once its audio played out', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ VONAGE_STREAM_TOKEN: TOKEN, BOT_URL: bot.url });
    const v = new VonageSide(url(), `Bearer ${TOKEN}`);
    await v.opened;
    v.json({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000' });
    const conn = await bot.waitConnection();
    // No uuid header: the bridge makes one.
    expect(String(conn.sessionStart!.session_id)).toMatch(/^[0-9a-f-]{36}$/);
    conn.ws.send(tonePcm16(440, 16000, 3200));
    conn.send({ event: 'session_end', reason: 'done' });
    await waitFor(() => v.closeCode !== undefined, 3_000, 'the socket to close');
    expect(v.closeCode).toBe(1000);
    // 200 ms at 8 kHz: 10 messages of exactly 320 bytes.
    expect(v.frames.length).toBe(10);
    expect(v.frames.every((f) => f.bytes.length === 320)).toBe(true);
  });

  it('refuses a stream that does not open with websocket:connected in a content-type it takes', async () => {
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    for (const first of [
      JSON.stringify({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=24000' }),
      JSON.stringify({ event: 'websocket:dtmf', digit: '1' }),
      'not json',
    ]) {
      const v = new VonageSide(url(), undefined);
      await v.opened;
      v.ws.send(first);
      await waitFor(() => v.closeCode !== undefined, 3_000, 'the close');
      expect(v.closeCode).toBe(4400);
    }
  });
});

/**
 * The bridge behind Asterisk `chan_websocket` (`/v1/media/asterisk[/tenant]`): calls placed by the
 * emulated Asterisk (which drops partial frames and data sent after MEDIA_XOFF, closes on a message over
 * 65,500 bytes, answers MARK_MEDIA when the mark reaches the front of its queue and reports nothing for
 * what FLUSH_MEDIA takes), and a client written here from Asterisk's documents for what the emulator has
 * no knob for (an XOFF held as long as the test likes, malformed control, each frame's timing).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto } from '../../src/audio/codec.js';
import { generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { expectPacedBurst, PlatformSocket } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { toneCallBothWays } from '../helpers/tone-call.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const USER = 'asterisk-pbx';
const PASSWORD = 'asterisk-password-for-tests';
const ENV = { ASTERISK_WS_USERNAME: USER, ASTERISK_WS_PASSWORD: PASSWORD };
const CHANNEL_ID = '1732456789.42';
let bridge: Rig | undefined;
let bot: TestBot | undefined;
const clients: PlatformSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.ws.terminate();
  await bridge?.close();
  bridge = undefined;
  await bot?.close();
  bot = undefined;
});

function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** Asterisk's side of a chan_websocket channel, as its documents describe it. */
class AsteriskSide extends PlatformSocket {
  constructor(url: string, authorization: string | undefined) {
    super(url, authorization === undefined ? {} : { authorization }, clients);
  }

  plainStart(format = 'ulaw', frame = 160): void {
    this.ws.send(
      `MEDIA_START connection_id:9f1c channel:WebSocket/conn1-00000001 channel_id:${CHANNEL_ID} format:${format} optimal_frame_size:${frame} ptime:20`,
    );
  }

  /** Plain-text commands the bridge sent, as their words. */
  commands(name: string): string[][] {
    return this.got
      .map((g) => (typeof g.msg.text === 'string' ? g.msg.text.split(' ') : [String(g.msg.command)]))
      .filter((w) => w[0] === name);
  }

  /** Binary frames and commands in arrival order: 'audio' or the command's words. */
  order(): { at: number; what: string }[] {
    return [
      ...this.binary.map((b) => ({ at: b.at, what: 'audio' })),
      ...this.got.map((g) => ({ at: g.at, what: String(g.msg.text ?? g.msg.command) })),
    ].sort((a, b) => a.at - b.at);
  }
}

function url(path = '/v1/media/asterisk'): string {
  return `${bridge!.http.replace('http', 'ws')}${path}`;
}

function ulawToPcm(frames: readonly { bytes: Buffer }[]): Int16Array {
  const all = Buffer.concat(frames.map((f) => f.bytes));
  const pcm = new Int16Array(all.length);
  decodeInto('pcmu', all, pcm);
  return pcm;
}

describe('Asterisk chan_websocket in front', () => {
  it('refuses an upgrade without the websocket client credentials, before the upgrade', async () => {
    bridge = await startBridge(ENV);
    for (const auth of [undefined, basic(USER, 'wrong'), basic('other', PASSWORD), `Bearer ${PASSWORD}`]) {
      const c = new AsteriskSide(url(), auth);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    const acme = new AsteriskSide(url('/v1/media/asterisk/acme'), basic(USER, PASSWORD));
    await expect(acme.opened).rejects.toThrow();
    expect(acme.status).toBe(401);
    await new AsteriskSide(url(), basic(USER, PASSWORD)).opened;
  });

  it('without credentials configured, refuses every channel; MEDIA_AUTH=none opens them', async () => {
    bridge = await startBridge({});
    const c = new AsteriskSide(url(), basic(USER, PASSWORD));
    await expect(c.opened).rejects.toThrow();
    expect(c.status).toBe(401);
    await bridge.close();
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    await new AsteriskSide(url(), undefined).opened;
  });

  for (const [codec, rate, control] of [
    ['pcmu', 8000, 'plain'],
    ['slin', 16000, 'json'],
  ] as const) {
    it(`carries an emulated Asterisk call (${codec} ${rate} Hz, ${control} control): tone both ways, digits, a mark processed, no rule broken`, async () => {
      bot = await TestBot.start({ echo: true });
      bridge = await startBridge({ ...ENV, BOT_URL: bot.url });
      const call = new SyntheticCall({
        url: url(),
        sessionId: CHANNEL_ID,
        customerPhone: '6001',
        direction: 'inbound',
        dialect: 'asterisk',
        rate,
        codec,
        auth: { username: USER, password: PASSWORD },
        settings: { control },
        customParameters: { customer_phone: '6001', direction: 'inbound' },
        audio: generateTone(440, rate, rate * 2, 0.5),
        dtmf: [{ digit: '3', atMs: 300 }],
        keepReceived: true,
        tailMs: 600,
      });
      const { report } = await toneCallBothWays(bot, call, {
        label: `asterisk ${codec} ${rate}`,
        rate,
        start:
          control === 'json'
            ? { session_id: CHANNEL_ID, customer_phone: '6001', direction: 'inbound' }
            : { session_id: CHANNEL_ID },
        digit: '3',
        mark: 'half way',
      });
      expect(report.ackedMarks.map((m) => m.how)).toEqual(['played']);
    });
  }

  it('with the emulated Asterisk sending XOFF/XON on a short queue, stops at XOFF and loses nothing', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ ...ENV, BOT_URL: bot.url, PACE_LEAD_MS: '60' });
    const call = new SyntheticCall({
      url: url(),
      sessionId: CHANNEL_ID,
      customerPhone: '6001',
      direction: 'inbound',
      dialect: 'asterisk',
      rate: 8000,
      codec: 'pcmu',
      auth: { username: USER, password: PASSWORD },
      // XOFF once 3 frames wait, XON below 2: the bridge's 60 ms lead reaches it again and again.
      settings: { xoffFrames: 3, xonFrames: 2 },
      audio: new Int16Array(8000 * 3),
      keepReceived: true,
      tailMs: 400,
    });
    const done = call.run();
    const conn = await bot.waitConnection();
    conn.ws.send(tonePcm16(440, 16000, 32000));
    conn.send({ event: 'mark', name: 'end of tone' });
    await conn.waitEvent('mark', 5_000, (e) => e.name === 'end of tone');
    const report = await done;
    console.log(`asterisk flow: ${report.flow.xoff} XOFF, ${report.flow.xon} XON over 2 s of audio`);
    expect(report.flow.xoff).toBeGreaterThan(0);
    expect(report.flow.xon).toBeGreaterThan(0);
    // Nothing sent after an XOFF (past Asterisk's grace for frames in flight), no partial frame.
    expect(report.breaches).toEqual([]);
    const tone = trimSilence(report.received, 8000);
    // All 2 s arrived, in order (a lost or reordered frame would break the tone's phase).
    expect(tone.length).toBeGreaterThanOrEqual(8000 * 2 - 160);
    expect(steadyToneSnrDb(tone, 440, 8000)!).toBeGreaterThanOrEqual(30);
  });

  it('paces whole frames at 20 ms, holds everything between XOFF and XON, marks and flush as Asterisk defines them, bad control skipped, Asterisk hangs up', async () => {
    bot = await TestBot.start({ echo: false });
    // In a process of its own: the pacing check sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { ...ENV, BOT_URL: bot.url } });
    bridge = rig;
    const a = new AsteriskSide(url(), basic(USER, PASSWORD));
    await a.opened;
    a.plainStart();
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: CHANNEL_ID });
    const rest = await bridge.restToken(['sessions:read']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['asterisk']);

    // 4 s of bot audio at once: 200 binary messages of exactly optimal_frame_size (160 B), paced.
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    conn.send({ event: 'mark', name: 'm 1' });
    await waitFor(() => a.binary.length >= 200, 7_000, '4 s of bot audio');
    expect(a.binary.every((f) => f.bytes.length === 160)).toBe(true);
    const burst = a.binary.slice(0, 200);
    expectPacedBurst('asterisk', burst, watch);
    await waitFor(() => a.commands('MARK_MEDIA').length === 1, 2_000, 'MARK_MEDIA at Asterisk');
    const [, id1] = a.commands('MARK_MEDIA')[0]!;
    expect(id1).toMatch(/^m\d+$/);
    expect(a.order().at(-1)!.what).toBe(`MARK_MEDIA ${id1}`);
    expect(conn.events.some((e) => e.event === 'mark')).toBe(false);
    a.ws.send(`MEDIA_MARK_PROCESSED correlation_id:${id1}`);
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm 1');

    // XOFF mid-run: nothing leaves until XON, then all of it, in order, the mark still behind it.
    conn.ws.send(tonePcm16(440, 16000, 32000));
    conn.send({ event: 'mark', name: 'm2' });
    await waitFor(() => a.binary.length >= 220, 2_000, 'the second run');
    a.ws.send('MEDIA_XOFF');
    // Frames already in flight land; then the audio stops (it would keep coming every 20 ms).
    await waitFor(
      () => performance.now() - a.binary.at(-1)!.at > 80,
      1_000,
      'the audio to stop after MEDIA_XOFF',
    );
    const atXoff = a.binary.length;
    await quietFor(500, 'no audio and no mark between MEDIA_XOFF and MEDIA_XON');
    expect(a.binary.length).toBe(atXoff);
    expect(a.commands('MARK_MEDIA').length).toBe(1);
    a.ws.send('MEDIA_XON');
    await waitFor(() => a.commands('MARK_MEDIA').length === 2, 4_000, 'the rest of the run and its mark');
    const second = a.binary.slice(200);
    expect(second.length).toBe(100);
    expect(a.order().at(-1)!.what).toMatch(/^MARK_MEDIA m\d+$/);
    expect(steadyToneSnrDb(ulawToPcm(second), 440, 8000)!).toBeGreaterThanOrEqual(30);
    a.ws.send(`MEDIA_MARK_PROCESSED ${a.commands('MARK_MEDIA')[1]![1]}`); // the positional form
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm2');

    // Barge-in: a mark Asterisk holds when the flush comes is dropped without a word. The clear reports
    // it to the bot at once; the bridge still follows FLUSH_MEDIA with a mark of its own, whose return
    // (naming the mark the flush took) is not passed on again.
    conn.ws.send(tonePcm16(440, 16000, 6400));
    conn.send({ event: 'mark', name: 'm3' });
    conn.ws.send(tonePcm16(440, 16000, 16000));
    await waitFor(() => a.commands('MARK_MEDIA').length === 3, 2_000, 'the third mark');
    conn.send({ event: 'clear' });
    await waitFor(() => a.commands('FLUSH_MEDIA').length === 1, 2_000, 'FLUSH_MEDIA');
    const afterFlush = a.got.slice(a.got.findIndex((g) => g.msg.text === 'FLUSH_MEDIA') + 1);
    const flushMark = String(afterFlush[0]!.msg.text).split(' ')[1]!;
    expect(flushMark).toMatch(/^flush-\d+$/);
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm3');
    a.ws.send(`MEDIA_MARK_PROCESSED correlation_id:${flushMark}`);
    const sentAfterClear = a.binary.length;

    // Bad control is skipped (Asterisk has no error notice) and the call goes on.
    a.ws.send('media_xoff');
    a.ws.send('{"event":');
    a.ws.send('DTMF_END digit:x');
    a.ws.send('MEDIA_MARK_PROCESSED');
    a.ws.send('DTMF_END digit:9');
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '9');
    expect(conn.events.filter((e) => e.event === 'dtmf').length).toBe(1);
    expect(conn.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual(['m 1', 'm2', 'm3']);
    const before = conn.audioBytesSoFar;
    a.ws.send(Buffer.alloc(160, 0xff));
    await waitFor(() => conn.audioBytesSoFar > before, 2_000, 'caller audio after the bad control');
    expect(a.binary.length).toBe(sentAfterClear);

    // Asterisk hangs up by closing the socket: the bot is told.
    a.ws.close(1000);
    await conn.waitEvent('session_end', 3_000);
  });

  it('speaks JSON control when MEDIA_START came as JSON, and a bot hang-up is HANGUP after its audio', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ ...ENV, BOT_URL: bot.url });
    const a = new AsteriskSide(url(), basic(USER, PASSWORD));
    await a.opened;
    a.ws.send(
      JSON.stringify({
        event: 'MEDIA_START',
        connection_id: '9f1c',
        channel: 'WebSocket/conn1-00000002',
        channel_id: CHANNEL_ID,
        format: 'slin16',
        optimal_frame_size: 640,
        ptime: 20,
        channel_variables: { from: '6002', direction: 'outbound' },
      }),
    );
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({
      session_id: CHANNEL_ID,
      customer_phone: '6002',
      direction: 'outbound',
    });
    conn.ws.send(tonePcm16(440, 16000, 3200));
    conn.send({ event: 'mark', name: 'bye' });
    conn.send({ event: 'session_end', reason: 'done' });
    await waitFor(() => a.got.some((g) => g.msg.command === 'HANGUP'), 3_000, 'HANGUP at Asterisk');
    // 200 ms at 16 kHz: 10 frames of 640 bytes, then the mark, then HANGUP, all as JSON.
    expect(a.binary.length).toBe(10);
    expect(a.binary.every((f) => f.bytes.length === 640)).toBe(true);
    const order = a.order().map((o) => o.what);
    expect(order.slice(-2)).toEqual(['MARK_MEDIA', 'HANGUP']);
    expect(a.got.map((g) => g.msg)).toEqual([
      { command: 'MARK_MEDIA', correlation_id: expect.stringMatching(/^m\d+$/) },
      { command: 'HANGUP' },
    ]);
    await waitFor(() => a.closeCode !== undefined, 3_000, 'the socket to close');
    expect(a.closeCode).toBe(1000);
  });

  it('refuses a channel whose first message is not a MEDIA_START it can carry', async () => {
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    for (const first of [
      Buffer.alloc(160),
      `media_start channel_id:${CHANNEL_ID} format:ulaw optimal_frame_size:160`,
      `MEDIA_START channel_id:${CHANNEL_ID} format:opus optimal_frame_size:160`,
      `MEDIA_START channel_id:${CHANNEL_ID} format:slin optimal_frame_size:161`,
      'MEDIA_START format:ulaw optimal_frame_size:160',
      '{"event":"MEDIA_START"',
    ]) {
      const a = new AsteriskSide(url(), undefined);
      await a.opened;
      a.ws.send(first);
      await waitFor(() => a.closeCode !== undefined, 3_000, 'the close');
      expect(a.closeCode).toBe(4400);
    }
  });
});

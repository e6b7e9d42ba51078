/**
 * The bridge behind jambonz `listen` with streaming playback (`/v1/media/jambonz[/tenant]`): calls placed
 * by the emulated jambonz (which plays streamed L16, acks marks after playout and reports them `cleared`
 * on killAudio), and a client written here from jambonz's documents for what the emulator has no knob
 * for (the upgrade's subprotocol, malformed frames, each frame's timing, a bidirectional rate of its own).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { expectPacedBurst, PlatformSocket } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { toneCallBothWays } from '../helpers/tone-call.js';
import { waitFor } from '../helpers/wait.js';

const USER = 'jambonz-listen';
const PASSWORD = 'jambonz-password-for-tests';
const ENV = { JAMBONZ_WS_USERNAME: USER, JAMBONZ_WS_PASSWORD: PASSWORD };
const PROTOCOL = 'audio.jambonz.org';
const CALL_SID = '0c6e1f3a-7d2b-4c7e-9a51-2f0e8b1d9c10';
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

/** jambonz's side of a listen, as its documents describe it. */
class JambonzSide extends PlatformSocket {
  constructor(url: string, authorization: string | undefined, protocols: string[] = [PROTOCOL]) {
    super(url, authorization === undefined ? {} : { authorization }, clients, protocols);
  }

  json(msg: unknown): void {
    this.ws.send(JSON.stringify(msg));
  }

  metadata(extra: Record<string, unknown> = {}): void {
    this.json({
      callSid: CALL_SID,
      direction: 'inbound',
      from: '+15005550006',
      to: '+15005550001',
      accountSid: 'acct-1',
      applicationSid: 'app-1',
      sampleRate: 16000,
      mixType: 'mono',
      ...extra,
    });
  }

  types(type: string) {
    return this.got.filter((g) => g.msg.type === type).map((g) => g.msg);
  }
}

function url(path = '/v1/media/jambonz'): string {
  return `${bridge!.http.replace('http', 'ws')}${path}`;
}

describe('jambonz listen in front', () => {
  it('refuses an upgrade without the wsAuth credentials or without its subprotocol, before the upgrade', async () => {
    bridge = await startBridge(ENV);
    for (const auth of [undefined, basic(USER, 'wrong'), basic('other', PASSWORD), `Bearer ${PASSWORD}`]) {
      const c = new JambonzSide(url(), auth);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    // Another tenant has no credentials configured yet.
    const acme = new JambonzSide(url('/v1/media/jambonz/acme'), basic(USER, PASSWORD));
    await expect(acme.opened).rejects.toThrow();
    expect(acme.status).toBe(401);
    // Offering subprotocols, but not jambonz's: refused with 400 naming it.
    const other = new JambonzSide(url(), basic(USER, PASSWORD), ['audio.drachtio.org']);
    await expect(other.opened).rejects.toThrow();
    expect(other.status).toBe(400);
    // The subprotocol is answered; a client offering none (a test tool) is taken without one.
    const ok = new JambonzSide(url(), basic(USER, PASSWORD));
    await ok.opened;
    expect(ok.ws.protocol).toBe(PROTOCOL);
    const none = new JambonzSide(url(), basic(USER, PASSWORD), []);
    await none.opened;
    expect(none.ws.protocol).toBe('');
  });

  it('without credentials configured, refuses every listen; MEDIA_AUTH=none opens them', async () => {
    bridge = await startBridge({});
    const c = new JambonzSide(url(), basic(USER, PASSWORD));
    await expect(c.opened).rejects.toThrow();
    expect(c.status).toBe(401);
    await bridge.close();
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    await new JambonzSide(url(), undefined).opened;
  });

  for (const rate of [8000, 16000]) {
    it(`carries an emulated jambonz call at ${rate} Hz: tone both ways, digits, a mark played, no rule broken`, async () => {
      bot = await TestBot.start({ echo: true });
      bridge = await startBridge({ ...ENV, BOT_URL: bot.url });
      const call = new SyntheticCall({
        url: url(),
        sessionId: CALL_SID,
        customerPhone: '+15005550006',
        direction: 'inbound',
        dialect: 'jambonz',
        rate,
        auth: { username: USER, password: PASSWORD },
        audio: generateTone(440, rate, rate * 2, 0.5),
        dtmf: [{ digit: '5', atMs: 300 }],
        keepReceived: true,
        tailMs: 600,
      });
      const { report } = await toneCallBothWays(bot, call, {
        label: `jambonz ${rate}`,
        rate,
        start: { session_id: CALL_SID, customer_phone: '+15005550006', direction: 'inbound' },
        digit: '5',
        mark: 'half',
      });
      expect(report.ackedMarks.map((m) => [m.name, m.how])).toEqual([['half', 'played']]);
    });
  }

  it('with the emulated jambonz, a barge-in is killAudio, the audio stops and the mark behind it reaches the bot once', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ ...ENV, BOT_URL: bot.url, PACE_LEAD_MS: '60' });
    const call = new SyntheticCall({
      url: url(),
      sessionId: CALL_SID,
      customerPhone: '+15005550006',
      direction: 'inbound',
      dialect: 'jambonz',
      rate: 16000,
      auth: { username: USER, password: PASSWORD },
      audio: new Int16Array(16000 * 2),
      keepReceived: true,
      tailMs: 300,
    });
    const done = call.run();
    const conn = await bot.waitConnection();
    // 1 s of audio and a mark behind it, cleared after 0.3 s: the mark still waits in the bridge and
    // goes to jambonz right after killAudio (jambonz then holds nothing before it and acks it at once).
    conn.ws.send(tonePcm16(440, 16000, 16000));
    conn.send({ event: 'mark', name: 'cut' });
    await waitFor(() => call.leg.record.framesReceived >= 15, 3_000, 'the bot audio at jambonz');
    conn.send({ event: 'clear' });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'cut');
    const report = await done;
    expect(report.clears).toBe(1);
    expect(report.breaches).toEqual([]);
    expect(report.ackedMarks.map((m) => m.name)).toEqual(['cut']);
    // Far less than the second of audio played: the clear cut it.
    expect(report.secondsReceived).toBeLessThan(0.8);
    expect(conn.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual(['cut']);
  });

  it('paces binary L16 at 20 ms a message, marks and killAudio as jambonz defines them, bad frames skipped, jambonz hangs up', async () => {
    bot = await TestBot.start({ echo: false });
    // In a process of its own: the pacing check sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { ...ENV, BOT_URL: bot.url } });
    bridge = rig;
    const j = new JambonzSide(url(), basic(USER, PASSWORD));
    await j.opened;
    j.metadata({ metadata: { campaign: 'x' } });
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({
      session_id: CALL_SID,
      customer_phone: '+15005550006',
      direction: 'inbound',
    });
    const rest = await bridge.restToken(['sessions:read']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['jambonz']);

    // 4 s of bot audio at once: 200 binary messages of 640 bytes (20 ms at 16 kHz), paced.
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => j.binary.length >= 200, 7_000, '4 s of bot audio');
    expect(j.binary.every((f) => f.bytes.length === 640)).toBe(true);
    const burst = j.binary.slice(0, 200);
    expectPacedBurst('jambonz', burst, watch);
    // The mark follows its audio; jambonz's playout ack reaches the bot as the mark.
    await waitFor(() => j.types('mark').length === 1, 2_000, 'the mark at jambonz');
    expect(j.types('mark')[0]).toEqual({ type: 'mark', data: { name: 'm1' } });
    const markAt = j.got.findIndex((g) => g.msg.type === 'mark');
    expect(j.got[markAt]!.at).toBeGreaterThanOrEqual(burst[199]!.at);
    expect(conn.events.some((e) => e.event === 'mark')).toBe(false);
    j.json({ type: 'mark', data: { name: 'm1', event: 'playout' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');

    // Barge-in: the bot's clear is killAudio; jambonz reports the mark it held as cleared.
    conn.ws.send(tonePcm16(440, 16000, 16000));
    conn.send({ event: 'mark', name: 'm2' });
    await waitFor(() => j.binary.length > 205, 2_000, 'more audio');
    conn.send({ event: 'clear' });
    await waitFor(() => j.types('killAudio').length === 1, 2_000, 'killAudio at jambonz');
    expect(j.types('killAudio')[0]).toEqual({ type: 'killAudio' });
    await waitFor(() => j.types('mark').length === 2, 2_000, 'the second mark, after the clear');
    j.json({ type: 'mark', data: { name: 'm2', event: 'cleared' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm2');
    const sentAfterClear = j.binary.length;

    // Malformed frames are skipped (jambonz has no error notice: nothing goes back); the call goes on.
    j.ws.send('{"type":');
    j.ws.send(Buffer.alloc(641));
    j.json({ event: 'dtmf', dtmf: 'x', duration: '100' });
    j.json({ type: 'mark', data: { name: 'm3', event: 'played' } });
    j.json({ event: 'unknown' });
    j.json({ event: 'dtmf', dtmf: '9', duration: '250' });
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '9');
    expect(conn.events.filter((e) => e.event === 'dtmf').length).toBe(1);
    expect(conn.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual(['m1', 'm2']);
    const before = conn.audioBytesSoFar;
    j.ws.send(Buffer.from(tonePcm16(440, 16000, 320)));
    await waitFor(() => conn.audioBytesSoFar > before, 2_000, 'caller audio after the bad frames');
    // After the clear, no more of the cut audio went out.
    expect(j.binary.length).toBe(sentAfterClear);

    // jambonz ends the listen by closing the socket: the bot is told.
    j.ws.close(1000);
    await conn.waitEvent('session_end', 3_000);
  });

  it('a bot hang-up sends disconnect once its audio played out, then closes with 1000', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ ...ENV, BOT_URL: bot.url });
    const j = new JambonzSide(url(), basic(USER, PASSWORD));
    await j.opened;
    // In at 8 kHz, played back at 16 kHz (bidirectionalAudio.sampleRate, repeated in the verb's metadata,
    // which jambonz merges into the first frame).
    j.metadata({ sampleRate: 8000, bidirectionalAudio: { streaming: true, sampleRate: 16000 } });
    await bot.waitConnection().then((conn) => {
      conn.ws.send(tonePcm16(440, 16000, 3200));
      conn.send({ event: 'session_end', reason: 'done' });
    });
    await waitFor(() => j.closeCode !== undefined, 3_000, 'the socket to close');
    expect(j.closeCode).toBe(1000);
    expect(j.types('disconnect')).toEqual([{ type: 'disconnect' }]);
    // 200 ms at 16 kHz: 10 messages of 640 bytes, all before the disconnect.
    expect(j.binary.length).toBe(10);
    expect(j.binary.every((f) => f.bytes.length === 640)).toBe(true);
  });

  it('refuses a listen whose first frame is not metadata it can carry', async () => {
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    for (const first of [
      Buffer.alloc(320),
      JSON.stringify({ callSid: CALL_SID, sampleRate: 24000 }),
      JSON.stringify({ callSid: CALL_SID, sampleRate: 8000, mixType: 'stereo' }),
      JSON.stringify({ sampleRate: 8000 }),
      'not json',
    ]) {
      const j = new JambonzSide(url(), undefined);
      await j.opened;
      j.ws.send(first);
      await waitFor(() => j.closeCode !== undefined, 3_000, 'the close');
      expect(j.closeCode).toBe(4400);
    }
  });
});

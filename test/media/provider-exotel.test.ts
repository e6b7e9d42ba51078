import { afterEach, describe, expect, it } from 'vitest';
import { generateTone } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { PlatformSocket } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere, stoppedMs } from '../helpers/schedstat.js';
import { toneCallBothWays } from '../helpers/tone-call.js';
import { waitFor } from '../helpers/wait.js';

const USER = 'exotel-key';
const PASSWORD = 'exotel-token-for-tests';
const ENV = { EXOTEL_STREAM_USER: USER, EXOTEL_STREAM_PASSWORD: PASSWORD };
const CALL_SID = 'b6f1c0de0000000000000000000019a1';
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

/** Exotel's side of a Voicebot stream, as its documents describe it. */
class ExotelSide extends PlatformSocket {
  readonly streamSid = 'stream-0001';
  #seq = 0;

  constructor(url: string, authorization: string | undefined) {
    super(url, authorization === undefined ? {} : { authorization }, clients);
  }

  send(event: string, body: Record<string, unknown> = {}): void {
    this.ws.send(
      JSON.stringify({ event, sequence_number: ++this.#seq, stream_sid: this.streamSid, ...body }),
    );
  }

  start(rate = '8000'): void {
    this.ws.send(JSON.stringify({ event: 'connected' }));
    this.send('start', {
      start: {
        stream_sid: this.streamSid,
        call_sid: CALL_SID,
        account_sid: 'exotel-account',
        from: '09876543210',
        to: '08012345678',
        custom_parameters: { direction: 'inbound' },
        media_format: { encoding: 'audio/x-raw', sample_rate: rate, bit_rate: '16' },
      },
    });
  }

  payloads(): Buffer[] {
    return this.of('media').map((g) => Buffer.from((g.msg.media as { payload: string }).payload, 'base64'));
  }
}

function url(path = '/v1/media/exotel'): string {
  return `${bridge!.http.replace('http', 'ws')}${path}`;
}

describe('Exotel Voicebot in front', () => {
  it('refuses an upgrade without the configured HTTP Basic credentials, before the upgrade', async () => {
    bridge = await startBridge(ENV);
    for (const auth of [
      undefined,
      basic(USER, 'wrong'),
      basic('other', PASSWORD),
      `Bearer ${PASSWORD}`,
      'Basic !!',
    ]) {
      const c = new ExotelSide(url(), auth);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    const acme = new ExotelSide(url('/v1/media/exotel/acme'), basic(USER, PASSWORD));
    await expect(acme.opened).rejects.toThrow();
    expect(acme.status).toBe(401);
    await new ExotelSide(url(), basic(USER, PASSWORD)).opened;
  });

  it('without credentials configured, refuses every stream; MEDIA_AUTH=none opens them', async () => {
    bridge = await startBridge({});
    const c = new ExotelSide(url(), basic(USER, PASSWORD));
    await expect(c.opened).rejects.toThrow();
    expect(c.status).toBe(401);
    await bridge.close();
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    await new ExotelSide(url(), undefined).opened;
  });

  for (const rate of [8000, 16000]) {
    it(`carries an emulated Exotel call at ${rate} Hz: tone both ways, digits, a mark played, no rule broken`, async () => {
      bot = await TestBot.start({ echo: true });
      bridge = await startBridge({ ...ENV, BOT_URL: bot.url });
      const call = new SyntheticCall({
        url: url(),
        sessionId: CALL_SID,
        customerPhone: '09876543210',
        direction: 'inbound',
        dialect: 'exotel',
        rate,
        auth: { username: USER, password: PASSWORD },
        customParameters: { direction: 'inbound' },
        audio: generateTone(440, rate, rate * 2, 0.5),
        dtmf: [{ digit: '4', atMs: 300 }],
        keepReceived: true,
        tailMs: 800,
      });
      const { report } = await toneCallBothWays(bot, call, {
        label: `exotel ${rate}`,
        rate,
        start: { session_id: CALL_SID, customer_phone: '09876543210', direction: 'inbound' },
        digit: '4',
        mark: 'half',
      });
      expect(report.ackedMarks.map((m) => [m.name, m.how])).toEqual([['half', 'played']]);
    });
  }

  it('paces 3,200-byte chunks at real time, marks, clear with marks back, bad frames skipped, stop', async () => {
    bot = await TestBot.start({ echo: false });
    // In a process of its own: the pacing check sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { ...ENV, BOT_URL: bot.url } });
    bridge = rig;
    const ex = new ExotelSide(url(), basic(USER, PASSWORD));
    await ex.opened;
    ex.start('8000');
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: CALL_SID, customer_phone: '09876543210' });

    const rest = await bridge.restToken(['sessions:read']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['exotel']);

    // 4 s of bot audio at once: 20 chunks of 3,200 bytes (200 ms at 8 kHz each), 200 ms apart.
    const audio = tonePcm16(440, 16000, 64000);
    const watch = watchBridge(rig.process);
    const sentAt = performance.now();
    conn.ws.send(audio);
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => ex.of('media').length >= 20, 6_000, '4 s of bot audio');
    expect(ex.payloads().every((p) => p.length === 3200)).toBe(true);
    const media = ex.of('media');
    expectBridgeElsewhere(media);
    expect(media.every((g) => g.msg.stream_sid === ex.streamSid)).toBe(true);
    expect(media.map((g) => (g.msg.media as { chunk: number }).chunk)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    // Never early: chunk i (from 0) may leave no sooner than i periods less the lead after the bot's
    // audio reached the bridge, which was after `sentAt`. (Measured from `sentAt`, not from the first
    // chunk's arrival: a receiver busy when the first arrived would stamp it late.)
    for (let i = 1; i < media.length; i++)
      expect(media[i]!.at - sentAt, `chunk ${i + 1} not early`).toBeGreaterThanOrEqual(i * 200 - 40 - 1);
    // Not late: each chunk against its slot on the run's schedule (the first leaves at once, then every
    // 200 ms from the lead on). The run's start is the earliest one the arrivals imply: when the bridge
    // got the bot's audio (after a DSP worker's hop, say) is not pacing. A chunk's stamp is excused what
    // this (receiving) process lost to its own stalls since the chunk before (schedstat.ts), never more
    // than its lateness; the bridge runs in another process, so none of its own pauses are excused.
    const implied = media.map((g, i) => g.at - (i === 0 ? 0 : i * 200 - 40));
    const start = Math.min(...implied);
    const late = implied.map((t, i) =>
      Math.max(0, t - start - (i === 0 ? 0 : stoppedMs(media[i - 1]!, media[i]!))),
    );
    const span = media[19]!.at - media[0]!.at + 200;
    // The statistic the 20 ms dialects read: the p99 (nearest rank), which over 20 chunks is the largest.
    const sorted = [...late].sort((a, b) => a - b);
    const p99 = sorted[Math.ceil(sorted.length * 0.99) - 1]!;
    const gaps = media.slice(1).map((g, i) => g.at - media[i]!.at);
    console.log(
      `exotel: 4 s burst paced over ${span.toFixed(0)} ms, lateness against the schedule p50 ${sorted[9]!.toFixed(1)} p99 (the largest) ${p99.toFixed(1)} ms; inter-arrival min ${Math.min(...gaps).toFixed(1)} max ${Math.max(...gaps).toFixed(1)} ms; ${watch.describe(media[0]!.at, media[19]!.at)}`,
    );
    expect(span).toBeGreaterThan(3900);
    expect(p99).toBeLessThanOrEqual(25);
    await waitFor(() => ex.of('mark').length === 1, 2_000, 'the mark at Exotel');
    expect(ex.of('mark')[0]!.msg).toMatchObject({
      event: 'mark',
      stream_sid: ex.streamSid,
      mark: { name: 'm1' },
    });
    expect(conn.events.some((e) => e.event === 'mark')).toBe(false);
    ex.send('mark', { mark: { name: 'm1' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');

    // The bot's clear becomes Exotel's clear.
    conn.ws.send(tonePcm16(440, 16000, 16000));
    conn.send({ event: 'mark', name: 'm2' });
    await waitFor(() => ex.of('media').length > 20, 2_000, 'more audio');
    conn.send({ event: 'clear' });
    await waitFor(() => ex.of('clear').length === 1, 2_000, 'the clear at Exotel');
    expect(ex.of('clear')[0]!.msg).toMatchObject({ event: 'clear', stream_sid: ex.streamSid });
    // The mark the clear overtook goes right after it, for Exotel to send back.
    await waitFor(() => ex.of('mark').length === 2, 2_000, 'the second mark at Exotel');
    ex.send('mark', { mark: { name: 'm2' } });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm2');

    // Malformed frames are skipped (Exotel has no error event) and the call goes on.
    ex.ws.send('{"event":');
    ex.ws.send(Buffer.from([1, 2, 3]));
    ex.send('media', { media: { payload: Buffer.alloc(321).toString('base64') } });
    ex.send('dtmf', { dtmf: { digit: 'z' } });
    ex.send('nope');
    ex.send('dtmf', { dtmf: { digit: '3', duration: '250' } });
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '3');
    expect(conn.events.filter((e) => e.event === 'dtmf').length).toBe(1);
    const before = conn.audioBytesSoFar;
    ex.send('media', {
      media: { chunk: 1, timestamp: '0', payload: tonePcm16(440, 8000, 800).toString('base64') },
    });
    await waitFor(() => conn.audioBytesSoFar > before, 2_000, 'caller audio after the bad frames');
    expect(ex.of('error')).toEqual([]);

    ex.send('stop', { stop: { call_sid: CALL_SID, reason: 'callended' } });
    await conn.waitEvent('session_end', 3_000);
    await waitFor(() => ex.closeCode !== undefined, 3_000, 'the stream to close');
    expect(ex.closeCode).toBe(1000);
  });

  it('a bot hang-up plays out its audio in whole chunks, then closes the stream with 1000', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ ...ENV, BOT_URL: bot.url });
    const ex = new ExotelSide(url(), basic(USER, PASSWORD));
    await ex.opened;
    ex.start('16000');
    const conn = await bot.waitConnection();
    // 250 ms at 16 kHz: 8,000 bytes, so two chunks and a padded third.
    conn.ws.send(tonePcm16(440, 16000, 4000));
    conn.send({ event: 'session_end', reason: 'done' });
    await waitFor(() => ex.closeCode !== undefined, 3_000, 'the stream to close');
    expect(ex.closeCode).toBe(1000);
    expect(ex.payloads().map((p) => p.length)).toEqual([3200, 3200, 3200]);
  });

  it('refuses a start it cannot take (24 kHz, another encoding, no call_sid) with 4400', async () => {
    bridge = await startBridge({ MEDIA_AUTH: 'none' });
    const starts = [
      { stream_sid: 's', call_sid: 'c', media_format: { encoding: 'audio/x-raw', sample_rate: '24000' } },
      { stream_sid: 's', call_sid: 'c', media_format: { encoding: 'audio/x-mulaw', sample_rate: '8000' } },
      { stream_sid: 's', media_format: { encoding: 'audio/x-raw', sample_rate: '8000' } },
    ];
    for (const start of starts) {
      const ex = new ExotelSide(url(), undefined);
      await ex.opened;
      ex.send('start', { start });
      await waitFor(() => ex.closeCode !== undefined, 3_000, 'the close');
      expect(ex.closeCode).toBe(4400);
    }
  });
});

/**
 * The bridge behind Plivo bidirectional audio streams (`/v1/media/plivo[/tenant]`): a call placed by the
 * emulated Plivo (L16 16 kHz, its playback rules enforced), and a client written here from Plivo's
 * documents for the rest (µ-law, pacing as received, checkpoints, clearAudio, a bad frame, hang-ups).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { pace } from '../../src/emulator/paced-caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { expectPacedBurst, PlatformSocket } from '../helpers/platform-socket.js';
import { type Rig, startRig } from '../helpers/rig.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const TOKEN = 'plivo-stream-token-for-tests';
const CALL = 'e2b5b0a4-5a0b-4a4e-9c6e-3f1f0d6f0042';
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

/** Plivo's side of a bidirectional stream, µ-law 8 kHz. */
class PlivoSide extends PlatformSocket {
  #seq = 0;
  readonly streamId = '20170ada-f610-433b-8758-c02a2aab3662';

  constructor(url: string, bearer?: string) {
    super(url, bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }, clients);
  }

  send(event: string, body: Record<string, unknown> = {}): void {
    this.ws.send(JSON.stringify({ event, sequenceNumber: ++this.#seq, streamId: this.streamId, ...body }));
  }

  start(): void {
    this.ws.send(
      JSON.stringify({
        event: 'start',
        sequenceNumber: ++this.#seq,
        start: {
          callId: CALL,
          streamId: this.streamId,
          accountId: 'MA00000000000000000001',
          tracks: ['inbound'],
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 },
        },
        extra_headers: 'from=15550123,direction=outbound',
      }),
    );
  }

  media(ulaw: Uint8Array, chunk: number): void {
    this.send('media', {
      media: {
        track: 'inbound',
        timestamp: String(Date.now()),
        chunk,
        payload: Buffer.from(ulaw).toString('base64'),
      },
    });
  }

  audio(): Buffer {
    return Buffer.concat(
      this.of('playAudio').map((g) => Buffer.from((g.msg.media as { payload: string }).payload, 'base64')),
    );
  }
}

function ulawTone(hz: number, ms: number): Buffer {
  const pcm = tonePcm16(hz, 8000, ms * 8, 9000);
  const out = Buffer.alloc(ms * 8);
  encodeInto('pcmu', new Int16Array(pcm.buffer, pcm.byteOffset, ms * 8), out);
  return out;
}

function wsBase(): string {
  return bridge!.http.replace('http', 'ws');
}

describe('Plivo audio streams in front', () => {
  it('refuses an upgrade without the configured token, before the upgrade', async () => {
    bridge = await startBridge({ PLIVO_STREAM_TOKEN: TOKEN });
    const base = `${wsBase()}/v1/media/plivo`;
    for (const [url, bearer] of [
      [base, undefined],
      [`${base}?token=another`, undefined],
      [base, 'another'],
      [`${base}?token=`, undefined],
    ] as const) {
      const c = new PlivoSide(url, bearer);
      await expect(c.opened).rejects.toThrow();
      expect(c.status).toBe(401);
    }
    // Another tenant has no token configured: refused, even with tenant default's.
    const acme = new PlivoSide(`${base}/acme?token=${TOKEN}`);
    await expect(acme.opened).rejects.toThrow();
    expect(acme.status).toBe(401);
    for (const [url, bearer] of [[`${base}?token=${TOKEN}`], [base, TOKEN]] as const) {
      const ok = new PlivoSide(url, bearer);
      await ok.opened;
      ok.ws.terminate();
    }
  });

  it('carries a call the emulated Plivo places in L16 16 kHz: tone both ways, DTMF, no rule broken, hang-up', async () => {
    bot = await TestBot.start({ echo: true });
    bridge = await startBridge({ PLIVO_STREAM_TOKEN: TOKEN, BOT_URL: bot.url });
    const call = new SyntheticCall({
      url: `${wsBase()}/v1/media/plivo?token=${TOKEN}`,
      sessionId: CALL,
      customerPhone: '15550100',
      direction: 'inbound',
      dialect: 'plivo',
      rate: 16000,
      codec: 'slin',
      customParameters: { from: '15550100', direction: 'inbound' },
      audio: generateTone(440, 16000, 16000 * 1.6, 0.5),
      dtmf: [{ digit: '7', atMs: 300 }],
      keepReceived: true,
      tailMs: 600,
    });
    const running = call.run();
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: CALL, customer_phone: '15550100' });
    const report = await running;

    expect(report.breaches).toEqual([]);
    expect(report.errors).toEqual([]);
    expect(report.state).toBe('ended');
    const heard = conn.audioBytes();
    const atBot = trimSilence(new Int16Array(heard.buffer, heard.byteOffset, heard.byteLength >> 1), 16000);
    const botSnr = steadyToneSnrDb(atBot, 440, 16000)!;
    const callerSnr = steadyToneSnrDb(trimSilence(report.received, 16000), 440, 16000)!;
    console.log(`plivo: SNR at the bot ${botSnr.toFixed(1)} dB, at the caller ${callerSnr.toFixed(1)} dB`);
    expect(botSnr).toBeGreaterThanOrEqual(30);
    expect(callerSnr).toBeGreaterThanOrEqual(30);
    expect(report.received.length).toBeGreaterThanOrEqual(16000 * 1.4);
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '7');
    // Plivo's hang-up is the socket's close: the bot is told.
    await conn.waitEvent('session_end', 3_000);
  });

  it('µ-law: paced playAudio, checkpoints played and cleared, clearAudio, digits both ways, a bad frame, the bot hanging up', async () => {
    bot = await TestBot.start({ echo: true });
    // In a process of its own: the pacing check sees the bridge's pauses, not this process's.
    const rig = await startRig({ process: true, env: { PLIVO_STREAM_TOKEN: TOKEN, BOT_URL: bot.url } });
    bridge = rig;
    const pl = new PlivoSide(`${wsBase()}/v1/media/plivo`, TOKEN);
    await pl.opened;
    pl.start();
    const conn = await bot.waitConnection();
    expect(conn.sessionStart).toMatchObject({ session_id: CALL, customer_phone: '15550123' });
    const rest = await bridge.restToken(['sessions:read']);
    const list = (await (
      await fetch(`${bridge.http}/v1/sessions`, { headers: { authorization: `Bearer ${rest}` } })
    ).json()) as { dialect: string }[];
    expect(list.map((s) => s.dialect)).toEqual(['plivo']);

    const tone = ulawTone(1000, 1000);
    await pace({
      chunkMs: 20,
      chunks: 50,
      send: (i) => pl.media(tone.subarray(i * 160, (i + 1) * 160), i + 1),
    });
    // A frame that is not JSON is skipped (Plivo has no error event: nothing goes back).
    pl.ws.send('{"event":');
    await waitFor(() => pl.audio().length >= 8000, 5_000, 'the echo back');
    const back = pl.audio();
    const pcm = new Int16Array(back.length);
    decodeInto('pcmu', back, pcm);
    const snr = steadyToneSnrDb(trimSilence(pcm, 8000), 1000, 8000)!;
    console.log(`plivo: µ-law echo SNR ${snr.toFixed(1)} dB`);
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(pl.of('playAudio')[0]!.msg).toMatchObject({
      event: 'playAudio',
      media: { contentType: 'audio/x-mulaw', sampleRate: 8000 },
    });

    // Pacing: 4 s of bot audio sent at once leaves in 200 playAudio messages, 20 ms apart.
    await waitFor(() => performance.now() - pl.of('playAudio').at(-1)!.at > 1_100, 3_000, 'the echo to end');
    const before = pl.of('playAudio').length;
    const watch = watchBridge(rig.process);
    conn.ws.send(tonePcm16(440, 16000, 64000));
    await waitFor(() => pl.of('playAudio').length >= before + 200, 7_000, '4 s of bot audio');
    const burst = pl.of('playAudio').slice(before, before + 200);
    expectPacedBurst('plivo', burst, watch);

    // Digits: the caller's reaches the bot; the bot's goes to Plivo as sendDTMF.
    pl.send('dtmf', { dtmf: { track: 'inbound', digit: '9', timestamp: String(Date.now()) } });
    await conn.waitEvent('dtmf', 2_000, (e) => e.digit === '9');
    conn.send({ event: 'dtmf', digit: '4' });
    await waitFor(() => pl.of('sendDTMF').length === 1, 2_000, 'sendDTMF');
    expect(pl.of('sendDTMF')[0]!.msg).toEqual({ event: 'sendDTMF', dtmf: '4' });

    // A checkpoint played: Plivo's playedStream reaches the bot as its mark.
    conn.send({ event: 'mark', name: 'm1' });
    await waitFor(() => pl.of('checkpoint').length === 1, 2_000, 'the checkpoint at Plivo');
    expect(pl.of('checkpoint')[0]!.msg).toEqual({ event: 'checkpoint', streamId: pl.streamId, name: 'm1' });
    pl.send('playedStream', { name: 'm1' });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm1');

    // A checkpoint Plivo holds when the bot barges in: Plivo drops it without a word (and answers the
    // clearAudio with clearedAudio). Plivo reports checkpoints on this call, so the bridge waits for its
    // word on m2 until the clear, which reports m2 (cleared) at once; Plivo's answer changes nothing.
    conn.ws.send(tonePcm16(440, 16000, 3200)); // 100 ms
    conn.send({ event: 'mark', name: 'm2' });
    conn.ws.send(tonePcm16(440, 16000, 16000));
    await waitFor(() => pl.of('checkpoint').length === 2, 2_000, 'the second checkpoint');
    await quietFor(300, 'm2 played by now, but Plivo has not said so');
    expect(conn.events.some((e) => e.event === 'mark' && e.name === 'm2')).toBe(false);
    conn.send({ event: 'clear' });
    await waitFor(() => pl.of('clearAudio').length === 1, 2_000, 'clearAudio');
    expect(pl.of('clearAudio')[0]!.msg).toEqual({ event: 'clearAudio', streamId: pl.streamId });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm2');
    pl.send('clearedAudio');
    // A late playedStream for it (a clone that reports anyway) is not passed on twice.
    pl.send('playedStream', { name: 'm2' });
    conn.send({ event: 'mark', name: 'm3' });
    await waitFor(() => pl.of('checkpoint').length === 3, 2_000, 'the third checkpoint');
    pl.send('playedStream', { name: 'm3' });
    await conn.waitEvent('mark', 2_000, (e) => e.name === 'm3');
    expect(conn.events.filter((e) => e.event === 'mark').map((e) => e.name)).toEqual(['m1', 'm2', 'm3']);

    // The bot hangs up: the bridge closes the stream.
    conn.send({ event: 'session_end', reason: 'goodbye' });
    await waitFor(() => pl.closeCode !== undefined, 3_000, 'the stream to close');
    expect(pl.closeCode).toBe(1000);
  });
});

/**
 * Audio through the bridge, checked by measurement: tone SNR after the round trip, exact chunk sizes,
 * real-time pacing of a burst, marks behind their audio, clear.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import alawmulaw from 'alawmulaw';
import { afterEach, describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { fitTone } from '../../src/audio/tone.js';
import { quantile } from '../../src/emulator/stats.js';
import { pcm16Samples, tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { watchBridge } from '../helpers/bridge-process.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, type Rig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let bridge: TestBridge | undefined;
/** The bridge of a pacing check, in a process of its own: its pauses are then in what arrives here. */
let elsewhere: ProcessRig | undefined;
let bot: TestBot | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  await elsewhere?.close();
  await bot?.close();
  bridge = undefined;
  elsewhere = undefined;
  bot = undefined;
});

async function connect(sampleRunDelay = false, rig: Rig = bridge!): Promise<TestProvider> {
  const p = new TestProvider(rig.mediaUrl, { token: await rig.mediaToken(), sampleRunDelay });
  providers.push(p);
  await p.opened;
  return p;
}

describe('audio path', () => {
  it('round-trips a tone slin 8k -> ws bot at 16k -> 8k with SNR >= 40 dB, in exact 320-byte chunks', async () => {
    bot = await TestBot.start({ echo: true });
    bridge = await startBridge({ BOT_URL: bot.url, BOT_SAMPLE_RATE: '16000', DSP_WORKERS: '1' });
    const p = await connect();
    await p.start('snr-1');
    const conn = await bot.waitConnection();
    const tone = tonePcm16(1000, 8000, 8000); // 1 s
    await p.sendPaced(tone, 320, 20);
    await waitFor(() => p.audioBytes().length >= tone.length - 640, 3_000, 'echoed audio');
    for (const a of p.audio) expect(a.data.length).toBe(320);
    // The bot heard the caller at 16 kHz.
    const heard = pcm16Samples(conn.audioBytes());
    expect(heard.length).toBeGreaterThan(15_000);
    expect(fitTone(heard.subarray(1600, heard.length - 1600), 1000, 16000).snrDb).toBeGreaterThan(40);
    const back = pcm16Samples(p.audioBytes());
    // Skip the filters' start-up transient; measure 0.8 s of steady state.
    const fit = fitTone(back.subarray(400, 400 + 6400), 1000, 8000);
    expect(fit.snrDb).toBeGreaterThanOrEqual(40);
    expect(fit.amplitude * 32767).toBeGreaterThan(9_000);
    console.log(`round-trip SNR ${fit.snrDb.toFixed(1)} dB, amplitude ${(fit.amplitude * 32767).toFixed(0)}`);
  });

  it('plays a 3 s burst from the bot at real time: 3 s +/- 5 %, chunk inter-arrival p99 <= 25 ms', async () => {
    bot = await TestBot.start({ echo: false });
    elsewhere = await startRig({ process: true, env: { BOT_URL: bot.url } });
    const p = await connect(true, elsewhere);
    await p.start('pace-1');
    const conn = await bot.waitConnection();
    const watch = watchBridge(elsewhere.process);
    // 3 s at the bot's 16 kHz, in one frame: the bridge must buffer it and play it at real time.
    conn.ws.send(tonePcm16(440, 16000, 48000));
    await waitFor(() => p.audio.length >= 150, 6_000, '150 chunks');
    expect(p.audio).toHaveLength(150);
    expectBridgeElsewhere(p.audio);
    for (const a of p.audio) expect(a.data.length).toBe(320);
    // Playout spans the first chunk's arrival to the last chunk's end (arrival + 20 ms).
    const span = p.audio[149]!.at - p.audio[0]!.at + 20;
    // `own`: the gaps less the time this (receiving) process was stopped (off the CPU while runnable: other
    // tenants of a shared machine; or collecting garbage; see test/helpers/schedstat.ts). Equal to the raw
    // gaps on a quiet machine with no collection in the way. The bridge's own pauses are never subtracted.
    const { raw: gaps, own, worst: worstGap } = interArrival(p.audio);
    const p99 = quantile(gaps, 0.99);
    const p99Own = quantile(own, 0.99);
    // Drift-free: chunk i leaves near t0 + 20 i - lead (printed; the span and the pacer's unit tests check it).
    const t0 = p.audio[0]!.at;
    const worst = Math.max(...p.audio.map((a, i) => Math.abs(a.at - (t0 + Math.max(0, i * 20 - 40)))));
    const starved = (p.audio[149]!.runDelay ?? 0) - (p.audio[0]!.runDelay ?? 0);
    // Printed before the checks, so a failing run shows its figures.
    console.log(
      `pacing: span ${span.toFixed(0)} ms for 3000 ms, inter-arrival p50 ${quantile(gaps, 0.5).toFixed(1)} p99 ${p99.toFixed(1)} max ${Math.max(...gaps).toFixed(1)} ms, worst offset ${worst.toFixed(1)} ms; off-CPU while runnable ${starved.toFixed(0)} ms, p99 less that ${p99Own.toFixed(1)} max ${Math.max(...own).toFixed(1)} ms; ${worstGap}; ${watch.describe(p.audio[0]!.at, p.audio[149]!.at)}`,
    );
    expect(span).toBeGreaterThan(3000 * 0.95);
    expect(span).toBeLessThan(3000 * 1.05);
    expect(p99Own).toBeLessThanOrEqual(25);
    // Caller audio is still one continuous tone after the burst went through re-chunking and pacing.
    const back = pcm16Samples(p.audioBytes());
    expect(fitTone(back.subarray(400, 23_600), 440, 8000).snrDb).toBeGreaterThan(40);
  });

  it('paces many sessions from the one shared timer, each at real time', async () => {
    bot = await TestBot.start({ echo: false });
    elsewhere = await startRig({ process: true, env: { BOT_URL: bot.url } });
    const calls: TestProvider[] = [];
    for (let i = 0; i < 10; i++) {
      const p = await connect(true, elsewhere);
      await p.start(`many-${i}`);
      calls.push(p);
    }
    const watch = watchBridge(elsewhere.process);
    for (let i = 0; i < 10; i++) (await bot.waitConnection(i)).ws.send(tonePcm16(440, 16000, 32000)); // 2 s each
    await waitFor(() => calls.every((p) => p.audio.length >= 100), 5_000, '100 chunks on every call');
    const gaps: number[] = [];
    const own: number[] = [];
    for (const p of calls) {
      expect(p.audio).toHaveLength(100);
      expectBridgeElsewhere(p.audio);
      const span = p.audio[99]!.at - p.audio[0]!.at + 20;
      expect(span).toBeGreaterThan(2000 * 0.95);
      expect(span).toBeLessThan(2000 * 1.05);
      const g = interArrival(p.audio);
      gaps.push(...g.raw);
      own.push(...g.own);
    }
    console.log(
      `pacing, 10 calls: inter-arrival p50 ${quantile(gaps, 0.5).toFixed(1)} p99 ${quantile(gaps, 0.99).toFixed(1)} ms, less time this process was stopped p95 ${quantile(own, 0.95).toFixed(1)} p99 ${quantile(own, 0.99).toFixed(1)} max ${Math.max(...own).toFixed(1)} ms; ${watch.describe(Math.min(...calls.map((p) => p.audio[0]!.at)), Math.max(...calls.map((p) => p.audio[99]!.at)))}`,
    );
    // Ten calls' chunks leave in the same wake-ups and are all received by this one test process, which
    // adds its own jitter: p95 here; the single-call test above holds the p99 bound.
    expect(quantile(own, 0.95)).toBeLessThanOrEqual(25);
  });

  it.each(['0', '1'])(
    'sends a mark only after the audio before it, padded to a chunk (DSP_WORKERS=%s)',
    async (workers) => {
      bot = await TestBot.start({ echo: false });
      bridge = await startBridge({ BOT_URL: bot.url, DSP_WORKERS: workers });
      const p = await connect();
      await p.start('mark-1');
      const conn = await bot.waitConnection();
      // 0.5 s plus 5 ms at 16 kHz: 25 chunks and a quarter at 8 kHz.
      conn.ws.send(tonePcm16(440, 16000, 8080));
      conn.send({ event: 'mark', name: 'utterance-1' });
      const mark = await p.waitEvent('mark', 3_000);
      expect(mark.name).toBe('utterance-1');
      const before = p.order.slice(
        0,
        p.order.findIndex((o) => o.kind === 'event' && o.event === 'mark'),
      );
      expect(before.filter((o) => o.kind === 'audio')).toHaveLength(26);
      // It came at the end of the audio's playout, not when the bot sent it.
      expect(mark.at - p.audio[0]!.at).toBeGreaterThan(500 - 40 - 25);
      // The provider reports playback reached the mark: the bot hears of it.
      p.send({ event: 'mark', name: 'utterance-1' });
      await conn.waitEvent('mark', 2_000, (e) => e.name === 'utterance-1');
    },
  );

  it('clear drops queued audio at once and tells the provider; audio stops within one chunk', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url });
    const p = await connect();
    await p.start('clear-1');
    const conn = await bot.waitConnection();
    conn.ws.send(tonePcm16(440, 16000, 48000)); // 3 s
    await waitFor(() => p.audio.length >= 20, 3_000, 'audio to flow');
    conn.send({ event: 'clear' });
    const clear = await p.waitEvent('clear', 1_000);
    const n = p.audio.length;
    // Nothing after the clear event, and at most one chunk between the bot's clear and the provider's.
    await quietFor(300, 'audio after the clear');
    expect(p.audio.length).toBe(n);
    expect(p.audio.filter((a) => a.at > clear.at)).toHaveLength(0);
    expect(n).toBeLessThan(40);
    // The call goes on: new audio after the clear plays.
    conn.ws.send(tonePcm16(440, 16000, 3200));
    await waitFor(() => p.audio.length >= n + 10, 2_000, 'audio after clear');
  });

  it('clear also cuts bot audio still in the DSP workers', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, DSP_WORKERS: '1' });
    const p = await connect();
    await p.start('clear-2');
    const conn = await bot.waitConnection();
    await waitFor(() => bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
    // 3 s and a clear right behind it: the audio is usually still in the worker when the clear arrives
    // (not always: three rounds make a leak through the DSP show reliably).
    for (let round = 0; round < 3; round++) {
      conn.ws.send(tonePcm16(440, 16000, 48000));
      conn.send({ event: 'clear' });
      const clears = () => p.events.filter((e) => e.event === 'clear');
      await waitFor(() => clears().length > round, 1_000, `clear ${round}`);
      const clear = clears()[round]!;
      await quietFor(200, 'audio after the clear');
      expect(p.audio.filter((a) => a.at > clear.at)).toHaveLength(0);
    }
    // Audio sent after the clear plays.
    conn.ws.send(tonePcm16(440, 16000, 3200));
    await waitFor(() => p.audio.length >= 10, 2_000, 'audio after clear');
  });

  it('bounds buffered bot audio by OUTBOUND_BUFFER_MS: the oldest is shed and counted', async () => {
    bot = await TestBot.start({ echo: false });
    bridge = await startBridge({ BOT_URL: bot.url, OUTBOUND_BUFFER_MS: '1000' });
    const p = await connect();
    await p.start('shed-1');
    const conn = await bot.waitConnection();
    conn.ws.send(tonePcm16(440, 16000, 48000)); // 3 s into a 1 s buffer
    await waitFor(() => p.audio.length >= 50, 3_000, 'the buffered second');
    await quietFor(200, 'audio past the buffered second');
    expect(p.audio.length).toBeLessThanOrEqual(52);
    const shed = (await bridge.bridge.ctx.metrics.shedChunks.get()).values.find(
      (v) => v.labels.reason === 'buffer_full',
    );
    expect(shed?.value).toBeGreaterThanOrEqual(95);
  });

  it('binary caller audio at 16 kHz round-trips through builtin:echo after ECHO_DELAY_MS', async () => {
    bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '200' });
    const p = await connect();
    await p.start('echo-16k', { media: { codec: 'L16', sample_rate: 16000 } });
    const tone = tonePcm16(1000, 16000, 16000);
    const sent = performance.now();
    await p.sendPaced(tone, 640, 20);
    await waitFor(() => p.audioBytes().length >= tone.length - 1280, 3_000, 'echo');
    for (const a of p.audio) expect(a.data.length).toBe(640);
    const delay = p.audio[0]!.at - sent;
    expect(delay).toBeGreaterThan(200 - 40 - 5);
    expect(delay).toBeLessThan(200 + 100);
    expect(fitTone(pcm16Samples(p.audioBytes()).subarray(800, 14_400), 1000, 16000).snrDb).toBeGreaterThan(
      40,
    );
  });

  it('base64 µ-law in and out (media events), re-chunked to the requested chunk_bytes', async () => {
    bridge = await startBridge({ BOT_URL: 'builtin:echo', ECHO_DELAY_MS: '0' });
    const p = await connect();
    await p.start('ulaw-1', { media: { codec: 'PCMU', encoding: 'base64', chunk_bytes: 240 } });
    const pcm = tonePcm16(700, 8000, 8000);
    const ulaw = Buffer.from(alawmulaw.mulaw.encode(new Int16Array(pcm.buffer, pcm.byteOffset, 8000)));
    // Inbound chunks may be any whole number of samples: 100-byte pieces.
    await p.sendPaced(ulaw, 100, 12.5, 'base64');
    await waitFor(() => p.audioBytes().length >= 8000 - 480, 3_000, 'echo');
    expect(p.events.filter((e) => e.event === 'media').length).toBe(p.audio.length);
    for (const a of p.audio) expect(a.data.length).toBe(240);
    const decoded = alawmulaw.mulaw.decode(p.audioBytes());
    const fit = fitTone(decoded.subarray(400, 7200), 700, 8000);
    expect(fit.snrDb).toBeGreaterThan(30); // G.711 itself caps SNR near 38 dB
  });

  it("applies the tenant's stored media config when session_start has no media object", async () => {
    bridge = await startBridge({ BOT_URL: 'builtin:tone:1000', BOT_SAMPLE_RATE: '16000' });
    await bridge.bridge.ctx.tenants.putMediaStream(
      {
        tenant: 'default',
        media_ws_url: 'wss://bridge.example/v1/media',
        codec: 'pcma',
        input_sample_rate: 16000,
        output_sample_rate: 8000,
        channels: 1,
        encoding: 'base64',
        chunk_bytes: 400,
      },
      undefined,
    );
    const p = await connect();
    await p.start('stored-1');
    await waitFor(() => p.audio.length >= 15, 2_000, 'tone');
    expect(p.events.some((e) => e.event === 'media')).toBe(true); // base64 encoding
    for (const a of p.audio) expect(a.data.length).toBe(400); // chunk_bytes
    const decoded = alawmulaw.alaw.decode(p.audioBytes());
    const fit = fitTone(decoded.subarray(400, 5600), 1000, 8000); // A-law at 8 kHz
    expect(fit.snrDb).toBeGreaterThan(30);
    expect(fit.amplitude * 32767).toBeGreaterThan(7000);
  });

  it('builtin:wav plays a WAV file of any rate and bit depth, resampled to the output rate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vb-wav-'));
    const path = join(dir, 'tone.wav');
    const wav = new wavefile.WaveFile();
    const samples = Array.from({ length: 22050 }, (_, i) =>
      Math.round(0.4 * 32767 * Math.sin((2 * Math.PI * 600 * i) / 22050)),
    );
    wav.fromScratch(2, 22050, '16', [samples, samples]); // stereo 22.05 kHz
    wav.toBitDepth('24');
    writeFileSync(path, wav.toBuffer());
    bridge = await startBridge({ BOT_URL: `builtin:wav:${path}` });
    const p = await connect();
    await p.start('wav-1');
    await waitFor(() => p.audio.length >= 48, 3_000, 'wav audio');
    const fit = fitTone(pcm16Samples(p.audioBytes()).subarray(400, 7600), 600, 8000);
    expect(fit.snrDb).toBeGreaterThan(40);
    expect(fit.amplitude).toBeGreaterThan(0.38); // of full scale
  });
});

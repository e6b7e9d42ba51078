/**
 * `npm run console:screenshot`: remakes docs/console.png, the console with a few calls. A bridge on
 * loopback (echo bot, recording on) with the provider emulator for call control, two synthetic provider
 * calls sending tone bursts (one with a conference member), a softphone call from the page, and
 * Debian's chromium (playwright-core) taking the picture at 1280x800.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import wavefile from 'wavefile';
import WebSocket from 'ws';
import { createBridge } from '../src/app.js';
import { mintToken } from '../src/auth/jwt.js';
import { ALL_SCOPES } from '../src/auth/scopes.js';
import { loadConfig } from '../src/config.js';
import { createEmulator } from '../src/emulator/server.js';
import { createLogger } from '../src/log.js';

const AUTH = 'console-screenshot-auth';
const MEDIA = 'console-screenshot-media';
const out = join(import.meta.dirname, '..', 'docs', 'console.png');
const dir = mkdtempSync(join(tmpdir(), 'voicebridge-shot-'));
const stops: (() => Promise<unknown> | unknown)[] = [];

/** PCM16 tone bursts at `rate`: 600 ms on, 400 ms off, repeating. */
function burst(hz: number, rate: number, i: number, n: number): Buffer {
  const b = Buffer.alloc(n * 2);
  for (let k = 0; k < n; k++) {
    const t = (i + k) / rate;
    const on = t % 1 < 0.6;
    b.writeInt16LE(on ? Math.round(8000 * Math.sin(2 * Math.PI * hz * t)) : 0, k * 2);
  }
  return b;
}

/** A provider call on the media endpoint, sending tone bursts at real time until stopped. */
async function providerCall(mediaUrl: string, id: string, phone: string, rate: number, hz: number) {
  const token = await mintToken({ secret: MEDIA, ttlSeconds: 600 });
  const ws = new WebSocket(`${mediaUrl}?token=${token}`);
  await new Promise((r, j) => ws.once('open', r).once('error', j));
  ws.send(
    JSON.stringify({
      event: 'session_start',
      session_id: id,
      customer_phone: phone,
      direction: 'inbound',
      started_at: new Date(Date.now() - 47_000).toISOString(),
      media: { codec: 'slin', sample_rate: rate, encoding: 'binary' },
    }),
  );
  const per = rate / 50;
  let sent = 0;
  const t0 = performance.now();
  const timer = setInterval(() => {
    while (sent * 20 < performance.now() - t0) ws.send(burst(hz, rate, sent++ * per, per));
  }, 10);
  stops.push(() => {
    clearInterval(timer);
    ws.close();
  });
  return ws;
}

try {
  const emulatorSecret = 'console-screenshot-emulator';
  let bridgeRef: Awaited<ReturnType<typeof createBridge>> | undefined;
  const emulator = await createEmulator({
    jwtSecret: emulatorSecret,
    log: createLogger('silent'),
    lookupSession: async (tenant, id) => bridgeRef?.ctx.sessions.get(tenant, id),
  });
  const emulatorUrl = await emulator.listen(0, '127.0.0.1');
  stops.push(() => emulator.close());
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    DSP_WORKERS: '0',
    AUTH_JWT_SECRET: AUTH,
    MEDIA_SECRET: MEDIA,
    BOT_URL: 'builtin:echo',
    RECORD_CALLS: 'true',
    RECORDINGS_DIR: join(dir, 'rec'),
    PROVIDER_BASE_URL: `${emulatorUrl}/v1`,
    PROVIDER_TOKEN: await mintToken({ secret: emulatorSecret, scopes: ['calls:control'] }),
  });
  const bridge = await createBridge(config);
  bridgeRef = bridge;
  const http = await bridge.listen();
  stops.push(() => bridge.close());
  const mediaUrl = `${http.replace('http', 'ws')}/v1/media`;
  const first = await providerCall(mediaUrl, 'call-7f3a21', '+14155550142', 8000, 440);
  await providerCall(mediaUrl, 'call-91bc08', '+442079460311', 16000, 660);
  const token = await mintToken({ secret: AUTH, scopes: [...ALL_SCOPES] });
  const conf = await fetch(`${http}/v1/sessions/call-7f3a21/conference`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ action: 'add', number: '15550100', callerId: '14155550142' }),
  });
  if (!conf.ok) console.warn(`conference add: ${conf.status} ${await conf.text()}`);

  const wav = join(dir, 'voice.wav');
  const w = new wavefile.WaveFile();
  const voice = burst(1000, 48000, 0, 48000 * 3);
  w.fromScratch(1, 48000, '16', new Int16Array(voice.buffer, voice.byteOffset, voice.length / 2));
  writeFileSync(wav, w.toBuffer());
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      `--use-file-for-fake-audio-capture=${wav}`,
    ],
  });
  stops.push(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${http}/console#token=${token}`);
  await page.getByLabel('Echo cancellation and noise suppression').uncheck();
  await page.getByRole('button', { name: 'Call the bot' }).click();
  await page.getByLabel('Round trip').filter({ hasText: / ms$/ }).waitFor({ timeout: 10_000 });
  await page.locator('article.call').nth(2).waitFor();
  // A frame the bridge refuses, for the timeline: it answers with an error event and the call goes on.
  first.send(JSON.stringify({ event: 'hold', reason: 'not a media event' }));
  // One call's timeline open, and a moment for the meters and durations to move.
  await page
    .locator('article.call details')
    .last()
    .evaluate((d) => {
      (d as unknown as { open: boolean }).open = true;
    });
  await page.waitForTimeout(3000);
  await page.screenshot({ path: out });
  console.log(`console:screenshot: ${out}`);
} finally {
  for (const s of stops.reverse()) await s();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The console in a real browser (Debian's chromium through playwright-core), against a real bridge on
 * loopback: the softphone's call to builtin:echo with Chromium's fake microphone playing tone bursts,
 * measured in the page; sign-in and refusals; the live list (with the badge of a denoised call),
 * listen-in and recordings.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import wavefile from 'wavefile';
import { fitTone } from '../../src/audio/tone.js';
import { TestBot } from '../helpers/bot.js';
import {
  browserSkipReason,
  launchBrowser,
  type TestBrowser,
  tempDir,
  toneBurstWav,
} from '../helpers/browser.js';
import { call } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const HZ = 1000;

/** What the page exposes for diagnostics (src/console/app.js), as the tests read it in the page. */
interface Received {
  toneSnrDb(hz: number): number;
}
interface ConsoleHandle {
  readonly softphone:
    | { rtts: number[]; received: Received; sentFrames: number; sessionId: string | undefined }
    | undefined;
  readonly listeners: Map<string, { received: Received | undefined; frames: number }> | undefined;
  readonly recordings: Map<string, Promise<Blob>>;
}
export type PageGlobal = { voicebridge: ConsoleHandle };
const skip = browserSkipReason('console/browser.test.ts');

let rig: InProcessRig;
let tb: TestBrowser;
let dir: string;

beforeAll(async () => {
  if (skip !== undefined) return;
  dir = tempDir('voicebridge-console-');
  const wav = join(dir, 'tone.wav');
  toneBurstWav(wav, { hz: HZ, onMs: 700, offMs: 500, bursts: 5, amplitude: 0.3 });
  rig = await startRig({
    env: { BOT_URL: 'builtin:echo', RECORD_CALLS: 'true', RECORDINGS_DIR: join(dir, 'rec') },
  });
  tb = await launchBrowser(wav);
});

afterAll(async () => {
  await tb?.close();
  await rig?.close();
});

/** Uncaught errors in any page the test opened: each fails the test (afterEach), never only logged. */
const pageErrors: string[] = [];
afterEach(() => {
  expect(pageErrors.splice(0), 'uncaught errors in the console page').toEqual([]);
});

async function openConsole(scopes: string[], tenant?: string): Promise<Page> {
  const page = await tb.browser.newPage();
  page.on('pageerror', (err) => pageErrors.push(`${err.message}\n${err.stack ?? ''}`));
  await page.goto(`${rig.http}/console#token=${await rig.restToken(scopes, tenant)}`);
  return page;
}

const ALL = ['sessions:read', 'sessions:listen', 'calls:control', 'media:call', 'recordings:read'];

describe.skipIf(skip !== undefined)('console in chromium', () => {
  it('softphone: calls builtin:echo; the tone comes back at SNR >= 30 dB with a round trip under 400 ms, measured in the page', async () => {
    const page = await openConsole(ALL);
    // The token left the address bar at once, and is in this tab's sessionStorage, never a cookie.
    expect(new URL(page.url()).hash).toBe('');
    expect(await page.context().cookies()).toEqual([]);
    await page.getByLabel('Echo cancellation and noise suppression').uncheck();
    await page.getByRole('button', { name: 'Call the bot' }).click();
    await waitFor(
      async () =>
        (await page.evaluate(
          () => (globalThis as unknown as PageGlobal).voicebridge.softphone?.rtts.length ?? 0,
        )) >= 3,
      10_000,
      'three round trips measured',
      100,
    );
    const m = await page.evaluate((hz) => {
      const p = (globalThis as unknown as PageGlobal).voicebridge.softphone!;
      return { rtts: p.rtts, snr: p.received.toneSnrDb(hz), sent: p.sentFrames };
    }, HZ);
    console.log(
      `softphone: round trips ${m.rtts.map((x: number) => Math.round(x)).join(', ')} ms; SNR ${m.snr.toFixed(1)} dB`,
    );
    expect(m.snr).toBeGreaterThanOrEqual(30);
    const sorted = [...m.rtts].sort((a, b) => a - b);
    expect(sorted[Math.floor(sorted.length / 2)]).toBeLessThan(400);
    // The echo's own delay is in it: a round trip shorter than that would be measuring something else.
    expect(sorted[0]).toBeGreaterThan(rig.config.echoDelayMs);
    await expect.poll(() => page.getByLabel('Round trip').textContent()).toMatch(/^\d+ ms$/);
    await page.getByRole('button', { name: 'Hang up' }).click();
    await expect
      .poll(() => page.locator('#phone-state').textContent(), { timeout: 5_000 })
      .toBe('Call ended');
    await waitFor(
      async () => (await rig.bridge.ctx.sessions.list('default')).length === 0,
      5_000,
      'session gone',
    );
    await page.close();
  });

  it('refuses visibly: no call without media:call, no live list without sessions:read, and a bad token goes back to sign-in', async () => {
    const page = await openConsole(['sessions:read']);
    await page.getByRole('button', { name: 'Call the bot' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('media:call');
    expect(await page.getByRole('alert').textContent()).toContain('403');
    // Without sessions:read, the live list says why it is empty.
    const noRead = await openConsole(['media:call']);
    await expect.poll(() => noRead.getByRole('alert').textContent()).toContain('sessions:read');
    expect(await noRead.getByRole('alert').textContent()).toContain('403');
    await noRead.close();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('REST token').fill('not-a-jwt');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/401/);
    expect(await page.getByLabel('REST token').isVisible()).toBe(true);
    // A good token typed in signs in, and lands in this tab's sessionStorage only.
    const good = await rig.restToken(['sessions:read']);
    await page.getByLabel('REST token').fill(good);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Live calls' }).isVisible()).toBe(true);
    await expect.poll(() => page.getByRole('status', { name: 'Live updates' }).textContent()).toBe('live');
    expect(
      await page.evaluate(() =>
        (
          globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } }
        ).sessionStorage.getItem('voicebridge.token'),
      ),
    ).toBe(good);
    expect(await page.context().cookies()).toEqual([]);
    await page.close();
  });

  it('lists the call live (caller, direction, dialect, bot, formats) with moving levels on both legs; after hang-up its recording holds the caller left and the bot right', async () => {
    const { page, card } = await softphoneCall();
    expect(await card.locator('.caller').textContent()).toBe('softphone');
    const meta = (await card.locator('.meta').textContent()) ?? '';
    expect(meta).toContain('inbound');
    expect(meta).toContain('slin 16000 Hz binary');
    expect(meta).toContain('builtin');

    // Levels move on both legs: tone bursts on the caller's, their echo on the bot's.
    const caller = new Set<number>();
    const bot = new Set<number>();
    await waitFor(
      async () => {
        caller.add(
          await card.getByLabel('Caller level').evaluate((m) => (m as unknown as { value: number }).value),
        );
        bot.add(
          await card.getByLabel('Bot level').evaluate((m) => (m as unknown as { value: number }).value),
        );
        return caller.size >= 4 && bot.size >= 4 && Math.max(...caller) > -30 && Math.max(...bot) > -30;
      },
      8_000,
      'moving levels on both legs',
      100,
    );

    await page.getByRole('button', { name: 'Hang up' }).click();
    await expect.poll(() => card.locator('.status').textContent(), { timeout: 5_000 }).toBe('ended');

    // The recording, as the page fetched it for playing.
    await waitFor(
      async () => {
        if ((await card.locator('audio').count()) > 0) return true;
        // Asked again only once the last answer is in (a recording still being written says so).
        const box = (await card.locator('.recordings').textContent()) ?? '';
        if (!box.startsWith('Loading')) await card.getByRole('button', { name: 'Recording' }).click();
        return false;
      },
      10_000,
      'the finished recording listed',
      200,
    );
    const b64 = await page.evaluate(async () => {
      const blob = await [...(globalThis as unknown as PageGlobal).voicebridge.recordings.values()][0]!;
      const bytes = new Uint8Array(await blob.arrayBuffer());
      let s = '';
      for (let i = 0; i < bytes.length; i += 0x8000)
        s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return btoa(s);
    });
    const wav = new wavefile.WaveFile(Buffer.from(b64, 'base64'));
    const fmt = wav.fmt as { numChannels: number; sampleRate: number; bitsPerSample: number };
    expect([fmt.numChannels, fmt.sampleRate, fmt.bitsPerSample]).toEqual([2, 16000, 16]);
    const [left, right] = wav.getSamples(false, Int16Array) as unknown as [Int16Array, Int16Array];
    const leftSnr = bestSnr(left, HZ, 16000);
    const rightSnr = bestSnr(right, HZ, 16000);
    const lag = firstLoud(right) - firstLoud(left);
    console.log(
      `recording: caller ${leftSnr.toFixed(1)} dB, bot ${rightSnr.toFixed(1)} dB, bot ${((lag * 1000) / 16000).toFixed(0)} ms behind`,
    );
    expect(leftSnr).toBeGreaterThanOrEqual(30);
    expect(rightSnr).toBeGreaterThanOrEqual(30);
    // The right channel is the bot's: the echo of the left, its delay behind.
    expect((lag * 1000) / 16000).toBeGreaterThan(rig.config.echoDelayMs - 40);
    expect((lag * 1000) / 16000).toBeLessThan(rig.config.echoDelayMs + 150);
    await page.close();
  });

  it('badges a call whose caller the bot hears denoised, and not the others', async () => {
    const secret = 'console-denoise-secret';
    for (const [tenant, denoise] of [
      ['dn-on', true],
      ['dn-off', false],
    ] as const) {
      const put = await call(rig.http, 'PUT', '/v1/media-stream', {
        token: await rig.restToken(['media:manage'], tenant),
        body: { media_ws_url: 'wss://example.test/media', media_secret: secret, denoise },
      });
      expect(put.status).toBe(200);
    }
    const cards: Record<string, boolean> = {};
    for (const tenant of ['dn-on', 'dn-off']) {
      const page = await openConsole(ALL, tenant);
      const provider = new TestProvider(rig.mediaUrl, { token: await rig.mediaToken({ tenant, secret }) });
      await provider.start(`${tenant}-call`);
      const card = page.locator(`article.call[data-session-id="${tenant}-call"]`);
      await card.waitFor({ timeout: 10_000 });
      const badge = card.locator('.badge');
      expect(await badge.textContent()).toBe('denoised');
      cards[tenant] = await badge.isVisible();
      provider.close();
      await page.close();
    }
    expect(cards).toEqual({ 'dn-on': true, 'dn-off': false });
  });

  it('listen-in: a second page with sessions:listen hears the call (tone SNR measured there) until it ends; one without the scope is refused visibly', async () => {
    const { page, id } = await softphoneCall();
    // Listen-in from a second page with its own token, holding sessions:listen.
    const other = await openConsole(['sessions:read', 'sessions:listen']);
    const otherCard = other.locator(`article[data-session-id="${id}"]`);
    await otherCard.waitFor({ timeout: 5_000 });
    await otherCard.getByLabel('Leg to listen to').selectOption('caller');
    await otherCard.getByRole('button', { name: 'Listen' }).click();
    await expect
      .poll(() => otherCard.getByRole('button', { name: 'Listen' }).getAttribute('aria-pressed'))
      .toBe('true');
    await waitFor(
      async () =>
        (await other.evaluate(
          (sid) => (globalThis as unknown as PageGlobal).voicebridge.listeners?.get(sid)?.frames ?? 0,
          id!,
        )) >= 100,
      8_000,
      'two seconds of listen-in audio',
      100,
    );
    const listenSnr = await other.evaluate(
      ([sid, hz]) =>
        (globalThis as unknown as PageGlobal).voicebridge
          .listeners!.get(sid as string)!
          .received!.toneSnrDb(hz as number),
      [id, HZ],
    );
    console.log(`listen-in: tone SNR ${listenSnr.toFixed(1)} dB`);
    expect(listenSnr).toBeGreaterThanOrEqual(30);

    await page.getByRole('button', { name: 'Hang up' }).click();
    await expect
      .poll(() => otherCard.getByRole('button', { name: 'Listen' }).getAttribute('aria-pressed'))
      .toBe('false');

    // Without sessions:listen: the page says so.
    const { page: again, id: id2 } = await softphoneCall();
    const refused = await openConsole(['sessions:read']);
    const refusedCard = refused.locator(`article[data-session-id="${id2}"]`);
    await refusedCard.waitFor({ timeout: 5_000 });
    await refusedCard.getByRole('button', { name: 'Listen' }).click();
    await expect
      .poll(() => refused.getByRole('alert').textContent())
      .toMatch(/Listen-in refused: GET \/v1\/sessions\/[^/]+\/listen: 403 .*sessions:listen/);
    expect(await refusedCard.getByRole('button', { name: 'Listen' }).getAttribute('aria-pressed')).toBe(
      'false',
    );
    await again.getByRole('button', { name: 'Hang up' }).click();
    for (const p of [other, page, again, refused]) await p.close();
  });

  it("keypad and hang-up reach a tenant's own ws bot: dtmf events in order, then session_end", async () => {
    await using bot = await startBot();
    const admin = await rig.restToken(['media:manage'], 'acme');
    const put = await call(rig.http, 'PUT', '/v1/media-stream', {
      token: admin,
      body: {
        media_ws_url: 'wss://bridge.example.com/v1/media',
        media_secret: 'acme-console-media-secret',
        bot_url: bot.url,
      },
    });
    expect(put.status, put.text).toBe(200);
    const page = await openConsole(['media:call', 'sessions:read'], 'acme');
    await page.getByRole('button', { name: 'Call the bot' }).click();
    const conn = await bot.waitConnection(0, 5_000);
    await expect.poll(() => page.locator('#phone-state').textContent()).toMatch(/^In a call/);
    for (const key of ['Key 5', 'Key #', 'Key 0']) await page.getByRole('button', { name: key }).click();
    await waitFor(
      () => conn.events.filter((e) => e.event === 'dtmf').length === 3,
      5_000,
      'three digits',
      20,
    );
    expect(conn.events.filter((e) => e.event === 'dtmf').map((e) => e.digit)).toEqual(['5', '#', '0']);
    await page.getByRole('button', { name: 'Hang up' }).click();
    await conn.waitEvent('session_end', 5_000);
    await expect
      .poll(() => page.locator('#phone-state').textContent(), { timeout: 5_000 })
      .toBe('Call ended');
    await page.close();
  });
});

/** A ws bot of our protocol that echoes, closed by `await using`. */
async function startBot() {
  const bot = await TestBot.start();
  return Object.assign(bot, { [Symbol.asyncDispose]: () => bot.close() });
}

/** A page signed in with every console scope, in a softphone call to the echo bot, and the call's card. */
async function softphoneCall() {
  const page = await openConsole(ALL);
  await page.getByLabel('Echo cancellation and noise suppression').uncheck();
  await page.getByRole('button', { name: 'Call the bot' }).click();
  let id: string | undefined;
  await waitFor(
    async () => {
      id = await page.evaluate(() => (globalThis as unknown as PageGlobal).voicebridge.softphone?.sessionId);
      return id !== undefined;
    },
    5_000,
    'the softphone call to start',
    50,
  );
  const card = page.locator(`article[data-session-id="${id}"]`);
  await card.waitFor({ timeout: 5_000 });
  return { page, id: id!, card };
}

/** The best tone SNR over 400 ms windows (the tone comes in bursts). */
function bestSnr(x: Int16Array, hz: number, rate: number): number {
  let best = Number.NEGATIVE_INFINITY;
  const win = (rate * 400) / 1000;
  for (let at = 0; at + win <= x.length; at += rate / 50) {
    const fit = fitTone(x.subarray(at, at + win), hz, rate);
    if (fit.amplitude > 0.01 && fit.snrDb > best) best = fit.snrDb;
  }
  return best;
}

/** The first sample louder than a tenth of full scale. */
function firstLoud(x: Int16Array): number {
  return x.findIndex((v) => Math.abs(v) > 3276);
}

/**
 * The console in a real browser (Debian's chromium through playwright-core), against a real bridge on
 * loopback: the softphone's call to builtin:echo with Chromium's fake microphone playing tone bursts,
 * measured in the page; sign-in and refusals; the live list, listen-in and recordings.
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  browserSkipReason,
  launchBrowser,
  type TestBrowser,
  tempDir,
  toneBurstWav,
} from '../helpers/browser.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { waitFor } from '../helpers/wait.js';

const HZ = 1000;

/** What the page exposes for diagnostics (src/console/app.js), as the tests read it in the page. */
interface Received {
  toneSnrDb(hz: number): number;
}
interface ConsoleHandle {
  readonly softphone: { rtts: number[]; received: Received; sentFrames: number } | undefined;
  readonly listeners: Map<string, { received: Received | undefined; frames: number }> | undefined;
}
export type PageGlobal = { voicebridge: ConsoleHandle };
const skip = browserSkipReason();
if (skip !== undefined) console.warn(`console browser tests skipped: ${skip}`);

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

async function openConsole(scopes: string[]): Promise<Page> {
  const page = await tb.browser.newPage();
  page.on('pageerror', (err) => console.error('page error:', err.message));
  await page.goto(`${rig.http}/console#token=${await rig.restToken(scopes)}`);
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

  it('refuses visibly: a token without media:call cannot place a call, and a bad token goes back to sign-in', async () => {
    const page = await openConsole(['sessions:read']);
    await page.getByRole('button', { name: 'Call the bot' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('media:call');
    expect(await page.getByRole('alert').textContent()).toContain('403');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('REST token').fill('not-a-jwt');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/401/);
    expect(await page.getByLabel('REST token').isVisible()).toBe(true);
    await page.close();
  });
});

/**
 * The console's timeline in a real browser (chromium through playwright-core): each call of a tool is a
 * line of its call's card, "tool <name> <outcome> in <ms> ms", marked bad when it did not succeed.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { browserSkipReason, launchBrowser, tempDir, toneBurstWav } from '../helpers/browser.js';
import { startRig } from '../helpers/rig.js';

const skip = browserSkipReason('tools/console-timeline.test.ts');
if (skip !== undefined) console.warn(`tools console test skipped: ${skip}`);

describe.skipIf(skip !== undefined)('the console timeline', () => {
  it('shows each call of a tool with its outcome', async () => {
    const wav = join(tempDir('voicebridge-tools-console-'), 'quiet.wav');
    toneBurstWav(wav, { hz: 1000, onMs: 100, offMs: 100, bursts: 1, amplitude: 0.01 });
    await using rig = await startRig({ bot: { echo: false }, env: { BOT_TOOLS: '["send_dtmf"]' } });
    const tb = await launchBrowser(wav);
    try {
      const page = await tb.browser.newPage();
      await page.goto(`${rig.http}/console#token=${await rig.restToken(['sessions:read'])}`);
      await page.getByText('No calls yet').waitFor({ timeout: 10_000 });
      await rig.call('timeline-call');
      const bot = await rig.bot!.waitConnection();
      const card = page.getByLabel('Call timeline-call');
      await card.waitFor({ timeout: 5_000 });
      bot.send({ event: 'tool_call', id: 'a', name: 'send_dtmf', arguments: { digits: '42' } });
      bot.send({ event: 'tool_call', id: 'b', name: 'transfer', arguments: {} });
      // The timeline is inside a closed <details>: present, though not shown until opened.
      const timeline = card.locator('ol[aria-label="Timeline"]');
      const ok = timeline.locator('li', { hasText: /tool send_dtmf ok in \d+ ms/ });
      const bad = timeline.locator('li.bad', { hasText: /tool transfer error in \d+ ms/ });
      await ok.waitFor({ state: 'attached', timeout: 5_000 });
      await bad.waitFor({ state: 'attached', timeout: 5_000 });
      expect(await ok.getAttribute('class')).toBeNull();
      await page.close();
    } finally {
      await tb.close();
    }
  });
});

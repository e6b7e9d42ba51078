/**
 * Graceful shutdown (what SIGTERM runs): readiness false at once, new upgrades refused with 503, live
 * calls carry on for up to DRAIN_TIMEOUT_MS, then close 1001 with their bots told session_end.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { tonePcm16 } from '../helpers/audio.js';
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

describe('graceful shutdown', () => {
  it('drains live calls up to the drain timeout, then closes them 1001 and tells the bot', async () => {
    bot = await TestBot.start({ echo: true });
    bridge = await startBridge({ BOT_URL: bot.url, DRAIN_TIMEOUT_MS: '1000' });
    const token = await bridge.mediaToken();
    const p = new TestProvider(bridge.mediaUrl, { token });
    providers.push(p);
    await p.start('drain-1');
    const conn = await bot.waitConnection();
    const t0 = Date.now();
    const closing = bridge.close();
    // Readiness turns false at once.
    const ready = await fetch(`${bridge.http}/readyz`);
    expect(ready.status).toBe(503);
    // New calls are refused with 503 before the upgrade.
    const late = new TestProvider(bridge.mediaUrl, { token });
    providers.push(late);
    await expect(late.opened).rejects.toThrow(/503/);
    // The live call still carries audio during the drain.
    p.sendRaw(tonePcm16(440, 8000, 1600));
    await waitFor(() => p.audio.length >= 8, 1_000, 'audio during the drain');
    expect(p.closeCode).toBeUndefined();
    // Then the drain timeout ends it: 1001, and the bot hears session_end.
    expect(await p.waitClosed(3_000)).toBe(1001);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000 - 50);
    expect((await conn.waitEvent('session_end')).reason).toBe('shutdown');
    await closing;
  });

  it('finishes as soon as the last call ends during the drain', async () => {
    bridge = await startBridge({ DRAIN_TIMEOUT_MS: '30000' });
    const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken() });
    providers.push(p);
    await p.start('drain-2');
    await waitFor(() => bridge!.bridge.ctx.sessions.count() === 1, 2_000, 'session');
    const t0 = Date.now();
    const closing = bridge.close();
    setTimeout(() => p.send({ event: 'session_end' }), 200);
    await closing;
    expect(p.closeCode).toBe(1000);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});

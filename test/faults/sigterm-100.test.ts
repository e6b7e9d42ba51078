/**
 * SIGTERM to a real bridge process carrying 100 live calls: readiness turns false at once, new calls are
 * refused (503 before the upgrade), the live calls keep their audio through the drain, then all close
 * with 1001 and the process exits 0; the log names every session it ended. (One call through the same
 * path: test/media/sigterm.test.ts; the drain logic in-process: test/media/shutdown.test.ts.)
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { PacedSchedule } from '../../src/emulator/paced-caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { upgradeAnswer } from '../helpers/upgrade.js';
import { waitFor } from '../helpers/wait.js';

const CALLS = 100;
const DRAIN_MS = 2_000;
let rig: ProcessRig | undefined;
const providers: TestProvider[] = [];
let sender: PacedSchedule | undefined;

afterEach(async () => {
  sender?.stop();
  for (const p of providers.splice(0)) p.close();
  await rig?.process.kill('SIGKILL');
  await rig?.close();
  rig = undefined;
});

describe('SIGTERM with 100 live calls', () => {
  it('readyz false at once, no new calls, live ones drain with audio, then 1001 and exit 0', async () => {
    rig = await startRig({
      process: true,
      env: {
        LOG_LEVEL: 'info',
        BOT_URL: 'builtin:echo',
        ECHO_DELAY_MS: '0',
        DRAIN_TIMEOUT_MS: String(DRAIN_MS),
        MEDIA_CONNECT_PER_SEC: '1000',
      },
    });
    const bridge = rig.process;
    const token = await rig.mediaToken();
    for (let i = 0; i < CALLS; i++) providers.push(new TestProvider(bridge.mediaUrl, { token }));
    await Promise.all(providers.map((p, i) => p.start(`term-${i}`)));
    const chunk = tonePcm16(1000, 8000, 160);
    sender = new PacedSchedule({
      chunkMs: 20,
      chunks: Number.POSITIVE_INFINITY,
      send: () => {
        for (const p of providers) if (p.closeCode === undefined) p.sendRaw(chunk);
      },
    }).start();
    await waitFor(() => providers.every((p) => p.audio.length >= 10), 15_000, 'audio on every call');
    expect((await fetch(`${bridge.http}/readyz`)).status).toBe(200);

    const exited = new Promise<number | null>((r) => bridge.child.once('exit', (code) => r(code)));
    const term = performance.now();
    bridge.child.kill('SIGTERM');
    // Readiness false at once (polled, bounded).
    await waitFor(async () => (await fetch(`${bridge.http}/readyz`)).status === 503, 2_000, 'readyz 503');
    const readyMs = performance.now() - term;
    // No new calls.
    const refused = await upgradeAnswer(bridge.mediaUrl, token);
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ error: 'not_ready' });

    // The live calls go on through the drain: every one gets audio well after the signal.
    await waitFor(() => performance.now() - term > DRAIN_MS * 0.75, DRAIN_MS * 2, 'most of the drain');
    const midDrain = term + DRAIN_MS / 2;
    const flowing = providers.filter((p) => p.audio.some((a) => a.at > midDrain)).length;
    expect(providers.every((p) => p.closeCode === undefined)).toBe(true);

    // Then all close with 1001, and the process exits 0.
    await waitFor(
      () => providers.every((p) => p.closeCode !== undefined),
      DRAIN_MS + 5_000,
      'every call to close',
    );
    const closedMs = performance.now() - term;
    expect(new Set(providers.map((p) => p.closeCode))).toEqual(new Set([1001]));
    expect(await exited).toBe(0);
    console.log(
      `SIGTERM: readyz 503 after ${readyMs.toFixed(0)} ms; ${flowing}/${CALLS} calls had audio mid-drain; all closed 1001 after ${closedMs.toFixed(0)} ms`,
    );
    expect(readyMs).toBeLessThan(500);
    expect(flowing).toBe(CALLS);
    expect(closedMs).toBeGreaterThanOrEqual(DRAIN_MS - 50);

    // The log names the drain and every session it ended.
    const lines = bridge
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.msg === 'draining calls')).toMatchObject({ calls: CALLS });
    const ended = new Set(
      lines.filter((l) => l.msg === 'session ended' && l.code === 1001).map((l) => l.session_id),
    );
    expect(ended.size).toBe(CALLS);
  }, 60_000);
});

/**
 * The test rig: the bridge it starts is wired to the peers asked for, and closing it (or leaving an
 * `await using` block) closes the bridge and every peer, so no test leaves a server behind.
 */
import { createConnection } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startRig } from './rig.js';
import { waitFor } from './wait.js';

/** Whether something accepts TCP connections at `url`'s host and port. */
function listening(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = createConnection({ host: u.hostname, port: Number(u.port) });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

describe('startRig', () => {
  it('starts a bridge with the peers asked for, and `await using` closes them all', async () => {
    let urls: string[];
    {
      await using rig = await startRig({
        bot: { echo: true },
        providers: { voice: {}, messaging: {} },
        log: 'info',
      });
      expect(rig.config.botUrl).toBe(rig.bot!.url);
      expect(rig.config.providerBaseUrl).toBe(`${rig.emulatorUrl}/v1`);
      expect(rig.config.messagingBaseUrl).toBe(`${rig.emulatorUrl}/v1`);
      expect(rig.config.dspWorkers).toBe(Number(process.env.TEST_DSP_WORKERS ?? '0'));
      // A call reaches the bot, whose echo comes back to the caller; the bridge logged it.
      const p = await rig.call('rig-1');
      const conn = await rig.bot!.waitConnection();
      expect(conn.sessionStart).toMatchObject({ session_id: 'rig-1' });
      p.sendRaw(Buffer.alloc(1600));
      await waitFor(() => p.audio.length > 0, 3_000, 'the echo at the caller');
      expect(p.errors()).toEqual([]);
      expect(rig.logs.some((l) => l.includes('rig-1'))).toBe(true);
      // Its tokens are the bridge's: a REST token with the scope reads the call.
      const res = await fetch(`${rig.http}/v1/sessions`, {
        headers: { authorization: `Bearer ${await rig.restToken(['sessions:read'])}` },
      });
      expect(res.status).toBe(200);
      expect(JSON.stringify(await res.json())).toContain('rig-1');
      urls = [rig.http, rig.bot!.url, rig.emulatorUrl!];
      for (const u of urls) expect(await listening(u)).toBe(true);
    }
    for (const u of urls) expect(await listening(u), u).toBe(false);
  });

  it('with the Realtime stand-in, a call dials it in its dialect', async () => {
    await using rig = await startRig({ realtime: {} });
    expect(rig.env).toMatchObject({
      BOT_URL: rig.realtime!.wsUrl('gpt-realtime'),
      BOT_DIALECT: 'openai-realtime',
    });
    await rig.call('rt-1');
    expect(await rig.realtime!.waitForSession(1, 5_000)).toBeDefined();
  });

  it('closes what it started when the bridge cannot start', async () => {
    // A bad setting fails the start after the bot and the emulator are up: neither is left listening.
    const servers = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap').length;
    const before = servers();
    const failing = startRig({ bot: {}, providers: { voice: {} }, env: { MAX_SESSIONS: 'lots' } });
    await expect(failing).rejects.toThrow(/MAX_SESSIONS/);
    // (Handles leave the list a moment after their close callbacks run.)
    // At most as many as before: an earlier test's server may finish closing meanwhile.
    await waitFor(() => servers() <= before, 2_000, 'the started servers to be gone');
  });
});

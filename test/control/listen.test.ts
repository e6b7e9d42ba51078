/**
 * Listen-in, `GET /v1/sessions/{id}/listen`, on a real bridge with real WebSockets and JWTs: each leg's
 * audio measured (tone SNR), refusals before the upgrade, the close at the end of the call, and a
 * listener that stops reading.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { pcm16Samples, tonePcm16 } from '../helpers/audio.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { fitSines, toneSnrDb } from '../helpers/signal.js';
import { upgradeAnswer } from '../helpers/upgrade.js';
import { waitFor } from '../helpers/wait.js';

let rig: InProcessRig | undefined;
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await rig?.close();
  rig = undefined;
});

class Listener {
  readonly ws: WebSocket;
  start: Record<string, unknown> | undefined;
  readonly chunks: Buffer[] = [];
  closeCode: number | undefined;
  readonly opened: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    sockets.push(this.ws);
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) this.chunks.push(data);
      else this.start = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    });
    this.ws.on('close', (code: number) => {
      this.closeCode = code;
    });
  }

  samples(): Float64Array {
    return pcm16Samples(Buffer.concat(this.chunks));
  }
}

async function listen(id: string, leg: string, tenant?: string): Promise<Listener> {
  const token = await rig!.restToken(['sessions:listen'], tenant);
  const l = new Listener(
    `${rig!.http.replace('http', 'ws')}/v1/sessions/${id}/listen?leg=${leg}&token=${token}`,
  );
  await l.opened;
  await waitFor(() => l.start !== undefined, 2_000, 'listen_start');
  return l;
}

const CALLER_HZ = 1000;
const CALLER_AMP = 10_000;
const BOT_HZ = 440;
const BOT_AMP = 8192;

describe('GET /v1/sessions/{id}/listen', () => {
  it('streams each leg at the caller rate: caller, bot and mixed tones with SNR >= 30 dB; 1000 at the end', async () => {
    rig = await startRig({ env: { BOT_URL: `builtin:tone:${BOT_HZ}` } });
    const p = await rig.call('ls-1', { start: { sample_rate: 16000 } });
    await waitFor(() => rig!.bridge.media.find('default', 'ls-1') !== undefined, 2_000, 'call live');
    const legs = {
      caller: await listen('ls-1', 'caller'),
      bot: await listen('ls-1', 'bot'),
      mixed: await listen('ls-1', 'mixed'),
    };
    for (const [leg, l] of Object.entries(legs)) {
      expect(l.start).toEqual({
        event: 'listen_start',
        session_id: 'ls-1',
        leg,
        sample_rate: 16000,
        encoding: 'slin',
      });
    }
    await p.sendPaced(tonePcm16(CALLER_HZ, 16000, 16000 * 1.5, CALLER_AMP), 640, 20);
    const rate = 16000;
    // The middle second of each, clear of the start and the end.
    const middle = [Math.round(0.2 * rate), Math.round(1.2 * rate)] as const;
    await waitFor(() => legs.caller.samples().length >= 1.4 * rate, 2_000, 'caller leg audio');
    await waitFor(() => legs.mixed.samples().length >= 1.3 * rate, 2_000, 'mixed audio');
    const caller = legs.caller.samples();
    const snrCaller = toneSnrDb(caller, rate, CALLER_HZ, CALLER_AMP, ...middle);
    const bot = legs.bot.samples();
    const snrBot = toneSnrDb(bot, rate, BOT_HZ, BOT_AMP, ...middle);
    const mixed = legs.mixed.samples();
    const [from, to] = middle;
    const fit = fitSines(mixed, rate, [CALLER_HZ, BOT_HZ], from, to);
    const snrMixed = 10 * Math.log10((CALLER_AMP ** 2 / 2 + BOT_AMP ** 2 / 2) / fit.residualPower);
    console.log(
      `listen-in SNR: caller ${snrCaller.toFixed(1)} dB, bot ${snrBot.toFixed(1)} dB, mixed ${snrMixed.toFixed(1)} dB`,
    );
    expect(snrCaller).toBeGreaterThanOrEqual(30);
    expect(snrBot).toBeGreaterThanOrEqual(30);
    expect(snrMixed).toBeGreaterThanOrEqual(30);
    // Both tones at their own level in the mix (within 0.5 dB).
    expect(Math.abs(20 * Math.log10(fit.amplitudes[0]! / CALLER_AMP))).toBeLessThan(0.5);
    expect(Math.abs(20 * Math.log10(fit.amplitudes[1]! / BOT_AMP))).toBeLessThan(0.5);
    // The caller leg holds no bot tone, and the bot leg no caller tone.
    expect(fitSines(caller, rate, [BOT_HZ], ...middle).amplitudes[0]!).toBeLessThan(50);
    expect(fitSines(bot, rate, [CALLER_HZ], ...middle).amplitudes[0]!).toBeLessThan(50);
    p.send({ event: 'session_end' });
    for (const l of Object.values(legs))
      await waitFor(() => l.closeCode !== undefined, 2_000, 'listener closed');
    expect(Object.values(legs).map((l) => l.closeCode)).toEqual([1000, 1000, 1000]);
    const text = await (await fetch(`${rig.http}/metrics`)).text();
    expect(text).toMatch(/^voicebridge_listeners 0$/m);
  });

  it('refuses before the upgrade: 401 without a token, 403 without the scope, 404 for another tenant or an unknown call, 400 for a bad leg', async () => {
    rig = await startRig({ env: { BOT_URL: 'builtin:echo' } });
    await rig.call('ls-2');
    await waitFor(() => rig!.bridge.media.find('default', 'ls-2') !== undefined, 2_000, 'call live');
    const url = (id: string, leg = 'mixed') =>
      `${rig!.http.replace('http', 'ws')}/v1/sessions/${id}/listen?leg=${leg}`;
    const listenToken = await rig.restToken(['sessions:listen']);
    expect((await upgradeAnswer(url('ls-2'), '')).status).toBe(401);
    const noScope = await upgradeAnswer(url('ls-2'), await rig.restToken(['sessions:read']));
    expect(noScope.status).toBe(403);
    expect(JSON.parse(noScope.body)).toMatchObject({ error: 'forbidden' });
    expect(noScope.body).toContain('sessions:listen');
    const other = await upgradeAnswer(url('ls-2'), await rig.restToken(['sessions:listen'], 'other'));
    expect(other.status).toBe(404);
    expect(JSON.parse(other.body)).toMatchObject({ error: 'not_found' });
    expect((await upgradeAnswer(url('nope'), listenToken)).status).toBe(404);
    const badLeg = await upgradeAnswer(url('ls-2', 'both'), listenToken);
    expect(badLeg.status).toBe(400);
    expect(badLeg.body).toContain('leg must be one of mixed, caller, bot');
    expect((await upgradeAnswer(url('ls-2', 'caller'), listenToken)).status).toBe(101);
    // A plain GET is told to upgrade.
    const plain = await fetch(`${rig.http}/v1/sessions/ls-2/listen`, {
      headers: { authorization: `Bearer ${listenToken}` },
    });
    expect(plain.status).toBe(426);
  });

  it('a listener that stops reading gets audio dropped (counted), never the call slowed', async () => {
    rig = await startRig({ env: { BOT_URL: `builtin:tone:${BOT_HZ}` } });
    const p = await rig.call('ls-3', { start: { sample_rate: 16000 } });
    await waitFor(() => rig!.bridge.media.find('default', 'ls-3') !== undefined, 2_000, 'call live');
    const slow = await listen('ls-3', 'caller');
    (slow.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const droppedBytes = async () => {
      const text = await (await fetch(`${rig!.http}/metrics`)).text();
      return Number(/^voicebridge_listen_dropped_bytes_total (\d+)/m.exec(text)?.[1] ?? 0);
    };
    // The caller's side faster than real time (a provider catching up): 40 s of audio in 0.8 s, so the
    // paused listener's socket fills within the test, while the bot's audio to the caller stays paced.
    const burst = tonePcm16(CALLER_HZ, 16000, 16000 * 40, CALLER_AMP);
    const t0 = performance.now();
    const arrivalsBefore = p.audio.length;
    await p.sendPaced(burst, 32_000, 20);
    await waitFor(async () => (await droppedBytes()) > 0, 5_000, 'listen audio dropped');
    // The call's outbound pacing: the tone bot's 20 ms chunks kept arriving at real time meanwhile.
    await waitFor(() => performance.now() - t0 > 1_500, 3_000, 'a second and a half of call');
    const elapsed = performance.now() - t0;
    const got = p.audio.length - arrivalsBefore;
    expect(got).toBeGreaterThan((elapsed / 20) * 0.85);
    expect(got).toBeLessThan((elapsed / 20) * 1.15 + 5);
    console.log(
      `slow listener: ${await droppedBytes()} bytes dropped; call got ${got} chunks in ${elapsed.toFixed(0)} ms`,
    );
  });
});

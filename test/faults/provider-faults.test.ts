/**
 * Provider-socket faults injected for real on loopback, each beside a healthy control call: the socket
 * dropped without session_end, a provider that stops reading (its socket paused, so the bridge's
 * bufferedAmount grows), and a provider sending at 2x real time and in 1 s bursts. For each: the
 * control call's audio keeps flowing (measured), memory stays bounded, the metrics say what happened
 * and the logs name the session.
 *
 * Also covered elsewhere: a closed provider socket removes its session (test/media/endpoint.test.ts);
 * backpressure shedding on one queue leaving another alone (test/media/outbound.test.ts, with a fake
 * socket; here with a real one).
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { pace } from '../../src/emulator/paced-caller.js';
import { tonePcm16 } from '../helpers/audio.js';
import { FaultRig } from '../helpers/fault-rig.js';
import { interArrival } from '../helpers/provider.js';
import { reach, waitFor } from '../helpers/wait.js';

const rig = new FaultRig();
afterEach(() => rig.close());

const setup = (env: Record<string, string> = {}) => rig.start(env);
const call = (id: string, media?: Record<string, unknown>) => rig.call(id, media);
const metric = (name: string, label?: [string, string]) => rig.metric(name, label);
const expectControlFlowed = (from: number) => rig.expectControlFlowed(from);

describe('provider faults, beside a healthy call', () => {
  it('socket dropped without session_end: session removed, bot told, sessions gauge down, logged by id', async () => {
    const logs = await setup();
    const p = await call('pdrop-1');
    const botConn = await rig.bot.connection('pdrop-1');
    const from = performance.now();
    p.sendRaw(tonePcm16(500, 8000, 1600));
    await waitFor(() => p.audio.length > 0, 3_000, 'audio on the call');
    expect(await metric('voicebridge_sessions')).toBe(2);
    p.ws.terminate(); // no close frame, no session_end
    await waitFor(() => botConn.events.some((e) => e.event === 'session_end'), 3_000, 'the bot to be told');
    await waitFor(() => botConn.closed, 3_000, 'the bot leg to close');
    await waitFor(() => rig.bridge.bridge.media.connections === 1, 3_000, 'the session to go');
    expect(await rig.bridge.bridge.ctx.sessions.get('default', 'pdrop-1')).toBeUndefined();
    expect(await metric('voicebridge_sessions')).toBe(1);
    const ended = logs.find(/session ended/, 'pdrop-1');
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({ code: 1001, reason: 'provider_lost' });
    // The control call goes on after the drop: 300 ms more of it (15 chunks) arrive.
    const after = performance.now();
    await waitFor(() => rig.control.window(after).chunks >= 15, 3_000, 'the control call after the drop');
    expectControlFlowed(from);
  });

  it('provider stops reading: the bridge sheds due audio instead of queueing it; resumes when it reads again', async () => {
    // At real time the bridge sends a 16 kHz call ~43 KB/s, and loopback's kernel buffers take a few MB
    // before the bridge's own buffer grows (measured: no growth within 40 s). So this provider, while it
    // reads nothing, also sends bad frames (~200-byte error reports each) to fill them within seconds.
    const logs = await setup({ SOCKET_HIGH_WATER_BYTES: '4096' });
    const p = await call('pstall-1', {
      codec: 'slin',
      sample_rate: 16000,
      encoding: 'base64',
      chunk_bytes: 640,
    });
    await rig.bot.connection('pstall-1');
    const from = performance.now();
    const heap0 = process.memoryUsage().heapUsed;
    const socket = (p.ws as unknown as { _socket: Socket })._socket;
    socket.pause();
    const second = tonePcm16(500, 16000, 16000);
    const media = (i: number) =>
      p.send({
        event: 'media',
        payload: second.subarray((i % 25) * 640, ((i % 25) + 1) * 640).toString('base64'),
      });
    const bad = JSON.stringify({ event: `x${'y'.repeat(60)}` });
    let shed = 0;
    let badSent = 0;
    // Bounded: at most 500 rounds of 20 ms.
    for (let i = 0; i < 500 && shed === 0; i++) {
      media(i);
      for (let k = 0; k < 500; k++) p.sendRaw(bad);
      badSent += 500;
      await reach(from + (i + 1) * 20);
      if (i % 10 === 0) shed = await metric('voicebridge_shed_chunks_total', ['reason', 'backpressure']);
    }
    console.log(
      `paused provider: shedding after ${((performance.now() - from) / 1000).toFixed(1)} s and ${badSent} bad frames`,
    );
    expect(shed).toBeGreaterThan(0);
    // Every bad frame was still counted, though reports to a socket past its high-water mark are dropped.
    let counted = 0;
    await waitFor(
      async () => {
        counted = await metric('voicebridge_bad_frames_total', ['code', 'unknown_event']);
        return counted >= badSent;
      },
      2_000,
      'every bad frame counted',
      20,
    );
    expect(counted).toBe(badSent);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(64 * 2 ** 20);
    expectControlFlowed(from);
    // Reading again: the backlog is read out and audio flows again on the same call.
    socket.resume();
    await waitFor(() => p.errors().length > 0, 10_000, 'the backlog to be read');
    const n = p.audio.length;
    await pace({ chunkMs: 20, chunks: 50, send: media });
    await waitFor(() => p.audio.length > n + 20, 10_000, 'audio after the provider reads again');
    expect(p.closeCode).toBeUndefined();
    expect(logs.find(/session started/, 'pstall-1')).toHaveLength(1);
  }, 40_000);

  it('caller audio at 2x real time, then in 1 s bursts: all of it reaches the bot; the caller hears real time', async () => {
    await setup({ OUTBOUND_BUFFER_MS: '2000' });
    const p = await call('fast-1');
    const conn = await rig.bot.connection('fast-1');
    const from = performance.now();
    const tone = tonePcm16(500, 8000, 8000 * 6);
    // 3 s of audio at 2x (20 ms chunks every 10 ms), then 3 s in three 1 s bursts a second apart.
    await p.sendPaced(tone.subarray(0, 8000 * 3 * 2), 320, 10);
    for (let b = 0; b < 3; b++) {
      const t = performance.now();
      p.sendRaw(tone.subarray((3 + b) * 16000, (4 + b) * 16000));
      await reach(t + 1000);
    }
    // The bot leg runs at 16 kHz: 6 s of caller audio is 192,000 bytes there (less the resampler's hold).
    await waitFor(() => conn.bytesIn >= 192_000 - 2_000, 5_000, 'all caller audio at the bot');
    const played = p.audio.filter((a) => a.at >= from);
    const elapsed = performance.now() - from;
    const gaps = interArrival(played).raw.sort((a, b) => a - b);
    const p50 = gaps[Math.floor(gaps.length / 2)]!;
    const shed = await metric('voicebridge_shed_chunks_total', ['reason', 'buffer_full']);
    console.log(
      `fast caller: ${played.length} chunks back in ${elapsed.toFixed(0)} ms, gap p50 ${p50.toFixed(1)} ms, ${shed} shed`,
    );
    // Paced at real time whatever the caller's rate: never more than real time plus the lead.
    expect(played.length).toBeLessThanOrEqual(Math.ceil(elapsed / 20) + 5);
    expect(p50).toBeGreaterThan(15);
    expect(p50).toBeLessThan(25);
    expect(p.errors()).toHaveLength(0);
    expectControlFlowed(from);
  }, 30_000);
});

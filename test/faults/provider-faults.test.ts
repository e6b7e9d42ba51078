/**
 * Provider-socket faults injected for real on loopback, each beside a healthy control call: the socket
 * dropped without session_end, a provider that stops reading (its socket paused, so the bridge's
 * bufferedAmount grows), a provider flooding bad frames, and a provider sending at 2x real time and in
 * 1 s bursts. For each: the control call's audio keeps flowing (measured), memory stays bounded, the
 * metrics say what happened and the logs name the session.
 *
 * The bridge runs in a process of its own (fault-rig.ts), and so do the peers that flood (flood-peer.ts):
 * the control call, measured in this process, then judges the bridge, not this process's own sending.
 *
 * Also covered elsewhere: a closed provider socket removes its session (test/media/endpoint.test.ts);
 * backpressure shedding on one queue leaving another alone (test/media/outbound.test.ts, with a fake
 * socket; here with a real one).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { tonePcm16 } from '../helpers/audio.js';
import { FaultRig } from '../helpers/fault-rig.js';
import { FloodPeer, type FloodPeerReport } from '../helpers/flood-peer.js';
import { interArrival } from '../helpers/provider.js';
import { reach, waitFor } from '../helpers/wait.js';

/** The budget of bad frames a second a provider socket has by default (MEDIA_BAD_FRAMES_PER_SEC). */
const BUDGET = loadConfig({}).mediaBadFramesPerSec;

const rig = new FaultRig();
const peers: FloodPeer[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
  await rig.close();
});

/** A provider call in a process of its own (flood-peer.ts), on slin at `sampleRate`, base64 media events. */
async function floodPeer(sessionId: string, sampleRate = 16000): Promise<FloodPeer> {
  const peer = await FloodPeer.open({
    url: rig.bridge.mediaUrl,
    token: await rig.bridge.mediaToken(),
    sessionId,
    sampleRate,
  });
  peers.push(peer);
  return peer;
}

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
    await waitFor(async () => (await metric('voicebridge_sessions')) === 1, 3_000, 'the session to go');
    expect(await rig.session('pdrop-1')).toBeUndefined();
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
    // reads nothing, also sends bad frames (~200-byte error reports each) to fill them within seconds:
    // 4,000 a second (~4 MB in 5 s, measured), under a budget raised to 10,000 for it (the default's
    // flood test is below). Pings would not do: ws cuts a peer with 60 answers to its pings unsent.
    const logs = await setup({ SOCKET_HIGH_WATER_BYTES: '4096', MEDIA_BAD_FRAMES_PER_SEC: '10000' });
    const peer = await floodPeer('pstall-1');
    await rig.bot.connection('pstall-1');
    const from = performance.now();
    const heap0 = await metric('nodejs_heap_size_used_bytes');
    await peer.pause();
    // Bounded: at most 750 ticks of 20 ms.
    await peer.flood({ bad: 80, maxTicks: 750 });
    let shed = 0;
    await waitFor(
      async () => {
        shed = await metric('voicebridge_shed_chunks_total', ['reason', 'backpressure']);
        return shed > 0;
      },
      15_000,
      'due audio to be shed',
      200,
    );
    const flooded = await peer.stop();
    console.log(
      `paused provider: shedding after ${((performance.now() - from) / 1000).toFixed(1)} s and ${flooded.bad} bad frames`,
    );
    expect(shed).toBeGreaterThan(0);
    // Every bad frame was counted, though reports to a socket past its high-water mark are dropped.
    let counted = 0;
    await waitFor(
      async () => {
        counted = await metric('voicebridge_bad_frames_total', ['code', 'unknown_event']);
        return counted >= flooded.bad;
      },
      2_000,
      'every bad frame counted',
      20,
    );
    expect(counted).toBe(flooded.bad);
    expect((await metric('nodejs_heap_size_used_bytes')) - heap0).toBeLessThan(64 * 2 ** 20);
    expectControlFlowed(from);
    // Reading again: the backlog is read out and audio flows again on the same call.
    await peer.resume();
    await waitFor(
      async () => (await peer.report()).errors.unknown_event! > 0,
      10_000,
      'the backlog to be read',
    );
    const n = (await peer.report()).audio;
    await peer.flood({ maxTicks: 50 });
    await waitFor(
      async () => (await peer.report()).audio > n + 20,
      10_000,
      'audio after the provider reads again',
    );
    expect((await peer.report()).closeCode).toBeUndefined();
    expect(logs.find(/session started/, 'pstall-1')).toHaveLength(1);
  }, 40_000);

  it('provider floods bad frames: past the budget its socket closes with 1008, counted and logged once; the control call unharmed', async () => {
    const logs = await setup();
    const peer = await floodPeer('badflood-1', 8000);
    const bot = await rig.bot.connection('badflood-1');
    const from = performance.now();
    // 500 bad frames every 20 ms for 2 s (25,000 a second), a chunk of audio with each batch: what was
    // seen in the wild (35,500 in 1.9 s).
    await peer.flood({ bad: 500, maxTicks: 100 });
    let report: FloodPeerReport | undefined;
    await waitFor(
      async () => {
        report = await peer.report();
        return report.closeCode !== undefined;
      },
      3_000,
      'the flooding socket to close',
      20,
    );
    const closedMs = performance.now() - from;
    // The control call goes on for the rest of the flood's 2 s, and is judged over all of it.
    await reach(from + 2_000);
    const done = await peer.stop();
    console.log(
      `bad-frame flood: closed ${report!.closeCode} after ${closedMs.toFixed(0)} ms, ${done.bad} bad frames sent, ${JSON.stringify(done.errors)} answered`,
    );
    expect(report!.closeCode).toBe(1008);
    // Every bad frame within the budget was answered; the one past it ended the call.
    expect(done.errors).toEqual({ unknown_event: BUDGET, bad_frame_flood: 1 });
    expect(await metric('voicebridge_bad_frames_total', ['code', 'unknown_event'])).toBe(BUDGET + 1);
    expect(await metric('voicebridge_bad_frame_floods_total')).toBe(1);
    const flooded = logs.find(/flooded bad frames/, 'badflood-1');
    expect(flooded).toHaveLength(1);
    expect(flooded[0]).toMatchObject({ code: 'bad_frame_flood', limit: BUDGET });
    await waitFor(() => bot.events.some((e) => e.event === 'session_end'), 3_000, 'the bot to be told');
    expect(bot.events.find((e) => e.event === 'session_end')).toMatchObject({ reason: 'bad_frame_flood' });
    expectControlFlowed(from);
  });

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

/**
 * Bot faults injected for real on loopback, each beside a healthy control call on the same bridge (in a
 * process of its own: the control call's gaps are the bridge's) and the same bot server: the bot unreachable at session_start, dropping mid-call, stalling (it stops
 * reading while the caller talks), and flooding audio far faster than real time. For each: the faulty
 * call stays up, the control call's audio keeps flowing (measured), the bridge's memory stays bounded, the metrics
 * count what happened and the logs name the session.
 *
 * Also covered elsewhere: bot unreachable with retries and error events, and a bot dropping and being
 * redialled (test/media/bot-leg.test.ts); a bot that stops answering pings (same file).
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { tonePcm16 } from '../helpers/audio.js';
import { FaultRig } from '../helpers/fault-rig.js';
import type { TestProvider } from '../helpers/provider.js';
import { quietFor, reach, waitFor } from '../helpers/wait.js';

const rig = new FaultRig();
afterEach(() => rig.close());

const setup = (env: Record<string, string> = {}) => rig.start({ BOT_RETRY_BASE_MS: '50', ...env });
const faultyCall = (id: string, media?: Record<string, unknown>) => rig.call(id, media);

/** Sends `seconds` of a tone at real time on `p` (against the clock), 20 ms chunks of 8 kHz slin. */
async function talk(p: TestProvider, seconds: number, rate = 8000): Promise<void> {
  await p.sendPaced(tonePcm16(500, rate, rate * seconds), (rate / 50) * 2, 20);
}

const metric = (name: string, label?: [string, string]) => rig.metric(name, label);
const expectControlFlowed = (from: number) => rig.expectControlFlowed(from);

describe('bot faults, beside a healthy call', () => {
  it('bot unreachable at session_start: the call stays up with bot_unavailable events; retries counted and logged', async () => {
    const logs = await setup({ BOT_RETRIES: '2' });
    await rig.bot.stopListening();
    const from = performance.now();
    const failedBefore = await metric('voicebridge_bot_connects_total', ['outcome', 'failed']);
    const p = await faultyCall('unreach-1');
    await talk(p, 1.5);
    const last = await p.waitEvent('error', 5_000, (e) => /gave up after 3 attempts/.test(String(e.message)));
    expect(last.code).toBe('bot_unavailable');
    expect(p.closeCode).toBeUndefined();
    expect((await metric('voicebridge_bot_connects_total', ['outcome', 'failed'])) - failedBefore).toBe(3);
    const named = logs.lines.filter((l) => l.session_id === 'unreach-1' && l.level === 40);
    expect(named.length).toBeGreaterThan(0);
    expect(await rig.session('unreach-1')).toBeDefined();
    expectControlFlowed(from);
  });

  it('bot drops mid-call: redialled, audio flows again on the faulty call; the control call never notices', async () => {
    const logs = await setup();
    const p = await faultyCall('drop-1');
    const first = await rig.bot.connection('drop-1');
    const from = performance.now();
    void talk(p, 3);
    await waitFor(() => p.audio.length >= 10, 3_000, 'audio on the faulty call');
    first.ws.terminate();
    await p.waitEvent('error', 3_000, (e) => e.code === 'bot_unavailable');
    const second = await rig.bot.connection('drop-1');
    expect(second).not.toBe(first);
    const before = p.audio.length;
    await waitFor(() => p.audio.length >= before + 20, 3_000, 'audio after the redial');
    expect(p.closeCode).toBeUndefined();
    expect(await metric('voicebridge_bot_connects_total', ['outcome', 'ok'])).toBe(3);
    expect(logs.lines.some((l) => l.session_id === 'drop-1' && /bot/i.test(String(l.msg)))).toBe(true);
    expectControlFlowed(from);
  });

  it('bot stalls (stops reading) while the caller talks: the bridge sheds instead of queueing; memory bounded', async () => {
    // Loopback's kernel buffers take ~4 MB before the bridge's own buffer grows: at real time that is
    // ~40 s of 48 kHz audio, so the caller here talks at 20x real time (1 s of 16 kHz audio every 50 ms)
    // into a 48 kHz bot leg with a 4 KB high-water mark.
    await setup({ BOT_SAMPLE_RATE: '48000', SOCKET_HIGH_WATER_BYTES: '4096', MAX_PAYLOAD_BYTES: '65536' });
    const p = await faultyCall('stall-1', { codec: 'slin', sample_rate: 16000, encoding: 'binary' });
    const conn = await rig.bot.connection('stall-1');
    const from = performance.now();
    const heap0 = await metric('nodejs_heap_size_used_bytes');
    const second = tonePcm16(500, 16000, 16000);
    const metricShed = () => metric('voicebridge_shed_chunks_total', ['reason', 'bot_backpressure']);
    let shed = 0;
    let sent = 0;
    // Bounded: at most 15 s.
    while (shed === 0 && performance.now() - from < 15_000) {
      p.sendRaw(second);
      sent++;
      await reach(from + sent * 50);
      if (sent % 10 === 0) shed = await metricShed();
    }
    console.log(
      `stalled bot: shedding began after ${sent} s of caller audio (${((performance.now() - from) / 1000).toFixed(1)} s); bot read ${conn.bytesIn} bytes`,
    );
    expect(shed).toBeGreaterThan(0);
    expect(conn.bytesIn).toBe(0);
    // Shedding goes on while the caller talks: the bridge holds no more than the high-water mark.
    const more = performance.now();
    for (let i = 1; i <= 10; i++) {
      p.sendRaw(second);
      await reach(more + i * 50);
    }
    await waitFor(async () => (await metricShed()) > shed, 5_000, 'more chunks shed');
    expect((await metric('nodejs_heap_size_used_bytes')) - heap0).toBeLessThan(64 * 2 ** 20);
    expect(p.closeCode).toBeUndefined();
    expectControlFlowed(from);
  }, 30_000);

  it('bot floods 30 s of audio a second for 3 s: the caller hears real time, the excess is shed at OUTBOUND_BUFFER_MS', async () => {
    await setup({ OUTBOUND_BUFFER_MS: '2000' });
    rig.bot.floodSecondsPerSecond = 30;
    rig.bot.floodForMs = 3_000;
    const p = await faultyCall('flood-1');
    const from = performance.now();
    await waitFor(() => p.audio.length > 0, 3_000, 'flood audio');
    // Sent: 3 bursts of 30 s. Played: real time. Buffered: at most 2 s; the rest shed.
    const flooder = await rig.bot.connection('flood-1');
    await waitFor(() => flooder.floodDone, 10_000, 'the end of the flood');
    const during = p.audio.filter((a) => a.at >= from).length;
    const elapsed = performance.now() - from;
    const shed = await metric('voicebridge_shed_chunks_total', ['reason', 'buffer_full']);
    console.log(`flood: ${during} chunks played in ${elapsed.toFixed(0)} ms; ${shed} shed`);
    // 20 ms chunks at real time (plus the 40 ms lead), never a burst of the flood.
    expect(during).toBeLessThanOrEqual(Math.ceil(elapsed / 20) + 5);
    expect(during).toBeGreaterThanOrEqual(Math.floor((elapsed - 500) / 20) * 0.85);
    // 90 s sent, about 3.5 s played and 2 s buffered: the rest (~84 s, 4,200 chunks) was shed.
    expect(shed).toBeGreaterThan(3_500);
    // Once the flood ends the buffer drains within OUTBOUND_BUFFER_MS: nothing was held beyond it.
    const floodEnd = from + 3_000;
    await waitFor(() => performance.now() > floodEnd + 3_000, 5_000, 'the buffer to drain');
    const n = p.audio.length;
    await quietFor(300, 'no audio once the buffer has drained');
    expect(p.audio.length).toBe(n);
    expect(p.closeCode).toBeUndefined();
    expectControlFlowed(from);
  }, 30_000);
});

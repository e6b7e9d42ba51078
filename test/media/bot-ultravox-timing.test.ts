/**
 * The `ultravox` bot dialect's timing, against the Ultravox stand-in, with the bridge in a process of
 * its own (the pacing checks need it; this file is in vitest.config.ts's REAL_TIME list):
 *
 * - the agent's reply comes all at once (the bridge asks for a 30 s client buffer) and reaches the caller
 *   whole, at >= 30 dB SNR, paced (inter-arrival p99 <= 25 ms), for a µ-law 8 kHz and a PCM16 16 kHz
 *   caller;
 * - barge-in: 1 s into a 20 s reply, the stand-in hears speech and sends `playback_clear_buffer`; the
 *   caller gets `clear` within 100 ms (measured at the caller) and no audio of the cut reply after it,
 *   though 19 s of it were queued in the bridge.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import type { UltravoxConnection } from '../../src/emulator/ultravox/connection.js';
import { createUltravoxEmulator, type UltravoxEmulator } from '../../src/emulator/ultravox/server.js';
import { tonePcm16 } from '../helpers/audio.js';
import { type BridgeWatch, watchBridge } from '../helpers/bridge-process.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const KEY = 'uv-timing-key-0123456789';

let emulator: UltravoxEmulator | undefined;
let bridge: ProcessRig | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await emulator?.close();
  emulator = undefined;
});

interface Caller {
  readonly codec: 'pcmu' | 'slin';
  readonly rate: number;
}

interface Call {
  readonly p: TestProvider;
  readonly conn: UltravoxConnection;
  readonly watch: BridgeWatch;
  /** Bytes per ms of the caller's audio. */
  readonly bytesPerMs: number;
  decode(bytes: Buffer): Int16Array;
}

/** A bridge process whose bot is an Ultravox call on the stand-in, and one call on it in `caller`'s format. */
async function call(caller: Caller, replyMs: number): Promise<Call> {
  emulator = createUltravoxEmulator({ apiKey: KEY });
  await emulator.listen(0, '127.0.0.1');
  bridge = await startRig({
    process: true,
    env: {
      BOT_DIALECT: 'ultravox',
      BOT_API_BASE: emulator.base(),
      BOT_API_KEY: KEY,
      BOT_INSTRUCTIONS: `Answer with a tone. reply_ms=${replyMs}`,
      BOT_SETTINGS: JSON.stringify({ firstSpeakerSettings: { user: {} } }),
    },
  });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken(), sampleRunDelay: true });
  providers.push(p);
  await p.start(`ultravox-${caller.codec}-${caller.rate}`, {
    media: { codec: caller.codec, sample_rate: caller.rate },
  });
  const conn = await emulator.waitForSession(1, 10_000);
  const bytesPerMs = (caller.rate / 1000) * (caller.codec === 'slin' ? 2 : 1);
  return {
    p,
    conn,
    watch: watchBridge(bridge.process),
    bytesPerMs,
    decode: (bytes) => {
      if (caller.codec === 'slin')
        return new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
      const out = new Int16Array(bytes.length);
      decodeInto('pcmu', bytes, out);
      return out;
    },
  };
}

/** 1.5 s of a 1 kHz tone then 1 s of silence, in the caller's format, paced 20 ms at a time. */
async function speak(c: Call, caller: Caller): Promise<void> {
  const pcm = Buffer.concat([
    tonePcm16(1000, caller.rate, caller.rate * 1.5, 9000),
    Buffer.alloc(2 * caller.rate),
  ]);
  if (caller.codec === 'slin') {
    await c.p.sendPaced(pcm, (caller.rate / 50) * 2, 20);
    return;
  }
  const ulaw = Buffer.alloc(pcm.length / 2);
  encodeInto('pcmu', new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2), ulaw);
  await c.p.sendPaced(ulaw, caller.rate / 50, 20);
}

const REPLY_MS = 2500;

describe('the ultravox bot dialect, in time', () => {
  it.each([
    { codec: 'pcmu', rate: 8000 },
    { codec: 'slin', rate: 16000 },
  ] as const)(
    "plays the agent's reply, sent all at once, whole and paced to a $codec $rate Hz caller",
    async (caller) => {
      const c = await call(caller, REPLY_MS);
      const spoken = speak(c, caller);
      await waitFor(() => c.p.audio.length > 0, 10_000, 'the reply to start at the caller');
      // The model sends it all at once: by the time the caller has its first chunk, it is all sent.
      await waitFor(() => c.conn.record.replies[0]?.sent_ms === REPLY_MS, 100, 'the whole reply sent');
      await spoken;
      const replyBytes = REPLY_MS * c.bytesPerMs;
      await waitFor(() => c.p.audioBytes().length >= replyBytes, 5_000, 'the whole reply at the caller');
      await quietFor(200, 'audio past the reply (anything more would be extra)');
      const playedMs = c.p.audio.at(-1)!.at - c.p.audio[0]!.at;

      const input = c.conn.record.inputAudio()!;
      expect(input.rate).toBe(caller.rate);
      const inSnr = steadyToneSnrDb(trimSilence(input.pcm, input.rate), 1000, input.rate)!;
      const got = c.decode(c.p.audioBytes());
      const heard = trimSilence(got, caller.rate);
      const outSnr = steadyToneSnrDb(heard, replyToneHz(0), caller.rate)!;
      expectBridgeElsewhere(c.p.audio);
      const { own, worst } = interArrival(c.p.audio);
      const gaps = own.sort((a, b) => a - b);
      const p99 = gaps[Math.ceil(gaps.length * 0.99) - 1]!;
      const samplesPerMs = caller.rate / 1000;
      console.log(
        `ultravox ${caller.codec} ${caller.rate}: input SNR ${inSnr.toFixed(1)} dB, reply SNR ${outSnr.toFixed(1)} dB, reply ${heard.length / samplesPerMs} ms of ${got.length / samplesPerMs} ms received over ${playedMs.toFixed(0)} ms; inter-arrival p50 ${gaps[Math.ceil(gaps.length / 2) - 1]!.toFixed(1)} p99 ${p99.toFixed(1)} max ${gaps.at(-1)!.toFixed(1)} ms; ${worst}; ${c.watch.describe(c.p.audio[0]!.at, c.p.audio.at(-1)!.at)}`,
      );
      expect(inSnr).toBeGreaterThanOrEqual(30);
      expect(outSnr).toBeGreaterThanOrEqual(30);
      // Sent ahead of real time, paced by the bridge: the caller had it over about 2.5 s.
      expect(playedMs).toBeGreaterThan(REPLY_MS - 100);
      // Nothing lost, nothing added (the last chunk may be padded with silence).
      expect(got.length).toBeGreaterThanOrEqual(REPLY_MS * samplesPerMs);
      expect(got.length).toBeLessThan((REPLY_MS + 20) * samplesPerMs);
      expect(Math.abs(heard.length / samplesPerMs - REPLY_MS)).toBeLessThanOrEqual(5);
      expect(p99).toBeLessThanOrEqual(25);
      expect(c.conn.record.notes).toEqual([]);
    },
  );

  it('barge-in: clear at the caller within 100 ms of playback_clear_buffer, and nothing of the cut reply after', async () => {
    const caller = { codec: 'pcmu', rate: 8000 } as const;
    const c = await call(caller, 20_000);
    await speak(c, caller);
    await waitFor(() => c.p.audioBytes().length >= 1000 * c.bytesPerMs, 10_000, '1 s of the reply');
    // The whole 20 s reply is in the bridge's hands by now: the stand-in sends it at once.
    expect(c.conn.record.replies[0]!.sent_ms).toBe(20_000);
    const at = performance.now();
    c.conn.speechStarted();
    const clear = await c.p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    expect(c.conn.record.sent).toContain('playback_clear_buffer');
    const index = c.p.order.findIndex((o) => o.kind === 'event' && o.event === 'clear');
    const receivedMs =
      c.p.order.slice(0, index).reduce((n, o) => n + (o.kind === 'audio' ? o.bytes : 0), 0) / c.bytesPerMs;
    await quietFor(500, 'reply audio after the clear');
    const after = c.p.audio.filter((a) => a.at > clear.at + 5).reduce((n, a) => n + a.data.length, 0);
    console.log(
      `ultravox barge-in: clear ${clearMs.toFixed(1)} ms after the stand-in heard speech (playback_clear_buffer), ${receivedMs} ms of the 20 s reply received before it, ${after / c.bytesPerMs} ms after`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(after).toBe(0);
    expect(c.p.closeCode).toBeUndefined();
  });
});

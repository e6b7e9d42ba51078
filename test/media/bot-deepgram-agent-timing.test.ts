/**
 * The `deepgram-agent` dialect's timing, with the bridge in a process of its own (its pauses are then
 * its own, and this process's are excused): the agent's reply reaches a µ-law caller whole and paced
 * (inter-arrival p99 <= 25 ms) with no DSP on the way, and `UserStartedSpeaking` clears the caller's
 * playback within 100 ms, measured at the caller, with nothing of the cut turn after it though the
 * stand-in sends some late.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { DeepgramAgentConnection } from '../../src/emulator/deepgram-agent/connection.js';
import {
  createDeepgramAgentEmulator,
  type DeepgramAgentEmulator,
  type DeepgramAgentEmulatorOptions,
} from '../../src/emulator/deepgram-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { tonePcm16 } from '../helpers/audio.js';
import { type BridgeWatch, watchBridge } from '../helpers/bridge-process.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let dg: DeepgramAgentEmulator | undefined;
let bridge: ProcessRig | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await dg?.close();
  dg = undefined;
});

/** A bridge in its own process with the stand-in's agent, and a µ-law 8 kHz call on it. */
async function call(
  o: DeepgramAgentEmulatorOptions,
  settings: object,
): Promise<{ p: TestProvider; conn: DeepgramAgentConnection; watch: BridgeWatch }> {
  dg = createDeepgramAgentEmulator({ turnSilenceMs: 300, ...o });
  await dg.listen(0, '127.0.0.1');
  bridge = await startRig({
    process: true,
    env: {
      BOT_DIALECT: 'deepgram-agent',
      BOT_URL: dg.wsUrl(),
      BOT_API_KEY: 'dg-timing-key',
      BOT_SETTINGS: JSON.stringify(settings),
    },
  });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken(), sampleRunDelay: true });
  providers.push(p);
  await p.start('dg-timing', { media: { codec: 'pcmu', sample_rate: 8000 } });
  const conn = await dg.waitForSession(1, 10_000);
  await waitFor(() => conn.record.sent.includes('SettingsApplied'), 5_000, 'the session');
  return { p, conn, watch: watchBridge(bridge.process) };
}

function ulaw(hz: number, ms: number): Buffer {
  const n = ms * 8;
  const pcm = hz === 0 ? Buffer.alloc(n * 2) : tonePcm16(hz, 8000, n, 9000);
  const out = Buffer.alloc(n);
  encodeInto('pcmu', new Int16Array(pcm.buffer, pcm.byteOffset, n), out);
  return out;
}

function decoded(bytes: Buffer): Int16Array {
  const out = new Int16Array(bytes.length);
  decodeInto('pcmu', bytes, out);
  return out;
}

const THINK = { think: { provider: { type: 'open_ai', model: 'gpt-4o-mini' } } };

describe('the deepgram-agent dialect in real time', () => {
  it("carries the agent's whole reply to the caller, paced", async () => {
    const REPLY_MS = 2500;
    const { p, conn, watch } = await call({ replyMs: REPLY_MS }, { agent: THINK });
    await p.sendPaced(Buffer.concat([ulaw(1000, 800), ulaw(0, 700)]), 160, 20);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply sent');
    await waitFor(() => p.audioBytes().length >= REPLY_MS * 8, 5_000, 'the whole reply at the caller');
    await quietFor(200, 'audio past the reply');
    const got = decoded(p.audioBytes());
    const heard = trimSilence(got, 8000);
    const snr = steadyToneSnrDb(heard, replyToneHz(0), 8000)!;
    const input = conn.record.inputAudio()!;
    const inSnr = steadyToneSnrDb(trimSilence(input.pcm, 8000), 1000, 8000)!;
    expectBridgeElsewhere(p.audio);
    const { own, worst } = interArrival(p.audio);
    const gaps = own.sort((a, b) => a - b);
    const p99 = gaps[Math.ceil(gaps.length * 0.99) - 1]!;
    console.log(
      `deepgram-agent: caller tone ${inSnr.toFixed(1)} dB at the agent, reply ${snr.toFixed(1)} dB, ${heard.length / 8} ms of ${REPLY_MS} heard, inter-arrival p50 ${gaps[Math.ceil(gaps.length / 2) - 1]!.toFixed(1)} p99 ${p99.toFixed(1)} max ${gaps.at(-1)!.toFixed(1)} ms; ${worst}; ${watch.describe(p.audio[0]!.at, p.audio.at(-1)!.at)}`,
    );
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(Math.abs(heard.length / 8 - REPLY_MS)).toBeLessThanOrEqual(20);
    expect(got.length).toBeLessThan(REPLY_MS * 8 + 160);
    expect(p99).toBeLessThanOrEqual(25);
    expect(conn.record.notes).toEqual([]);
  });

  it('barge-in: the caller gets clear within 100 ms of UserStartedSpeaking, and nothing of the cut turn after it', async () => {
    const { p, conn } = await call(
      { outputRateFactor: 2, lateAudioChunks: 4, replyMs: 600 },
      { agent: { ...THINK, greeting: 'A long hello. reply_ms=20000' } },
    );
    const line = p.sendPaced(ulaw(0, 4000), 160, 20);
    await waitFor(() => p.audioBytes().length >= 1000 * 8, 10_000, '1 s of the greeting');
    const at = performance.now();
    conn.speechStarted();
    const clear = await p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    await waitFor(() => conn.record.replies[1]?.status === 'completed', 5_000, 'the reply to the new turn');
    await waitFor(
      () => p.audio.filter((a) => a.at > clear.at).reduce((n, a) => n + a.data.length, 0) >= 600 * 8,
      5_000,
      'the new reply at the caller',
    );
    await line;
    const after = decoded(Buffer.concat(p.audio.filter((a) => a.at > clear.at).map((a) => a.data)));
    const heard = trimSilence(after, 8000);
    const snr = steadyToneSnrDb(heard, replyToneHz(1), 8000)!;
    console.log(
      `deepgram-agent barge-in: clear ${clearMs.toFixed(1)} ms after UserStartedSpeaking; ${conn.record.replies[0]!.late_ms} ms of the cut turn sent late; after the clear ${heard.length / 8} ms heard, the new reply's tone at ${snr.toFixed(1)} dB`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(conn.record.replies[0]!.late_ms).toBe(80);
    // Only the new reply after the clear: its tone alone (the cut turn's would spoil the SNR), whole.
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(Math.abs(heard.length / 8 - 600)).toBeLessThanOrEqual(20);
  });
});

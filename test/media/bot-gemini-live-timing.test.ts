/**
 * The `gemini-live` dialect's timing, with the bridge in a process of its own (its pauses are then its
 * own, and this process's are excused): the model's 24 kHz reply reaches a µ-law caller whole and paced
 * (inter-arrival p99 <= 25 ms); `interrupted` clears the caller's playback within 100 ms, measured at the
 * caller, with nothing of the cut turn after it; and a `goAway` during a reply moves the session to a
 * new connection with the caller hearing the reply whole and the next one after, no gap in either
 * over 1 s.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { GeminiConnection } from '../../src/emulator/gemini-live/connection.js';
import {
  createGeminiLiveEmulator,
  type GeminiLiveEmulator,
  type GeminiLiveEmulatorOptions,
} from '../../src/emulator/gemini-live/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { tonePcm16 } from '../helpers/audio.js';
import { type BridgeWatch, watchBridge } from '../helpers/bridge-process.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let gl: GeminiLiveEmulator | undefined;
let bridge: ProcessRig | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await gl?.close();
  gl = undefined;
});

/** A bridge in its own process with the stand-in's model, and a µ-law 8 kHz call on it. */
async function call(
  o: GeminiLiveEmulatorOptions,
  env: Record<string, string> = {},
): Promise<{ p: TestProvider; conn: GeminiConnection; watch: BridgeWatch }> {
  gl = createGeminiLiveEmulator({ turnSilenceMs: 300, ...o });
  await gl.listen(0, '127.0.0.1');
  bridge = await startRig({
    process: true,
    env: {
      BOT_DIALECT: 'gemini-live',
      BOT_URL: gl.wsUrl().split('?')[0]!,
      BOT_API_KEY: 'gemini-timing-key',
      BOT_DTMF: 'respond',
      ...env,
    },
  });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken(), sampleRunDelay: true });
  providers.push(p);
  await p.start('gl-timing', { media: { codec: 'pcmu', sample_rate: 8000 } });
  const conn = await gl.waitForSession(1, 10_000);
  await waitFor(() => conn.record.sent.includes('setupComplete'), 5_000, 'the session');
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

/** The longest run of silence (20 ms blocks under -50 dBFS) in `pcm` at 8 kHz, in ms. */
function longestSilenceMs(pcm: Int16Array): number {
  let run = 0;
  let longest = 0;
  for (let at = 0; at + 160 <= pcm.length; at += 160) {
    let sum = 0;
    for (let i = at; i < at + 160; i++) sum += pcm[i]! * pcm[i]!;
    const quiet = Math.sqrt(sum / 160) < 32768 * 10 ** (-50 / 20);
    run = quiet ? run + 20 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}

describe('the gemini-live dialect in real time', () => {
  it("carries the model's whole reply to the caller, paced", async () => {
    // 5 s of reply: 249 gaps, so the p99 is the third-worst gap and not the second (at 2.5 s, two
    // gaps over 25 ms failed it once in CI while the machine's other load kept the bridge waiting for a
    // CPU 74 ms in all; that load is not the bridge's, a p99 of one gap in a hundred is still its rule).
    const REPLY_MS = 5000;
    const { p, conn, watch } = await call({ replyMs: REPLY_MS });
    await p.sendPaced(Buffer.concat([ulaw(1000, 800), ulaw(0, 700)]), 160, 20);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply sent');
    await waitFor(() => p.audioBytes().length >= REPLY_MS * 8, 10_000, 'the whole reply at the caller');
    await quietFor(200, 'audio past the reply');
    const got = decoded(p.audioBytes());
    const heard = trimSilence(got, 8000);
    const snr = steadyToneSnrDb(heard, replyToneHz(0), 8000)!;
    const input = conn.record.inputAudio()!;
    const inSnr = steadyToneSnrDb(trimSilence(input.pcm, 16000), 1000, 16000)!;
    expectBridgeElsewhere(p.audio);
    const { own, worst } = interArrival(p.audio);
    const gaps = own.sort((a, b) => a - b);
    const p99 = gaps[Math.ceil(gaps.length * 0.99) - 1]!;
    console.log(
      `gemini-live: caller tone ${inSnr.toFixed(1)} dB at the model, reply ${snr.toFixed(1)} dB, ${heard.length / 8} ms of ${REPLY_MS} heard, inter-arrival p50 ${gaps[Math.ceil(gaps.length / 2) - 1]!.toFixed(1)} p99 ${p99.toFixed(1)} max ${gaps.at(-1)!.toFixed(1)} ms; ${worst}; ${watch.describe(p.audio[0]!.at, p.audio.at(-1)!.at)}`,
    );
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(Math.abs(heard.length / 8 - REPLY_MS)).toBeLessThanOrEqual(20);
    expect(got.length).toBeLessThan(REPLY_MS * 8 + 160);
    expect(p99).toBeLessThanOrEqual(25);
    expect(conn.record.notes).toEqual([]);
  });

  it('barge-in: the caller gets clear within 100 ms of interrupted, and nothing of the cut turn after it', async () => {
    const { p, conn } = await call(
      { outputRateFactor: 2 },
      { BOT_INSTRUCTIONS: 'A long hello. reply_ms=20000' },
    );
    p.send({ event: 'dtmf', digit: '1' });
    const line = p.sendPaced(ulaw(0, 4000), 160, 20);
    await waitFor(() => p.audioBytes().length >= 1000 * 8, 10_000, '1 s of the reply');
    const at = performance.now();
    conn.speechStarted();
    const clear = await p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    await line;
    await waitFor(
      () => p.audio.filter((a) => a.at > clear.at).reduce((n, a) => n + a.data.length, 0) >= 600 * 8,
      10_000,
      'the new reply at the caller',
    );
    const after = decoded(Buffer.concat(p.audio.filter((a) => a.at > clear.at).map((a) => a.data)));
    const heard = trimSilence(after, 8000);
    const snr = steadyToneSnrDb(heard.subarray(0, 600 * 8), replyToneHz(1), 8000)!;
    console.log(
      `gemini-live barge-in: clear ${clearMs.toFixed(1)} ms after interrupted; after the clear the new reply's tone at ${snr.toFixed(1)} dB`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(conn.record.replies[0]!.status).toBe('interrupted');
    // Only the new reply after the clear: its tone alone (the cut turn's would spoil the SNR).
    expect(snr).toBeGreaterThanOrEqual(30);
  });

  it('goAway during a reply: the reply plays whole, the session resumes on a new connection, and the next reply follows with no gap over 1 s', async () => {
    const { p, conn } = await call({ replyMs: 2000, outputRateFactor: 1 });
    p.send({ event: 'dtmf', digit: '1' });
    await waitFor(() => p.audioBytes().length >= 500 * 8, 5_000, 'the reply under way');
    conn.goAway(20_000);
    const second = await gl!.waitForSession(2, 10_000);
    // The next digit as soon as the new connection is there (before its setup completes, it is held).
    p.send({ event: 'dtmf', digit: '2' });
    await waitFor(() => second.record.sent.includes('setupComplete'), 5_000, 'the second setup');
    await waitFor(() => p.audioBytes().length >= 4000 * 8, 10_000, 'both replies at the caller');
    await quietFor(200, 'audio past the replies');
    const got = decoded(p.audioBytes());
    const heard = trimSilence(got, 8000);
    const gapMs = longestSilenceMs(heard);
    const firstSnr = steadyToneSnrDb(heard.subarray(0, 1900 * 8), replyToneHz(0), 8000)!;
    const nextSnr = steadyToneSnrDb(heard.subarray(heard.length - 1900 * 8), replyToneHz(1), 8000)!;
    console.log(
      `gemini-live resumption during a reply: ${heard.length / 8} ms heard of 4000, longest silence between ${gapMs} ms, first reply ${firstSnr.toFixed(1)} dB, next (on the new connection) ${nextSnr.toFixed(1)} dB`,
    );
    expect(second.record.resumed_from).toBe(conn.record.id);
    expect(second.record.texts.map((t) => t.text)).toEqual(['[DTMF 2]']);
    expect(second.record.notes).toEqual([]);
    expect(conn.record.replies[0]!.status).toBe('completed');
    expect(firstSnr).toBeGreaterThanOrEqual(30);
    expect(nextSnr).toBeGreaterThanOrEqual(30);
    expect(gapMs).toBeLessThanOrEqual(1000);
  });
});

/**
 * The `elevenlabs-agent` dialect's timing, with the bridge in a process of its own (its pauses are then
 * its own, and this process's are excused): the agent's reply reaches a µ-law caller whole and paced
 * (inter-arrival p99 <= 25 ms) through the DSP from the agent's PCM16 16 kHz, and an `interruption`
 * clears the caller's playback within 100 ms, measured at the caller, with nothing of the cut turn after.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { ElevenLabsConversation } from '../../src/emulator/elevenlabs-agent/connection.js';
import {
  createElevenLabsEmulator,
  type ElevenLabsEmulator,
  type ElevenLabsEmulatorOptions,
} from '../../src/emulator/elevenlabs-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { tonePcm16 } from '../helpers/audio.js';
import { type BridgeWatch, watchBridge } from '../helpers/bridge-process.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const AGENT = 'agent_01jtiming000000000000000';

let el: ElevenLabsEmulator | undefined;
let bridge: ProcessRig | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await el?.close();
  el = undefined;
});

/** A bridge in its own process with the stand-in's agent, and a µ-law 8 kHz call on it. */
async function call(
  o: ElevenLabsEmulatorOptions,
): Promise<{ p: TestProvider; conn: ElevenLabsConversation; watch: BridgeWatch }> {
  el = createElevenLabsEmulator({ pingIntervalMs: 3000, turnSilenceMs: 300, ...o });
  await el.listen(0, '127.0.0.1');
  bridge = await startRig({
    process: true,
    env: {
      BOT_DIALECT: 'elevenlabs-agent',
      BOT_URL: `${el.base().replace(/^http/, 'ws')}/v1/convai/conversation`,
      BOT_AGENT_ID: AGENT,
    },
  });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken(), sampleRunDelay: true });
  providers.push(p);
  await p.start('el-timing', { media: { codec: 'pcmu', sample_rate: 8000 } });
  const conn = (await el.waitForSession(1, 10_000)) as ElevenLabsConversation;
  await waitFor(() => conn.clientData !== null, 5_000, 'the conversation');
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

describe('the elevenlabs-agent dialect in real time', () => {
  it("carries the agent's whole reply to the caller, paced", async () => {
    const REPLY_MS = 2500;
    const { p, conn, watch } = await call({
      agents: { [AGENT]: { replyMs: REPLY_MS, inputFormat: 'pcm_16000', outputFormat: 'pcm_16000' } },
    });
    await p.sendPaced(Buffer.concat([ulaw(1000, 800), ulaw(0, 700)]), 160, 20);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply sent');
    await waitFor(() => p.audioBytes().length >= REPLY_MS * 8, 5_000, 'the whole reply at the caller');
    await quietFor(200, 'audio past the reply');
    const got = decoded(p.audioBytes());
    const heard = trimSilence(got, 8000);
    const snr = steadyToneSnrDb(heard, replyToneHz(0), 8000)!;
    expectBridgeElsewhere(p.audio);
    const { own, worst } = interArrival(p.audio);
    const gaps = own.sort((a, b) => a - b);
    const p99 = gaps[Math.ceil(gaps.length * 0.99) - 1]!;
    console.log(
      `elevenlabs-agent: reply ${snr.toFixed(1)} dB, ${heard.length / 8} ms of ${REPLY_MS} heard, inter-arrival p50 ${gaps[Math.ceil(gaps.length / 2) - 1]!.toFixed(1)} p99 ${p99.toFixed(1)} max ${gaps.at(-1)!.toFixed(1)} ms; ${worst}; ${watch.describe(p.audio[0]!.at, p.audio.at(-1)!.at)}`,
    );
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(Math.abs(heard.length / 8 - REPLY_MS)).toBeLessThanOrEqual(20);
    expect(p99).toBeLessThanOrEqual(25);
    expect(conn.record.notes).toEqual([]);
  });

  it('barge-in: the caller gets clear within 100 ms of the interruption, and nothing of the cut turn after it', async () => {
    const { p, conn } = await call({
      outputRateFactor: 2,
      lateAudioChunks: 4,
      agents: {
        [AGENT]: {
          firstMessageMs: 20_000,
          replyMs: 600,
          inputFormat: 'pcm_16000',
          outputFormat: 'pcm_16000',
        },
      },
    });
    const line = p.sendPaced(ulaw(0, 4000), 160, 20);
    await waitFor(() => p.audioBytes().length >= 1000 * 8, 10_000, '1 s of the greeting');
    const at = performance.now();
    conn.speechStarted();
    const clear = await p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    await waitFor(() => conn.record.replies[1]?.status === 'completed', 5_000, 'the reply to the new turn');
    await quietFor(1200, 'the reply to play out');
    await line;
    const i = p.order.findIndex((o) => o.kind === 'event' && o.event === 'clear');
    const bytes = p.order.slice(i + 1).reduce((n, o) => n + (o.kind === 'audio' ? o.bytes : 0), 0);
    const all = p.audioBytes();
    const after = trimSilence(decoded(all.subarray(all.length - bytes)), 8000);
    const cut = conn.record.replies[0]!;
    const reply = conn.record.replies[1]!;
    console.log(
      `elevenlabs-agent: clear ${clearMs.toFixed(1)} ms after the interruption; ${cut.late_ms} ms of the cut turn sent late; after the clear ${after.length / 8} ms heard (the reply is ${reply.planned_ms} ms)`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(cut.late_ms).toBeGreaterThan(0);
    expect(Math.abs(after.length / 8 - reply.planned_ms)).toBeLessThanOrEqual(20);
    expect(steadyToneSnrDb(after, reply.tone_hz, 8000)!).toBeGreaterThanOrEqual(30);
  });
});

/**
 * The bots users already have, behind the bridge, on calls from a provider (a real ws client that acks
 * marks as their audio arrives, as a provider that plays on arrival would):
 *
 * - `twilio`: an OpenAI Agents SDK voice agent (`TwilioRealtimeTransportLayer` from
 *   @openai/agents-extensions, a real independent Twilio-dialect server), its model connection pointed at
 *   the Realtime stand-in;
 * - `openai-realtime`: the bridge itself a client of the stand-in.
 *
 * For each: the stand-in hears the caller's tone (SNR after µ-law >= 30 dB); the model's reply reaches the
 * caller whole and paced (inter-arrival p99 <= 25 ms); and barge-in: during a long reply the stand-in
 * emits speech_started, the caller gets `clear` within 100 ms, and the truncate's audio_end_ms is within
 * 60 ms of the reply audio the caller had actually received. That last figure is what shows the marks
 * are echoed (or the audio reckoned) at the right time.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { RealtimeConnection } from '../../src/emulator/realtime/connection.js';
import { createRealtimeEmulator, type RealtimeEmulator } from '../../src/emulator/realtime/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { tonePcm16 } from '../helpers/audio.js';
import { type BridgeWatch, watchBridge } from '../helpers/bridge-process.js';
import { interArrival, TestProvider } from '../helpers/provider.js';
import { type ProcessRig, startRig } from '../helpers/rig.js';
import { expectBridgeElsewhere } from '../helpers/schedstat.js';
import { quietFor, waitFor } from '../helpers/wait.js';

type Dialect = 'twilio' | 'openai-realtime';

let emulator: RealtimeEmulator | undefined;
let agents: ChildProcess | undefined;
let bridge: ProcessRig | undefined;
const providers: TestProvider[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  if (agents !== undefined && agents.exitCode === null && agents.signalCode === null) {
    const exited = once(agents, 'exit');
    agents.kill('SIGTERM');
    const t = setTimeout(() => agents?.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(t);
  }
  agents = undefined;
  await emulator?.close();
  emulator = undefined;
});

/**
 * A Twilio-dialect bot server: the Agents SDK bot of examples/, run as its users run it
 * (`npm run example:agents-bot`), in a process of its own, its model the stand-in in this one. Its own
 * work (the SDK handles each of the reply's deltas) then does not hold up the bridge's pacing here, as it
 * would not in a real deployment.
 */
async function agentServer(modelUrl: string, instructions: string): Promise<string> {
  const main = fileURLToPath(new URL('../../examples/agents-sdk-bot/main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', main], {
    env: {
      ...process.env,
      PORT: '0',
      REALTIME_URL: modelUrl,
      OPENAI_API_KEY: 'sk-test-key',
      INSTRUCTIONS: instructions,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  agents = child;
  let out = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the agents bot did not start within 20 s: ${out}`)),
      20_000,
    );
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening at (ws:\/\/\S+)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the agents bot exited (${code}) before listening: ${out}`));
    });
  });
}

interface Call {
  readonly p: TestProvider;
  /** The bridge's own collections and CPU times from the call's start. */
  readonly watch: BridgeWatch;
  readonly conn: RealtimeConnection;
  /** Bytes per ms of what the caller receives. */
  readonly bytesPerMs: number;
  decode(bytes: Buffer): Int16Array;
}

/**
 * A bridge with `dialect`'s bot, and one µ-law 8 kHz call on it whose bot is connected to the stand-in.
 * The bridge runs in a process of its own, as the Agents SDK bot does: the pacing check then sees its
 * pauses, and excuses only this (receiving) process's.
 */
async function call(dialect: Dialect, replyMs: number, outputRateFactor = 4): Promise<Call> {
  emulator = createRealtimeEmulator({ outputRateFactor });
  await emulator.listen(0);
  const instructions = `Reply with a tone. reply_ms=${replyMs}`;
  const env: Record<string, string> =
    dialect === 'twilio'
      ? { BOT_URL: await agentServer(emulator.wsUrl('gpt-realtime'), instructions), BOT_DIALECT: 'twilio' }
      : {
          BOT_URL: emulator.wsUrl('gpt-realtime'),
          BOT_DIALECT: 'openai-realtime',
          BOT_API_KEY: 'sk-test-key',
          BOT_INSTRUCTIONS: instructions,
        };
  bridge = await startRig({ process: true, env });
  const p = new TestProvider(bridge.mediaUrl, { token: await bridge.mediaToken(), sampleRunDelay: true });
  providers.push(p);
  // A provider that plays audio as it arrives: playback reaches a mark when the mark arrives.
  p.ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (isBinary) return;
    const ev = JSON.parse(data.toString('utf8')) as { event: string; name?: string };
    if (ev.event === 'mark') p.send({ event: 'mark', name: ev.name });
  });
  await p.start(`${dialect}-call`, { media: { codec: 'pcmu', sample_rate: 8000 } });
  const conn = await emulator.waitForSession(1, 10_000);
  await waitFor(() => conn.record.sent.includes('session.updated'), 5_000, 'the model session to be set up');
  return {
    p,
    watch: watchBridge(bridge.process),
    conn,
    bytesPerMs: 8,
    decode: (bytes) => {
      const out = new Int16Array(bytes.length);
      decodeInto('pcmu', bytes, out);
      return out;
    },
  };
}

/** 1.5 s of a 1 kHz tone then 1 s of silence, µ-law, paced 20 ms at a time. */
async function speak(p: TestProvider): Promise<void> {
  const pcm = Buffer.concat([tonePcm16(1000, 8000, 12_000, 9000), Buffer.alloc(16_000)]);
  const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length / 2);
  const ulaw = Buffer.alloc(samples.length);
  encodeInto('pcmu', samples, ulaw);
  await p.sendPaced(ulaw, 160, 20);
}

const REPLY_MS = 2500;

describe.each(['twilio', 'openai-realtime'] as const)('the %s bot dialect', (dialect) => {
  it("carries the caller's tone to the model and the model's whole reply back, paced", async () => {
    // 2.5 s of reply: 124 gaps, so the p99 below is a p99 and not the one worst gap of a shared machine.
    const c = await call(dialect, REPLY_MS);
    await speak(c.p);
    await waitFor(
      () => c.conn.record.responses[0]?.status === 'completed',
      10_000,
      'the reply to be sent',
    ).catch((err: unknown) => {
      console.log(JSON.stringify(c.conn.record.detail()).slice(0, 3000));
      throw err;
    });
    const replyBytes = REPLY_MS * c.bytesPerMs;
    await waitFor(() => c.p.audioBytes().length >= replyBytes, 5_000, 'the whole reply at the caller');
    await quietFor(200, 'audio past the reply (anything more would be extra)');

    const input = c.conn.record.inputAudio()!;
    expect(input.format).toBe('audio/pcmu');
    const inSnr = steadyToneSnrDb(trimSilence(input.pcm, input.rate), 1000, input.rate)!;
    const got = c.decode(c.p.audioBytes());
    const heard = trimSilence(got, 8000);
    const outSnr = steadyToneSnrDb(heard, replyToneHz(0), 8000)!;
    expectBridgeElsewhere(c.p.audio);
    const { own, worst } = interArrival(c.p.audio);
    const gaps = own.sort((a, b) => a - b);
    const p99 = gaps[Math.ceil(gaps.length * 0.99) - 1]!;
    console.log(
      `${dialect}: input SNR ${inSnr.toFixed(1)} dB, reply SNR ${outSnr.toFixed(1)} dB, reply ${heard.length / 8} ms of ${got.length / 8} ms received, inter-arrival p50 ${gaps[Math.ceil(gaps.length / 2) - 1]!.toFixed(1)} p99 ${p99.toFixed(1)} max ${gaps.at(-1)!.toFixed(1)} ms; ${worst}; ${c.watch.describe(c.p.audio[0]!.at, c.p.audio.at(-1)!.at)}`,
    );
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(outSnr).toBeGreaterThanOrEqual(30);
    // Nothing lost, nothing added: the reply's samples (the last chunk may be padded with silence).
    expect(got.length).toBeGreaterThanOrEqual(replyBytes);
    expect(got.length).toBeLessThan(replyBytes + 160);
    expect(Math.abs(heard.length - REPLY_MS * 8)).toBeLessThanOrEqual(40);
    expect(p99).toBeLessThanOrEqual(25);
    expect(c.conn.record.sent).not.toContain('error');
  });

  it('barge-in: clear within 100 ms, and the truncate at the audio the caller had received', async () => {
    const c = await call(dialect, 20_000, 2);
    await speak(c.p);
    await waitFor(() => c.p.audioBytes().length >= 1000 * c.bytesPerMs, 10_000, '1 s of the reply');
    const at = performance.now();
    c.conn.speechStarted(undefined, true);
    const clear = await c.p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    // What the caller received of the reply before the clear: every audio frame that arrived before it.
    const index = c.p.order.findIndex((o) => o.kind === 'event' && o.event === 'clear');
    const receivedMs =
      c.p.order.slice(0, index).reduce((n, o) => n + (o.kind === 'audio' ? o.bytes : 0), 0) / c.bytesPerMs;
    await waitFor(() => c.conn.record.truncates.length === 1, 3_000, 'the truncate');
    const t = c.conn.record.truncates[0]!;
    console.log(
      `${dialect}: clear ${clearMs.toFixed(1)} ms after speech_started; truncate audio_end_ms ${String(t.audio_end_ms)} against ${receivedMs} ms received (${t.item_audio_ms} ms sent by the model)`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(t.accepted).toBe(true);
    expect(Math.abs((t.audio_end_ms as number) - receivedMs)).toBeLessThanOrEqual(60);
    // And the reply stops at the caller. The bridge's own client drops the rest of a cut reply; an agent
    // behind the twilio dialect decides for itself, and the SDK still forwards the deltas it had in hand
    // when it interrupted (a real Twilio would play them too), so there a short tail is allowed.
    await quietFor(300, 'reply audio after the clear');
    const after = c.p.audio.filter((a) => a.at > clear.at + 5).reduce((n, a) => n + a.data.length, 0);
    console.log(`${dialect}: ${after / c.bytesPerMs} ms of audio reached the caller after the clear`);
    expect(after / c.bytesPerMs).toBeLessThanOrEqual(dialect === 'twilio' ? 300 : 0);
  });
});

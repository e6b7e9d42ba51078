/**
 * The `gemini-live` bot dialect behind a real bridge, against the Gemini Live stand-in on loopback
 * (src/emulator/gemini-live/), calls placed in our own protocol:
 *
 * - handshake: a tenant's bot as PUT /v1/media-stream takes it; `setup` the first message, exactly
 *   (model, modality, voice, system instruction, activity detection, `sessionResumption: {}`), the key as
 *   `x-goog-api-key`, and nothing else before `setupComplete`: the caller's audio of that time held and
 *   sent after it, bit-exact;
 * - formats: the caller's audio as `audio/pcm;rate=16000` (a 16 kHz caller passes with no resampling,
 *   a µ-law 8 kHz one is decoded and resampled), the model's 24 kHz audio at the caller (tone SNR >= 30
 *   dB, whole);
 * - DTMF as `realtimeInput.text` in each mode; hang-up by the model's normal close after its audio;
 * - barge-in: the caller's playback cleared within 100 ms of `interrupted`, and the next turn played;
 *   late audio of the cut turn (a raw server's) dropped until its `turnComplete`;
 * - goAway: the session moves to a new connection resuming with the latest handle, the caller's audio
 *   of the move held and sent there (nothing lost, bit-exact across the two connections), within 1 s;
 *   mid-turn, the move waits for the turn's end; near the deadline, it goes before the time runs out;
 * - faults: refused and dropped connections redialled within BOT_RETRIES with `bot_unavailable`,
 *   malformed and unknown messages skipped and counted, close reasons logged, a refused handle
 *   forgotten, a neighbour call untouched, the key in no log line or read.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { encodeInto } from '../../src/audio/codec.js';
import { generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { GeminiConnection } from '../../src/emulator/gemini-live/connection.js';
import {
  createGeminiLiveEmulator,
  type GeminiLiveEmulator,
  type GeminiLiveEmulatorOptions,
} from '../../src/emulator/gemini-live/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { DIGIT_RUN_MS } from '../../src/media/bot/digit-runs.js';
import { AUDIO_CHUNK_MS, MOVE_LEAD_MS } from '../../src/media/bot/gemini-live.js';
import { createPipeline } from '../../src/pipeline/index.js';
import type { AudioPipeline, LegSpec } from '../../src/pipeline/types.js';
import { call as http } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { dominantHz } from '../helpers/s2s.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const KEY = 'AIza-gemini-test-key-0123456789';

const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function standIn(o: GeminiLiveEmulatorOptions = {}): Promise<GeminiLiveEmulator> {
  const em = createGeminiLiveEmulator({ apiKey: KEY, ...o });
  await em.listen(0);
  closers.push(() => em.close());
  return em;
}

/** The stand-in's socket URL without a key in it: the key goes as the header. */
const socketUrl = (em: GeminiLiveEmulator) => em.wsUrl().split('?')[0]!;

/** The real inline pipeline, recording the spec of every leg it opens. */
function recordingPipeline(): { pipeline: AudioPipeline; specs: LegSpec[] } {
  const real = createPipeline({ workers: 0 });
  const specs: LegSpec[] = [];
  return {
    specs,
    pipeline: {
      workers: 0,
      open: (spec, sink, options) => {
        specs.push(spec);
        return real.open(spec, sink, options);
      },
      close: () => real.close(),
    },
  };
}

async function bridge(
  env: Record<string, string>,
  o: { pipeline?: AudioPipeline } = {},
): Promise<InProcessRig> {
  const rig = await startRig({
    env,
    log: 'debug',
    bridgeOptions: { ...(o.pipeline !== undefined && { pipeline: o.pipeline }) },
  });
  closers.push(() => rig.close());
  return rig;
}

/** The environment's bot: the dialect at the stand-in, with the key. */
function envBot(em: GeminiLiveEmulator, extra: Record<string, string> = {}): Record<string, string> {
  return { BOT_URL: socketUrl(em), BOT_DIALECT: 'gemini-live', BOT_API_KEY: KEY, ...extra };
}

async function provider(
  rig: InProcessRig,
  id: string,
  media: Record<string, unknown>,
  tenant?: string,
): Promise<TestProvider> {
  const p = new TestProvider(rig.mediaUrl, {
    token: await rig.mediaToken(tenant === undefined ? {} : { tenant, secret: `${tenant}-media-secret` }),
  });
  closers.push(() => p.close());
  await p.start(id, { media });
  return p;
}

const ready = (c: GeminiConnection) => c.record.sent.includes('setupComplete');
const pcmBytes = (pcm: Int16Array) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
const pcmOf = (b: Buffer) => new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));

/** `toneMs` of a tone at `hz` then `silenceMs` of silence, at `rate`. */
function utterance(hz: number, rate: number, toneMs: number, silenceMs: number): Int16Array {
  const pcm = new Int16Array(Math.round((rate * (toneMs + silenceMs)) / 1000));
  pcm.set(generateTone(hz, rate, Math.round((rate * toneMs) / 1000), 0.3));
  return pcm;
}

function ulaw(pcm: Int16Array): Buffer {
  const out = Buffer.alloc(pcm.length);
  encodeInto('pcmu', pcm, out);
  return out;
}

/** The lines the bridge logged, parsed. */
const lines = (rig: InProcessRig) => rig.logs.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('the gemini-live dialect: handshake and formats', () => {
  it("a tenant's bot: setup first, exactly; the key as x-goog-api-key; nothing before setupComplete; a 16 kHz caller is not resampled", async () => {
    const em = await standIn({ setupDelayMs: 300 });
    const rec = recordingPipeline();
    const rig = await bridge({}, { pipeline: rec.pipeline });
    const instructions = 'Answer briefly. reply_ms=800';
    const put = await http(rig.http, 'PUT', '/v1/media-stream', {
      token: await rig.restToken(['media:manage'], 'acme'),
      body: {
        media_ws_url: 'wss://bridge.example/v1/media',
        media_secret: 'acme-media-secret',
        bot: {
          dialect: 'gemini-live',
          url: socketUrl(em),
          api_key: KEY,
          model: 'gemini-2.5-flash-native-audio-preview-12-2025',
          voice: 'Puck',
          instructions,
        },
      },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.text).not.toContain(KEY);

    const p = await provider(rig, 'gl-handshake', { codec: 'slin', sample_rate: 16000 }, 'acme');
    // The caller speaks at once: its first words wait for setupComplete (300 ms here).
    const said = utterance(1000, 16000, 800, 900);
    await p.sendPaced(pcmBytes(said), 640, 20);
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply');
    await waitFor(() => p.audioBytes().length >= 800 * 32, 5_000, 'the whole reply at the caller');

    expect(conn.record.received[0]!.type).toBe('setup');
    expect(conn.record.received[0]!.message).toEqual({
      setup: {
        model: 'models/gemini-2.5-flash-native-audio-preview-12-2025',
        generationConfig: {
          responseModalities: ['AUDIO'],
          speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } },
        },
        systemInstruction: { parts: [{ text: instructions }] },
        realtimeInputConfig: {
          automaticActivityDetection: { disabled: false },
          activityHandling: 'START_OF_ACTIVITY_INTERRUPTS',
        },
        sessionResumption: {},
      },
    });
    expect(conn.record.key_via).toBe('x-goog-api-key');
    // Nothing broke the protocol: nothing before setupComplete, every message one Google takes.
    expect(conn.record.notes).toEqual([]);
    expect(conn.record.sent[0]).toBe('setupComplete');
    expect(new Set(conn.record.received.slice(1).map((m) => m.type))).toEqual(new Set(['realtimeInput']));

    // The caller's 16 kHz audio reaches the model as it was sent, the held part first.
    expect(rec.specs.map((s) => [s.from, s.to])).toEqual([
      [
        { codec: 'slin', rate: 24000 },
        { codec: 'slin', rate: 16000 },
      ],
      [
        { codec: 'slin', rate: 16000 },
        { codec: 'slin', rate: 16000 },
      ],
    ]);
    const input = conn.record.inputAudio()!;
    expect(input.format).toBe('audio/pcm;rate=16000');
    // Whole but for the last 40 ms message, still being filled when the caller stopped.
    expect(said.length - input.pcm.length).toBeGreaterThanOrEqual(0);
    expect(said.length - input.pcm.length).toBeLessThan(16 * AUDIO_CHUNK_MS);
    expect(pcmBytes(input.pcm).equals(pcmBytes(said.subarray(0, input.pcm.length)))).toBe(true);

    const heard = trimSilence(pcmOf(p.audioBytes()), 16000);
    const snr = steadyToneSnrDb(heard, replyToneHz(0), 16000)!;
    console.log(
      `gemini-live, 16 kHz caller: reply ${heard.length / 16} ms at the caller, SNR ${snr.toFixed(1)} dB`,
    );
    expect(Math.abs(heard.length / 16 - 800)).toBeLessThanOrEqual(20);
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(rig.logs.join('\n')).not.toContain(KEY);
    const get = await http(rig.http, 'GET', '/v1/media-stream', {
      token: await rig.restToken(['media:manage'], 'acme'),
    });
    expect(get.text).not.toContain(KEY);
    expect((get.body.bot as Record<string, unknown>).api_key_hint).toBe(`****${KEY.slice(-4)}`);
  });

  it('a µ-law 8 kHz caller: decoded and resampled to 16 kHz toward the model, the reply back at >= 30 dB', async () => {
    const em = await standIn({ replyMs: 700 });
    const rec = recordingPipeline();
    const rig = await bridge(envBot(em), { pipeline: rec.pipeline });
    const p = await provider(rig, 'gl-ulaw', { codec: 'pcmu', sample_rate: 8000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(conn), 5_000, 'setupComplete');
    await p.sendPaced(ulaw(utterance(1000, 8000, 700, 900)), 160, 20);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply');
    await waitFor(() => p.audioBytes().length >= 700 * 8, 5_000, 'the reply at the caller');
    expect(rec.specs.map((s) => [s.from, s.to])).toEqual([
      [
        { codec: 'slin', rate: 24000 },
        { codec: 'pcmu', rate: 8000 },
      ],
      [
        { codec: 'pcmu', rate: 8000 },
        { codec: 'slin', rate: 16000 },
      ],
    ]);
    const input = conn.record.inputAudio()!;
    const inSnr = steadyToneSnrDb(trimSilence(input.pcm, 16000), 1000, 16000)!;
    const out = new Int16Array(p.audioBytes().length);
    const { decodeInto } = await import('../../src/audio/codec.js');
    decodeInto('pcmu', p.audioBytes(), out);
    const outSnr = steadyToneSnrDb(trimSilence(out, 8000), replyToneHz(0), 8000)!;
    console.log(
      `gemini-live, µ-law caller: caller tone ${inSnr.toFixed(1)} dB at the model, reply ${outSnr.toFixed(1)} dB at the caller`,
    );
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(outSnr).toBeGreaterThanOrEqual(30);
    expect(conn.record.notes).toEqual([]);
  });

  it('BOT_URL unset: the dialect dials Google itself; the model defaults; turn_detection is refused naming the dialect', async () => {
    const { loadConfig } = await import('../../src/config.js');
    const config = loadConfig({ BOT_DIALECT: 'gemini-live', BOT_API_KEY: KEY });
    expect(config.bot.url).toBe(
      'wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent',
    );
    expect(() => loadConfig({ BOT_DIALECT: 'gemini-live', BOT_TURN_DETECTION: 'none' })).toThrow(
      /BOT_TURN_DETECTION does not apply to dialect gemini-live/,
    );
  });
});

describe('the gemini-live dialect: digits and hang-up', () => {
  async function digits(mode: string | undefined) {
    const em = await standIn({ replyMs: 200 });
    const rig = await bridge(envBot(em, mode === undefined ? {} : { BOT_DTMF: mode }));
    const p = await provider(rig, `gl-dtmf-${mode ?? 'default'}`, { codec: 'slin', sample_rate: 16000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(conn), 5_000, 'setupComplete');
    for (const d of ['1', '2', '3']) p.send({ event: 'dtmf', digit: d });
    return { conn, texts: () => conn.record.texts.map((t) => [t.type, t.text]) };
  }

  it('text (default): a run of digits as one realtimeInput.text once the run ends', async () => {
    const { texts, conn } = await digits(undefined);
    await quietFor(DIGIT_RUN_MS - 300, 'the run to end');
    expect(texts()).toEqual([]);
    await waitFor(() => texts().length === 1, 2_000, 'the run');
    expect(texts()).toEqual([['realtimeInput.text', '[DTMF 1] [DTMF 2] [DTMF 3]']]);
    expect(conn.record.notes).toEqual([]);
  });

  it('respond: each digit at once', async () => {
    const { texts } = await digits('respond');
    await waitFor(() => texts().length === 3, 2_000, 'three texts');
    expect(texts()).toEqual([
      ['realtimeInput.text', '[DTMF 1]'],
      ['realtimeInput.text', '[DTMF 2]'],
      ['realtimeInput.text', '[DTMF 3]'],
    ]);
  });

  it('ignore: nothing', async () => {
    const { texts } = await digits('ignore');
    await quietFor(DIGIT_RUN_MS + 300, 'any text for the digits');
    expect(texts()).toEqual([]);
  });

  it("the model's normal close ends the call once its audio has played; a close before setupComplete is redialled", async () => {
    const em = await standIn({ replyMs: 1500, outputRateFactor: 0 });
    const rig = await bridge(envBot(em, { BOT_DTMF: 'respond' }));
    const p = await provider(rig, 'gl-hangup', { codec: 'slin', sample_rate: 16000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(conn), 5_000, 'setupComplete');
    // A digit asks for a reply; it is all sent at once, and the model closes before most of it played.
    p.send({ event: 'dtmf', digit: '9' });
    await waitFor(() => conn.record.sent.includes('serverContent.generationComplete'), 5_000, 'the reply');
    conn.close(1000, 'goodbye');
    const end = await p.waitEvent('session_end', 5_000);
    const heardMs = p.audio.filter((a) => a.at <= end.at).reduce((n, a) => n + a.data.length, 0) / 32;
    console.log(`gemini-live: session_end after ${heardMs} ms of the 1500 ms reply reached the caller`);
    expect(end.reason).toBe('bot');
    expect(heardMs).toBeGreaterThanOrEqual(1500);
    expect(await p.waitClosed()).toBe(1000);
    expect(em.sessions()).toHaveLength(1);

    const em2 = await standIn({ setupDelayMs: 60_000 });
    const rig2 = await bridge(envBot(em2, { BOT_RETRY_BASE_MS: '20' }));
    const p2 = await provider(rig2, 'gl-early-close', { codec: 'slin', sample_rate: 16000 });
    const first = await em2.waitForSession(1, 5_000);
    await waitFor(() => first.record.received.length > 0, 5_000, 'setup');
    first.close(1000, 'no');
    await em2.waitForSession(2, 5_000);
    expect(p2.closeCode).toBeUndefined();
    expect(p2.events.map((e) => e.event)).not.toContain('session_end');
  });
});

describe('the gemini-live dialect: barge-in', () => {
  it("clears the caller's playback within 100 ms of interrupted, and plays the next turn", async () => {
    const em = await standIn({ outputRateFactor: 2, turnSilenceMs: 600 });
    const rig = await bridge(envBot(em, { BOT_DTMF: 'respond', BOT_INSTRUCTIONS: 'Talk. reply_ms=20000' }));
    const p = await provider(rig, 'gl-barge-in', { codec: 'slin', sample_rate: 16000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(conn), 5_000, 'setupComplete');
    p.send({ event: 'dtmf', digit: '1' });
    // The caller's line carries silence, so the stand-in hears the end of the caller's turn.
    const line = p.sendPaced(Buffer.alloc(5 * 32000), 640, 20);
    closers.push(() => line);
    await waitFor(() => p.audioBytes().length >= 1000 * 32, 10_000, '1 s of the reply at the caller');
    const at = performance.now();
    conn.speechStarted();
    const clear = await p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    const sinceClear = () => p.audio.filter((a) => a.at > clear.at);
    await waitFor(
      () => sinceClear().reduce((n, a) => n + a.data.length, 0) >= 32 * 600,
      10_000,
      'the next turn',
    );
    const next = pcmOf(Buffer.concat(sinceClear().map((a) => a.data)));
    const hz = dominantHz(next, 16000);
    const snr = steadyToneSnrDb(trimSilence(next, 16000), replyToneHz(1), 16000)!;
    console.log(
      `gemini-live barge-in: clear ${clearMs.toFixed(1)} ms after interrupted; next turn ${hz.toFixed(0)} Hz, SNR ${snr.toFixed(1)} dB`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(conn.record.replies[0]!.status).toBe('interrupted');
    expect(Math.abs(hz - replyToneHz(1))).toBeLessThan(5);
    expect(snr).toBeGreaterThanOrEqual(30);
  });

  it('does not clear when nothing of the model is playing', async () => {
    const em = await standIn({ replyMs: 300, outputRateFactor: 0 });
    const rig = await bridge(envBot(em, { BOT_DTMF: 'respond' }));
    const p = await provider(rig, 'gl-no-clear', { codec: 'slin', sample_rate: 16000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(conn), 5_000, 'setupComplete');
    p.send({ event: 'dtmf', digit: '1' });
    await waitFor(() => p.audioBytes().length >= 300 * 32, 5_000, 'the reply');
    await quietFor(300, 'the reply to play out');
    conn.speechStarted();
    await quietFor(300, 'a clear');
    expect(p.events.map((e) => e.event)).not.toContain('clear');
  });
});

describe('the gemini-live dialect: goAway and session resumption', () => {
  it("between turns: moves at once to a new connection resuming the session; the caller's audio of the move held and sent there, none lost", async () => {
    const em = await standIn({ replyMs: 400 });
    const rig = await bridge(envBot(em));
    const p = await provider(rig, 'gl-move', { codec: 'slin', sample_rate: 16000 });
    const first = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(first) && first.record.handles.length > 0, 5_000, 'setup and a handle');
    // 3 s of a quiet, continuous signal (below the stand-in's speech threshold: no turn opens), and the
    // goAway 1 s into it.
    const said = generateTone(300, 16000, 16000 * 3, 0.004);
    const line = p.sendPaced(pcmBytes(said), 640, 20);
    await quietFor(1000, 'the caller to speak a while');
    first.goAway(10_000);
    const second = await em.waitForSession(2, 5_000);
    await line;
    await waitFor(() => ready(second), 5_000, 'the second setup');
    await quietFor(300, 'the last of the audio');

    const handle = first.record.handles.at(-1)!.handle;
    expect((second.record.received[0]!.message as { setup: unknown }).setup).toMatchObject({
      sessionResumption: { handle },
    });
    expect(second.record.resumed_from).toBe(first.record.id);
    expect(second.record.conversation).toBe(first.record.conversation);
    expect(first.record.closed_by).toBe('client');
    expect(first.record.close_code).toBe(1000);
    expect(second.record.notes).toEqual([]);
    // Nothing of the caller's audio lost or doubled: the two connections' input is what was said.
    const a = first.record.inputAudio()!.pcm;
    const b = second.record.inputAudio()!.pcm;
    const joined = new Int16Array(a.length + b.length);
    joined.set(a);
    joined.set(b, a.length);
    expect(joined.length).toBe(said.length);
    expect(pcmBytes(joined).equals(pcmBytes(said))).toBe(true);
    // The gap on the caller's line to the model: its last audio on the old connection to its first on
    // the new one (the held audio), and how long the move took.
    const lastOld =
      first.record.opened + first.record.received.filter((m) => m.type === 'realtimeInput').at(-1)!.at_ms;
    const firstNew =
      second.record.opened + second.record.received.find((m) => m.type === 'realtimeInput')!.at_ms;
    const moved = lines(rig).find((l) => l.msg === 'gemini live session moved to a new connection')!;
    console.log(
      `gemini-live resumption: caller audio gap at the model ${(firstNew - lastOld).toFixed(0)} ms (move ${String(moved.ms)} ms, ${String(moved.held)} frames held), ${a.length / 16} + ${b.length / 16} ms of ${said.length / 16} ms, bit-exact`,
    );
    expect(firstNew - lastOld).toBeLessThanOrEqual(1000);
    expect(moved.resumed).toBe(true);
    expect(p.errors()).toEqual([]);
    expect(p.closeCode).toBeUndefined();
  });

  it("mid-turn: the reply plays whole, the move follows the turn's end with its fresh handle, and the resumed session answers next", async () => {
    const em = await standIn({ replyMs: 2000, outputRateFactor: 1 });
    const rig = await bridge(envBot(em, { BOT_DTMF: 'respond' }));
    const p = await provider(rig, 'gl-move-mid-turn', { codec: 'slin', sample_rate: 16000 });
    const first = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(first), 5_000, 'setupComplete');
    p.send({ event: 'dtmf', digit: '1' });
    await waitFor(() => p.audioBytes().length >= 500 * 32, 5_000, 'the reply under way');
    first.goAway(20_000);
    await quietFor(500, 'a move in the middle of the turn');
    expect(em.sessions()).toHaveLength(1);
    const second = await em.waitForSession(2, 5_000);
    await waitFor(() => ready(second), 5_000, 'the second setup');
    const reply = first.record.replies[0]!;
    expect(reply.status).toBe('completed');
    // The handle issued after the turn: the resumed session knows the reply was given.
    const handle = first.record.handles.at(-1)!;
    expect(handle.at_ms).toBeGreaterThanOrEqual(reply.ended_at_ms ?? Infinity);
    expect((second.record.received[0]!.message as { setup: unknown }).setup).toMatchObject({
      sessionResumption: { handle: handle.handle },
    });
    await waitFor(() => p.audioBytes().length >= 2000 * 32, 5_000, 'the whole reply at the caller');
    const heard = trimSilence(pcmOf(p.audioBytes()), 16000);
    expect(Math.abs(heard.length / 16 - 2000)).toBeLessThanOrEqual(20);
    // The next turn on the new connection: the conversation's second reply.
    const before = p.audioBytes().length;
    p.send({ event: 'dtmf', digit: '2' });
    await waitFor(() => p.audioBytes().length - before >= 2000 * 32, 10_000, 'the next reply');
    const next = trimSilence(pcmOf(p.audioBytes().subarray(before)), 16000);
    expect(Math.abs(dominantHz(next, 16000) - replyToneHz(1))).toBeLessThan(5);
    expect(second.record.texts.map((t) => t.text)).toEqual(['[DTMF 2]']);
  });

  it('near the deadline: a turn still going does not keep the connection past its time', async () => {
    const em = await standIn({ outputRateFactor: 1 });
    const rig = await bridge(envBot(em, { BOT_DTMF: 'respond', BOT_INSTRUCTIONS: 'reply_ms=20000' }));
    const p = await provider(rig, 'gl-move-deadline', { codec: 'slin', sample_rate: 16000 });
    const first = await em.waitForSession(1, 5_000);
    await waitFor(() => ready(first), 5_000, 'setupComplete');
    p.send({ event: 'dtmf', digit: '1' });
    await waitFor(() => p.audioBytes().length >= 300 * 32, 5_000, 'the reply under way');
    const timeLeft = MOVE_LEAD_MS + 1000;
    const at = performance.now();
    first.goAway(timeLeft);
    const second = await em.waitForSession(2, timeLeft);
    const movedAfter = performance.now() - at;
    await waitFor(() => ready(second), 5_000, 'the second setup');
    console.log(`gemini-live: goAway with ${timeLeft} ms left, moved after ${movedAfter.toFixed(0)} ms`);
    expect(movedAfter).toBeGreaterThanOrEqual(900);
    expect(movedAfter).toBeLessThan(timeLeft - 1000);
    expect(first.record.closed_by).toBe('client');
    expect(second.record.resumed_from).toBe(first.record.id);
    expect(p.closeCode).toBeUndefined();
  });
});

describe('the gemini-live dialect: faults', () => {
  it('redials after 401, 429 and a dropped handshake within BOT_RETRIES, skips bad frames, resumes a dropped session; the call and its neighbour go on', async () => {
    const em = await standIn({ replyMs: 400, jsonFrames: 'text' });
    em.failNextConnects(401, 1);
    em.failNextConnects(429, 1);
    em.dropNextConnects(1);
    const rig = await bridge(envBot(em, { BOT_RETRY_BASE_MS: '20', BOT_RETRIES: '4' }));
    const a = await provider(rig, 'gl-faults', { codec: 'slin', sample_rate: 16000 });
    const conn = await em.waitForSession(1, 10_000);
    await waitFor(() => ready(conn), 5_000, 'the session after three failed dials');
    expect(a.errors().map((e) => e.code)).toContain('bot_unavailable');
    const b = await provider(rig, 'gl-neighbour', { codec: 'slin', sample_rate: 16000 });
    const other = await em.waitForSession(2, 5_000);
    await waitFor(() => ready(other), 5_000, "the neighbour's session");

    const before = await rig.bridge.ctx.metrics.badFrames.get();
    for (const kind of ['json', 'binary', 'unknown_event', 'no_type'] as const) conn.sendMalformed(kind);
    await a.sendPaced(pcmBytes(utterance(1000, 16000, 500, 800)), 640, 20);
    await waitFor(() => a.audioBytes().length >= 400 * 32, 10_000, 'a reply after the bad frames');
    const skipped = lines(rig)
      .filter((l) => l.msg === 'bad frame from bot; skipped')
      .map((l) => l.code);
    expect(skipped).toEqual(['bad_json', 'bad_json', 'unknown_event', 'unknown_event']);
    const after = await rig.bridge.ctx.metrics.badFrames.get();
    const count = (m: typeof before) => m.values.reduce((n, v) => n + v.value, 0);
    expect(count(after) - count(before)).toBe(4);

    // A dropped connection: redialled, resuming the session with its latest handle; the reason logged.
    await waitFor(() => conn.record.handles.length >= 2, 5_000, 'the handle after the reply');
    const handle = conn.record.handles.at(-1)!.handle;
    conn.close(1011, 'Internal error occurred.');
    const again = await em.waitForSession(3, 5_000);
    await waitFor(() => ready(again), 5_000, 'the redialled session');
    expect((again.record.received[0]!.message as { setup: unknown }).setup).toMatchObject({
      sessionResumption: { handle },
    });
    expect(again.record.resumed_from).toBe(conn.record.id);
    expect(lines(rig).find((l) => l.msg === 'gemini live closed the connection')).toMatchObject({
      code: 1011,
      reason: 'Internal error occurred.',
    });
    expect(a.closeCode).toBeUndefined();
    expect(b.closeCode).toBeUndefined();
    expect(b.errors()).toEqual([]);
    expect(rig.logs.join('\n')).not.toContain(KEY);
  });

  it('gives up after BOT_RETRIES, telling the provider, and the call stays up', async () => {
    const em = await standIn();
    em.failNextConnects(403, 3);
    const rig = await bridge(envBot(em, { BOT_RETRY_BASE_MS: '20', BOT_RETRIES: '2' }));
    const p = await provider(rig, 'gl-give-up', { codec: 'slin', sample_rate: 16000 });
    await p.waitEvent('error', 5_000, (e) => String(e.message).includes('gave up after 3 attempts'));
    expect(em.sessions()).toHaveLength(0);
    await quietFor(200, 'the call closing');
    expect(p.closeCode).toBeUndefined();
  });

  it('a wrong key: the 1007 close logged with its reason, given up within BOT_RETRIES', async () => {
    const em = await standIn();
    const rig = await bridge({
      ...envBot(em),
      BOT_API_KEY: 'AIza-wrong-key-000000',
      BOT_RETRY_BASE_MS: '20',
      BOT_RETRIES: '1',
    });
    const p = await provider(rig, 'gl-wrong-key', { codec: 'slin', sample_rate: 16000 });
    await p.waitEvent('error', 5_000, (e) => String(e.message).includes('gave up after 2 attempts'));
    const closes = lines(rig).filter((l) => l.msg === 'gemini live closed the connection');
    expect(closes.map((l) => [l.code, l.reason])).toEqual([
      [1007, 'API key not valid. Please pass a valid API key.'],
      [1007, 'API key not valid. Please pass a valid API key.'],
    ]);
    expect(rig.logs.join('\n')).not.toContain('AIza-wrong-key');
    expect(p.closeCode).toBeUndefined();
  });

  it("a raw server: late audio of an interrupted turn dropped until its turnComplete; a refused handle forgotten; an unknown field's message counted", async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    closers.push(
      () =>
        new Promise<void>((r) => {
          for (const c of server.clients) c.terminate();
          server.close(() => r());
        }),
    );
    const setups: Record<string, unknown>[] = [];
    let model: WebSocket | undefined;
    server.on('connection', (ws) => {
      model = ws;
      ws.on('message', (d) => {
        const m = JSON.parse(String(d));
        if (m.setup === undefined) return;
        setups.push(m.setup);
        // The second connection resumes with a handle the server does not know: refused, as Google does.
        if (setups.length === 2) ws.close(1008, 'Requested entity was not found.');
        else ws.send(Buffer.from(JSON.stringify({ setupComplete: {} })));
      });
    });
    await new Promise((r) => server.once('listening', r));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws`;
    const rig = await bridge({
      BOT_URL: url,
      BOT_DIALECT: 'gemini-live',
      BOT_API_KEY: KEY,
      BOT_RETRY_BASE_MS: '20',
    });
    const p = await provider(rig, 'gl-raw', { codec: 'slin', sample_rate: 16000 });
    await waitFor(() => setups.length === 1, 5_000, 'setup');
    const part = (hz: number, ms: number) => ({
      inlineData: {
        mimeType: 'audio/pcm;rate=24000',
        data: pcmBytes(generateTone(hz, 24000, 24 * ms, 0.3)).toString('base64'),
      },
    });
    const send = (m: unknown) => model!.send(JSON.stringify(m));
    send({ sessionResumptionUpdate: { newHandle: 'h-1', resumable: true } });
    send({ serverContent: { modelTurn: { parts: [part(440, 400)] } } });
    send({ serverContent: { interrupted: true } });
    // Late audio of the cut turn (two parts in one message), then its end, then the next turn.
    send({ serverContent: { modelTurn: { parts: [part(440, 100), part(440, 100)] } } });
    send({ serverContent: { turnComplete: true } });
    send({ serverContent: { modelTurn: { parts: [part(660, 300)] }, generationComplete: true } });
    send({ serverContent: { turnComplete: true }, usageMetadata: { totalTokenCount: 3 } });
    send({ standInNothing: {} });
    await waitFor(() => p.events.some((e) => e.event === 'clear'), 5_000, 'the clear');
    await waitFor(
      () => lines(rig).some((l) => l.msg === 'audio of an interrupted turn dropped'),
      5_000,
      'the drop',
    );
    const dropped = lines(rig).find((l) => l.msg === 'audio of an interrupted turn dropped')!;
    expect(dropped.bytes).toBe(2 * 2 * 2400);
    const clear = p.events.find((e) => e.event === 'clear')!;
    await waitFor(
      () => p.audio.filter((a) => a.at > clear.at).reduce((n, a) => n + a.data.length, 0) >= 300 * 32,
      5_000,
      'the next turn at the caller',
    );
    const after = pcmOf(Buffer.concat(p.audio.filter((a) => a.at > clear.at).map((a) => a.data)));
    expect(Math.abs(dominantHz(trimSilence(after, 16000), 16000) - 660)).toBeLessThan(5);
    expect(trimSilence(after, 16000).length / 16).toBeLessThanOrEqual(320);
    expect(
      lines(rig)
        .filter((l) => l.msg === 'bad frame from bot; skipped')
        .map((l) => l.code),
    ).toEqual(['unknown_event']);

    // Dropped: the redial resumes with h-1, which is refused; the next starts a new session.
    model!.terminate();
    await waitFor(() => setups.length === 3, 5_000, 'a third setup');
    expect(setups.map((s) => s.sessionResumption)).toEqual([{}, { handle: 'h-1' }, {}]);
    expect(p.closeCode).toBeUndefined();
  });
});

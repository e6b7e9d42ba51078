/**
 * The `elevenlabs-agent` bot dialect against the ElevenLabs Agents stand-in (src/emulator/elevenlabs-agent/,
 * held to the vendor's clients by its own tests), a real bridge and a caller on `/v1/media`, all on
 * loopback: the first messages as the stand-in records them, the signed URL, the legs opened at the
 * agent's formats (no DSP where the ends agree, nothing of the caller's lost before the agent answered),
 * tones both ways, digits, the agent's hang-up after its audio played, barge-in and its event_id rule,
 * pings, faults and secrets. Timing (pacing, the clear's delay) is in bot-elevenlabs-agent-timing.test.ts.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { ElevenLabsConversation } from '../../src/emulator/elevenlabs-agent/connection.js';
import {
  type AgentConfig,
  createElevenLabsEmulator,
  type ElevenLabsEmulator,
  type ElevenLabsEmulatorOptions,
} from '../../src/emulator/elevenlabs-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { agentFormat } from '../../src/media/bot/elevenlabs-agent.js';
import { createPipeline } from '../../src/pipeline/index.js';
import type { AudioPipeline } from '../../src/pipeline/types.js';
import { tonePcm16 } from '../helpers/audio.js';
import { startBridge, useBridge } from '../helpers/bridge.js';
import { type CapturedLog, captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { startRig } from '../helpers/rig.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const AGENT = 'agent_01jtest0000000000000000';
const KEY = 'sk_elevenlabs_test_key_0123456789';
const CALLER_HZ = 1000;

const slot = useBridge();
let el: ElevenLabsEmulator | undefined;
let raw: WebSocketServer | undefined;
afterEach(async () => {
  await el?.close();
  el = undefined;
  if (raw !== undefined) {
    for (const c of raw.clients) c.terminate();
    await new Promise<void>((r) => raw!.close(() => r()));
    raw = undefined;
  }
});

async function standIn(o: ElevenLabsEmulatorOptions = {}): Promise<ElevenLabsEmulator> {
  el = createElevenLabsEmulator({ pingIntervalMs: 0, turnSilenceMs: 300, ...o });
  await el.listen(0, '127.0.0.1');
  return el;
}

/** The bridge's environment for the stand-in's agent, public unless a key is given. */
function agentEnv(s: ElevenLabsEmulator, extra: Record<string, string> = {}): Record<string, string> {
  return {
    BOT_DIALECT: 'elevenlabs-agent',
    BOT_URL: `${s.base().replace(/^http/, 'ws')}/v1/convai/conversation`,
    BOT_AGENT_ID: AGENT,
    BOT_RETRY_BASE_MS: '50',
    ...extra,
  };
}

type CallerFormat = { readonly codec: 'pcmu' | 'slin'; readonly rate: 8000 | 16000 };
const ULAW8: CallerFormat = { codec: 'pcmu', rate: 8000 };
const SLIN16: CallerFormat = { codec: 'slin', rate: 16000 };

async function bridgeFor(env: Record<string, string>, log: CapturedLog = captureLog('info')) {
  slot.bridge = await startBridge(env, { log: log.log });
  return log;
}

/** Ends this bridge's calls, then the bridge (a bridge waits for calls still up when it closes). */
async function closeBridge(): Promise<void> {
  for (const p of slot.providers.splice(0)) p.close();
  await slot.bridge?.close();
  slot.bridge = undefined;
}

async function caller(id: string, f: CallerFormat = ULAW8, start: Record<string, unknown> = {}) {
  const p = new TestProvider(slot.bridge!.mediaUrl, { token: await slot.bridge!.mediaToken() });
  slot.providers.push(p);
  await p.start(id, { media: { codec: f.codec, sample_rate: f.rate }, ...start });
  return p;
}

/** `ms` of a tone (silence for hz 0) in the caller's format. */
function callerAudio(f: CallerFormat, hz: number, ms: number): Buffer {
  const n = (f.rate * ms) / 1000;
  const pcm = hz === 0 ? Buffer.alloc(n * 2) : tonePcm16(hz, f.rate, n, 9000);
  if (f.codec === 'slin') return pcm;
  const out = Buffer.alloc(n);
  encodeInto('pcmu', new Int16Array(pcm.buffer, pcm.byteOffset, n), out);
  return out;
}

const bytesPerMs = (f: CallerFormat) => (f.rate / 1000) * (f.codec === 'slin' ? 2 : 1);

function decoded(f: CallerFormat, bytes: Buffer): Int16Array {
  if (f.codec === 'slin') return new Int16Array(new Uint8Array(bytes).buffer, 0, bytes.length >> 1);
  const out = new Int16Array(bytes.length);
  decodeInto('pcmu', bytes, out);
  return out;
}

/** Sends `audio` paced, 20 ms a frame. */
function speak(p: TestProvider, f: CallerFormat, audio: Buffer): Promise<void> {
  return p.sendPaced(audio, 20 * bytesPerMs(f), 20);
}

describe('the elevenlabs-agent dialect: opening the conversation', () => {
  it('sends conversation_initiation_client_data first, with the call as dynamic variables and the overrides set', async () => {
    const s = await standIn();
    await bridgeFor(
      agentEnv(s, { BOT_INSTRUCTIONS: 'Answer in one sentence. reply_ms=300', BOT_VOICE: 'voice_test' }),
    );
    await caller('el-handshake', ULAW8, { customer_phone: '+15550100', direction: 'outbound' });
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.clientData !== null, 5_000, 'the initiation');
    expect(conn.agentId).toBe(AGENT);
    expect(conn.record.received[0]!.type).toBe('conversation_initiation_client_data');
    expect(conn.clientData).toEqual({
      type: 'conversation_initiation_client_data',
      dynamic_variables: {
        session_id: 'el-handshake',
        customer_phone: '+15550100',
        direction: 'outbound',
        tenant: 'default',
      },
      conversation_config_override: {
        agent: { prompt: { prompt: 'Answer in one sentence. reply_ms=300' } },
        tts: { voice_id: 'voice_test' },
      },
    });
    expect(conn.record.notes).toEqual([]);
  });

  it('leaves the overrides out when none is set, and names an unknown caller with an empty string', async () => {
    const s = await standIn();
    await bridgeFor(agentEnv(s));
    const p = new TestProvider(slot.bridge!.mediaUrl, { token: await slot.bridge!.mediaToken() });
    slot.providers.push(p);
    await p.opened;
    p.send({ event: 'session_start', session_id: 'el-bare', media: { codec: 'pcmu', sample_rate: 8000 } });
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.clientData !== null, 5_000, 'the initiation');
    expect(conn.clientData).toEqual({
      type: 'conversation_initiation_client_data',
      dynamic_variables: { session_id: 'el-bare', customer_phone: '', direction: '', tenant: 'default' },
    });
  });

  it('asks get-signed-url with the key for a private agent and dials the signed URL as answered; a wrong key gives up at once', async () => {
    const s = await standIn({
      apiKey: KEY,
      agents: { [AGENT]: { private: true, replyMs: 300 } },
      onlyListedAgents: true,
    });
    const log = await bridgeFor(
      agentEnv(s, { BOT_API_KEY: KEY, BOT_API_BASE: s.base() }),
      captureLog('debug'),
    );
    const p = await caller('el-signed');
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.clientData !== null, 5_000, 'the initiation');
    // The stand-in refuses a private agent's socket without a valid signature: this one came signed.
    expect(conn.record.notes).toEqual([]);
    await speak(p, ULAW8, Buffer.concat([callerAudio(ULAW8, CALLER_HZ, 400), callerAudio(ULAW8, 0, 600)]));
    await waitFor(() => p.audioBytes().length >= 300 * 8, 5_000, 'the reply');
    // The key and the signature are in no log line.
    const text = JSON.stringify(log.lines);
    expect(text.includes(KEY)).toBe(false);
    expect(text).not.toMatch(/conversation_signature=/);
    await closeBridge();

    // A wrong key, and an agent the API does not know: neither is better on a redial.
    const wrong = captureLog('warn');
    await bridgeFor(agentEnv(s, { BOT_API_KEY: 'sk_wrong_key_0000000000', BOT_API_BASE: s.base() }), wrong);
    const q = await caller('el-wrong-key');
    const err = await q.waitEvent('error', 5_000, (e) => /gave up/.test(String(e.message)));
    expect(err.code).toBe('bot_unavailable');
    expect(String(err.message)).toMatch(/answered HTTP 401\); gave up after 1 attempts/);
    expect(wrong.find(/bot refused the connection/)[0]).toMatchObject({ status: 401 });
    await closeBridge();

    const unknown = captureLog('warn');
    await bridgeFor(
      agentEnv(s, { BOT_API_KEY: KEY, BOT_API_BASE: s.base(), BOT_AGENT_ID: 'agent_nobody' }),
      unknown,
    );
    const r = await caller('el-unknown-agent');
    const gone = await r.waitEvent('error', 5_000, (e) => /gave up/.test(String(e.message)));
    expect(String(gone.message)).toMatch(/answered HTTP 404\); gave up after 1 attempts/);
    // The API's own words about the request are logged; never the key.
    expect(String(unknown.find(/signed URL refused/)[0]?.detail)).toMatch(/agent_nobody was not found/);
    expect(JSON.stringify(unknown.lines).includes(KEY)).toBe(false);
    expect(s.sessions()).toHaveLength(1);
  });
});

describe('the elevenlabs-agent dialect: formats', () => {
  const cases: {
    name: string;
    caller: CallerFormat;
    agent: Pick<AgentConfig, 'inputFormat' | 'outputFormat'>;
    /** The caller's audio reaches the agent bit for bit (no DSP that way). */
    exact: boolean;
  }[] = [
    {
      name: 'a µ-law 8 kHz caller and a ulaw_8000 agent',
      caller: ULAW8,
      agent: { inputFormat: 'ulaw_8000', outputFormat: 'ulaw_8000' },
      exact: true,
    },
    {
      name: 'a PCM16 16 kHz caller and a pcm_16000 agent',
      caller: SLIN16,
      agent: { inputFormat: 'pcm_16000', outputFormat: 'pcm_16000' },
      exact: true,
    },
    {
      name: 'a µ-law 8 kHz caller and a pcm_16000 in, pcm_24000 out agent',
      caller: ULAW8,
      agent: { inputFormat: 'pcm_16000', outputFormat: 'pcm_24000' },
      exact: false,
    },
  ];

  it.each(cases)(
    '$name: the legs open at the agent formats; all the caller said reaches it, the reply comes back whole',
    async ({ caller: f, agent, exact }) => {
      const REPLY_MS = 600;
      const s = await standIn({ agents: { [AGENT]: { ...agent, replyMs: REPLY_MS } } });
      const log = await bridgeFor(agentEnv(s));
      const p = await caller(`el-format-${f.codec}-${agent.inputFormat}`, f);
      // The tone from the call's first frame: the agent has not answered yet, and none of it may be lost.
      const said = Buffer.concat([callerAudio(f, CALLER_HZ, 800), callerAudio(f, 0, 700)]);
      await speak(p, f, said);
      const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
      await waitFor(() => conn.record.replies[0]?.status === 'completed', 5_000, 'the reply sent');
      await waitFor(
        () => p.audioBytes().length >= REPLY_MS * bytesPerMs(f),
        5_000,
        'the reply at the caller',
      );
      await quietFor(150, 'audio past the reply');

      const opened = log.find(/legs opened at the bot's formats/)[0]!;
      expect(opened.to_bot).toEqual(agentFormat(agent.inputFormat));
      expect(opened.from_bot).toEqual(agentFormat(agent.outputFormat));
      const input = conn.record.inputAudio()!;
      const sent = decoded(f, said);
      if (exact) {
        // No DSP: every sample the caller sent, as it sent it, from the first frame on.
        expect(input.rate).toBe(f.rate);
        expect(input.pcm.length).toBe(sent.length);
        expect(Buffer.from(input.pcm.buffer, input.pcm.byteOffset, input.pcm.byteLength)).toEqual(
          Buffer.from(sent.buffer, sent.byteOffset, sent.byteLength),
        );
      } else {
        // Resampled once: as long as what was sent, less what the resampler still holds and the last
        // chunk not yet full (it goes at the call's end).
        const wantSamples = (sent.length * input.rate) / f.rate;
        expect(input.pcm.length).toBeGreaterThan(wantSamples - (50 * input.rate) / 1000 - 64);
        expect(input.pcm.length).toBeLessThanOrEqual(wantSamples);
      }
      const inSnr = steadyToneSnrDb(trimSilence(input.pcm, input.rate), CALLER_HZ, input.rate)!;
      const got = decoded(f, p.audioBytes());
      const heard = trimSilence(got, f.rate);
      const outSnr = steadyToneSnrDb(heard, replyToneHz(0), f.rate)!;
      console.log(
        `${f.codec} ${f.rate} caller, agent ${agent.inputFormat}/${agent.outputFormat}: caller tone at the agent ${inSnr.toFixed(1)} dB (${input.pcm.length} samples of ${sent.length} sent), reply ${outSnr.toFixed(1)} dB, ${(heard.length * 1000) / f.rate} ms of ${REPLY_MS}`,
      );
      expect(inSnr).toBeGreaterThanOrEqual(30);
      expect(outSnr).toBeGreaterThanOrEqual(30);
      expect(Math.abs((heard.length * 1000) / f.rate - REPLY_MS)).toBeLessThanOrEqual(20);
      expect(conn.record.notes).toEqual([]);
    },
  );
});

describe('the elevenlabs-agent dialect: digits', () => {
  it.each([
    ['text', ['contextual_update', 'user_activity'], false],
    ['respond', ['user_message'], true],
    ['ignore', [], false],
  ] as const)('dtmf %s: a digit goes as %j, behind the audio before it', async (mode, types, answers) => {
    const s = await standIn({ agents: { [AGENT]: { replyMs: 300 } } });
    await bridgeFor(agentEnv(s, { BOT_DTMF: mode }));
    const p = await caller(`el-dtmf-${mode}`);
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.clientData !== null, 5_000, 'the initiation');
    // Quiet audio (no turn for the agent), then the digit.
    await speak(p, ULAW8, callerAudio(ULAW8, 0, 300));
    p.send({ event: 'dtmf', digit: '5' });
    await speak(p, ULAW8, callerAudio(ULAW8, 0, 300));
    await quietFor(100, 'anything more of the digit');
    const kinds = conn.record.received.map((m) => m.type).filter((t) => t !== 'user_audio_chunk');
    expect(kinds.slice(1)).toEqual(types);
    if (types.length > 0) {
      const i = conn.record.received.findIndex((m) => m.type === types[0]);
      expect(conn.record.received[i]!.message).toMatchObject({ type: types[0], text: '[DTMF 5]' });
      // Behind the 300 ms sent before it.
      const before = conn.record.received
        .slice(0, i)
        .filter((m) => m.type === 'user_audio_chunk')
        .reduce(
          (n, m) => n + (m.message as { user_audio_chunk: { bytes: number } }).user_audio_chunk.bytes,
          0,
        );
      expect(before).toBeGreaterThanOrEqual(300 * 8);
    }
    expect(conn.record.replies.length > 0).toBe(answers);
    expect(conn.record.notes).toEqual([]);
  });
});

describe('the elevenlabs-agent dialect: hang-up', () => {
  it('ends the call when the agent closes normally, once the audio it sent has played; its error event is logged', async () => {
    // A 1.5 s greeting sent at 4x real time, the conversation's limit at 0.7 s: the close comes while
    // most of the greeting is still to be played.
    const s = await standIn({
      outputRateFactor: 4,
      agents: {
        [AGENT]: {
          firstMessageMs: 1500,
          maxDurationMs: 700,
          inputFormat: 'ulaw_8000',
          outputFormat: 'ulaw_8000',
        },
      },
    });
    const log = await bridgeFor(agentEnv(s));
    const p = await caller('el-hangup');
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.record.closed_at !== null, 5_000, 'the agent to close');
    const closedAt = performance.now();
    expect(conn.record.close_code).toBe(1000);
    const code = await p.waitClosed(5_000);
    const heard = trimSilence(decoded(ULAW8, p.audioBytes()), 8000);
    const firstAt = p.audio[0]!.at;
    const lastAt = p.audio.at(-1)!.at;
    console.log(
      `hang-up: the agent closed at ${conn.record.close_code}; the caller heard ${heard.length / 8} ms of 1500, the last ${(lastAt - firstAt).toFixed(0)} ms after the first; the call closed ${(performance.now() - closedAt).toFixed(0)} ms after the agent`,
    );
    expect(code).toBe(1000);
    expect(Math.abs(heard.length / 8 - 1500)).toBeLessThanOrEqual(20);
    expect(steadyToneSnrDb(heard, replyToneHz(0), 8000)!).toBeGreaterThanOrEqual(30);
    expect(lastAt - firstAt).toBeGreaterThan(1300);
    expect(p.errors()).toEqual([]);
    expect(log.find(/agent error event/)[0]).toMatchObject({ error_type: 'max_duration_exceeded' });
  });

  it('takes a close before the agent named its formats as a failed dial, logged with its reason, not a hang-up', async () => {
    raw = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((r) => raw!.once('listening', () => r()));
    let dials = 0;
    raw.on('connection', (ws) => {
      dials++;
      ws.once('message', () => ws.close(1000, 'Override for field prompt is not allowed by config.'));
    });
    const port = (raw.address() as { port: number }).port;
    const log = captureLog('warn');
    await bridgeFor(
      {
        BOT_DIALECT: 'elevenlabs-agent',
        BOT_URL: `ws://127.0.0.1:${port}/v1/convai/conversation`,
        BOT_AGENT_ID: AGENT,
        BOT_INSTRUCTIONS: 'Be brief.',
        BOT_RETRIES: '1',
        BOT_RETRY_BASE_MS: '20',
      },
      log,
    );
    const p = await caller('el-refused-override');
    const err = await p.waitEvent('error', 5_000, (e) => /gave up/.test(String(e.message)));
    expect(err.code).toBe('bot_unavailable');
    expect(dials).toBe(2);
    expect(log.find(/agent closed the conversation before it started/)[0]).toMatchObject({
      code: 1000,
      reason: 'Override for field prompt is not allowed by config.',
    });
    // The call is still up, and a provider's end ends it at once (nothing waits for a bot that never started).
    expect(p.closeCode).toBeUndefined();
    p.send({ event: 'session_end' });
    expect(await p.waitClosed(1_000)).toBe(1000);
  });
});

/** The audio that reached the caller after its first `clear`, decoded. */
function afterClear(p: TestProvider, f: CallerFormat): Int16Array {
  const i = p.order.findIndex((o) => o.kind === 'event' && o.event === 'clear');
  const bytes = p.order.slice(i + 1).reduce((n, o) => n + (o.kind === 'audio' ? o.bytes : 0), 0);
  const all = p.audioBytes();
  return decoded(f, all.subarray(all.length - bytes));
}

describe('the elevenlabs-agent dialect: barge-in', () => {
  it.each([
    ['same', 'the reply on the interruption id, never seen before, plays'],
    ['next', 'the reply on the next id plays'],
  ] as const)(
    'clears at once, drops the late audio of the turn cut (ids below the interruption), and %s: %s',
    async (replyTurn, _what) => {
      const s = await standIn({
        outputRateFactor: 2,
        lateAudioChunks: 4,
        replyTurnAfterInterruption: replyTurn,
        agents: {
          [AGENT]: {
            firstMessageMs: 20_000,
            replyMs: 800,
            inputFormat: 'ulaw_8000',
            outputFormat: 'ulaw_8000',
          },
        },
      });
      await bridgeFor(agentEnv(s));
      const p = await caller(`el-barge-${replyTurn}`);
      const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
      // The caller's line stays open, quiet, so the agent hears the turn end.
      const line = speak(p, ULAW8, callerAudio(ULAW8, 0, 4000));
      await waitFor(() => p.audioBytes().length >= 1000 * 8, 5_000, '1 s of the greeting');
      const at = performance.now();
      conn.speechStarted();
      const clear = await p.waitEvent('clear', 2_000);
      await waitFor(() => conn.record.replies[1]?.status === 'completed', 5_000, 'the reply to the new turn');
      await waitFor(
        () => trimSilence(afterClear(p, ULAW8), 8000).length >= 800 * 8,
        5_000,
        'the reply heard',
      );
      await quietFor(200, 'anything past the reply');
      await line;

      const cut = conn.record.replies[0]!;
      const reply = conn.record.replies[1]!;
      const interruption = conn.record.interruptions[0]!;
      const after = trimSilence(afterClear(p, ULAW8), 8000);
      const replySnr = steadyToneSnrDb(after, reply.tone_hz, 8000)!;
      console.log(
        `barge-in (${replyTurn}): clear ${(clear.at - at).toFixed(1)} ms after the interruption; cut turn ${cut.turn} (${cut.late_ms} ms sent late), interruption ${interruption.turn}, reply turn ${reply.turn}; after the clear ${after.length / 8} ms heard, reply tone ${replySnr.toFixed(1)} dB`,
      );
      expect(cut.late_ms).toBeGreaterThan(0);
      expect(cut.turn).toBeLessThan(interruption.turn!);
      expect(reply.turn).toBe(replyTurn === 'same' ? interruption.turn : interruption.turn! + 1);
      // After the clear: the reply, whole, and nothing of the turn cut (its late audio would add its
      // tone and its length).
      expect(Math.abs(after.length / 8 - 800)).toBeLessThanOrEqual(20);
      expect(replySnr).toBeGreaterThanOrEqual(30);
      expect(steadyToneSnrDb(after, cut.tone_hz, 8000) ?? Number.NEGATIVE_INFINITY).toBeLessThan(0);
      expect(conn.record.notes).toEqual([]);
    },
  );
});

describe("the elevenlabs-agent dialect: barge-in when the interruption carries the cut turn's id", () => {
  it('drops the late audio at the interruption id, which came before it, and plays the next turn', async () => {
    const s = await standIn({
      outputRateFactor: 2,
      lateAudioChunks: 4,
      interruptionEventId: 'cut',
      agents: {
        [AGENT]: {
          firstMessageMs: 20_000,
          replyMs: 800,
          inputFormat: 'ulaw_8000',
          outputFormat: 'ulaw_8000',
        },
      },
    });
    await bridgeFor(agentEnv(s));
    const p = await caller('el-barge-cut');
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    const line = speak(p, ULAW8, callerAudio(ULAW8, 0, 4000));
    await waitFor(() => p.audioBytes().length >= 1000 * 8, 5_000, '1 s of the greeting');
    conn.speechStarted();
    await p.waitEvent('clear', 2_000);
    await waitFor(() => conn.record.replies[1]?.status === 'completed', 5_000, 'the reply to the new turn');
    await waitFor(() => trimSilence(afterClear(p, ULAW8), 8000).length >= 800 * 8, 5_000, 'the reply heard');
    await quietFor(200, 'anything past the reply');
    await line;
    const cut = conn.record.replies[0]!;
    const reply = conn.record.replies[1]!;
    // The late audio shares the interruption's id: audio the bridge had seen at that id before it.
    expect(conn.record.interruptions[0]!.turn).toBe(cut.turn);
    expect(cut.late_ms).toBeGreaterThan(0);
    expect(reply.turn).toBeGreaterThan(cut.turn!);
    const after = trimSilence(afterClear(p, ULAW8), 8000);
    expect(Math.abs(after.length / 8 - 800)).toBeLessThanOrEqual(20);
    expect(steadyToneSnrDb(after, reply.tone_hz, 8000)!).toBeGreaterThanOrEqual(30);
    expect(steadyToneSnrDb(after, cut.tone_hz, 8000) ?? Number.NEGATIVE_INFINITY).toBeLessThan(0);
  });
});

describe('the elevenlabs-agent dialect: keep-alive', () => {
  it('answers every ping with its event_id within the bound, and the stand-in never closes for a missed pong', async () => {
    const s = await standIn({ pingIntervalMs: 100, pongTimeoutMs: 1000, maxMissedPongs: 1 });
    await bridgeFor(agentEnv(s));
    const p = await caller('el-pings');
    await speak(p, ULAW8, callerAudio(ULAW8, 0, 1500));
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    const pings = conn.record.pings;
    const rtts = pings.filter((x) => x.answered_at_ms !== null).map((x) => x.answered_at_ms! - x.sent_at_ms);
    console.log(
      `keep-alive: ${pings.length} pings, ${rtts.length} answered, round trip max ${Math.max(...rtts).toFixed(1)} ms`,
    );
    expect(pings.length).toBeGreaterThanOrEqual(10);
    // The last ping may still be on its way.
    expect(rtts.length).toBeGreaterThanOrEqual(pings.length - 1);
    expect(Math.max(...rtts)).toBeLessThan(1000);
    expect(conn.record.closed_at).toBeNull();
    expect(conn.record.notes).toEqual([]);
  });

  it("answers at once whatever the ping's ping_ms says (it is the round trip measured, not a delay)", async () => {
    raw = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((r) => raw!.once('listening', () => r()));
    const pongs: { id: unknown; ms: number }[] = [];
    raw.on('connection', (ws) => {
      let sentAt = 0;
      ws.on('message', (d: Buffer) => {
        const m = JSON.parse(d.toString('utf8')) as { type?: string; event_id?: unknown };
        if (m.type === 'conversation_initiation_client_data') {
          ws.send(
            JSON.stringify({
              type: 'conversation_initiation_metadata',
              conversation_initiation_metadata_event: {
                conversation_id: 'conv_raw',
                user_input_audio_format: 'ulaw_8000',
                agent_output_audio_format: 'ulaw_8000',
              },
            }),
          );
          sentAt = performance.now();
          ws.send(JSON.stringify({ type: 'ping', ping_event: { event_id: 7, ping_ms: 3000 } }));
        } else if (m.type === 'pong') pongs.push({ id: m.event_id, ms: performance.now() - sentAt });
      });
    });
    const port = (raw.address() as { port: number }).port;
    await bridgeFor({
      BOT_DIALECT: 'elevenlabs-agent',
      BOT_URL: `ws://127.0.0.1:${port}/v1/convai/conversation`,
      BOT_AGENT_ID: AGENT,
    });
    await caller('el-ping-ms');
    await waitFor(() => pongs.length === 1, 2_000, 'the pong');
    expect(pongs[0]!.id).toBe(7);
    expect(pongs[0]!.ms).toBeLessThan(200);
  });
});

describe('the elevenlabs-agent dialect: faults', () => {
  it('skips and counts malformed frames and unknown events; the call and its neighbour go on', async () => {
    const s = await standIn({ agents: { [AGENT]: { replyMs: 400 } } });
    const log = await bridgeFor(agentEnv(s), captureLog('warn'));
    const a = await caller('el-bad-frames');
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    const b = await caller('el-neighbour');
    const other = (await s.waitForSession(2, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.clientData !== null && other.clientData !== null, 5_000, 'both conversations');
    for (const kind of ['json', 'unknown_event', 'unknown_event', 'no_type', 'binary'] as const)
      conn.sendMalformed(kind);
    const turn = Buffer.concat([callerAudio(ULAW8, CALLER_HZ, 400), callerAudio(ULAW8, 0, 600)]);
    await Promise.all([speak(a, ULAW8, turn), speak(b, ULAW8, turn)]);
    await waitFor(
      () => a.audioBytes().length >= 400 * 8 && b.audioBytes().length >= 400 * 8,
      5_000,
      'both replies',
    );
    const bad = await slot.bridge!.bridge.ctx.metrics.badFrames.get();
    const count = (code: string) => bad.values.find((v) => v.labels.code === code)?.value ?? 0;
    expect(count('bad_json')).toBe(1);
    // The unknown type twice, the one without a type, and the binary frame.
    expect(count('unknown_event')).toBe(4);
    // An unknown type is logged once a call, then only counted.
    expect(log.find(/unknown agent event skipped/)).toHaveLength(1);
    for (const p of [a, b]) {
      expect(p.errors()).toEqual([]);
      expect(
        steadyToneSnrDb(trimSilence(decoded(ULAW8, p.audioBytes()), 8000), replyToneHz(0), 8000)!,
      ).toBeGreaterThanOrEqual(30);
    }
  });

  it('redials a refused and a dropped connection within BOT_RETRIES, telling the provider once each, and goes on', async () => {
    const s = await standIn({ agents: { [AGENT]: { replyMs: 300 } } });
    s.failNextConnects(429, 1);
    await bridgeFor(agentEnv(s, { BOT_RETRIES: '3' }));
    const p = await caller('el-redial');
    const first = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => first.clientData !== null, 5_000, 'the conversation after a refusal');
    expect(p.errors().map((e) => e.code)).toEqual(['bot_unavailable']);
    first.close(1011, 'stand-in fault');
    const second = (await s.waitForSession(2, 5_000)) as ElevenLabsConversation;
    await waitFor(() => second.clientData !== null, 5_000, 'the conversation after a drop');
    await speak(p, ULAW8, Buffer.concat([callerAudio(ULAW8, CALLER_HZ, 400), callerAudio(ULAW8, 0, 600)]));
    await waitFor(() => p.audioBytes().length >= 300 * 8, 5_000, 'the reply of the new conversation');
    expect(p.errors().map((e) => e.code)).toEqual(['bot_unavailable', 'bot_unavailable']);
    expect(p.closeCode).toBeUndefined();
  });

  it('tells the provider bot_unavailable when it gives up; the call stays up and ends when the provider ends it', async () => {
    const s = await standIn();
    s.failNextConnects(503, 10);
    await bridgeFor(agentEnv(s, { BOT_RETRIES: '2', BOT_RETRY_BASE_MS: '20' }));
    const p = await caller('el-unreachable');
    const err = await p.waitEvent('error', 5_000, (e) => /gave up/.test(String(e.message)));
    expect(err.code).toBe('bot_unavailable');
    expect(String(err.message)).toMatch(/gave up after 3 attempts/);
    await speak(p, ULAW8, callerAudio(ULAW8, CALLER_HZ, 200));
    expect(p.closeCode).toBeUndefined();
    p.send({ event: 'session_end' });
    expect(await p.waitClosed(1_000)).toBe(1000);
  });

  it('gives up on an agent that names other formats on a redial than the call opened at', async () => {
    const agents: Record<string, AgentConfig> = {
      [AGENT]: { inputFormat: 'ulaw_8000', outputFormat: 'ulaw_8000' },
    };
    const s = await standIn({ agents });
    const log = await bridgeFor(agentEnv(s), captureLog('warn'));
    const p = await caller('el-formats-changed');
    const first = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => first.clientData !== null, 5_000, 'the first conversation');
    agents[AGENT] = { inputFormat: 'pcm_16000', outputFormat: 'pcm_16000' };
    first.close(1011, 'stand-in fault');
    const err = await p.waitEvent('error', 5_000, (e) => /other audio formats/.test(String(e.message)));
    expect(err.code).toBe('bot_unavailable');
    expect(log.find(/named other audio formats on a redial/)).toHaveLength(1);
    expect(p.closeCode).toBeUndefined();
  });
});

describe('the elevenlabs-agent dialect: legs that cannot open', () => {
  it('gives the agent up when the pipeline cannot open the legs at its formats; the call goes on', async () => {
    const s = await standIn({ agents: { [AGENT]: { inputFormat: 'pcm_24000', outputFormat: 'pcm_24000' } } });
    // A pipeline that cannot open a leg at 24 kHz (a worker that could not take it, say).
    const real = createPipeline({ workers: 0 });
    const pipeline: AudioPipeline = {
      workers: 0,
      open: (spec, sink, o) => {
        if (spec.to.rate === 24000 || spec.from.rate === 24000) throw new Error('no leg at 24 kHz here');
        return real.open(spec, sink, o);
      },
      close: () => real.close(),
    };
    const log = captureLog('warn');
    slot.bridge = await startRig({ env: agentEnv(s), log: log.log, bridgeOptions: { pipeline } });
    const p = await caller('el-no-legs');
    const err = await p.waitEvent('error', 5_000, (e) => /cannot take/.test(String(e.message)));
    expect(err.code).toBe('bot_unavailable');
    expect(log.find(/legs cannot open at the bot formats/)).toHaveLength(1);
    expect(p.closeCode).toBeUndefined();
    p.send({ event: 'session_end' });
    expect(await p.waitClosed(1_000)).toBe(1000);
  });
});

describe("a tenant's elevenlabs-agent bot", () => {
  async function putBot(bot: Record<string, unknown>): Promise<Response> {
    return fetch(`${slot.bridge!.http}/v1/media-stream`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${await slot.bridge!.restToken(['media:manage'])}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ media_ws_url: 'ws://127.0.0.1:9/v1/media', bot }),
    });
  }

  it('is refused without agent_id, naming it; its key is write-only', async () => {
    await bridgeFor({ BOT_URL_ALLOWED_HOSTS: 'api.elevenlabs.io' });
    const bad = await putBot({ dialect: 'elevenlabs-agent', api_key: KEY });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(
      /^bot\.agent_id is required for dialect elevenlabs-agent: /,
    );
    const good = await putBot({ dialect: 'elevenlabs-agent', agent_id: AGENT, api_key: KEY });
    const body = await good.text();
    expect(good.status, body).toBe(200);
    expect(body.includes(KEY)).toBe(false);
    expect(JSON.parse(body).bot).toMatchObject({
      dialect: 'elevenlabs-agent',
      url: 'wss://api.elevenlabs.io/v1/convai/conversation',
      agent_id: AGENT,
      api_key_hint: `****${KEY.slice(-4)}`,
    });
  });

  it('dials the signed URL only on a host BOT_URL_ALLOWED_HOSTS lists, and says which when it is not', async () => {
    const s = await standIn({ apiKey: KEY, agents: { [AGENT]: { private: true } } });
    const port = new URL(s.base()).port;
    // The API asked by one name, the signed URL naming the stand-in by its address: two hosts.
    const bot = {
      dialect: 'elevenlabs-agent',
      url: `ws://localhost:${port}/v1/convai/conversation`,
      agent_id: AGENT,
      api_key: KEY,
      api_base: `http://localhost:${port}`,
    };
    const log = captureLog('warn');
    await bridgeFor({ BOT_URL_ALLOWED_HOSTS: `localhost:${port}` }, log);
    expect((await putBot(bot)).status).toBe(200);
    const p = await caller('el-tenant-refused');
    const err = await p.waitEvent('error', 5_000, (e) => /gave up/.test(String(e.message)));
    expect(err.code).toBe('bot_unavailable');
    expect(String(err.message)).toMatch(/may not dial.*gave up after 1 attempts/);
    expect(log.find(/bot named a URL this bridge may not dial/)[0]).toMatchObject({
      url: `ws://127.0.0.1:${port}/v1/convai/conversation`,
    });
    expect(s.sessions()).toHaveLength(0);
    expect(JSON.stringify(log.lines)).not.toMatch(/conversation_signature/);
    await closeBridge();

    await bridgeFor({ BOT_URL_ALLOWED_HOSTS: `localhost:${port},127.0.0.1:${port}` });
    expect((await putBot(bot)).status).toBe(200);
    await caller('el-tenant-allowed');
    const conn = (await s.waitForSession(1, 5_000)) as ElevenLabsConversation;
    await waitFor(() => conn.clientData !== null, 5_000, 'the conversation');
    expect(conn.record.notes).toEqual([]);
  });
});

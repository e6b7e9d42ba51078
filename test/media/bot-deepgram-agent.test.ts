/**
 * The `deepgram-agent` bot dialect behind a real bridge, against the Deepgram Voice Agent stand-in on
 * loopback (src/emulator/deepgram-agent/), calls placed in our own protocol:
 *
 * - handshake: a tenant's bot as PUT /v1/media-stream takes it; `Settings` the first message after
 *   `Welcome`, exactly (the tenant's settings merged, the formats and the prompt the bridge's own, the key
 *   as `Authorization: Token`), and nothing else before `SettingsApplied`: the caller's audio of that
 *   time held and sent after it, bit-exact;
 * - formats: a µ-law 8 kHz caller passes with no DSP (both legs µ-law 8 kHz, the caller's bytes at the
 *   agent unchanged); a PCM16 caller gets linear16 at its own input and output rates (no resampling);
 * - the agent's reply whole at the caller (tone SNR >= 30 dB), and the caller's tone at the agent;
 * - DTMF as `InjectUserMessage` in each mode; hang-up by the agent's normal close after its audio;
 * - barge-in: the caller's playback cleared within 100 ms of `UserStartedSpeaking`, the cut turn's late
 *   audio dropped, the next turn played;
 * - keep-alive on the calls' clock: `KeepAlive` after 5 s without caller audio, keeping open a stand-in
 *   whose idle limit is shorter than the test; without it the stand-in closes and the bridge redials;
 * - faults: refused and dropped connections redialled within BOT_RETRIES with `bot_unavailable` to the
 *   provider, bad frames and unknown messages skipped and counted, `Error` and `Warning` logged, a
 *   client-side function answered, the call and its neighbour kept up; the key in no log line.
 */
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { WebSocketServer } from 'ws';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { generateTone, steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import type { DeepgramAgentConnection } from '../../src/emulator/deepgram-agent/connection.js';
import {
  createDeepgramAgentEmulator,
  type DeepgramAgentEmulator,
  type DeepgramAgentEmulatorOptions,
} from '../../src/emulator/deepgram-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { DIGIT_RUN_MS } from '../../src/media/bot/digit-runs.js';
import { createPipeline } from '../../src/pipeline/index.js';
import type { AudioPipeline, LegSpec } from '../../src/pipeline/types.js';
import { ManualClock } from '../helpers/clock.js';
import { call as http } from '../helpers/http-call.js';
import { TestProvider } from '../helpers/provider.js';
import { type InProcessRig, startRig } from '../helpers/rig.js';
import { dominantHz } from '../helpers/s2s.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const KEY = 'dg-test-key-0123456789abcdef';
/** CONTRACT §9: a KeepAlive once no caller audio went for 5 s. */
const KEEPALIVE_MS = 5_000;

const closers: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function standIn(o: DeepgramAgentEmulatorOptions = {}): Promise<DeepgramAgentEmulator> {
  const em = createDeepgramAgentEmulator({ apiKey: KEY, ...o });
  await em.listen(0);
  closers.push(() => em.close());
  return em;
}

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
  o: { clock?: ManualClock; pipeline?: AudioPipeline } = {},
): Promise<InProcessRig> {
  const rig = await startRig({
    env,
    log: 'debug',
    bridgeOptions: {
      ...(o.clock !== undefined && { clock: o.clock }),
      ...(o.pipeline !== undefined && { pipeline: o.pipeline }),
    },
  });
  closers.push(() => rig.close());
  return rig;
}

/** The environment's bot: the dialect at the stand-in, with the key. */
function envBot(em: DeepgramAgentEmulator, extra: Record<string, string> = {}): Record<string, string> {
  return { BOT_URL: em.wsUrl(), BOT_DIALECT: 'deepgram-agent', BOT_API_KEY: KEY, ...extra };
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

const applied = (c: DeepgramAgentConnection) => c.record.sent.includes('SettingsApplied');

function ulaw(pcm: Int16Array): Buffer {
  const out = Buffer.alloc(pcm.length);
  encodeInto('pcmu', pcm, out);
  return out;
}

function fromUlaw(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  decodeInto('pcmu', bytes, out);
  return out;
}

const pcmBytes = (pcm: Int16Array) => Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
const pcmOf = (b: Buffer) => new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));

/** `toneMs` of a tone at `hz` then `silenceMs` of silence, at `rate`. */
function utterance(hz: number, rate: number, toneMs: number, silenceMs: number): Int16Array {
  const pcm = new Int16Array(Math.round((rate * (toneMs + silenceMs)) / 1000));
  pcm.set(generateTone(hz, rate, Math.round((rate * toneMs) / 1000), 0.3));
  return pcm;
}

describe('the deepgram-agent dialect: handshake and formats', () => {
  it("a tenant's bot: Settings first after Welcome, exactly; nothing before SettingsApplied; a µ-law caller passes with no DSP", async () => {
    const em = await standIn({ settingsDelayMs: 300 });
    const rec = recordingPipeline();
    const rig = await bridge({}, { pipeline: rec.pipeline });
    const tenantSettings = {
      tags: ['voicebridge'],
      audio: { input: { encoding: 'opus', sample_rate: 48000 } },
      agent: {
        listen: { provider: { type: 'deepgram', model: 'nova-3' } },
        think: { provider: { type: 'open_ai', model: 'gpt-4o-mini' }, prompt: 'replaced' },
        speak: { provider: { type: 'deepgram', model: 'aura-2-thalia-en' } },
      },
    };
    const instructions = 'Answer briefly. reply_ms=800';
    const put = await http(rig.http, 'PUT', '/v1/media-stream', {
      token: await rig.restToken(['media:manage'], 'acme'),
      body: {
        media_ws_url: 'wss://bridge.example/v1/media',
        media_secret: 'acme-media-secret',
        bot: {
          dialect: 'deepgram-agent',
          url: em.wsUrl(),
          api_key: KEY,
          instructions,
          settings: tenantSettings,
        },
      },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.text).not.toContain(KEY);

    const p = await provider(rig, 'dg-handshake', { codec: 'pcmu', sample_rate: 8000 }, 'acme');
    // The caller speaks at once: its first words wait for SettingsApplied (300 ms here).
    const said = ulaw(utterance(1000, 8000, 1000, 1000));
    await p.sendPaced(said, 160, 20);
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply to be sent');
    await waitFor(() => p.audioBytes().length >= 800 * 8, 5_000, 'the whole reply at the caller');

    // The first message, exactly: the tenant's settings with the bridge's formats and prompt.
    expect(conn.record.received[0]).toMatchObject({ type: 'Settings' });
    expect(conn.record.received[0]!.message).toEqual({
      type: 'Settings',
      tags: ['voicebridge'],
      audio: {
        input: { encoding: 'mulaw', sample_rate: 8000 },
        output: { encoding: 'mulaw', sample_rate: 8000, container: 'none' },
      },
      agent: {
        listen: { provider: { type: 'deepgram', model: 'nova-3' } },
        think: { provider: { type: 'open_ai', model: 'gpt-4o-mini' }, prompt: instructions },
        speak: { provider: { type: 'deepgram', model: 'aura-2-thalia-en' } },
      },
    });
    expect(conn.record.key_via).toBe('token');
    // Nothing broke the protocol: no audio (nor anything else) before SettingsApplied.
    expect(conn.record.notes).toEqual([]);
    expect(conn.record.sent.slice(0, 2)).toEqual(['Welcome', 'SettingsApplied']);

    // No DSP: both legs µ-law 8 kHz at both ends, and the caller's bytes at the agent unchanged, the
    // ones held for SettingsApplied first.
    expect(rec.specs.map((s) => [s.from, s.to])).toEqual([
      [
        { codec: 'pcmu', rate: 8000 },
        { codec: 'pcmu', rate: 8000 },
      ],
      [
        { codec: 'pcmu', rate: 8000 },
        { codec: 'pcmu', rate: 8000 },
      ],
    ]);
    const input = conn.record.inputAudio()!;
    expect(input.format).toBe('mulaw;rate=8000');
    expect(input.pcm.length).toBe(said.length);
    expect(Buffer.from(ulaw(input.pcm)).equals(said)).toBe(true);

    // The reply whole at the caller, its tone clean.
    const heard = trimSilence(fromUlaw(p.audioBytes()), 8000);
    const snr = steadyToneSnrDb(heard, replyToneHz(0), 8000)!;
    console.log(
      `deepgram-agent, µ-law caller: reply ${heard.length / 8} ms at the caller, SNR ${snr.toFixed(1)} dB`,
    );
    expect(Math.abs(heard.length / 8 - 800)).toBeLessThanOrEqual(20);
    expect(snr).toBeGreaterThanOrEqual(30);
    expect(rig.logs.join('\n')).not.toContain(KEY);
    const get = await http(rig.http, 'GET', '/v1/media-stream', {
      token: await rig.restToken(['media:manage'], 'acme'),
    });
    expect(get.text).not.toContain(KEY);
    expect((get.body.bot as Record<string, unknown>).api_key_hint).toBe(`****${KEY.slice(-4)}`);
  });

  it.each([
    ['16 kHz both ways', { codec: 'slin', sample_rate: 16000 }, 16000, 16000],
    ['8 kHz in, 16 kHz out', { codec: 'slin', sample_rate: 8000, output_sample_rate: 16000 }, 8000, 16000],
  ] as const)(
    'a PCM16 caller at %s: linear16 at its own rates each way, no resampling',
    async (_n, media, inRate, outRate) => {
      const em = await standIn({ replyMs: 600 });
      const rec = recordingPipeline();
      const rig = await bridge(
        envBot(em, { BOT_SETTINGS: '{"agent":{"think":{"provider":{"type":"open_ai"}}}}' }),
        {
          pipeline: rec.pipeline,
        },
      );
      const p = await provider(rig, `dg-pcm-${inRate}-${outRate}`, media);
      const conn = await em.waitForSession(1, 5_000);
      await waitFor(() => applied(conn), 5_000, 'SettingsApplied');
      await p.sendPaced(pcmBytes(utterance(1000, inRate, 600, 900)), (inRate / 50) * 2, 20);
      await waitFor(() => conn.record.replies[0]?.status === 'completed', 10_000, 'the reply');
      await waitFor(() => p.audioBytes().length >= outRate * 2 * 0.6, 5_000, 'the reply at the caller');

      expect((conn.record.received[0]!.message as { audio: unknown }).audio).toEqual({
        input: { encoding: 'linear16', sample_rate: inRate },
        output: { encoding: 'linear16', sample_rate: outRate, container: 'none' },
      });
      for (const s of rec.specs) expect(s.from.rate).toBe(s.to.rate);
      const input = conn.record.inputAudio()!;
      const inSnr = steadyToneSnrDb(trimSilence(input.pcm, inRate), 1000, inRate)!;
      const outSnr = steadyToneSnrDb(trimSilence(pcmOf(p.audioBytes()), outRate), replyToneHz(0), outRate)!;
      console.log(
        `deepgram-agent, PCM16 ${inRate}/${outRate}: caller tone ${inSnr.toFixed(1)} dB at the agent, reply ${outSnr.toFixed(1)} dB at the caller`,
      );
      expect(inSnr).toBeGreaterThanOrEqual(30);
      expect(outSnr).toBeGreaterThanOrEqual(30);
      expect(conn.record.notes).toEqual([]);
    },
  );

  it('BOT_URL unset: the dialect dials Deepgram itself; model and voice are refused naming the dialect', async () => {
    const { loadConfig } = await import('../../src/config.js');
    const config = loadConfig({ BOT_DIALECT: 'deepgram-agent', BOT_API_KEY: KEY });
    expect(config.bot.url).toBe('wss://agent.deepgram.com/v1/agent/converse');
    expect(() => loadConfig({ BOT_DIALECT: 'deepgram-agent', BOT_MODEL: 'gpt-4o-mini' })).toThrow(
      /BOT_MODEL does not apply to dialect deepgram-agent/,
    );
  });
});

describe('the deepgram-agent dialect: digits and hang-up', () => {
  async function digits(mode: string | undefined) {
    const em = await standIn({ replyMs: 200 });
    const rig = await bridge(envBot(em, mode === undefined ? {} : { BOT_DTMF: mode }));
    const p = await provider(rig, `dg-dtmf-${mode ?? 'default'}`, { codec: 'pcmu', sample_rate: 8000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => applied(conn), 5_000, 'SettingsApplied');
    for (const d of ['1', '2', '3']) p.send({ event: 'dtmf', digit: d });
    return { conn, texts: () => conn.record.texts.map((t) => [t.type, t.text]) };
  }

  it('text (default): a run of digits as one InjectUserMessage once the run ends', async () => {
    const { texts } = await digits(undefined);
    await quietFor(DIGIT_RUN_MS - 300, 'the run to end');
    expect(texts()).toEqual([]);
    await waitFor(() => texts().length === 1, 2_000, 'the run');
    expect(texts()).toEqual([['InjectUserMessage', '[DTMF 1] [DTMF 2] [DTMF 3]']]);
  });

  it('respond: each digit at once', async () => {
    const { texts } = await digits('respond');
    await waitFor(() => texts().length === 3, 2_000, 'three messages');
    expect(texts()).toEqual([
      ['InjectUserMessage', '[DTMF 1]'],
      ['InjectUserMessage', '[DTMF 2]'],
      ['InjectUserMessage', '[DTMF 3]'],
    ]);
  });

  it('ignore: nothing', async () => {
    const { texts } = await digits('ignore');
    await quietFor(DIGIT_RUN_MS + 300, 'any message for the digits');
    expect(texts()).toEqual([]);
  });

  it("the agent's normal close ends the call once its audio has played; a close before SettingsApplied is redialled", async () => {
    const em = await standIn({ replyMs: 1500, outputRateFactor: 0 });
    const rig = await bridge(envBot(em, { BOT_SETTINGS: '{"agent":{"greeting":"Goodbye. reply_ms=1500"}}' }));
    const p = await provider(rig, 'dg-hangup', { codec: 'pcmu', sample_rate: 8000 });
    const conn = await em.waitForSession(1, 5_000);
    // The greeting is all sent at once; the agent closes before the caller has heard most of it.
    await waitFor(() => conn.record.sent.includes('AgentAudioDone'), 5_000, 'the greeting sent');
    conn.close(1000, 'goodbye');
    const end = await p.waitEvent('session_end', 5_000);
    const heardMs = p.audio.filter((a) => a.at <= end.at).reduce((n, a) => n + a.data.length, 0) / 8;
    console.log(`deepgram-agent: session_end after ${heardMs} ms of the 1500 ms greeting reached the caller`);
    expect(end.reason).toBe('bot');
    expect(heardMs).toBeGreaterThanOrEqual(1500);
    expect(await p.waitClosed()).toBe(1000);
    expect(em.sessions()).toHaveLength(1);

    // Before the session is set up, a close is a failed dial: redialled, not a hang-up.
    const em2 = await standIn({ settingsDelayMs: 60_000 });
    const rig2 = await bridge(envBot(em2, { BOT_RETRY_BASE_MS: '20' }));
    const p2 = await provider(rig2, 'dg-early-close', { codec: 'pcmu', sample_rate: 8000 });
    const first = await em2.waitForSession(1, 5_000);
    await waitFor(() => first.record.received.length > 0, 5_000, 'Settings');
    first.close(1000, 'no');
    await em2.waitForSession(2, 5_000);
    expect(p2.closeCode).toBeUndefined();
    expect(p2.events.map((e) => e.event)).not.toContain('session_end');
  });
});

describe('the deepgram-agent dialect: barge-in', () => {
  it("clears the caller's playback within 100 ms of UserStartedSpeaking, drops the cut turn's late audio, plays the next turn", async () => {
    const em = await standIn({ outputRateFactor: 2, lateAudioChunks: 5, turnSilenceMs: 800 });
    const rig = await bridge(envBot(em, { BOT_SETTINGS: '{"agent":{"greeting":"Hello. reply_ms=20000"}}' }));
    const p = await provider(rig, 'dg-barge-in', { codec: 'pcmu', sample_rate: 8000 });
    const conn = await em.waitForSession(1, 5_000);
    // The caller's line carries silence all along, so the stand-in hears the end of the caller's turn.
    const line = p.sendPaced(Buffer.alloc(5 * 8000, 0xff), 160, 20);
    closers.push(() => line);
    await waitFor(() => p.audioBytes().length >= 1000 * 8, 10_000, '1 s of the greeting at the caller');
    const at = performance.now();
    conn.speechStarted();
    const clear = await p.waitEvent('clear', 2_000);
    const clearMs = clear.at - at;
    await quietFor(400, 'audio after the clear: the late chunks must be dropped');
    const sinceClear = () => p.audio.filter((a) => a.at > clear.at);
    const lateBytes = sinceClear().reduce((n, a) => n + a.data.length, 0);
    // The caller stays silent: the stand-in's turn ends and its next reply (the second tone) plays.
    await waitFor(
      () => sinceClear().reduce((n, a) => n + a.data.length, 0) >= 8 * 600,
      10_000,
      'the next turn',
    );
    const next = fromUlaw(Buffer.concat(sinceClear().map((a) => a.data)));
    const hz = dominantHz(next, 8000);
    const snr = steadyToneSnrDb(trimSilence(next, 8000), replyToneHz(1), 8000)!;
    const reply = conn.record.replies[0]!;
    const dropped = rig.logs
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'audio of an interrupted turn dropped');
    console.log(
      `deepgram-agent barge-in: clear ${clearMs.toFixed(1)} ms after UserStartedSpeaking; ${reply.late_ms} ms of late audio sent, ${lateBytes / 8} ms reached the caller (${String(dropped?.bytes)} bytes dropped); next turn ${hz.toFixed(0)} Hz, SNR ${snr.toFixed(1)} dB`,
    );
    expect(clearMs).toBeLessThanOrEqual(100);
    expect(reply.status).toBe('interrupted');
    expect(reply.late_ms).toBe(100);
    expect(lateBytes).toBe(0);
    expect(dropped?.bytes).toBe(800);
    expect(Math.abs(hz - replyToneHz(1))).toBeLessThan(5);
    expect(snr).toBeGreaterThanOrEqual(30);
  });

  it('does not clear when nothing of the agent is playing', async () => {
    const em = await standIn({ replyMs: 300, outputRateFactor: 0 });
    const rig = await bridge(envBot(em, { BOT_SETTINGS: '{"agent":{"greeting":"Hi. reply_ms=300"}}' }));
    const p = await provider(rig, 'dg-no-clear', { codec: 'pcmu', sample_rate: 8000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => p.audioBytes().length >= 300 * 8, 5_000, 'the greeting');
    // The greeting has played (its mark reported) before the caller speaks.
    await quietFor(300, 'the greeting to play out');
    conn.speechStarted();
    await quietFor(300, 'a clear');
    expect(p.events.map((e) => e.event)).not.toContain('clear');
  });
});

describe('the deepgram-agent dialect: keep-alive on the calls clock', () => {
  it('sends KeepAlive after 5 s without caller audio and every 5 s after, keeping a short-limit stand-in open; without it, the stand-in closes and the bridge redials', async () => {
    const em = await standIn({ idleTimeoutMs: 1_500 });
    const clock = new ManualClock(0);
    const rig = await bridge(envBot(em), { clock });
    const p = await provider(rig, 'dg-keepalive', { codec: 'pcmu', sample_rate: 8000 });
    const conn = await em.waitForSession(1, 5_000);
    await waitFor(() => applied(conn), 5_000, 'SettingsApplied');
    // Caller audio at 3 s: the first KeepAlive is due 5 s after it, not 5 s after the start.
    clock.advance(3_000);
    p.ws.send(Buffer.alloc(160, 0xff));
    await waitFor(() => conn.record.input.length > 0, 2_000, 'the audio at the agent');
    clock.advance(KEEPALIVE_MS - 1);
    await quietFor(100, 'a KeepAlive 1 ms early');
    expect(conn.record.keepalives).toBe(0);
    clock.advance(1);
    await waitFor(() => conn.record.keepalives === 1, 2_000, 'the first KeepAlive');
    // Each second of real time, 5 s of the calls' clock: a KeepAlive each time, well inside the
    // stand-in's 1.5 s limit, for 3 s.
    for (let i = 0; i < 3; i++) {
      await quietFor(1_000, 'the stand-in closing');
      clock.advance(KEEPALIVE_MS);
    }
    await waitFor(() => conn.record.keepalives === 4, 2_000, 'a KeepAlive each 5 s');
    expect(conn.record.closed_at).toBeNull();
    expect(conn.record.notes).toEqual([]);

    // The calls' clock stops: no KeepAlive, and the stand-in closes as Deepgram does (Error, 1011).
    await waitFor(() => conn.record.closed_at !== null, 3_000, 'the idle close');
    expect(conn.record.errors.map((e) => e.code)).toEqual(['CLIENT_MESSAGE_TIMEOUT']);
    await waitFor(
      () =>
        rig.logs.some(
          (l) => l.includes('deepgram agent error message') && l.includes('CLIENT_MESSAGE_TIMEOUT'),
        ),
      2_000,
      'the Error logged',
    );
    await p.waitEvent('error', 2_000, (e) => e.code === 'bot_unavailable');
    clock.advance(10_000); // the redial's wait
    const second = await em.waitForSession(2, 5_000);
    await waitFor(() => applied(second), 5_000, 'the second session');
    expect(p.closeCode).toBeUndefined();
  });
});

describe('the deepgram-agent dialect: faults', () => {
  it('redials after 401, 429 and a dropped handshake within BOT_RETRIES, skips bad frames; the call and its neighbour go on', async () => {
    const em = await standIn({ replyMs: 400 });
    em.failNextConnects(401, 1);
    em.failNextConnects(429, 1);
    em.dropNextConnects(1);
    const rig = await bridge(envBot(em, { BOT_RETRY_BASE_MS: '20', BOT_RETRIES: '4' }));
    const a = await provider(rig, 'dg-faults', { codec: 'slin', sample_rate: 16000 });
    const conn = await em.waitForSession(1, 10_000);
    await waitFor(() => applied(conn), 5_000, 'the session after three failed dials');
    expect(a.errors().map((e) => e.code)).toContain('bot_unavailable');
    const b = await provider(rig, 'dg-neighbour', { codec: 'slin', sample_rate: 16000 });
    const other = await em.waitForSession(2, 5_000);
    await waitFor(() => applied(other), 5_000, "the neighbour's session");

    const before = await rig.bridge.ctx.metrics.badFrames.get();
    for (const kind of ['json', 'binary', 'unknown_event', 'no_type'] as const) conn.sendMalformed(kind);
    // The session goes on: the caller speaks, the reply plays.
    await a.sendPaced(pcmBytes(utterance(1000, 16000, 500, 800)), 640, 20);
    await waitFor(() => a.audioBytes().length >= 400 * 32, 10_000, 'a reply after the bad frames');
    const skipped = rig.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'bad frame from bot; skipped')
      .map((l) => l.code);
    expect(skipped).toEqual(['bad_json', 'odd_length', 'unknown_event', 'unknown_event']);
    const after = await rig.bridge.ctx.metrics.badFrames.get();
    const count = (m: typeof before) => m.values.reduce((n, v) => n + v.value, 0);
    expect(count(after) - count(before)).toBe(4);

    // A dropped connection: redialled, Settings again.
    conn.close(1011, 'gone');
    const again = await em.waitForSession(3, 5_000);
    await waitFor(() => applied(again), 5_000, 'the redialled session');
    expect((again.record.received[0]!.message as { type: string }).type).toBe('Settings');
    expect(a.closeCode).toBeUndefined();
    expect(b.closeCode).toBeUndefined();
    expect(b.errors()).toEqual([]);
    expect(rig.logs.join('\n')).not.toContain(KEY);
  });

  it('gives up after BOT_RETRIES, telling the provider, and the call stays up', async () => {
    const em = await standIn();
    em.failNextConnects(401, 3);
    const rig = await bridge(envBot(em, { BOT_RETRY_BASE_MS: '20', BOT_RETRIES: '2' }));
    const p = await provider(rig, 'dg-give-up', { codec: 'pcmu', sample_rate: 8000 });
    await p.waitEvent('error', 5_000, (e) => String(e.message).includes('gave up after 3 attempts'));
    expect(em.sessions()).toHaveLength(0);
    await quietFor(200, 'the call closing');
    expect(p.closeCode).toBeUndefined();
  });

  it('an agent that never applies the settings is cut after BOT_CONNECT_TIMEOUT_MS and given up within BOT_RETRIES', async () => {
    const em = await standIn({ settingsDelayMs: 60_000 });
    const rig = await bridge(
      envBot(em, { BOT_CONNECT_TIMEOUT_MS: '300', BOT_RETRIES: '1', BOT_RETRY_BASE_MS: '20' }),
    );
    const p = await provider(rig, 'dg-never-applied', { codec: 'pcmu', sample_rate: 8000 });
    await p.waitEvent('error', 5_000, (e) => String(e.message).includes('gave up after 2 attempts'));
    expect(em.sessions()).toHaveLength(2);
    expect(em.sessions().every((s) => s.record.received[0]?.type === 'Settings')).toBe(true);
    expect(rig.logs.filter((l) => l.includes('did not apply the settings in time'))).toHaveLength(2);
    expect(p.closeCode).toBeUndefined();
  });

  it('logs Error and Warning, answers a client-side function call, and passes server messages it knows over', async () => {
    // A raw agent: what the stand-in would not send on its own.
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    closers.push(
      () =>
        new Promise<void>((r) => {
          for (const c of server.clients) c.terminate();
          server.close(() => r());
        }),
    );
    const got: Record<string, unknown>[] = [];
    let agent: WebSocket | undefined;
    server.on('connection', (ws) => {
      agent = ws;
      ws.send(JSON.stringify({ type: 'Welcome', request_id: 'r1' }));
      ws.on('message', (d, bin) => {
        if (bin) return;
        const m = JSON.parse(String(d));
        got.push(m);
        if (m.type === 'Settings') ws.send(JSON.stringify({ type: 'SettingsApplied' }));
      });
    });
    await new Promise((r) => server.once('listening', r));
    const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/agent/converse`;
    const rig = await bridge({ BOT_URL: url, BOT_DIALECT: 'deepgram-agent', BOT_API_KEY: KEY });
    const p = await provider(rig, 'dg-messages', { codec: 'pcmu', sample_rate: 8000 });
    await waitFor(() => got.some((m) => m.type === 'Settings'), 5_000, 'Settings');
    for (const m of [
      { type: 'Warning', code: 'W1', description: 'slow think provider' },
      { type: 'Error', code: 'FAILED_TO_THINK', description: 'the LLM answered 500' },
      { type: 'LatencyReport', total_latency: 0.5 },
      { type: 'History', role: 'user', content: 'hi' },
      {
        type: 'FunctionCallRequest',
        functions: [
          { id: 'f1', name: 'lookup', arguments: '{}', client_side: true },
          { id: 'f2', name: 'server_side', arguments: '{}', client_side: false },
        ],
      },
    ])
      agent!.send(JSON.stringify(m));
    await waitFor(() => got.some((m) => m.type === 'FunctionCallResponse'), 5_000, 'the function answer');
    const lines = rig.logs.map((l) => JSON.parse(l));
    expect(lines.find((l) => l.msg === 'deepgram agent warning message')).toMatchObject({
      code: 'W1',
      description: 'slow think provider',
    });
    expect(lines.find((l) => l.msg === 'deepgram agent error message')).toMatchObject({
      code: 'FAILED_TO_THINK',
    });
    expect(got.filter((m) => m.type === 'FunctionCallResponse')).toEqual([
      {
        type: 'FunctionCallResponse',
        id: 'f1',
        name: 'lookup',
        content: JSON.stringify({ error: 'not_found', message: 'this call has no tools' }),
      },
    ]);
    expect(lines.filter((l) => l.msg === 'bad frame from bot; skipped')).toEqual([]);
    expect(p.closeCode).toBeUndefined();
  });
});

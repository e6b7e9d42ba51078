/**
 * The `ultravox` bot dialect against the Ultravox stand-in (src/emulator/ultravox/), on a real bridge:
 * the create-call request as the stand-in received it (the key, the body, the medium at the caller's own
 * rates), the caller's audio at the model unchanged where no DSP is needed (PCM16 at its rate: the same
 * bytes; µ-law: only decoded), the model's reply whole at the caller, DTMF as user text, the agent's
 * hang-up after its audio played, bad frames and failed creates and joins, the key kept out of logs.
 * The timing checks (pacing, barge-in) are in bot-dialects.test.ts, which runs its bridge in a process
 * of its own.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeInto, encodeInto } from '../../src/audio/codec.js';
import { steadyToneSnrDb, trimSilence } from '../../src/audio/tone.js';
import { loadConfig } from '../../src/config.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import type { UltravoxConnection } from '../../src/emulator/ultravox/connection.js';
import {
  createUltravoxEmulator,
  type UltravoxEmulator,
  type UltravoxEmulatorOptions,
} from '../../src/emulator/ultravox/server.js';
import { tonePcm16 } from '../helpers/audio.js';
import { startBridge, type TestBridge } from '../helpers/bridge.js';
import { type CapturedLog, captureLog } from '../helpers/log-capture.js';
import { TestProvider } from '../helpers/provider.js';
import { scrapeMetric } from '../helpers/rig.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const KEY = 'uv-test-key-0123456789abcdef';

let emulator: UltravoxEmulator | undefined;
let bridge: TestBridge | undefined;
const providers: TestProvider[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const p of providers.splice(0)) p.close();
  await bridge?.close();
  bridge = undefined;
  await emulator?.close();
  emulator = undefined;
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

interface Setup {
  readonly env?: Record<string, string>;
  readonly emulator?: UltravoxEmulatorOptions;
  readonly log?: CapturedLog;
}

/** The stand-in (key KEY) and a bridge whose default bot is an Ultravox call on it. */
async function setup(o: Setup = {}): Promise<UltravoxEmulator> {
  emulator = createUltravoxEmulator({ apiKey: KEY, ...o.emulator });
  await emulator.listen(0, '127.0.0.1');
  bridge = await startBridge(
    {
      BOT_DIALECT: 'ultravox',
      BOT_API_BASE: emulator.base(),
      BOT_API_KEY: KEY,
      BOT_INSTRUCTIONS: 'Answer with a tone. reply_ms=600',
      BOT_SETTINGS: JSON.stringify({ firstSpeakerSettings: { user: {} } }),
      BOT_RETRY_BASE_MS: '20',
      ...o.env,
    },
    o.log === undefined ? {} : { log: o.log.log },
  );
  return emulator;
}

async function caller(id: string, media: Record<string, unknown>): Promise<TestProvider> {
  const p = new TestProvider(bridge!.mediaUrl, { token: await bridge!.mediaToken() });
  providers.push(p);
  await p.start(id, { media });
  return p;
}

const samplesOf = (b: Buffer) => new Int16Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));

/** `toneMs` of a 1 kHz tone then `silenceMs` of silence, PCM16 at `rate`. */
function speech(rate: number, toneMs: number, silenceMs: number): Buffer {
  return Buffer.concat([
    tonePcm16(1000, rate, (rate * toneMs) / 1000, 9000),
    Buffer.alloc((2 * rate * silenceMs) / 1000),
  ]);
}

function ulaw(pcm: Buffer): Buffer {
  const out = Buffer.alloc(pcm.length / 2);
  encodeInto('pcmu', samplesOf(pcm), out);
  return out;
}

const metric = async (name: string, label?: readonly [string, string]) =>
  scrapeMetric(await (await fetch(`${bridge!.http}/metrics`)).text(), name, label);

/** The one call the stand-in created, joined as `conn`. */
const callOf = (uv: UltravoxEmulator, conn: UltravoxConnection) => uv.calls().get(conn.call.callId)!;

describe('the ultravox bot dialect', () => {
  it('creates the call with the key, the settings and the caller’s own rates, and hears the caller unchanged', async () => {
    const uv = await setup({
      env: {
        BOT_VOICE: 'Mark',
        BOT_MODEL: 'ultravox-v0.7',
        BOT_SETTINGS: JSON.stringify({
          firstSpeakerSettings: { user: {} },
          systemPrompt: 'the settings lose to BOT_INSTRUCTIONS',
          temperature: 0.4,
          medium: { twilio: {} },
        }),
      },
    });
    const p = await caller('uv-pcm16', { codec: 'slin', sample_rate: 16000 });
    const conn = await uv.waitForSession(1, 5_000);
    const body = callOf(uv, conn).spec.body;
    expect(body).toEqual({
      firstSpeakerSettings: { user: {} },
      systemPrompt: 'Answer with a tone. reply_ms=600',
      temperature: 0.4,
      voice: 'Mark',
      model: 'ultravox-v0.7',
      medium: {
        serverWebSocket: { inputSampleRate: 16000, outputSampleRate: 16000, clientBufferSizeMs: 30_000 },
      },
    });
    const said = speech(16000, 800, 700);
    await p.sendPaced(said, 640, 20);
    await waitFor(() => conn.record.replies.length === 1, 5_000, 'the reply to the caller');
    // The bridge says nothing before the audio: the first thing the stand-in received is the caller.
    expect(conn.record.received[0]?.type).toBe('audio');
    expect(conn.record.received.every((m) => m.type === 'audio')).toBe(true);
    // No DSP for a PCM16 caller at its own rate: the model heard the very samples sent.
    const input = conn.record.inputAudio()!;
    expect(input.rate).toBe(16000);
    const heard = input.pcm;
    const sent = samplesOf(said);
    // The stand-in may have the tail still in flight: what it has is the start of what was sent.
    expect(heard.length).toBeGreaterThanOrEqual(sent.length - 16000 * 0.1);
    expect(Buffer.from(heard.buffer, heard.byteOffset, heard.byteLength)).toEqual(
      Buffer.from(sent.buffer, 0, heard.byteLength),
    );
    expect(conn.record.notes).toEqual([]);
  });

  it('decodes a µ-law caller only (8 kHz both ways), and plays the whole reply back', async () => {
    const uv = await setup();
    const p = await caller('uv-ulaw', { codec: 'pcmu', sample_rate: 8000 });
    const conn = await uv.waitForSession(1, 5_000);
    expect(callOf(uv, conn).spec.medium).toMatchObject({ inputSampleRate: 8000, outputSampleRate: 8000 });
    const said = ulaw(speech(8000, 800, 700));
    await p.sendPaced(said, 160, 20);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 8_000, 'the reply played');
    await waitFor(() => p.audioBytes().length >= 600 * 8, 3_000, 'the whole reply at the caller');
    await quietFor(200, 'audio past the reply');
    // The model heard the µ-law decoded, sample for sample.
    const want = new Int16Array(said.length);
    decodeInto('pcmu', said, want);
    const input = conn.record.inputAudio()!;
    expect(input.rate).toBe(8000);
    expect(Array.from(input.pcm.subarray(0, 6000))).toEqual(Array.from(want.subarray(0, 6000)));
    const inSnr = steadyToneSnrDb(trimSilence(input.pcm, 8000), 1000, 8000)!;
    const got = new Int16Array(p.audioBytes().length);
    decodeInto('pcmu', p.audioBytes(), got);
    const reply = trimSilence(got, 8000);
    const outSnr = steadyToneSnrDb(reply, replyToneHz(0), 8000)!;
    console.log(
      `ultravox µ-law: caller tone at the model ${inSnr.toFixed(1)} dB, reply at the caller ${outSnr.toFixed(1)} dB, ${reply.length / 8} ms of 600`,
    );
    expect(inSnr).toBeGreaterThanOrEqual(30);
    expect(outSnr).toBeGreaterThanOrEqual(30);
    expect(Math.abs(reply.length / 8 - 600)).toBeLessThanOrEqual(20);
    expect(got.length).toBeLessThan(600 * 8 + 160);
  });

  it('asks for each of the caller’s rates (16 kHz in, 8 kHz out), and the caller’s audio passes untouched', async () => {
    const uv = await setup();
    const p = await caller('uv-two-rates', { codec: 'slin', sample_rate: 16000, output_sample_rate: 8000 });
    const conn = await uv.waitForSession(1, 5_000);
    expect(callOf(uv, conn).spec.medium).toMatchObject({ inputSampleRate: 16000, outputSampleRate: 8000 });
    const said = speech(16000, 600, 700);
    await p.sendPaced(said, 640, 20);
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 8_000, 'the reply played');
    await waitFor(() => p.audioBytes().length >= 600 * 16, 3_000, 'the whole reply at the caller');
    const heard = conn.record.inputAudio()!.pcm;
    expect(Buffer.from(heard.buffer, heard.byteOffset, heard.byteLength)).toEqual(
      said.subarray(0, heard.byteLength),
    );
    // The reply at 8 kHz, as the caller takes it.
    const reply = trimSilence(samplesOf(p.audioBytes()), 8000);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 8000)!).toBeGreaterThanOrEqual(30);
    expect(Math.abs(reply.length / 8 - 600)).toBeLessThanOrEqual(20);
  });

  it('sends a digit as user text: later with BOT_DTMF text, soon (and a reply) with respond', async () => {
    const uv = await setup();
    const p = await caller('uv-dtmf-text', { codec: 'slin', sample_rate: 8000 });
    const conn = await uv.waitForSession(1, 5_000);
    await p.sendPaced(Buffer.alloc(3200), 320, 20);
    p.send({ event: 'dtmf', digit: '5' });
    await waitFor(() => conn.record.texts.length === 1, 3_000, 'the digit as text');
    expect(conn.record.received.filter((m) => m.type !== 'audio').map((m) => m.message)).toEqual([
      { type: 'user_text_message', text: '[DTMF 5]', urgency: 'later' },
    ]);
    await quietFor(300, 'no reply to a digit taken in later');
    expect(conn.record.replies).toEqual([]);
    p.close();
    await bridge!.close();
    await emulator!.close();

    const again = await setup({ env: { BOT_DTMF: 'respond' } });
    const q = await caller('uv-dtmf-respond', { codec: 'slin', sample_rate: 8000 });
    const c2 = await again.waitForSession(1, 5_000);
    await q.sendPaced(Buffer.alloc(3200), 320, 20);
    q.send({ event: 'dtmf', digit: '#' });
    await waitFor(() => c2.record.replies.length === 1, 3_000, 'a reply to the digit');
    expect(c2.record.texts.map((t) => [t.type, t.text])).toEqual([['user_text_message', '[DTMF #]']]);
    expect(c2.record.received.find((m) => m.type === 'user_text_message')?.message).toMatchObject({
      urgency: 'soon',
    });
    expect(c2.record.notes).toEqual([]);
  });

  it('ends the call when the agent closes after its reply, once the caller has heard all of it', async () => {
    // The agent speaks first: a 1.5 s greeting, all sent at once (the client buffer is 30 s).
    const uv = await setup({
      env: {
        BOT_INSTRUCTIONS: 'Greet with a tone. reply_ms=1500',
        BOT_SETTINGS: JSON.stringify({}),
      },
    });
    const p = await caller('uv-hangup', { codec: 'slin', sample_rate: 8000 });
    const conn = await uv.waitForSession(1, 5_000);
    await waitFor(() => (conn.record.replies[0]?.sent_ms ?? 0) >= 1500, 3_000, 'the greeting all sent');
    const heardAtClose = p.audioBytes().length / 16;
    conn.close(1000, 'the agent hung up');
    const end = await p.waitEvent('session_end', 5_000);
    console.log(
      `ultravox hang-up: ${heardAtClose} ms heard when the agent closed; the call ended after all of it`,
    );
    expect(heardAtClose).toBeLessThan(1000);
    expect(p.audioBytes().length).toBeGreaterThanOrEqual(1500 * 16);
    expect(end.reason).toBe('bot');
    expect(await p.waitClosed()).toBe(1000);
    expect(uv.calls().size).toBe(1); // not redialled
  });

  it('skips and counts malformed frames; a dropped socket is a new call that continues the old one', async () => {
    const logs = captureLog('info');
    const uv = await setup({ log: logs, env: { BOT_MAX_PAYLOAD_BYTES: '1048576' } });
    const p = await caller('uv-faults', { codec: 'slin', sample_rate: 8000 });
    const conn = await uv.waitForSession(1, 5_000);
    for (const kind of ['json', 'binary', 'unknown_event', 'no_type'] as const) conn.sendMalformed(kind);
    await waitFor(() => logs.find(/bad frame from bot; skipped/).length === 4, 3_000, 'the bad frames');
    expect(logs.find(/bad frame from bot; skipped/).map((l) => l.code)).toEqual([
      'bad_json',
      'odd_length',
      'unknown_event',
      'unknown_event',
    ]);
    expect(await metric('voicebridge_bad_frames_total', ['code', 'unknown_event'])).toBe(2);
    // The call goes on: the caller speaks and hears the reply.
    await p.sendPaced(speech(8000, 600, 700), 320, 20);
    await waitFor(() => p.audioBytes().length >= 600 * 16, 8_000, 'the reply after the bad frames');
    // Past the frame bound the socket is lost (1009): the bridge creates a call that continues this one.
    conn.sendMalformed('oversized');
    const second = await uv.waitForSession(2, 5_000);
    await waitFor(() => logs.find(/ultravox call joined/).length === 2, 3_000, 'the second call joined');
    const joined = logs.find(/ultravox call joined/);
    expect(joined[1]!.prior_call_id).toBe(conn.call.callId);
    expect(joined[1]!.call_id).toBe(second.call.callId);
    expect(p.errors().map((e) => e.code)).toEqual(['bot_unavailable']);
    await p.sendPaced(speech(8000, 600, 700), 320, 20);
    await waitFor(() => second.record.replies.length === 1, 5_000, 'the new call answering');
    expect(p.closeCode).toBeUndefined();
    expect(logs.lines.map((l) => JSON.stringify(l)).join('\n')).not.toContain(KEY);
  });

  it('redials a refused create (401, 503, no answer) and a refused join within BOT_RETRIES, then gives up', async () => {
    emulator = createUltravoxEmulator({ apiKey: KEY });
    const uvBase = await emulator.listen(0, '127.0.0.1');
    // In front of the stand-in: answers 503, then nothing at all, then passes creates through.
    const plan: ('503' | 'hang' | 'pass')[] = ['503', 'hang', 'pass'];
    const front = await httpServer((req, res) => {
      const step = plan.shift() ?? 'pass';
      if (step === '503') res.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"busy"}');
      if (step === 'pass') pass(req, res, uvBase);
    });
    emulator.failNextConnects(403, 1);
    const logs = captureLog('info');
    bridge = await startBridge(
      {
        BOT_DIALECT: 'ultravox',
        BOT_API_BASE: front,
        BOT_API_KEY: KEY,
        BOT_RETRY_BASE_MS: '20',
        BOT_CONNECT_TIMEOUT_MS: '300',
      },
      { log: logs.log },
    );
    const p = await caller('uv-refused', { codec: 'slin', sample_rate: 8000 });
    const conn = await emulator.waitForSession(1, 10_000);
    // 503, no answer in 300 ms, a join refused with 403 (its call left unjoined), then a call joined.
    expect(logs.find(/^bot refused the connection$/).map((l) => l.status)).toEqual([503, 403]);
    expect(logs.find(/^bot could not be reached/).map((l) => l.msg)).toEqual([
      `bot could not be reached (POST ${front}/api/calls answered HTTP 503)`,
      `bot could not be reached (POST ${front}/api/calls gave no answer in time)`,
      'bot could not be reached',
    ]);
    expect(emulator.calls().size).toBe(2);
    expect(conn.call.joined).not.toBeNull();
    expect(p.errors().map((e) => e.code)).toEqual(['bot_unavailable']);
    expect(p.closeCode).toBeUndefined();

    // A wrong key: refused every time, until BOT_RETRIES (here 2) run out; the call stays up.
    p.close();
    await bridge.close();
    const keyLogs = captureLog('info');
    bridge = await startBridge(
      {
        BOT_DIALECT: 'ultravox',
        BOT_API_BASE: uvBase,
        BOT_API_KEY: 'uv-not-the-key-0123456789',
        BOT_RETRIES: '2',
        BOT_RETRY_BASE_MS: '20',
      },
      { log: keyLogs.log },
    );
    const q = await caller('uv-wrong-key', { codec: 'slin', sample_rate: 8000 });
    await waitFor(() => q.errors().length === 2, 5_000, 'the bridge to give up');
    expect(q.errors()[1]!.message).toMatch(/gave up after 3 attempts, the call continues without a bot/);
    expect(keyLogs.find(/^bot refused the connection$/).map((l) => l.status)).toEqual([401, 401, 401]);
    // A 401's words are never logged (they may concern the key); nor is the key.
    expect(keyLogs.find(/ultravox refused to create the call/)).toEqual([]);
    expect(JSON.stringify(keyLogs.lines)).not.toContain('uv-not-the-key-0123456789');
    await q.sendPaced(Buffer.alloc(3200), 320, 20);
    expect(q.closeCode).toBeUndefined();
  });

  it('logs why Ultravox refused a bad setting, without the key', async () => {
    const logs = captureLog('info');
    const uv = await setup({
      log: logs,
      env: {
        BOT_RETRIES: '0',
        // Ultravox's own check refuses it, and its answer quotes the value: here, the key.
        BOT_SETTINGS: JSON.stringify({ firstSpeaker: KEY }),
      },
    });
    const p = await caller('uv-bad-setting', { codec: 'slin', sample_rate: 8000 });
    await waitFor(() => p.errors().length === 1, 5_000, 'the bridge to give up');
    const refused = logs.find(/ultravox refused to create the call/);
    expect(refused.map((l) => [l.status, l.detail])).toEqual([
      [400, 'firstSpeaker must be FIRST_SPEAKER_AGENT or FIRST_SPEAKER_USER, got "[redacted]"'],
    ]);
    expect(uv.calls().size).toBe(0);
    expect(JSON.stringify(logs.lines)).not.toContain(KEY);
  });

  it("holds a tenant's join URL to BOT_URL_ALLOWED_HOSTS, and gives up at once on one it may not dial", async () => {
    // A create-call that answers with a socket on another host.
    let creates = 0;
    const api = await httpServer((_req, res) => {
      creates++;
      res
        .writeHead(201, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ callId: 'c-1', joinUrl: 'wss://elsewhere.example/calls/c-1/server_web_socket' }),
        );
    });
    const logs = captureLog('info');
    bridge = await startBridge(
      { BOT_URL_ALLOWED_HOSTS: '127.0.0.1', BOT_RETRY_BASE_MS: '20' },
      { log: logs.log },
    );
    const token = await bridge.restToken(['media:manage']);
    const put = await fetch(`${bridge.http}/v1/media-stream`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        media_ws_url: 'wss://bridge.example/v1/media',
        bot: { dialect: 'ultravox', api_key: KEY, api_base: api },
      }),
    });
    expect(put.status).toBe(200);
    const p = await caller('uv-join-host', { codec: 'slin', sample_rate: 8000 });
    await waitFor(() => p.errors().length === 1, 5_000, 'the bridge to give up');
    expect(p.errors()[0]!.message).toMatch(/named a URL this bridge may not dial .*gave up after 1 attempts/);
    expect(creates).toBe(1);
    expect(logs.find(/^bot named a URL this bridge may not dial$/).map((l) => l.url)).toEqual([
      'wss://elsewhere.example/calls/c-1/server_web_socket',
    ]);
    expect(p.closeCode).toBeUndefined();

    // And the API base itself, Ultravox's own when none is given, when the tenant stores its bot.
    const refused = await fetch(`${bridge.http}/v1/media-stream`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ media_ws_url: 'wss://bridge.example/v1/media', bot: { dialect: 'ultravox' } }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toBe(
      'bot.api_base must be an https:// URL whose host the operator has listed in BOT_URL_ALLOWED_HOSTS, got https://api.ultravox.ai/',
    );
  });
});

describe('the ultravox bot as configured', () => {
  it('takes no BOT_URL, defaults its API base, and refuses a URL and bad settings by name', () => {
    const c = loadConfig({ BOT_DIALECT: 'ultravox', BOT_API_KEY: KEY, BOT_SETTINGS: '{"voice":"Mark"}' });
    expect(c.bot).toEqual({
      dialect: 'ultravox',
      url: '',
      apiKey: KEY,
      settings: { voice: 'Mark' },
      apiBase: 'https://api.ultravox.ai',
    });
    const refuse = (env: Record<string, string>) => {
      try {
        loadConfig({ BOT_DIALECT: 'ultravox', ...env });
      } catch (err) {
        return (err as Error).message;
      }
      return 'loaded';
    };
    expect(refuse({ BOT_URL: 'wss://bot.example/ws' })).toMatch(
      /BOT_URL does not apply to dialect ultravox, which takes no URL; dialect ultravox takes BOT_DIALECT, BOT_API_KEY, BOT_MODEL, BOT_INSTRUCTIONS, BOT_VOICE, BOT_DTMF, BOT_SETTINGS, BOT_API_BASE/,
    );
    expect(refuse({ BOT_SETTINGS: '[1,2]' })).toMatch(
      /BOT_SETTINGS must be a JSON object of at most 16384 bytes/,
    );
    expect(refuse({ BOT_SETTINGS: 'voice=Mark' })).toMatch(
      /BOT_SETTINGS must be a JSON object .*got text that is not JSON/,
    );
    expect(refuse({ BOT_API_BASE: 'https://user:pw@api.example/v1?key=x' })).toMatch(
      /BOT_API_BASE must be an http:\/\/ or https:\/\/ URL with a host and no credentials, query or #fragment \(at most 2048 characters\), got \(not shown\)/,
    );
    expect(refuse({ BOT_SETTINGS: JSON.stringify({ a: 'x'.repeat(20_000) }) })).toMatch(/got 20008 bytes/);
    const nested = (n: number): unknown => (n === 0 ? 1 : { a: nested(n - 1) });
    expect(refuse({ BOT_SETTINGS: JSON.stringify(nested(16)) })).toBe('loaded');
    expect(refuse({ BOT_SETTINGS: JSON.stringify(nested(17)) })).toMatch(/got an object nested deeper/);
  });
});

/** A plain HTTP server on loopback for `handle`; its base URL. */
async function httpServer(handle: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const s = createServer(handle);
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

/** Passes one request through to `base` and its answer back. */
function pass(req: IncomingMessage, res: ServerResponse, base: string): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void fetch(`${base}${req.url}`, {
      method: req.method!,
      headers: {
        'content-type': 'application/json',
        'x-api-key': String(req.headers['x-api-key']),
      },
      body: Buffer.concat(chunks),
    }).then(async (r) => {
      res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text());
    });
  });
}

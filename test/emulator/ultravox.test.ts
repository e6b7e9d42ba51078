/**
 * The Ultravox stand-in, driven over raw `ws` and `fetch` from the shapes Ultravox documents for the
 * `serverWebSocket` medium: the vendor's npm client (`ultravox-client`) joins calls over WebRTC (a LiveKit
 * room, an AudioContext and a microphone) and cannot dial a WebSocket call (docs/bot-emulators.md says
 * more). Checked: the create-call route with its key, the join, a tone in (measured in the record), the
 * reply tone out (frequency and SNR at the client) at the output rate, the playback buffer the server
 * models, barge-in with `playback_clear_buffer`, ping and pong, user text, a client tool round trip and
 * the call's limits. Real servers on 127.0.0.1 port 0.
 */
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { createUltravoxEmulator, type UltravoxEmulator } from '../../src/emulator/ultravox/server.js';
import { dominantHz, pcmBytes, pcmOf, toneChunks } from '../helpers/s2s.js';
import { waitFor } from '../helpers/wait.js';

let emulator: UltravoxEmulator | undefined;
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await emulator?.close();
  emulator = undefined;
});

async function start(options: Parameters<typeof createUltravoxEmulator>[0] = {}): Promise<string> {
  emulator = createUltravoxEmulator({ apiKey: 'uv-right', ...options });
  return emulator.listen(0);
}

async function createCall(base: string, body: Record<string, unknown>, key = 'uv-right') {
  const res = await fetch(`${base}/api/calls`, {
    method: 'POST',
    headers: { 'X-API-Key': key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const medium = (extra: Record<string, unknown> = {}) => ({
  serverWebSocket: { inputSampleRate: 16000, outputSampleRate: 24000, ...extra },
});

interface Joined {
  readonly ws: WebSocket;
  readonly messages: Record<string, unknown>[];
  /** Every text frame as received, JSON or not. */
  readonly texts: string[];
  /** Binary audio frames with their arrival time (performance.now()). */
  readonly audio: { at: number; bytes: Buffer }[];
  readonly closed: Promise<{ code: number; reason: string }>;
}

async function join(joinUrl: string): Promise<Joined> {
  const ws = new WebSocket(joinUrl);
  sockets.push(ws);
  const messages: Record<string, unknown>[] = [];
  const audio: Joined['audio'] = [];
  const texts: string[] = [];
  ws.on('message', (d, binary) => {
    if (binary) audio.push({ at: performance.now(), bytes: d as Buffer });
    else {
      texts.push(String(d));
      try {
        messages.push(JSON.parse(String(d)));
      } catch {}
    }
  });
  const closed = new Promise<{ code: number; reason: string }>((r) =>
    ws.once('close', (code, reason) => r({ code, reason: String(reason) })),
  );
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, messages, texts, audio, closed };
}

async function call(base: string, body: Record<string, unknown>): Promise<Joined> {
  const created = await createCall(base, body);
  expect(created.status).toBe(201);
  return join(created.body.joinUrl as string);
}

const speak = (j: Joined, chunks: Int16Array[]) => {
  for (const c of chunks) j.ws.send(pcmBytes(c));
};
const of = (j: Joined, type: string) => j.messages.filter((m) => m.type === type);
const heard = (j: Joined) => pcmOf(j.audio.map((a) => a.bytes));

describe('Ultravox stand-in on the serverWebSocket medium', () => {
  it('creates calls only with the right X-API-Key and a valid medium, answers 201 with the joinUrl, and lets it be joined once', async () => {
    const base = await start();
    expect((await createCall(base, { medium: medium() }, 'uv-wrong')).status).toBe(401);
    const noKey = await fetch(`${base}/api/calls`, { method: 'POST', body: '{}' });
    expect(noKey.status).toBe(401);
    expect(await createCall(base, { medium: { webRtc: {} } })).toEqual({
      status: 400,
      body: { detail: 'medium.serverWebSocket is required: the stand-in serves WebSocket calls only' },
    });
    expect((await createCall(base, { medium: { serverWebSocket: { inputSampleRate: 11 } } })).body).toEqual({
      detail:
        'medium.serverWebSocket.inputSampleRate must be an integer sample rate from 8000 to 48000, got 11',
    });
    const created = await createCall(base, {
      systemPrompt: 'Help.',
      medium: medium({ clientBufferSizeMs: 30000 }),
      selectedTools: [{ temporaryTool: { modelToolName: 'lookup_order', client: {} } }],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      callId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      joinUrl: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:\d+\/calls\/[0-9a-f-]{36}\/server_web_socket$/),
      medium: {
        serverWebSocket: { inputSampleRate: 16000, outputSampleRate: 24000, clientBufferSizeMs: 30000 },
      },
      firstSpeaker: 'FIRST_SPEAKER_AGENT',
      joined: null,
    });
    const j = await join(created.body.joinUrl as string);
    await waitFor(() => j.messages.length > 0, 2000, 'call_started');
    expect(j.messages[0]).toEqual({ type: 'call_started', callId: created.body.callId });
    const again = new WebSocket(created.body.joinUrl as string);
    const status = await new Promise((r) =>
      again.once('unexpected-response', (_q, res) => r(res.statusCode)),
    );
    expect(status).toBe(409);
    const read = await fetch(`${base}/api/calls/${created.body.callId}`, {
      headers: { 'X-API-Key': 'uv-right' },
    });
    expect(((await read.json()) as { joined: unknown }).joined).toEqual(expect.any(String));
    // A call not joined within its joinTimeout has ended.
    const late = await createCall(base, { medium: medium(), joinTimeout: '0.1s' });
    await waitFor(
      () => emulator!.calls().get(late.body.callId as string)!.endReason === 'unjoined',
      2000,
      'unjoined',
    );
    const refused = new WebSocket(late.body.joinUrl as string);
    expect(
      await new Promise((r) => refused.once('unexpected-response', (_q, res) => r(res.statusCode))),
    ).toBe(409);
  });

  it('hears binary PCM16 at the input rate (SNR >= 30 dB in the record) and answers the turn with a reply tone at the output rate (440 Hz, SNR >= 60 dB at the client)', async () => {
    const base = await start({ replyMs: 1000 });
    const j = await call(base, { medium: medium(), firstSpeakerSettings: { user: {} } });
    speak(j, toneChunks(1000, 16000, 1000, 700, 20));
    const conn = await emulator!.waitForSession();
    await waitFor(() => heard(j).length >= 24000, 5000, 'the reply');
    await waitFor(
      () => of(j, 'state').at(-1)?.state === 'listening' && of(j, 'state').length >= 4,
      3000,
      'listening again',
    );
    const input = conn.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'pcm16', rate: 16000 });
    expect(input.pcm.length).toBe(16000 * 1.7);
    expect(steadyToneSnrDb(input.pcm, 1000, 16000)).toBeGreaterThanOrEqual(30);
    const reply = heard(j);
    expect(reply.length).toBe(24000);
    expect(Math.abs(dominantHz(reply, 24000) - replyToneHz(0))).toBeLessThan(2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 24000)).toBeGreaterThanOrEqual(60);
    expect(of(j, 'state').map((m) => m.state)).toEqual(['listening', 'thinking', 'speaking', 'listening']);
    expect(of(j, 'transcript').map((m) => [m.role, m.medium, m.final])).toEqual([
      ['user', 'voice', true],
      ['agent', 'voice', false],
      ['agent', 'voice', true],
    ]);
    expect(conn.record.notes).toEqual([]);
  });

  it('sends reply audio at most clientBufferSizeMs ahead of real time', async () => {
    const base = await start({ replyMs: 1000 });
    const spans: number[] = [];
    for (const clientBufferSizeMs of [60, 30000]) {
      const j = await call(base, { medium: medium({ clientBufferSizeMs }) });
      await waitFor(() => heard(j).length >= 24000, 5000, 'the greeting');
      spans.push(j.audio.at(-1)!.at - j.audio[0]!.at);
      j.ws.close();
    }
    // 60 ms ahead: the last of 1000 ms arrives about 940 ms after the first; 30 s ahead: all at once.
    expect(spans[0]).toBeGreaterThanOrEqual(850);
    expect(spans[0]).toBeLessThan(1300);
    expect(spans[1]).toBeLessThan(150);
  });

  it('barges in: speech over a reply still playing at the client sends playback_clear_buffer and stops the reply, then answers the new turn', async () => {
    const base = await start({ replyMs: 500 });
    const j = await call(base, {
      systemPrompt: 'Talk at length.',
      medium: medium({ clientBufferSizeMs: 30000 }),
      firstSpeakerSettings: { agent: {} },
    });
    const conn = await emulator!.waitForSession();
    // The greeting (500 ms) went at once; speech while it still plays at the client interrupts it.
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 2000, 'the greeting sent');
    speak(j, toneChunks(1000, 16000, 300, 700, 20));
    await waitFor(() => conn.record.replies[1]?.status === 'completed', 3000, 'the reply to the barge-in');
    await waitFor(
      () => of(j, 'state').filter((m) => m.state === 'speaking').length === 2,
      2000,
      'the messages',
    );
    expect(of(j, 'playback_clear_buffer')).toHaveLength(1);
    expect(conn.record.replies[0]).toMatchObject({ status: 'interrupted', sent_ms: 500 });
    expect(conn.record.interruptions).toHaveLength(1);
    const types = j.messages.map((m) => (m.type === 'state' ? `state:${m.state}` : m.type));
    const at = types.indexOf('playback_clear_buffer');
    expect(types.slice(at, at + 3)).toEqual(['playback_clear_buffer', 'transcript', 'state:listening']);
    // Speech after the greeting has played at the client is a plain turn: no clear.
    await waitFor(() => of(j, 'state').at(-1)?.state === 'listening', 3000, 'the reply played');
    speak(j, toneChunks(1000, 16000, 300, 700, 20));
    await waitFor(() => conn.record.replies[2]?.status === 'completed', 3000, 'the third reply');
    expect(of(j, 'playback_clear_buffer')).toHaveLength(1);
  });

  it('answers ping with pong carrying its timestamp, records user text (its former name noted), and runs a client tool', async () => {
    const base = await start({ replyMs: 200 });
    const j = await call(base, {
      medium: medium(),
      firstSpeakerSettings: { user: {} },
      selectedTools: [
        { temporaryTool: { modelToolName: 'lookup_order', client: {} } },
        { temporaryTool: { modelToolName: 'web_lookup', http: { baseUrlPattern: 'https://x.test' } } },
      ],
    });
    const conn = await emulator!.waitForSession();
    j.ws.send(JSON.stringify({ type: 'ping', timestamp: 1234567890.123 }));
    await waitFor(() => of(j, 'pong').length === 1, 2000, 'pong');
    expect(of(j, 'pong')[0]).toEqual({ type: 'pong', timestamp: 1234567890.123 });

    j.ws.send(JSON.stringify({ type: 'user_text_message', text: '[DTMF 5]', urgency: 'later' }));
    j.ws.send(JSON.stringify({ type: 'input_text_message', text: '[DTMF 6]', deferResponse: true }));
    await waitFor(() => conn.record.texts.length === 2, 2000, 'the texts');
    expect(conn.record.texts.map((t) => [t.type, t.text])).toEqual([
      ['user_text_message', '[DTMF 5]'],
      ['input_text_message', '[DTMF 6]'],
    ]);
    expect(conn.record.replies).toHaveLength(0);
    expect(conn.record.notes).toEqual(['input_text_message is the former name of user_text_message']);

    const refused = await fetch(`${base}/emulator/ultravox/sessions/${conn.record.id}/tool-call`, {
      method: 'POST',
      body: JSON.stringify({ name: 'web_lookup' }),
    });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toEqual({
      error: { message: 'web_lookup is not a client tool of this call (selectedTools has lookup_order)' },
    });
    const invocationId = conn.callTool('lookup_order', { order_id: 'C3' });
    await waitFor(() => of(j, 'client_tool_invocation').length === 1, 2000, 'the invocation');
    expect(of(j, 'client_tool_invocation')[0]).toEqual({
      type: 'client_tool_invocation',
      toolName: 'lookup_order',
      invocationId,
      parameters: { order_id: 'C3' },
    });
    j.ws.send(JSON.stringify({ type: 'client_tool_result', invocationId, result: '{"status":"shipped"}' }));
    await waitFor(() => conn.record.replies[0]?.status === 'completed', 2000, 'the reply after the tool');
    expect(conn.record.tool_calls[0]).toMatchObject({
      name: 'lookup_order',
      answer: { type: 'client_tool_result', invocationId, result: '{"status":"shipped"}' },
    });
  });

  it('ends the call at its maxDuration, on hang_up, and leaves out the data messages switched off', async () => {
    const base = await start({ replyMs: 200 });
    const timed = await call(base, {
      medium: medium({ dataMessages: { transcript: false } }),
      maxDuration: '0.4s',
    });
    expect(await timed.closed).toEqual({ code: 1000, reason: 'max duration reached' });
    expect(of(timed, 'transcript')).toHaveLength(0);
    expect(of(timed, 'state').length).toBeGreaterThan(0);
    const [first] = emulator!.calls().values();
    expect(first!.endReason).toBe('timeout');

    const hung = await call(base, { medium: medium(), firstSpeakerSettings: { user: {} } });
    hung.ws.send(JSON.stringify({ type: 'hang_up', message: 'Goodbye!' }));
    expect(await hung.closed).toEqual({ code: 1000, reason: 'hang up' });
    expect(heard(hung).length).toBe(24000 * 0.2);
    const curt = await call(base, { medium: medium(), firstSpeakerSettings: { user: {} } });
    curt.ws.send(JSON.stringify({ type: 'hang_up' }));
    expect(await curt.closed).toEqual({ code: 1000, reason: 'hang up' });
    expect(curt.audio).toHaveLength(0);
  });

  it('refuses and drops joins on request, sends malformed frames, and notes what a sloppy client does', async () => {
    const base = await start();
    const created = await createCall(base, { medium: medium(), firstSpeakerSettings: { user: {} } });
    const joinUrl = created.body.joinUrl as string;
    await fetch(`${base}/emulator/ultravox/fail-connects`, { method: 'POST', body: '{"status":503}' });
    await fetch(`${base}/emulator/ultravox/drop-connects`, { method: 'POST', body: '{}' });
    const refused = new WebSocket(joinUrl);
    expect(
      await new Promise((r) => refused.once('unexpected-response', (_q, res) => r(res.statusCode))),
    ).toBe(503);
    const dropped = new WebSocket(joinUrl);
    expect((await new Promise<Error>((r) => dropped.once('error', r))).message).toMatch(
      /socket hang up|ECONNRESET/,
    );

    const j = await join(joinUrl);
    const conn = await emulator!.waitForSession();
    for (const kind of ['json', 'binary', 'unknown_event', 'no_type'])
      await fetch(`${base}/emulator/ultravox/sessions/${conn.record.id}/malformed`, {
        method: 'POST',
        body: JSON.stringify({ kind }),
      });
    await waitFor(() => j.audio.length === 1 && j.texts.length >= 5, 2000, 'the malformed frames');
    expect(j.audio[0]!.bytes.length).toBe(3);
    expect(j.texts.slice(2)).toEqual([
      '{"type":"transcript","role":',
      '{"type":"stand_in_unknown_message"}',
      '{"state":"speaking"}',
    ]);

    j.ws.send(Buffer.from([1, 2, 3]));
    j.ws.send('not json');
    j.ws.send(JSON.stringify({ text: 'no type' }));
    j.ws.send(JSON.stringify({ type: 'input_audio_buffer.append' }));
    j.ws.send(JSON.stringify({ type: 'user_text_message', text: 'x', urgency: 'now' }));
    j.ws.send(JSON.stringify({ type: 'client_tool_result', invocationId: 'nope', result: 'x' }));
    await waitFor(() => conn.record.notes.length >= 6, 2000, `the notes (${conn.record.notes.length})`).catch(
      (err) => {
        throw new Error(`${err.message}: ${JSON.stringify(conn.record.notes)}`);
      },
    );
    expect(conn.record.notes).toEqual([
      'binary audio must be whole 16-bit samples, got a frame of 3 bytes',
      'a text frame that is not JSON',
      'a data message without a string `type`',
      'unknown data message type "input_audio_buffer.append"',
      'user_text_message.urgency must be immediate, soon or later, got "now"',
      'client_tool_result for an unknown invocationId "nope"',
    ]);
  });
});

/**
 * The OpenAI Realtime stand-in against the `openai` package's own realtime WebSocket client, over wss
 * on 127.0.0.1 port 0 (its Azure client too, on Azure's GA path with the `api-key` header). Audio is checked by measurement: tone SNR of what the stand-in recorded and of
 * what the client received, and sample counts against the reply length.
 */
import { request } from 'node:https';
import alawmulaw from 'alawmulaw';
import { AzureOpenAI } from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import { createRealtimeEmulator, type RealtimeEmulator } from '../../src/emulator/realtime/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { type Client, openaiClient, pcm16, replyBytes, TEST_TLS } from '../helpers/realtime.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const { mulaw } = alawmulaw;
let emulator: RealtimeEmulator | undefined;
const clients: Client[] = [];
const closers: (() => void)[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.rt.close();
  for (const c of closers.splice(0)) c();
  await emulator?.close();
  emulator = undefined;
});

async function start(options: Parameters<typeof createRealtimeEmulator>[0] = {}): Promise<string> {
  emulator = createRealtimeEmulator({ tls: TEST_TLS, ...options });
  return emulator.listen(0);
}

function connect(base: string, apiKey?: string): Client {
  const c = openaiClient(base, apiKey);
  clients.push(c);
  return c;
}

/** Appends PCM16 24 kHz samples in 40 ms events, as base64. */
function appendPcm(c: Client, pcm: Int16Array): void {
  for (let i = 0; i < pcm.length; i += 960) {
    const part = pcm.subarray(i, i + 960);
    c.rt.send({
      type: 'input_audio_buffer.append',
      audio: Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64'),
    });
  }
}

describe('realtime stand-in with the openai client', () => {
  it('answers a session.update with the GA audio format objects and turn detection in session.updated', async () => {
    const c = connect(await start());
    const created = await c.next('session.created');
    expect(created.session).toMatchObject({ type: 'realtime', model: 'gpt-realtime' });
    await c.opened;
    c.rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        instructions: 'Be brief.',
        audio: {
          input: {
            format: { type: 'audio/pcmu' },
            turn_detection: { type: 'semantic_vad', eagerness: 'high' },
          },
          output: { format: { type: 'audio/pcma' }, voice: 'cedar' },
        },
      },
    });
    const updated = await c.next('session.updated');
    expect(updated.session).toMatchObject({
      type: 'realtime',
      instructions: 'Be brief.',
      audio: {
        input: {
          format: { type: 'audio/pcmu' },
          turn_detection: { type: 'semantic_vad', eagerness: 'high', interrupt_response: true },
        },
        output: { format: { type: 'audio/pcma' }, voice: 'cedar' },
      },
    });
  });

  it('answers invalid session fields with invalid_request_error events naming the param, and goes on', async () => {
    const c = connect(await start());
    await c.opened;
    const bad = [
      [
        { type: 'realtime', audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } },
        'invalid_value',
        'session.audio.input.format.rate',
      ],
      [
        { type: 'realtime', audio: { output: { voice: 'robot' } } },
        'invalid_value',
        'session.audio.output.voice',
      ],
      [{ type: 'realtime', temperature: 0.7 }, 'unknown_parameter', 'session.temperature'],
      [{ instructions: 'x' }, 'missing_required_parameter', 'session.type'],
      [
        { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad', threshold: 2 } } } },
        'decimal_above_max_value',
        'session.audio.input.turn_detection.threshold',
      ],
      [{ type: 'realtime', instructions: 42 }, 'invalid_type', 'session.instructions'],
    ] as const;
    for (const [session, ,] of bad)
      c.rt.send({ type: 'session.update', session: session as never, event_id: 'evt_bad' });
    await c.next('error', bad.length);
    const errors = c.of('error').map((e) => [e.error.type, e.error.code, e.error.param, e.error.event_id]);
    expect(errors).toEqual(bad.map(([, code, param]) => ['invalid_request_error', code, param, 'evt_bad']));
    expect(c.errors.map((e) => e.code)).toEqual(bad.map(([, code]) => code));
    c.rt.send({ type: 'session.update', session: { type: 'realtime', instructions: 'ok' } });
    expect((await c.next('session.updated')).session).toMatchObject({ instructions: 'ok' });
  });

  it('hears an appended PCM tone (SNR >= 30 dB in the record), detects the turn and replies with its tone for the reply length', async () => {
    const base = await start({ replyMs: 1200 });
    const c = connect(base);
    await c.opened;
    const tone = generateTone(1000, 24000, 24000, 0.3);
    appendPcm(c, tone);
    appendPcm(c, new Int16Array(24000 * 0.7));
    const started = await c.next('input_audio_buffer.speech_started');
    expect(started.audio_start_ms).toBe(0);
    const stopped = await c.next('input_audio_buffer.speech_stopped');
    expect(stopped.item_id).toBe(started.item_id);
    expect(stopped.audio_end_ms).toBeGreaterThanOrEqual(1500);
    expect(stopped.audio_end_ms).toBeLessThanOrEqual(1520);
    expect((await c.next('input_audio_buffer.committed')).item_id).toBe(started.item_id);
    const done = await c.next('response.done');
    expect(done.response.status).toBe('completed');

    const record = emulator!.sessions()[0]!.record;
    const input = record.inputAudio()!;
    expect(input).toMatchObject({ format: 'audio/pcm', rate: 24000 });
    expect(input.pcm.length).toBe(24000 * 1.7);
    expect(steadyToneSnrDb(input.pcm, 1000, 24000)).toBeGreaterThanOrEqual(30);

    const reply = pcm16(replyBytes(c.events, done.response.id));
    expect(reply.length).toBe(24000 * 1.2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 24000)).toBeGreaterThanOrEqual(60);
    const order = c.events
      .map((e) => e.type)
      .filter((t) => t.startsWith('response.') && t !== 'response.output_audio.delta');
    expect(order).toEqual([
      'response.created',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_audio_transcript.delta',
      'response.output_audio.done',
      'response.output_audio_transcript.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.done',
    ]);
    expect(record.responses[0]).toMatchObject({
      tone_hz: replyToneHz(0),
      planned_ms: 1200,
      sent_ms: 1200,
      status: 'completed',
    });
  });

  it('keeps the audio timeline across input_audio_buffer.clear: audio_start_ms counts all audio appended, less the prefix padding (never before the clear)', async () => {
    const c = connect(await start({ replyMs: 100 }));
    await c.opened;
    appendPcm(c, new Int16Array(24000 * 0.5));
    c.rt.send({ type: 'input_audio_buffer.clear' });
    await c.next('input_audio_buffer.cleared');
    appendPcm(c, new Int16Array(24000 * 0.5));
    appendPcm(c, generateTone(1000, 24000, 24000 * 0.4, 0.3));
    const started = await c.next('input_audio_buffer.speech_started');
    expect(started.audio_start_ms).toBe(1000 - 300);
  });

  it('takes µ-law input and replies in µ-law at 8 kHz, measured through an independent G.711 codec', async () => {
    const c = connect(await start({ replyMs: 800 }));
    await c.opened;
    c.rt.send({
      type: 'session.update',
      session: {
        type: 'realtime',
        audio: { input: { format: { type: 'audio/pcmu' } }, output: { format: { type: 'audio/pcmu' } } },
      },
    });
    await c.next('session.updated');
    const tone = generateTone(700, 8000, 8000, 0.3);
    const encoded = Buffer.from(mulaw.encode(tone));
    for (let i = 0; i < encoded.length; i += 320)
      c.rt.send({
        type: 'input_audio_buffer.append',
        audio: encoded.subarray(i, i + 320).toString('base64'),
      });
    c.rt.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(8000, 0xff).toString('base64') });
    const done = await c.next('response.done');
    const input = emulator!.sessions()[0]!.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'audio/pcmu', rate: 8000 });
    expect(steadyToneSnrDb(input.pcm.subarray(0, 8000), 700, 8000)).toBeGreaterThanOrEqual(30);
    const reply = mulaw.decode(new Uint8Array(replyBytes(c.events, done.response.id)));
    expect(reply.length).toBe(8000 * 0.8);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 8000)).toBeGreaterThanOrEqual(30);
  });

  it('paces deltas at real time with --output-rate-factor 1, keeping --lead-ms of audio ahead of that pace', async () => {
    /** Audio (ms) the client has 60 ms after a 2 s reply's first delta, at real time with `leadMs`. */
    const aheadAt60Ms = async (leadMs: number) => {
      const c = connect(await start({ outputRateFactor: 1, leadMs }));
      await c.opened;
      c.rt.send({ type: 'session.update', session: { type: 'realtime', instructions: 'reply_ms=2000' } });
      await c.next('session.updated');
      c.rt.send({ type: 'response.create' });
      await c.next('response.output_audio.delta');
      await quietFor(60, 'no delta beyond the pace and the lead');
      const ms = (replyBytes(c.events).length / 2 / 24000) * 1000;
      c.rt.close();
      await emulator?.close();
      return ms;
    };
    // Just in time: the first 100 ms delta at once, the next one 100 ms later.
    expect(await aheadAt60Ms(0)).toBe(100);
    // 400 ms ahead: five deltas at once (the one due now and the four of the lead), none more yet.
    expect(await aheadAt60Ms(400)).toBe(500);
  });

  it('records speech_started during a long reply and the client truncate with its audio_end_ms; refuses one past the audio sent', async () => {
    const base = await start({ outputRateFactor: 4 });
    const c = connect(base);
    await c.opened;
    c.rt.send({
      type: 'session.update',
      session: { type: 'realtime', instructions: 'Talk a lot. reply_ms=20000' },
    });
    await c.next('session.updated');
    c.rt.send({ type: 'response.create' });
    const firstDelta = await c.next('response.output_audio.delta');
    await c.next('response.output_audio.delta', 10);
    const session = emulator!.sessions()[0]!;
    expect((await control(base, 'POST', `/sessions/${session.record.id}/speech-started`)).status).toBe(200);
    const started = await c.next('input_audio_buffer.speech_started');
    expect(started.item_id).toMatch(/^item_/);
    const done = await c.next('response.done');
    expect(done.response.status).toBe('cancelled');
    expect(done.response.status_details).toMatchObject({ type: 'cancelled', reason: 'turn_detected' });
    const sentMs = (replyBytes(c.events).length / 2 / 24000) * 1000;
    expect(sentMs).toBeLessThan(20000);
    c.rt.send({
      type: 'conversation.item.truncate',
      item_id: firstDelta.item_id,
      content_index: 0,
      audio_end_ms: Math.ceil(sentMs) + 500,
    });
    const err = await c.next('error');
    expect(err.error).toMatchObject({ code: 'invalid_value', param: 'audio_end_ms' });
    expect(err.error.message).toContain('is already shorter than');
    c.rt.send({
      type: 'conversation.item.truncate',
      item_id: firstDelta.item_id,
      content_index: 0,
      audio_end_ms: 640,
    });
    const truncated = await c.next('conversation.item.truncated');
    expect(truncated).toMatchObject({ item_id: firstDelta.item_id, audio_end_ms: 640 });
    expect(session.record.truncates.map((t) => [t.audio_end_ms, t.accepted])).toEqual([
      [Math.ceil(sentMs) + 500, false],
      [640, true],
    ]);
    expect(session.record.truncates[1]!.item_audio_ms).toBeCloseTo(sentMs, 6);
  });

  it('refuses connects with 401 or 429 when told to, which the client sees as a failed handshake, then accepts again', async () => {
    const base = await start();
    const set = await control(base, 'POST', '/fail-connects', { status: 401, count: 1 });
    expect(set).toMatchObject({ status: 200, body: { status: 401, count: 1 } });
    const refused = connect(base);
    await expect(refused.opened).rejects.toThrow(/401/);
    await control(base, 'POST', '/fail-connects', { status: 429 });
    await expect(connect(base).opened).rejects.toThrow(/429/);
    const ok = connect(base);
    await ok.opened;
    await ok.next('session.created');
    expect(emulator!.sessions()).toHaveLength(1);
  });

  it("serves Azure OpenAI's GA path to the openai package's Azure client, which sends the key as api-key; OpenAI's path takes no api-key", async () => {
    const base = await start({ apiKey: 'azure-key' });
    const azure = new AzureOpenAI({ endpoint: base, apiKey: 'azure-key', apiVersion: '2025-08-28' });
    const rt = await OpenAIRealtimeWS.azure(azure, {
      deploymentName: 'my-deployment',
      options: { ca: TEST_TLS.cert },
    });
    closers.push(() => rt.close());
    await new Promise<void>((resolve, reject) => {
      rt.socket.once('open', () => resolve());
      rt.socket.once('error', reject);
    });
    const rec = emulator!.sessions()[0]!.record;
    expect(rec.path).toBe('/openai/v1/realtime');
    expect(rec.model).toBe('my-deployment');
    expect(rec.key_via).toEqual(['api-key']);
    // OpenAI's own path does not take Azure's header: a key there is a bearer token.
    const plain = new WebSocket(`${base.replace(/^https/, 'wss')}/v1/realtime?model=m`, {
      ca: TEST_TLS.cert,
      headers: { 'api-key': 'azure-key' },
    });
    closers.push(() => plain.terminate());
    await expect(
      new Promise((resolve, reject) => {
        plain.once('open', resolve);
        plain.once('error', reject);
      }),
    ).rejects.toThrow(/401/);
  });

  it('refuses a handshake without the configured key with 401', async () => {
    const base = await start({ apiKey: 'sk-right' });
    await expect(connect(base, 'sk-wrong').opened).rejects.toThrow(/401/);
    const ok = connect(base, 'sk-right');
    await ok.opened;
  });

  it('cancels a reply on response.cancel, refuses a second response.create and a too-short commit', async () => {
    const c = connect(await start({ replyMs: 10_000, outputRateFactor: 2 }));
    await c.opened;
    c.rt.send({ type: 'response.create' });
    await c.next('response.output_audio.delta');
    c.rt.send({ type: 'response.create' });
    expect((await c.next('error')).error.code).toBe('conversation_already_has_active_response');
    c.rt.send({ type: 'response.cancel' });
    const done = await c.next('response.done');
    expect(done.response).toMatchObject({
      status: 'cancelled',
      status_details: { reason: 'client_cancelled' },
    });
    c.rt.send({ type: 'response.cancel' });
    expect((await c.next('error', 2)).error.code).toBe('response_cancel_not_active');
    c.rt.send({ type: 'input_audio_buffer.commit' });
    expect((await c.next('error', 3)).error.code).toBe('input_audio_buffer_commit_empty');
  });

  it('adds text items and replies to response.create with the next tone', async () => {
    const c = connect(await start({ replyMs: 300 }));
    await c.opened;
    c.rt.send({ type: 'response.create' });
    await c.next('response.done');
    c.rt.send({
      type: 'conversation.item.create',
      item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello' }] },
    });
    const added = await c.next('conversation.item.added', 2);
    expect(added.item).toMatchObject({ type: 'message', role: 'user' });
    c.rt.send({ type: 'response.create' });
    const second = await c.next('response.done', 2);
    const reply = pcm16(replyBytes(c.events, second.response.id));
    expect(steadyToneSnrDb(reply, replyToneHz(1), 24000)).toBeGreaterThanOrEqual(60);
  });

  it('closes a session and sends malformed frames on request; the record shows the close code', async () => {
    const base = await start();
    const c = connect(base);
    await c.opened;
    const id = emulator!.sessions()[0]!.record.id;
    await control(base, 'POST', `/sessions/${id}/malformed`, { kind: 'json' });
    await waitFor(() => c.errors.some((e) => /parse/.test(e.message)), 2000, 'a parse error at the client');
    const bad = await control(base, 'POST', `/sessions/${id}/malformed`, { kind: 'nonsense' });
    expect(bad.status).toBe(400);
    await control(base, 'POST', `/sessions/${id}/close`, { code: 4000, reason: 'test' });
    await waitFor(() => c.rt.socket.readyState === c.rt.socket.CLOSED, 2000, 'the client socket to close');
    const list = await control(base, 'GET', '/sessions');
    expect(list.body).toMatchObject({ sessions: [{ id, close_code: 4000 }] });
  });
});

/** A control API call over https, trusting the test certificate. */
async function control(
  base: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const url = new URL(`/emulator/realtime${path}`, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method, ca: TEST_TLS.cert, headers: { 'content-type': 'application/json' } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: JSON.parse(Buffer.concat(parts).toString() || 'null'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/**
 * The ElevenLabs Agents stand-in on a raw `ws` client, for what the vendor's clients cannot show because
 * they always behave: pongs missed or late (the stand-in closes), the real server's `event_id` numbering
 * around an interruption with late audio, the connection faults, malformed frames, and the notes the
 * stand-in keeps on a client that breaks the protocol.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  createElevenLabsEmulator,
  type ElevenLabsEmulator,
} from '../../src/emulator/elevenlabs-agent/server.js';
import { pcmBytes, toneChunks } from '../helpers/s2s.js';
import { waitFor } from '../helpers/wait.js';

let emulator: ElevenLabsEmulator | undefined;
const sockets: WebSocket[] = [];

afterEach(async () => {
  for (const ws of sockets.splice(0)) ws.terminate();
  await emulator?.close();
  emulator = undefined;
});

interface Raw {
  readonly ws: WebSocket;
  readonly messages: Record<string, unknown>[];
  readonly frames: { binary: boolean; text: string }[];
  readonly closed: Promise<{ code: number; reason: string }>;
}

async function raw(url: string, protocols?: string[]): Promise<Raw> {
  const ws = new WebSocket(url, protocols);
  sockets.push(ws);
  const messages: Record<string, unknown>[] = [];
  const frames: Raw['frames'] = [];
  ws.on('message', (d, binary) => {
    const text = binary ? '' : String(d);
    frames.push({ binary, text });
    try {
      messages.push(JSON.parse(text));
    } catch {}
  });
  const closed = new Promise<{ code: number; reason: string }>((r) =>
    ws.once('close', (code, reason) => r({ code, reason: String(reason) })),
  );
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return { ws, messages, frames, closed };
}

const send = (r: Raw, m: unknown) => r.ws.send(JSON.stringify(m));
const init = (r: Raw) =>
  send(r, { type: 'conversation_initiation_client_data', dynamic_variables: { tenant: 't1' } });
const of = (r: Raw, type: string) => r.messages.filter((m) => m.type === type);

describe('ElevenLabs Agents stand-in on the wire', () => {
  it('closes the socket (1008) when a ping goes unanswered past the bound', async () => {
    emulator = createElevenLabsEmulator({ pingIntervalMs: 100, pongTimeoutMs: 200 });
    await emulator.listen(0);
    const r = await raw(emulator.wsUrl('agent_a'));
    init(r);
    const { code, reason } = await r.closed;
    expect(code).toBe(1008);
    expect(reason).toBe('no pong within 200 ms');
    const record = emulator.sessions()[0]!.record;
    expect(record.closed_by).toBe('server');
    expect(record.pings[0]).toMatchObject({ id: 1, answered_at_ms: null });
  });

  it('counts a late pong as missed (and notes it) but keeps a conversation whose pongs come in time', async () => {
    emulator = createElevenLabsEmulator({ pingIntervalMs: 100, pongTimeoutMs: 150, maxMissedPongs: 2 });
    await emulator.listen(0);
    const r = await raw(emulator.wsUrl('agent_a'));
    let answered = 0;
    r.ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as { type: string; ping_event?: { event_id: number } };
      if (m.type !== 'ping') return;
      answered++;
      // The second ping's pong comes 250 ms late; every other one at once.
      const delay = m.ping_event!.event_id === 2 ? 250 : 0;
      setTimeout(() => send(r, { type: 'pong', event_id: m.ping_event!.event_id }), delay);
    });
    init(r);
    const conv = await emulator.waitForSession();
    await waitFor(() => answered >= 8, 5000, '8 pings');
    expect(conv.record.closed_at).toBeNull();
    await waitFor(() => conv.record.notes.length > 0, 1000, 'the late pong noted');
    expect(conv.record.notes[0]).toMatch(/^pong for ping 2 after \d+ ms \(bound 150 ms\)$/);
  });

  it("numbers events as the real server does: the interruption opens a turn, the cut reply's late audio keeps its older id, the next reply shares the interruption's", async () => {
    emulator = createElevenLabsEmulator({ replyMs: 10_000, lateAudioChunks: 2, pingIntervalMs: 0 });
    await emulator.listen(0);
    const r = await raw(emulator.wsUrl('agent_a'));
    init(r);
    const b64 = (c: Int16Array) => pcmBytes(c).toString('base64');
    for (const c of toneChunks(1000, 16000, 300, 600, 50)) send(r, { user_audio_chunk: b64(c) });
    await waitFor(() => of(r, 'audio').length >= 5, 3000, 'the first reply');
    for (const c of toneChunks(1000, 16000, 300, 600, 50)) send(r, { user_audio_chunk: b64(c) });
    await waitFor(() => of(r, 'agent_response').length >= 2, 3000, 'the second reply');
    const types = r.messages.map((m) => m.type);
    const cutAt = types.indexOf('interruption');
    expect(r.messages[cutAt]).toEqual({ type: 'interruption', interruption_event: { event_id: 2 } });
    const ids = (from: number, to: number) =>
      r.messages
        .slice(from, to)
        .flatMap((m) => (m.type === 'audio' ? [(m.audio_event as { event_id: number }).event_id] : []));
    const nextAt = types.indexOf('agent_response', cutAt);
    expect(ids(0, cutAt).every((id) => id === 1)).toBe(true);
    expect(ids(cutAt, nextAt)).toEqual([1, 1]);
    expect(r.messages[nextAt]).toMatchObject({ agent_response_event: { event_id: 2 } });
    await waitFor(() => ids(nextAt, r.messages.length).length >= 3, 3000, 'the next reply audio');
    expect(new Set(ids(nextAt, r.messages.length))).toEqual(new Set([2]));
    expect(emulator.sessions()[0]!.record.replies[0]).toMatchObject({ status: 'interrupted', late_ms: 200 });
  });

  it("with interruptionEventId 'cut', gives the interruption the cut turn's id, so its late audio comes at that id; the next reply opens a new one", async () => {
    emulator = createElevenLabsEmulator({
      replyMs: 10_000,
      lateAudioChunks: 2,
      interruptionEventId: 'cut',
      pingIntervalMs: 0,
    });
    await emulator.listen(0);
    const r = await raw(emulator.wsUrl('agent_a'));
    init(r);
    const b64 = (c: Int16Array) => pcmBytes(c).toString('base64');
    for (const c of toneChunks(1000, 16000, 300, 600, 50)) send(r, { user_audio_chunk: b64(c) });
    await waitFor(() => of(r, 'audio').length >= 5, 3000, 'the first reply');
    for (const c of toneChunks(1000, 16000, 300, 600, 50)) send(r, { user_audio_chunk: b64(c) });
    await waitFor(() => of(r, 'agent_response').length >= 2, 3000, 'the second reply');
    const types = r.messages.map((m) => m.type);
    const cutAt = types.indexOf('interruption');
    expect(r.messages[cutAt]).toEqual({ type: 'interruption', interruption_event: { event_id: 1 } });
    const ids = (from: number, to: number) =>
      r.messages
        .slice(from, to)
        .flatMap((m) => (m.type === 'audio' ? [(m.audio_event as { event_id: number }).event_id] : []));
    const nextAt = types.indexOf('agent_response', cutAt);
    expect(ids(cutAt, nextAt)).toEqual([1, 1]);
    expect(r.messages[nextAt]).toMatchObject({ agent_response_event: { event_id: 2 } });
    expect(emulator.sessions()[0]!.record.interruptions).toMatchObject([{ turn: 1 }]);
  });

  it('refuses and drops handshakes on request, sends malformed frames, and accepts the convai subprotocol', async () => {
    emulator = createElevenLabsEmulator({ pingIntervalMs: 0 });
    const base = await emulator.listen(0);
    await fetch(`${base}/emulator/elevenlabs-agent/fail-connects`, {
      method: 'POST',
      body: JSON.stringify({ status: 429 }),
    });
    await fetch(`${base}/emulator/elevenlabs-agent/drop-connects`, { method: 'POST', body: '{}' });
    const refused = new WebSocket(emulator.wsUrl('agent_a'));
    const status = await new Promise((r) =>
      refused.once('unexpected-response', (_q, res) => r(res.statusCode)),
    );
    expect(status).toBe(429);
    const dropped = new WebSocket(emulator.wsUrl('agent_a'));
    const err = await new Promise<Error>((r) => dropped.once('error', r));
    expect(err.message).toMatch(/socket hang up|ECONNRESET/);
    expect(emulator.sessions()).toHaveLength(0);

    const r = await raw(emulator.wsUrl('agent_a'), ['convai', 'bearer.token']);
    expect(r.ws.protocol).toBe('convai');
    init(r);
    const conv = await emulator.waitForSession();
    for (const kind of ['json', 'binary', 'unknown_event', 'no_type'])
      await fetch(`${base}/emulator/elevenlabs-agent/sessions/${conv.record.id}/malformed`, {
        method: 'POST',
        body: JSON.stringify({ kind }),
      });
    await waitFor(() => r.frames.length >= 5, 2000, 'the malformed frames');
    expect(r.frames.slice(1).map((f) => (f.binary ? 'binary' : f.text.slice(0, 12)))).toEqual([
      '{"type":"aud',
      'binary',
      '{"type":"sta',
      '{"audio_even',
    ]);
  });

  it('notes what a sloppy client does against the protocol', async () => {
    emulator = createElevenLabsEmulator({ pingIntervalMs: 0 });
    await emulator.listen(0);
    const r = await raw(emulator.wsUrl('agent_a'));
    send(r, { user_audio_chunk: 'AAA' });
    send(r, { user_audio_chunk: 'AAAA' });
    send(r, { user_audio_chunk: 'AAAAAA==' });
    init(r);
    send(r, { type: 'input_text_message', text: 'hi' });
    send(r, { type: 'user_message' });
    send(r, { type: 'pong', event_id: 99 });
    send(r, { type: 'client_tool_result', tool_call_id: 'nope', result: 'x', is_error: false });
    r.ws.send(Buffer.from([1, 2, 3]));
    const conv = await emulator.waitForSession();
    await waitFor(() => conv.record.notes.length >= 9, 2000, 'the notes');
    expect(conv.record.notes).toEqual([
      'user_audio_chunk is not valid base64',
      'user_audio_chunk in pcm_16000 must be whole 16-bit samples, got 3 bytes',
      'user_audio_chunk before conversation_initiation_client_data',
      'conversation_initiation_client_data after the conversation had started',
      'unknown message type "input_text_message"',
      'user_message.text must be a string',
      'pong for an event_id never pinged: 99',
      'client_tool_result for an unknown tool_call_id "nope"',
      'binary frame: the conversation socket carries JSON text frames only',
    ]);
  });
});

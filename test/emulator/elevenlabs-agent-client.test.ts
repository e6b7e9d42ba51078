/**
 * The ElevenLabs Agents stand-in against `@elevenlabs/client`, the vendor's official browser and Node
 * client, pointed at the stand-in with its `origin` and `signedUrl` options. Node 20 has no global
 * WebSocket, so `ws` stands in for it (the client asks only for the standard browser API). Its voice
 * conversation needs an AudioContext and microphone, so the tests use its text conversation (which keeps
 * the socket, the pongs, the client tools and the user messages) and its exported WebSocket connection
 * class for audio.
 */
import { type IncomingSocketEvent, TextConversation, WebSocketConnection } from '@elevenlabs/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import {
  createElevenLabsEmulator,
  type ElevenLabsEmulator,
} from '../../src/emulator/elevenlabs-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { dominantHz, pcmBytes, pcmOf, toneChunks } from '../helpers/s2s.js';
import { waitFor } from '../helpers/wait.js';

const globals = globalThis as { WebSocket?: unknown };
const hadWebSocket = globals.WebSocket;
beforeAll(() => {
  globals.WebSocket = WebSocket;
});
afterAll(() => {
  globals.WebSocket = hadWebSocket;
});

let emulator: ElevenLabsEmulator | undefined;
const ends: (() => unknown)[] = [];

afterEach(async () => {
  for (const end of ends.splice(0)) await end();
  await emulator?.close();
  emulator = undefined;
});

async function start(options: Parameters<typeof createElevenLabsEmulator>[0] = {}): Promise<string> {
  emulator = createElevenLabsEmulator({ apiKey: 'xi-right', pingIntervalMs: 0, ...options });
  return emulator.listen(0);
}

const origin = (base: string) => base.replace(/^http/, 'ws');
type Audio = Extract<IncomingSocketEvent, { type: 'audio' }>;

describe('ElevenLabs Agents stand-in with @elevenlabs/client', () => {
  it('opens a public agent by origin with the convai subprotocol, gets the overrides and dynamic variables, and answers pings itself', async () => {
    const base = await start({ pingIntervalMs: 100, pongTimeoutMs: 300 });
    const pings: unknown[] = [];
    const conversation = await TextConversation.startSession({
      agentId: 'agent_public',
      origin: origin(base),
      connectionType: 'websocket',
      overrides: {
        agent: { prompt: { prompt: 'Be brief. reply_ms=300' }, firstMessage: 'Hello reply_ms=200' },
      },
      dynamicVariables: { session_id: 'sess-9', direction: 'outbound' },
      onPing: (p) => pings.push(p),
    });
    ends.push(() => conversation.endSession());
    const conv = await emulator!.waitForSession();
    expect(conversation.getId()).toBe(conv.conversationId);
    expect(conv.clientData).toMatchObject({
      type: 'conversation_initiation_client_data',
      conversation_config_override: {
        agent: { prompt: { prompt: 'Be brief. reply_ms=300' }, first_message: 'Hello reply_ms=200' },
      },
      dynamic_variables: { session_id: 'sess-9', direction: 'outbound' },
      source_info: { source: expect.any(String) },
    });
    // The first message greets: a reply of the length it names.
    await waitFor(() => conv.record.replies[0]?.status === 'completed', 3000, 'the greeting');
    expect(conv.record.replies[0]).toMatchObject({ turn: 1, planned_ms: 200 });
    await waitFor(
      () => conv.record.pings.filter((p) => p.answered_at_ms !== null).length >= 5,
      5000,
      '5 pongs',
    );
    expect(pings.length).toBeGreaterThanOrEqual(5);
    expect(conv.record.closed_at).toBeNull();
    expect(conv.record.notes).toEqual([]);
  });

  it('connects through a signed URL fetched with the key, and refuses that URL for another agent', async () => {
    const base = await start({ agents: { agent_private: { private: true } } });
    const res = await fetch(`${base}/v1/convai/conversation/get-signed-url?agent_id=agent_private`, {
      headers: { 'xi-api-key': 'xi-right' },
    });
    const { signed_url } = (await res.json()) as { signed_url: string };
    expect(signed_url).toMatch(
      /^ws:\/\/127\.0\.0\.1:\d+\/v1\/convai\/conversation\?agent_id=agent_private&conversation_signature=/,
    );
    await expect(
      TextConversation.startSession({ signedUrl: signed_url.replace('agent_private', 'agent_other') }),
    ).rejects.toThrow();
    const conversation = await TextConversation.startSession({ signedUrl: signed_url });
    ends.push(() => conversation.endSession());
    expect((await emulator!.waitForSession()).agentId).toBe('agent_private');
    const wrong = await fetch(`${base}/v1/convai/conversation/get-signed-url?agent_id=agent_private`, {
      headers: { 'xi-api-key': 'xi-wrong' },
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({
      detail: { status: 'invalid_api_key', message: 'Invalid API key.' },
    });
  });

  it('takes user audio through the client connection class and sends a reply tone it parses (440 Hz, SNR >= 60 dB)', async () => {
    const base = await start({ replyMs: 1000 });
    const connection = await WebSocketConnection.create({ agentId: 'agent_public', origin: origin(base) });
    ends.push(() => connection.close());
    expect(connection.inputFormat).toEqual({ format: 'pcm', sampleRate: 16000 });
    expect(connection.outputFormat).toEqual({ format: 'pcm', sampleRate: 16000 });
    const audio: Buffer[] = [];
    connection.onMessage((e) => {
      if (e.type === 'audio') audio.push(Buffer.from(e.audio_event.audio_base_64, 'base64'));
    });
    for (const c of toneChunks(1000, 16000, 800, 700, 250))
      connection.sendMessage({ user_audio_chunk: pcmBytes(c).toString('base64') });
    const conv = await emulator!.waitForSession();
    await waitFor(() => pcmOf(audio).length >= 16000, 5000, 'the reply');
    const input = conv.record.inputAudio()!;
    expect(steadyToneSnrDb(input.pcm, 1000, 16000)).toBeGreaterThanOrEqual(30);
    const reply = pcmOf(audio);
    expect(reply.length).toBe(16000);
    expect(Math.abs(dominantHz(reply, 16000) - replyToneHz(0))).toBeLessThan(2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 16000)).toBeGreaterThanOrEqual(60);
  });

  it('runs a client tool, and a user message over a long reply interrupts it; the ids follow the rule the client plays by', async () => {
    const base = await start({ replyMs: 20_000, lateAudioChunks: 2 });
    const interruptions: number[] = [];
    const events: IncomingSocketEvent[] = [];
    const conversation = await TextConversation.startSession({
      agentId: 'agent_public',
      origin: origin(base),
      connectionType: 'websocket',
      clientTools: { lookup_order: (p: { order_id: string }) => `order ${p.order_id} shipped` },
      onInterruption: (e) => interruptions.push(e.event_id),
      onIncomingEvent: (e) => events.push(e),
    });
    ends.push(() => conversation.endSession());
    const conv = await emulator!.waitForSession();
    conversation.sendUserMessage('Where is my order?');
    await waitFor(() => conv.record.replies.length === 1, 3000, 'the answer to the question');
    const id = conv.callTool('lookup_order', { order_id: 'B2' });
    await waitFor(() => conv.record.tool_calls[0]?.answered_at_ms !== null, 3000, 'the tool result');
    expect(conv.record.tool_calls[0]!.answer).toEqual({
      type: 'client_tool_result',
      tool_call_id: id,
      result: 'order B2 shipped',
      is_error: false,
    });
    // The agent speaks after the tool (a long reply, replacing the one it had begun); the caller types over it.
    await waitFor(() => (conv.record.replies[1]?.sent_ms ?? 0) >= 300, 3000, 'the reply after the tool');
    conversation.sendUserMessage('[DTMF 7] reply_ms=300');
    await waitFor(() => conv.record.replies[2]?.status === 'completed', 3000, 'the reply to the text');
    expect(conv.record.replies.map((r) => [r.turn, r.status])).toEqual([
      [1, 'stopped'],
      [1, 'interrupted'],
      [2, 'completed'],
    ]);
    expect(conv.record.texts.map((t) => t.text)).toEqual(['Where is my order?', '[DTMF 7] reply_ms=300']);
    expect(interruptions).toEqual([2]);
    const cut = events.findIndex((e) => e.type === 'interruption');
    const audioIds = () =>
      events.slice(cut).flatMap((e) => (e.type === 'audio' ? [(e as Audio).audio_event.event_id] : []));
    await waitFor(() => audioIds().length >= 5, 3000, 'all audio at the client');
    const idsAfter = audioIds();
    // The client plays audio whose id is at least the last interruption's: the late chunks of the cut
    // reply (id 1) fall below it, the reply to the text (id 2) does not.
    expect(idsAfter.filter((i) => i < interruptions[0]!)).toEqual([1, 1]);
    expect(idsAfter.filter((i) => i >= interruptions[0]!).length).toBe(3);
    expect(conv.record.notes).toEqual([]);
  });
});

/**
 * The ElevenLabs Agents stand-in against `@elevenlabs/elevenlabs-js`'s own Node conversation client
 * (`Conversation`, over `ws`, the server-side client the bridge resembles): the signed-URL route with its
 * key, the WebSocket with the signature, a tone in (measured in the stand-in's record), the reply tone out
 * (frequency and SNR measured at the client), barge-in with late audio the client must drop, pings the
 * client answers, a client tool round trip and a user text. Real servers on 127.0.0.1 port 0.
 */
// The package's index does not hand ClientTools to an ES import; its own file does.
import { ClientTools } from '@elevenlabs/elevenlabs-js/api/resources/conversationalAi/conversation/ClientTools.js';
import {
  AudioInterface,
  Conversation,
} from '@elevenlabs/elevenlabs-js/api/resources/conversationalAi/conversation/index.js';
// The conversation class takes the generated client (Client.js), not the package root's wrapper.
import { ElevenLabsClient } from '@elevenlabs/elevenlabs-js/Client.js';
import alawmulaw from 'alawmulaw';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { steadyToneSnrDb } from '../../src/audio/tone.js';
import {
  createElevenLabsEmulator,
  type ElevenLabsEmulator,
  type ElevenLabsEmulatorOptions,
} from '../../src/emulator/elevenlabs-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { dominantHz, pcmBytes, pcmOf, toneChunks } from '../helpers/s2s.js';
import { waitFor } from '../helpers/wait.js';

const { mulaw } = alawmulaw;
let emulator: ElevenLabsEmulator | undefined;
const open: Conversation[] = [];

afterEach(async () => {
  for (const c of open.splice(0)) if (c.isSessionActive()) c.endSession();
  await emulator?.close();
  emulator = undefined;
});

async function start(options: ElevenLabsEmulatorOptions = {}): Promise<string> {
  emulator = createElevenLabsEmulator({ apiKey: 'xi-right', pingIntervalMs: 0, ...options });
  return emulator.listen(0);
}

/** The client's audio side: hands its input callback to the test, keeps what it is asked to play. */
class ProbeAudio extends AudioInterface {
  send: ((audio: Buffer) => void) | undefined;
  readonly played: Buffer[] = [];
  interrupts = 0;
  start(inputCallback: (audio: Buffer) => void): void {
    this.send = inputCallback;
  }
  stop(): void {}
  output(audio: Buffer): void {
    this.played.push(audio);
  }
  interrupt(): void {
    this.interrupts++;
  }
}

interface Session {
  readonly conversation: Conversation;
  readonly audio: ProbeAudio;
  /** Every server message the client handled, in order. */
  readonly messages: { type: string; [k: string]: unknown }[];
}

async function converse(
  base: string,
  o: { apiKey?: string; agentId?: string; tools?: ClientTools; prompt?: string } = {},
): Promise<Session> {
  const audio = new ProbeAudio();
  const messages: Session['messages'] = [];
  const conversation = new Conversation({
    client: new ElevenLabsClient({ apiKey: o.apiKey ?? 'xi-right', baseUrl: base }),
    agentId: o.agentId ?? 'agent_support',
    requiresAuth: true,
    audioInterface: audio,
    ...(o.tools ? { clientTools: o.tools } : {}),
    config: {
      extraBody: {},
      conversationConfigOverride: o.prompt === undefined ? {} : { agent: { prompt: { prompt: o.prompt } } },
      dynamicVariables: {
        session_id: 'sess-1',
        customer_phone: '+15550100',
        direction: 'inbound',
        tenant: 't1',
      },
    },
    callbackMessageReceived: (m) => messages.push(m),
  });
  open.push(conversation);
  await conversation.startSession();
  return { conversation, audio, messages };
}

/** Sends PCM16 chunks through the client's own input path (base64 `user_audio_chunk`). */
function speak(s: Session, chunks: Int16Array[]): void {
  for (const c of chunks) s.audio.send!(pcmBytes(c));
}

const heard = (s: Session) => pcmOf(s.audio.played);

describe('ElevenLabs Agents stand-in with @elevenlabs/elevenlabs-js', () => {
  it('signs URLs only for the right xi-api-key and accepts a private agent only with the signature it issued', async () => {
    const base = await start({ agents: { agent_private: { private: true } } });
    await expect(converse(base, { apiKey: 'xi-wrong', agentId: 'agent_private' })).rejects.toMatchObject({
      statusCode: 401,
    });
    const refusal = async (url: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(url);
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => reject(new Error(`${url} was accepted`)));
      });
    expect(await refusal(emulator!.wsUrl('agent_private'))).toBe(403);
    expect(await refusal(`${emulator!.wsUrl('agent_private')}&conversation_signature=forged`)).toBe(403);
    expect(emulator!.sessions()).toHaveLength(0);

    const s = await converse(base, { agentId: 'agent_private' });
    await waitFor(() => s.conversation.getConversationId() !== undefined, 3000, 'conversation_started');
    const conv = emulator!.sessions()[0]!;
    expect(s.conversation.getConversationId()).toBe(conv.conversationId);
    expect(conv.record.received[0]!.type).toBe('conversation_initiation_client_data');
    expect(conv.clientData).toMatchObject({
      dynamic_variables: {
        session_id: 'sess-1',
        customer_phone: '+15550100',
        direction: 'inbound',
        tenant: 't1',
      },
    });
    expect(conv.record.sent[0]).toBe('conversation_initiation_metadata');
    expect(s.messages[0]).toMatchObject({
      type: 'conversation_initiation_metadata',
      conversation_initiation_metadata_event: {
        user_input_audio_format: 'pcm_16000',
        agent_output_audio_format: 'pcm_16000',
      },
    });
    expect(conv.record.notes).toEqual([]);
  });

  it('hears a tone sent as user_audio_chunk (SNR >= 30 dB in the record) and answers the turn with its reply tone (440 Hz, SNR >= 60 dB at the client)', async () => {
    const base = await start({ replyMs: 1200 });
    const s = await converse(base);
    speak(s, toneChunks(1000, 16000, 1000, 700, 50));
    const conv = await emulator!.waitForSession();
    await waitFor(() => conv.record.replies[0]?.status === 'completed', 5000, 'the reply');
    await waitFor(() => heard(s).length >= 16000 * 1.2, 3000, 'the reply at the client');

    const input = conv.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'pcm_16000', rate: 16000 });
    expect(input.pcm.length).toBe(16000 * 1.7);
    expect(steadyToneSnrDb(input.pcm, 1000, 16000)).toBeGreaterThanOrEqual(30);

    const reply = heard(s);
    expect(reply.length).toBe(16000 * 1.2);
    expect(Math.abs(dominantHz(reply, 16000) - replyToneHz(0))).toBeLessThan(2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 16000)).toBeGreaterThanOrEqual(60);
    const types = s.messages.map((m) => m.type).filter((t) => t !== 'audio');
    expect(types).toEqual(['conversation_initiation_metadata', 'user_transcript', 'agent_response']);
    expect(s.messages.find((m) => m.type === 'user_transcript')).toMatchObject({
      user_transcription_event: { event_id: 1 },
    });
    expect(conv.record.notes).toEqual([]);
  });

  it('speaks ulaw_8000 both ways when the agent is set so', async () => {
    const base = await start({
      replyMs: 1000,
      defaultAgent: { inputFormat: 'ulaw_8000', outputFormat: 'ulaw_8000' },
    });
    const s = await converse(base);
    for (const c of toneChunks(700, 8000, 800, 700, 20)) s.audio.send!(Buffer.from(mulaw.encode(c)));
    const conv = await emulator!.waitForSession();
    await waitFor(() => conv.record.replies[0]?.status === 'completed', 5000, 'the reply');
    await waitFor(() => Buffer.concat(s.audio.played).length >= 8000, 3000, 'the reply at the client');
    const input = conv.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'ulaw_8000', rate: 8000 });
    expect(steadyToneSnrDb(input.pcm, 700, 8000)).toBeGreaterThanOrEqual(30);
    const reply = mulaw.decode(new Uint8Array(Buffer.concat(s.audio.played)));
    expect(reply.length).toBe(8000);
    expect(Math.abs(dominantHz(reply, 8000) - replyToneHz(0))).toBeLessThan(2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 8000)).toBeGreaterThanOrEqual(30);
  });

  it('barges in: speech over a long reply sends interruption, the client stops, drops the late audio of the cut reply and plays the next reply', async () => {
    const base = await start({
      replyMs: 20_000,
      outputRateFactor: 10,
      lateAudioChunks: 3,
      replyTurnAfterInterruption: 'next',
    });
    const s = await converse(base);
    speak(s, toneChunks(1000, 16000, 300, 700, 50));
    const conv = await emulator!.waitForSession();
    await waitFor(() => heard(s).length >= 16000, 5000, '1 s of the long reply at the client');
    speak(s, toneChunks(1000, 16000, 400, 700, 50));
    await waitFor(() => conv.record.replies[1]?.status === 'completed', 5000, 'the reply to the barge-in');
    await waitFor(() => s.messages.filter((m) => m.type === 'audio').length >= 1, 1000, 'audio');

    const [cut, next] = conv.record.replies;
    expect(cut).toMatchObject({ turn: 1, status: 'interrupted', late_ms: 300 });
    expect(cut!.sent_ms).toBeLessThan(20_000);
    expect(conv.record.interruptions).toHaveLength(1);
    const interruption = s.messages.find((m) => m.type === 'interruption');
    expect(interruption).toMatchObject({ interruption_event: { event_id: 2 } });
    expect(s.audio.interrupts).toBe(1);
    // The stand-in sent 300 ms of the cut reply (event_id 1) after the interruption (event_id 2): the
    // client dropped them before its message callback, so every audio message it handled after the
    // interruption is the next reply's.
    const afterInterruption = s.messages.slice(s.messages.indexOf(interruption!) + 1);
    const audioIds = afterInterruption.flatMap((m) =>
      m.type === 'audio'
        ? [(m as unknown as { audio_event: { event_id: number } }).audio_event.event_id]
        : [],
    );
    expect(audioIds.length).toBeGreaterThan(0);
    expect(new Set(audioIds)).toEqual(new Set([3]));
    expect(next).toMatchObject({ turn: 3, status: 'completed', planned_ms: 20_000 });
    const cutSamples = (cut!.sent_ms * 16000) / 1000;
    await waitFor(() => heard(s).length >= cutSamples + 16000 * 20, 3000, 'the next reply at the client');
    const all = heard(s);
    expect(all.length).toBe(cutSamples + 16000 * 20);
    const played = all.subarray(cutSamples);
    expect(Math.abs(dominantHz(played, 16000) - replyToneHz(1))).toBeLessThan(2);
    expect(steadyToneSnrDb(played, replyToneHz(1), 16000)).toBeGreaterThanOrEqual(60);
    expect(s.messages.find((m) => m.type === 'agent_response_correction')).toMatchObject({
      agent_response_correction_event: { event_id: 1 },
    });
  });

  it('pings with ping_event ids and ping_ms; the client answers every ping and the conversation stays open', async () => {
    const base = await start({ pingIntervalMs: 100, pongTimeoutMs: 300 });
    const s = await converse(base);
    const conv = await emulator!.waitForSession();
    await waitFor(
      () => conv.record.pings.filter((p) => p.answered_at_ms !== null).length >= 8,
      5000,
      '8 pongs',
    );
    expect(conv.record.closed_at).toBeNull();
    expect(s.conversation.isSessionActive()).toBe(true);
    const pings = s.messages.filter((m) => m.type === 'ping') as never as {
      ping_event: { event_id: number; ping_ms?: number };
    }[];
    expect(pings.map((p) => p.ping_event.event_id).slice(0, 4)).toEqual([1, 2, 3, 4]);
    expect(pings[0]!.ping_event.ping_ms).toBeUndefined();
    expect(pings[1]!.ping_event.ping_ms).toBeGreaterThanOrEqual(0);
    expect(conv.record.notes).toEqual([]);
  });

  it('runs a client tool through client_tool_call and records the client_tool_result, then speaks', async () => {
    const base = await start({ replyMs: 300 });
    const tools = new ClientTools();
    const calls: Record<string, unknown>[] = [];
    tools.register('lookup_order', async (p) => {
      calls.push(p);
      return JSON.stringify({ status: 'shipped' });
    });
    const s = await converse(base, { tools });
    const conv = await emulator!.waitForSession();
    await waitFor(() => conv.record.sent.includes('conversation_initiation_metadata'), 3000, 'metadata');
    const res = await fetch(`${base}/emulator/elevenlabs-agent/sessions/${conv.record.id}/tool-call`, {
      method: 'POST',
      body: JSON.stringify({ name: 'lookup_order', parameters: { order_id: 'A17' } }),
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    await waitFor(() => conv.record.tool_calls[0]?.answered_at_ms !== null, 3000, 'the tool result');
    expect(calls).toEqual([{ tool_call_id: id, order_id: 'A17' }]);
    expect(conv.record.tool_calls[0]).toMatchObject({
      id,
      name: 'lookup_order',
      parameters: { order_id: 'A17' },
      answer: {
        type: 'client_tool_result',
        tool_call_id: id,
        result: '{"status":"shipped"}',
        is_error: false,
      },
    });
    await waitFor(() => conv.record.replies[0]?.status === 'completed', 3000, 'the reply after the tool');
    // A tool the client does not have comes back as an error result.
    emulator!.session(conv.record.id)!.callTool('transfer_call', {});
    await waitFor(() => conv.record.tool_calls[1]?.answered_at_ms !== null, 3000, 'the second result');
    expect(conv.record.tool_calls[1]!.answer).toMatchObject({ is_error: true });
    expect(conv.record.notes).toEqual([]);
    expect(s.messages.filter((m) => m.type === 'client_tool_call')).toHaveLength(2);
  });

  it('records user_message text (DTMF as the dialect sends it) and answers it with a reply of the length it asks for', async () => {
    const base = await start({ replyMs: 5000 });
    const s = await converse(base);
    const conv = await emulator!.waitForSession();
    await waitFor(() => conv.record.sent.includes('conversation_initiation_metadata'), 3000, 'metadata');
    s.conversation.sendUserMessage('[DTMF 5] reply_ms=200');
    await waitFor(() => conv.record.replies[0]?.status === 'completed', 3000, 'the reply');
    expect(conv.record.texts).toEqual([
      { at_ms: expect.any(Number), type: 'user_message', text: '[DTMF 5] reply_ms=200' },
    ]);
    expect(conv.record.replies[0]!.planned_ms).toBe(200);
  });

  it("ends the conversation at the agent's maximum duration with max_duration_exceeded and a normal close", async () => {
    const base = await start({ defaultAgent: { maxDurationMs: 300 } });
    const s = await converse(base);
    const ended = new Promise<number>((resolve) =>
      s.conversation.on('session_ended', (_id, code) => resolve(code)),
    );
    expect(await ended).toBe(1000);
    expect(s.messages.at(-1)).toMatchObject({
      type: 'error',
      error_event: { code: 1000, error_type: 'max_duration_exceeded' },
    });
    const record = emulator!.sessions()[0]!.record;
    await waitFor(() => record.closed_at !== null, 1000, 'the close on the stand-in');
    expect(record).toMatchObject({ closed_by: 'server', close_code: 1000 });
  });
});

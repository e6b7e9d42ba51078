/**
 * The ElevenLabs Agents stand-in against `@elevenlabs/elevenlabs-js`'s own Node conversation client
 * (`Conversation`, over `ws`, the server-side client the bridge resembles): the signed-URL route with its
 * key, the WebSocket with the signature, a tone in (measured in the stand-in's record), the reply tone out
 * (frequency and SNR measured at the client), barge-in with late audio the client must drop, pings the
 * client answers, a client tool round trip and a user text. Real servers on 127.0.0.1 port 0.
 */
// The conversation class takes the generated client (Client.js), not the package root's wrapper.

import {
  AudioInterface,
  type ClientTools,
  Conversation,
} from '@elevenlabs/elevenlabs-js/api/resources/conversationalAi/conversation/index.js';
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
import { replyToneHz } from '../../src/emulator/realtime/voice.js';
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
});

/**
 * The OpenAI Realtime stand-in against an OpenAI Agents SDK voice session (`RealtimeSession` over the
 * SDK's `OpenAIRealtimeWebSocket`, its `url` pointed at the stand-in on 127.0.0.1 port 0): the SDK's
 * own session.update is accepted, its audio is heard, the reply tone reaches it whole, and its barge-in
 * truncate carries the audio it had received of the item when speech started.
 */
import { OpenAIRealtimeWebSocket, RealtimeAgent, RealtimeSession } from '@openai/agents-realtime';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import { createRealtimeEmulator, type RealtimeEmulator } from '../../src/emulator/realtime/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { waitFor } from '../helpers/wait.js';

let emulator: RealtimeEmulator | undefined;
const sessions: RealtimeSession[] = [];

afterEach(async () => {
  for (const s of sessions.splice(0)) s.close();
  await emulator?.close();
  emulator = undefined;
});

interface Heard {
  session: RealtimeSession;
  audio: Buffer[];
  firstAudioAt: number | undefined;
  interruptedAt: number | undefined;
  errors: unknown[];
}

async function agentSession(
  instructions: string,
  options: Parameters<typeof createRealtimeEmulator>[0] = {},
): Promise<Heard> {
  emulator = createRealtimeEmulator(options);
  await emulator.listen(0);
  const agent = new RealtimeAgent({ name: 'stand-in tester', instructions });
  const transport = new OpenAIRealtimeWebSocket({ url: emulator.wsUrl('gpt-realtime') });
  const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });
  sessions.push(session);
  const heard: Heard = { session, audio: [], firstAudioAt: undefined, interruptedAt: undefined, errors: [] };
  session.on('audio', (e) => {
    heard.firstAudioAt ??= Date.now();
    heard.audio.push(Buffer.from(e.data));
  });
  session.on('audio_interrupted', () => {
    heard.interruptedAt ??= Date.now();
  });
  session.on('error', (e) => heard.errors.push(e.error));
  await session.connect({ apiKey: 'sk-test-key' });
  return heard;
}

function pcm16(bytes: Buffer): Int16Array {
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(2 * i);
  return out;
}

describe('realtime stand-in with an OpenAI Agents SDK session', () => {
  it('accepts the SDK session config, hears its tone (SNR >= 30 dB) and sends it a whole reply tone', async () => {
    const heard = await agentSession('Answer with a tone. reply_ms=1500');
    const conn = await emulator!.waitForSession();
    await waitFor(() => conn.record.sent.includes('session.updated'), 2000, 'session.updated');
    const tone = generateTone(1000, 24000, 24000, 0.3);
    for (let i = 0; i < tone.length; i += 960) heard.session.sendAudio(tone.slice(i, i + 960).buffer);
    const silence = new Int16Array(960);
    for (let i = 0; i < 20; i++) heard.session.sendAudio(silence.slice().buffer);
    await waitFor(() => conn.record.responses[0]?.status === 'completed', 5000, 'the reply to finish');
    await waitFor(
      () => heard.audio.reduce((n, b) => n + b.length, 0) >= 24000 * 1.5 * 2,
      2000,
      'all reply audio',
    );

    const input = conn.record.inputAudio()!;
    expect(input.format).toBe('audio/pcm');
    expect(steadyToneSnrDb(input.pcm, 1000, 24000)).toBeGreaterThanOrEqual(30);
    const reply = pcm16(Buffer.concat(heard.audio));
    expect(reply.length).toBe(24000 * 1.5);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 24000)).toBeGreaterThanOrEqual(60);
    const update = conn.record.events.find((e) => e.type === 'session.update');
    expect(update?.event).toMatchObject({ session: { type: 'realtime' } });
    expect(conn.record.sent).not.toContain('error');
    expect(heard.errors).toEqual([]);
  });

  it('during a long reply, speech_started makes the agent truncate at the audio it had received', async () => {
    const heard = await agentSession('Keep talking. reply_ms=30000', { outputRateFactor: 2 });
    const conn = await emulator!.waitForSession();
    await waitFor(() => conn.record.sent.includes('session.updated'), 2000, 'session.updated');
    heard.session.transport.sendEvent({ type: 'response.create' });
    await waitFor(
      () => heard.firstAudioAt !== undefined && Date.now() - heard.firstAudioAt >= 400,
      5000,
      '400 ms of reply',
    );
    conn.speechStarted(undefined, true);
    await waitFor(() => conn.record.truncates.length === 1, 2000, 'the agent truncate');
    const t = conn.record.truncates[0]!;
    const reply = conn.record.responses[0]!;
    expect(t).toMatchObject({ item_id: reply.item_id, content_index: 0, accepted: true });
    // The SDK truncates at the wall-clock time since its first audio, capped at the audio it received.
    const heardMs = heard.interruptedAt! - heard.firstAudioAt!;
    expect(Math.abs((t.audio_end_ms as number) - heardMs)).toBeLessThanOrEqual(20);
    expect(t.audio_end_ms as number).toBeLessThanOrEqual(reply.sent_ms);
    expect(reply).toMatchObject({ status: 'cancelled', reason: 'turn_detected' });
    expect(reply.sent_ms).toBeLessThan(30000);
    expect(conn.record.sent.filter((s) => s === 'conversation.item.truncated')).toHaveLength(1);
  });

  it('a 401 at connect fails the SDK session connect', async () => {
    emulator = createRealtimeEmulator();
    await emulator.listen(0);
    emulator.failNextConnects(401);
    const agent = new RealtimeAgent({ name: 'refused', instructions: 'x' });
    const transport = new OpenAIRealtimeWebSocket({ url: emulator.wsUrl() });
    const session = new RealtimeSession(agent, { transport, model: 'gpt-realtime' });
    sessions.push(session);
    session.on('error', () => {});
    // The SDK rejects with the socket's error event; its message carries the handshake's status.
    await expect(session.connect({ apiKey: 'sk-test-key' })).rejects.toMatchObject({
      message: 'Unexpected server response: 401',
    });
    expect(emulator.sessions()).toHaveLength(0);
  });
});

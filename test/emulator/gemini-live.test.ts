/**
 * The Gemini Live stand-in driven by Google's own Live client (`@google/genai`, `ai.live.connect` with
 * `httpOptions.baseUrl` at the stand-in on 127.0.0.1 port 0): the SDK's setup is taken, its audio is
 * heard (tone SNR in the record), the reply tone reaches it whole (frequency and SNR at the client),
 * speech over a long reply brings `interrupted`, a `goAway` is survived by resuming with the last handle
 * on a new connection with the conversation kept, a tool call goes round and user text (DTMF) is
 * recorded. Audio is measured, never just counted.
 */
import {
  GoogleGenAI,
  type LiveConnectConfig,
  type LiveServerMessage,
  Modality,
  type Session,
} from '@google/genai';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import { createGeminiLiveEmulator, type GeminiLiveEmulator } from '../../src/emulator/gemini-live/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { dominantHz, pcmOf } from '../helpers/s2s.js';
import { waitFor } from '../helpers/wait.js';

let emulator: GeminiLiveEmulator | undefined;
const sessions: Session[] = [];

afterEach(async () => {
  for (const s of sessions.splice(0)) s.close();
  await emulator?.close();
  emulator = undefined;
});

interface Heard {
  session: Session;
  messages: LiveServerMessage[];
  closes: { code: number; reason: string }[];
  /** The model's audio since the last `take()`. */
  audio(): Int16Array;
  count(pred: (m: LiveServerMessage) => unknown): number;
}

async function start(options: Parameters<typeof createGeminiLiveEmulator>[0] = {}): Promise<string> {
  emulator = createGeminiLiveEmulator(options);
  return emulator.listen(0);
}

async function connect(base: string, config: LiveConnectConfig, apiKey = 'stand-in-key'): Promise<Heard> {
  const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: base } });
  const messages: LiveServerMessage[] = [];
  const closes: Heard['closes'] = [];
  const session = await ai.live.connect({
    model: 'gemini-live-2.5-flash-preview',
    config: { responseModalities: [Modality.AUDIO], ...config },
    callbacks: {
      onmessage: (m) => messages.push(m),
      onclose: (e) => closes.push({ code: e.code, reason: e.reason }),
    },
  });
  sessions.push(session);
  return {
    session,
    messages,
    closes,
    audio: () =>
      pcmOf(
        messages.flatMap((m) =>
          (m.serverContent?.modelTurn?.parts ?? []).flatMap((p) =>
            p.inlineData?.data === undefined ? [] : [Buffer.from(p.inlineData.data, 'base64')],
          ),
        ),
      ),
    count: (pred) => messages.filter(pred).length,
  };
}

/** PCM16 16 kHz as `realtimeInput.audio`, 20 ms a message. */
function sendPcm(s: Session, pcm: Int16Array, rate = 16000): void {
  const step = rate / 50;
  for (let i = 0; i < pcm.length; i += step) {
    const part = pcm.subarray(i, i + step);
    s.sendRealtimeInput({
      audio: {
        data: Buffer.from(part.buffer, part.byteOffset, part.byteLength).toString('base64'),
        mimeType: `audio/pcm;rate=${rate}`,
      },
    });
  }
}

describe('Gemini Live stand-in with @google/genai', () => {
  it('takes the SDK setup, hears its tone (record SNR >= 30 dB) and replies with a whole 24 kHz tone (SNR >= 60 dB at the client)', async () => {
    const c = await connect(await start(), {
      systemInstruction: 'Answer briefly. reply_ms=1200',
      speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } },
    });
    const conn = await emulator!.waitForSession();
    expect(conn.record.setup).toMatchObject({
      model: 'models/gemini-live-2.5-flash-preview',
      generationConfig: {
        responseModalities: ['AUDIO'],
        speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Puck' } } },
      },
      systemInstruction: { parts: [{ text: 'Answer briefly. reply_ms=1200' }] },
    });
    sendPcm(c.session, generateTone(1000, 16000, 16000, 0.3));
    sendPcm(c.session, new Int16Array(16000 * 0.7));
    await waitFor(() => c.count((m) => m.serverContent?.turnComplete) === 1, 5000, 'turnComplete');

    const input = conn.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'audio/pcm;rate=16000', rate: 16000 });
    expect(input.pcm.length).toBe(16000 * 1.7);
    expect(steadyToneSnrDb(input.pcm.subarray(0, 16000), 1000, 16000)).toBeGreaterThanOrEqual(30);

    const reply = c.audio();
    expect(reply.length).toBe(24000 * 1.2);
    expect(Math.abs(dominantHz(reply, 24000) - replyToneHz(0))).toBeLessThan(2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 24000)).toBeGreaterThanOrEqual(60);
    const mimes = new Set(
      c.messages.flatMap((m) => (m.serverContent?.modelTurn?.parts ?? []).map((p) => p.inlineData?.mimeType)),
    );
    expect([...mimes]).toEqual(['audio/pcm;rate=24000']);
    // generationComplete once all was sent, turnComplete once it had played (1.2 s at 4x: ~0.9 s later).
    const gen = c.messages.findIndex((m) => m.serverContent?.generationComplete);
    const done = c.messages.findIndex((m) => m.serverContent?.turnComplete);
    expect(gen).toBeGreaterThan(0);
    expect(done).toBe(gen + 1);
    expect(conn.record.notes).toEqual([]);
  });

  it('speech over a long reply brings serverContent.interrupted, turnComplete and a fresh handle at the client; the reply stops', async () => {
    const c = await connect(await start({ outputRateFactor: 1 }), {
      systemInstruction: 'reply_ms=20000',
      sessionResumption: {},
    });
    const conn = await emulator!.waitForSession();
    c.session.sendRealtimeInput({ text: 'Tell me a long story.' });
    await waitFor(() => c.audio().length >= 24000 * 0.5, 5000, '0.5 s of the reply');
    expect(c.count((m) => m.serverContent?.interrupted)).toBe(0);
    sendPcm(c.session, generateTone(700, 16000, 16000 * 0.3, 0.3));
    await waitFor(() => c.count((m) => m.serverContent?.interrupted) === 1, 2000, 'interrupted');
    const at = c.messages.findIndex((m) => m.serverContent?.interrupted);
    expect(c.messages[at + 1]?.serverContent?.turnComplete).toBe(true);
    // The turn is over: a fresh resumption handle follows.
    expect(c.messages[at + 2]?.sessionResumptionUpdate?.resumable).toBe(true);
    const reply = conn.record.replies[0]!;
    expect(reply.status).toBe('interrupted');
    expect(reply.sent_ms).toBeLessThan(3000);
    expect(conn.record.interruptions).toHaveLength(1);
    // Nothing of the cut reply after the interruption.
    expect(c.messages.slice(at).some((m) => m.serverContent?.modelTurn)).toBe(false);
  });

  it('after goAway {timeLeft} the client resumes with the last handle on a new connection and the conversation goes on', async () => {
    const base = await start({ replyMs: 300, outputRateFactor: 0 });
    const first = await connect(base, { sessionResumption: {} });
    const conn1 = await emulator!.waitForSession();
    first.session.sendRealtimeInput({ text: 'first' });
    await waitFor(() => first.count((m) => m.serverContent?.turnComplete) === 1, 5000, 'first turn');
    expect(dominantHz(first.audio(), 24000)).toBeCloseTo(replyToneHz(0), 0);
    const handles = first.messages.filter((m) => m.sessionResumptionUpdate?.resumable);
    expect(handles.length).toBeGreaterThanOrEqual(2);
    const handle = handles.at(-1)!.sessionResumptionUpdate!.newHandle!;

    expect(conn1.action('go-away', { time_left_ms: 1500 })).toEqual({ time_left: '1.500s' });
    await waitFor(() => first.count((m) => m.goAway) === 1, 2000, 'goAway');
    expect(first.messages.find((m) => m.goAway)!.goAway).toEqual({ timeLeft: '1.500s' });

    const second = await connect(base, { sessionResumption: { handle } });
    const conn2 = await emulator!.waitForSession(2);
    expect(conn2.record).toMatchObject({
      resumed_from: conn1.record.id,
      resumed_while_open: true,
      conversation: conn1.record.conversation,
    });
    second.session.sendRealtimeInput({ text: 'second' });
    await waitFor(() => second.count((m) => m.serverContent?.turnComplete) === 1, 5000, 'second turn');
    // The second reply of the conversation: its tone follows the first's.
    expect(Math.abs(dominantHz(second.audio(), 24000) - replyToneHz(1))).toBeLessThan(2);
    await waitFor(() => first.closes.length === 1, 3000, 'the old connection to close');
    expect(first.closes[0]).toEqual({
      code: 1011,
      reason: 'Deadline expired before operation could complete.',
    });
    expect(conn1.record.closed_by).toBe('server');
  });

  it('calls a declared tool scripted by the instructions, records the toolResponse, then speaks; DTMF text is recorded; speech cancels a pending call', async () => {
    const c = await connect(await start({ replyMs: 400 }), {
      systemInstruction: 'call_tool=consult{"number":"+15550100"} reply_ms=400',
      tools: [
        {
          functionDeclarations: [
            { name: 'consult', description: 'Consult a person', parameters: { type: 'OBJECT' as never } },
            { name: 'end_call', description: 'Hang up' },
          ],
        },
      ],
    });
    const conn = await emulator!.waitForSession();
    c.session.sendRealtimeInput({ text: '[DTMF 5]' });
    await waitFor(() => c.count((m) => m.toolCall) === 1, 2000, 'toolCall');
    const call = c.messages.find((m) => m.toolCall)!.toolCall!.functionCalls![0]!;
    expect(call).toMatchObject({ name: 'consult', args: { number: '+15550100' } });
    expect(call.id).toMatch(/^function-call-\d+$/);
    c.session.sendToolResponse({
      functionResponses: [{ id: call.id, name: 'consult', response: { output: { status: 'answered' } } }],
    });
    await waitFor(
      () => c.count((m) => m.serverContent?.turnComplete) === 1,
      5000,
      'the reply after the tool',
    );
    expect(steadyToneSnrDb(c.audio(), replyToneHz(0), 24000)).toBeGreaterThanOrEqual(60);
    expect(conn.record.tool_calls[0]).toMatchObject({
      name: 'consult',
      parameters: { number: '+15550100' },
      answer: { id: call.id, name: 'consult', response: { output: { status: 'answered' } } },
    });
    c.session.sendClientContent({ turns: '[DTMF 7]', turnComplete: false });
    await waitFor(() => conn.record.texts.length === 2, 2000, 'the clientContent text');
    expect(conn.record.texts.map((t) => [t.type, t.text])).toEqual([
      ['realtimeInput.text', '[DTMF 5]'],
      ['clientContent', '[DTMF 7]'],
    ]);

    const id = conn.callTool('end_call', {});
    await waitFor(() => c.count((m) => m.toolCall) === 2, 2000, 'the second toolCall');
    sendPcm(c.session, generateTone(700, 16000, 16000 * 0.2, 0.3));
    await waitFor(() => c.count((m) => m.toolCallCancellation) === 1, 2000, 'toolCallCancellation');
    expect(c.messages.find((m) => m.toolCallCancellation)!.toolCallCancellation).toEqual({ ids: [id] });
    expect(conn.record.tool_cancellations.map((t) => t.ids)).toEqual([[id]]);
    expect(() => conn.callTool('transfer', {})).toThrow(/not a declared function.*consult, end_call/);
    expect(conn.record.notes).toEqual([]);
  });

  it('closes a connection with a wrong key with 1007 "API key not valid", and refuses handshakes on request', async () => {
    const base = await start({ apiKey: 'right-key' });
    await expect(connect(base, {}, 'wrong-key')).rejects.toThrow(/code 1007\): API key not valid/);
    emulator!.failNextConnects(503);
    await expect(connect(base, {}, 'right-key')).rejects.toThrow(/503/);
    emulator!.dropNextConnects();
    await expect(connect(base, {}, 'right-key')).rejects.toThrow(/before setup completed/);
    const ok = await connect(base, {}, 'right-key');
    expect(ok.count((m) => m.setupComplete)).toBe(1);
    // js-genai puts the key in the query; the record says which way it came.
    expect(emulator!.sessions().at(-1)!.record.key_via).toBe('key');
  });
});

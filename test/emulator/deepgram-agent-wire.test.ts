/**
 * The Deepgram Voice Agent stand-in over raw `ws`, for what Deepgram's client never does: the browser's
 * key in the subprotocols, audio before SettingsApplied noted, bad JSON, unknown types and bad settings
 * answered with `Error {UNPARSABLE_CLIENT_MESSAGE}` while the session goes on, a greeting spoken first,
 * `InjectAgentMessage` refused mid-reply, and the control API's malformed-frame hook.
 */
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import {
  createDeepgramAgentEmulator,
  type DeepgramAgentEmulator,
} from '../../src/emulator/deepgram-agent/server.js';
import { quietFor, waitFor } from '../helpers/wait.js';

let emulator: DeepgramAgentEmulator | undefined;
const clients: WebSocket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  await emulator?.close();
  emulator = undefined;
});

interface Raw {
  ws: WebSocket;
  messages: { type: string; [k: string]: unknown }[];
  send(m: unknown): void;
  types(): string[];
}

async function open(
  options: WebSocket.ClientOptions | string[] = { headers: { Authorization: 'Token k' } },
): Promise<Raw> {
  const ws = Array.isArray(options)
    ? new WebSocket(emulator!.wsUrl(), options)
    : new WebSocket(emulator!.wsUrl(), options);
  clients.push(ws);
  const r: Raw = {
    ws,
    messages: [],
    send: (m) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
    types: () => r.messages.map((m) => m.type),
  };
  ws.on('message', (d, isBinary) => r.messages.push(isBinary ? { type: 'audio' } : JSON.parse(String(d))));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return r;
}

const SETTINGS = {
  type: 'Settings',
  audio: {
    input: { encoding: 'linear16', sample_rate: 16000 },
    output: { encoding: 'linear16', sample_rate: 16000 },
  },
  agent: { think: { provider: { type: 'open_ai' }, prompt: 'Be brief.' } },
};

describe('Deepgram Voice Agent stand-in on the wire', () => {
  it("takes a browser's key in the subprotocols (refusing a wrong one) and answers with `token`; records how each key came", async () => {
    emulator = createDeepgramAgentEmulator({ apiKey: 'browser-key' });
    await emulator.listen(0);
    await expect(open(['token', 'other-key'])).rejects.toThrow(/401/);
    const c = await open(['token', 'browser-key']);
    expect(c.ws.protocol).toBe('token');
    await waitFor(() => c.types().includes('Welcome'), 2000, 'Welcome');
    await open({ headers: { Authorization: 'Token browser-key' } });
    await open({ headers: { Authorization: 'bearer browser-key' } });
    // The record says how each carried its key, so a client's choice can be checked.
    expect(emulator.sessions().map((s) => s.record.key_via)).toEqual(['subprotocol', 'token', 'bearer']);
  });

  it('notes audio before SettingsApplied; answers bad JSON, unknown types and bad settings with Error and goes on', async () => {
    emulator = createDeepgramAgentEmulator({ replyMs: 100, settingsDelayMs: 100 });
    await emulator.listen(0);
    const c = await open();
    c.send('{"type":');
    c.send({ type: 'Dance' });
    c.send({ ...SETTINGS, audio: { input: { encoding: 'opus', sample_rate: 48000 } } });
    await waitFor(() => c.types().filter((t) => t === 'Error').length === 3, 2000, 'three errors');
    expect(c.messages.filter((m) => m.type === 'Error').map((m) => [m.code, m.description])).toEqual([
      ['UNPARSABLE_CLIENT_MESSAGE', 'The message could not be parsed as JSON.'],
      ['UNPARSABLE_CLIENT_MESSAGE', 'Unknown message type "Dance".'],
      [
        'UNPARSABLE_CLIENT_MESSAGE',
        'Settings: audio.input.encoding must be one of linear16, mulaw, alaw on the stand-in, got "opus"',
      ],
    ]);
    c.send(SETTINGS);
    c.ws.send(Buffer.alloc(640), { binary: true });
    await waitFor(() => c.types().includes('SettingsApplied'), 2000, 'SettingsApplied');
    c.send({ type: 'InjectUserMessage', content: 'hello' });
    await waitFor(() => c.types().includes('AgentAudioDone'), 2000, 'a reply');
    const record = emulator.sessions()[0]!.record;
    expect(record.notes).toEqual([
      'a text frame that is not JSON',
      'a message of unknown type "Dance"',
      'Settings: audio.input.encoding must be one of linear16, mulaw, alaw on the stand-in, got "opus"',
      'audio sent before SettingsApplied',
    ]);
    expect(record.inputAudio()).toBeUndefined();
  });

  it('speaks the greeting first, refuses an InjectAgentMessage during it, and speaks one when told to interrupt', async () => {
    emulator = createDeepgramAgentEmulator({ replyMs: 3000, outputRateFactor: 1 });
    await emulator.listen(0);
    const c = await open();
    c.send({ ...SETTINGS, agent: { ...SETTINGS.agent, greeting: 'Hello there.' } });
    await waitFor(() => c.types().includes('AgentStartedSpeaking'), 2000, 'the greeting');
    expect(c.messages.find((m) => m.type === 'ConversationText')).toEqual({
      type: 'ConversationText',
      role: 'assistant',
      content: 'Hello there.',
    });
    c.send({ type: 'InjectAgentMessage', message: 'Are you there?' });
    await waitFor(() => c.types().includes('InjectionRefused'), 2000, 'InjectionRefused');
    c.send({ type: 'InjectAgentMessage', message: 'Sorry to cut in.', behavior: 'interrupt' });
    await waitFor(
      () => c.types().filter((t) => t === 'AgentStartedSpeaking').length === 2,
      2000,
      'the second turn',
    );
    const replies = emulator.sessions()[0]!.record.replies;
    expect(replies.map((r) => r.status)).toEqual(['interrupted', 'in_progress']);
  });

  it('sends lateAudioChunks of a cut reply after UserStartedSpeaking, counted as late, then nothing of it', async () => {
    emulator = createDeepgramAgentEmulator({ replyMs: 10_000, outputRateFactor: 1, lateAudioChunks: 3 });
    await emulator.listen(0);
    const c = await open();
    c.send({ ...SETTINGS, agent: { ...SETTINGS.agent, greeting: 'A long hello.' } });
    await waitFor(() => c.types().filter((t) => t === 'audio').length >= 10, 3000, 'the greeting playing');
    emulator.sessions()[0]!.speechStarted();
    await waitFor(() => c.types().includes('UserStartedSpeaking'), 2000, 'UserStartedSpeaking');
    await quietFor(200, 'more of the cut reply than the late chunks');
    const after = c.types().slice(c.types().indexOf('UserStartedSpeaking') + 1);
    expect(after).toEqual(['audio', 'audio', 'audio']);
    const reply = emulator.sessions()[0]!.record.replies[0]!;
    expect(reply.status).toBe('interrupted');
    expect(reply.late_ms).toBe(60);
  });

  it('sends malformed frames on the control API', async () => {
    emulator = createDeepgramAgentEmulator();
    await emulator.listen(0);
    const c = await open();
    await waitFor(() => c.types().includes('Welcome'), 2000, 'Welcome');
    const id = emulator.sessions()[0]!.record.id;
    const res = await fetch(`${emulator.base()}/emulator/deepgram-agent/sessions/${id}/malformed`, {
      method: 'POST',
      body: JSON.stringify({ kind: 'unknown_event' }),
    });
    expect(res.status).toBe(200);
    await waitFor(() => c.types().includes('StandInUnknownMessage'), 2000, 'the unknown message');
  });
});

/**
 * The Deepgram Voice Agent stand-in driven by Deepgram's own agent socket (`@deepgram/sdk`,
 * `client.agent.v1.connect()` with `baseUrl` at the stand-in on 127.0.0.1 port 0): Welcome, Settings and
 * SettingsApplied, the caller's tone heard (SNR in the record), the reply tone whole at the client in the
 * output format asked for (frequency and SNR; µ-law through an independent G.711 codec), barge-in
 * (`UserStartedSpeaking` over a long reply stops its audio), the idle close without `KeepAlive` and the
 * session kept alive by it (short limits set on the stand-in), a client-side function call round trip
 * and DTMF as `InjectUserMessage` recorded.
 */
import { type agent, DeepgramClient } from '@deepgram/sdk';
import alawmulaw from 'alawmulaw';
import { afterEach, describe, expect, it } from 'vitest';
import { generateTone, steadyToneSnrDb } from '../../src/audio/tone.js';
import {
  createDeepgramAgentEmulator,
  type DeepgramAgentEmulator,
} from '../../src/emulator/deepgram-agent/server.js';
import { replyToneHz } from '../../src/emulator/s2s/voice.js';
import { dominantHz, pcmBytes, pcmOf } from '../helpers/s2s.js';
import { quietFor, waitFor } from '../helpers/wait.js';

const { mulaw } = alawmulaw;
let emulator: DeepgramAgentEmulator | undefined;
const sockets: { close(): void }[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.close();
  await emulator?.close();
  emulator = undefined;
});

type Socket = Awaited<ReturnType<DeepgramClient['agent']['v1']['connect']>>;
interface Agent {
  socket: Socket;
  /** JSON messages in order; binary frames as `{ type: 'audio' }` in their place. */
  messages: { type: string; [k: string]: unknown }[];
  audio: Buffer[];
  closes: { code: number; reason: string }[];
  types(): string[];
}

async function start(options: Parameters<typeof createDeepgramAgentEmulator>[0] = {}): Promise<string> {
  emulator = createDeepgramAgentEmulator(options);
  await emulator.listen(0);
  return emulator.base().replace(/^http/, 'ws');
}

async function connect(baseUrl: string, apiKey = 'dg-test-key'): Promise<Agent> {
  const client = new DeepgramClient({ apiKey, baseUrl });
  const socket = await client.agent.v1.connect({ reconnectAttempts: 0, shouldReconnect: () => false });
  const a: Agent = {
    socket,
    messages: [],
    audio: [],
    closes: [],
    types: () => a.messages.map((m) => m.type),
  };
  // Binary frames arrive as Blobs; keep their order by reading them in sequence.
  let chain = Promise.resolve();
  socket.on('message', (m: unknown) => {
    if (m instanceof Blob) {
      const slot = { type: 'audio' };
      a.messages.push(slot);
      chain = chain.then(async () => {
        a.audio.push(Buffer.from(await m.arrayBuffer()));
      });
    } else a.messages.push(m as Agent['messages'][number]);
  });
  socket.on('close', (e: { code: number; reason: string }) =>
    a.closes.push({ code: e.code, reason: e.reason }),
  );
  socket.connect();
  await socket.waitForOpen();
  sockets.push(socket);
  return a;
}

function settings(
  overrides: { input?: object; output?: object; prompt?: string; functions?: object[] } = {},
): agent.AgentV1Settings {
  return {
    type: 'Settings',
    audio: {
      input: { encoding: 'linear16', sample_rate: 16000, ...overrides.input },
      output: { encoding: 'linear16', sample_rate: 16000, container: 'none', ...overrides.output },
    },
    agent: {
      listen: { provider: { type: 'deepgram', model: 'nova-3' } as never },
      think: {
        provider: { type: 'open_ai', model: 'gpt-4o-mini' } as never,
        prompt: overrides.prompt ?? 'You are a helpful agent.',
        ...(overrides.functions ? { functions: overrides.functions } : {}),
      },
      speak: { provider: { type: 'deepgram', model: 'aura-2-thalia-en' } as never },
    },
  };
}

/** PCM16 in 20 ms binary frames. */
function sendPcm(a: Agent, pcm: Int16Array, rate = 16000): void {
  for (let i = 0; i < pcm.length; i += rate / 50)
    a.socket.sendMedia(pcmBytes(pcm.subarray(i, i + rate / 50)));
}

describe('Deepgram Voice Agent stand-in with @deepgram/sdk', () => {
  it('welcomes, applies the settings, hears the tone (SNR >= 30 dB) and answers with a whole tone at 16 kHz (SNR >= 60 dB)', async () => {
    const a = await connect(await start({ replyMs: 1000 }));
    await waitFor(() => a.types().includes('Welcome'), 2000, 'Welcome');
    a.socket.sendSettings(settings());
    await waitFor(() => a.types().includes('SettingsApplied'), 2000, 'SettingsApplied');
    sendPcm(a, generateTone(1000, 16000, 16000, 0.3));
    sendPcm(a, new Int16Array(16000 * 0.7));
    await waitFor(() => a.types().includes('AgentAudioDone'), 5000, 'AgentAudioDone');
    await waitFor(() => a.audio.length === a.types().filter((t) => t === 'audio').length, 1000, 'audio read');

    const conn = emulator!.sessions()[0]!;
    const input = conn.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'linear16;rate=16000', rate: 16000 });
    expect(input.pcm.length).toBe(16000 * 1.7);
    expect(steadyToneSnrDb(input.pcm.subarray(0, 16000), 1000, 16000)).toBeGreaterThanOrEqual(30);
    const reply = pcmOf(a.audio);
    expect(reply.length).toBe(16000);
    expect(Math.abs(dominantHz(reply, 16000) - replyToneHz(0))).toBeLessThan(2);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 16000)).toBeGreaterThanOrEqual(60);
    const order = a.types().filter((t, i, all) => t !== 'audio' || all[i - 1] !== 'audio');
    expect(order).toEqual([
      'Welcome',
      'SettingsApplied',
      'UserStartedSpeaking',
      'ConversationText',
      'ConversationText',
      'AgentStartedSpeaking',
      'audio',
      'AgentAudioDone',
    ]);
    expect(a.messages.filter((m) => m.type === 'ConversationText').map((m) => m.role)).toEqual([
      'user',
      'assistant',
    ]);
    expect(conn.record.notes).toEqual([]);
  });

  it('speaks µ-law 8 kHz when asked, measured through an independent G.711 codec', async () => {
    const a = await connect(await start({ replyMs: 800 }));
    a.socket.sendSettings(
      settings({
        input: { encoding: 'mulaw', sample_rate: 8000 },
        output: { encoding: 'mulaw', sample_rate: 8000 },
      }),
    );
    await waitFor(() => a.types().includes('SettingsApplied'), 2000, 'SettingsApplied');
    const tone = Buffer.from(mulaw.encode(generateTone(700, 8000, 8000, 0.3)));
    for (let i = 0; i < tone.length; i += 160) a.socket.sendMedia(tone.subarray(i, i + 160));
    a.socket.sendMedia(Buffer.alloc(8000 * 0.7, 0xff));
    await waitFor(() => a.types().includes('AgentAudioDone'), 5000, 'AgentAudioDone');
    await waitFor(() => a.audio.length === a.types().filter((t) => t === 'audio').length, 1000, 'audio read');
    const input = emulator!.sessions()[0]!.record.inputAudio()!;
    expect(input).toMatchObject({ format: 'mulaw;rate=8000', rate: 8000 });
    expect(steadyToneSnrDb(input.pcm.subarray(0, 8000), 700, 8000)).toBeGreaterThanOrEqual(30);
    const reply = mulaw.decode(new Uint8Array(Buffer.concat(a.audio)));
    expect(reply.length).toBe(8000 * 0.8);
    expect(steadyToneSnrDb(reply, replyToneHz(0), 8000)).toBeGreaterThanOrEqual(30);
  });

  it('sends UserStartedSpeaking when the caller speaks over a long reply, and its audio stops', async () => {
    const a = await connect(await start({ outputRateFactor: 1 }));
    a.socket.sendSettings(settings({ prompt: 'Tell long stories. reply_ms=20000' }));
    await waitFor(() => a.types().includes('SettingsApplied'), 2000, 'SettingsApplied');
    a.socket.sendInjectUserMessage({ type: 'InjectUserMessage', content: 'Tell me a story.' });
    await waitFor(() => a.types().filter((t) => t === 'audio').length >= 25, 5000, '0.5 s of the reply');
    expect(a.types()).not.toContain('UserStartedSpeaking');
    sendPcm(a, generateTone(700, 16000, 16000 * 0.3, 0.3));
    await waitFor(() => a.types().includes('UserStartedSpeaking'), 2000, 'UserStartedSpeaking');
    const at = a.types().indexOf('UserStartedSpeaking');
    await quietFor(200, 'no reply audio after the barge-in');
    expect(
      a
        .types()
        .slice(at)
        .filter((t) => t === 'audio'),
    ).toHaveLength(0);
    const reply = emulator!.sessions()[0]!.record.replies[0]!;
    expect(reply.status).toBe('interrupted');
    expect(reply.sent_ms).toBeLessThan(3000);
    expect(a.types()).not.toContain('AgentAudioDone');
  });

  it('answers the turn that cut a reply sent well ahead of real time, which the client dropped', async () => {
    const a = await connect(await start({ outputRateFactor: 4 }));
    a.socket.sendSettings(settings({ prompt: 'Tell long stories. reply_ms=20000' }));
    await waitFor(() => a.types().includes('SettingsApplied'), 2000, 'SettingsApplied');
    a.socket.sendInjectUserMessage({ type: 'InjectUserMessage', content: 'Tell me a story.' });
    // 4 s of the reply sent within about 1 s: it would play for 3 s more at a client that kept it.
    await waitFor(() => a.types().filter((t) => t === 'audio').length >= 200, 5000, '4 s of the reply');
    sendPcm(a, generateTone(700, 16000, 16000 * 0.3, 0.3));
    await waitFor(() => a.types().includes('UserStartedSpeaking'), 2000, 'UserStartedSpeaking');
    // The caller falls silent: the turn ends and the agent answers it with the next tone.
    sendPcm(a, new Int16Array(16000));
    await waitFor(
      () => a.types().filter((t) => t === 'AgentStartedSpeaking').length === 2,
      2000,
      'the next turn',
    );
    expect(emulator!.sessions()[0]!.record.replies[1]!.tone_hz).toBe(replyToneHz(1));
  });

  it('closes a socket that sends neither audio nor KeepAlive for the idle timeout with CLIENT_MESSAGE_TIMEOUT; KeepAlive keeps one open', async () => {
    const base = await start({ idleTimeoutMs: 600 });
    const idle = await connect(base);
    idle.socket.sendSettings(settings());
    const kept = await connect(base);
    kept.socket.sendSettings(settings());
    const timer = setInterval(() => kept.socket.sendKeepAlive({ type: 'KeepAlive' }), 200);
    try {
      await waitFor(() => idle.closes.length === 1, 3000, 'the idle socket to close');
      const error = idle.messages.find((m) => m.type === 'Error');
      expect(error).toMatchObject({ code: 'CLIENT_MESSAGE_TIMEOUT' });
      expect(idle.closes[0]!.code).toBe(1011);
      await quietFor(1200, 'the kept socket stays open past two idle timeouts');
      expect(kept.closes).toEqual([]);
      expect(kept.messages.some((m) => m.type === 'Error')).toBe(false);
      const [idleConn, keptConn] = emulator!.sessions();
      expect(idleConn!.record.closed_by).toBe('server');
      expect(keptConn!.record.keepalives).toBeGreaterThanOrEqual(6);
    } finally {
      clearInterval(timer);
    }
  });

  it('asks for a client-side function scripted in the prompt, records the FunctionCallResponse, then speaks; DTMF goes as InjectUserMessage', async () => {
    const a = await connect(await start({ replyMs: 400 }));
    a.socket.sendSettings(
      settings({
        prompt: 'call_tool=consult{"number":"+15550100"}',
        functions: [
          { name: 'consult', description: 'Consult a person', parameters: { type: 'object' } },
          {
            name: 'lookup',
            description: 'Server side',
            endpoint: { url: 'https://example.invalid/x', method: 'post' },
          },
        ],
      }),
    );
    await waitFor(() => a.types().includes('SettingsApplied'), 2000, 'SettingsApplied');
    a.socket.sendInjectUserMessage({ type: 'InjectUserMessage', content: '[DTMF 5]' });
    await waitFor(() => a.types().includes('FunctionCallRequest'), 2000, 'FunctionCallRequest');
    const request = a.messages.find(
      (m) => m.type === 'FunctionCallRequest',
    ) as unknown as agent.AgentV1FunctionCallRequest;
    const fn = request.functions[0]!;
    expect(fn).toMatchObject({ name: 'consult', client_side: true });
    expect(JSON.parse(fn.arguments)).toEqual({ number: '+15550100' });
    a.socket.sendFunctionCallResponse({
      type: 'FunctionCallResponse',
      id: fn.id,
      name: 'consult',
      content: '{"status":"answered"}',
    });
    await waitFor(() => a.types().includes('AgentAudioDone'), 5000, 'the reply after the function');
    await waitFor(() => a.audio.length === a.types().filter((t) => t === 'audio').length, 1000, 'audio read');
    expect(steadyToneSnrDb(pcmOf(a.audio), replyToneHz(0), 16000)).toBeGreaterThanOrEqual(60);
    const conn = emulator!.sessions()[0]!;
    expect(conn.record.texts.map((t) => [t.type, t.text])).toEqual([['InjectUserMessage', '[DTMF 5]']]);
    expect(conn.record.tool_calls[0]).toMatchObject({
      name: 'consult',
      parameters: { number: '+15550100' },
      answer: { type: 'FunctionCallResponse', id: fn.id, name: 'consult', content: '{"status":"answered"}' },
    });
    expect(() => conn.callTool('lookup', {})).toThrow(/has an endpoint/);
    expect(() => conn.callTool('transfer', {})).toThrow(/not in agent.think.functions \(consult, lookup\)/);
    expect(conn.record.notes).toEqual([]);
  });

  it('refuses a wrong key, and the handshakes it is told to refuse or drop, before any session opens', async () => {
    const base = await start({ apiKey: 'dg-right' });
    const opens = async (apiKey: string): Promise<boolean> => {
      const client = new DeepgramClient({ apiKey, baseUrl: base });
      const socket = await client.agent.v1.connect({ reconnectAttempts: 0, shouldReconnect: () => false });
      socket.on('error', () => {});
      socket.connect();
      try {
        await socket.waitForOpen();
        return true;
      } catch {
        return false;
      } finally {
        socket.close();
      }
    };
    expect(await opens('dg-wrong')).toBe(false);
    emulator!.failNextConnects(429);
    expect(await opens('dg-right')).toBe(false);
    emulator!.dropNextConnects();
    expect(await opens('dg-right')).toBe(false);
    expect(emulator!.sessions()).toHaveLength(0);
    const ok = await connect(base, 'dg-right');
    await waitFor(() => ok.types().includes('Welcome'), 2000, 'Welcome');
    expect(emulator!.sessions()).toHaveLength(1);
  });
});
